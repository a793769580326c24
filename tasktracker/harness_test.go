package tasktracker

// The harness of the tasktracker tests: a real TaskTracker heartbeats to a
// fake JobTracker (the mrpb JobTracker service, minimal, on loopback) that
// the tests drive with the actions of its heartbeat replies and that
// records every heartbeat. The tracker launches real task children: this
// test binary, which TestMain turns into the task child when it is started
// with the hidden child argument, as cmd/mr's binary is.

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"gomr/conf"
	"gomr/mr"
	"gomr/mrpb"
	"gomr/tasktracker/child"
)

// TestMain runs the task child when the tracker under test starts this
// binary as one ("<test binary> child --attempt ID --umbilical ADDR").
func TestMain(m *testing.M) {
	if len(os.Args) >= 2 && os.Args[1] == ChildArg {
		os.Exit(runTestChild(os.Args[2:]))
	}
	if os.Getenv(trackerProcessEnv) != "" {
		os.Exit(runTrackerProcess())
	}
	os.Exit(m.Run())
}

// trackerProcessEnv, set to a JobTracker address, makes this binary a
// TaskTracker process (see runTrackerProcess), for the tests that kill one.
const trackerProcessEnv = "TTTEST_TRACKER_PROCESS_JT"

// runTrackerProcess runs a TaskTracker with one map and one reduce slot
// against the JobTracker at $TTTEST_TRACKER_PROCESS_JT, in local
// directory $TTTEST_TRACKER_PROCESS_LOCAL, until it is killed.
func runTrackerProcess() int {
	cfg, err := conf.FromMap(trackerConf(1, 1))
	if err == nil {
		var tt *TaskTracker
		tt, err = New(cfg, Options{Name: testTrackerName, LocalDir: os.Getenv("TTTEST_TRACKER_PROCESS_LOCAL"), JobTracker: os.Getenv(trackerProcessEnv)})
		if err == nil {
			err = tt.Run(context.Background())
		}
	}
	fmt.Fprintln(os.Stderr, "test tracker process:", err)
	return 1
}

// trackerConf is the configuration of every tracker under test.
func trackerConf(maps, reduces int) map[string]string {
	return map[string]string{
		"mapreduce.tasktracker.map.tasks.maximum":    strconv.Itoa(maps),
		"mapreduce.tasktracker.reduce.tasks.maximum": strconv.Itoa(reduces),
		"mapreduce.tasktracker.heartbeat.interval":   "50",
		"mapreduce.tasktracker.host.name":            "localhost",
		"mapreduce.tasktracker.criu.path":            "",
	}
}

// runTestChild is cmd/mr's runChild: the arguments the tracker gives.
func runTestChild(args []string) int {
	var attempt, umb string
	for i := 0; i+1 < len(args); i += 2 {
		switch args[i] {
		case "--attempt":
			attempt = args[i+1]
		case "--umbilical":
			umb = args[i+1]
		}
	}
	if attempt == "" || umb == "" {
		fmt.Fprintln(os.Stderr, "test child: needs --attempt ID --umbilical HOST:PORT")
		return 2
	}
	return child.Main(attempt, umb)
}

// The job definitions the test children run (registered in the tests and
// in every child, since both are this binary).
const (
	// wordCountDef counts words: the map emits (word, "1"), the reduce
	// writes each word with its count.
	wordCountDef = "tttest-wordcount"
	// blockDef's map writes blockMarker to its stderr on its first record,
	// then blocks until its process is killed (at most ten minutes),
	// counting blockTicks (a sign of life the tracker takes for progress)
	// every 50 ms.
	blockDef = "tttest-block"
	// failDef's map fails on its first record with failMessage.
	failDef = "tttest-fail"

	blockMarker = "tttest-block: blocking in the map"
	blockGroup  = "tttest"
	blockTicks  = "BLOCK_TICKS"
	failMessage = "tttest-fail: injected map failure"
)

