package main

import (
	"maps"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gomr/mr"
)

// Preemption through the policy driver's reclaim planner on a real
// cluster with CRIU (issue 15): the policy asks for slots back, the
// planner (preemption.mechanism) says how each victim gives its slot back.

// TestE2EMinEDFWCCheckpointPreemption: under minedf-wc with
// preemption.mechanism=checkpoint, a filler word count (slowed by the
// straggler injector on tracker "slow") holds both map slots as spare
// slots; a job with a deadline and a profile arrives. The policy reclaims
// the filler's spare maps, and the planner checkpoints them instead of
// killing them: the deadline job meets its deadline, the filler's maps
// resume from their images (none is killed) and its output is byte for
// byte that of an undisturbed run.
func TestE2EMinEDFWCCheckpointPreemption(t *testing.T) {
	path := criuPath(t)
	c := startCluster(t, []trackerSpec{{"slow", 2, 0}, {"fast", 0, 2}},
		"scheduler.policy=minedf-wc", "preemption.mechanism=checkpoint", "mapreduce.tasktracker.criu.path="+path)
	spec, in, out := checkpointJob(t)
	spec.Name = "filler"
	spec.Conf["mapreduce.input.fileinputformat.split.maxsize"] = "800000" // two maps
	filler, fr := reclaimForDeadline(t, c, spec)
	g := mr.JobCounterGroup
	ckpts, restores := fr.Counters.Get(g, mr.Checkpoints), fr.Counters.Get(g, mr.CheckpointRestores)
	if ckpts < 1 || restores != ckpts {
		t.Errorf("filler: %d checkpoints, %d restores; want at least one, each restored", ckpts, restores)
	}
	if n := fr.Counters.Get(g, mr.NumKilledMaps); n != 0 {
		t.Errorf("filler NUM_KILLED_MAPS = %d, want 0: its maps were checkpointed, not killed", n)
	}
	checkpointed := 0
	for _, a := range c.history(filler).Attempts {
		if a.TaskType == "m" && a.State == "CHECKPOINTED" {
			checkpointed++
		}
	}
	if int64(checkpointed) != ckpts {
		t.Errorf("history: %d CHECKPOINTED map attempts, counters say %d", checkpointed, ckpts)
	}
	for _, l := range c.logLines("jobtracker", `msg="attempt checkpointed"`) {
		t.Log(l)
	}
	if !c.logHas("jobtracker", "checkpoint ordered") {
		t.Error("the JobTracker logged no checkpoint order")
	}
	// The orders carry the reclaim's reason, and the tracker's queue
	// runs their dumps in its first class (spec §5.6).
	for _, l := range c.logLines("jobtracker", `msg="checkpoint ordered"`) {
		if !strings.Contains(l, "reason=RECLAIM_DEADLINE_AT_RISK") {
			t.Errorf("a checkpoint order without the deadline's reason: %s", l)
		}
	}
	made := c.logLines("slow", `msg="checkpoint for preemption made"`)
	if int64(len(made)) != ckpts {
		t.Errorf("tracker slow logged %d dumps made, the counters say %d", len(made), ckpts)
	}
	for _, l := range made {
		if !strings.Contains(l, `class="deadline preemption dump"`) {
			t.Errorf("a deadline's dump outside the queue's first class: %s", l)
		}
	}
	checkWordCount(t, out, countWords(t, in))
	checkSameAsPlainRun(t, c, spec, out)
}

// TestE2EMinEDFWCSplitPreemption: as TestE2EMinEDFWCCheckpointPreemption
// with preemption.mechanism=split and a split-safe filler: the reclaimed
// maps stop at a record and their remainders run later, nothing is
// killed, and the filler's output is byte for byte that of a run without
// splits.
func TestE2EMinEDFWCSplitPreemption(t *testing.T) {
	c := startCluster(t, []trackerSpec{{"slow", 2, 0}, {"fast", 0, 2}},
		"scheduler.policy=minedf-wc", "preemption.mechanism=split",
		"preemption.split.min-task-age=0s", "preemption.split.min-remaining=0s")
	in := t.TempDir()
	genText(t, filepath.Join(in, "a.txt"), 3<<20, 23)
	spec := wordCountSpec(in, filepath.Join(t.TempDir(), "out"), 2)
	spec.Name = "filler"
	spec.Conf = splitJobConf()
	spec.Conf["mapreduce.input.fileinputformat.split.maxsize"] = "1600000" // two maps
	_, fr := reclaimForDeadline(t, c, spec)
	if n := fr.Counters.Get(mr.SplitGroup, mr.MapSplits); n < 1 {
		t.Errorf("filler MAP_SPLITS = %d, want its reclaimed maps split", n)
	}
	if n := fr.Counters.Get(mr.JobCounterGroup, mr.NumKilledMaps); n != 0 {
		t.Errorf("filler NUM_KILLED_MAPS = %d, want 0: its maps were split, not killed", n)
	}
	if !c.logHas("jobtracker", "split ordered") {
		t.Error("the JobTracker logged no split order")
	}
	plain := *spec
	plain.Output = filepath.Join(t.TempDir(), "plain")
	plain.Conf = maps.Clone(spec.Conf)
	plain.Conf[mr.KeySplitSafe] = "false"
	if res := c.wait(c.submit(&plain)); res.State != "SUCCEEDED" {
		t.Fatalf("the run without splits ended %s: %s", res.State, res.Error)
	}
	sameParts(t, spec.Output, plain.Output)
	checkWordCount(t, spec.Output, countWords(t, in))
}

// reclaimForDeadline is the scenario of the MinEDF-WC preemption tests: a
// profile run of the deadline job's name (2 maps of 300 ms), then the
// filler, which takes both map slots of tracker "slow"; once its maps have
// progressed, the deadline job (10 s) arrives. It waits for both, checks
// they succeeded and the deadline was met, and returns the filler's id and
// result.
func reclaimForDeadline(t *testing.T, c *cluster, fillerSpec *mr.JobSpec) (string, *mr.JobResult) {
	t.Helper()
	dir := t.TempDir()
	c.wait(c.submit(sleepSpec("urgent", filepath.Join(dir, "profile"), 2, 300)))
	filler := c.submit(fillerSpec)
	waitFor(t, "the filler to take both map slots", 30*time.Second, func() bool { return c.status(filler).Maps.Running == 2 })
	waitFor(t, "the filler's maps to progress", 30*time.Second, func() bool { return c.status(filler).MapProgress >= 0.05 })
	urgentSpec := sleepSpec("urgent", filepath.Join(dir, "urgent"), 2, 300)
	const deadline = 10.0
	urgentSpec.DeadlineSeconds = deadline
	urgent := c.submit(urgentSpec)
	ur := c.wait(urgent)
	fr := c.wait(filler)
	if ur.State != "SUCCEEDED" || fr.State != "SUCCEEDED" {
		t.Fatalf("deadline job ended %s (%s), filler %s (%s)", ur.State, ur.Error, fr.State, fr.Error)
	}
	uh := c.history(urgent)
	if took := uh.Job.Finish.Sub(uh.Job.Submit).Seconds(); took > deadline {
		t.Errorf("deadline job took %.1f s, deadline %.0f s", took, deadline)
	}
	return filler, fr
}
