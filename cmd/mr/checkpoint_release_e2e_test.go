package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gomr/mr"
	"gomr/preempt"
	"gomr/speculator"
	"gomr/tasktracker"
)

// Releasing the slot before the dump ends (preemption.checkpoint.
// release-slot=frozen, quiesced): the tracker of an attempt being
// checkpointed counts its slot free once CRIU has frozen the process (or
// once it is at its quiet point), and a waiting job's map starts in it
// while the image is written. A second job waits for tracker "slow"'s
// only map slot, held by the victim; it gets the slot before the dump is
// done; the victim resumes from its image once that job's map is done,
// and its job's output is byte for byte that of an undisturbed run.
func TestE2ECheckpointReleaseSlotEarly(t *testing.T) {
	for _, at := range []string{preempt.ReleaseFrozen, preempt.ReleaseQuiesced} {
		t.Run(at, func(t *testing.T) {
			// Under -race the victim's injector makes it 110 s long; the
			// race-built runs cover the release with the JobTracker's
			// TestCheckpointSlotReleasedEarly and the tracker's
			// TestWatchFreeze, and the dump path with the other
			// checkpoint tests.
			skipUnderRace(t, "TestE2ECheckpointResume/local, TestCheckpointSlotReleasedEarly (jobtracker) and TestWatchFreeze (tasktracker)")
			testReleaseSlotEarly(t, at)
		})
	}
}

func testReleaseSlotEarly(t *testing.T, at string) {
	c, a, b := releaseEarlyJobs(t, at)
	resA := c.wait(a.id)
	checkResumed(t, c, a.id, a.victim, resA, "")
	if resB := c.wait(b.id); resB.State != "SUCCEEDED" {
		t.Fatalf("the waiting job %s: %s", resB.State, resB.Error)
	}
	checkWordCount(t, a.out, countWords(t, a.in))
	checkSameAsPlainRun(t, c, a.spec, a.out)

	released := c.logTimes("slow", "checkpoint slot released before the dump ended")
	made := c.logTimes("slow", "checkpoint for preemption made")
	launched := c.launchTimes("slow", b.mapAttempt(t, c))
	if len(released) != 1 || len(made) != 1 || len(launched) != 1 {
		t.Fatalf("tracker slow logged %d slot releases, %d dumps made, %d launches of the waiting map; want 1 each",
			len(released), len(made), len(launched))
	}
	if !c.logHas("jobtracker", "checkpoint slot released before the dump ended") {
		t.Error("the JobTracker does not log the slot released early")
	}
	if want := map[string]string{preempt.ReleaseFrozen: "freeze", preempt.ReleaseQuiesced: `"quiet point"`}[at]; !strings.Contains(c.logLines("slow", "checkpoint slot released")[0], "at="+want) {
		t.Errorf("released at %s, want at=%s", c.logLines("slow", "checkpoint slot released")[0], want)
	}
	// The order: slot free, the waiting map launched, the dump done.
	if !launched[0].After(released[0]) || !launched[0].Before(made[0]) {
		t.Errorf("slot released at %v, the waiting map launched at %v, the dump done at %v: want the launch between",
			released[0].Format(time.StampMicro), launched[0].Format(time.StampMicro), made[0].Format(time.StampMicro))
	}
	t.Logf("slot released %v before the dump was done; the waiting map launched %v after the release",
		made[0].Sub(released[0]), launched[0].Sub(released[0]))
	for _, l := range c.logLines("slow", "checkpoint for preemption made") {
		t.Log(l)
	}
}