func init() {
	mr.RegisterJob(&mr.JobDef{
		Name:   wordCountDef,
		Input:  mr.TextInput{},
		Output: mr.TextOutput{},
		Mapper: func(mr.TaskContext) (mr.Mapper, error) {
			return mr.MapperFunc(func(_ mr.TaskContext, _, line []byte, out mr.Emitter) error {
				for _, w := range strings.Fields(string(line)) {
					if err := out.Emit([]byte(w), []byte("1")); err != nil {
						return err
					}
				}
				return nil
			}), nil
		},
		Reducer: func(mr.TaskContext) (mr.Reducer, error) {
			return mr.ReducerFunc(func(_ mr.TaskContext, key []byte, values mr.ValueIterator, out mr.Emitter) error {
				n := 0
				for values.Next() {
					v, err := strconv.Atoi(string(values.Value()))
					if err != nil {
						return err
					}
					n += v
				}
				return out.Emit(key, []byte(strconv.Itoa(n)))
			}), nil
		},
	})
	mr.RegisterJob(&mr.JobDef{
		Name:   blockDef,
		Input:  mr.TextInput{},
		Output: mr.TextOutput{},
		Mapper: func(mr.TaskContext) (mr.Mapper, error) {
			return mr.MapperFunc(func(tc mr.TaskContext, _, _ []byte, _ mr.Emitter) error {
				fmt.Fprintln(os.Stderr, blockMarker)
				tick := time.NewTicker(50 * time.Millisecond)
				defer tick.Stop()
				limit := time.After(10 * time.Minute)
				for {
					select {
					case <-tc.Context().Done():
						return tc.Context().Err()
					case <-limit:
						return errors.New("tttest-block: not killed")
					case <-tick.C:
						tc.Counter(blockGroup, blockTicks).Increment()
					}
				}
			}), nil
		},
	})
	mr.RegisterJob(&mr.JobDef{
		Name:   failDef,
		Input:  mr.TextInput{},
		Output: mr.TextOutput{},
		Mapper: func(mr.TaskContext) (mr.Mapper, error) {
			return mr.MapperFunc(func(mr.TaskContext, []byte, []byte, mr.Emitter) error {
				return errors.New(failMessage)
			}), nil
		},
	})
}

// waitTimeout bounds every wait of the tests: far above what anything
// takes on a loaded 2-core machine under -race, far below the test
// binary's own timeout.
const waitTimeout = 60 * time.Second

// fakeJT is a minimal JobTracker: each heartbeat reply carries the actions
// queued with send, map spill announcements become map events for
// reduces, and every commit request is granted. It records every
// heartbeat.
type fakeJT struct {
	mrpb.UnimplementedJobTrackerServer
	addr string

	mu    sync.Mutex
	beats []*mrpb.HeartbeatRequest
	// arrived is when each of beats arrived.
	arrived []time.Time
	// replyDelay, when set, is how long each heartbeat's reply is held
	// back after the heartbeat is recorded.
	replyDelay time.Duration
	changed    chan struct{} // closed and replaced at every heartbeat
	pending    []*mrpb.TaskAction
	replyID    int64
	// reinit makes the next reply tell the tracker to reinitialize.
	reinit bool
	// intervalMs is the heartbeat interval the replies set (default 50).
	intervalMs int32
	// readsPacked is what the replies say of packed segments (false: a
	// JobTracker from before them).
	readsPacked bool
	// refuse, when set, answers a heartbeat with an error instead (nil:
	// the normal reply); the heartbeat is recorded all the same.
	refuse func(*mrpb.HeartbeatRequest) error
	// launches are the attempts sent, by id; events the map events of
	// each job, with every reduce's segment.
	launches map[string]*mrpb.LaunchTask
	events   map[string][]fakeEvent
	commits  []string
	// fetchFailures are the fetch failures reported; eventJobs the job
	// of every map events request.
	fetchFailures []*mrpb.FetchFailureRequest
	eventJobs     []string
}

type fakeEvent struct {
	ev   *mrpb.MapEvent
	segs []*mrpb.Segment
}

