package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gomr/mr"
	"gomr/speculator"
)

// TestE2EScaleUpSplit: a job of one long map on two trackers of two map
// slots each, three slots idle. With preemption.split.scale-up the
// JobTracker splits the running maps and runs their remainders as several
// maps on the idle slots (docs/split.md): the job finishes sooner than on
// a cluster without scale-up, with the same output byte for byte.
func TestE2EScaleUpSplit(t *testing.T) {
	skipUnderRace(t, "TestScaleUpPieces and TestRunMapsAdded (jobtracker, shuffle), and the map split tests")
	in := t.TempDir()
	genText(t, filepath.Join(in, "a.txt"), 2<<20, 81)
	spec := func(out string) *mr.JobSpec { return scaleUpSpec(in, out) }
	run := func(scaleUp bool) (*mr.JobResult, float64, string) {
		t.Helper()
		c := startCluster(t, []trackerSpec{{"t1", 2, 1}, {"t2", 2, 1}},
			"preemption.split.scale-up="+map[bool]string{true: "true", false: "false"}[scaleUp],
			"preemption.split.min-task-age=300ms", "preemption.split.min-remaining=0s")
		out := filepath.Join(t.TempDir(), "out")
		id := c.submit(spec(out))
		res := c.wait(id)
		if res.State != "SUCCEEDED" {
			t.Fatalf("scale-up %v: job ended %s: %s", scaleUp, res.State, res.Error)
		}
		if scaleUp {
			m := scrapeMetrics(t, "the jobtracker", c.logValue("jobtracker", "jobtracker http serving", "address"))
			if got, want := m["gomr_scale_up_maps_total"][""], float64(res.Counters.Get(mr.SplitGroup, mr.ScaleUpMaps)); got != want {
				t.Errorf("gomr_scale_up_maps_total = %v, want %v (the job's SCALE_UP_MAPS)", got, want)
			}
		}
		h := c.history(id)
		took := h.Job.Finish.Sub(h.Job.Submit).Seconds()
		t.Logf("scale-up %v: %.2f s, %d maps (%d added by %d scale-up splits), %d map splits", scaleUp, took, h.Job.Maps,
			res.Counters.Get(mr.SplitGroup, mr.ScaleUpMaps), res.Counters.Get(mr.SplitGroup, mr.ScaleUpSplits), res.Counters.Get(mr.SplitGroup, mr.MapSplits))
		return res, took, out
	}
	plain, tPlain, outPlain := run(false)
	if n := plain.Counters.Get(mr.SplitGroup, mr.MapSplits); n != 0 {
		t.Fatalf("the run without scale-up split %d maps", n)
	}
	up, tUp, outUp := run(true)
	if n := up.Counters.Get(mr.SplitGroup, mr.ScaleUpSplits); n < 1 {
		t.Fatalf("SCALE_UP_SPLITS = %d, want the idle slots to take part of the maps", n)
	}
	sameParts(t, outUp, outPlain)
	checkWordCount(t, outUp, countWords(t, in))
	for _, name := range []string{mr.MapInputRecords, mr.MapOutputRecords, mr.ReduceOutputRecords} {
		if a, b := up.Counters.Get(mr.TaskCounterGroup, name), plain.Counters.Get(mr.TaskCounterGroup, name); a != b {
			t.Errorf("%s = %d with scale-up, %d without", name, a, b)
		}
	}
	if tUp >= tPlain {
		t.Errorf("the job took %.2f s with scale-up, %.2f s without: want it sooner", tUp, tPlain)
	}
}

// scaleUpSpec is a split-safe word count of in whose maps are slowed 33
// times (k = e^3.5) and not speculated.
func scaleUpSpec(in, out string) *mr.JobSpec {
	s := wordCountSpec(in, out, 1)
	s.Conf = splitJobConf()
	s.Conf[speculator.KeyMapSpeculative] = "false"
	s.Conf[speculator.KeyStragglerTaskTypes] = "map"
	s.Conf[speculator.KeyStragglerLocation] = "3.5"
	return s
}

