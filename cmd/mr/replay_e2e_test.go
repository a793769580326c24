package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"gomr/apps"
	"gomr/jobtracker/jobhistory"
	"gomr/mr"
)

// replayTolerance is how much longer than asked a replay task may be
// recorded: the attempt's start and end in the history are the
// JobTracker's, so they include the child's start (a process exec) and
// the report of its end (a heartbeat, 100 ms here).
const replayTolerance = 1500 * time.Millisecond

// TestE2EReplayJobTimesAndBytes runs one replay job on a real cluster and
// checks, from its job history, that every map and reduce attempt lasted
// what it was asked (never less, at most replayTolerance more), and from
// its counters that the bytes went through the spill and the shuffle.
func TestE2EReplayJobTimesAndBytes(t *testing.T) {
	// An upper bound on wall time: race-built children on a loaded
	// machine overrun it (a 600 ms map took 2.1 s at load 28), and the
	// race detector adds nothing to what it checks.
	skipUnderRace(t, "TestE2EWorkloadReplayOnJobTracker and TestE2EWorkloadCompare (replay jobs)")
	c := startCluster(t, []trackerSpec{{"t1", 3, 2}})
	task := apps.ReplayTask{
		Maps:        []time.Duration{300 * time.Millisecond, 1200 * time.Millisecond, 600 * time.Millisecond},
		Reduces:     []time.Duration{700 * time.Millisecond, 200 * time.Millisecond},
		Shuffles:    []time.Duration{2500 * time.Millisecond, 0},
		InputBytes:  3 << 20,
		OutputBytes: 300_000,
	}
	spec, err := task.Spec("replay-e2e", filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	id := c.submit(spec)
	res := c.wait(id)
	rec := c.history(id)
	if rec.Job.InputBytes != task.InputBytes {
		t.Errorf("history input bytes %d, want %d", rec.Job.InputBytes, task.InputBytes)
	}
	var mapsEnd time.Time
	for _, a := range rec.Attempts {
		if a.TaskType == "m" && a.Finish.After(mapsEnd) {
			mapsEnd = a.Finish
		}
	}
	for _, a := range rec.Attempts {
		if a.State != "SUCCEEDED" {
			t.Errorf("attempt %s ended %s: %s", a.AttemptID, a.State, a.Error)
			continue
		}
		took := a.Finish.Sub(a.Start)
		var want, most time.Duration
		if a.TaskType == "m" {
			want = task.Maps[a.Task]
			most = want
		} else {
			// The reduce phase starts at the end of the sort, which the
			// reduce holds until its shuffle time has passed; the shuffle
			// also waits for the last map, as in the simulator.
			want = task.Shuffles[a.Task] + task.Reduces[a.Task]
			most = max(task.Shuffles[a.Task], mapsEnd.Sub(a.Start)) + task.Reduces[a.Task]
			if a.SortFinish != nil {
				if rp := a.Finish.Sub(*a.SortFinish); rp < task.Reduces[a.Task] {
					t.Errorf("reduce %d: reduce phase %v, asked at least %v", a.Task, rp, task.Reduces[a.Task])
				}
			}
		}
		t.Logf("%s %d: %v (asked %v, at most %v)", a.TaskType, a.Task, took.Round(time.Millisecond), want, most)
		if took < want || took > most+replayTolerance {
			t.Errorf("%s task %d lasted %v in the history, asked %v..%v (tolerance +%v)", a.TaskType, a.Task, took, want, most, replayTolerance)
		}
	}
	if got := res.Counters.Get(apps.ReplayCounterGroup, apps.ReplayMapBytes); got != task.OutputBytes {
		t.Errorf("%s = %d, want %d", apps.ReplayMapBytes, got, task.OutputBytes)
	}
	if got := res.Counters.Get(apps.ReplayCounterGroup, apps.ReplayReduceBytes); got != task.OutputBytes {
		t.Errorf("%s = %d, want %d", apps.ReplayReduceBytes, got, task.OutputBytes)
	}
	if got := res.Counters.Get(mr.TaskCounterGroup, mr.ReduceShuffleBytes); got < task.OutputBytes*9/10 {
		t.Errorf("%s = %d: want at least 90%% of the %d bytes the maps emitted (random values: compression keeps little)", mr.ReduceShuffleBytes, got, task.OutputBytes)
	}
	if got := res.Counters.Get(mr.TaskCounterGroup, mr.MapOutputBytes); got < task.OutputBytes {
		t.Errorf("%s = %d, want at least %d", mr.MapOutputBytes, got, task.OutputBytes)
	}
}

// tinyTrace is a trace of four jobs with sub-second tasks: a wide one,
// two small ones of the same name (the second has a deadline) and a
// map-only one in another pool.
const tinyTrace = `# four jobs, sub-second tasks
{"id":"a","name":"big","submit_s":0,"maps_s":[0.8,0.8,0.8,0.8,0.8],"reduces_s":[0.4],"input_bytes":5000000}
{"id":"b","name":"small","submit_s":0.3,"maps_s":[0.4],"reduces_s":[0.3],"input_bytes":1000000}
{"id":"c","name":"small","submit_s":0.6,"maps_s":[0.4,0.4],"reduces_s":[0.3],"shuffles_s":[0.2],"input_bytes":2000000,"deadline_s":6}
{"id":"d","name":"mid","pool":"p2","priority":1,"submit_s":1.0,"maps_s":[0.6,0.6],"input_bytes":1000000}
`

// TestE2EWorkloadCompare runs mr workload compare on a tiny trace under
// fifo and fair, each on its embedded cluster, and checks that every job
// of both runs succeeded (the histories), the table's columns and rows
// (real and simulated figures side by side) and the output files.
func TestE2EWorkloadCompare(t *testing.T) {
	dir := t.TempDir()
	trace := filepath.Join(dir, "tiny.jsonl")
	if err := os.WriteFile(trace, []byte(tinyTrace), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	start := time.Now()
	got, err := runMREnv(t, 2*time.Minute, nil, "workload", "compare", "--trace", trace, "--policies", "fifo,fair", "--out", out)
	if err != nil {
		t.Fatalf("mr workload compare: %v\n%s", err, got)
	}
	t.Logf("compare took %v:\n%s", time.Since(start).Round(time.Millisecond), got)
	header := regexp.MustCompile(`(?m)^\s*policy\s+fifo\s+fair\s*$`)
	if !header.MatchString(got) {
		t.Errorf("no table header with columns fifo and fair in:\n%s", got)
	}
	if !regexp.MustCompile(`(?m)^\s*jobs\s+4 \(4\)\s+4 \(4\)\s*$`).MatchString(got) {
		t.Errorf("the jobs row does not show 4 real (4 simulated) jobs for both policies:\n%s", got)
	}
	for _, row := range []string{"slowdown mean", "slowdown p95", "response median [s]", "makespan [s]", "missed deadlines [%]", "job response rel. error median/p90", "load average at start/end",
		"same, simulating the recorded durations"} {
		if !regexp.MustCompile(`(?m)^\s*` + regexp.QuoteMeta(row) + `\s+\S+( \(\S+\))?\s+\S+( \(\S+\))?\s*$`).MatchString(got) {
			t.Errorf("row %q missing or without two cells:\n%s", row, got)
		}
	}
	if !strings.Contains(got, "ranking by slowdown mean") || !strings.Contains(got, "ranking by slowdown p95") || !strings.Contains(got, "ranking by missed deadlines") {
		t.Errorf("no ranking line:\n%s", got)
	}
	for _, f := range []string{"table.txt", "metrics.csv", "report.json", "history-fifo-seed1.jsonl", "history-fair-seed1.jsonl",
		"slowdown-cdf-seed1.svg", "slowdown-cdf-seed1.png", "slowdown-vs-size-seed1.svg", "occupancy-seed1.svg",
		"timeline-fifo-seed1.svg", "timeline-fair-seed1.png"} {
		if st, err := os.Stat(filepath.Join(out, f)); err != nil || st.Size() == 0 {
			t.Errorf("output %s: %v (empty or missing)", f, err)
		}
	}
	for _, pol := range []string{"fifo", "fair"} {
		data, err := os.ReadFile(filepath.Join(out, "history-"+pol+"-seed1.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		recs, err := jobhistory.ParseAll(data)
		if err != nil {
			t.Fatal(err)
		}
		names := map[string]int{}
		for _, r := range recs {
			if r.Job.State != "SUCCEEDED" {
				t.Errorf("%s: job %s (%s) ended %s: %s", pol, r.Job.JobID, r.Job.Name, r.Job.State, r.Job.Error)
			}
			names[r.Job.Name]++
		}
		if len(recs) != 4 || names["big"] != 1 || names["small"] != 2 || names["mid"] != 1 {
			t.Errorf("%s: history has %d jobs named %v, want big, small ×2, mid", pol, len(recs), names)
		}
	}
	if !regexp.MustCompile(`(?m)^  real pairs resolved by 90% of the 16 sim draws: \d of \d, \d agree`).MatchString(got) {
		t.Errorf("no line of the pairs the simulator's draws resolve under a ranking:\n%s", got)
	}
	var rep struct {
		ClusterStart string `json:"cluster_start"`
		Runs         []struct {
			Policy   string `json:"policy"`
			RealJobs []struct {
				ID string `json:"id"`
			} `json:"real_jobs"`
		} `json:"runs"`
		Rankings []struct {
			Metric string `json:"metric"`
			Real   string `json:"real"`
		} `json:"rankings"`
	}
	data, err := os.ReadFile(filepath.Join(out, "report.json"))
	if err == nil {
		err = json.Unmarshal(data, &rep)
	}
	if err != nil || len(rep.Runs) != 2 || len(rep.Runs[0].RealJobs) != 4 {
		t.Errorf("report.json: %v, %d runs: want 2 runs of 4 jobs", err, len(rep.Runs))
	}
	if rep.ClusterStart != "registered" || len(rep.Rankings) != 3 || rep.Rankings[1].Metric != "slowdown p95" {
		t.Errorf("report.json: cluster_start %q, rankings %+v: want registered, and the rankings by mean and P95 slowdown and missed deadlines", rep.ClusterStart, rep.Rankings)
	}
	csv, _ := os.ReadFile(filepath.Join(out, "metrics.csv"))
	if !strings.HasPrefix(string(csv), "trace,seed,policy,metric,real,sim\n") {
		t.Errorf("metrics.csv starts %q", string(csv[:min(len(csv), 60)]))
	}
	if !strings.Contains(got, "simulator: heartbeat 300ms with out-of-band heartbeats") || !strings.Contains(got, "real costs median [ms]") ||
		!strings.Contains(got, "task launch drawn per attempt (seed 1)") {
		t.Errorf("the table does not describe the simulator's model (a launch drawn per attempt) or the real run's costs:\n%s", got)
	}
	var conf struct {
		Runs []struct {
			Conf  map[string]string `json:"conf"`
			Model struct {
				Quantiles []float64 `json:"launch_quantiles_ms"`
			} `json:"sim_model"`
			Costs struct {
				Quantiles []float64 `json:"launch_quantiles"`
			} `json:"real_costs"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(data, &conf); err != nil || len(conf.Runs) != 2 {
		t.Fatalf("report.json: %v", err)
	}
	for _, r := range conf.Runs {
		if r.Conf["scheduler.policy"] == "" || r.Conf["mapreduce.tasktracker.heartbeat.interval"] == "" || len(r.Model.Quantiles) != 21 || len(r.Costs.Quantiles) != 21 {
			t.Errorf("report.json run: conf %v, model's launch quantiles %v, measured %v: want the policy, the heartbeat and 21 quantiles each",
				r.Conf, r.Model.Quantiles, r.Costs.Quantiles)
		}
	}

	// --from simulates the saved runs again: the real figures are the
	// same, read back from the report and the histories.
	out2 := filepath.Join(dir, "ideal")
	again, err := runMREnv(t, time.Minute, nil, "workload", "compare", "--from", out, "--ideal-sim", "--out", out2)
	if err != nil {
		t.Fatalf("mr workload compare --from: %v\n%s", err, again)
	}
	if !strings.Contains(again, "simulator: ideal cluster") {
		t.Errorf("--ideal-sim: the table does not say the simulator's cluster is ideal:\n%s", again)
	}
	realOf := func(path string) []string {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var cells []string
		for _, line := range strings.Split(string(data), "\n") {
			if f := strings.Split(line, ","); len(f) == 6 && !strings.Contains(f[3], "rel. error") {
				cells = append(cells, f[2]+" "+f[3]+" "+f[4])
			}
		}
		return cells
	}
	if a, b := realOf(filepath.Join(out, "metrics.csv")), realOf(filepath.Join(out2, "metrics.csv")); strings.Join(a, "\n") != strings.Join(b, "\n") || len(a) < 20 {
		t.Errorf("the real figures read back differ from the run's:\n%v\n%v", a, b)
	}

	// --sim-launch-dist load: each run simulated with the launch
	// distribution of the load it ran under (recorded in the report).
	out3 := filepath.Join(dir, "load")
	byLoad, err := runMREnv(t, time.Minute, nil, "workload", "compare", "--from", out, "--sim-launch-dist", "load", "--out", out3)
	if err != nil {
		t.Fatalf("mr workload compare --from --sim-launch-dist load: %v\n%s", err, byLoad)
	}
	data, err = os.ReadFile(filepath.Join(out3, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var loads struct {
		Runs []struct {
			Load       [2]float64 `json:"load_average"`
			LaunchLoad float64    `json:"sim_launch_load"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(data, &loads); err != nil || len(loads.Runs) != 2 {
		t.Fatalf("report.json of --sim-launch-dist load: %v", err)
	}
	for _, r := range loads.Runs {
		if want := (r.Load[0] + r.Load[1]) / 2; r.Load[0] > 0 && r.Load[1] > 0 && math.Abs(r.LaunchLoad-want) > 1e-9 {
			t.Errorf("run at load %v: launch distribution matched to load %v, want %v", r.Load, r.LaunchLoad, want)
		}
	}
	if !strings.Contains(byLoad, "sim launch median/p90 [ms] (load matched to)") {
		t.Errorf("--sim-launch-dist load: the table has no row of the load-matched launch:\n%s", byLoad)
	}

	// --sim-reduce-launch load: reduces draw their launch (to the reduce
	// phase: launch, fetch, merge) from their own load-matched spread,
	// the shipped one or one fitted with --sim-launch-fit; it needs the
	// load-matched launch.
	samples := func(f string) string { return filepath.Join("..", "..", "sim", "testdata", f) }
	for _, args := range [][]string{nil, {"--sim-launch-fit", samples("launch-load-samples.tsv") + "," + samples("reduce-launch-load-samples.tsv"), "--sim-launch-fit-seeds", "1,2"}} {
		red, err := runMREnv(t, time.Minute, nil, append([]string{"workload", "compare", "--from", out, "--sim-reduce-launch", "load"}, args...)...)
		if err != nil || !strings.Contains(red, "reduce launch (to the reduce phase) drawn from 21 quantiles") {
			t.Errorf("--sim-reduce-launch load %v: %v; the model's line does not name the reduce launch:\n%s", args, err, red)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--sim-reduce-launch", "load", "--sim-launch-dist", "measured"}, "--sim-reduce-launch load needs --sim-launch-dist load"},
		{[]string{"--sim-reduce-launch", "fetch"}, `--sim-reduce-launch "fetch": want map or load`},
		{[]string{"--sim-launch-load-above", "linear"}, `--sim-launch-load-above "linear": want slope or hold`},
		{[]string{"--sim-launch-fit", samples("launch-load-samples.tsv"), "--sim-launch-fit-seeds", "4"}, "fit launch load: no samples"},
	} {
		if bad, err := runMREnv(t, time.Minute, nil, append([]string{"workload", "compare", "--from", out}, tc.args...)...); err == nil || !strings.Contains(bad, tc.want) {
			t.Errorf("%v: %v, want an error saying %q:\n%s", tc.args, err, tc.want, bad)
		}
	}

	// --sim-after-launch: the TaskTracker's follow-up heartbeat after a
	// launch that left a slot free (its rule, the default), or after
	// every launch (its rule before 2026-11-26, for runs made with it).
	every, err := runMREnv(t, time.Minute, nil, "workload", "compare", "--from", out, "--sim-after-launch", "every")
	if err != nil {
		t.Fatalf("mr workload compare --from --sim-after-launch every: %v\n%s", err, every)
	}
	if !strings.Contains(every, "again 50ms after every launch") || !strings.Contains(byLoad, "again 50ms after a launch that left a slot of its type free") {
		t.Errorf("the model's line does not say when the trackers heartbeat after a launch:\n%s\n%s", every, byLoad)
	}
	if bad, err := runMREnv(t, time.Minute, nil, "workload", "compare", "--from", out, "--sim-after-launch", "always"); err == nil || !strings.Contains(bad, `--sim-after-launch "always": want free or every`) {
		t.Errorf("--sim-after-launch always: %v\n%s", err, bad)
	}
}

// TestE2EWorkloadReplayRefusesBadInput: a trace with an unknown field, a
// negative duration or a missing field, or an unknown policy, is refused
// before anything runs, naming the file, the line and the field.
func TestE2EWorkloadReplayRefusesBadInput(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, trace string
		args        []string
		want        string
	}{
		{"unknown field", `{"id":"a","maps_s":[1],"reduce_s":[1]}`, nil, `line 1: json: unknown field "reduce_s"`},
		{"negative", "\n" + `{"id":"a","maps_s":[1,-2]}`, nil, "line 2: job a: maps_s[1] = -2"},
		{"missing", `{"id":"a","submit_s":1}`, nil, "line 1: job a: missing field maps_s"},
		{"policy", `{"id":"a","maps_s":[1]}`, []string{"--policy", "lottery"}, `--policy "lottery": unknown policy`},
		{"unknown app", `{"id":"a","maps_s":[1],"app":"pi","input_bytes":5}`, nil, `line 1: job a: app "pi": not an app a trace may name`},
		{"app arguments", `{"id":"a","maps_s":[1],"app":"grep","input_bytes":5}`, nil, "job a: field app_args: grep: "},
	} {
		path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".jsonl")
		if err := os.WriteFile(path, []byte(tc.trace+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		got, err := runMREnv(t, 30*time.Second, nil, append([]string{"workload", "replay", "--trace", path}, tc.args...)...)
		if err == nil || !strings.Contains(got, tc.want) || (tc.args == nil && !strings.Contains(got, path)) {
			t.Errorf("%s: %v, output %q; want an error naming the file and %q", tc.name, err, got, tc.want)
		}
		if strings.Contains(got, "replay:") || time.Since(start) > 10*time.Second {
			t.Errorf("%s: something ran before the refusal: %q", tc.name, got)
		}
	}
}

// TestE2EWorkloadReplayOnJobTracker replays the tiny trace on a running
// cluster (--jobtracker): every job is submitted with the trace's name,
// pool, priority and deadline, and the history written with
// --history-out is a trace the simulator reads back.
func TestE2EWorkloadReplayOnJobTracker(t *testing.T) {
	c := startCluster(t, []trackerSpec{{"t1", 2, 1}, {"t2", 2, 1}}, "scheduler.policy=fair")
	dir := t.TempDir()
	trace := filepath.Join(dir, "tiny.jsonl")
	if err := os.WriteFile(trace, []byte(tinyTrace), 0o644); err != nil {
		t.Fatal(err)
	}
	hist := filepath.Join(dir, "history.jsonl")
	got, err := runMREnv(t, time.Minute, nil, "workload", "replay", "--trace", trace, "--jobtracker", c.jtAddr, "--history-out", hist)
	if err != nil {
		t.Fatalf("mr workload replay: %v\n%s", err, got)
	}
	if !strings.Contains(got, "4 jobs done") || !regexp.MustCompile(`(?m)^\s*policy\s+fair\s*$`).MatchString(got) ||
		!strings.Contains(got, "policy fair of the JobTracker at "+c.jtAddr) {
		t.Errorf("output lacks the end of the replay, the JobTracker's address or the table of its policy (fair, asked of it):\n%s", got)
	}
	data, err := os.ReadFile(hist)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := jobhistory.ParseAll(data)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string][]jobhistory.Job{}
	for _, r := range recs {
		byName[r.Job.Name] = append(byName[r.Job.Name], r.Job)
	}
	if len(recs) != 4 || len(byName["small"]) != 2 {
		t.Fatalf("history has %d jobs %v, want the trace's 4", len(recs), byName)
	}
	mid := byName["mid"][0]
	if mid.Pool != "p2" || mid.Priority != 1 || mid.Reduces != 0 || mid.Maps != 2 || mid.InputBytes != 1000000 {
		t.Errorf("job mid: pool %q priority %d, %d maps %d reduces, %d input bytes; want p2, 1, 2, 0, 1000000", mid.Pool, mid.Priority, mid.Maps, mid.Reduces, mid.InputBytes)
	}
	deadlines := 0
	for _, j := range byName["small"] {
		if j.Deadline == 6 {
			deadlines++
		}
	}
	if deadlines != 1 {
		t.Errorf("the small jobs' deadlines: %v; want one of 6 s", byName["small"])
	}
	if out, err := runMR(t, "sim", "--policy", "fair", "--workload", hist, "--trackers", "2", "--map-slots", "2", "--reduce-slots", "1"); err != nil || !strings.Contains(out, "jobs") {
		t.Errorf("mr sim on the collected history: %v\n%s", err, out)
	}
}

// TestE2EWorkloadReplayApps replays a trace whose entries run real apps
// (wordcount, and grep's two jobs) beside a synthetic job: each app runs
// on an input of its input_bytes made before the replay, its jobs carry
// the entry's name and pool, and its record in the run's history is its
// jobs together.
func TestE2EWorkloadReplayApps(t *testing.T) {
	dir := t.TempDir()
	trace := filepath.Join(dir, "apps.jsonl")
	const in = `{"id":"wc","name":"count","pool":"p1","submit_s":0,"maps_s":[1],"reduces_s":[1],"input_bytes":200000,"app":"wordcount"}
{"id":"g","name":"find","submit_s":0.2,"maps_s":[1],"reduces_s":[1],"input_bytes":100000,"app":"grep","app_args":["wo+"]}
{"id":"syn","submit_s":0.4,"maps_s":[0.3],"input_bytes":1000}
`
	if err := os.WriteFile(trace, []byte(in), 0o644); err != nil {
		t.Fatal(err)
	}
	hist := filepath.Join(dir, "history.jsonl")
	got, err := runMREnv(t, 2*time.Minute, nil, "workload", "replay", "--trace", trace, "--policy", "fair", "--history-out", hist)
	if err != nil {
		t.Fatalf("mr workload replay: %v\n%s", err, got)
	}
	if !strings.Contains(got, "3 jobs done") {
		t.Errorf("the replay did not end with its 3 jobs done:\n%s", got)
	}
	data, err := os.ReadFile(hist)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := jobhistory.ParseAll(data)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]jobhistory.Record{}
	for _, r := range recs {
		byName[r.Job.Name] = r
		if r.Job.State != "SUCCEEDED" {
			t.Errorf("%s ended %s: %s", r.Job.Name, r.Job.State, r.Job.Error)
		}
	}
	if len(recs) != 3 {
		t.Fatalf("history has %d records, want one per trace entry: %v", len(recs), byName)
	}
	wc := byName["count"]
	if wc.Job.Pool != "p1" || wc.Job.InputBytes < 200000 || wc.Job.InputBytes > 220000 {
		t.Errorf("wordcount entry: pool %q, input %d bytes; want p1 and about 200000 (randomtext's)", wc.Job.Pool, wc.Job.InputBytes)
	}
	// grep is a search job and a sort job: one record with both jobs'
	// attempts, from the search's submission to the sort's end.
	g := byName["find"]
	jobs := map[string]bool{}
	for _, a := range g.Attempts {
		jobs[strings.Join(strings.Split(a.AttemptID, "_")[1:3], "_")] = true
	}
	if len(jobs) != 2 || !g.Job.Finish.After(g.Job.Submit) {
		t.Errorf("grep entry: attempts of %d jobs %v, submit %v finish %v; want its 2 jobs together", len(jobs), jobs, g.Job.Submit, g.Job.Finish)
	}
	if _, ok := byName["syn"]; !ok {
		t.Errorf("no record of the synthetic job: %v", byName)
	}
}
