package replay

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"gomr/conf"
	"gomr/jobtracker"
	"gomr/jobtracker/jobhistory"
	"gomr/sim"
)

// TestMeasureOverheads reads the costs off a hand-made history: maps
// recorded 40 and 60 ms longer than their trace durations, a reduce that
// waited for the maps and started its reduce phase 5 ms after the last
// map's recorded end and ended 10 ms after its trace reduce time, a
// failed attempt that counts for nothing, and a job whose first task
// started 120 ms after its submission and which ended 2 ms after its
// last task.
func TestMeasureOverheads(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	ptr := func(x time.Time) *time.Time { return &x }
	tj := &sim.Job{ID: "a", Maps: []time.Duration{time.Second, 2 * time.Second}, Reduces: []time.Duration{time.Second}}
	h := &jobhistory.Record{Job: jobhistory.Job{Submit: at(0), Finish: at(3577)}, Attempts: []jobhistory.Attempt{
		{TaskType: "m", Task: 0, State: jobtracker.StateSucceeded, Start: at(120), Finish: at(1160)},
		{TaskType: "m", Task: 1, State: jobtracker.StateFailed, Start: at(120), Finish: at(500)},
		{TaskType: "m", Task: 1, State: jobtracker.StateSucceeded, Start: at(500), Finish: at(2560)},
		{TaskType: "r", Task: 0, State: jobtracker.StateSucceeded, Start: at(1160), ShuffleFinish: ptr(at(2564)), SortFinish: ptr(at(2565)), Finish: at(3575)},
	}}
	m := MeasureOverheads(&Run{Jobs: []JobRun{{Trace: tj, History: h}}})
	for _, c := range []struct {
		name string
		got  Spread
		n    int
		med  float64
	}{
		{"map excess", m.MapExcess, 2, 0.040},
		{"reduce report", m.ReduceReport, 1, 0.010},
		{"map events", m.MapEvents, 1, 0.005},
		{"start lag", m.StartLag, 1, 0.120},
		{"end lag", m.EndLag, 1, 0.002},
	} {
		if c.got.N != c.n || math.Abs(c.got.Median-c.med) > 1e-9 {
			t.Errorf("%s: %+v, want n=%d median %v", c.name, c.got, c.n, c.med)
		}
	}
	if math.Abs(m.MapExcess.Max-0.060) > 1e-9 {
		t.Errorf("map excess max %v, want 0.060", m.MapExcess.Max)
	}
	// launch = map excess − the reduce report (10 ms): 30 and 50 ms
	if q := m.LaunchQuantiles; len(q) != sim.LaunchQuantiles || math.Abs(q[0]-0.030) > 1e-9 || math.Abs(q[10]-0.040) > 1e-9 || math.Abs(q[20]-0.050) > 1e-9 {
		t.Errorf("launch quantiles %v, want 30 to 50 ms, median 40", q)
	}
	if d := m.LaunchDist(7); d == nil || d.Seed != 7 || d.Quantiles[0] != 30*time.Millisecond || d.Quantiles[20] != 50*time.Millisecond {
		t.Errorf("launch distribution %+v", d)
	}
	// the recorded workload: the successful attempts' durations, the
	// reduce's phase from its sort end, its shuffle the trace's (it waited
	// for the maps; TestRecordedReduceShuffle has the other cases)
	rw, err := Recorded(&Run{Workload: &sim.Workload{Name: "w"}, Start: at(-10), Jobs: []JobRun{{Trace: tj, History: h}}})
	if err != nil {
		t.Fatal(err)
	}
	ms := func(x int) time.Duration { return time.Duration(x) * time.Millisecond }
	if j := rw.Jobs[0]; j.ID != "a" || j.Submit != ms(10) || !slices.Equal(j.Maps, []time.Duration{ms(1040), ms(2060)}) ||
		!slices.Equal(j.Shuffles, []time.Duration{0}) || !slices.Equal(j.Reduces, []time.Duration{ms(1010)}) {
		t.Errorf("recorded job: %+v", j)
	}
	// a reduce whose shuffle outlasted the maps did not wait for them
	tj.Shuffles = []time.Duration{3 * time.Second}
	if m := MeasureOverheads(&Run{Jobs: []JobRun{{Trace: tj, History: h}}}); m.MapEvents.N != 0 {
		t.Errorf("map events of a reduce that did not wait: %+v", m.MapEvents)
	}
}

