package main

import (
	"encoding/hex"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gomr/mr"
	"gomr/shuffle"
	"gomr/speculator"
)

// Scale-up splits of reduces end to end (docs/split.md): a split-safe word
// count with one reduce, slowed by the straggler injector, on two trackers
// of two reduce slots each, three of them idle. With
// preemption.split.scale-up the JobTracker splits the running reduce at a
// key group and runs the rest of its partition as several reduces (key
// ranges) on the idle slots; the job's output, the partition's fragments
// joined in key order, is byte for byte that of an undisturbed run.

// reduceScaleUpCluster starts two trackers of two map and two reduce
// slots, with scale-up splits on (or off) at once.
func reduceScaleUpCluster(t *testing.T, scaleUp bool) *cluster {
	t.Helper()
	return startCluster(t, []trackerSpec{{"t1", 2, 2}, {"t2", 2, 2}},
		"preemption.split.scale-up="+map[bool]string{true: "true", false: "false"}[scaleUp],
		"preemption.split.min-task-age=300ms", "preemption.split.min-remaining=0s")
}

// reduceScaleUpSpec is a split-safe word count of in, one reduce slowed
// (reduceSplitConf), into out. Its maps read splits of 100 kB, too small
// for a scale-up split of maps (two pieces of 64 KiB at least): a split
// map adds spill boundaries, which change the combiner's output and so
// REDUCE_INPUT_RECORDS (split.md), and this is about reduces.
func reduceScaleUpSpec(in, out string) *mr.JobSpec {
	s := wordCountSpec(in, out, 1)
	s.Conf = reduceSplitConf()
	s.Conf["mapreduce.input.fileinputformat.split.maxsize"] = "100000"
	return s
}

// plainRun runs spec undisturbed (not split-safe, not slowed) into a new
// directory, on c, and returns its result and output.
func plainRun(t *testing.T, c *cluster, spec *mr.JobSpec) (*mr.JobResult, string) {
	t.Helper()
	plain := *spec
	plain.Output = filepath.Join(t.TempDir(), "plain")
	plain.Conf = maps.Clone(spec.Conf)
	plain.Conf[mr.KeySplitSafe] = "false"
	plain.Conf[speculator.KeyStragglerFraction] = "0"
	res := c.wait(c.submit(&plain))
	if res.State != "SUCCEEDED" {
		t.Fatalf("the undisturbed run ended %s: %s", res.State, res.Error)
	}
	return res, plain.Output
}

// checkReduceScaleUp checks a run whose reduce was split for idle slots
// against the undisturbed run: the same part files byte for byte (one
// per partition: the pieces' output is in their partition's), no fragment
// or _temporary left, the same record counters, and the counters of the
// split.
func checkReduceScaleUp(t *testing.T, res *mr.JobResult, out string, plain *mr.JobResult, plainOut string) {
	t.Helper()
	if n := res.Counters.Get(mr.SplitGroup, mr.ScaleUpReduceSplits); n < 1 {
		t.Fatalf("SCALE_UP_REDUCE_SPLITS = %d, want the idle reduce slots to take part of the reduce", n)
	}
	if n, s := res.Counters.Get(mr.SplitGroup, mr.ScaleUpReduces), res.Counters.Get(mr.SplitGroup, mr.ReduceSplits); n < 1 || s < 1 {
		t.Errorf("SCALE_UP_REDUCES = %d, REDUCE_SPLITS = %d: want reduces added by a split", n, s)
	}
	if n := res.Counters.Get(mr.SplitGroup, mr.MapSplits); n != 0 {
		t.Errorf("MAP_SPLITS = %d: the maps were to be too short to split", n)
	}
	sameParts(t, out, plainOut)
	if left, _ := filepath.Glob(filepath.Join(out, "*.f*")); len(left) > 0 {
		t.Errorf("fragments left in the output: %v", left)
	}
	if _, err := os.Stat(filepath.Join(out, "_temporary")); err == nil {
		t.Errorf("_temporary left in the output")
	}
	for _, name := range []string{mr.MapInputRecords, mr.MapOutputRecords, mr.ReduceInputGroups, mr.ReduceInputRecords, mr.ReduceOutputRecords} {
		if a, b := res.Counters.Get(mr.TaskCounterGroup, name), plain.Counters.Get(mr.TaskCounterGroup, name); a != b {
			t.Errorf("%s = %d with the reduce split for idle slots, %d undisturbed", name, a, b)
		}
	}
}

