package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"gomr/mr"
	"gomr/speculator"
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
	in := t.TempDir()
	genText(t, filepath.Join(in, "a.txt"), 3<<20, 7)
	out := filepath.Join(t.TempDir(), "out")
	spec := wordCountSpec(in, out, 1)
	spec.Conf = map[string]string{
		"mapreduce.map.speculative":                     "true",
		"speculation.clone.enabled":                     "true",
		"mapreduce.task.progress.report.interval":       "100",
		"mapreduce.input.fileinputformat.split.maxsize": "524288",
		speculator.KeyMinDoneCount:                      "3",
		"mapreduce.task.io.sort.mb":                     "1",
	}
	for k, v := range stragglerDefines {
		spec.Conf[k] = v
	}
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