// startFakeJT serves a fakeJT on a loopback port until the test ends.
func startFakeJT(t *testing.T) *fakeJT {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeJT{
		addr:     l.Addr().String(),
		changed:  make(chan struct{}),
		launches: map[string]*mrpb.LaunchTask{},
		events:   map[string][]fakeEvent{},
	}
	srv := grpc.NewServer()
	mrpb.RegisterJobTrackerServer(srv, f)
	go srv.Serve(l)
	t.Cleanup(srv.Stop)
	return f
}

// Heartbeat records the heartbeat and answers with the queued actions.
func (f *fakeJT) Heartbeat(_ context.Context, req *mrpb.HeartbeatRequest) (*mrpb.HeartbeatResponse, error) {
	f.mu.Lock()
	delay := f.replyDelay
	f.mu.Unlock()
	arrived := time.Now()
	time.Sleep(delay)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.beats = append(f.beats, proto.Clone(req).(*mrpb.HeartbeatRequest))
	f.arrived = append(f.arrived, arrived)
	if f.refuse != nil {
		if err := f.refuse(req); err != nil {
			f.notifyLocked()
			return nil, err
		}
	}
	for _, sp := range req.Spills {
		l := f.launches[sp.AttemptId]
		if l == nil {
			continue
		}
		f.events[l.JobId] = append(f.events[l.JobId], fakeEvent{
			ev: &mrpb.MapEvent{Kind: "SPILL_READY", MapTask: l.Index, Spill: sp.Spill, Final: sp.Final,
				AttemptId: sp.AttemptId, ShuffleAddress: req.ShuffleAddress},
			segs: announcedSegments(sp),
		})
	}
	f.replyID++
	interval := f.intervalMs
	if interval == 0 {
		interval = 50
	}
	resp := &mrpb.HeartbeatResponse{HeartbeatIntervalMs: interval, ResponseId: f.replyID, Actions: f.pending, ReadsPackedSegments: f.readsPacked}
	if req.InitialContact {
		resp.Incarnation = "fake-incarnation"
	}
	f.pending = nil
	if f.reinit {
		resp = &mrpb.HeartbeatResponse{Reinit: true}
		f.reinit = false
	}
	f.notifyLocked()
	return resp, nil
}

// announcedSegments is an announcement's segments as messages, whether
// they came packed or not (nil if packed ones do not parse).
func announcedSegments(sp *mrpb.SpillAnnouncement) []*mrpb.Segment {
	if len(sp.PackedSegments) == 0 {
		return sp.Segments
	}
	p, err := mrpb.ParsePackedSegments(string(sp.PackedSegments), true)
	if err != nil {
		return nil
	}
	return p.Messages()
}

// notifyLocked wakes the waiters for a new heartbeat.
func (f *fakeJT) notifyLocked() {
	close(f.changed)
	f.changed = make(chan struct{})
}