// TestE2EReduceScaleUpSplit: one long reduce and three idle reduce slots;
// the reduce is split for them, its rest run as several reduces of its
// partition, and the output is that of an undisturbed run byte for byte.
// It runs under -race too (about 18 s there, 4 s without); its variants
// below do not.
func TestE2EReduceScaleUpSplit(t *testing.T) {
	in := t.TempDir()
	genManyWords(t, filepath.Join(in, "a.txt"), 1<<20, 91)
	c := reduceScaleUpCluster(t, true)
	out := filepath.Join(t.TempDir(), "out")
	id := c.submit(reduceScaleUpSpec(in, out))
	res := c.waitWithin(id, 2*time.Minute)
	if res.State != "SUCCEEDED" {
		t.Fatalf("job ended %s: %s", res.State, res.Error)
	}
	h := c.history(id)
	t.Logf("with scale-up: %.2f s, %d reduces (%d added by %d scale-up splits), %d reduce splits, %d fragments",
		h.Job.Finish.Sub(h.Job.Submit).Seconds(), h.Job.Reduces, res.Counters.Get(mr.SplitGroup, mr.ScaleUpReduces),
		res.Counters.Get(mr.SplitGroup, mr.ScaleUpReduceSplits), res.Counters.Get(mr.SplitGroup, mr.ReduceSplits), res.Counters.Get(mr.SplitGroup, mr.OutputFragments))
	plain, plainOut := plainRun(t, c, reduceScaleUpSpec(in, out))
	checkReduceScaleUp(t, res, out, plain, plainOut)
	checkWordCount(t, out, countWords(t, in))
	t.Logf("reduce shuffle bytes: %d with the scale-up splits (each piece fetching its key range), %d undisturbed",
		res.Counters.Get(mr.TaskCounterGroup, mr.ReduceShuffleBytes), plain.Counters.Get(mr.TaskCounterGroup, mr.ReduceShuffleBytes))
	m := scrapeMetrics(t, "the jobtracker", c.logValue("jobtracker", "jobtracker http serving", "address"))
	if got, want := m["gomr_scale_up_reduces_total"][""], float64(res.Counters.Get(mr.SplitGroup, mr.ScaleUpReduces)); got != want {
		t.Errorf("gomr_scale_up_reduces_total = %v, want %v (the job's SCALE_UP_REDUCES)", got, want)
	}
	text, err := runMR(t, "job", "-status", id, "-D", "mapreduce.jobtracker.address="+c.jtAddr)
	if err != nil || !strings.Contains(text, "Reduce splits for idle slots (scale-up)=") || !strings.Contains(text, "Reduces added by scale-up splits=") {
		t.Errorf("job -status does not show the reduce scale-up counters: %v\n%s", err, text)
	}
}

// TestE2EReduceScaleUpSplitSurvivesJobTrackerRestart: the JobTracker is
// killed (SIGKILL) once a reduce scale-up split has added reduces, and
// restarted. It rebuilds the pieces from the job's event log (the split
// reduce keeps its committed fragment and its shorter range), and the
// job's output is that of an undisturbed run byte for byte.
func TestE2EReduceScaleUpSplitSurvivesJobTrackerRestart(t *testing.T) {
	skipUnderRace(t, "TestRecoveryKeepsReducePieces (jobtracker)")
	in := t.TempDir()
	genManyWords(t, filepath.Join(in, "a.txt"), 1<<20, 92)
	c := reduceScaleUpCluster(t, true)
	out := filepath.Join(t.TempDir(), "out")
	id := c.submit(reduceScaleUpSpec(in, out))
	waitFor(t, "a reduce scale-up split's pieces in the job's event log", time.Minute, func() bool {
		return strings.Contains(jobEventLog(t, c, id), `"kind":"pieces","type":"r"`)
	})
	c.kill("jobtracker")
	c.start("jobtracker", "jobtracker")
	res := c.waitWithin(id, 2*time.Minute)
	if res.State != "SUCCEEDED" {
		t.Fatalf("job ended %s: %s", res.State, res.Error)
	}
	v := c.logValue("jobtracker", "job recovered after a JobTracker restart", "reduces")
	if v == "" || v == "1" {
		t.Errorf("the restarted JobTracker recovered reduces=%q, want the pieces too", v)
	}
	if !c.logHas("jobtracker", "recovered reduce fragment kept") {
		t.Error("the restarted JobTracker did not keep the split reduce's fragment")
	}
	t.Logf("recovered %s reduces (%s kept); in the end %d reduces added by %d scale-up splits", v,
		c.logValue("jobtracker", "job recovered after a JobTracker restart", "reduces_kept"),
		res.Counters.Get(mr.SplitGroup, mr.ScaleUpReduces), res.Counters.Get(mr.SplitGroup, mr.ScaleUpReduceSplits))
	plain, plainOut := plainRun(t, c, reduceScaleUpSpec(in, out))
	sameParts(t, out, plainOut)
	checkWordCount(t, out, countWords(t, in))
	for _, name := range []string{mr.ReduceInputGroups, mr.ReduceOutputRecords} {
		if a, b := res.Counters.Get(mr.TaskCounterGroup, name), plain.Counters.Get(mr.TaskCounterGroup, name); a != b {
			t.Errorf("%s = %d across the restart, %d undisturbed", name, a, b)
		}
	}
}

