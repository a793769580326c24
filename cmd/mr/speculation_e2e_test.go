package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gomr/mr"
	"gomr/speculator"
)

// stragglerDefines slow every attempt on the tracker named "slow" by a
// factor k = 34 (seed 16 draws it for "slow" and none for "fast"; the
// draw is checked below so that a change to the draw cannot silently
// turn this test into one without a straggler).
var stragglerDefines = map[string]string{
	speculator.KeyStragglerFraction:  "0.5",
	speculator.KeyStragglerScope:     "tracker",
	speculator.KeyStragglerShape:     "0.5",
	speculator.KeyStragglerLocation:  "3.4",
	speculator.KeyStragglerMaxFactor: "50",
	speculator.KeyStragglerSeed:      "16",
}

func TestStragglerDrawForE2E(t *testing.T) {
	st, err := speculator.StragglersFromConfig(mapGetter(stragglerDefines))
	if err != nil {
		t.Fatal(err)
	}
	if k := st.Factor("any", "slow", false); k < 20 {
		t.Fatalf("tracker slow drawn k = %v, want a straggler (k >= 20)", k)
	}
	if k := st.Factor("any", "fast", false); k != 0 {
		t.Fatalf("tracker fast drawn k = %v, want 0", k)
	}
	if k := st.Factor("any", "slow", true); k != 0 {
		t.Fatalf("speculative attempt on slow drawn k = %v, want 0", k)
	}
}

type mapGetter map[string]string

func (m mapGetter) String(k string) string { return m[k] }

// Maps on a tracker that the straggler injector slows 35-fold get fresh
// speculative attempts on the other tracker once a map has finished; the
// speculative attempts win, the originals are killed, the output (where
// spills of several attempts of a map may be mixed) is exact, and `mr job
// -status` shows the decisions and their estimates.
func TestE2ESpeculativeMaps(t *testing.T) {
	c := startCluster(t, []trackerSpec{{"slow", 1, 0}, {"fast", 1, 1}},
		"mapreduce.job.speculative.retry-after-no-speculate=100ms",
		"mapreduce.job.speculative.retry-after-speculate=100ms")
	in := t.TempDir()
	genText(t, filepath.Join(in, "a.txt"), 3<<20, 7)
	out := filepath.Join(t.TempDir(), "out")
	spec := wordCountSpec(in, out, 1)
	spec.Conf = map[string]string{
		"mapreduce.map.speculative":                     "true",
		"mapreduce.reduce.speculative":                  "true",
		"mapreduce.input.fileinputformat.split.maxsize": "524288",
	}
	for k, v := range stragglerDefines {
		spec.Conf[k] = v
	}
	id := c.submit(spec)
	res := c.wait(id)
	checkWordCount(t, out, countWords(t, in))

	spec8 := res.Counters.Get(mr.SpeculationGroup, mr.SpeculativeMaps)
	wins := res.Counters.Get(mr.SpeculationGroup, mr.SpeculativeWins)
	if spec8 < 1 || wins < 1 {
		t.Fatalf("SPECULATIVE_MAPS = %d, SPECULATIVE_WINS = %d; want both >= 1", spec8, wins)
	}
	if got := res.Counters.Get(mr.SpeculationGroup, mr.SpeculativeReduces); got != 0 {
		t.Errorf("SPECULATIVE_REDUCES = %d, want 0 (reduce speculation is off)", got)
	}
	if killed := res.Counters.Get(mr.JobCounterGroup, mr.NumKilledMaps) + res.Counters.Get(mr.JobCounterGroup, mr.NumKilledReduces); killed < wins {
		t.Errorf("%d attempts killed, want at least the %d originals beaten", killed, wins)
	}
	if failed := res.Counters.Get(mr.JobCounterGroup, mr.NumFailedMaps) + res.Counters.Get(mr.JobCounterGroup, mr.NumFailedReduces); failed != 0 {
		t.Errorf("%d failed attempts, want 0", failed)
	}
	launched := res.Counters.Get(mr.JobCounterGroup, mr.TotalLaunchedMaps)
	if maps := int64(6); launched < maps+spec8 {
		t.Errorf("TOTAL_LAUNCHED_MAPS = %d, want the 6 maps plus %d speculative", launched, spec8)
	}

	st := c.status(id)
	won := 0
	for _, s := range st.Speculations {
		if s.Kind != "fresh" || s.SourceAttempt == "" || !strings.Contains(s.Explanation, "mean runtime") {
			t.Errorf("speculation %+v", s)
		}
		if s.Outcome == "WON" {
			won++
			if !strings.HasPrefix(s.AttemptId, "attempt_") {
				t.Errorf("won speculation without its attempt: %+v", s)
			}
		}
	}
	if int64(won) != wins {
		t.Errorf("%d speculations WON in the status, counter says %d", won, wins)
	}
	text, err := runMR(t, "job", "-status", id, "-D", "mapreduce.jobtracker.address="+c.jtAddr)
	if err != nil {
		t.Fatalf("job -status: %v\n%s", err, text)
	}
	if !strings.Contains(text, "Speculative attempts:") || !strings.Contains(text, " fresh ") || !strings.Contains(text, "WON") {
		t.Errorf("job -status does not show the speculation:\n%s", text)
	}
	// The speculative attempts ran on the fast tracker and were not slowed.
	logs, _ := filepath.Glob(filepath.Join(c.dir, "local", "*", "*", id, "*", "stderr"))
	for _, l := range logs {
		data, _ := os.ReadFile(l)
		if strings.Contains(string(data), "this attempt is slowed") && strings.Contains(l, "fast") {
			t.Errorf("%s: an attempt on the fast tracker was slowed", l)
		}
	}
}

