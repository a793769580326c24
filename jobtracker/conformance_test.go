package jobtracker

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gomr/conf"
	"gomr/mr"
	"gomr/mrpb"
	"gomr/partitions"
	"gomr/sched"
	"gomr/sched/schedtest"
	"gomr/speculator"
)

// TestConformance replays the policy-driver conformance scenarios
// (sched/testdata/conformance, the format in package schedtest) through a
// JobTracker driven by fake trackers over its RPC methods, on a fake clock:
// it must tell the policy the same events and carry out the same decisions
// as the reference host, which wrote the files.
func TestConformance(t *testing.T) {
	schedtest.Replay(t, "../sched/testdata/conformance/*.txt", newConformanceRunner, false)
}

// conformanceRunner is a JobTracker with fake trackers: each tracker
// reports every attempt it runs in every heartbeat, runs what the replies
// launch and kills what they kill.
type conformanceRunner struct {
	t     testing.TB
	jt    *JobTracker
	clk   *fakeClock
	dir   string
	in    string
	ids   map[string]string // scenario job name -> job id
	names map[string]string // job id -> scenario name
	trs   map[string]*fakeTracker
}

type fakeTracker struct {
	name    string
	slots   [2]int
	live    map[string]sched.Attempt // attempt id -> the scenario's name
	started bool
}

