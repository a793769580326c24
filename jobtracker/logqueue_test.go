package jobtracker

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"gomr/conf"
	"gomr/mrpb"
	"gomr/speculator"
)

// blockingWriter is a log destination whose writes block until release is
// closed: a pipe nobody reads.
type blockingWriter struct {
	release chan struct{}
	// blocked is closed when the first write blocks.
	blocked chan struct{}
	once    sync.Once
	mu      sync.Mutex
	buf     bytes.Buffer
}

func newBlockingWriter() *blockingWriter {
	return &blockingWriter{release: make(chan struct{}), blocked: make(chan struct{})}
}

func (w *blockingWriter) Write(p []byte) (int, error) {
	w.once.Do(func() { close(w.blocked) })
	<-w.release
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(p)
}

func (w *blockingWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// TestLogQueue: the queued log writes every record, in the order logged,
// with its handler's attributes and groups; a record its handler would
// not write is not queued; beyond the queue's limit records are dropped
// and counted in a line of their own, where they were.
func TestLogQueue(t *testing.T) {
	tests := []struct {
		name  string
		limit int
		// block holds the writer on a first line ("line 0") until
		// everything is logged.
		block bool
		log   func(l *slog.Logger)
		want  []string
	}{
		{
			name:  "order and attributes",
			limit: 100,
			log: func(l *slog.Logger) {
				l.Info("first", "n", 1)
				l.With("component", "x").Warn("second")
				l.WithGroup("g").Info("third", "k", "v")
				l.Debug("not enabled")
			},
			want: []string{"msg=first n=1", "level=WARN msg=second component=x", "msg=third g.k=v"},
		},
		{
			name:  "dropped beyond the limit",
			limit: 3,
			block: true,
			log: func(l *slog.Logger) {
				for i := 1; i < 6; i++ {
					l.Info(fmt.Sprintf("line %d", i))
				}
			},
			// The writer took line 0 and blocks on it, so the queue
			// holds the next three, and the last two are dropped.
			want: []string{"msg=\"line 0\"", "msg=\"line 1\"", "msg=\"line 2\"", "msg=\"line 3\"",
				"msg=\"JobTracker log records dropped: the log's writer was blocked\" records=2 queue=3"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := newBlockingWriter()
			if !tc.block {
				close(w.release)
			}
			l, q := newQueuedLog(slog.NewTextHandler(w, nil))
			q.limit = tc.limit
			if tc.block {
				l.Info("line 0")
				<-w.blocked
			}
			tc.log(l)
			if tc.block {
				if q.flush(10 * time.Millisecond) {
					t.Fatal("flush reported the queue written while its writer is blocked")
				}
				close(w.release)
			}
			if !q.flush(10 * time.Second) {
				t.Fatal("the queue was not written")
			}
			lines := strings.Split(strings.TrimSpace(w.String()), "\n")
			if len(lines) != len(tc.want) {
				t.Fatalf("%d lines, want %d: %q", len(lines), len(tc.want), lines)
			}
			for i, want := range tc.want {
				if !strings.Contains(lines[i], want) {
					t.Errorf("line %d is %q, want it to hold %q", i, lines[i], want)
				}
			}
		})
	}
}

// TestBlockedLogHoldsNothingUp: with a log whose writes block (a pipe
// nobody reads), a JobTracker serving gRPC on loopback answers heartbeats
// and client calls while the events it logs happen: a tracker joins, a job
// is submitted, an attempt fails, a speculative attempt is launched, the
// job is killed and ends, a hold of the lock is long. Once the log is read
// again, every line is written, in the order of the events.
func TestBlockedLogHoldsNothingUp(t *testing.T) {
	dir := t.TempDir()
	cfg, err := conf.Default().With(map[string]string{
		"mapreduce.jobtracker.jobhistory.location":     filepath.Join(dir, "history"),
		"mapreduce.job.reduce.slowstart.completedmaps": "1",
	}, "test")
	if err != nil {
		t.Fatal(err)
	}
	w := newBlockingWriter()
	defer func() {
		select {
		case <-w.release:
		default:
			close(w.release)
		}
	}()
	jt, err := New(cfg, Options{Logger: slog.New(slog.NewTextHandler(w, nil))})
	if err != nil {
		t.Fatal(err)
	}
	noIllegalTransitions(t, jt)
	client := serveGRPC(t, jt)
	// call runs an RPC with a deadline: a call held up by the blocked log
	// fails the test.
	call := func(what string, f func(ctx context.Context) error) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := f(ctx); err != nil {
			t.Fatalf("%s with the log blocked: %v", what, err)
		}
	}
	trackers := map[string]*mrpb.HeartbeatResponse{}
	beat := func(req *mrpb.HeartbeatRequest) *mrpb.HeartbeatResponse {
		t.Helper()
		req.Host, req.MapSlots, req.ReduceSlots, req.AcceptNewTasks = "h-"+req.Tracker, 2, 1, true
		asTracker(jt, req)
		var resp *mrpb.HeartbeatResponse
		call("heartbeat of "+req.Tracker, func(ctx context.Context) (err error) {
			resp, err = client.Heartbeat(ctx, req)
			return err
		})
		trackers[req.Tracker] = resp
		return resp
	}

	beat(&mrpb.HeartbeatRequest{Tracker: "t1", InitialContact: true})
	select {
	case <-w.blocked:
	case <-time.After(10 * time.Second):
		t.Fatal("no log line was written")
	}
	var id string
	call("SubmitJob", func(ctx context.Context) error {
		resp, err := client.SubmitJob(ctx, wordCountRequest(t, dir, 2))
		if err == nil {
			id = resp.JobId
		}
		return err
	})
	ls := launches(beat(&mrpb.HeartbeatRequest{Tracker: "t1", FreeMapSlots: 2}))
	if len(ls) != 2 {
		t.Fatalf("launched %d maps, want 2", len(ls))
	}
	failed, slow := ls[0].AttemptId, ls[1].AttemptId
	beat(&mrpb.HeartbeatRequest{Tracker: "t1", Attempts: []*mrpb.AttemptStatus{{AttemptId: failed, State: StateFailed, Diagnostic: "boom"}}})
	// The speculator's decision, recorded as speculation.go does; the
	// launch on another tracker is logged in its heartbeat.
	jt.mu.Lock()
	_, src := jt.findAttempt(slow)
	src.task.setSpec(&speculation{task: src.task, kind: speculator.Fresh, source: src, decided: jt.now()})
	src.task.speculated = true
	jt.unlock()
	beat(&mrpb.HeartbeatRequest{Tracker: "t2", InitialContact: true})
	// t2 runs the failed map again and the speculative attempt.
	var spec *mrpb.LaunchTask
	for _, l := range launches(beat(&mrpb.HeartbeatRequest{Tracker: "t2", FreeMapSlots: 2})) {
		if l.Speculative && int(l.Index) == src.task.index {
			spec = l
		}
	}
	if spec == nil {
		t.Fatalf("no speculative attempt of %s launched on t2", src.task.id())
	}
	call("GetJobStatus", func(ctx context.Context) error {
		_, err := client.GetJobStatus(ctx, &mrpb.JobStatusRequest{JobId: id})
		return err
	})
	call("ListJobs", func(ctx context.Context) error {
		_, err := client.ListJobs(ctx, &mrpb.ListJobsRequest{})
		return err
	})
	call("KillJob", func(ctx context.Context) error {
		_, err := client.KillJob(ctx, &mrpb.KillJobRequest{JobId: id})
		return err
	})
	jt.lock(holderHeartbeat)
	jt.lockedAt = jt.lockedAt.Add(-2 * longHold)
	jt.unlock()
	beat(&mrpb.HeartbeatRequest{Tracker: "t1"})
	call("ListJobs after the job's end", func(ctx context.Context) error {
		_, err := client.ListJobs(ctx, &mrpb.ListJobsRequest{})
		return err
	})

	if got := w.String(); got != "" {
		t.Fatalf("lines written through a blocked log: %q", got)
	}
	close(w.release)
	if !jt.logq.flush(10 * time.Second) {
		t.Fatal("the log was not written once unblocked")
	}
	got := w.String()
	at := 0
	for _, want := range []string{
		`msg="tracker joined" component=jobtracker tracker=t1`,
		`msg="job submitted" component=jobtracker job=` + id,
		`msg="attempt failed" component=jobtracker attempt=` + failed,
		`msg="tracker joined" component=jobtracker tracker=t2`,
		`msg="speculative attempt" component=jobtracker attempt=` + spec.AttemptId,
		`msg="job ended" component=jobtracker job=` + id + ` state=KILLED`,
		`msg="long hold of the JobTracker's lock" component=jobtracker holder=heartbeat`,
	} {
		i := strings.Index(got[at:], want)
		if i < 0 {
			t.Fatalf("no %q after offset %d of the log:\n%s", want, at, got)
		}
		at += i + len(want)
	}
}