// GetMapEvents serves the map events of a job, waiting up to the
// request's wait for new ones.
func (f *fakeJT) GetMapEvents(ctx context.Context, req *mrpb.MapEventsRequest) (*mrpb.MapEventsResponse, error) {
	f.mu.Lock()
	f.eventJobs = append(f.eventJobs, req.JobId)
	f.mu.Unlock()
	timer := time.NewTimer(time.Duration(req.WaitMs) * time.Millisecond)
	defer timer.Stop()
	for {
		f.mu.Lock()
		evs := f.events[req.JobId]
		if int(req.From) < len(evs) {
			resp := &mrpb.MapEventsResponse{}
			for _, e := range evs[req.From:] {
				ev := proto.Clone(e.ev).(*mrpb.MapEvent)
				if int(req.Reduce) < len(e.segs) {
					ev.Segment = e.segs[req.Reduce]
				}
				resp.Events = append(resp.Events, ev)
			}
			f.mu.Unlock()
			return resp, nil
		}
		ch := f.changed
		f.mu.Unlock()
		select {
		case <-ch:
		case <-timer.C:
			return &mrpb.MapEventsResponse{}, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// CanCommit grants every request and records it.
func (f *fakeJT) CanCommit(_ context.Context, req *mrpb.CanCommitRequest) (*mrpb.CanCommitResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.commits = append(f.commits, req.AttemptId)
	return &mrpb.CanCommitResponse{CanCommit: true}, nil
}

// ReportFetchFailure records the report.
func (f *fakeJT) ReportFetchFailure(_ context.Context, req *mrpb.FetchFailureRequest) (*mrpb.Empty, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fetchFailures = append(f.fetchFailures, proto.Clone(req).(*mrpb.FetchFailureRequest))
	return &mrpb.Empty{}, nil
}

// next is the index of the next heartbeat to be recorded (it may be
// built already): from there on, a heartbeat may show what happened
// after this call, never what had not happened before it.
func (f *fakeJT) next() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.beats)
}

// setReplyDelay holds back every later reply by d.
func (f *fakeJT) setReplyDelay(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.replyDelay = d
}

// arrivals returns when the heartbeats from index from on arrived.
func (f *fakeJT) arrivals(from int) []time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	if from >= len(f.arrived) {
		return nil
	}
	return slices.Clone(f.arrived[from:])
}

// setRefuse sets the fake's refuse hook.
func (f *fakeJT) setRefuse(refuse func(*mrpb.HeartbeatRequest) error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.refuse = refuse
}

// send queues actions for the next heartbeat reply. It returns the index
// of the first heartbeat that the tracker builds after acting on them.
func (f *fakeJT) send(actions ...*mrpb.TaskAction) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, a := range actions {
		if l := a.GetLaunch(); l != nil {
			f.launches[l.AttemptId] = l
		}
	}
	f.pending = append(f.pending, actions...)
	// The heartbeat now on its way, if any, gets these actions in its
	// reply: the one after it is the first built after them.
	return len(f.beats) + 1
}

// sendReinit makes the next reply tell the tracker to reinitialize, as
// a JobTracker that does not know it does. It returns the index of the
// first heartbeat built after the tracker got that reply.
func (f *fakeJT) sendReinit() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reinit = true
	return len(f.beats) + 1
}

// waitBeat waits for a heartbeat, at index from or later, that satisfies
// ok, and returns it with its index. It fails the test after waitTimeout,
// naming what it waited for and showing the heartbeats around from.
func (f *fakeJT) waitBeat(t *testing.T, from int, what string, ok func(*mrpb.HeartbeatRequest) bool) (*mrpb.HeartbeatRequest, int) {
	t.Helper()
	deadline := time.NewTimer(waitTimeout)
	defer deadline.Stop()
	first := from
	for {
		f.mu.Lock()
		for i := from; i < len(f.beats); i++ {
			if ok(f.beats[i]) {
				b := f.beats[i]
				f.mu.Unlock()
				return b, i
			}
		}
		from = max(from, len(f.beats))
		ch := f.changed
		f.mu.Unlock()
		select {
		case <-ch:
		case <-deadline.C:
			t.Fatalf("no heartbeat %s (from heartbeat %d on) within %v; the heartbeats around:\n%s", what, first, waitTimeout, f.describeBeats(first-3, first+6))
		}
	}
}

// describeBeats describes heartbeats from to to (excluded) and the last.
func (f *fakeJT) describeBeats(from, to int) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var s strings.Builder
	from, to = max(from, 0), min(to, len(f.beats))
	for i := from; i < to; i++ {
		fmt.Fprintf(&s, "  %d: %s\n", i, describeBeat(f.beats[i]))
	}
	if n := len(f.beats); n > to {
		fmt.Fprintf(&s, "  ...\n  %d (last): %s\n", n-1, describeBeat(f.beats[n-1]))
	}
	return s.String()
}

// beatsFrom returns the heartbeats received from index from on.
func (f *fakeJT) beatsFrom(from int) []*mrpb.HeartbeatRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	if from >= len(f.beats) {
		return nil
	}
	return slices.Clone(f.beats[from:])
}