// TestE2EScaleUpSplitMinEDF: scale-up splits under MinEDF, which sizes a
// deadline job by its maps. The policy is told of the maps a scale-up
// split adds (the driver's TasksAdded) and gives them slots; before, once
// the job's one map at submission was done MinEDF counted no map left,
// gave the added maps no quota and the job never ended.
func TestE2EScaleUpSplitMinEDF(t *testing.T) {
	skipUnderRace(t, "TestDeadlineCountsAddedTasks (partitions) and TestScaleUpPieces (jobtracker)")
	in := t.TempDir()
	genText(t, filepath.Join(in, "a.txt"), 1<<20, 82)
	c := startCluster(t, []trackerSpec{{"t1", 2, 1}, {"t2", 2, 1}}, "scheduler.policy=minedf",
		"preemption.split.scale-up=true", "preemption.split.min-task-age=300ms", "preemption.split.min-remaining=0s")
	out := filepath.Join(t.TempDir(), "out")
	spec := scaleUpSpec(in, out)
	spec.DeadlineSeconds = 600
	res := c.waitWithin(c.submit(spec), 2*time.Minute)
	if res.State != "SUCCEEDED" {
		t.Fatalf("job ended %s: %s", res.State, res.Error)
	}
	if n := res.Counters.Get(mr.SplitGroup, mr.ScaleUpMaps); n < 1 {
		t.Fatalf("SCALE_UP_MAPS = %d, want maps added for the idle slots", n)
	}
	checkWordCount(t, out, countWords(t, in))
	t.Logf("%d maps added by %d scale-up splits", res.Counters.Get(mr.SplitGroup, mr.ScaleUpMaps), res.Counters.Get(mr.SplitGroup, mr.ScaleUpSplits))
}

// TestE2EScaleUpSplitSurvivesJobTrackerRestart: the JobTracker is killed
// (SIGKILL) once a scale-up split has added maps, and restarted. It
// rebuilds the pieces from the job's event log (the map they were cut
// from keeps its shorter split), and the job's output is exact, every
// input record read once. Before, the restarted JobTracker ran such a map
// again whole and dropped its pieces.
func TestE2EScaleUpSplitSurvivesJobTrackerRestart(t *testing.T) {
	skipUnderRace(t, "TestRecoveryKeepsScaleUpPieces (jobtracker)")
	in := t.TempDir()
	genText(t, filepath.Join(in, "a.txt"), 2<<20, 83)
	c := startCluster(t, []trackerSpec{{"t1", 2, 1}, {"t2", 2, 1}},
		"preemption.split.scale-up=true", "preemption.split.min-task-age=300ms", "preemption.split.min-remaining=0s")
	out := filepath.Join(t.TempDir(), "out")
	id := c.submit(scaleUpSpec(in, out))
	// The pieces line of the job's event log is written once the
	// JobTracker's lock is released, after its log line: a kill in
	// between loses it, and the map then runs again whole.
	waitFor(t, "a scale-up split's pieces in the job's event log", time.Minute, func() bool {
		return strings.Contains(jobEventLog(t, c, id), `"kind":"pieces"`)
	})
	c.kill("jobtracker")
	c.start("jobtracker", "jobtracker")
	res := c.waitWithin(id, 2*time.Minute)
	if res.State != "SUCCEEDED" {
		t.Fatalf("job ended %s: %s", res.State, res.Error)
	}
	if v := c.logValue("jobtracker", "job recovered after a JobTracker restart", "scale_up_maps"); v == "" || v == "0" {
		t.Errorf("the restarted JobTracker recovered scale_up_maps=%q, want the pieces", v)
	}
	checkWordCount(t, out, countWords(t, in))
	if got := res.Counters.Get(mr.TaskCounterGroup, mr.MapInputRecords); got != int64(countLines(t, in)) {
		t.Errorf("MAP_INPUT_RECORDS = %d, the input has %d lines", got, countLines(t, in))
	}
	t.Logf("%d maps added by %d scale-up splits", res.Counters.Get(mr.SplitGroup, mr.ScaleUpMaps), res.Counters.Get(mr.SplitGroup, mr.ScaleUpSplits))
}

// jobEventLog is the job's recovery event log in the JobTracker's system
// directory (somewhere under the cluster's directory), or "" while there
// is none.
func jobEventLog(t *testing.T, c *cluster, id string) string {
	t.Helper()
	var data []byte
	err := filepath.WalkDir(c.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != id+".events" {
			return nil // a directory the daemons are changing, or another file
		}
		if data, err = os.ReadFile(p); err != nil {
			return err
		}
		return filepath.SkipAll
	})
	if err != nil {
		t.Logf("reading the event log of %s: %v", id, err)
	}
	return string(data)
}
