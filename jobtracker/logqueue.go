package jobtracker

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// The JobTracker's log is written by a goroutine of its own, never by the
// code that logs: most of the JobTracker's events happen under its lock
// (a tracker joins, a job is submitted or ends, an attempt fails or is
// speculated), and a log write can block (a pipe whose reader is behind,
// a full disk, a terminal on hold). Written in place, such a write held
// the lock, and every heartbeat behind it, for as long as it blocked
// (docs/scaling.md, "What the single long holds were"). So the log's
// handler (logQueue) only queues each record, in the order the records
// were logged; one goroutine at a time writes the queue, in that order,
// through the handler the JobTracker was given. A record keeps its time,
// level, message and attributes: only the write is later.
//
// The queue is bounded (maxQueuedLogRecords): a writer blocked for good
// must not grow the JobTracker's memory without end. Records beyond it are
// dropped and counted, and the writer logs how many, where they were,
// once it gets going again.

// maxQueuedLogRecords is the most log records waiting for their write;
// 10,000 trackers registering at a JobTracker's start log 10,000 lines
// within a heartbeat interval.
const maxQueuedLogRecords = 1 << 16

// logQueue holds the records waiting for their write and whether a
// goroutine writes them.
type logQueue struct {
	// base is the handler of the JobTracker's Options, for the drop notice.
	base slog.Handler
	// limit is the most records queued (maxQueuedLogRecords).
	limit   int
	mu      sync.Mutex
	records []queuedRecord
	// spare is the slice the writer last wrote, for the next queue (the
	// two take turns, so that a queue does not grow a new one each time).
	spare []queuedRecord
	// dropped counts the records dropped since the writer last took the
	// queue.
	dropped int
	// idle is nil while no goroutine writes the queue, else closed when
	// the writer finds it empty and stops.
	idle chan struct{}
}

// queuedRecord is a record and the handler (with its attributes and
// groups) that writes it.
type queuedRecord struct {
	ctx context.Context
	h   slog.Handler
	r   slog.Record
}

// newQueuedLog returns a logger that queues its records for h, and the
// queue.
func newQueuedLog(h slog.Handler) (*slog.Logger, *logQueue) {
	q := &logQueue{base: h, limit: maxQueuedLogRecords}
	return slog.New(queuedHandler{q: q, h: h}), q
}

// queuedHandler is a slog.Handler that hands each record to its queue
// instead of writing it.
type queuedHandler struct {
	q *logQueue
	h slog.Handler
}

// Enabled is the wrapped handler's: a record it would drop is not built.
func (h queuedHandler) Enabled(ctx context.Context, l slog.Level) bool { return h.h.Enabled(ctx, l) }

// Handle queues a copy of r for the wrapped handler; it never blocks on
// the write.
func (h queuedHandler) Handle(ctx context.Context, r slog.Record) error {
	h.q.push(queuedRecord{ctx: context.WithoutCancel(ctx), h: h.h, r: r.Clone()})
	return nil
}

// WithAttrs queues for the wrapped handler with the attributes.
func (h queuedHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return queuedHandler{q: h.q, h: h.h.WithAttrs(as)}
}

// WithGroup queues for the wrapped handler with the group.
func (h queuedHandler) WithGroup(name string) slog.Handler {
	return queuedHandler{q: h.q, h: h.h.WithGroup(name)}
}

// push queues a record, and starts a writer if none runs.
func (q *logQueue) push(x queuedRecord) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.records) >= q.limit {
		q.dropped++
		return
	}
	q.records = append(q.records, x)
	if q.idle == nil {
		q.idle = make(chan struct{})
		go q.write()
	}
}

// write writes the queue in order until it is empty.
func (q *logQueue) write() {
	for {
		q.mu.Lock()
		records, dropped := q.records, q.dropped
		if len(records) == 0 && dropped == 0 {
			close(q.idle)
			q.idle = nil
			q.mu.Unlock()
			return
		}
		q.records, q.spare, q.dropped = q.spare[:0], nil, 0
		q.mu.Unlock()
		for i := range records {
			x := &records[i]
			_ = x.h.Handle(x.ctx, x.r) // the log is where its own errors would go
			*x = queuedRecord{}
		}
		if dropped > 0 {
			// The records dropped came after those queued with them:
			// the queue was full until the writer took it.
			r := slog.NewRecord(time.Now(), slog.LevelWarn, "JobTracker log records dropped: the log's writer was blocked", 0)
			r.AddAttrs(slog.Int("records", dropped), slog.Int("queue", q.limit))
			_ = q.base.Handle(context.Background(), r)
		}
		q.mu.Lock()
		q.spare = records
		q.mu.Unlock()
	}
}

// flush waits until every record queued before it is written, or timeout
// has passed; it reports whether the queue was written.
func (q *logQueue) flush(timeout time.Duration) bool {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		q.mu.Lock()
		idle := q.idle
		q.mu.Unlock()
		if idle == nil {
			return true
		}
		select {
		case <-idle:
		case <-deadline.C:
			return false
		}
	}
}