// fetchFailureReports returns the fetch failures reported so far.
func (f *fakeJT) fetchFailureReports() []*mrpb.FetchFailureRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.fetchFailures)
}

// eventRequestJobs returns the job of every map events request so far.
func (f *fakeJT) eventRequestJobs() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.eventJobs)
}

// commitRequests returns the attempts that asked to commit so far.
func (f *fakeJT) commitRequests() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.commits)
}

// describeBeat summarizes a heartbeat for failure messages.
func describeBeat(b *mrpb.HeartbeatRequest) string {
	if b == nil {
		return "none"
	}
	var s strings.Builder
	fmt.Fprintf(&s, "initial=%v free maps %d/%d, free reduces %d/%d, %d spills, attempts:",
		b.InitialContact, b.FreeMapSlots, b.MapSlots, b.FreeReduceSlots, b.ReduceSlots, len(b.Spills))
	for _, a := range b.Attempts {
		fmt.Fprintf(&s, " %s=%s(%q)", a.AttemptId, a.State, firstLine(a.Diagnostic))
	}
	return s.String()
}

// attemptIn returns the status of attempt id in heartbeat b, or nil.
func attemptIn(b *mrpb.HeartbeatRequest, id string) *mrpb.AttemptStatus {
	for _, a := range b.Attempts {
		if a.AttemptId == id {
			return a
		}
	}
	return nil
}

// inState returns a heartbeat predicate: attempt id is reported in state.
func inState(id, state string) func(*mrpb.HeartbeatRequest) bool {
	return func(b *mrpb.HeartbeatRequest) bool {
		a := attemptIn(b, id)
		return a != nil && a.State == state
	}
}

// syncBuffer is a bytes.Buffer safe for concurrent writers: the tracker's
// log, kept out of t.Log (the tracker's goroutines may log after a test
// ends) and shown when a test fails.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// testTracker is a running TaskTracker under test and its fake JobTracker.
type testTracker struct {
	tt  *TaskTracker
	jt  *fakeJT
	log *syncBuffer
	// root is mapreduce.cluster.local.dir; the tracker works in
	// root/<tracker name>.
	root string
	// runDone is closed when Run has returned runErr.
	runDone chan struct{}
	runErr  error
}

// trackerOpts are the tracker's slots and where it keeps its files.
type trackerOpts struct {
	maps, reduces int
	// root is the local directory root; empty: a new temporary one.
	root string
	// exe is the task child binary; empty: this test binary.
	exe string
	// intervalMs is the heartbeat interval the JobTracker sets (0: 50).
	intervalMs int32
	// readsPacked: the JobTracker says it reads packed segments.
	readsPacked bool
	// runErr is what TaskTracker.Run must return, in part (empty: nil).
	runErr string
	// refuse is the JobTracker's refuse hook from the first heartbeat on.
	refuse func(*mrpb.HeartbeatRequest) error
	// conf is configuration beyond trackerConf's.
	conf map[string]string
}

// testTrackerName is the name every tracker under test registers with.
const testTrackerName = "tracker_tttest"

