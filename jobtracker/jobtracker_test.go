package jobtracker

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "gomr/apps"
	"gomr/conf"
	"gomr/mr"
	"gomr/mrpb"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

// newTestJT builds a JobTracker (not serving: the tests call its RPC
// methods directly) and submits a wordcount job with the given number of
// single-file maps and one reduce.
func newTestJT(t *testing.T, maps int) (*JobTracker, string) {
	return newTestJTAt(t, t.TempDir(), maps, nil)
}

func newTestJTAt(t testing.TB, dir string, maps int, now func() time.Time) (*JobTracker, string) {
	return newTestJTWith(t, dir, maps, now, nil)
}

// newTestJTWith is newTestJTAt with configuration overrides.
func newTestJTWith(t testing.TB, dir string, maps int, now func() time.Time, overrides map[string]string) (*JobTracker, string) {
	t.Helper()
	kv := map[string]string{
		"mapreduce.jobtracker.jobhistory.location":     filepath.Join(dir, "history"),
		"mapreduce.job.reduce.slowstart.completedmaps": "1",
	}
	for k, v := range overrides {
		kv[k] = v
	}
	cfg, err := conf.Default().With(kv, "test")
	if err != nil {
		t.Fatal(err)
	}
	jt, err := New(cfg, Options{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	noIllegalTransitions(t, jt)
	if maps == 0 {
		return jt, ""
	}
	return jt, submitWordCount(t, jt, dir, maps)
}

// submitWordCount submits a wordcount job of maps single-file maps and one
// reduce.
func submitWordCount(t testing.TB, jt *JobTracker, dir string, maps int) string {
	t.Helper()
	resp, err := jt.SubmitJob(context.Background(), wordCountRequest(t, dir, maps))
	if err != nil {
		t.Fatal(err)
	}
	return resp.JobId
}

// wordCountRequest is the submission of a wordcount job of maps
// single-file maps and one reduce, its input written in dir.
func wordCountRequest(t testing.TB, dir string, maps int) *mrpb.SubmitJobRequest {
	t.Helper()
	in := filepath.Join(dir, "in.txt")
	if err := os.WriteFile(in, []byte("a b c\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var splits []mr.Split
	for i := 0; i < maps; i++ {
		splits = append(splits, mr.Split{Path: in, Start: 0, Length: 6})
	}
	spec, _ := json.Marshal(&mr.JobSpec{Def: "wordcount", Inputs: []string{in}, Output: filepath.Join(dir, fmt.Sprintf("out%d", time.Now().UnixNano())), NumReduces: 1})
	sj, _ := json.Marshal(splits)
	return &mrpb.SubmitJobRequest{SpecJson: spec, SplitsJson: sj}
}

// serveGRPC serves jt's gRPC service, with its server options, on a
// loopback port until the test ends, and returns a client of it.
func serveGRPC(t *testing.T, jt *JobTracker) mrpb.JobTrackerClient {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(jt.serverOptions()...)
	mrpb.RegisterJobTrackerServer(srv, wireServer{jt})
	go srv.Serve(l)
	t.Cleanup(srv.Stop)
	cc, err := grpc.NewClient(l.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return mrpb.NewJobTrackerClient(cc)
}

func heartbeat(t testing.TB, jt *JobTracker, req *mrpb.HeartbeatRequest) *mrpb.HeartbeatResponse {
	t.Helper()
	if req.Tracker == "" {
		req.Tracker = "t1"
	}
	req.Host, req.MapSlots, req.ReduceSlots, req.AcceptNewTasks = "h1", 2, 1, true
	asTracker(jt, req)
	resp, err := jt.Heartbeat(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// asTracker completes a test's heartbeat the way a well-behaved tracker
// would: with its build's defaults digest when it registers, with the
// incarnation it was issued, acknowledging the last reply, and reporting
// every attempt the JobTracker has running on it that the test does not
// mention (as it last reported them).
func asTracker(jt *JobTracker, req *mrpb.HeartbeatRequest) {
	if req.InitialContact {
		if req.ConfDefaultsDigest == "" {
			req.ConfDefaultsDigest = conf.DefaultsDigest()
		}
		return
	}
	jt.mu.Lock()
	defer jt.unlock()
	tr := jt.trackers[req.Tracker]
	if tr == nil {
		return
	}
	if req.Incarnation == "" {
		req.Incarnation = tr.incarnation
	}
	if req.ResponseId == 0 {
		req.ResponseId = tr.replyID
	}
	mentioned := map[string]bool{}
	for _, st := range req.Attempts {
		mentioned[st.AttemptId] = true
	}
	for id, a := range tr.attempts {
		if a.live() && !mentioned[id] {
			req.Attempts = append(req.Attempts, &mrpb.AttemptStatus{AttemptId: id, State: a.state.String(), Progress: a.progress,
				Phase: a.phase, Counters: countersToProto(a.counters.Set())})
		}
	}
}

func launches(resp *mrpb.HeartbeatResponse) []*mrpb.LaunchTask {
	var out []*mrpb.LaunchTask
	for _, a := range resp.Actions {
		if l := a.GetLaunch(); l != nil {
			out = append(out, l)
		}
	}
	return out
}

func kills(resp *mrpb.HeartbeatResponse) []string {
	var out []string
	for _, a := range resp.Actions {
		if k := a.GetKillAttempt(); k != "" {
			out = append(out, k)
		}
	}
	return out
}

func seg(crc uint32) []*mrpb.Segment {
	return []*mrpb.Segment{{Length: 10, RawLength: 20, Records: 3, Crc: crc}}
}

func TestUnknownTrackerIsToldToReinit(t *testing.T) {
	jt, _ := newTestJT(t, 1)
	resp := heartbeat(t, jt, &mrpb.HeartbeatRequest{Tracker: "stranger"})
	if !resp.Reinit || len(resp.Actions) != 0 {
		t.Fatalf("heartbeat from an unknown tracker: reinit=%v actions=%d", resp.Reinit, len(resp.Actions))
	}
}

func TestCommitIsGrantedToOneAttempt(t *testing.T) {
	jt, _ := newTestJT(t, 2)
	ls := launches(heartbeat(t, jt, &mrpb.HeartbeatRequest{InitialContact: true, FreeMapSlots: 2}))
	if len(ls) != 2 {
		t.Fatalf("launched %d maps, want 2", len(ls))
	}
	// Two attempts of different tasks may both commit; a second attempt of
	// the same task may not while the first holds the grant.
	for _, l := range ls {
		r, _ := jt.CanCommit(context.Background(), &mrpb.CanCommitRequest{AttemptId: l.AttemptId})
		if !r.CanCommit {
			t.Fatalf("first commit request of %s refused", l.AttemptId)
		}
	}
	// Fail the first attempt of map 0: the grant is released, and the
	// retry (launched on the next heartbeat) gets it.
	heartbeat(t, jt, &mrpb.HeartbeatRequest{Attempts: []*mrpb.AttemptStatus{{AttemptId: ls[0].AttemptId, State: StateFailed, Diagnostic: "boom"}}})
	retry := launches(heartbeat(t, jt, &mrpb.HeartbeatRequest{FreeMapSlots: 1}))
	if len(retry) != 1 || !strings.HasSuffix(retry[0].AttemptId, "_m_000000_1") {
		t.Fatalf("retry launches: %v", retry)
	}
	r, _ := jt.CanCommit(context.Background(), &mrpb.CanCommitRequest{AttemptId: ls[0].AttemptId})
	if r.CanCommit {
		t.Fatal("a failed attempt was allowed to commit")
	}
	r, _ = jt.CanCommit(context.Background(), &mrpb.CanCommitRequest{AttemptId: retry[0].AttemptId})
	if !r.CanCommit {
		t.Fatal("the retry was refused the commit")
	}
}

func TestNonDeterministicSpillFailsTheAttempt(t *testing.T) {
	jt, id := newTestJT(t, 1)
	ls := launches(heartbeat(t, jt, &mrpb.HeartbeatRequest{InitialContact: true, FreeMapSlots: 2}))
	first := ls[0].AttemptId
	// The first attempt announces spill 0, then dies.
	heartbeat(t, jt, &mrpb.HeartbeatRequest{
		Spills:   []*mrpb.SpillAnnouncement{{AttemptId: first, Spill: 0, Segments: seg(111)}},
		Attempts: []*mrpb.AttemptStatus{{AttemptId: first, State: StateFailed, Diagnostic: "killed"}},
	})
	second := launches(heartbeat(t, jt, &mrpb.HeartbeatRequest{FreeMapSlots: 2}))[0].AttemptId
	// Its retry announces a different spill 0: it must be failed and killed.
	resp := heartbeat(t, jt, &mrpb.HeartbeatRequest{
		Spills:   []*mrpb.SpillAnnouncement{{AttemptId: second, Spill: 0, Segments: seg(222)}},
		Attempts: []*mrpb.AttemptStatus{{AttemptId: second, State: StateRunning}},
	})
	if k := kills(resp); len(k) != 1 || k[0] != second {
		t.Fatalf("kill orders %v, want [%s]", k, second)
	}
	st, _ := jt.GetJobStatus(context.Background(), &mrpb.JobStatusRequest{JobId: id})
	if got := countersFromProto(st.Counters).Get(mr.JobCounterGroup, mr.NumFailedMaps); got != 2 {
		t.Fatalf("NUM_FAILED_MAPS = %d, want 2", got)
	}
	// Reducers were told of spill 0 once, from the first attempt.
	ev, _ := jt.GetMapEvents(context.Background(), &mrpb.MapEventsRequest{JobId: id, Reduce: 0})
	if len(ev.Events) != 1 || ev.Events[0].AttemptId != first || ev.Events[0].Segment.Crc != 111 {
		t.Fatalf("map events: %v", ev.Events)
	}
	// A third attempt announcing the same spill as the first is accepted.
	third := launches(heartbeat(t, jt, &mrpb.HeartbeatRequest{FreeMapSlots: 2}))[0].AttemptId
	resp = heartbeat(t, jt, &mrpb.HeartbeatRequest{
		Spills:   []*mrpb.SpillAnnouncement{{AttemptId: third, Spill: 0, Segments: seg(111)}, {AttemptId: third, Spill: 1, Final: true, Segments: seg(333)}},
		Attempts: []*mrpb.AttemptStatus{{AttemptId: third, State: StateSucceeded}},
	})
	if k := kills(resp); len(k) != 0 {
		t.Fatalf("an agreeing attempt was killed: %v", k)
	}
	st, _ = jt.GetJobStatus(context.Background(), &mrpb.JobStatusRequest{JobId: id})
	if st.Maps.Succeeded != 1 {
		t.Fatalf("map not succeeded: %+v", st.Maps)
	}
	ev, _ = jt.GetMapEvents(context.Background(), &mrpb.MapEventsRequest{JobId: id, Reduce: 0})
	if len(ev.Events) != 2 || ev.Events[1].AttemptId != third || !ev.Events[1].Final {
		t.Fatalf("map events after the final spill: %v", ev.Events)
	}
}

func TestProfilesSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := func() time.Time { return clock }
	jt, id := newTestJTAt(t, dir, 1, now)
	m := launches(heartbeat(t, jt, &mrpb.HeartbeatRequest{InitialContact: true, FreeMapSlots: 1}))[0].AttemptId
	clock = clock.Add(4 * time.Second)
	r := launches(heartbeat(t, jt, &mrpb.HeartbeatRequest{
		FreeReduceSlots: 1,
		Spills:          []*mrpb.SpillAnnouncement{{AttemptId: m, Spill: 0, Final: true, Segments: seg(1)}},
		Attempts:        []*mrpb.AttemptStatus{{AttemptId: m, State: StateSucceeded}},
	}))[0].AttemptId
	sortDone := clock.Add(time.Second)
	clock = clock.Add(3 * time.Second)
	heartbeat(t, jt, &mrpb.HeartbeatRequest{Attempts: []*mrpb.AttemptStatus{{AttemptId: r, State: StateSucceeded,
		ShuffleFinishMs: sortDone.UnixMilli(), SortFinishMs: sortDone.UnixMilli()}}})
	waitJob(t, jt, id, StateSucceeded)
	waitHistoryWritten(t, jt, id) // the profile is added with the history
	p := jt.profiles["wordcount"]
	if p.Runs != 1 || p.MapAvg != 4*time.Second {
		t.Fatalf("profile after the run: %+v", p)
	}
	// A new JobTracker on the same history directory has the profile, and
	// shows it to the policy for a job of the same name.
	jt2, id2 := newTestJTAt(t, dir, 1, now)
	if got := jt2.profiles["wordcount"]; got != p {
		t.Fatalf("profile after a restart: %+v, want %+v", got, p)
	}
	jt2.mu.Lock()
	v := jt2.jobViewLocked(jt2.jobs[id2], nil)
	jt2.unlock()
	if v.Profile == nil || *v.Profile != p {
		t.Fatalf("job view profile %+v", v.Profile)
	}
}

func waitJob(t *testing.T, jt *JobTracker, id, state string) {
	t.Helper()
	for i := 0; i < 500; i++ {
		st, _ := jt.GetJobStatus(context.Background(), &mrpb.JobStatusRequest{JobId: id})
		if st.State == state {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("job %s never reached %s", id, state)
}

// A priority set while a job runs reorders FIFO at the next offer, and the
// job's status shows it.
func TestSetJobPriorityReordersFIFO(t *testing.T) {
	dir := t.TempDir()
	jt, first := newTestJTAt(t, dir, 3, nil)
	second := submitWordCount(t, jt, dir, 3)
	heartbeat(t, jt, &mrpb.HeartbeatRequest{InitialContact: true})
	if ls := launches(heartbeat(t, jt, &mrpb.HeartbeatRequest{FreeMapSlots: 1})); len(ls) != 1 || ls[0].JobId != first {
		t.Fatalf("launches %v, want a map of the first job", ls)
	}
	if _, err := jt.SetJobPriority(context.Background(), &mrpb.SetJobPriorityRequest{JobId: second, Priority: "HIGH"}); err != nil {
		t.Fatal(err)
	}
	if ls := launches(heartbeat(t, jt, &mrpb.HeartbeatRequest{FreeMapSlots: 1})); len(ls) != 1 || ls[0].JobId != second {
		t.Fatalf("launches %v, want a map of the second job, now HIGH", ls)
	}
	st, err := jt.GetJobStatus(context.Background(), &mrpb.JobStatusRequest{JobId: second})
	if err != nil || st.Priority != "HIGH" {
		t.Fatalf("status priority %q (%v), want HIGH", st.GetPriority(), err)
	}
	if _, err := jt.SetJobPriority(context.Background(), &mrpb.SetJobPriorityRequest{JobId: second, Priority: "high"}); status.Code(err) != codes.InvalidArgument {
		t.Errorf("priority \"high\": %v, want InvalidArgument", err)
	}
}

// Only a reduce of the map's own job may report a fetch failure of it:
// forged reports from another job's reduce could otherwise re-run the
// map and, past its attempt limit, fail a job that is not theirs.
func TestFetchFailureFromAnotherJobRefused(t *testing.T) {
	dir := t.TempDir()
	jt, victim := newTestJTAt(t, dir, 1, nil)
	other := submitWordCount(t, jt, dir, 1)
	heartbeat(t, jt, &mrpb.HeartbeatRequest{InitialContact: true})
	ls := launches(heartbeat(t, jt, &mrpb.HeartbeatRequest{FreeMapSlots: 1}))
	if len(ls) != 1 || ls[0].JobId != victim {
		t.Fatalf("launches %v, want the victim's map", ls)
	}
	forger := "attempt_" + strings.TrimPrefix(other, "job_") + "_r_000000_0"
	for i := 0; i < 5; i++ {
		_, err := jt.ReportFetchFailure(context.Background(), &mrpb.FetchFailureRequest{JobId: victim, ReduceAttemptId: forger, MapAttemptId: ls[0].AttemptId})
		if status.Code(err) != codes.PermissionDenied {
			t.Fatalf("report %d from %s: %v, want PermissionDenied", i, forger, err)
		}
	}
	if st, _ := attemptStateOf(jt, ls[0].AttemptId); st != StateRunning {
		t.Fatalf("the victim's map is %s after forged reports, want RUNNING", st)
	}
}

// TestIdentOption: Options.Ident names the JobTracker's jobs; an
// identifier that is not digits is refused, as job ids must parse.
func TestIdentOption(t *testing.T) {
	ident := LocalIdent(time.Date(2026, 11, 25, 22, 13, 45, 123e6, time.UTC))
	if ident != "20261125221345123" {
		t.Errorf("LocalIdent = %s, want 20261125221345123", ident)
	}
	dir := t.TempDir()
	cfg, err := conf.Default().With(map[string]string{"mapreduce.jobtracker.jobhistory.location": filepath.Join(dir, "history")}, "test")
	if err != nil {
		t.Fatal(err)
	}
	jt, err := New(cfg, Options{Ident: ident})
	if err != nil {
		t.Fatal(err)
	}
	if jt.ident != ident {
		t.Errorf("ident %s, want %s", jt.ident, ident)
	}
	if _, err := New(cfg, Options{Ident: "local-1"}); err == nil || !strings.Contains(err.Error(), "digits only") {
		t.Errorf("New with ident local-1: %v, want a digits-only error", err)
	}
}

// TestNewRefusesBadPreemptionSettings: the planner's configuration is
// checked when the JobTracker starts, naming the key; a good one gives
// the driver a planner of that mechanism.
func TestNewRefusesBadPreemptionSettings(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		key, value, want string
	}{
		{"preemption.mechanism", "suspend", "preemption.mechanism"},
		{"preemption.bandwidth.smoothing", "2", "preemption.bandwidth.smoothing"},
	} {
		cfg, err := conf.Default().With(map[string]string{"mapreduce.jobtracker.jobhistory.location": filepath.Join(dir, "history"), tc.key: tc.value}, "test")
		if err != nil {
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s=%s: configuration error %v, want it to name %s", tc.key, tc.value, err, tc.want)
			}
			continue
		}
		if _, err := New(cfg, Options{}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s=%s: New error %v, want one naming %s", tc.key, tc.value, err, tc.want)
		}
	}
	jt, _ := newTestJTWith(t, dir, 0, nil, map[string]string{"preemption.mechanism": "adaptive"})
	if p := jt.driver.Planner(); p == nil || p.Config().Mechanism != "adaptive" || p.Config().Heartbeat != 300*time.Millisecond {
		t.Errorf("planner %+v, want adaptive with the 300 ms heartbeat", p.Config())
	}
}

// TestSortBufferPinnedByTheFirstSpill: the sort buffer a map's first
// announced spill was cut with is the task's; the first launch carries
// none, every later one carries it, and an attempt that announces a spill
// cut with another is failed, saying so, even when its bytes happen to
// agree.
func TestSortBufferPinnedByTheFirstSpill(t *testing.T) {
	jt, _ := newTestJT(t, 1)
	ls := launches(heartbeat(t, jt, &mrpb.HeartbeatRequest{InitialContact: true, FreeMapSlots: 2}))
	if ls[0].SortMb != 0 {
		t.Fatalf("first launch pins a sort buffer of %d MiB before any spill", ls[0].SortMb)
	}
	first := ls[0].AttemptId
	heartbeat(t, jt, &mrpb.HeartbeatRequest{
		Spills:   []*mrpb.SpillAnnouncement{{AttemptId: first, Spill: 0, Segments: seg(111), SortMb: 64}},
		Attempts: []*mrpb.AttemptStatus{{AttemptId: first, State: StateFailed, Diagnostic: "killed"}},
	})
	retry := launches(heartbeat(t, jt, &mrpb.HeartbeatRequest{FreeMapSlots: 2}))
	if len(retry) != 1 || retry[0].SortMb != 64 {
		t.Fatalf("retry launches %v, want one with the sort buffer pinned at 64 MiB", retry)
	}
	second := retry[0].AttemptId
	resp := heartbeat(t, jt, &mrpb.HeartbeatRequest{
		Spills:   []*mrpb.SpillAnnouncement{{AttemptId: second, Spill: 0, Segments: seg(111), SortMb: 100}},
		Attempts: []*mrpb.AttemptStatus{{AttemptId: second, State: StateRunning}},
	})
	if k := kills(resp); len(k) != 1 || k[0] != second {
		t.Fatalf("kill orders %v, want [%s]", k, second)
	}
	jt.mu.Lock()
	_, a := jt.findAttempt(second)
	diag := a.diag
	jt.mu.Unlock()
	if want := "spill 0 was cut with a sort buffer of 100 MiB, the task's spills with 64 MiB"; !strings.Contains(diag, want) {
		t.Errorf("diagnostic %q, want it to contain %q", diag, want)
	}
}
