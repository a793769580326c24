package main

import (
	"bytes"
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

	"gomr/jobtracker"
	"gomr/mr"
	"gomr/speculator"
)

// Map splitting end to end (docs/split.md): real JobTracker, TaskTrackers
// and task children on loopback; maps are ordered split at random moments
// while they run (slowed by the straggler injector so that there is time
// to), and the output must be byte for byte that of a run without splits,
// with exact counters.

// splitJobConf is the configuration of the jobs split here: split-safe,
// every attempt slowed by k = e^1.6 (about 5), several spills per map.
func splitJobConf() map[string]string {
	return map[string]string{
		mr.KeySplitSafe:                           "true",
		"mapreduce.task.io.sort.mb":               "1",
		"mapreduce.task.progress.report.interval": "50",
		speculator.KeyStragglerFraction:           "1",
		speculator.KeyStragglerScope:              "attempt",
		speculator.KeyStragglerShape:              "0",
		speculator.KeyStragglerLocation:           "1.6",
	}
}

// maxRandomSplits bounds the split orders splitRandomly gives one job.
// Without a bound the test fed on itself: each split launches a remainder,
// a slow (race-built, loaded) machine makes the job longer, and a longer
// job drew more splits (153 in one run, 201 s race-built).
const maxRandomSplits = 24

// splitRandomly orders, at random moments drawn from rng, splits of the
// job's running map attempts until the job ends or maxRandomSplits were
// accepted; it returns how many orders the JobTracker accepted (an attempt
// that ends or announces its final spill before the order reaches it
// finishes unsplit).
func splitRandomly(t *testing.T, c *cluster, id string, rng *rand.Rand) int {
	t.Helper()
	ctx := context.Background()
	accepted := 0
	for accepted < maxRandomSplits {
		time.Sleep(time.Duration(100+rng.IntN(400)) * time.Millisecond)
		if st := c.status(id); st.State != "RUNNING" {
			return accepted
		}
		atts, err := c.client.Attempts(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		var running []string
		for _, a := range atts {
			if a.TaskType == "m" && a.State == "RUNNING" {
				running = append(running, a.AttemptId)
			}
		}
		if len(running) == 0 {
			continue
		}
		pick := running[rng.IntN(len(running))]
		if err := c.client.SplitTask(ctx, pick); err != nil {
			t.Logf("split %s refused: %v", pick, err)
			continue
		}
		accepted++
	}
	return accepted
}

// runSplitAndPlain runs spec with random splits (seed), then without
// (split.safe off), and checks the outputs are byte for byte the same and
// the record counters equal; it returns the split run's result.
func runSplitAndPlain(t *testing.T, c *cluster, spec *mr.JobSpec, seed uint64) (*mr.JobResult, string) {
	t.Helper()
	split := *spec
	split.Output = filepath.Join(t.TempDir(), "split")
	split.Conf = splitJobConf()
	// Slower than splitJobConf's e^1.6: at that, a quiet machine once ran
	// the whole job before the one accepted order reached its map.
	split.Conf[speculator.KeyStragglerLocation] = "2"
	for k, v := range spec.Conf {
		split.Conf[k] = v
	}
	id := c.submit(&split)
	accepted := splitRandomly(t, c, id, rand.New(rand.NewPCG(seed, 3)))
	res := c.wait(id)
	if res.State != "SUCCEEDED" {
		t.Fatalf("the split run ended %s: %s", res.State, res.Error)
	}
	splits := res.Counters.Get(mr.SplitGroup, mr.MapSplits)
	t.Logf("seed %d: %d split orders accepted, %d maps split, %d spills committed by split attempts, %d bytes and %d records handed to remainders",
		seed, accepted, splits, res.Counters.Get(mr.SplitGroup, mr.SplitFragments),
		res.Counters.Get(mr.SplitGroup, mr.RemainderBytes), res.Counters.Get(mr.SplitGroup, mr.RemainderRecords))
	if splits < 1 || splits > int64(accepted) {
		t.Errorf("MAP_SPLITS = %d after %d accepted orders, want 1 to %d", splits, accepted, accepted)
	}
	if res.Counters.Get(mr.SplitGroup, mr.RemainderBytes) <= 0 || res.Counters.Get(mr.SplitGroup, mr.SplitFragments) < splits {
		t.Errorf("split counters %v", res.Counters[mr.SplitGroup])
	}
	plain := split
	plain.Output = filepath.Join(t.TempDir(), "plain")
	plain.Conf = maps.Clone(split.Conf)
	plain.Conf[mr.KeySplitSafe] = "false"
	pres := c.wait(c.submit(&plain))
	if pres.State != "SUCCEEDED" {
		t.Fatalf("the run without splits ended %s: %s", pres.State, pres.Error)
	}
	if n := pres.Counters.Get(mr.SplitGroup, mr.MapSplits); n != 0 {
		t.Fatalf("the run without splits split %d maps", n)
	}
	sameParts(t, split.Output, plain.Output)
	// Not the combine and reduce input counts: a split adds spill
	// boundaries, and a combiner combines within a spill.
	for _, name := range []string{mr.MapInputRecords, mr.MapOutputRecords, mr.ReduceOutputRecords} {
		if a, b := res.Counters.Get(mr.TaskCounterGroup, name), pres.Counters.Get(mr.TaskCounterGroup, name); a != b {
			t.Errorf("%s = %d with splits, %d without", name, a, b)
		}
	}
	return res, id
}

// sameParts checks that two output directories hold the same part files,
// byte for byte.
func sameParts(t *testing.T, got, want string) {
	t.Helper()
	g, _ := filepath.Glob(filepath.Join(got, "part-*"))
	w, _ := filepath.Glob(filepath.Join(want, "part-*"))
	if len(g) != len(w) || len(g) == 0 {
		t.Fatalf("part files: %d with splits, %d without", len(g), len(w))
	}
	for i := range g {
		a, errA := os.ReadFile(g[i])
		b, errB := os.ReadFile(w[i])
		if errA != nil || errB != nil {
			t.Fatal(errA, errB)
		}
		if filepath.Base(g[i]) != filepath.Base(w[i]) || !bytes.Equal(a, b) {
			t.Errorf("%s (%d bytes) differs from the run without splits' %s (%d bytes)", filepath.Base(g[i]), len(a), filepath.Base(w[i]), len(b))
		}
	}
}

func TestE2EMapSplitWordCount(t *testing.T) {
	c := startCluster(t, []trackerSpec{{"t1", 2, 1}, {"t2", 2, 1}})
	in := t.TempDir()
	genText(t, filepath.Join(in, "a.txt"), 2<<20, 11)
	genText(t, filepath.Join(in, "b.txt"), 1<<20, 12)
	for _, seed := range []uint64{1, 2} {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			if seed != 1 {
				skipUnderRace(t, "TestE2EMapSplitWordCount/seed1")
			}
			spec := wordCountSpec(in, "", 2)
			res, id := runSplitAndPlain(t, c, spec, seed)
			if want := int64(countLines(t, in)); res.Counters.Get(mr.TaskCounterGroup, mr.MapInputRecords) != want {
				t.Errorf("MAP_INPUT_RECORDS = %d, the input has %d lines", res.Counters.Get(mr.TaskCounterGroup, mr.MapInputRecords), want)
			}
			text, err := runMR(t, "job", "-status", id, "-D", "mapreduce.jobtracker.address="+c.jtAddr)
			if err != nil {
				t.Fatalf("job -status: %v\n%s", err, text)
			}
			if !strings.Contains(text, "Map Splits") || !strings.Contains(text, "Map attempts split=") {
				t.Errorf("job -status does not show the split counters:\n%s", text)
			}
			hist, err := runMR(t, "job", "-history", id, "-D", "mapreduce.jobtracker.address="+c.jtAddr)
			if err != nil || !strings.Contains(hist, mr.MapSplits) || !strings.Contains(hist, `"SPLIT"`) {
				t.Errorf("job -history does not hold the split counters and SPLIT attempts: %v\n%s", err, tail(hist, 3000))
			}
		})
	}
}