func newConformanceRunner(t testing.TB, policy string, overrides map[string]string) schedtest.Runner {
	t.Helper()
	dir := t.TempDir()
	m := map[string]string{
		"mapreduce.jobtracker.jobhistory.location": filepath.Join(dir, "history"),
		"scheduler.policy":                         policy,
		// Speculation is the scenario's (speculate): the JobTracker's own
		// speculator does not run without Serve, and is off besides.
		"mapreduce.map.speculative":    "false",
		"mapreduce.reduce.speculative": "false",
	}
	for k, v := range overrides {
		m[k] = v
	}
	// A test policy of schedtest is not one the configuration accepts:
	// the JobTracker is built with FIFO and then given it.
	p, testPolicy := schedtest.TestPolicy(policy)
	if testPolicy {
		m["scheduler.policy"] = "fifo"
	}
	cfg, err := conf.Default().With(m, conf.SourceFlag)
	if err != nil {
		t.Fatal(err)
	}
	clk := &fakeClock{t: schedtest.Epoch}
	jt, err := New(cfg, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	noIllegalTransitions(t, jt)
	if testPolicy {
		jt.policy, jt.driver = p, sched.New(p)
	}
	in := filepath.Join(dir, "in.txt")
	if err := os.WriteFile(in, []byte(strings.Repeat("a b c\n", 100)), 0o644); err != nil {
		t.Fatal(err)
	}
	return &conformanceRunner{t: t, jt: jt, clk: clk, dir: dir, in: in,
		ids: map[string]string{}, names: map[string]string{}, trs: map[string]*fakeTracker{}}
}

func (r *conformanceRunner) Driver() *sched.Driver { return r.jt.driver }

func (r *conformanceRunner) JobName(id string) string {
	if n, ok := r.names[id]; ok {
		return n
	}
	return id
}

func (r *conformanceRunner) setClock(at time.Time) {
	r.clk.mu.Lock()
	r.clk.t = at
	r.clk.mu.Unlock()
}

// heartbeat sends tracker tr's heartbeat: every live attempt reported
// RUNNING unless statuses say otherwise, its free slots offered when
// offer is set; then it acts on the reply.
func (r *conformanceRunner) heartbeat(tr *fakeTracker, offer bool, statuses []*mrpb.AttemptStatus, spills []*mrpb.SpillAnnouncement) error {
	req := &mrpb.HeartbeatRequest{Tracker: tr.name, Host: "h-" + tr.name, ShuffleAddress: "127.0.0.1:1",
		MapSlots: int32(tr.slots[0]), ReduceSlots: int32(tr.slots[1]), InitialContact: !tr.started, AcceptNewTasks: offer, Spills: spills}
	said := map[string]bool{}
	for _, st := range statuses {
		said[st.AttemptId] = true
	}
	free := tr.slots
	for id, a := range tr.live {
		free[a.Type]--
		if !said[id] {
			req.Attempts = append(req.Attempts, &mrpb.AttemptStatus{AttemptId: id, State: StateRunning, Progress: 0.5})
		}
	}
	req.Attempts = append(req.Attempts, statuses...)
	req.FreeMapSlots, req.FreeReduceSlots = int32(max(free[0], 0)), int32(max(free[1], 0))
	asTracker(r.jt, req)
	resp, err := r.jt.Heartbeat(context.Background(), req)
	if err != nil {
		return fmt.Errorf("heartbeat of %s: %w", tr.name, err)
	}
	tr.started = true
	for _, st := range statuses {
		if st.State != StateRunning {
			delete(tr.live, st.AttemptId)
		}
	}
	for _, a := range resp.Actions {
		switch {
		case a.GetLaunch() != nil:
			l := a.GetLaunch()
			k, err := r.attemptKey(l.AttemptId)
			if err != nil {
				return err
			}
			tr.live[l.AttemptId] = k
		case a.GetKillAttempt() != "":
			delete(tr.live, a.GetKillAttempt())
		case a.GetClone() != nil:
			return fmt.Errorf("unexpected clone order %v", a.GetClone())
		}
	}
	return nil
}

// attemptKey names a launched attempt as the scenario does.
func (r *conformanceRunner) attemptKey(id string) (sched.Attempt, error) {
	r.jt.mu.Lock()
	defer r.jt.unlock()
	j, a := r.jt.findAttempt(id)
	if a == nil {
		return sched.Attempt{}, fmt.Errorf("launch of unknown attempt %s", id)
	}
	k := attemptKey(a)
	k.Job = r.names[j.id]
	return k, nil
}

// attemptID finds the attempt the scenario names, and its tracker.
func (r *conformanceRunner) attemptID(k sched.Attempt) (string, *fakeTracker, error) {
	for _, tr := range r.trs {
		for id, a := range tr.live {
			if a == k {
				return id, tr, nil
			}
		}
	}
	return "", nil, fmt.Errorf("attempt %s is not running on any tracker", k)
}

// SetProfile puts the profile where the JobTracker keeps those it read
// from the history (profiles.go).
func (r *conformanceRunner) SetProfile(name string, p partitions.Profile) error {
	r.jt.mu.Lock()
	defer r.jt.unlock()
	r.jt.profiles[name] = p
	return nil
}

func (r *conformanceRunner) AddTracker(name string, maps, reduces int) error {
	tr := &fakeTracker{name: name, slots: [2]int{maps, reduces}, live: map[string]sched.Attempt{}}
	r.trs[name] = tr
	return r.heartbeat(tr, false, nil, nil)
}

func (r *conformanceRunner) Submit(at time.Time, s schedtest.ScenarioJob) error {
	r.setClock(at)
	spec, err := json.Marshal(&mr.JobSpec{Def: "wordcount", Name: s.Name, Inputs: []string{r.in},
		Output: filepath.Join(r.dir, "out-"+s.Name), NumReduces: s.Reduces, Pool: s.Pool, Priority: s.Priority, DeadlineSeconds: s.DeadlineSeconds})
	if err != nil {
		return err
	}
	splits := make([]mr.Split, s.Maps)
	for i := range splits {
		splits[i] = mr.Split{Path: r.in, Start: int64(i), Length: 1}
	}
	sj, err := json.Marshal(splits)
	if err != nil {
		return err
	}
	// The transcript names the job before the JobTracker numbers it: the
	// id is known once SubmitJob returns, so the JobSubmitted line is
	// renamed afterwards (JobName falls back to the id).
	resp, err := r.jt.SubmitJob(context.Background(), &mrpb.SubmitJobRequest{SpecJson: spec, SplitsJson: sj})
	if err != nil {
		return err
	}
	r.ids[s.Name], r.names[resp.JobId] = resp.JobId, s.Name
	return nil
}

func (r *conformanceRunner) Heartbeat(at time.Time, name string) error {
	r.setClock(at)
	tr := r.trs[name]
	if tr == nil {
		return fmt.Errorf("no tracker %s", name)
	}
	return r.heartbeat(tr, true, nil, nil)
}

// report sends the attempt's new state in its tracker's heartbeat (a map
// that succeeds announces its final spill first), then waits for the
// job's commit if that made the job complete.
func (r *conformanceRunner) report(at time.Time, k sched.Attempt, state string) error {
	r.setClock(at)
	id, tr, err := r.attemptID(k)
	if err != nil {
		return err
	}
	var spills []*mrpb.SpillAnnouncement
	if state == StateSucceeded && k.Type == partitions.Map {
		r.jt.mu.Lock()
		j := r.jt.jobs[r.ids[k.Job]]
		reduces := len(j.reduces)
		r.jt.unlock()
		if reduces > 0 {
			segs := make([]*mrpb.Segment, reduces)
			for i := range segs {
				// The same for every attempt of the task: map output is
				// deterministic.
				segs[i] = &mrpb.Segment{Length: 10, RawLength: 20, Records: 3, Crc: uint32(k.Task*1000 + i)}
			}
			spills = []*mrpb.SpillAnnouncement{{AttemptId: id, Spill: 0, Final: true, Segments: segs}}
		}
	}
	st := &mrpb.AttemptStatus{AttemptId: id, State: state, Progress: 1}
	if state == StateFailed {
		st.Progress, st.Diagnostic = 0.5, "failed by the scenario"
	}
	if err := r.heartbeat(tr, false, []*mrpb.AttemptStatus{st}, spills); err != nil {
		return err
	}
	return r.waitCommit(k.Job)
}

// waitCommit waits while the job's output is being committed (the
// JobTracker commits on a goroutine of its own and ends the job after).
func (r *conformanceRunner) waitCommit(name string) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		r.jt.mu.Lock()
		j := r.jt.jobs[r.ids[name]]
		// The commit goroutine ends the job, then writes its history.
		committing := j != nil && (j.committing || j.history == historyWriting)
		r.jt.unlock()
		if !committing {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("job %s: commit did not end in 10 s", name)
		}
		time.Sleep(200 * time.Microsecond)
	}
}