// TestMeasureReduceLaunch checks which reduces measure the reduce launch
// (start to sort end, less the trace shuffle): those that started at or
// after their job's last map's recorded end (2,560 ms), not those that
// waited for the maps, nor failed ones.
func TestMeasureReduceLaunch(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	ptr := func(x time.Time) *time.Time { return &x }
	tests := []struct {
		name         string
		traceShuffle time.Duration
		state        string
		start, sort  int // the reduce attempt's, ms
		want         []float64
	}{
		{"started after the maps ended", 0, jobtracker.StateSucceeded, 2600, 2750, []float64{0.150}},
		{"started as the last map ended", 0, jobtracker.StateSucceeded, 2560, 2700, []float64{0.140}},
		{"less its trace shuffle", 100 * time.Millisecond, jobtracker.StateSucceeded, 2600, 2750, []float64{0.050}},
		{"a trace shuffle longer than measured: 0", 200 * time.Millisecond, jobtracker.StateSucceeded, 2600, 2750, []float64{0}},
		{"waited for the maps: not measured", 0, jobtracker.StateSucceeded, 1160, 2565, nil},
		{"failed: not measured", 0, jobtracker.StateFailed, 2600, 2750, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tj := &sim.Job{ID: "a", Maps: []time.Duration{time.Second, 2 * time.Second}, Reduces: []time.Duration{time.Second}, Shuffles: []time.Duration{tc.traceShuffle}}
			h := &jobhistory.Record{Job: jobhistory.Job{Submit: at(0), Finish: at(4000)}, Attempts: []jobhistory.Attempt{
				{TaskType: "m", Task: 0, State: jobtracker.StateSucceeded, Start: at(120), Finish: at(1160)},
				{TaskType: "m", Task: 1, State: jobtracker.StateSucceeded, Start: at(500), Finish: at(2560)},
				{TaskType: "r", Task: 0, State: tc.state, Start: at(tc.start), ShuffleFinish: ptr(at(tc.sort - 1)), SortFinish: ptr(at(tc.sort)), Finish: at(tc.sort + 1010)},
			}}
			m := MeasureOverheads(&Run{Jobs: []JobRun{{Trace: tj, History: h}}})
			if m.ReduceLaunch.N != len(tc.want) {
				t.Fatalf("reduce launch %+v, want %d samples", m.ReduceLaunch, len(tc.want))
			}
			if len(tc.want) == 0 {
				if m.ReduceLaunchQuantiles != nil {
					t.Errorf("quantiles %v of no sample", m.ReduceLaunchQuantiles)
				}
				return
			}
			q := m.ReduceLaunchQuantiles
			if len(q) != sim.LaunchQuantiles || math.Abs(q[0]-tc.want[0]) > 1e-9 || math.Abs(q[20]-tc.want[0]) > 1e-9 {
				t.Errorf("quantiles %v, want all %v", q, tc.want[0])
			}
		})
	}
}

