package main

import (
	"context"
	"encoding/hex"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gomr/mr"
	"gomr/shuffle"
	"gomr/speculator"
)

// Reduce splitting end to end (docs/split.md, spec §5.9.4): real
// JobTracker, TaskTrackers and task children on loopback; reduces are
// ordered split at random moments of their reduce phase (slowed by the
// straggler injector so that there is time to), each split committing its
// output so far as a fragment, and the job's output, the fragments joined,
// must be byte for byte that of a run without splits, with the same record
// counters.

// reduceSplitConf is splitJobConf with the tasks not speculated (a
// reduce with a second attempt is not split) and only the reduces slowed,
// by k = e^3.5 (about 33), so that the reduce phase lasts seconds; a
// race-built child is slow enough by itself: k = e^1 there.
func reduceSplitConf() map[string]string {
	c := splitJobConf()
	c[speculator.KeyReduceSpeculative] = "false"
	c[speculator.KeyMapSpeculative] = "false"
	c[speculator.KeyStragglerTaskTypes] = "reduce"
	c[speculator.KeyStragglerLocation] = "3.5"
	if raceEnabled {
		c[speculator.KeyStragglerLocation] = "1"
	}
	c[shuffle.KeyRangeFetch] = "true"
	return c
}

// genManyWords writes about size bytes of lines of words drawn from a
// vocabulary of a million, so that a word count has many key groups (its
// reduce phase is long enough to split).
func genManyWords(t *testing.T, path string, size int, seed uint64) {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 9))
	var b strings.Builder
	for b.Len() < size {
		for i := range 1 + r.IntN(10) {
			if i > 0 {
				b.WriteByte(' ')
			}
			fmt.Fprintf(&b, "w%d", r.IntN(1000000))
		}
		b.WriteByte('\n')
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// splitReducesRandomly orders, at random moments drawn from rng, splits of
// the job's running reduce attempts until the job ends or limit orders
// were accepted (the first through `mr job -split-task`); it returns how
// many were. A reduce still shuffling is
// refused (not logged; the next order follows within 80 ms); one that
// ends before the order reaches it ends unsplit.
func splitReducesRandomly(t *testing.T, c *cluster, id string, rng *rand.Rand, limit int) int {
	t.Helper()
	ctx := context.Background()
	accepted := 0
	shuffling := false
	for {
		if shuffling {
			// The reduces were still shuffling: try again soon, or a short
			// reduce phase (TeraSort's, ~0.5 s) can pass between two of the
			// moments below with no order accepted (seen under make test's
			// load).
			time.Sleep(time.Duration(20+rng.IntN(60)) * time.Millisecond)
		} else {
			time.Sleep(time.Duration(150+rng.IntN(350)) * time.Millisecond)
		}
		shuffling = false
		if st := c.status(id); st.State != "RUNNING" || accepted == limit {
			return accepted
		}
		atts, err := c.client.Attempts(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		var running []string
		for _, a := range atts {
			if a.TaskType == "r" && a.State == "RUNNING" {
				running = append(running, a.AttemptId)
			}
		}
		if len(running) == 0 {
			continue
		}
		pick := running[rng.IntN(len(running))]
		if accepted == 0 {
			// The first through the command line, as a user would.
			text, err := runMR(t, "job", "-split-task", pick, "-D", "mapreduce.jobtracker.address="+c.jtAddr)
			if err != nil {
				shuffling = strings.Contains(text, "phase")
				if !shuffling {
					t.Logf("mr job -split-task %s refused: %v\n%s", pick, err, text)
				}
				continue
			}
		} else if err := c.client.SplitTask(ctx, pick); err != nil {
			shuffling = strings.Contains(err.Error(), "phase")
			if !shuffling {
				t.Logf("split %s refused: %v", pick, err)
			}
			continue
		}
		accepted++
	}
}

// runReduceSplitAndPlain runs spec with its reduces split at random
// (seed; at most limit splits: each remainder fetches and merges the whole
// partition again), then without splits (split.safe off, not slowed), and
// checks the outputs are
// byte for byte the same, no fragment is left behind, and the record
// counters are equal; it returns the split run's result and output.
func runReduceSplitAndPlain(t *testing.T, c *cluster, spec *mr.JobSpec, seed uint64, limit int) (*mr.JobResult, string) {
	t.Helper()
	split := *spec
	split.Output = filepath.Join(t.TempDir(), "split")
	split.Conf = reduceSplitConf()
	maps.Copy(split.Conf, spec.Conf)
	id := c.submit(&split)
	accepted := splitReducesRandomly(t, c, id, rand.New(rand.NewPCG(seed, 7)), limit)
	res := c.wait(id)
	if res.State != "SUCCEEDED" {
		t.Fatalf("the split run ended %s: %s", res.State, res.Error)
	}
	splits := res.Counters.Get(mr.SplitGroup, mr.ReduceSplits)
	t.Logf("seed %d: %d split orders accepted, %d reduces split, %d fragments", seed, accepted, splits, res.Counters.Get(mr.SplitGroup, mr.OutputFragments))
	if splits < 1 || splits > int64(accepted) {
		t.Errorf("REDUCE_SPLITS = %d after %d accepted orders, want 1 to %d", splits, accepted, accepted)
	}
	if n := res.Counters.Get(mr.JobCounterGroup, mr.NumKilledReduces) + res.Counters.Get(mr.JobCounterGroup, mr.NumFailedReduces); n != 0 {
		t.Errorf("%d reduce attempts killed or failed", n)
	}
	if left, _ := filepath.Glob(filepath.Join(split.Output, "*.f*")); len(left) > 0 {
		t.Errorf("fragments left in the output: %v", left)
	}
	if _, err := os.Stat(filepath.Join(split.Output, "_temporary")); err == nil {
		t.Errorf("_temporary left in the output")
	}
	plain := split
	plain.Output = filepath.Join(t.TempDir(), "plain")
	plain.Conf = maps.Clone(split.Conf)
	plain.Conf[mr.KeySplitSafe] = "false"
	plain.Conf[speculator.KeyStragglerFraction] = "0"
	pres := c.wait(c.submit(&plain))
	if pres.State != "SUCCEEDED" {
		t.Fatalf("the run without splits ended %s: %s", pres.State, pres.Error)
	}
	sameParts(t, split.Output, plain.Output)
	t.Logf("reduce shuffle bytes: %d with splits (range fetch %s), %d without",
		res.Counters.Get(mr.TaskCounterGroup, mr.ReduceShuffleBytes), split.Conf[shuffle.KeyRangeFetch], pres.Counters.Get(mr.TaskCounterGroup, mr.ReduceShuffleBytes))
	// Only reduces were split: every record counter is the same (the
	// counters of a reduce's fragments add up, spec §5.9.6).
	for _, name := range []string{mr.MapInputRecords, mr.MapOutputRecords, mr.ReduceInputGroups, mr.ReduceInputRecords, mr.ReduceOutputRecords} {
		if a, b := res.Counters.Get(mr.TaskCounterGroup, name), pres.Counters.Get(mr.TaskCounterGroup, name); a != b {
			t.Errorf("%s = %d with splits, %d without", name, a, b)
		}
	}
	return res, split.Output
}

func TestE2EReduceSplitWordCount(t *testing.T) {
	c := startCluster(t, []trackerSpec{{"t1", 2, 1}, {"t2", 2, 1}})
	in := t.TempDir()
	genManyWords(t, filepath.Join(in, "a.txt"), 1<<20, 51)
	genManyWords(t, filepath.Join(in, "b.txt"), 1<<20, 52)
	spec := wordCountSpec(in, "", 2)
	res, out := runReduceSplitAndPlain(t, c, spec, 1, 6)
	checkWordCount(t, out, countWords(t, in))
	if got := res.Counters.Get(mr.TaskCounterGroup, mr.MapInputRecords); got != int64(countLines(t, in)) {
		t.Errorf("MAP_INPUT_RECORDS = %d, the input has %d lines", got, countLines(t, in))
	}
	text, err := runMR(t, "job", "-status", res.ID, "-D", "mapreduce.jobtracker.address="+c.jtAddr)
	if err != nil || !strings.Contains(text, "Reduce attempts split=") || !strings.Contains(text, "Output fragments committed by split reduces=") {
		t.Errorf("job -status does not show the reduce split counters: %v\n%s", err, text)
	}
	hist, err := runMR(t, "job", "-history", res.ID, "-D", "mapreduce.jobtracker.address="+c.jtAddr)
	if err != nil || !strings.Contains(hist, mr.ReduceSplits) || !strings.Contains(hist, `"SPLIT"`) {
		t.Errorf("job -history does not hold the reduce split counters and SPLIT attempts: %v\n%s", err, tail(hist, 3000))
	}
}

func TestE2EReduceSplitTeraSort(t *testing.T) {
	skipUnderRace(t, "TestE2EReduceSplitWordCount")
	c := startCluster(t, []trackerSpec{{"t1", 2, 1}, {"t2", 2, 1}})
	in := t.TempDir()
	const rows = 50000
	teraRecords(t, filepath.Join(in, "part-0"), rows, 61)
	// Seed 5 with the range fetch, seed 6 with skip-replay.
	for seed, rangeFetch := range map[uint64]string{5: "true", 6: "false"} {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			spec := &mr.JobSpec{Name: "terasort", Def: "terasort", Inputs: []string{in}, NumReduces: 2,
				Params: map[string]string{"splitpoints": hex.EncodeToString([]byte{0x80})}}
			spec.Conf = map[string]string{"mapreduce.input.fileinputformat.split.maxsize": "2000000", speculator.KeyStragglerLocation: "3.5",
				shuffle.KeyRangeFetch: rangeFetch}
			res, out := runReduceSplitAndPlain(t, c, spec, seed, 4)
			if got := res.Counters.Get(mr.TaskCounterGroup, mr.ReduceOutputRecords); got != rows {
				t.Errorf("REDUCE_OUTPUT_RECORDS = %d, want %d", got, rows)
			}
			// TeraValidate on the split run's output: in order, every record.
			report := filepath.Join(t.TempDir(), "report")
			if text, err := runMR(t, "local", "teravalidate", out, report); err != nil {
				t.Fatalf("teravalidate: %v\n%s", err, text)
			}
			if got := reportValue(t, report, "records"); got != fmt.Sprint(rows) {
				t.Errorf("teravalidate counted %s records, want %d", got, rows)
			}
		})
	}
}