// startTracker starts a TaskTracker with o's slots against a new fake
// JobTracker, and waits for its first heartbeat. The tracker is stopped
// at the end of the test; the test fails if any of its children is still
// alive then or if the race detector fired in one of them.
func startTracker(t *testing.T, o trackerOpts) *testTracker {
	t.Helper()
	if o.root == "" {
		o.root = t.TempDir()
	}
	jt := startFakeJT(t)
	jt.intervalMs = o.intervalMs
	jt.readsPacked = o.readsPacked
	jt.refuse = o.refuse
	kv := trackerConf(o.maps, o.reduces)
	maps.Copy(kv, o.conf)
	cfg, err := conf.FromMap(kv)
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	tt, err := New(cfg, Options{Logger: log, Name: testTrackerName, LocalDir: o.root, JobTracker: jt.addr, Executable: o.exe})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	tr := &testTracker{tt: tt, jt: jt, log: logs, root: o.root, runDone: make(chan struct{})}
	go func() {
		tr.runErr = tt.Run(ctx)
		close(tr.runDone)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-tr.runDone:
			if o.runErr == "" && tr.runErr != nil || o.runErr != "" && (tr.runErr == nil || !strings.Contains(tr.runErr.Error(), o.runErr)) {
				t.Errorf("TaskTracker.Run: %v; want an error containing %q (none if empty)", tr.runErr, o.runErr)
			}
		case <-time.After(waitTimeout):
			t.Errorf("TaskTracker.Run did not return within %v of its context's end", waitTimeout)
		}
		if pids := tr.childPIDs(""); len(pids) > 0 {
			t.Errorf("task children still alive after the tracker stopped: %v", pids)
			for _, pid := range pids {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		tr.checkChildRaces(t)
		if t.Failed() {
			t.Logf("tracker log:\n%s", logs.String())
		}
	})
	jt.waitBeat(t, 0, "from the new tracker", func(b *mrpb.HeartbeatRequest) bool { return b.InitialContact })
	return tr
}

// dir is the tracker's own local directory.
func (tr *testTracker) dir() string { return filepath.Join(tr.root, sanitize(testTrackerName)) }

// attemptDir is where the tracker runs attempt id of job.
func (tr *testTracker) attemptDir(job, id string) string {
	return filepath.Join(tr.dir(), "jobs", job, id)
}

// childPIDs lists the live task children of this tracker (those of
// attempt id only, unless id is empty).
func (tr *testTracker) childPIDs(id string) []int {
	return taskChildren(tr.tt.exe, tr.tt.umbAddr, id)
}

// taskChildren lists the live task children, from /proc: processes
// running exe with the child argument, attempt id and umbilical address
// umbAddr (any exe, attempt or address for an empty one). Zombies do not
// count.
func taskChildren(exe, umbAddr, id string) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || len(b) == 0 {
			continue
		}
		args := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
		if len(args) < 6 || args[1] != ChildArg || args[2] != "--attempt" || args[4] != "--umbilical" ||
			exe != "" && args[0] != exe || id != "" && args[3] != id || umbAddr != "" && args[5] != umbAddr {
			continue
		}
		if zombie(pid) {
			continue
		}
		pids = append(pids, pid)
	}
	return pids
}

