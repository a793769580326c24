package jobtracker

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"gomr/mr"
	"gomr/mrpb"
)

// writeAttemptOutput plays a task child that writes its part file under
// the output's _temporary after the job's output was aborted.
func writeAttemptOutput(t *testing.T, out, attempt string) {
	t.Helper()
	dir := filepath.Join(out, "_temporary", attempt)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, mr.PartName(false, 0)), []byte("a\t1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// waitGone waits up to 2 s for path to disappear.
func waitGone(t *testing.T, path, what string) {
	t.Helper()
	for i := 0; i < 200; i++ {
		if _, err := os.Stat(path); os.IsNotExist(err) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	ents, _ := filepath.Glob(filepath.Join(path, "*"))
	t.Fatalf("%s: %s is still there: %v", what, path, ents)
}

// A job lost in a JobTracker restart (recovery off): the restarted
// JobTracker aborts its output at once, while the reduce that ran on t1
// still writes (t1 kills it only when it learns of the restart). When t1
// registers again listing the job, its children are dead and the output is
// aborted again. Before, _temporary/attempt_…_r_… stayed (known gap 4 of
// make chaos).
func TestLostJobOutputAbortedAgainWhenItsTrackerRegisters(t *testing.T) {
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	dir := t.TempDir()
	now := func() time.Time { return clock }
	overrides := map[string]string{"mapreduce.jobtracker.restart.recover": "false"}
	jt1, id := newTestJTWith(t, dir, 1, now, overrides)
	m := launches(heartbeat(t, jt1, &mrpb.HeartbeatRequest{InitialContact: true, FreeMapSlots: 1}))[0].AttemptId
	r := launches(heartbeat(t, jt1, &mrpb.HeartbeatRequest{FreeReduceSlots: 1,
		Spills:   []*mrpb.SpillAnnouncement{{AttemptId: m, Spill: 0, Final: true, Segments: seg(1)}},
		Attempts: []*mrpb.AttemptStatus{{AttemptId: m, State: StateSucceeded}}}))[0].AttemptId
	jt1.mu.Lock()
	out := jt1.jobs[id].spec.Output
	jt1.unlock()

	jt2, _ := newTestJTWith(t, dir, 0, now, overrides)
	if _, err := os.Stat(filepath.Join(out, "_temporary")); !os.IsNotExist(err) {
		t.Fatalf("the restarted JobTracker did not abort the lost job's output: %v", err)
	}
	writeAttemptOutput(t, out, r)
	// Another tracker that never ran the job registers: nothing changes.
	heartbeat(t, jt2, &mrpb.HeartbeatRequest{Tracker: "t2", InitialContact: true, Instance: "q1"})
	time.Sleep(50 * time.Millisecond)
	if _, err := os.Stat(filepath.Join(out, "_temporary", r)); err != nil {
		t.Fatalf("the output was aborted again before t1 registered: %v", err)
	}
	if resp := heartbeat(t, jt2, &mrpb.HeartbeatRequest{Incarnation: "old", ResponseId: 3}); !resp.Reinit {
		t.Fatal("t1 was not told to reinitialize")
	}
	heartbeat(t, jt2, &mrpb.HeartbeatRequest{InitialContact: true, Instance: "p1", HeldJobs: []string{id}})
	waitGone(t, filepath.Join(out, "_temporary"), "after t1 registered again listing the lost job")
	if _, err := os.Stat(out); err != nil {
		t.Errorf("the output directory itself went: %v", err)
	}
}

// A job killed while its reduce runs: the kill and purge orders reach t1
// with its next heartbeat reply, and until then the reduce writes under
// the output the JobTracker has just aborted. Once t1 acknowledges that
// reply, the output is aborted again.
func TestKilledJobOutputAbortedAgainAfterThePurge(t *testing.T) {
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	dir := t.TempDir()
	now := func() time.Time { return clock }
	jt, id := newTestJTWith(t, dir, 1, now, nil)
	m := launches(heartbeat(t, jt, &mrpb.HeartbeatRequest{InitialContact: true, FreeMapSlots: 1}))[0].AttemptId
	r := launches(heartbeat(t, jt, &mrpb.HeartbeatRequest{FreeReduceSlots: 1,
		Spills:   []*mrpb.SpillAnnouncement{{AttemptId: m, Spill: 0, Final: true, Segments: seg(1)}},
		Attempts: []*mrpb.AttemptStatus{{AttemptId: m, State: StateSucceeded}}}))[0].AttemptId
	jt.mu.Lock()
	out := jt.jobs[id].spec.Output
	jt.unlock()
	if _, err := jt.KillJob(context.Background(), &mrpb.KillJobRequest{JobId: id}); err != nil {
		t.Fatal(err)
	}
	waitJob(t, jt, id, StateKilled)
	waitGone(t, filepath.Join(out, "_temporary"), "the killed job's abort")
	// The reply carrying the orders; the reduce writes before t1 acts.
	resp := heartbeat(t, jt, &mrpb.HeartbeatRequest{})
	purge := false
	for _, a := range resp.Actions {
		purge = purge || a.GetPurgeJob() == id
	}
	if !purge {
		t.Fatalf("no purge order for the killed job: %v", resp.Actions)
	}
	writeAttemptOutput(t, out, r)
	// t1's next heartbeat acknowledges it.
	heartbeat(t, jt, &mrpb.HeartbeatRequest{Attempts: []*mrpb.AttemptStatus{{AttemptId: r, State: StateKilled}}})
	waitGone(t, filepath.Join(out, "_temporary"), "after t1 acknowledged the purge")
}

// The repeated abort removes only the job's own attempt directories when
// a new job writes to the same output path.
func TestRepeatedAbortKeepsOtherJobsOutput(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	mine, theirs := "attempt_202601010000_0001_r_000000_0", "attempt_202601010000_0002_r_000000_0"
	writeAttemptOutput(t, out, mine)
	writeAttemptOutput(t, out, theirs)
	n, err := abortAttempts("job_202601010000_0001", out, false)
	if err != nil || n != 1 {
		t.Fatalf("abortAttempts = %d, %v; want 1", n, err)
	}
	if _, err := os.Stat(filepath.Join(out, "_temporary", mine)); !os.IsNotExist(err) {
		t.Errorf("the job's attempt directory is still there: %v", err)
	}
	if _, err := os.Stat(filepath.Join(out, "_temporary", theirs)); err != nil {
		t.Errorf("the other job's attempt directory went: %v", err)
	}
	if n, err := abortAttempts("job_202601010000_0002", out, true); err != nil || n != 1 {
		t.Fatalf("abortAttempts = %d, %v; want 1", n, err)
	}
	if _, err := os.Stat(filepath.Join(out, "_temporary")); err != nil {
		t.Errorf("_temporary went though a live job writes there: %v", err)
	}
}
