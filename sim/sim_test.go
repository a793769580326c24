package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"
)

func s(x float64) time.Duration { return dur(x) }

func ds(xs ...float64) []time.Duration { return durs(xs) }

func TestAloneRuntime(t *testing.T) {
	tests := []struct {
		name      string
		job       Job
		ms, rs    int
		slowstart float64
		want      float64
	}{
		{"one wave", Job{Maps: ds(10, 20, 5)}, 4, 1, 1, 20},
		{"greedy waves", Job{Maps: ds(10, 10, 10)}, 2, 1, 1, 20},
		{"reduce after maps", Job{Maps: ds(10, 10, 10), Reduces: ds(5)}, 2, 1, 1, 25},
		{"early reduce waits for maps", Job{Maps: ds(10, 10, 10), Reduces: ds(5)}, 2, 1, 0, 25},
		{"shuffle overlaps maps", Job{Maps: ds(10, 10, 10), Reduces: ds(5), Shuffles: ds(30)}, 2, 1, 0, 35},
		{"two reduce waves", Job{Maps: ds(10), Reduces: ds(5, 5, 5)}, 1, 2, 1, 20},
	}
	for _, tt := range tests {
		if got := AloneRuntime(&tt.job, tt.ms, tt.rs, tt.slowstart).Seconds(); math.Abs(got-tt.want) > 1e-9 {
			t.Errorf("%s: AloneRuntime = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func tiny(jobs ...Job) *Workload {
	return &Workload{Name: "tiny", Jobs: jobs, Trackers: 1, MapSlots: 2, ReduceSlots: 1, Slowstart: 1}
}

func byID(r *Result) map[string]JobRecord {
	m := map[string]JobRecord{}
	for _, j := range r.Jobs {
		m[j.ID] = j
	}
	return m
}

// TestEngineFIFOExact checks a hand-made schedule to the second.
func TestEngineFIFOExact(t *testing.T) {
	w := tiny(
		Job{ID: "A", Maps: ds(10, 10, 10), Reduces: ds(5)},
		Job{ID: "B", Submit: s(5), Maps: ds(3)},
	)
	r, err := Run(w, Options{Policy: "fifo", Slowstart: -1})
	if err != nil {
		t.Fatal(err)
	}
	got := byID(r)
	// A: maps 0-10, 0-10, 10-20; reduce 20-25. B waits for A's third map: 10-13.
	want := map[string][3]float64{"A": {0, 25, 25}, "B": {10, 13, 8}}
	for id, w := range want {
		j := got[id]
		if j.Start != w[0] || j.Finish != w[1] || j.Response != w[2] {
			t.Errorf("%s: start %v finish %v response %v, want %v", id, j.Start, j.Finish, j.Response, w)
		}
	}
	if got["A"].Ref != 25 || got["B"].Ref != 3 || math.Abs(got["B"].Slowdown-8.0/3) > 1e-12 {
		t.Errorf("refs %v %v slowdown %v", got["A"].Ref, got["B"].Ref, got["B"].Slowdown)
	}
	if r.Summary.MakespanS != 25 || r.Summary.DrainS != 20 {
		t.Errorf("makespan %v drain %v", r.Summary.MakespanS, r.Summary.DrainS)
	}
	// busy: maps 33 s of 2 slots × 25 s
	if math.Abs(r.Summary.UtilMap-33.0/50) > 1e-12 || math.Abs(r.Summary.UtilReduce-5.0/25) > 1e-12 {
		t.Errorf("utilization %v %v", r.Summary.UtilMap, r.Summary.UtilReduce)
	}
}

func TestEngineSlowstartHoldsReduceSlot(t *testing.T) {
	w := tiny(
		Job{ID: "A", Maps: ds(10, 10, 10), Reduces: ds(5)},
		Job{ID: "B", Submit: s(1), Maps: ds(1), Reduces: ds(1)},
	)
	w.Slowstart = 0
	r, err := Run(w, Options{Policy: "fifo", Slowstart: -1})
	if err != nil {
		t.Fatal(err)
	}
	got := byID(r)
	// A's reduce takes the only reduce slot at 0 and holds it until 25;
	// B's map runs 10-11 but its reduce waits for the slot: 25-26.
	if got["A"].Finish != 25 || got["B"].Finish != 26 {
		t.Errorf("A finish %v, B finish %v; want 25 and 26", got["A"].Finish, got["B"].Finish)
	}
}

func TestEngineHeartbeat(t *testing.T) {
	w := tiny(Job{ID: "A", Submit: s(1), Maps: ds(10)})
	r, err := Run(w, Options{Policy: "fifo", Slowstart: -1, Heartbeat: s(3)})
	if err != nil {
		t.Fatal(err)
	}
	if j := r.Jobs[0]; j.Start != 3 || j.Finish != 13 {
		t.Errorf("with 3 s heartbeats: start %v finish %v, want 3 and 13", j.Start, j.Finish)
	}
}

// TestShortJobBehindLong is the property the issue asks the runtime to
// show: a short job submitted behind a long one finishes first under TYREX
// but not under FIFO.
func TestShortJobBehindLong(t *testing.T) {
	long := Job{ID: "long", Name: "long"}
	for i := 0; i < 40; i++ {
		long.Maps = append(long.Maps, s(30))
	}
	w := &Workload{Name: "two", Trackers: 2, MapSlots: 2, ReduceSlots: 1, Slowstart: 1, Jobs: []Job{
		long, {ID: "short", Submit: s(1), Maps: ds(5)},
	}}
	for _, tc := range []struct {
		policy     string
		conf       map[string]string
		shortFirst bool
	}{
		{"fifo", nil, false},
		{"tyrex-static", map[string]string{"scheduler.tyrex.capacities": "0.5,0.5", "scheduler.tyrex.timers": "60s"}, true},
		{"tyrex-dynamic", map[string]string{"scheduler.tyrex.capacities": "0.5,0.5", "scheduler.tyrex.fallback-timer": "60s"}, true},
		{"fair", nil, true},
		{"fbq", map[string]string{"scheduler.fbq.limits": "60s"}, true},
	} {
		r, err := Run(w, Options{Policy: tc.policy, Conf: tc.conf, Slowstart: -1})
		if err != nil {
			t.Fatal(err)
		}
		got := byID(r)
		if first := got["short"].Finish < got["long"].Finish; first != tc.shortFirst {
			t.Errorf("%s: short finished at %v, long at %v", tc.policy, got["short"].Finish, got["long"].Finish)
		}
	}
}

func TestMinEDFWCKillsInEngine(t *testing.T) {
	// A (loose deadline, quota 1) fills both map slots, one of them spare;
	// J arrives needing one slot that waiting cannot give in time: A's
	// spare map dies, never its quota map.
	a := Job{ID: "A", Maps: ds(100, 100, 100, 100, 100, 100), Deadline: s(100000)}
	j := Job{ID: "J", Submit: s(1), Maps: ds(10, 10), Deadline: s(25)}
	w := tiny(a, j)
	r, err := Run(w, Options{Policy: "minedf-wc", Slowstart: -1, Knowledge: KnowOracle})
	if err != nil {
		t.Fatal(err)
	}
	got := byID(r)
	if r.KilledMapTasks != 1 || got["J"].Finish != 21 || got["J"].Missed {
		t.Errorf("killed %d, J finished %v (missed %v); want 1 kill and 21", r.KilledMapTasks, got["J"].Finish, got["J"].Missed)
	}
	if r.ExtraMapTasks == 0 || r.WastedSlotSeconds != 1 {
		t.Errorf("extra %d wasted %v", r.ExtraMapTasks, r.WastedSlotSeconds)
	}
	// under EDF nothing is killed and J waits for A's maps
	r, err = Run(w, Options{Policy: "edf", Slowstart: -1})
	if err != nil {
		t.Fatal(err)
	}
	if got := byID(r); r.KilledMapTasks != 0 || got["J"].Finish != 110 || !got["J"].Missed {
		t.Errorf("edf: killed %d, J finished %v", r.KilledMapTasks, got["J"].Finish)
	}
}

func TestDeadlineMetrics(t *testing.T) {
	r := &Result{MapSlots: 1, ReduceSlots: 1, ExtraMapTasks: 3, KilledMapTasks: 1, Jobs: []JobRecord{
		{ID: "a", Submit: 0, Finish: 50, Response: 50, Deadline: 100, Slowdown: 1},
		{ID: "b", Submit: 0, Finish: 150, Response: 150, Deadline: 100, Missed: true, Slowdown: 2},
		{ID: "c", Submit: 10, Finish: 110, Response: 100, Deadline: 50, Missed: true, Slowdown: 3},
	}}
	sm := summarize(r, true)
	d := sm.Deadline
	// (150-100)/100 + (100-50)/50 = 1.5 → 150%
	if d.MissedJobs != 2 || math.Abs(d.RelativeExceededPct-150) > 1e-9 || math.Abs(d.MissedPct-200.0/3) > 1e-9 ||
		math.Abs(d.MeanOverrunPct-75) > 1e-9 || d.ExtraMapTasks != 3 || d.KilledMapTasks != 1 {
		t.Errorf("deadline stats %+v", d)
	}
	if sm.Slowdown.Median != 2 || sm.Slowdown.P95 != 3 || sm.Response.Mean != 100 || sm.V95 != 1.5 {
		t.Errorf("summary %+v", sm)
	}
}

func TestPercentile(t *testing.T) {
	xs := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for _, tt := range []struct{ q, want float64 }{{50, 5}, {95, 10}, {10, 1}, {11, 2}, {100, 10}, {0, 1}} {
		if got := Percentile(xs, tt.q); got != tt.want {
			t.Errorf("Percentile(%v) = %v, want %v", tt.q, got, tt.want)
		}
	}
}

func TestGenerateDeterministic(t *testing.T) {
	for _, name := range WorkloadNames() {
		a, err := Generate(name, GenOptions{Seed: 7, Jobs: 40})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := Generate(name, GenOptions{Seed: 7, Jobs: 40})
		c, _ := Generate(name, GenOptions{Seed: 8, Jobs: 40})
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%s: same seed, different workloads", name)
		}
		if reflect.DeepEqual(a.Jobs, c.Jobs) {
			t.Errorf("%s: different seeds, same jobs", name)
		}
		if len(a.Jobs) != 40 {
			t.Errorf("%s: %d jobs", name, len(a.Jobs))
		}
	}
	if _, err := Generate("nope", GenOptions{}); err == nil {
		t.Error("unknown workload accepted")
	}
}

func TestDeadlineFBTableI(t *testing.T) {
	w, err := Generate("deadline-fb", GenOptions{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	count := map[[2]int]int{}
	mapOnly := 0
	for _, j := range w.Jobs {
		count[[2]int{len(j.Maps), len(j.Reduces)}]++
		if len(j.Reduces) == 0 {
			mapOnly++
		}
		tj := AloneRuntime(&j, 64, 64, 1)
		if j.Deadline < tj || j.Deadline > 2*tj {
			t.Fatalf("job %s: deadline %v outside [T_J, 2T_J] with T_J %v", j.ID, j.Deadline, tj)
		}
	}
	for _, b := range fbBins {
		if count[[2]int{b.maps, b.reduces}] != b.jobs {
			t.Errorf("bin %d/%d: %d jobs, want %d", b.maps, b.reduces, count[[2]int{b.maps, b.reduces}], b.jobs)
		}
	}
	if mapOnly != 740 {
		t.Errorf("%d map-only jobs, want 740", mapOnly)
	}
}

func TestRunDeterministic(t *testing.T) {
	w, _ := Generate("tyrex-hvw", GenOptions{Seed: 3, Jobs: 60})
	for _, p := range []string{"fair", "tyrex-dynamic", "minedf-wc"} {
		a, err := Run(w, Options{Policy: p, Slowstart: -1})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := Run(w, Options{Policy: p, Slowstart: -1})
		if !reflect.DeepEqual(a.Jobs, b.Jobs) || a.Summary.Slowdown != b.Summary.Slowdown {
			t.Errorf("%s: two runs differ", p)
		}
	}
}

func TestTraceRoundTripAndErrors(t *testing.T) {
	w, _ := Generate("deadline-testbed", GenOptions{Seed: 2, Jobs: 5})
	var buf bytes.Buffer
	if err := WriteTrace(&buf, w); err != nil {
		t.Fatal(err)
	}
	back, err := ReadTrace(&buf, "rt")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Jobs, w.Jobs) {
		t.Errorf("round trip changed the jobs:\n%+v\n%+v", back.Jobs[0], w.Jobs[0])
	}
	bad := []struct{ in, want string }{
		{`{"id":"a","submit_s":0}`, "line 1: job a: missing field maps_s"},
		{`{"maps_s":[1]}`, "line 1: missing field id"},
		{"\n\n" + `{"id":"a","maps_s":[1],"reduces_s":[2,-3]}`, "line 3: job a: reduces_s[1] = -3"},
		{`{"id":"a","maps_s":[1],"input_bytes":-5}`, "input_bytes -5"},
		{"\n" + `{"id":"a","submit_s":-1,"maps_s":[1]}`, "line 2: job a: submit_s"},
		{`{"id":"a","maps_s":[1],"bogus":1}`, "unknown field"},
		{`{"id":"a","maps_s":[1]}` + "\n" + `{"id":"a","maps_s":[1]}`, "appears twice"},
		{`{"id":"a","maps_s":[1],"reduces_s":[1],"shuffles_s":[1,2]}`, "2 shuffles_s for 1 reduces_s"},
		{`not json`, "line 1"},
		{``, "no jobs"},
	}
	for _, b := range bad {
		_, err := ReadTrace(strings.NewReader(b.in), "bad")
		if err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("ReadTrace(%q): %v, want %q", b.in, err, b.want)
		}
	}
}

func TestHistoryReplay(t *testing.T) {
	t0 := time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC)
	at := func(x float64) time.Time { return t0.Add(s(x)) }
	h := HistoryJob{ID: "job_1", Name: "wc", State: "SUCCEEDED", Submit: at(5), Start: at(6), Finish: at(80), DeadlineSeconds: 120, Maps: 2, Reduces: 2,
		Tasks: []HistoryTask{
			{Type: "map", Index: 0, Attempt: 0, State: "SUCCEEDED", Start: at(6), Finish: at(26)},
			{Type: "map", Index: 1, Attempt: 0, State: "FAILED", Start: at(6), Finish: at(9)},
			{Type: "map", Index: 1, Attempt: 1, State: "SUCCEEDED", Start: at(10), Finish: at(40)},
			// first wave: launched at 20, shuffle until 45 (5 s after the last map), reduce to 60
			{Type: "reduce", Index: 0, Attempt: 0, State: "SUCCEEDED", Start: at(20), ShuffleFinish: at(45), Finish: at(60)},
			// second wave: launched at 60, shuffle 8 s, reduce 12 s
			{Type: "reduce", Index: 1, Attempt: 0, State: "SUCCEEDED", Start: at(60), ShuffleFinish: at(68), Finish: at(80)},
		}}
	other := HistoryJob{ID: "job_0", State: "SUCCEEDED", Submit: at(0), Tasks: []HistoryTask{{Type: "map", State: "SUCCEEDED", Start: at(1), Finish: at(2)}}}
	failed := HistoryJob{ID: "job_2", State: "FAILED", Submit: at(0), Tasks: []HistoryTask{{Type: "map", State: "FAILED"}}}
	var buf bytes.Buffer
	for _, x := range []HistoryJob{h, other, failed} {
		b, _ := json.Marshal(x)
		buf.Write(append(b, '\n'))
	}
	w, err := ReadTrace(&buf, "history")
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Jobs) != 2 || w.Jobs[0].ID != "job_0" {
		t.Fatalf("jobs %+v", w.Jobs)
	}
	j := w.Jobs[1]
	want := Job{ID: "job_1", Name: "wc", Submit: s(5), Maps: ds(20, 30), Reduces: ds(15, 12), Shuffles: ds(25, 8), Deadline: s(120)}
	if !reflect.DeepEqual(j, want) {
		t.Errorf("replayed job %+v, want %+v", j, want)
	}
}