// TestRecordedReduceShuffle checks the shuffle a recorded reduce is
// simulated with: its recorded start to sort end (launch, fetch, merge)
// when it did not wait for its job's maps, the trace's when it did (its
// recorded one then holds the wait). The job's last map ends at 2,560 ms.
func TestRecordedReduceShuffle(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	ms := func(x int) time.Duration { return time.Duration(x) * time.Millisecond }
	ptr := func(x time.Time) *time.Time { return &x }
	tests := []struct {
		name         string
		traceShuffle time.Duration
		start, sort  int // the reduce attempt's, ms
		want         time.Duration
	}{
		{"started after the maps ended: launch and fetch are its own", 0, 2600, 2750, ms(150)},
		{"started as the last map ended", 0, 2560, 2700, ms(140)},
		{"waited for the maps: the trace's shuffle", 0, 1160, 2565, 0},
		{"waited for the maps with a shorter trace shuffle", ms(500), 1160, 2565, ms(500)},
		{"its trace shuffle outlasted the maps: the recorded one", ms(3000), 1160, 4300, ms(3140)},
		{"recorded shorter than the trace's: the trace's", ms(3000), 1160, 4000, ms(3000)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tj := &sim.Job{ID: "a", Maps: []time.Duration{time.Second, 2 * time.Second}, Reduces: []time.Duration{time.Second},
				Shuffles: []time.Duration{tt.traceShuffle}}
			h := &jobhistory.Record{Job: jobhistory.Job{Submit: at(0), Finish: at(tt.sort + 1010)}, Attempts: []jobhistory.Attempt{
				{TaskType: "m", Task: 0, State: jobtracker.StateSucceeded, Start: at(120), Finish: at(1160)},
				{TaskType: "m", Task: 1, State: jobtracker.StateSucceeded, Start: at(500), Finish: at(2560)},
				{TaskType: "r", Task: 0, State: jobtracker.StateSucceeded, Start: at(tt.start), ShuffleFinish: ptr(at(tt.sort)), SortFinish: ptr(at(tt.sort)), Finish: at(tt.sort + 1010)},
			}}
			rw, err := Recorded(&Run{Workload: &sim.Workload{Name: "w"}, Start: t0, Jobs: []JobRun{{Trace: tj, History: h}}})
			if err != nil {
				t.Fatal(err)
			}
			if j := rw.Jobs[0]; !slices.Equal(j.Shuffles, []time.Duration{tt.want}) || !slices.Equal(j.Reduces, []time.Duration{ms(1010)}) {
				t.Errorf("shuffles %v, reduces %v; want [%v] and [1.01s]", j.Shuffles, j.Reduces, tt.want)
			}
		})
	}
}

// TestResimulateRefuses: a folder without a report, a report that is not
// a comparison's, and histories of another trace are refused, naming what.
func TestResimulateRefuses(t *testing.T) {
	dir := t.TempDir()
	o := CompareOptions{Config: func(string, *sim.Workload) (*conf.Config, error) { return nil, errors.New("not reached") }}
	if _, err := Resimulate(dir, o); err == nil || !strings.Contains(err.Error(), "report.json") {
		t.Errorf("no report: %v", err)
	}
	write := func(name, s string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("report.json", `{"trace":"x"}`)
	if _, err := Resimulate(dir, o); err == nil || !strings.Contains(err.Error(), "not a comparison report") {
		t.Errorf("empty report: %v", err)
	}
	trace := filepath.Join(dir, "t.jsonl")
	write("t.jsonl", `{"id":"a","name":"one","maps_s":[1]}`+"\n")
	write("report.json", `{"trace":"`+trace+`","trackers":1,"map_slots_per_tracker":1,"reduce_slots_per_tracker":1,
		"runs":[{"policy":"fifo","seed":1,"real_jobs":[{"id":"a","submit_s":0}]}]}`)
	write("history-fifo-seed1.jsonl", `{"type":"job","job_id":"job_1","name":"other","state":"SUCCEEDED"}`+"\n")
	if _, err := Resimulate(dir, o); err == nil || !strings.Contains(err.Error(), `is "other"`) {
		t.Errorf("history of another trace: %v", err)
	}
}

// TestQuantilesOf checks the evenly spaced quantiles, interpolated
// between order statistics.
func TestQuantilesOf(t *testing.T) {
	tests := []struct {
		name string
		xs   []float64
		n    int
		want []float64
	}{
		{"none", nil, 3, nil},
		{"one quantile is not a distribution", []float64{1}, 1, nil},
		{"one value", []float64{2}, 3, []float64{2, 2, 2}},
		{"unsorted, odd", []float64{3, 1, 2}, 3, []float64{1, 2, 3}},
		{"interpolated", []float64{0, 10}, 5, []float64{0, 2.5, 5, 7.5, 10}},
		{"quartiles of five", []float64{5, 4, 3, 2, 1}, 5, []float64{1, 2, 3, 4, 5}},
	}
	for _, tt := range tests {
		got := quantilesOf(tt.xs, tt.n)
		if len(got) != len(tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
			continue
		}
		for i := range got {
			if math.Abs(got[i]-tt.want[i]) > 1e-12 {
				t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
				break
			}
		}
	}
}

// TestMedianOfDraws: each job's start and finish are the medians over the
// draws, the response and the summary follow.
func TestMedianOfDraws(t *testing.T) {
	draw := func(finA, finB float64) *sim.Result {
		r := &sim.Result{Jobs: []sim.JobRecord{
			{ID: "a", Submit: 0, Start: 0, Finish: finA, Response: finA, Ref: 1},
			{ID: "b", Submit: 1, Start: 1, Finish: finB, Response: finB - 1, Ref: 1, Deadline: 2},
		}}
		r.Summarize()
		return r
	}
	tests := []struct {
		name       string
		draws      []*sim.Result
		wantA      float64
		wantB      float64
		wantMissed int
	}{
		{"one draw", []*sim.Result{draw(2, 3)}, 2, 3, 0},
		{"odd count: the middle one", []*sim.Result{draw(2, 4), draw(5, 2.5), draw(3, 3.5)}, 3, 3.5, 1},
		{"even count: the mean of the middle two", []*sim.Result{draw(2, 2.5), draw(4, 4), draw(3, 3), draw(10, 3.2)}, 3.5, 3.1, 1},
	}
	for _, tt := range tests {
		r := MedianOfDraws(tt.draws)
		a, b := r.Jobs[0], r.Jobs[1]
		if math.Abs(a.Finish-tt.wantA) > 1e-9 || math.Abs(b.Finish-tt.wantB) > 1e-9 || math.Abs(b.Response-(tt.wantB-1)) > 1e-9 {
			t.Errorf("%s: finishes %v, %v (b's response %v), want %v, %v", tt.name, a.Finish, b.Finish, b.Response, tt.wantA, tt.wantB)
		}
		if r.Summary.Deadline == nil || r.Summary.Deadline.MissedJobs != tt.wantMissed {
			t.Errorf("%s: deadline summary %+v, want %d missed", tt.name, r.Summary.Deadline, tt.wantMissed)
		}
	}
	if first := tests[1].draws[0]; first.Jobs[0].Finish != 2 {
		t.Errorf("MedianOfDraws changed its first draw: %+v", first.Jobs[0])
	}
}

// TestRunLoad checks the load a run is matched by: the mean of its start
// and end, the one recorded when the other is not, 0 for none.
func TestRunLoad(t *testing.T) {
	for _, c := range []struct {
		load [2]float64
		want float64
	}{
		{[2]float64{2, 4}, 3},
		{[2]float64{25.65, 32.25}, 28.95},
		{[2]float64{5, 0}, 5},
		{[2]float64{0, 7}, 7},
		{[2]float64{0, 0}, 0},
	} {
		if got := RunLoad(c.load); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("RunLoad(%v) = %v, want %v", c.load, got, c.want)
		}
	}
}