// countLines counts the lines of the files of dir as TextInput reads
// them (a last line without its newline counts).
func countLines(t *testing.T, dir string) int {
	t.Helper()
	n := 0
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		n += bytes.Count(data, []byte("\n"))
		if len(data) > 0 && data[len(data)-1] != '\n' {
			n++
		}
	}
	return n
}

// teraRecords writes n random 100-byte records (10-byte keys) to path.
func teraRecords(t *testing.T, path string, n int, seed uint64) {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 5))
	buf := make([]byte, 100*n)
	for i := range buf {
		buf[i] = byte(r.UintN(256))
	}
	if err := os.WriteFile(path, buf, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestE2EMapSplitSort(t *testing.T) {
	skipUnderRace(t, "TestE2EMapSplitWordCount/seed1 and TestE2EMinEDFWCSplitPreemption")
	c := startCluster(t, []trackerSpec{{"t1", 2, 1}, {"t2", 2, 1}})
	in := t.TempDir()
	teraRecords(t, filepath.Join(in, "part-0"), 60000, 21)
	for _, seed := range []uint64{3, 4} {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			spec := &mr.JobSpec{Name: "terasort", Def: "terasort", Inputs: []string{in}, NumReduces: 2,
				Params: map[string]string{"splitpoints": hex.EncodeToString([]byte{0x80})}}
			// Sorting maps do little per record: slowed 20 times.
			spec.Conf = map[string]string{"mapreduce.input.fileinputformat.split.maxsize": "1500000", speculator.KeyStragglerLocation: "3"}
			res, _ := runSplitAndPlain(t, c, spec, seed)
			if got := res.Counters.Get(mr.TaskCounterGroup, mr.MapInputRecords); got != 60000 {
				t.Errorf("MAP_INPUT_RECORDS = %d, want 60000", got)
			}
		})
	}
}

