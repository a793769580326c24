package tasktracker

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"gomr/mrpb"
)

// ---- the checkpoint/restore queue ----

// crClass is the priority of a CRIU operation in the tracker's
// checkpoint/restore queue (spec/preemption-elasticity.md §5.6): a
// preemption dump holds back the job that waits for its slot (first those
// whose order says a deadline is at risk), a restore the task it resumes,
// a clone dump only a speculative copy. Lower runs first; within a class,
// in arrival order. The JobTracker's planner mirrors the same order
// (preempt.Class).
type crClass uint8

const (
	crDeadlineDump crClass = iota
	crPreemptDump
	crRestore
	crCloneDump
)

var crClassNames = [...]string{"deadline preemption dump", "preemption dump", "restore", "clone dump"}

// preemptDumpClass is the class of a preemption dump ordered for reason r.
func preemptDumpClass(r mrpb.ReclaimReason) crClass {
	if r == mrpb.ReclaimReason_RECLAIM_DEADLINE_AT_RISK {
		return crDeadlineDump
	}
	return crPreemptDump
}

func (c crClass) String() string {
	if int(c) < len(crClassNames) {
		return crClassNames[c]
	}
	return fmt.Sprintf("crClass(%d)", c)
}

// crTicket is one operation in the queue.
type crTicket struct {
	class crClass
	seq   uint64        // arrival order
	est   time.Duration // expected duration
	began time.Time     // when it started running (zero while it waits)
	ready chan struct{} // closed when it may run (crQueue's)
}

// crOrder is the queue's order, pure: at most max operations run at once
// (ckpt.maxConcurrentPerNode, KeyCheckpointMaxConcurrent; 0 counts as 1);
// the others wait sorted by class, then arrival, and the first waiting
// one starts when a running one ends. A waiting operation never overtakes
// a running one (CRIU cannot be stopped half-way). Not safe for
// concurrent use.
type crOrder struct {
	max     int
	seq     uint64
	running []*crTicket // in the order they started
	waiting []*crTicket
}

// limit is the number of operations that may run at once.
func (o *crOrder) limit() int { return max(o.max, 1) }

// add queues t at now; it reports whether t runs at once (fewer than
// limit operations were running and none waiting).
func (o *crOrder) add(t *crTicket, now time.Time) bool {
	o.seq++
	t.seq = o.seq
	if len(o.running) < o.limit() && len(o.waiting) == 0 {
		t.began = now
		o.running = append(o.running, t)
		return true
	}
	i, _ := slices.BinarySearchFunc(o.waiting, t, func(a, b *crTicket) int {
		if a.class != b.class {
			return int(a.class) - int(b.class)
		}
		return int(a.seq) - int(b.seq)
	})
	o.waiting = slices.Insert(o.waiting, i, t)
	return false
}

// abandon removes a waiting t (its caller gave up); it reports false when
// t is not waiting (it runs, or already ended).
func (o *crOrder) abandon(t *crTicket) bool {
	if i := slices.Index(o.waiting, t); i >= 0 {
		o.waiting = slices.Delete(o.waiting, i, i+1)
		return true
	}
	return false
}

// finish ends the running t at now and starts the first waiting one,
// which it returns (nil: none waits). A t that is not running is ignored.
func (o *crOrder) finish(t *crTicket, now time.Time) *crTicket {
	i := slices.Index(o.running, t)
	if i < 0 || t == nil {
		return nil
	}
	o.running = slices.Delete(o.running, i, i+1)
	if len(o.waiting) == 0 || len(o.running) >= o.limit() {
		return nil
	}
	next := o.waiting[0]
	o.waiting = slices.Delete(o.waiting, 0, 1)
	next.began = now
	o.running = append(o.running, next)
	return next
}

// len is the number of operations running or waiting.
func (o *crOrder) len() int { return len(o.waiting) + len(o.running) }

// wait is the expected wait at now of a new operation of class c: none
// while fewer than limit operations run (it would start at once);
// otherwise, as spec §5.6 puts it, what is left of the running ones (none
// of one that overran its estimate) plus the estimates of the waiting
// ones it would not overtake (those of its class or a more urgent one),
// divided by limit. With a limit of 1 that is the exact wait of a
// sequential queue; with more it assumes the work ahead spreads evenly
// over the operations that run at once.
func (o *crOrder) wait(c crClass, now time.Time) time.Duration {
	if len(o.running) < o.limit() {
		return 0
	}
	var d time.Duration
	for _, r := range o.running {
		d += max(r.est-now.Sub(r.began), 0)
	}
	for _, t := range o.waiting {
		if t.class <= c {
			d += t.est
		}
	}
	return d / time.Duration(o.limit())
}

// crQueue runs the tracker's CRIU operations (dumps for preemption and for
// clones, restores), up to maxConcurrent at once, in crOrder's order, and
// knows how long a new one would wait.
type crQueue struct {
	mu sync.Mutex
	o  crOrder
}

// newCRQueue returns a queue that runs up to maxConcurrent operations at
// once (less than 1 counts as 1).
func newCRQueue(maxConcurrent int) *crQueue { return &crQueue{o: crOrder{max: maxConcurrent}} }

// limit is the number of operations the queue runs at once.
func (q *crQueue) limit() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.o.limit()
}

// run waits for the queue, then runs op, an operation of class c expected
// to take est. It gives up waiting when ctx ends; an op that started runs
// to its end.
func (q *crQueue) run(ctx context.Context, c crClass, est time.Duration, op func() error) error {
	t := &crTicket{class: c, est: est, ready: make(chan struct{})}
	q.mu.Lock()
	if q.o.add(t, time.Now()) {
		close(t.ready)
	}
	q.mu.Unlock()
	select {
	case <-t.ready:
	case <-ctx.Done():
		q.mu.Lock()
		gone := q.o.abandon(t)
		q.mu.Unlock()
		if !gone {
			// It was started as ctx ended: hand the queue on.
			q.done(t)
		}
		return fmt.Errorf("waiting for the checkpoint/restore queue (%s): %w", c, ctx.Err())
	}
	defer q.done(t)
	return op()
}

// done ends the running t and lets the next operation run.
func (q *crQueue) done(t *crTicket) {
	q.mu.Lock()
	next := q.o.finish(t, time.Now())
	q.mu.Unlock()
	if next != nil {
		close(next.ready)
	}
}

// stats reports the operations waiting or running and the expected wait
// of a new restore in milliseconds (for the heartbeat: the JobTracker's
// resume rule, seed 002 Alg. 2, weighs it).
func (q *crQueue) stats() (ops int32, waitMs int64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return int32(q.o.len()), q.o.wait(crRestore, time.Now()).Milliseconds()
}

// The priors of a CRIU operation's duration (shared/design.md, measured on
// these machines): a fixed ~140 ms plus the image at ~0.95 GB/s.
const (
	crFixedCost = 140 * time.Millisecond
	crBytesPerS = 0.95e9
)

// dumpEstimate is the expected duration of a dump of a process of rss bytes.
func dumpEstimate(rss int64) time.Duration {
	return crFixedCost + time.Duration(float64(rss)/crBytesPerS*float64(time.Second))
}

// restoreEstimate is the expected duration of a restore of an image.
func restoreEstimate(imageBytes int64) time.Duration { return dumpEstimate(imageBytes) }