// TestPolicyRunLaunchLoad checks that with a load-matched launch model a
// run is simulated with the distribution of its own load (seeded by its
// seed), and that a run whose load was not recorded keeps the model's
// distribution.
func TestPolicyRunLaunchLoad(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	w := &sim.Workload{Name: "one", Jobs: []sim.Job{{ID: "a", Name: "one", Maps: []time.Duration{300 * time.Millisecond, 300 * time.Millisecond}}}}
	h := &jobhistory.Record{Job: jobhistory.Job{JobID: "job_1", Name: "one", State: jobtracker.StateSucceeded, Submit: at(0), Finish: at(420)}, Attempts: []jobhistory.Attempt{
		{TaskType: "m", Task: 0, State: jobtracker.StateSucceeded, Start: at(10), Finish: at(360)},
		{TaskType: "m", Task: 1, State: jobtracker.StateSucceeded, Start: at(10), Finish: at(410)},
	}}
	run := &Run{Workload: w, Start: t0, Jobs: []JobRun{{Trace: &w.Jobs[0], ID: "job_1", State: jobtracker.StateSucceeded, Submitted: at(0), History: h}}}
	costs := sim.MeasuredOverheads
	costs.LaunchDist = sim.MeasuredLaunchDist()
	o := CompareOptions{Trackers: 1, MapSlots: 2, ReduceSlots: 1, Costs: &costs, LaunchDraws: 4, LaunchLoad: &sim.MeasuredLaunchLoad,
		Config: func(policy string, _ *sim.Workload) (*conf.Config, error) {
			return conf.Default().With(map[string]string{"scheduler.policy": policy}, "test")
		}}
	sp, err := o.simulate("fifo", w, 5)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		load     [2]float64
		matched  float64
		quantile []time.Duration
	}{
		{[2]float64{2, 4}, 3, sim.MeasuredLaunchLoad.Dist(3, 5).Quantiles},
		{[2]float64{30, 20}, 25, sim.MeasuredLaunchLoad.Dist(25, 5).Quantiles},
		{[2]float64{0, 0}, 0, sim.MeasuredLaunchDist().Quantiles},
	} {
		pr, err := o.policyRun("fifo", 5, run, sp, c.load)
		if err != nil {
			t.Fatal(err)
		}
		d := pr.Model.Overheads.LaunchDist
		if pr.Load != c.load || pr.LaunchLoad != c.matched || d == nil || d.Seed != 5 || !slices.Equal(d.Quantiles, c.quantile) {
			t.Errorf("load %v: recorded %v, matched to %v (want %v), distribution %+v, want seed 5 and %v", c.load, pr.Load, pr.LaunchLoad, c.matched, d, c.quantile)
		}
		if pr.Sim == nil || len(pr.Sim.Jobs) != 1 {
			t.Errorf("load %v: no simulated job", c.load)
		}
	}
}