func (r *conformanceRunner) Succeed(at time.Time, k sched.Attempt) error {
	return r.report(at, k, StateSucceeded)
}

func (r *conformanceRunner) Fail(at time.Time, k sched.Attempt) error {
	return r.report(at, k, StateFailed)
}

// Speculate records the speculator's decision for the attempt's task: a
// fresh attempt waits for a slot, as speculation.go does.
func (r *conformanceRunner) Speculate(at time.Time, k sched.Attempt) error {
	r.setClock(at)
	id, _, err := r.attemptID(k)
	if err != nil {
		return err
	}
	r.jt.mu.Lock()
	defer r.jt.unlock()
	_, a := r.jt.findAttempt(id)
	tk := a.task
	tk.setSpec(&speculation{task: tk, kind: speculator.Fresh, source: a, decided: at})
	tk.speculated = true
	return nil
}

func (r *conformanceRunner) LoseTracker(at time.Time, name string) error {
	r.setClock(at)
	tr := r.trs[name]
	if tr == nil {
		return fmt.Errorf("no tracker %s", name)
	}
	r.jt.mu.Lock()
	st := r.jt.trackers[name]
	if st != nil {
		r.jt.lostTrackerLocked(st, "Lost task tracker: "+name)
	}
	r.jt.unlock()
	if st == nil {
		return fmt.Errorf("the JobTracker does not know tracker %s", name)
	}
	delete(r.trs, name)
	return nil
}

func (r *conformanceRunner) KillJob(at time.Time, name string) error {
	r.setClock(at)
	resp, err := r.jt.KillJob(context.Background(), &mrpb.KillJobRequest{JobId: r.ids[name]})
	if err != nil {
		return err
	}
	if !resp.Killed {
		return fmt.Errorf("job %s was not killed", name)
	}
	return nil
}
