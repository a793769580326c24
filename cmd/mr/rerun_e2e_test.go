package main

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"gomr/apps"
	"gomr/mr"
)

// nondetJob is a test job whose one map is not deterministic between
// attempts: each row emits per_row records valued "first" in the map's
// first attempt, and an eighth of them valued "rerun" in any later one (so
// a later attempt cuts fewer spills, with other contents), and the first
// attempt stalls at row stall_row until it is killed. The attempt is known from the
// child's working directory, which is named after it (the test binary is
// the task child, so the job is known there too).
const nondetJob = "test-nondeterministic-map"

func init() {
	mr.RegisterJob(&mr.JobDef{
		Name:   nondetJob,
		Input:  apps.RowRangeInput{},
		Output: mr.TextOutput{},
		Mapper: func(tc mr.TaskContext) (mr.Mapper, error) {
			perRow, err := strconv.Atoi(tc.Param("per_row"))
			if err != nil {
				return nil, fmt.Errorf("per_row: %w", err)
			}
			stallRow, err := strconv.ParseUint(tc.Param("stall_row"), 10, 64)
			if err != nil {
				return nil, fmt.Errorf("stall_row: %w", err)
			}
			wd, err := os.Getwd()
			if err != nil {
				return nil, err
			}
			first := strings.HasSuffix(filepath.Base(wd), "_0")
			value := []byte("rerun")
			if first {
				value = []byte("first")
			} else {
				perRow /= 8
			}
			return mr.MapperFunc(func(tc mr.TaskContext, k, _ []byte, out mr.Emitter) error {
				row := binary.BigEndian.Uint64(k)
				if first && row == stallRow {
					// Stall, emitting a record now and then: a spill is
					// announced at the next Emit after it is on disk.
					deadline := time.After(2 * time.Minute)
					for j := 0; ; j++ {
						select {
						case <-tc.Context().Done():
							return tc.Context().Err()
						case <-deadline:
							return fmt.Errorf("first attempt of the map was not killed")
						case <-time.After(20 * time.Millisecond):
						}
						if err := out.Emit(fmt.Appendf(nil, "s%09d", j), value); err != nil {
							return err
						}
					}
				}
				for j := range perRow {
					if err := out.Emit(fmt.Appendf(nil, "r%04d-%05d", row, j), value); err != nil {
						return err
					}
				}
				return nil
			}), nil
		},
	})
}

// TestE2ENondeterministicMapRerun: a reduce fetches spills of a map's first
// attempt, the attempt's tracker is lost, and the map's re-run cuts fewer
// spills, with other contents. The reduce must not mix the two attempts'
// spills: it stops, ends KILLED (not counted against its attempts), and its
// next attempt, which reads in the event log the first attempt's spills
// (one more than the re-run has) and their withdrawal, fetches only the
// re-run's; the job's output is exactly the re-run's, and the job counts
// the non-deterministic re-run.
func TestE2ENondeterministicMapRerun(t *testing.T) {
	// t1 and t3 run maps only, t2 the reduce only: the tracker killed is
	// the map's, never the reduce's.
	c, id, out, mapTracker := startNondetRerun(t, []trackerSpec{{"t1", 1, 0}, {"t2", 0, 1}, {"t3", 1, 0}})
	c.kill(mapTracker)
	res := c.wait(id)
	checkNondetRerun(t, id, res, out)
	if got := res.Counters.Get(mr.JobCounterGroup, mr.NumKilledReduces); got != 1 {
		t.Errorf("NUM_KILLED_REDUCES = %d, want 1", got)
	}
	killed := c.logLines("t2", "state=KILLED")
	if len(killed) != 1 || !strings.Contains(killed[0], "map output is not deterministic") {
		t.Errorf("t2's log shows %d reduce attempts KILLED, want one for a non-deterministic map: %q", len(killed), killed)
	} else {
		t.Logf("t2: %s", killed[0])
	}
}

// The nondetJob's shape in the tests: rows of perRow records, the first
// attempt stalling at stallRow.
const nondetRows, nondetPerRow, nondetStallRow = 20, 2000, 14