// TestSimulateRecordedPhaseDraws checks the simulation of a run's recorded
// durations: with several draws, each job's start and finish are the
// median over simulations whose trackers' first heartbeats are drawn in
// the period (seeds DrawSeed(seed, k)); with one, a single simulation with
// the heartbeats spread evenly.
func TestSimulateRecordedPhaseDraws(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	w := &sim.Workload{Name: "one", Jobs: []sim.Job{{ID: "a", Name: "one", Submit: 100 * time.Millisecond, Maps: []time.Duration{300 * time.Millisecond}}}}
	h := &jobhistory.Record{Job: jobhistory.Job{JobID: "job_1", Name: "one", State: jobtracker.StateSucceeded, Submit: at(100), Finish: at(560)}, Attempts: []jobhistory.Attempt{
		{TaskType: "m", Task: 0, State: jobtracker.StateSucceeded, Start: at(240), Finish: at(560)},
	}}
	run := &Run{Workload: w, Start: t0, Jobs: []JobRun{{Trace: &w.Jobs[0], ID: "job_1", State: jobtracker.StateSucceeded, Submitted: at(100), History: h}}}
	rw, err := Recorded(run)
	if err != nil {
		t.Fatal(err)
	}
	costs := sim.MeasuredOverheads
	for _, draws := range []int{1, 9} {
		o := CompareOptions{Trackers: 1, MapSlots: 1, ReduceSlots: 1, Costs: &costs, LaunchDraws: draws,
			Config: func(policy string, _ *sim.Workload) (*conf.Config, error) {
				return conf.Default().With(map[string]string{"scheduler.policy": policy}, "test")
			}}
		sp, err := o.simulate("fifo", w, 5)
		if err != nil {
			t.Fatal(err)
		}
		got, err := o.simulateRecorded(sp, rw, 5)
		if err != nil {
			t.Fatal(err)
		}
		m := RecordedModel(sp.model)
		var want float64 // the job's start
		if draws == 1 {
			// one tracker heartbeating at 0, 0.3, ...: the job starts at 0.3
			want = 0.3
		} else {
			var starts []float64
			for k := range draws {
				mk := m
				mk.Overheads.LaunchDist = &sim.LaunchDist{Quantiles: []time.Duration{0, 0}, Seed: DrawSeed(5, k)}
				mk.Overheads.DrawPhases = true
				r, err := Simulate(rw, "fifo", sp.conf, 1, 1, 1, 0.05, mk)
				if err != nil {
					t.Fatal(err)
				}
				starts = append(starts, r.Jobs[0].Start)
			}
			slices.Sort(starts)
			if starts[0] == starts[len(starts)-1] {
				t.Errorf("%d draws all start the job at %v: the phases were not drawn", draws, starts[0])
			}
			want = starts[len(starts)/2]
		}
		if j := got.Jobs[0]; math.Abs(j.Start-want) > 1e-9 || math.Abs(j.Finish-(want+0.32)) > 1e-9 {
			t.Errorf("%d draws: job start %v finish %v, want %v and %v", draws, j.Start, j.Finish, want, want+0.32)
		}
	}
}