// BenchmarkLogRecord is what logging a record costs the code that logs it
// (under the JobTracker's lock, for most records): "direct" writes it
// through a text handler, as the JobTracker did before its log was
// queued, "queued" hands it to the queue, whose goroutine writes it
// through the same handler (to io.Discard: a log that never blocks, the
// best case of the direct write). The queue is drained outside the timing
// every 4,096 records, so that none is dropped.
func BenchmarkLogRecord(b *testing.B) {
	logRecord := func(l *slog.Logger) {
		l.Info("tracker joined", "tracker", "tracker_0042", "host", "host0042", "shuffle", "10.0.0.42:50060", "from", "10.0.0.42:41234",
			"map_slots", 2, "reduce_slots", 2, "criu", false)
	}
	b.Run("direct", func(b *testing.B) {
		l := slog.New(slog.NewTextHandler(io.Discard, nil)).With("component", "jobtracker")
		b.ReportAllocs()
		for b.Loop() {
			logRecord(l)
		}
	})
	b.Run("queued", func(b *testing.B) {
		l, q := newQueuedLog(slog.NewTextHandler(io.Discard, nil).WithAttrs([]slog.Attr{slog.String("component", "jobtracker")}))
		b.ReportAllocs()
		n := 0
		for b.Loop() {
			logRecord(l)
			if n++; n%4096 == 0 {
				b.StopTimer()
				q.flush(time.Minute)
				b.StartTimer()
			}
		}
		b.StopTimer()
		q.flush(time.Minute)
	})
}
