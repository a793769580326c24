package jobtracker

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	_ "gomr/apps"
	"gomr/conf"
	"gomr/mr"
	"gomr/mrpb"
	"gomr/security"
)

// fakeClock is a test clock that moves only when told.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// retireRig is a JobTracker (not serving: the tests call its RPC methods)
// with one tracker, t1, a fake clock and a directory for job input and
// output.
type retireRig struct {
	t   testing.TB
	jt  *JobTracker
	clk *fakeClock
	dir string
	in  string
	n   int
}

func newRetireRig(t testing.TB, overrides map[string]string) *retireRig {
	t.Helper()
	dir := t.TempDir()
	m := map[string]string{"mapreduce.jobtracker.jobhistory.location": filepath.Join(dir, "history")}
	for k, v := range overrides {
		m[k] = v
	}
	cfg, err := conf.Default().With(m, conf.SourceFlag)
	if err != nil {
		t.Fatal(err)
	}
	clk := &fakeClock{t: time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)}
	jt, err := New(cfg, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	noIllegalTransitions(t, jt)
	in := filepath.Join(dir, "in.txt")
	if err := os.WriteFile(in, []byte("a b c\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := &retireRig{t: t, jt: jt, clk: clk, dir: dir, in: in}
	r.heartbeat(&mrpb.HeartbeatRequest{InitialContact: true})
	return r
}

func (r *retireRig) heartbeat(req *mrpb.HeartbeatRequest) *mrpb.HeartbeatResponse {
	r.t.Helper()
	req.Tracker, req.Host, req.MapSlots, req.ReduceSlots, req.AcceptNewTasks = "t1", "h1", 1, 1, true
	asTracker(r.jt, req)
	resp, err := r.jt.Heartbeat(context.Background(), req)
	if err != nil {
		r.t.Fatal(err)
	}
	return resp
}

// submit submits a wordcount job of one map and one reduce for user.
func (r *retireRig) submit(user string) string {
	r.t.Helper()
	r.n++
	// Ten job names in turn, as recurring jobs: the JobTracker keeps a
	// profile per job name (profiles.go).
	spec, _ := json.Marshal(&mr.JobSpec{Def: "wordcount", Name: fmt.Sprintf("wc-%d", r.n%10), User: user, Inputs: []string{r.in},
		Output: filepath.Join(r.dir, fmt.Sprintf("out%d", r.n)), NumReduces: 1})
	splits, _ := json.Marshal([]mr.Split{{Path: r.in, Start: 0, Length: 6}})
	resp, err := r.jt.SubmitJob(context.Background(), &mrpb.SubmitJobRequest{SpecJson: spec, SplitsJson: splits})
	if err != nil {
		r.t.Fatal(err)
	}
	return resp.JobId
}

func counter(group, name string, v int64) *mrpb.Counter {
	return &mrpb.Counter{Group: group, Name: name, Value: v}
}

// runJob runs a job of user to success through heartbeats: the map
// succeeds after a second announcing its final spill, the reduce a second
// later; then it waits for the job's commit.
func (r *retireRig) runJob(user string) string {
	r.t.Helper()
	id := r.submit(user)
	ls := launches(r.heartbeat(&mrpb.HeartbeatRequest{FreeMapSlots: 1}))
	if len(ls) != 1 || ls[0].JobId != id || ls[0].Type != "m" {
		r.t.Fatalf("job %s: launches %v, want its map", id, ls)
	}
	m := ls[0].AttemptId
	r.clk.advance(time.Second)
	ls = launches(r.heartbeat(&mrpb.HeartbeatRequest{
		FreeReduceSlots: 1,
		Spills:          []*mrpb.SpillAnnouncement{{AttemptId: m, Spill: 0, Final: true, Segments: seg(7)}},
		Attempts: []*mrpb.AttemptStatus{{AttemptId: m, State: StateSucceeded, Progress: 1, Counters: []*mrpb.Counter{
			counter(mr.TaskCounterGroup, mr.MapInputRecords, 1), counter(mr.TaskCounterGroup, mr.MapOutputRecords, 3)}}},
	}))
	if len(ls) != 1 || ls[0].Type != "r" {
		r.t.Fatalf("job %s: launches %v, want its reduce", id, ls)
	}
	red := ls[0].AttemptId
	r.clk.advance(time.Second)
	r.heartbeat(&mrpb.HeartbeatRequest{Attempts: []*mrpb.AttemptStatus{{AttemptId: red, State: StateSucceeded, Progress: 1,
		Counters: []*mrpb.Counter{counter(mr.TaskCounterGroup, mr.ReduceOutputRecords, 3)}}}})
	r.waitEnded(id)
	return id
}

// killJob submits a job of user, starts its map and kills the job.
func (r *retireRig) killJob(user string) string {
	r.t.Helper()
	id := r.submit(user)
	if ls := launches(r.heartbeat(&mrpb.HeartbeatRequest{FreeMapSlots: 1})); len(ls) != 1 {
		r.t.Fatalf("job %s: launches %v, want its map", id, ls)
	}
	r.clk.advance(time.Second)
	if resp, err := r.jt.KillJob(context.Background(), &mrpb.KillJobRequest{JobId: id}); err != nil || !resp.Killed {
		r.t.Fatalf("kill %s: %v %v", id, resp, err)
	}
	r.heartbeat(&mrpb.HeartbeatRequest{}) // collects the kill and purge orders
	return id
}

// waitEnded waits for the job's commit goroutine to end it.
func (r *retireRig) waitEnded(id string) {
	r.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		r.jt.mu.Lock()
		j := r.jt.jobs[id]
		// Ended, and its history written (after the lock, jobend.go).
		done := j == nil || (j.done() && j.history != historyWriting)
		r.jt.unlock()
		if done {
			return
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("job %s did not end", id)
		}
		time.Sleep(100 * time.Microsecond)
	}
}

func (r *retireRig) status(id string) *mrpb.JobStatus {
	r.t.Helper()
	st, err := r.jt.GetJobStatus(context.Background(), &mrpb.JobStatusRequest{JobId: id})
	if err != nil {
		r.t.Fatalf("status of %s: %v", id, err)
	}
	return st
}

// inMemory tells whether the job is in the JobTracker's job table and
// list, failing the test if it is in only one of them.
func (r *retireRig) inMemory(id string) bool {
	r.t.Helper()
	r.jt.mu.Lock()
	defer r.jt.unlock()
	_, inTable := r.jt.jobs[id]
	inOrder := false
	for _, j := range r.jt.order {
		inOrder = inOrder || j.id == id
	}
	if inTable != inOrder {
		r.t.Fatalf("job %s: in jt.jobs %v, in jt.order %v", id, inTable, inOrder)
	}
	return inTable
}

func (r *retireRig) cached(id string) bool {
	r.jt.mu.Lock()
	defer r.jt.unlock()
	return r.jt.retire.byID[id] != nil
}

// sameStatus checks a retired job's status against the one it had in
// memory: all but the scheduling information (the policy's view of a
// running job; "retired" now).
func sameStatus(t *testing.T, what string, got, want *mrpb.JobStatus) {
	t.Helper()
	if got.SchedulingInfo != retiredInfo {
		t.Errorf("%s: scheduling info %q, want %q", what, got.SchedulingInfo, retiredInfo)
	}
	g, w := proto.Clone(got).(*mrpb.JobStatus), proto.Clone(want).(*mrpb.JobStatus)
	g.SchedulingInfo, w.SchedulingInfo = "", ""
	if !proto.Equal(g, w) {
		t.Errorf("%s:\n got %v\nwant %v", what, g, w)
	}
}

func TestSucceededAttemptsLeaveTheirTracker(t *testing.T) {
	r := newRetireRig(t, nil)
	r.runJob("alice")
	r.jt.mu.Lock()
	defer r.jt.unlock()
	if n := len(r.jt.trackers["t1"].attempts); n != 0 {
		t.Fatalf("tracker t1 still holds %d attempts after its job succeeded", n)
	}
}

// TestRetireByUserLimit: past mapred.jobtracker.completeuserjobs.maximum
// a user's oldest completed jobs are retired at the next check, even long
// before mapred.jobtracker.retirejob.interval; the retired job's status,
// counters and listing come from the retired-jobs cache, and from the
// history file once the cache has dropped it.
func TestRetireByUserLimit(t *testing.T) {
	r := newRetireRig(t, map[string]string{
		"mapred.jobtracker.completeuserjobs.maximum": "2",
		"mapred.job.tracker.retiredjobs.cache.size":  "2",
	})
	var alice []string
	for i := 0; i < 5; i++ {
		alice = append(alice, r.runJob("alice"))
	}
	bob := r.runJob("bob")
	killed := r.killJob("alice") // alice's sixth completed job
	alice = append(alice, killed)
	running := r.submit("alice")
	before := map[string]*mrpb.JobStatus{}
	for _, id := range append(alice, bob) {
		before[id] = r.status(id)
	}
	if st := before[killed]; st.State != StateKilled || st.Maps.Killed != 1 || st.Error != "killed by user" {
		t.Fatalf("killed job's status before retirement: %v", st)
	}

	if n := r.jt.retireJobs(); n != 4 {
		t.Fatalf("retired %d jobs, want alice's 4 oldest", n)
	}
	for i, id := range alice {
		if got, want := r.inMemory(id), i >= 4; got != want {
			t.Errorf("alice's job %d (%s): in memory %v, want %v", i, id, got, want)
		}
	}
	if !r.inMemory(bob) || !r.inMemory(running) {
		t.Fatal("bob's job or alice's running job was retired")
	}
	// The cache holds the two newest retired jobs; the two older ones are
	// answered from their history files.
	for i, id := range alice[:4] {
		if got, want := r.cached(id), i >= 2; got != want {
			t.Errorf("alice's job %d: cached %v, want %v", i, got, want)
		}
		sameStatus(t, fmt.Sprintf("retired job %d (%s)", i, id), r.status(id), before[id])
	}
	st := r.status(alice[0])
	cs := countersFromProto(st.Counters)
	if st.State != StateSucceeded || st.User != "alice" || st.Name != "wc-1" || st.FinishMs-st.SubmitMs != 2000 ||
		cs.Get(mr.TaskCounterGroup, mr.MapOutputRecords) != 3 || cs.Get(mr.JobCounterGroup, mr.TotalLaunchedMaps) != 1 {
		t.Fatalf("status of a job retired past the cache: %v", st)
	}
	if _, err := r.jt.GetJobStatus(context.Background(), &mrpb.JobStatusRequest{JobId: "job_202603040506_0999"}); status.Code(err) != codes.NotFound {
		t.Fatalf("status of an unknown job: %v, want NotFound", err)
	}

	// -list all: the cached retired jobs and those in memory, by
	// submission; -list: the running job.
	all, err := r.jt.ListJobs(context.Background(), &mrpb.ListJobsRequest{All: true})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, s := range all.Jobs {
		ids = append(ids, s.JobId)
	}
	want := []string{alice[2], alice[3], alice[4], bob, killed, running}
	if strings.Join(ids, " ") != strings.Join(want, " ") {
		t.Fatalf("-list all: %v, want %v", ids, want)
	}
	if all.Jobs[0].SchedulingInfo != retiredInfo || all.Jobs[2].SchedulingInfo == retiredInfo {
		t.Fatalf("-list all does not mark the retired jobs: %v", all.Jobs)
	}
	live, _ := r.jt.ListJobs(context.Background(), &mrpb.ListJobsRequest{})
	if len(live.Jobs) != 1 || live.Jobs[0].JobId != running {
		t.Fatalf("-list: %v", live.Jobs)
	}
	// A retired job cannot be killed; it says what it ended as.
	if resp, err := r.jt.KillJob(context.Background(), &mrpb.KillJobRequest{JobId: alice[0]}); err != nil || resp.Killed || resp.State != StateSucceeded {
		t.Fatalf("kill of a retired job: %v %v", resp, err)
	}
	// Once a job of alice's in memory retires, her killed job (now
	// within the limit) stays.
	r.jt.KillJob(context.Background(), &mrpb.KillJobRequest{JobId: running})
	if n := r.jt.retireJobs(); n != 1 || r.inMemory(alice[4]) || !r.inMemory(killed) {
		t.Fatalf("second pass retired %d jobs; %s in memory %v, %s %v", n, alice[4], r.inMemory(alice[4]), killed, r.inMemory(killed))
	}
	if st := r.status(killed); !proto.Equal(st, before[killed]) {
		t.Fatalf("killed job still in memory: %v, was %v", st, before[killed])
	}
	// The retired jobs' attempts left the tracker.
	r.jt.mu.Lock()
	n := len(r.jt.trackers["t1"].attempts)
	r.jt.unlock()
	if n != 0 {
		t.Fatalf("tracker t1 holds %d attempts", n)
	}
}

// TestRetireByInterval: a completed job is retired
// mapred.jobtracker.retirejob.interval after it ended, not before.
func TestRetireByInterval(t *testing.T) {
	r := newRetireRig(t, map[string]string{"mapred.jobtracker.retirejob.interval": "10000"})
	first := r.runJob("alice")
	r.clk.advance(5 * time.Second)
	second := r.runJob("alice")
	wantFirst := r.status(first)
	if n := r.jt.retireJobs(); n != 0 {
		t.Fatalf("retired %d jobs 7 s after the first ended", n)
	}
	r.clk.advance(3 * time.Second) // the first ended 10 s ago
	if n := r.jt.retireJobs(); n != 1 || r.inMemory(first) || !r.inMemory(second) {
		t.Fatalf("retired %d jobs 10 s after the first ended; second in memory %v", n, r.inMemory(second))
	}
	sameStatus(t, "job retired by age", r.status(first), wantFirst)
	r.clk.advance(7 * time.Second)
	if n := r.jt.retireJobs(); n != 1 || r.inMemory(second) {
		t.Fatalf("retired %d jobs 10 s after the second ended", n)
	}
}

// TestRetireLoopRuns: the pass runs on its own every
// mapred.jobtracker.retirejob.check and stops with its context.
func TestRetireLoopRuns(t *testing.T) {
	r := newRetireRig(t, map[string]string{
		"mapred.jobtracker.retirejob.check":          "10",
		"mapred.jobtracker.completeuserjobs.maximum": "0",
	})
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() {
		r.jt.retireLoop(ctx)
		close(stopped)
	}()
	id := r.runJob("alice")
	for deadline := time.Now().Add(5 * time.Second); r.inMemory(id); {
		if time.Now().After(deadline) {
			t.Fatal("the retire loop did not retire the job")
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	<-stopped
	if st := r.status(id); st.State != StateSucceeded {
		t.Fatalf("status after retirement: %v", st)
	}
}

// TestRetireWaitsForHistory: a job whose history file could not be
// written stays in memory (and in the system directory); the pass writes
// it once the lock is released (a write that blocks, here into a FIFO,
// holds no heartbeat up), removes the job from the system directory, and
// the next pass retires it.
func TestRetireWaitsForHistory(t *testing.T) {
	r := newRetireRig(t, map[string]string{"mapred.jobtracker.completeuserjobs.maximum": "0"})
	hist := filepath.Join(r.dir, "history")
	// A file where the history directory was makes every write fail.
	if err := os.Rename(hist, hist+".away"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(hist, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	id := r.runJob("alice")
	want := r.status(id)
	if n := r.jt.retireJobs(); n != 0 || !r.inMemory(id) {
		t.Fatalf("retired %d jobs whose history is not written", n)
	}
	staged := filepath.Join(r.dir, "system", id+".json")
	if _, err := os.Stat(staged); err != nil {
		t.Fatalf("the job whose history is not written left the system directory: %v", err)
	}
	if err := os.Remove(hist); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(hist+".away", hist); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(hist, id+".jsonl.tmp")
	if err := syscall.Mkfifo(tmp, 0o644); err != nil {
		t.Fatal(err)
	}
	passed := make(chan int, 1)
	go func() { passed <- r.jt.retireJobs() }()
	// The pass writes into the FIFO, which nobody reads yet: heartbeats
	// are answered meanwhile.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		r.jt.mu.Lock()
		writing := r.jt.jobs[id].history == historyWriting
		r.jt.unlock()
		if writing {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the pass did not write the history again")
		}
	}
	r.heartbeat(&mrpb.HeartbeatRequest{})
	f, err := os.Open(tmp)
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(f)
	f.Close()
	if err != nil || !strings.Contains(string(data), id) {
		t.Fatalf("history written through the FIFO: %q, %v", data, err)
	}
	if n := <-passed; n != 0 || !r.inMemory(id) {
		t.Fatalf("the pass that wrote the history retired %d jobs", n)
	}
	// The FIFO was renamed into place: a regular file with what went
	// through it takes its place, for the status read from it below.
	final := filepath.Join(hist, id+".jsonl")
	if err := os.Remove(final); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(final, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if n := r.jt.retireJobs(); n != 1 || r.inMemory(id) {
		t.Fatalf("retired %d jobs once the history was written", n)
	}
	if _, err := os.Stat(staged); !os.IsNotExist(err) {
		t.Fatalf("the job is still in the system directory once its history is written: %v", err)
	}
	r.jt.mu.Lock()
	r.jt.retire.byID = map[string]*retiredJob{} // answer from the history file
	r.jt.unlock()
	sameStatus(t, "job whose history was written late", r.status(id), want)
}

// TestRetiredJobsOverHTTP: the status pages and the JSON API show a
// retired job from its summary (marked retired, no tasks), whether it is
// in the retired-jobs cache or only in its history file, and the metrics'
// totals do not drop when jobs retire.
func TestRetiredJobsOverHTTP(t *testing.T) {
	r := newRetireRig(t, map[string]string{
		"mapred.jobtracker.completeuserjobs.maximum": "0",
		"mapred.job.tracker.retiredjobs.cache.size":  "1",
	})
	old, recent := r.runJob("alice"), r.runJob("alice")
	h := r.jt.HTTPHandler()
	detail := func(id string) JobDetail {
		t.Helper()
		rec := httpGet(t, h, "GET", "/api/job?id="+id)
		if rec.Code != 200 {
			t.Fatalf("/api/job?id=%s: %d %s", id, rec.Code, rec.Body)
		}
		var d JobDetail
		if err := json.Unmarshal(rec.Body.Bytes(), &d); err != nil {
			t.Fatal(err)
		}
		return d
	}
	metrics := func() string { return httpGet(t, h, "GET", "/metrics").Body.String() }
	before := map[string]JobDetail{old: detail(old), recent: detail(recent)}
	metricsBefore := metrics()
	if n := r.jt.retireJobs(); n != 2 || !r.cached(recent) || r.cached(old) {
		t.Fatalf("retired %d; cached: recent %v, old %v", n, r.cached(recent), r.cached(old))
	}
	for _, id := range []string{old, recent} {
		got, want := detail(id), before[id]
		want.Retired, want.Tasks, want.Speculations = true, []TaskInfo{}, nil
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(want)
		if string(g) != string(w) {
			t.Errorf("/api/job?id=%s after retirement:\n got %s\nwant %s", id, g, w)
		}
	}
	var list JobList
	if err := json.Unmarshal(httpGet(t, h, "GET", "/api/jobs").Body.Bytes(), &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Jobs) != 1 || list.Jobs[0].ID != recent || !list.Jobs[0].Retired {
		t.Fatalf("/api/jobs after retirement: %+v", list.Jobs)
	}
	if page := httpGet(t, h, "GET", "/").Body.String(); !strings.Contains(page, "SUCCEEDED (retired)") || !strings.Contains(page, recent) {
		t.Errorf("cluster page does not list the retired job:\n%s", page)
	}
	if page := httpGet(t, h, "GET", "/job?id="+old).Body.String(); !strings.Contains(page, "The job is retired") {
		t.Errorf("job page of a retired job:\n%s", page)
	}
	// The counters keep their totals; the job gauge counts the cached job.
	after := metrics()
	for _, line := range strings.Split(metricsBefore, "\n") {
		if strings.HasPrefix(line, "gomr_tasks_launched_total") && !strings.Contains(after, line+"\n") {
			t.Errorf("metric %q dropped after retirement:\n%s", line, after)
		}
	}
	for _, want := range []string{"gomr_jobs_retired_total 2\n", `gomr_jobs{state="succeeded"} 1` + "\n"} {
		if !strings.Contains(after, want) {
			t.Errorf("metrics lack %q:\n%s", want, after)
		}
	}
}

// TestACLRetiredJobs: a retired job keeps its ACLs: its status is
// refused to a user its view ACL does not name, its list entry shown to
// them as a summary only, from the retired-jobs cache (without reading
// its history file) and from its history file once the cache dropped it.
func TestACLRetiredJobs(t *testing.T) {
	s := newSecureJT(t, true)
	id := s.submit("alice", "", map[string]string{security.KeyJobViewACL: " ops"})
	if kr, err := s.call("root", mrpb.JobTracker_KillJob_FullMethodName, &mrpb.KillJobRequest{JobId: id}); err != nil || !kr.(*mrpb.KillJobResponse).Killed {
		t.Fatalf("kill: %v %v", kr, err)
	}
	s.jt.mu.Lock()
	s.jt.retire.maxPerUser = 0
	s.jt.unlock()
	if n := s.jt.retireJobs(); n != 1 {
		t.Fatalf("retired %d jobs", n)
	}
	check := func(from string) {
		t.Helper()
		_, err := s.call("bob", mrpb.JobTracker_GetJobStatus_FullMethodName, &mrpb.JobStatusRequest{JobId: id})
		wantDenied(t, "bob's status of the retired job ("+from+")", err, "user bob", id, security.KeyJobViewACL)
		_, err = s.call("bob", mrpb.JobTracker_KillJob_FullMethodName, &mrpb.KillJobRequest{JobId: id})
		wantDenied(t, "bob's kill of the retired job ("+from+")", err, "user bob", id, security.KeyJobModifyACL)
		for _, who := range []string{"alice", "carol", "root"} {
			r, err := s.call(who, mrpb.JobTracker_GetJobStatus_FullMethodName, &mrpb.JobStatusRequest{JobId: id})
			if err != nil || r.(*mrpb.JobStatus).State != StateKilled || r.(*mrpb.JobStatus).User != "alice" {
				t.Errorf("%s's status of the retired job (%s): %v %v", who, from, r, err)
			}
		}
	}
	// From the cache: the history file is not needed for the ACL.
	hist := filepath.Join(s.dir, "history", id+".jsonl")
	data, err := os.ReadFile(hist)
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(hist)
	check("cache")
	r, err := s.call("bob", mrpb.JobTracker_ListJobs_FullMethodName, &mrpb.ListJobsRequest{All: true})
	if err != nil {
		t.Fatal(err)
	}
	if jobs := r.(*mrpb.ListJobsResponse).Jobs; len(jobs) != 1 || jobs[0].JobId != id || jobs[0].Output != "" || jobs[0].Counters != nil || jobs[0].State != StateKilled {
		t.Errorf("bob's list: %v, want the retired job's summary without output or counters", jobs)
	}
	r, err = s.call("alice", mrpb.JobTracker_ListJobs_FullMethodName, &mrpb.ListJobsRequest{All: true})
	if err != nil {
		t.Fatal(err)
	}
	if jobs := r.(*mrpb.ListJobsResponse).Jobs; len(jobs) != 1 || jobs[0].Output == "" || jobs[0].SchedulingInfo != retiredInfo {
		t.Errorf("alice's list: %v, want the retired job whole", jobs)
	}
	// From the history file, once the cache has dropped the job.
	if err := os.WriteFile(hist, data, 0o644); err != nil {
		t.Fatal(err)
	}
	s.jt.mu.Lock()
	s.jt.retire.byID, s.jt.retire.cache = map[string]*retiredJob{}, nil
	s.jt.unlock()
	check("history")
}

// heapAfterGC is the live heap: runtime.MemStats.HeapAlloc after two
// collections (the second frees what the first's finalizers released).
func heapAfterGC() uint64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// soak runs jobs small jobs (one map, one reduce, of users users in
// turn) through a JobTracker configured with overrides, running the
// retirement pass after each job as the retire loop would, and returns the
// live heap after job 100 and after the last job.
func soak(t testing.TB, overrides map[string]string, jobs, users int) (at100, atEnd uint64) {
	r := newRetireRig(t, overrides)
	for i := 1; i <= jobs; i++ {
		r.runJob(fmt.Sprintf("user%d", i%users))
		r.jt.retireJobs()
		if i == 100 {
			at100 = heapAfterGC()
		}
	}
	atEnd = heapAfterGC()
	runtime.KeepAlive(r)
	return at100, atEnd
}

// soakJobs is the soak length: 1,000 jobs, 300 with -short,
// GOMR_SOAK_JOBS if set.
func soakJobs(t testing.TB) int {
	n := 1000
	if testing.Short() {
		n = 300
	}
	if s := os.Getenv("GOMR_SOAK_JOBS"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 100 {
			t.Fatalf("GOMR_SOAK_JOBS=%q: want a number >= 100", s)
		}
		n = v
	}
	return n
}

// TestRetirementKeepsMemoryFlat: with retirement, the JobTracker's memory
// after job 1,000 is within 10% of its memory after job 100 (Hadoop's
// retirement keys, with completeuserjobs.maximum 10 and a cache of 50
// summaries, so that both are full by job 100).
func TestRetirementKeepsMemoryFlat(t *testing.T) {
	jobs := soakJobs(t)
	began := time.Now()
	at100, atEnd := soak(t, map[string]string{
		"mapred.jobtracker.completeuserjobs.maximum": "10",
		"mapred.job.tracker.retiredjobs.cache.size":  "50",
	}, jobs, 3)
	t.Logf("live heap after job 100: %.2f MiB; after job %d: %.2f MiB (%+.1f%%); %d jobs in %v",
		mib(at100), jobs, mib(atEnd), 100*(float64(atEnd)/float64(at100)-1), jobs, time.Since(began).Round(time.Millisecond))
	if float64(atEnd) > 1.10*float64(at100) {
		t.Errorf("live heap grew from %.2f MiB after job 100 to %.2f MiB after job %d: more than 10%%", mib(at100), mib(atEnd), jobs)
	}
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }

// TestRetirementSoakReport prints the figures docs/reliability.md quotes:
// the live heap after job 100 and after the last job, with retirement off
// (limits far beyond the soak), with Hadoop's defaults, and with the small
// limits of TestRetirementKeepsMemoryFlat. Run it with
//
//	GOMR_SOAK_REPORT=1 go test ./jobtracker/ -run TestRetirementSoakReport -v
func TestRetirementSoakReport(t *testing.T) {
	if os.Getenv("GOMR_SOAK_REPORT") == "" {
		t.Skip("set GOMR_SOAK_REPORT=1 to measure")
	}
	jobs := soakJobs(t)
	for _, c := range []struct {
		name      string
		users     int
		overrides map[string]string
	}{
		{"1 user, no retirement", 1, map[string]string{"mapred.jobtracker.completeuserjobs.maximum": "1000000"}},
		{"1 user, Hadoop defaults (100, cache 1000)", 1, nil},
		{"1 user, 100 per user, cache 100", 1, map[string]string{"mapred.job.tracker.retiredjobs.cache.size": "100"}},
		{"3 users, Hadoop defaults (100, cache 1000)", 3, nil},
		{"3 users, 10 per user, cache 50", 3, map[string]string{
			"mapred.jobtracker.completeuserjobs.maximum": "10", "mapred.job.tracker.retiredjobs.cache.size": "50"}},
		{"3 users, 10 per user, no cache", 3, map[string]string{
			"mapred.jobtracker.completeuserjobs.maximum": "10", "mapred.job.tracker.retiredjobs.cache.size": "0"}},
	} {
		began := time.Now()
		at100, atEnd := soak(t, c.overrides, jobs, c.users)
		t.Logf("%-44s job 100: %6.2f MiB  job %d: %6.2f MiB  %+7.1f%%  (%.1f KiB/job after job 100; %v)", c.name,
			mib(at100), jobs, mib(atEnd), 100*(float64(atEnd)/float64(at100)-1),
			(float64(atEnd)-float64(at100))/1024/float64(jobs-100), time.Since(began).Round(time.Millisecond))
	}
}
