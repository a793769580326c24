// Package child is the task child: the process a TaskTracker starts for
// each task attempt (the same binary in its hidden child mode). It fetches
// its task over the umbilical, runs the map or the reduce, reports
// progress, counters and spills, commits its output when the JobTracker
// allows, and exits.
package child

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"google.golang.org/grpc"

	"gomr/conf"
	"gomr/mr"
	"gomr/mrpb"
	"gomr/shuffle"
)

// umbilicalLostAfter is how long a child goes on without reaching its
// tracker before it gives up and exits.
const umbilicalLostAfter = 30 * time.Second

// Main runs one task attempt and returns the process exit code.
func Main(attemptID, umbilicalAddr string) int {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil)).With("attempt", attemptID)
	// One log format: the task's own code (slog's default logger, the
	// standard log package) logs through the same handler.
	slog.SetDefault(log)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	startLifeline(log)
	ctl := startCtrl(log)
	conn, err := dialUmbilical(umbilicalAddr, attemptID, launchToken())
	if err != nil {
		log.Error("umbilical", "error", err)
		return 2
	}
	umb := mrpb.NewUmbilicalClient(conn)
	var launch *mrpb.LaunchTask
	for i := 0; ; i++ {
		launch, err = umb.GetTask(ctx, &mrpb.GetTaskRequest{AttemptId: attemptID})
		if err == nil {
			break
		}
		if i == 20 {
			log.Error("cannot get the task from the tracker", "error", err)
			return 2
		}
		time.Sleep(100 * time.Millisecond)
	}
	t, err := newTask(ctx, cancel, launch, umb, log)
	if err != nil {
		conn.Close()
		report(umb, attemptID, err, nil)
		log.Error("task setup failed", "error", err)
		return 1
	}
	t.conn, t.ctrl, t.umbAddr = conn, ctl, umbilicalAddr
	t.setGC()
	t.logMemory()
	t.watchQuiesce()
	defer func() { t.conn.Close() }()
	t.startReporting()
	stopProfile := t.startProfile()
	err = t.run()
	stopProfile()
	t.stopReporting()
	// A clone runs under another attempt id and umbilical than it started
	// with: report under the current ones.
	if err != nil {
		report(t.umb, t.launch.AttemptId, err, t.counterProto())
		t.log.Error("task failed", "error", err)
		return 1
	}
	if _, err := t.umb.Done(context.Background(), &mrpb.DoneRequest{AttemptId: t.launch.AttemptId, Counters: t.counterProto(), Split: t.split.Load(), ReduceCut: t.reduceCut}); err != nil {
		t.log.Error("reporting done", "error", err)
		return 1
	}
	return 0
}

// report tells the tracker the attempt failed with err. A reduce stopped
// because a map's re-run contradicts spills it fetched from the map's
// withdrawn attempt (shuffle.ErrNondeterministic) is reported as not its
// own failure: it ends KILLED, which the JobTracker does not count against
// mapreduce.reduce.maxattempts (up to one such kill per map re-run it saw
// differ), and its next attempt fetches only the re-run's spills
// (docs/architecture.md, "Lost map output").
func report(umb mrpb.UmbilicalClient, id string, err error, cs []*mrpb.Counter) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, _ = umb.Failed(ctx, &mrpb.FailedRequest{AttemptId: id, Error: err.Error(), Counters: cs, Killed: errors.Is(err, shuffle.ErrNondeterministic)})
}

// task is the running attempt's state.
type task struct {
	ctx     context.Context
	cancel  context.CancelFunc
	log     *slog.Logger
	umb     mrpb.UmbilicalClient
	conn    *grpc.ClientConn
	umbAddr string
	launch  *mrpb.LaunchTask
	// ctrl is the control pipe the tracker clones through (nil: none);
	// slow is the straggler injector of the running work loop.
	ctrl *ctrl
	slow *slowdown
	// wake cuts short the injector's sleep when the work loop has an order
	// to carry out at its next check (a quiesce, a split): see wakeWork.
	wake chan struct{}
	// finalFrom is when a map's record loop ended and finalWeight its
	// share of the map's progress (for the injector's final phase).
	finalFrom   time.Time
	finalWeight float64
	cloneable   atomic.Bool
	spec        mr.JobSpec
	def         *mr.JobDef
	conf        *conf.Config
	counters    *mr.Counters
	isMap       bool

	// Map splitting (split.go): splitOrdered is set when the tracker's
	// answer to a status report says the JobTracker ordered a split;
	// split once the map stopped because of it, splitCut being where.
	// A split reduce's reduceCut is where it stopped.
	splitOrdered atomic.Bool
	// splitFanout is, for a reduce split for idle slots, the pieces to cut
	// the rest of its key range into (reduceBounds).
	splitFanout atomic.Int32
	split       atomic.Bool
	splitCut    *mrpb.MapCut
	reduceCut   *mrpb.ReduceCut

	mu       sync.Mutex
	progress float32
	phase    string

	stop     chan struct{}
	stopped  chan struct{}
	stopOnce *sync.Once
}

