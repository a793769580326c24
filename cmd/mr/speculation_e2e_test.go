package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"gomr/jobtracker"
	"gomr/mr"
	"gomr/mrpb"
	"gomr/speculator"
	"gomr/tasktracker"
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
//
// The trackers have no CRIU, while the job asks for clones and the clone
// cost is damped to nothing: the speculator must still choose fresh
// attempts, saying why.
func TestE2ESpeculativeMaps(t *testing.T) {
	// Two map slots on the fast tracker: a speculative attempt starts as
	// soon as it is decided instead of queueing behind the fast tracker's
	// own maps (with one slot, under the race detector, the original
	// could still finish first).
	c := startCluster(t, []trackerSpec{{"slow", 1, 0}, {"fast", 2, 1}},
		"mapreduce.tasktracker.criu.path=",
		"speculation.clone.beta=0.0001",
		"mapreduce.job.speculative.retry-after-no-speculate=100ms",
		"mapreduce.job.speculative.retry-after-speculate=100ms")
	in := t.TempDir()
	genText(t, filepath.Join(in, "a.txt"), 3<<20, 7)
	out := filepath.Join(t.TempDir(), "out")
	spec := wordCountSpec(in, out, 1)
	spec.Conf = map[string]string{
		"mapreduce.map.speculative":                     "true",
		"speculation.clone.enabled":                     "true",
		"mapreduce.task.progress.report.interval":       "100",
		"mapreduce.input.fileinputformat.split.maxsize": "524288",
		// Judge only once three maps are done: by then the slowed ones
		// have reported progress, and a clone has something to save.
		speculator.KeyMinDoneCount: "3",
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
		// Mostly the slow tracker's attempts; one on the fast tracker may
		// fall behind the mean too when the machine is loaded (race-built
		// children), and is judged the same way: fresh, as neither tracker
		// can clone.
		if s.Kind != "fresh" || s.SourceAttempt == "" || !strings.Contains(s.Explanation, "mean runtime") ||
			!(strings.Contains(s.Explanation, "no clone: cannot be cloned on tracker slow") ||
				strings.Contains(s.Explanation, "no clone: cannot be cloned on tracker fast") ||
				strings.Contains(s.Explanation, "no clone: attempt has no progress")) {
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

// criuPath is the CRIU the clone tests use: $GOMR_CRIU, else the default
// `make criu` install. Without it the tests skip, unless
// GOMR_REQUIRE_CRIU=1 (make test as root sets it), where they fail.
func criuPath(t *testing.T) string {
	t.Helper()
	p := os.Getenv("GOMR_CRIU")
	if p == "" {
		p = "/opt/gomr/criu/criu.sh"
	}
	if _, err := os.Stat(p); err != nil || os.Geteuid() != 0 {
		msg := "CRIU not installed at " + p + " (run make criu as root)"
		if os.Geteuid() != 0 {
			msg = "cloning needs root"
		}
		if os.Getenv("GOMR_REQUIRE_CRIU") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return p
}

// cloneMapJob is the job of the map-cloning tests: a WordCount of 3 MB in
// 512 KB maps, slowed by the straggler injector, with clones enabled and
// judged once three maps are done, and 1 MB sort buffers so that a clone
// starts with spills behind it. It returns the spec, its input and output.
func cloneMapJob(t *testing.T) (spec *mr.JobSpec, in, out string) {
	t.Helper()
	in = t.TempDir()
	genText(t, filepath.Join(in, "a.txt"), 3<<20, 7)
	out = filepath.Join(t.TempDir(), "out")
	spec = wordCountSpec(in, out, 1)
	spec.Conf = map[string]string{
		"mapreduce.map.speculative":                     "true",
		"speculation.clone.enabled":                     "true",
		"mapreduce.task.progress.report.interval":       "100",
		"mapreduce.input.fileinputformat.split.maxsize": "524288",
		// Judge only once three maps are done: by then the slowed ones
		// have reported progress, and a clone has something to save.
		speculator.KeyMinDoneCount: "3",
		// Small spills, so that the clone starts with some spills behind it.
		"mapreduce.task.io.sort.mb": "1",
	}
	for k, v := range stragglerDefines {
		spec.Conf[k] = v
	}
	return spec, in, out
}

// A straggling map is cloned with CRIU onto the other tracker (the clone
// cost is damped to almost nothing, so that a clone always beats a fresh
// attempt; the slow tracker's only map slot is the straggler's): the slow
// tracker checkpoints it and sends the image, the fast one restores it,
// the clone takes over from the original's progress, wins, the original
// is killed, and the output, made of spills of both, is exact.
func TestE2ECloneMap(t *testing.T) {
	path := criuPath(t)
	c := startCluster(t, []trackerSpec{{"slow", 1, 0}, {"fast", 1, 1}},
		"mapreduce.tasktracker.criu.path="+path,
		"mapreduce.job.speculative.retry-after-no-speculate=100ms",
		"mapreduce.job.speculative.retry-after-speculate=100ms",
		"speculation.clone.beta=0.0001")
	spec, in, out := cloneMapJob(t)
	id := c.submit(spec)
	res := c.wait(id)
	checkWordCount(t, out, countWords(t, in))
	checkSameAsPlainRun(t, c, spec, out)
	clones := res.Counters.Get(mr.SpeculationGroup, mr.ClonesLaunched)
	wins := res.Counters.Get(mr.SpeculationGroup, mr.SpeculativeWins)
	if clones < 1 || wins < 1 {
		t.Fatalf("CLONES_LAUNCHED = %d, SPECULATIVE_WINS = %d; want both >= 1", clones, wins)
	}
	for _, n := range []string{mr.CloneBytes, mr.CloneDumpMillis, mr.CloneRestoreMillis} {
		if res.Counters.Get(mr.SpeculationGroup, n) <= 0 {
			t.Errorf("%s = %d, want > 0", n, res.Counters.Get(mr.SpeculationGroup, n))
		}
	}
	if f := res.Counters.Get(mr.SpeculationGroup, mr.CloneFallbacks); f != 0 {
		t.Errorf("CLONE_FALLBACKS = %d, want 0", f)
	}
	st := c.status(id)
	wonClone := 0
	for _, s := range st.Speculations {
		t.Logf("speculation %s %s -> %s %s: %s", s.Kind, s.SourceAttempt, s.AttemptId, s.Outcome, s.Explanation)
		if s.Kind == "clone" && s.Outcome == "WON" {
			wonClone++
		}
	}
	if wonClone == 0 {
		t.Errorf("no clone won")
	}
	checkTimelineMarksClones(t, c, id, st)
	slowShuffle := c.trackerShuffleAddr("slow")
	data, _ := os.ReadFile(filepath.Join(c.dir, "fast.log"))
	crossed := 0
	for _, l := range strings.Split(string(data), "\n") {
		if strings.Contains(l, "attempt cloned") {
			t.Log(l)
			if strings.Contains(l, "from="+slowShuffle) {
				crossed++
			}
		}
	}
	if crossed == 0 {
		t.Errorf("no clone of an attempt of tracker slow (%s) was restored on tracker fast", slowShuffle)
	}
	// The checkpoint endpoint wants the job's signature: none or a forged
	// one is refused before anything is dumped.
	for _, hash := range []string{"", "Zm9yZ2Vk"} {
		u := "http://" + slowShuffle + tasktracker.CheckpointPath + "?job=" + id + "&attempt=attempt_x_1_m_000000_0&clone=attempt_x_1_m_000000_9"
		req, _ := http.NewRequest(http.MethodPost, u, nil)
		if hash != "" {
			req.Header.Set("X-MR-Clone-Hash", hash)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("checkpoint request with hash %q: %s, want 401", hash, resp.Status)
		}
	}
}

// A clone whose restore fails (the tracker's fault injection damages the
// image) is reported, and the speculator's choice falls back to a fresh
// attempt on the other tracker: the job succeeds with exact output.
func TestE2ECloneFallsBackToFresh(t *testing.T) {
	path := criuPath(t)
	t.Setenv(tasktracker.CloneFaultEnv, "restore")
	c := startCluster(t, []trackerSpec{{"slow", 2, 0}, {"fast", 1, 1}},
		"mapreduce.tasktracker.criu.path="+path,
		"mapreduce.job.speculative.retry-after-no-speculate=100ms",
		"mapreduce.job.speculative.retry-after-speculate=100ms",
		"speculation.clone.beta=0.0001")
	in := t.TempDir()
	genText(t, filepath.Join(in, "a.txt"), 3<<20, 7)
	out := filepath.Join(t.TempDir(), "out")
	spec := wordCountSpec(in, out, 1)
	spec.Conf = map[string]string{
		"mapreduce.map.speculative":                     "true",
		"speculation.clone.enabled":                     "true",
		"mapreduce.task.progress.report.interval":       "100",
		"mapreduce.input.fileinputformat.split.maxsize": "524288",
		// Judge only once three maps are done: by then the slowed ones
		// have reported progress, and a clone has something to save.
		speculator.KeyMinDoneCount: "3",
	}
	for k, v := range stragglerDefines {
		spec.Conf[k] = v
	}
	id := c.submit(spec)
	res := c.wait(id)
	checkWordCount(t, out, countWords(t, in))
	fallbacks := res.Counters.Get(mr.SpeculationGroup, mr.CloneFallbacks)
	if fallbacks < 1 {
		t.Fatalf("CLONE_FALLBACKS = %d, want >= 1", fallbacks)
	}
	if n := res.Counters.Get(mr.SpeculationGroup, mr.ClonesLaunched); n != 0 {
		t.Errorf("CLONES_LAUNCHED = %d, want 0 (every restore fails)", n)
	}
	if n := res.Counters.Get(mr.JobCounterGroup, mr.NumFailedMaps); n != 0 {
		t.Errorf("NUM_FAILED_MAPS = %d, want 0 (a failed clone does not count against the task)", n)
	}
	st := c.status(id)
	failedClones, freshAfter := 0, 0
	for _, s := range st.Speculations {
		t.Logf("speculation %s %s -> %s %s: %s", s.Kind, s.SourceAttempt, s.AttemptId, s.Outcome, s.Note)
		if s.Kind == "clone" && strings.Contains(s.Note, "clone failed") && strings.Contains(s.Note, "restor") {
			failedClones++
		}
		if s.Kind == "fresh" && strings.HasPrefix(s.Note, "instead of a clone that failed") {
			freshAfter++
		}
	}
	if failedClones == 0 || freshAfter == 0 {
		t.Errorf("status shows %d failed clones and %d fresh attempts replacing them, want both > 0", failedClones, freshAfter)
	}
}

// A reduce slowed in its reduce phase is cloned there: the clone takes
// over the original's partial output file (flushed at the quiet point and
// copied to the clone's own attempt directory), wins, and commits; the
// output is exact. The injector slows reduce 0 only (task scope, seed 264
// draws k = 48.7 for r_000000 and nothing for r_000001 or any map).
func TestE2ECloneReduce(t *testing.T) {
	path := criuPath(t)
	c := startCluster(t, []trackerSpec{{"tt", 2, 3}},
		"mapreduce.tasktracker.criu.path="+path,
		"mapreduce.job.speculative.retry-after-no-speculate=100ms",
		"mapreduce.job.speculative.retry-after-speculate=100ms",
		"speculation.clone.beta=0.0001")
	in := t.TempDir()
	// Many distinct words, so that the reduce phase (one group per word)
	// is long enough for a straggler to show.
	var text strings.Builder
	for i := range 300000 {
		fmt.Fprintf(&text, "u%d", i*7919%300000)
		if i%10 == 9 {
			text.WriteByte('\n')
		} else {
			text.WriteByte(' ')
		}
	}
	if err := os.WriteFile(filepath.Join(in, "a.txt"), []byte(text.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "out")
	spec := wordCountSpec(in, out, 2)
	spec.Conf = map[string]string{
		"mapreduce.reduce.speculative":                  "true",
		"speculation.clone.enabled":                     "true",
		"mapreduce.task.progress.report.interval":       "100",
		"mapreduce.input.fileinputformat.split.maxsize": "524288",
		"mapreduce.job.reduce.slowstart.completedmaps":  "1",
		speculator.KeyStragglerFraction:                 "0.3",
		speculator.KeyStragglerScope:                    "task",
		speculator.KeyStragglerShape:                    "0.5",
		speculator.KeyStragglerLocation:                 "3.4",
		speculator.KeyStragglerMaxFactor:                "50",
		speculator.KeyStragglerSeed:                     "264",
	}
	id := c.submit(spec)
	res := c.wait(id)
	checkWordCount(t, out, countWords(t, in))
	checkSameAsPlainRun(t, c, spec, out)
	if n := res.Counters.Get(mr.SpeculationGroup, mr.ClonesLaunched); n != 1 {
		t.Errorf("CLONES_LAUNCHED = %d, want 1", n)
	}
	if n := res.Counters.Get(mr.SpeculationGroup, mr.SpeculativeReduces); n != 1 {
		t.Errorf("SPECULATIVE_REDUCES = %d, want 1", n)
	}
	st := c.status(id)
	won := false
	for _, s := range st.Speculations {
		t.Logf("speculation %s %s -> %s %s: %s", s.Kind, s.SourceAttempt, s.AttemptId, s.Outcome, s.Explanation)
		if s.Kind == "clone" && strings.Contains(s.TaskId, "_r_000000") && s.Outcome == "WON" {
			won = true
		}
	}
	if !won {
		t.Fatal("the clone of reduce 0 did not win")
	}
	parts, _ := filepath.Glob(filepath.Join(out, "part-r-*"))
	if len(parts) != 2 {
		t.Errorf("output parts %v, want part-r-00000 and part-r-00001", parts)
	}
}

// checkSameAsPlainRun runs spec again on the same cluster without
// speculation or stragglers, into a directory of its own, and checks that
// the part files of out are byte for byte those of that run.
func checkSameAsPlainRun(t *testing.T, c *cluster, spec *mr.JobSpec, out string) {
	t.Helper()
	plain := *spec
	plain.Output = filepath.Join(t.TempDir(), "plain")
	plain.Conf = map[string]string{}
	for k, v := range spec.Conf {
		plain.Conf[k] = v
	}
	plain.Conf["mapreduce.map.speculative"] = "false"
	plain.Conf["mapreduce.reduce.speculative"] = "false"
	plain.Conf[speculator.KeyStragglerFraction] = "0"
	if res := c.wait(c.submit(&plain)); res.State != "SUCCEEDED" {
		t.Fatalf("the run without speculation ended %s: %s", res.State, res.Error)
	}
	got, _ := filepath.Glob(filepath.Join(out, "part-*"))
	want, _ := filepath.Glob(filepath.Join(plain.Output, "part-*"))
	if len(got) != len(want) || len(got) == 0 {
		t.Fatalf("part files: %d with cloning, %d without", len(got), len(want))
	}
	for i := range got {
		a, errA := os.ReadFile(got[i])
		b, errB := os.ReadFile(want[i])
		if errA != nil || errB != nil {
			t.Fatal(errA, errB)
		}
		if filepath.Base(got[i]) != filepath.Base(want[i]) || !bytes.Equal(a, b) {
			t.Errorf("%s (%d bytes) differs from the run without cloning's %s (%d bytes)",
				filepath.Base(got[i]), len(a), filepath.Base(want[i]), len(b))
		}
	}
}

// checkTimelineMarksClones checks that the job page's task timeline marks
// every clone the job status lists as cloned (and speculative), and no
// other attempt as cloned, both while the JobTracker holds the job and from
// its history file once it has been written.
func checkTimelineMarksClones(t *testing.T, c *cluster, id string, st *mrpb.JobStatus) {
	t.Helper()
	clones := map[string]bool{}
	for _, s := range st.Speculations {
		if s.Kind == "clone" && s.AttemptId != "" {
			clones[s.AttemptId] = true
		}
	}
	addr := c.logValue("jobtracker", "jobtracker http serving", "address")
	if addr == "" {
		t.Fatal("no http address in the JobTracker's log")
	}
	cl := http.Client{Timeout: 10 * time.Second}
	resp, err := cl.Get("http://" + addr + "/api/job/timeline?id=" + id)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var tl jobtracker.Timeline
	if err := json.NewDecoder(resp.Body).Decode(&tl); err != nil {
		t.Fatalf("timeline of %s: %v", id, err)
	}
	marked := map[string]bool{}
	for _, b := range tl.Bars {
		if b.Cloned {
			marked[b.Attempt] = true
			if !b.Speculative {
				t.Errorf("timeline bar %s: cloned but not speculative", b.Attempt)
			}
		}
	}
	if len(clones) == 0 || !reflect.DeepEqual(marked, clones) {
		t.Errorf("timeline marks %v as cloned, want the job's clones %v", marked, clones)
	}
	rec := c.history(id)
	fromHistory := map[string]bool{}
	for _, a := range rec.Attempts {
		if a.Cloned {
			fromHistory[a.AttemptID] = true
		}
	}
	if !reflect.DeepEqual(fromHistory, clones) {
		t.Errorf("history marks %v as cloned, want %v", fromHistory, clones)
	}
}