// A dump that fails after the slot was given away (fault injection: the
// failure comes once the tracker released the slot at the freeze) kills
// the victim; its task runs again from scratch, once the map that took
// the slot is done, and the job's output is exact.
func TestE2ECheckpointReleaseSlotDumpFails(t *testing.T) {
	skipUnderRace(t, "TestE2ECheckpointResume/local and TestCheckpointSlotReleasedEarly (jobtracker)")
	t.Setenv(tasktracker.CloneFaultEnv, "dump-after-release")
	c, a, b := releaseEarlyJobs(t, preempt.ReleaseFrozen)
	resA := c.wait(a.id)
	if resA.State != "SUCCEEDED" {
		t.Fatalf("job %s: %s", resA.State, resA.Error)
	}
	if st := c.attemptState(a.id, a.victim); st != "KILLED" {
		t.Errorf("attempt %s is %s, want KILLED", a.victim, st)
	}
	checkCheckpointCounters(t, resA, 0, 0)
	if n := resA.Counters.Get(mr.JobCounterGroup, mr.NumKilledMaps); n != 1 {
		t.Errorf("NUM_KILLED_MAPS = %d, want 1", n)
	}
	if n := resA.Counters.Get(mr.JobCounterGroup, mr.TotalLaunchedMaps); n != 2 {
		t.Errorf("TOTAL_LAUNCHED_MAPS = %d, want 2 (the victim and its re-run)", n)
	}
	if resB := c.wait(b.id); resB.State != "SUCCEEDED" {
		t.Fatalf("the waiting job %s: %s", resB.State, resB.Error)
	}
	released := c.logTimes("slow", "checkpoint slot released before the dump ended")
	failed := c.logTimes("slow", `msg="checkpoint for preemption failed`)
	launched := c.launchTimes("slow", b.mapAttempt(t, c))
	if len(released) != 1 || len(failed) != 1 || len(launched) != 1 {
		t.Fatalf("tracker slow logged %d slot releases, %d failed dumps, %d launches of the waiting map; want 1 each",
			len(released), len(failed), len(launched))
	}
	if launched[0].Before(released[0]) {
		t.Errorf("the waiting map launched at %v, before the slot was released at %v", launched[0], released[0])
	}
	checkWordCount(t, a.out, countWords(t, a.in))
	checkSameAsPlainRun(t, c, a.spec, a.out)
}

// launchTimes are the times tracker name logged launching attempt.
func (c *cluster) launchTimes(name, attempt string) []time.Time {
	var out []time.Time
	for _, l := range c.logLines(name, `msg="attempt launched"`) {
		if at, ok := logTime(l); ok && strings.Contains(l, " attempt="+attempt) {
			out = append(out, at)
		}
	}
	return out
}

// releaseJob is a job of the release-at-freeze tests.
type releaseJob struct {
	id, victim, in, out string
	spec                *mr.JobSpec
}

// mapAttempt is the job's first map attempt.
func (j releaseJob) mapAttempt(t *testing.T, c *cluster) string {
	as, err := c.client.Attempts(context.Background(), j.id)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range as {
		if a.TaskType == "m" {
			return a.AttemptId
		}
	}
	t.Fatalf("job %s has no map attempt", j.id)
	return ""
}

// releaseEarlyJobs starts a cluster whose checkpoints free their slot
// early (release-slot at), job a (checkpointJob) on tracker slow's only map slot, and
// job b, a small word count without stragglers, which waits for that slot;
// then it orders a's map checkpointed once it has announced spills.
func releaseEarlyJobs(t *testing.T, at string) (*cluster, releaseJob, releaseJob) {
	path := criuPath(t)
	c := startCluster(t, []trackerSpec{{"slow", 1, 0}, {"fast", 0, 2}},
		"mapreduce.tasktracker.criu.path="+path, preempt.KeyReleaseSlot+"="+at)
	var a, b releaseJob
	a.spec, a.in, a.out = checkpointJob(t)
	a.id = c.submit(a.spec)
	a.victim = c.runningMapAt(a.id, 0.05)
	waitFor(t, "a spill of "+a.victim, 30*time.Second, func() bool { return len(c.spillsOf("slow", a.id, a.victim)) >= 2 })

	b.in = t.TempDir()
	if err := os.WriteFile(filepath.Join(b.in, "b.txt"), []byte(strings.Repeat("the waiting job\n", 100)), 0o644); err != nil {
		t.Fatal(err)
	}
	b.out = filepath.Join(t.TempDir(), "out")
	b.spec = wordCountSpec(b.in, b.out, 1)
	b.spec.Conf = map[string]string{speculator.KeyStragglerFraction: "0"}
	b.id = c.submit(b.spec)
	// b is known and waits (FIFO: a holds the only map slot).
	time.Sleep(300 * time.Millisecond)
	if resp, err := c.client.CheckpointTask(context.Background(), a.victim, false); err != nil || !resp.Ordered {
		t.Fatalf("checkpoint order: %v %v", resp, err)
	}
	return c, a, b
}