func newTask(ctx context.Context, cancel context.CancelFunc, l *mrpb.LaunchTask, umb mrpb.UmbilicalClient, log *slog.Logger) (*task, error) {
	t := &task{ctx: ctx, cancel: cancel, log: log, umb: umb, launch: l, counters: mr.NewCounters(),
		isMap: l.Type == "m", wake: make(chan struct{}, 1)}
	if err := json.Unmarshal(l.SpecJson, &t.spec); err != nil {
		return nil, fmt.Errorf("decoding the job spec: %w", err)
	}
	def, err := mr.LookupJob(t.spec.Def)
	if err != nil {
		return nil, err
	}
	t.def = def
	cfg, err := conf.FromMap(l.Conf)
	if err != nil {
		return nil, fmt.Errorf("job configuration: %w", err)
	}
	t.conf = cfg
	t.phase = "MAP"
	if !t.isMap {
		t.phase = "SHUFFLE"
	}
	return t, nil
}

func (t *task) setProgress(p float64) {
	t.mu.Lock()
	t.progress = float32(max(0, min(1, p)))
	t.mu.Unlock()
}

func (t *task) setPhase(ph string) {
	t.mu.Lock()
	t.phase = ph
	t.mu.Unlock()
	t.sendStatus() // phase changes carry phase times: report at once
}

func (t *task) counterProto() []*mrpb.Counter {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		ms := (ru.Utime.Nano() + ru.Stime.Nano()) / 1e6
		t.counters.Get(mr.TaskCounterGroup, mr.CPUMilliseconds).Set(ms)
	}
	setResourceCounters(t.counters)
	snap := t.counters.Snapshot()
	var out []*mrpb.Counter
	// In (group, name) order, bytes by bytes: the order the JobTracker
	// keeps counters in, which it then takes as they come
	// (mr.PackCounters).
	for _, g := range slices.Sorted(maps.Keys(snap)) {
		for _, n := range snap.Names(g) {
			out = append(out, &mrpb.Counter{Group: g, Name: n, Value: snap[g][n]})
		}
	}
	return out
}

func (t *task) sendStatus() bool {
	t.mu.Lock()
	req := &mrpb.StatusUpdateRequest{AttemptId: t.launch.AttemptId, Progress: t.progress, Phase: t.phase, Cloneable: t.cloneable.Load()}
	t.mu.Unlock()
	req.Counters = t.counterProto()
	ctx, cancel := context.WithTimeout(t.ctx, 5*time.Second)
	defer cancel()
	resp, err := t.umb.StatusUpdate(ctx, req)
	if err != nil {
		return false
	}
	if !resp.Known {
		t.log.Warn("the tracker no longer knows this attempt: exiting")
		os.Exit(3)
	}
	if resp.Split {
		t.splitFanout.Store(resp.SplitFanout)
		t.splitOrdered.Store(true)
		t.wakeWork()
	}
	return true
}

// wakeWork tells the work loop, if it sleeps off the straggler
// injector's delay, to go to its next check at once: an order (a quiesce,
// a split) is waiting there, and the reclaim of the slot must not wait for
// a delay that is the injector's, not the task's. The delay not slept
// stays owed.
func (t *task) wakeWork() {
	select {
	case t.wake <- struct{}{}:
	default:
	}
}

// reportLoop sends status every mapreduce.task.progress.report.interval;
// a child that cannot reach its tracker for long exits.
func (t *task) reportLoop(stop <-chan struct{}, stopped chan<- struct{}) {
	defer close(stopped)
	tick := time.NewTicker(t.conf.Duration("mapreduce.task.progress.report.interval"))
	defer tick.Stop()
	lastOK := time.Now()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		if t.sendStatus() {
			lastOK = time.Now()
		} else if time.Since(lastOK) > umbilicalLostAfter {
			t.log.Error("lost the umbilical to the tracker: exiting")
			os.Exit(4)
		}
	}
}

// startReporting starts reportLoop; stopReporting stops it and waits. A
// quiesced task stops and restarts it around its quiet point.
func (t *task) startReporting() {
	t.stop, t.stopped, t.stopOnce = make(chan struct{}), make(chan struct{}), new(sync.Once)
	go t.reportLoop(t.stop, t.stopped)
}

func (t *task) stopReporting() {
	t.stopOnce.Do(func() { close(t.stop) })
	<-t.stopped
}

// run runs the map or reduce, turning a panic in user code into an error.
func (t *task) run() (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v\n%s", r, debug.Stack())
		}
	}()
	if t.isMap {
		return t.runMap()
	}
	return t.runReduce()
}

// commit asks the JobTracker for permission and moves the attempt's output
// into place.
func (t *task) commit(c *mr.Committer) error {
	for {
		resp, err := t.umb.CanCommit(t.ctx, &mrpb.CanCommitRequest{AttemptId: t.launch.AttemptId})
		if err != nil {
			return fmt.Errorf("asking to commit: %w", err)
		}
		if resp.CanCommit {
			break
		}
		select {
		case <-t.ctx.Done():
			return t.ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if !t.sendStatus() {
			return errors.New("lost the tracker while waiting to commit")
		}
	}
	if err := c.CommitTask(t.launch.AttemptId); err != nil {
		return fmt.Errorf("committing output: %w", err)
	}
	return nil
}

// taskContext is what user code sees.
type taskContext struct{ t *task }

func (c taskContext) Context() context.Context { return c.t.ctx }
func (c taskContext) Param(name string) string { return c.t.spec.Params[name] }
func (c taskContext) Conf(key string) string   { return c.t.conf.String(key) }
func (c taskContext) Counter(group, name string) *mr.Counter {
	return c.t.counters.Get(group, name)
}
func (c taskContext) TaskIndex() int  { return int(c.t.launch.Index) }
func (c taskContext) NumReduces() int { return int(c.t.launch.NumReduces) }