// TestE2EReduceSplitFIFOPreemption: FIFO with priority preemption and
// preemption.mechanism=split. A low-priority split-safe word count holds
// the cluster's one reduce slot, in its reduce phase; a high-priority job
// arrives and needs it. The planner splits the reduce (not a kill): it
// commits its output so far, the high-priority job's reduce runs, and the
// remainder then reduces the rest; the low job's output is byte for byte
// that of a run without splits.
func TestE2EReduceSplitFIFOPreemption(t *testing.T) {
	skipUnderRace(t, "TestE2EReduceSplitWordCount")
	c := startCluster(t, []trackerSpec{{"t1", 2, 1}},
		"scheduler.fifo.preemption=true", "preemption.mechanism=split",
		"preemption.split.min-task-age=0s", "preemption.split.min-remaining=0s")
	in := t.TempDir()
	genManyWords(t, filepath.Join(in, "a.txt"), 1<<20, 71)
	low := wordCountSpec(in, filepath.Join(t.TempDir(), "low"), 1)
	low.Name = "low"
	low.Conf = reduceSplitConf()
	lowID := c.submit(low)
	waitFor(t, "the low job's reduce to reach its reduce phase", 60*time.Second, func() bool {
		return c.status(lowID).ReduceProgress > 0.7
	})
	high := sleepSpec("high", filepath.Join(t.TempDir(), "high"), 1, 100)
	high.NumReduces = 1
	high.Priority = 10
	highID := c.submit(high)
	hr := c.wait(highID)
	lr := c.wait(lowID)
	if hr.State != "SUCCEEDED" || lr.State != "SUCCEEDED" {
		t.Fatalf("high job ended %s (%s), low %s (%s)", hr.State, hr.Error, lr.State, lr.Error)
	}
	if n := lr.Counters.Get(mr.SplitGroup, mr.ReduceSplits); n < 1 {
		t.Errorf("low REDUCE_SPLITS = %d, want its reduce split for the high-priority job", n)
	}
	if n := lr.Counters.Get(mr.JobCounterGroup, mr.NumKilledReduces); n != 0 {
		t.Errorf("low NUM_KILLED_REDUCES = %d, want 0: its reduce was split, not killed", n)
	}
	if !c.logHas("jobtracker", "reduce split") {
		t.Error("the JobTracker logged no reduce split")
	}
	m := scrapeMetrics(t, "the jobtracker", c.logValue("jobtracker", "jobtracker http serving", "address"))
	if got, want := m["gomr_task_splits_total"]["type=reduce"], float64(lr.Counters.Get(mr.SplitGroup, mr.ReduceSplits)); got != want {
		t.Errorf("gomr_task_splits_total{type=reduce} = %v, want %v (the job's REDUCE_SPLITS)", got, want)
	}
	hh, lh := c.history(highID), c.history(lowID)
	t.Logf("high-priority job: %.1f s; low: %.1f s, %d reduce splits",
		hh.Job.Finish.Sub(hh.Job.Submit).Seconds(), lh.Job.Finish.Sub(lh.Job.Submit).Seconds(), lr.Counters.Get(mr.SplitGroup, mr.ReduceSplits))
	if !hh.Job.Finish.Before(lh.Job.Finish) {
		t.Errorf("the high-priority job ended after the low one: its reduce waited for the slot")
	}
	plain := *low
	plain.Output = filepath.Join(t.TempDir(), "plain")
	plain.Conf = maps.Clone(low.Conf)
	plain.Conf[mr.KeySplitSafe] = "false"
	plain.Conf[speculator.KeyStragglerFraction] = "0"
	if res := c.wait(c.submit(&plain)); res.State != "SUCCEEDED" {
		t.Fatalf("the run without splits ended %s: %s", res.State, res.Error)
	}
	sameParts(t, low.Output, plain.Output)
	checkWordCount(t, low.Output, countWords(t, in))
}