// A reduce on the slowed tracker gets a speculative attempt on the other
// tracker once the other reduce has finished; it wins and commits, the
// original is killed, and the job succeeds with exactly one committed
// output per reduce.
func TestE2ESpeculativeReduce(t *testing.T) {
	c := startCluster(t, []trackerSpec{{"slow", 0, 1}, {"fast", 2, 1}},
		"mapreduce.job.speculative.retry-after-no-speculate=100ms",
		"mapreduce.job.speculative.retry-after-speculate=100ms")
	out := filepath.Join(t.TempDir(), "out")
	spec := &mr.JobSpec{Name: "sleep", Def: "sleep", Output: out, NumReduces: 2,
		Params: map[string]string{"rows": "4", "maps": "4", "map_sleep_ms": "50", "reduce_sleep_ms": "300"},
		Conf: map[string]string{
			"mapreduce.reduce.speculative":            "true",
			"mapreduce.task.progress.report.interval": "100",
			// Both reduces start together once the maps (all on the fast
			// tracker) are done, one on each tracker.
			"mapreduce.job.reduce.slowstart.completedmaps": "1",
		}}
	for k, v := range stragglerDefines {
		spec.Conf[k] = v
	}
	id := c.submit(spec)
	res := c.wait(id)
	if got := res.Counters.Get(mr.SpeculationGroup, mr.SpeculativeReduces); got != 1 {
		t.Fatalf("SPECULATIVE_REDUCES = %d, want 1 (the reduce on the slow tracker)", got)
	}
	if got := res.Counters.Get(mr.SpeculationGroup, mr.SpeculativeWins); got != 1 {
		t.Fatalf("SPECULATIVE_WINS = %d, want 1", got)
	}
	if got := res.Counters.Get(mr.JobCounterGroup, mr.NumKilledReduces); got != 1 {
		t.Errorf("NUM_KILLED_REDUCES = %d, want 1 (the original)", got)
	}
	if got := res.Counters.Get(mr.JobCounterGroup, mr.TotalLaunchedReduces); got != 3 {
		t.Errorf("TOTAL_LAUNCHED_REDUCES = %d, want 3", got)
	}
	if _, err := os.Stat(filepath.Join(out, "_SUCCESS")); err != nil {
		t.Errorf("no _SUCCESS: %v", err)
	}
	parts, _ := filepath.Glob(filepath.Join(out, "part-r-*"))
	if len(parts) != 0 {
		// The sleep job's output format writes no files; a part here
		// would be a committed attempt directory's leftover.
		t.Errorf("unexpected output files %v", parts)
	}
	if _, err := os.Stat(filepath.Join(out, "_temporary")); err == nil {
		t.Errorf("_temporary left in the output")
	}
}