// A map is split on t1; t1 is then lost, with the spills the split attempt
// made. The map runs again from its start on t2, cutting its spills where
// the task was split, and the job succeeds with the output of a run
// without splits.
func TestE2EMapSplitTrackerLost(t *testing.T) {
	skipUnderRace(t, "TestE2EMapSplitWordCount/seed1 and TestE2EMinEDFWCSplitPreemption")
	c := startCluster(t, []trackerSpec{{"t1", 1, 0}, {"t2", 1, 1}},
		"mapreduce.jobtracker.expire.trackers.interval=1500")
	in := t.TempDir()
	genText(t, filepath.Join(in, "a.txt"), 1<<20, 31)
	genText(t, filepath.Join(in, "b.txt"), 1<<20, 32)
	spec := wordCountSpec(in, filepath.Join(t.TempDir(), "split"), 1)
	spec.Conf = splitJobConf()
	spec.Conf[speculator.KeyStragglerLocation] = "2.5"
	id := c.submit(spec)
	ctx := context.Background()
	// Split a map running on t1; one that ends before the order reaches
	// it is not split: try the next.
	split := ""
	waitFor(t, "a map attempt on t1 to end SPLIT", 40*time.Second, func() bool {
		atts, err := c.client.Attempts(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range atts {
			if a.TaskType == "m" && a.Tracker == "t1" && a.State == jobtracker.StateSplit {
				split = a.AttemptId
				return true
			}
		}
		for _, a := range atts {
			if a.TaskType == "m" && a.State == "RUNNING" && a.Tracker == "t1" {
				if err := c.client.SplitTask(ctx, a.AttemptId); err != nil {
					t.Logf("split %s refused: %v", a.AttemptId, err)
				}
			}
		}
		time.Sleep(200 * time.Millisecond)
		return false
	})
	t.Logf("%s split; killing t1", split)
	c.kill("t1")
	res := c.wait(id)
	if res.State != "SUCCEEDED" {
		t.Fatalf("job ended %s: %s", res.State, res.Error)
	}
	if !c.logHas("jobtracker", "split map lost the output of an earlier part") {
		t.Errorf("the JobTracker did not run the split map again from its start")
	}
	if got, want := res.Counters.Get(mr.TaskCounterGroup, mr.MapInputRecords), int64(countLines(t, in)); got != want {
		t.Errorf("MAP_INPUT_RECORDS = %d, the input has %d lines", got, want)
	}
	plain := *spec
	plain.Output = filepath.Join(t.TempDir(), "plain")
	plain.Conf = maps.Clone(spec.Conf)
	plain.Conf[mr.KeySplitSafe] = "false"
	if pres := c.wait(c.submit(&plain)); pres.State != "SUCCEEDED" {
		t.Fatalf("the run without splits ended %s: %s", pres.State, pres.Error)
	}
	sameParts(t, spec.Output, plain.Output)
}

func attemptState(t *testing.T, cl *jobtracker.Client, job, attempt string) string {
	t.Helper()
	atts, err := cl.Attempts(context.Background(), job)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range atts {
		if a.AttemptId == attempt {
			return a.State
		}
	}
	return ""
}

func TestE2EMapSplitRefused(t *testing.T) {
	c := startCluster(t, []trackerSpec{{"t1", 1, 1}})
	in := t.TempDir()
	genText(t, filepath.Join(in, "a.txt"), 300<<10, 41)
	spec := wordCountSpec(in, filepath.Join(t.TempDir(), "out"), 1)
	spec.Conf = splitJobConf()
	spec.Conf[mr.KeySplitSafe] = "false"
	id := c.submit(spec)
	ctx := context.Background()
	var running string
	waitFor(t, "a running map attempt", 30*time.Second, func() bool {
		atts, _ := c.client.Attempts(ctx, id)
		for _, a := range atts {
			if a.TaskType == "m" && a.State == "RUNNING" {
				running = a.AttemptId
				return true
			}
		}
		return false
	})
	err := c.client.SplitTask(ctx, running)
	if err == nil || !strings.Contains(err.Error(), mr.KeySplitSafe) {
		t.Errorf("split of a job that is not split-safe: %v, want a refusal naming %s", err, mr.KeySplitSafe)
	}
	text, err := runMR(t, "job", "-split-task", running, "-D", "mapreduce.jobtracker.address="+c.jtAddr)
	if err == nil || !strings.Contains(text, mr.KeySplitSafe) {
		t.Errorf("mr job -split-task of a job that is not split-safe: %v\n%s", err, text)
	}
	if res := c.wait(id); res.State != "SUCCEEDED" {
		t.Fatalf("job ended %s: %s", res.State, res.Error)
	}
}