// TestE2EReduceSplitSurvivesJobTrackerRestart: the JobTracker is killed
// (SIGKILL) while a split reduce's remainder runs, and restarted. It keeps
// the fragment the split committed (logged in the job's event log): the
// reduce's next attempt reduces only the key groups after it, and the
// job's output, the fragments joined, is byte for byte that of a run
// without splits, with the same record counters. Before, the restarted
// JobTracker ran the reduce again from its first key group.
func TestE2EReduceSplitSurvivesJobTrackerRestart(t *testing.T) {
	skipUnderRace(t, "TestE2EReduceSplitWordCount and TestE2EJobTrackerRestartRecoversJob (and jobtracker's TestRecoveryKeepsReduceFragments, race-built)")
	c := startCluster(t, []trackerSpec{{"t1", 2, 1}, {"t2", 2, 1}}, "mapreduce.job.reduce.slowstart.completedmaps=1")
	in := t.TempDir()
	genManyWords(t, filepath.Join(in, "a.txt"), 1<<20, 81)
	genManyWords(t, filepath.Join(in, "b.txt"), 1<<20, 82)
	spec := wordCountSpec(in, filepath.Join(t.TempDir(), "split"), 1)
	spec.Conf = reduceSplitConf()
	id := c.submit(spec)
	ctx := context.Background()
	var split string
	waitFor(t, "a reduce split ordered in its reduce phase", 2*time.Minute, func() bool {
		atts, err := c.client.Attempts(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range atts {
			if a.TaskType == "r" && a.State == "RUNNING" && c.client.SplitTask(ctx, a.AttemptId) == nil {
				split = a.AttemptId
				return true
			}
		}
		time.Sleep(100 * time.Millisecond)
		return false
	})
	waitFor(t, "the split reduce's remainder running", time.Minute, func() bool {
		atts, err := c.client.Attempts(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		splitDone, remainder := false, false
		for _, a := range atts {
			splitDone = splitDone || a.AttemptId == split && a.State == "SPLIT"
			remainder = remainder || a.TaskType == "r" && a.AttemptId != split && a.State == "RUNNING"
		}
		if c.status(id).State != "RUNNING" {
			t.Fatal("the job ended before its remainder ran")
		}
		// The fragment's line of the job's event log is written once
		// the JobTracker's lock is released: a kill before loses it.
		return splitDone && remainder && strings.Contains(jobEventLog(t, c, id), `"kind":"fragment"`)
	})
	c.kill("jobtracker")
	c.start("jobtracker", "jobtracker")
	res := c.waitWithin(id, 2*time.Minute)
	if res.State != "SUCCEEDED" {
		t.Fatalf("the job ended %s: %s", res.State, res.Error)
	}
	if !c.logHas("jobtracker", "recovered reduce fragment kept") {
		t.Error("the restarted JobTracker did not keep the reduce's fragment")
	}
	if n := res.Counters.Get(mr.SplitGroup, mr.OutputFragments); n < 1 {
		t.Errorf("OUTPUT_FRAGMENTS = %d after the restart, want the kept fragment counted", n)
	}
	plain := *spec
	plain.Output = filepath.Join(t.TempDir(), "plain")
	plain.Conf = maps.Clone(spec.Conf)
	plain.Conf[mr.KeySplitSafe] = "false"
	plain.Conf[speculator.KeyStragglerFraction] = "0"
	pres := c.wait(c.submit(&plain))
	if pres.State != "SUCCEEDED" {
		t.Fatalf("the run without splits ended %s: %s", pres.State, pres.Error)
	}
	sameParts(t, spec.Output, plain.Output)
	if left, _ := filepath.Glob(filepath.Join(spec.Output, "*.f*")); len(left) > 0 {
		t.Errorf("fragments left in the output: %v", left)
	}
	for _, name := range []string{mr.MapInputRecords, mr.MapOutputRecords, mr.ReduceInputGroups, mr.ReduceInputRecords, mr.ReduceOutputRecords} {
		if a, b := res.Counters.Get(mr.TaskCounterGroup, name), pres.Counters.Get(mr.TaskCounterGroup, name); a != b {
			t.Errorf("%s = %d with a split and a restart, %d without", name, a, b)
		}
	}
}