func TestCommandJSONShape(t *testing.T) {
	var out, errOut bytes.Buffer
	dir := t.TempDir()
	svg := filepath.Join(dir, "cdf.svg")
	err := Command(context.Background(), []string{"--policy", "edf", "--compare", "minedf,minedf-wc", "--workload", "deadline-fb",
		"--jobs", "50", "--seed", "4", "--json", "--svg", svg, "--plots", filepath.Join(dir, "plots")}, &out, &errOut)
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut.String())
	}
	var m map[string]any
	if err := json.Unmarshal(out.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	keys := func(x any) []string {
		var ks []string
		for k := range x.(map[string]any) {
			ks = append(ks, k)
		}
		sort.Strings(ks)
		return ks
	}
	if got := strings.Join(keys(m), ","); got != "policies,seed,workload" {
		t.Errorf("top keys %s", got)
	}
	ps := m["policies"].([]any)
	if len(ps) != 3 || ps[0].(map[string]any)["policy"] != "edf" {
		t.Fatalf("policies %v", ps)
	}
	p0 := ps[0].(map[string]any)
	if got := strings.Join(keys(p0), ","); got != "deadline,jobs,makespan_s,policy,response_s,slowdown" {
		t.Errorf("policy keys %s", got)
	}
	if got := strings.Join(keys(p0["slowdown"]), ","); got != "mean,median,p95,p99" {
		t.Errorf("slowdown keys %s", got)
	}
	if got := strings.Join(keys(p0["response_s"]), ","); got != "mean,median,p95" {
		t.Errorf("response keys %s", got)
	}
	if got := strings.Join(keys(p0["deadline"]), ","); got != "extra_map_tasks,killed_map_tasks,missed_pct,relative_exceeded_pct" {
		t.Errorf("deadline keys %s", got)
	}
	b, err := os.ReadFile(svg)
	if err != nil || !bytes.Contains(b, []byte("<svg")) || !bytes.Contains(b, []byte("<path")) || !bytes.Contains(b, []byte("minedf-wc")) {
		t.Errorf("svg: %v %.200s", err, b)
	}
	for _, f := range []string{"slowdown-cdf.svg", "slowdown-cdf.png", "slowdown-vs-size.svg", "slowdown-vs-size.png"} {
		if st, err := os.Stat(filepath.Join(dir, "plots", f)); err != nil || st.Size() == 0 {
			t.Errorf("--plots: %s: %v", f, err)
		}
	}
	// no deadline object without deadlines
	out.Reset()
	if err := Command(context.Background(), []string{"--policy", "fifo", "--workload", "tyrex-lvw", "--jobs", "20", "--json"}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "deadline") {
		t.Errorf("deadline object without deadlines: %s", out.String())
	}
}

func TestCommandErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--workload", "tyrex-hvw"}, "name a policy"},
		{[]string{"--policy", "fifo"}, "name a workload"},
		{[]string{"--policy", "nope", "--workload", "tyrex-hvw", "--jobs", "5"}, "unknown scheduler policy"},
		{[]string{"--policy", "fifo", "--workload", "/no/such/file"}, "neither built-in"},
		{[]string{"--policy", "fifo", "--workload", "tyrex-hvw", "--set", "x"}, "want key=value"},
		{[]string{"--policy", "fifo", "--workload", "tyrex-hvw", "--jobs", "5", "--set", "scheduler.fair.weight=huge"}, "scheduler.fair.weight"},
		{[]string{"--policy", "fifo", "--workload", "tyrex-hvw", "--bogus"}, "unknown flag"},
	} {
		var out, errOut bytes.Buffer
		err := Command(context.Background(), tc.args, &out, &errOut)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.args, err, tc.want)
		}
	}
}

func TestCommandTable(t *testing.T) {
	var out, errOut bytes.Buffer
	dir := t.TempDir()
	trace := filepath.Join(dir, "w.jsonl")
	if err := Command(context.Background(), []string{"--compare", "fifo,tyrex-static", "--workload", "tyrex-hvw", "--jobs", "30",
		"--write-trace", trace, "--jobs-out", filepath.Join(dir, "jobs.jsonl")}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "slowdown p95") || !strings.Contains(out.String(), "tyrex-static") {
		t.Errorf("table:\n%s", out.String())
	}
	// the written trace replays to the same numbers
	first := out.String()
	out.Reset()
	if err := Command(context.Background(), []string{"--compare", "fifo,tyrex-static", "--workload", trace,
		"--trackers", "20", "--map-slots", "6", "--reduce-slots", "2", "--set", "scheduler.tyrex.timers=60s"}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	tail := func(s string) string { return s[strings.Index(s, "policy"):] }
	if tail(first) != tail(out.String()) {
		t.Errorf("trace replay differs:\n%s\n%s", first, out.String())
	}
}

// The oracle size predictor gets only what a job is told at submission:
// without --knowledge oracle, mr sim says what that means.
func TestCommandOraclePredictorNote(t *testing.T) {
	for _, tc := range []struct {
		knowledge string
		note      bool
	}{{"", true}, {"history", true}, {"oracle", false}} {
		args := []string{"--policy", "sita", "--workload", "thesis-fb", "--jobs", "20", "--set", "scheduler.sita.predictor=oracle"}
		if tc.knowledge != "" {
			args = append(args, "--knowledge", tc.knowledge)
		}
		var out, errOut bytes.Buffer
		if err := Command(context.Background(), args, &out, &errOut); err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(errOut.String(), "scheduler.sita.predictor=oracle predicts"); got != tc.note {
			t.Errorf("--knowledge %q: note printed %v, want %v:\n%s", tc.knowledge, got, tc.note, errOut.String())
		}
	}
}

// --split-safe (default true) lets the split mechanism split; without it
// every victim is killed.
func TestCommandSplitSafe(t *testing.T) {
	trace := filepath.Join(t.TempDir(), "prio.jsonl")
	if err := os.WriteFile(trace, []byte(`{"id":"low","priority":0,"submit_s":0,"maps_s":[600]}
{"id":"high","priority":5,"submit_s":100,"maps_s":[60]}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		flag string
		want string
	}{{"--split-safe=true", "0/0/1/0"}, {"--split-safe=false", "1/0/0/0"}} {
		var out, errOut bytes.Buffer
		if err := Command(context.Background(), []string{"--policy", "fifo", "--workload", trace, "--trackers", "1", "--map-slots", "1",
			"--reduce-slots", "1", "--set", "scheduler.fifo.preemption=true", "--preemption", "split", tc.flag}, &out, &errOut); err != nil {
			t.Fatal(err)
		}
		if !regexp.MustCompile(`preempted: kill/checkpoint/split/wait\s+` + tc.want).MatchString(out.String()) {
			t.Errorf("%s: want kill/checkpoint/split/wait %s:\n%s", tc.flag, tc.want, out.String())
		}
	}
}

// --scale-up splits a long map for idle map slots and prints the splits;
// without it the table has no scale-up row.
func TestCommandScaleUp(t *testing.T) {
	trace := filepath.Join(t.TempDir(), "long.jsonl")
	if err := os.WriteFile(trace, []byte(`{"id":"long","submit_s":0,"maps_s":[600],"reduces_s":[10],"shuffles_s":[0]}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		flag string
		want string
	}{{"--scale-up", `scale-up splits / maps added\s+[1-9]\d*/[1-9]`}, {"--scale-up=false", ""}} {
		var out, errOut bytes.Buffer
		if err := Command(context.Background(), []string{"--policy", "fifo", "--workload", trace, "--trackers", "2", "--map-slots", "2",
			"--reduce-slots", "1", "--heartbeat", "1s", tc.flag}, &out, &errOut); err != nil {
			t.Fatal(err)
		}
		row := strings.Contains(out.String(), "scale-up splits")
		if tc.want == "" && row || tc.want != "" && !regexp.MustCompile(tc.want).MatchString(out.String()) {
			t.Errorf("%s: want %q:\n%s", tc.flag, tc.want, out.String())
		}
	}
}