// startNondetRerun starts a cluster of trackers (those with map slots
// run the map, t2 the reduce) and a nondetJob of one map and one reduce,
// and waits until the reduce has fetched two spills of the map's first
// attempt. It returns the cluster, the job, its output directory and the
// tracker that runs the first attempt.
func startNondetRerun(t *testing.T, trackers []trackerSpec) (c *cluster, id, out, mapTracker string) {
	t.Helper()
	c = startCluster(t, trackers,
		"mapreduce.task.io.sort.mb=1",
		"mapreduce.job.reduce.slowstart.completedmaps=0",
		"mapreduce.jobtracker.expire.trackers.interval=1500",
		"mapreduce.reduce.shuffle.retry.delay.ms=20",
		"mapreduce.task.progress.report.interval=100",
		// The test reads the running reduce's counters: every heartbeat
		// carries them.
		"mapreduce.tasktracker.counters.update.interval=0s")
	out = filepath.Join(t.TempDir(), "out")
	id = c.submit(&mr.JobSpec{Name: "nondet", Def: nondetJob, Output: out, NumReduces: 1, Params: map[string]string{
		"rows": strconv.Itoa(nondetRows), "maps": "1", "per_row": strconv.Itoa(nondetPerRow), "stall_row": strconv.Itoa(nondetStallRow),
	}})
	first := "attempt_" + strings.TrimPrefix(id, "job_") + "_m_000000_0"
	waitFor(t, "two spills of "+first, time.Minute, func() bool {
		for _, tr := range trackers {
			if tr.maps > 0 && len(c.spillsOf(tr.name, id, first)) >= 2 {
				mapTracker = tr.name
				return true
			}
		}
		return false
	})
	// The reduce has fetched (and merged) the first attempt's two spills
	// (it stops before a third): its running counters say so.
	waitFor(t, "the reduce to fetch two spills of "+first, time.Minute, func() bool {
		for _, ct := range c.status(id).Counters {
			if ct.Group == mr.TaskCounterGroup && ct.Name == mr.MergedMapOutputs && ct.Value >= 2 {
				return true
			}
		}
		return false
	})
	return c, id, out, mapTracker
}

// checkNondetRerun checks that the job succeeded with exactly the
// re-run's output (each key once, valued "rerun"), counted the re-run
// that differs from the first attempt's spills once, and failed no reduce
// (a reduce stopped by a map's re-run is killed, not failed).
func checkNondetRerun(t *testing.T, id string, res *mr.JobResult, out string) {
	t.Helper()
	if res.State != "SUCCEEDED" {
		t.Fatalf("job %s: %s (%s)", id, res.State, res.Error)
	}
	lines := readParts(t, out)
	if len(lines) != nondetRows*nondetPerRow/8 {
		t.Errorf("output has %d records, want %d (the re-run's)", len(lines), nondetRows*nondetPerRow/8)
	}
	seen := map[string]bool{}
	for _, l := range lines {
		k, v, _ := strings.Cut(l, "\t")
		if v != "rerun" || seen[k] {
			t.Fatalf("output record %q: want each key once, valued rerun (the re-run's output only)", l)
		}
		seen[k] = true
	}
	if got := res.Counters.Get(mr.JobCounterGroup, mr.NondeterministicMapReruns); got != 1 {
		t.Errorf("%s = %d, want 1", mr.NondeterministicMapReruns, got)
	}
	if got := res.Counters.Get(mr.JobCounterGroup, mr.NumFailedReduces); got != 0 {
		t.Errorf("NUM_FAILED_REDUCES = %d, want 0", got)
	}
}

// TestE2ENondeterministicMapRerunAcrossRestart: as
// TestE2ENondeterministicMapRerun, but the JobTracker is killed (SIGKILL)
// and restarted after the first attempt's spills were withdrawn (its
// tracker lost) and before the re-run runs (no tracker had a map slot
// until t3 joins, after the restart). The restarted JobTracker knows the
// withdrawn spills from its recovery log and counts the re-run that
// differs from them; the reduce, killed with its tracker's reinit, runs
// again on the re-run's spills only. Before, the restart forgot them and
// the job's NONDETERMINISTIC_MAP_RERUNS stayed 0.
func TestE2ENondeterministicMapRerunAcrossRestart(t *testing.T) {
	c, id, out, mapTracker := startNondetRerun(t, []trackerSpec{{"t1", 1, 0}, {"t2", 0, 1}})
	c.kill(mapTracker)
	events := filepath.Join(c.dir, "system", id+".events")
	waitFor(t, "the withdrawal in the recovery log", time.Minute, func() bool {
		data, _ := os.ReadFile(events)
		return strings.Contains(string(data), `"kind":"withdrawn"`)
	})
	c.kill("jobtracker")
	c.start("jobtracker", "jobtracker")
	waitPort(t, c.jtAddr)
	c.startTracker(trackerSpec{"t3", 1, 0})
	res := c.waitWithin(id, 2*time.Minute)
	checkNondetRerun(t, id, res, out)
	if !c.logHas("jobtracker", "non-deterministic map: a re-run's output differs from a withdrawn attempt's") {
		t.Error("the restarted jobtracker did not log the difference")
	}
}