// TestE2EReduceScaleUpSplitMinEDF: reduce scale-up splits under MinEDF,
// which sizes a deadline job by its reduces. The policy is told of the
// reduces a split adds (the driver's TasksAdded) and gives them slots;
// without it the job's reduce stage was done for MinEDF once its one
// reduce at submission was (the split reduce's own remainder), the added
// reduces got no quota and the job never ended (the simulator's
// TestScaleUpSplitReduce and partitions' TestDeadlineCountsAddedReduces
// show it).
func TestE2EReduceScaleUpSplitMinEDF(t *testing.T) {
	skipUnderRace(t, "TestDeadlineCountsAddedReduces (partitions) and TestReduceScaleUpProtocol (jobtracker)")
	in := t.TempDir()
	genManyWords(t, filepath.Join(in, "a.txt"), 1<<20, 93)
	c := startCluster(t, []trackerSpec{{"t1", 2, 2}, {"t2", 2, 2}}, "scheduler.policy=minedf",
		"preemption.split.scale-up=true", "preemption.split.min-task-age=300ms", "preemption.split.min-remaining=0s")
	out := filepath.Join(t.TempDir(), "out")
	spec := reduceScaleUpSpec(in, out)
	spec.DeadlineSeconds = 600
	res := c.waitWithin(c.submit(spec), 2*time.Minute)
	if res.State != "SUCCEEDED" {
		t.Fatalf("job ended %s: %s", res.State, res.Error)
	}
	if n := res.Counters.Get(mr.SplitGroup, mr.ScaleUpReduces); n < 1 {
		t.Fatalf("SCALE_UP_REDUCES = %d, want reduces added for the idle slots", n)
	}
	checkWordCount(t, out, countWords(t, in))
	t.Logf("%d reduces added by %d scale-up splits", res.Counters.Get(mr.SplitGroup, mr.ScaleUpReduces), res.Counters.Get(mr.SplitGroup, mr.ScaleUpReduceSplits))
}

// TestE2EReduceScaleUpSplitTeraSort: the same with TeraSort (raw output,
// 10-byte binary keys, two partitions) and the range fetch off: the
// pieces fetch whole segments, skip the key groups up to their lower
// bound and stop after their upper one (skip-replay). The output is that
// of an undisturbed run byte for byte, and TeraValidate finds it in order
// with every record.
func TestE2EReduceScaleUpSplitTeraSort(t *testing.T) {
	skipUnderRace(t, "TestE2EReduceScaleUpSplit")
	in := t.TempDir()
	const rows = 50000
	teraRecords(t, filepath.Join(in, "part-0"), rows, 94)
	c := reduceScaleUpCluster(t, true)
	spec := &mr.JobSpec{Name: "terasort", Def: "terasort", Inputs: []string{in}, NumReduces: 2,
		Output: filepath.Join(t.TempDir(), "out"), Params: map[string]string{"splitpoints": hex.EncodeToString([]byte{0x80})}}
	spec.Conf = reduceSplitConf()
	spec.Conf[shuffle.KeyRangeFetch] = "false"
	spec.Conf["mapreduce.input.fileinputformat.split.maxsize"] = "100000"
	res := c.waitWithin(c.submit(spec), 2*time.Minute)
	if res.State != "SUCCEEDED" {
		t.Fatalf("job ended %s: %s", res.State, res.Error)
	}
	t.Logf("%d reduces added by %d scale-up splits", res.Counters.Get(mr.SplitGroup, mr.ScaleUpReduces), res.Counters.Get(mr.SplitGroup, mr.ScaleUpReduceSplits))
	plain, plainOut := plainRun(t, c, spec)
	checkReduceScaleUp(t, res, spec.Output, plain, plainOut)
	report := filepath.Join(t.TempDir(), "report")
	if text, err := runMR(t, "local", "teravalidate", spec.Output, report); err != nil {
		t.Fatalf("teravalidate: %v\n%s", err, text)
	}
	if got := reportValue(t, report, "records"); got != fmt.Sprint(rows) {
		t.Errorf("teravalidate counted %s records, want %d", got, rows)
	}
}
