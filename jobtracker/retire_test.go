package jobtracker

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	_ "gomr/apps"
	"gomr/conf"
	"gomr/mr"
	"gomr/mrpb"
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

// waitEnded waits for the job's commit goroutine to end it.
func (r *retireRig) waitEnded(id string) {
	r.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		r.jt.mu.Lock()
		j := r.jt.jobs[id]
		done := j == nil || j.done()
		r.jt.mu.Unlock()
		if done {
			return
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("job %s did not end", id)
		}
		time.Sleep(100 * time.Microsecond)
	}
}

func TestSucceededAttemptsLeaveTheirTracker(t *testing.T) {
	r := newRetireRig(t, nil)
	r.runJob("alice")
	r.jt.mu.Lock()
	defer r.jt.mu.Unlock()
	if n := len(r.jt.trackers["t1"].attempts); n != 0 {
		t.Fatalf("tracker t1 still holds %d attempts after its job succeeded", n)
	}
}
