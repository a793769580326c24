package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gomr/mr"
)

// A preemption dump ordered while CRIU dumps the same attempt for a clone
// (spec §5.10: never two CRIU operations on one process; the preemption
// dump goes first, a clone request not yet dumping is dropped): the
// tracker waits for the clone's dump, which cannot be stopped half-way,
// then checkpoints the attempt. Before, the order failed at once and the
// attempt was killed. CRIU wrappers hold the clone's dump on tracker slow
// for 2 s, so that the order surely comes while it runs, and its restore
// on tracker fast for 3 s, so that the clone does not finish the task
// before the original is checkpointed.
func TestE2ECheckpointWhileCloning(t *testing.T) {
	skipUnderRace(t, "TestE2ECloneMap and TestE2ECheckpointResume/local")
	path := criuPath(t)
	holding := func(secs int) (flags, wrapper string) {
		flags = t.TempDir()
		wrapper = filepath.Join(flags, "criu-wrapper.sh")
		script := fmt.Sprintf(`#!/bin/sh
d=%q
if [ -e "$d/hold" ]; then rm -f "$d/hold"; touch "$d/criu-called"; sleep %d; fi
exec %q "$@"
`, flags, secs, path)
		if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
		return flags, wrapper
	}
	flags, slowCRIU := holding(2)
	fastFlags, fastCRIU := holding(3)
	c := startClusterProcDefines(t, []trackerSpec{{"slow", 1, 0}, {"fast", 1, 1}},
		map[string][]string{"slow": {"mapreduce.tasktracker.criu.path=" + slowCRIU},
			"fast": {"mapreduce.tasktracker.criu.path=" + fastCRIU}},
		"mapreduce.tasktracker.criu.path="+path,
		"mapreduce.job.speculative.retry-after-no-speculate=100ms",
		"mapreduce.job.speculative.retry-after-speculate=100ms",
		"speculation.clone.beta=0.0001")
	c.logValue("fast", "CRIU available", "version")
	c.logValue("slow", "CRIU available", "version") // the probe has run
	for _, d := range []string{flags, fastFlags} {
		if err := os.WriteFile(filepath.Join(d, "hold"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	spec, in, out := cloneMapJob(t)
	id := c.submit(spec)
	waitFor(t, "tracker slow to dump an attempt for a clone", 60*time.Second, func() bool {
		_, err := os.Stat(filepath.Join(flags, "criu-called"))
		return err == nil
	})
	var victim string
	as, err := c.client.Attempts(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range as {
		if a.TaskType == "m" && a.State == "RUNNING" && a.Tracker == "slow" {
			victim = a.AttemptId
		}
	}
	if victim == "" {
		t.Fatalf("no running map on tracker slow: %v", as)
	}
	if _, err := c.client.CheckpointTask(context.Background(), victim, false); err != nil {
		t.Fatal(err)
	}
	res := c.wait(id)
	if res.State != "SUCCEEDED" {
		t.Fatalf("job %s: %s", res.State, res.Error)
	}
	if st := c.attemptState(id, victim); st != "CHECKPOINTED" {
		t.Errorf("attempt %s is %s, want CHECKPOINTED (checkpointed once its clone's dump ended)", victim, st)
	}
	if c.logHas("slow", "checkpoint for preemption failed") {
		t.Errorf("the checkpoint failed: %v", c.logLines("slow", "checkpoint for preemption failed"))
	}
	if n := res.Counters.Get(mr.JobCounterGroup, mr.Checkpoints); n != 1 {
		t.Errorf("%s = %d, want 1", mr.Checkpoints, n)
	}
	for _, l := range c.logLines("slow", "checkpointed for preemption") {
		t.Log(l)
	}
	checkWordCount(t, out, countWords(t, in))
	checkSameAsPlainRun(t, c, spec, out)
}

// A task keeps one image (spec §5.3): the map is checkpointed (image I0),
// its restored attempt is killed and the task resumes from I0 again; that
// attempt is checkpointed in turn (I1), which replaces I0 (its directory is
// deleted at once), and the task finishes from I1. The output is byte for
// byte that of an undisturbed run, and no image directory outlives the job.
func TestE2ECheckpointKeepsOneImagePerTask(t *testing.T) {
	skipUnderRace(t, "TestE2ECheckpointResume/local")
	path := criuPath(t)
	c := startCluster(t, []trackerSpec{{"slow", 1, 0}, {"fast", 0, 2}},
		"mapreduce.tasktracker.criu.path="+path)
	spec, in, out := checkpointJob(t)
	id := c.submit(spec)
	ctx := context.Background()
	a0 := c.runningMapAt(id, 0.05)
	waitFor(t, "a spill of "+a0, 30*time.Second, func() bool { return len(c.spillsOf("slow", id, a0)) >= 1 })
	imageDir := func(attempt string) string {
		return filepath.Join(c.dir, "local", "slow", "jobs", id, attempt+".image")
	}
	// checkpointed orders a running attempt checkpointed and returns the
	// attempt restored from its image.
	checkpointed := func(a string) string {
		t.Helper()
		if a != a0 {
			// A checkpoint is refused until the restore is done.
			c.logValue("jobtracker", `msg="attempt restored" component=jobtracker attempt=`+a+" ", "restore_ms")
		}
		if _, err := c.client.CheckpointTask(ctx, a, false); err != nil {
			t.Fatal(err)
		}
		waitFor(t, a+" to be checkpointed", 30*time.Second, func() bool { return c.attemptState(id, a) == "CHECKPOINTED" })
		return c.nextRunningMap(id, a)
	}
	a1 := checkpointed(a0)
	time.Sleep(300 * time.Millisecond) // a1 works a little, then is lost
	if _, err := c.client.KillTask(ctx, a1, false); err != nil {
		t.Fatal(err)
	}
	a2 := c.nextRunningMap(id, a1)
	if _, err := os.Stat(imageDir(a0)); err != nil {
		t.Errorf("the image of %s is gone after its restored attempt was killed: %v", a0, err)
	}
	time.Sleep(300 * time.Millisecond)
	a3 := checkpointed(a2)
	waitFor(t, "the replaced image of "+a0+" to be deleted", 10*time.Second, func() bool {
		_, err := os.Stat(imageDir(a0))
		return os.IsNotExist(err)
	})
	res := c.wait(id)
	if res.State != "SUCCEEDED" {
		t.Fatalf("job %s: %s", res.State, res.Error)
	}
	checkCheckpointCounters(t, res, 2, 3)
	if n := res.Counters.Get(mr.JobCounterGroup, mr.NumKilledMaps); n != 1 {
		t.Errorf("NUM_KILLED_MAPS = %d, want 1 (%s)", n, a1)
	}
	// Where each restore came from.
	want := map[string]string{a1: a0, a2: a0, a3: a2}
	for _, l := range c.logLines("slow", "attempt restored") {
		for a, from := range want {
			if strings.Contains(l, "attempt="+a+" ") {
				if !strings.Contains(l, "source="+from+" ") {
					t.Errorf("%s restored from the wrong image: %s", a, l)
				}
				delete(want, a)
			}
		}
	}
	if len(want) > 0 {
		t.Errorf("restores not logged: %v", want)
	}
	checkWordCount(t, out, countWords(t, in))
	checkSameAsPlainRun(t, c, spec, out)
	waitFor(t, "the job's images to be removed", 10*time.Second, func() bool {
		left, _ := filepath.Glob(filepath.Join(c.dir, "local", "slow", "jobs", id, "*.image"))
		return len(left) == 0
	})
}

// nextRunningMap waits for a running map attempt of the job other than
// after (and the attempts before it) and returns it.
func (c *cluster) nextRunningMap(id, after string) string {
	var next string
	waitFor(c.t, "a map attempt after "+after+" to run", 30*time.Second, func() bool {
		as, err := c.client.Attempts(context.Background(), id)
		if err != nil {
			c.t.Fatal(err)
		}
		for _, a := range as {
			if a.TaskType == "m" && a.State == "RUNNING" && a.AttemptId > after {
				next = a.AttemptId
				return true
			}
		}
		return false
	})
	return next
}