// waitChild waits for attempt id to have exactly one live child process
// and returns its PID.
func (tr *testTracker) waitChild(t *testing.T, id string) int {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		pids := tr.childPIDs(id)
		if len(pids) == 1 {
			return pids[0]
		}
		if len(pids) > 1 || time.Now().After(deadline) {
			t.Fatalf("attempt %s has child processes %v, want exactly one", id, pids)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitStderr waits until attempt id's stderr file contains s (the child
// reached a known point of its task).
func (tr *testTracker) waitStderr(t *testing.T, job, id, s string) {
	t.Helper()
	path := filepath.Join(tr.attemptDir(job, id), "stderr")
	deadline := time.Now().Add(waitTimeout)
	for {
		b, _ := os.ReadFile(path)
		if strings.Contains(string(b), s) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s does not contain %q within %v; it holds:\n%s", path, s, waitTimeout, b)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// checkChildRaces fails the test if the race detector reported a race in
// a task child (children write their reports to their stderr files).
func (tr *testTracker) checkChildRaces(t *testing.T) {
	_ = filepath.WalkDir(tr.dir(), func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "stderr" {
			return nil
		}
		if b, err := os.ReadFile(path); err == nil && bytes.Contains(b, []byte("DATA RACE")) {
			t.Errorf("the race detector fired in a task child (%s):\n%s", path, b)
		}
		return nil
	})
}

// processGone waits until process pid is dead (gone, or a zombie not yet
// reaped by whoever inherited it) and reports whether it died within
// waitTimeout.
func processGone(pid int) bool { return processGoneWithin(pid, waitTimeout) }

// processGoneWithin is processGone with a bound of d.
func processGoneWithin(pid int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) || zombie(pid) {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}

// zombie tells whether process pid is a zombie.
func zombie(pid int) bool {
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the parenthesized command name.
	i := bytes.LastIndexByte(st, ')')
	return i >= 0 && i+2 < len(st) && st[i+2] == 'Z'
}

// testJob is a job the tests launch attempts of: a unique id (children of
// other test runs on the machine never share it), its definition, input
// and output.
type testJob struct {
	id     string
	def    string
	input  string
	output string
	maps   int
	// reduces is the job's number of reduces (0: map-only).
	reduces int
	secret  []byte
	// conf is the job's configuration, over the harness's.
	conf map[string]string
}

// newTestJob makes a job of definition def with one map over a small text
// input, and reduces reduces; its output directory is set up as the
// JobTracker sets it up (the committer's temporary directory).
func newTestJob(t *testing.T, def string, reduces int) *testJob {
	t.Helper()
	dir := t.TempDir()
	input := filepath.Join(dir, "input.txt")
	if err := os.WriteFile(input, []byte("a b a\nc a b\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	j := &testJob{
		id:      "job_tt" + randomLowerHex(t, 6) + "_0001",
		def:     def,
		input:   input,
		output:  filepath.Join(dir, "out"),
		maps:    1,
		reduces: reduces,
		secret:  []byte("secret-" + randomLowerHex(t, 8)),
	}
	c, err := mr.NewCommitter(j.output)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.SetupJob(); err != nil {
		t.Fatal(err)
	}
	return j
}

func randomLowerHex(t *testing.T, n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// attempt is the id of attempt n of task index of type typ ("m" or "r").
func (j *testJob) attempt(typ string, index, n int) string {
	return fmt.Sprintf("attempt_%s_%s_%06d_%d", strings.TrimPrefix(j.id, "job_"), typ, index, n)
}

// launch is the launch action of attempt n of task index of type typ, as
// the JobTracker builds it.
func (j *testJob) launch(t *testing.T, typ string, index, n int) *mrpb.TaskAction {
	t.Helper()
	spec, err := json.Marshal(mr.JobSpec{Name: j.def, Def: j.def, Inputs: []string{j.input}, Output: j.output, NumReduces: j.reduces})
	if err != nil {
		t.Fatal(err)
	}
	l := &mrpb.LaunchTask{
		AttemptId:  j.attempt(typ, index, n),
		JobId:      j.id,
		Type:       typ,
		Index:      int32(index),
		SpecJson:   spec,
		NumMaps:    int32(j.maps),
		NumReduces: int32(j.reduces),
		JobSecret:  j.secret,
		Tracker:    testTrackerName,
		Conf: map[string]string{
			"mapreduce.task.io.sort.mb":               "1",
			"mapreduce.task.progress.report.interval": "100",
		},
	}
	maps.Copy(l.Conf, j.conf)
	if typ == "m" {
		st, err := os.Stat(j.input)
		if err != nil {
			t.Fatal(err)
		}
		if l.SplitJson, err = json.Marshal(mr.Split{Path: j.input, Start: 0, Length: st.Size()}); err != nil {
			t.Fatal(err)
		}
	}
	return &mrpb.TaskAction{Action: &mrpb.TaskAction_Launch{Launch: l}}
}

func killAction(id string) *mrpb.TaskAction {
	return &mrpb.TaskAction{Action: &mrpb.TaskAction_KillAttempt{KillAttempt: id}}
}

func purgeAction(job string) *mrpb.TaskAction {
	return &mrpb.TaskAction{Action: &mrpb.TaskAction_PurgeJob{PurgeJob: job}}
}

// counter is the value of a counter in an attempt's status.
func counter(st *mrpb.AttemptStatus, group, name string) int64 {
	for _, c := range st.Counters {
		if c.Group == group && c.Name == name {
			return c.Value
		}
	}
	return -1
}
