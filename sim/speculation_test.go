package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"gomr/partitions"
	"gomr/speculator"
)

// stragglerConf returns straggler keys under which, of the first attempts
// of maps 0..maps-1 of each job (workload positions 0..jobs-1), exactly
// one per job is slowed, by exactly k (shape 0 and a large location make
// every draw exp(10), which max-factor cuts to k), and the slowed map of
// each job. The draw is the real injector's: the test searches its seed.
func stragglerConf(t *testing.T, jobs, maps int, k float64) (map[string]string, []int) {
	return stragglerConfScope(t, jobs, maps, k, "attempt")
}

// stragglerConfScope is stragglerConf for straggler scope attempt or task.
func stragglerConfScope(t *testing.T, jobs, maps int, k float64, scope string) (map[string]string, []int) {
	t.Helper()
	for seed := int64(1); seed < 10000; seed++ {
		st := speculator.Stragglers{Fraction: 0.1, Shape: 0, Location: 10, MaxFactor: k, Seed: seed, ByTask: scope == "task"}
		var slowed []int
		ok := true
		for j := 0; j < jobs && ok; j++ {
			n := 0
			for m := 0; m < maps; m++ {
				f := st.Factor(attemptID(j, partitions.Map, m, 0), "", false)
				if f != 0 && f != k {
					t.Fatalf("seed %d: factor %v, want 0 or %v", seed, f, k)
				}
				if f == k {
					n++
					slowed = append(slowed, m)
				}
			}
			ok = n == 1
		}
		if ok {
			return map[string]string{
				speculator.KeyStragglerFraction: "0.1", speculator.KeyStragglerShape: "0",
				speculator.KeyStragglerLocation: "10", speculator.KeyStragglerMaxFactor: strconv.FormatFloat(k, 'g', -1, 64),
				speculator.KeyStragglerSeed: strconv.FormatInt(seed, 10), speculator.KeyStragglerScope: scope,
			}, slowed
		}
	}
	t.Fatal("no straggler seed found")
	return nil, nil
}

func repeat(x float64, n int) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = s(x)
	}
	return out
}

// oneJob is a job of ten equal maps on two trackers of ten map slots:
// FIFO puts all ten maps on tracker_0, leaving tracker_1 free for a fresh
// speculative attempt and tracker_0's freed slots for a clone.
func oneJob(mapS float64) *Workload {
	return &Workload{Name: "one", Jobs: []Job{{ID: "J", Maps: repeat(mapS, 10)}}, Trackers: 2, MapSlots: 10, ReduceSlots: 1, Slowstart: 1}
}

// TestSpeculationOneStraggler checks the three modes to the nanosecond on
// a job of ten maps, one of them slowed by k. Clone cost with the default
// model: a 200 MB image, t_vm = 140 ms, B = 0.95 GB/s, so dump + restore =
// 0.14 + 0.2/0.95 = 0.350526316 s, the dump (original frozen) half of it,
// 0.175263158 s; the speculator's estimate is β = 1.2 times that,
// 0.420631579 s. Scans run every second from t = 1 s (retry-after-no-
// speculate), and the speculator sees exact progress: a slowed map of
// 60 s × (1+k) at time t has progress t / (60(1+k)).
func TestSpeculationOneStraggler(t *testing.T) {
	const cost = 0.350526316
	tests := []struct {
		name    string
		mapS, k float64
		mode    string
		imageMB float64
		want    float64 // job response, seconds
		stats   SpecStats
	}{
		// 60 s maps, k = 3: the straggler runs 240 s.
		{"none", 60, 3, SpecNone, 0, 240, SpecStats{}},
		// At t = 60 the nine others are done (mean 60 s); the straggler is
		// at p = 0.25, estimated end 240 > fresh end 120: a fresh attempt
		// on tracker_1 from 60 to 120 wins, the original is killed.
		{"fresh", 60, 3, SpecFresh, 0, 120, SpecStats{Mode: SpecFresh, FreshAttempts: 1, Wins: 1, Killed: 1}},
		// Clone: estimated end 60 + 0.42 + 0.75 × 60 = 105.42 < 120, so a
		// clone on tracker_0 at 60 with p0 = 0.25: it runs from 60.3505
		// for 0.75 × 60 = 45 s, ending at 105.350526316 (the original,
		// frozen 0.175 s, would end at 240.175).
		{"clone", 60, 3, SpecClone, 0, 60 + cost + 45, SpecStats{Mode: SpecClone, Clones: 1, Wins: 1, CloneWins: 1, Killed: 1}},
		// A 60 GB image: estimated clone cost 1.2 × (0.14 + 60/0.95) =
		// 75.96 s, so the clone would end at 180.96 > 120: fresh instead.
		{"clone too big", 60, 3, SpecClone, 60000, 120, SpecStats{Mode: SpecClone, FreshAttempts: 1, Wins: 1, Killed: 1}},
		// A tiny task: 0.3 s maps, k = 20, the straggler runs 6.3 s. The
		// first scan, at t = 1, sees p = 1/6.3 = 0.159 and a mean of 0.3 s:
		// a clone would end at 1 + 0.42 + 0.841 × 0.3 = 1.67, later than a
		// fresh attempt at 1.3, since the clone cost exceeds the mean.
		{"tiny none", 0.3, 20, SpecNone, 0, 6.3, SpecStats{}},
		{"tiny clone", 0.3, 20, SpecClone, 0, 1.3, SpecStats{Mode: SpecClone, FreshAttempts: 1, Wins: 1, Killed: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conf, _ := stragglerConf(t, 1, 10, tt.k)
			opt := Options{Policy: "fifo", Slowstart: -1, Conf: conf, Speculation: Speculation{Mode: tt.mode}}
			if tt.imageMB > 0 {
				opt.Speculation.Clone.ImageBytes[partitions.Map] = int64(tt.imageMB * 1e6)
			}
			r, err := Run(oneJob(tt.mapS), opt)
			if err != nil {
				t.Fatal(err)
			}
			if got := r.Jobs[0].Response; math.Abs(got-tt.want) > 1e-9 {
				t.Errorf("response %.9f s, want %.9f", got, tt.want)
			}
			var got SpecStats
			if r.Speculation != nil {
				got = *r.Speculation
				got.EstTVM, got.EstImageBps, got.EstCopyBps, got.EstSamples = 0, 0, 0, 0
				if got.FreshDropped+got.CloneDropped != 0 {
					t.Errorf("dropped %+v: every decision had a free slot", got)
				}
				got.FreshDropped, got.CloneDropped = 0, 0
				if got.FreshWait+got.CloneWait != 0 {
					t.Errorf("waits %v/%v: every decision had a free slot at once", got.FreshWait, got.CloneWait)
				}
				got.FreshWait, got.CloneWait = 0, 0
			}
			if got != tt.stats {
				t.Errorf("speculation %+v, want %+v", got, tt.stats)
			}
			j := r.Jobs[0]
			if j.SpecFresh != int(tt.stats.FreshAttempts) || j.SpecClones != int(tt.stats.Clones) || j.SpecWins != int(tt.stats.Wins) {
				t.Errorf("job record fresh %d clones %d wins %d, want %+v", j.SpecFresh, j.SpecClones, j.SpecWins, tt.stats)
			}
		})
	}
}

// TestCloneFreezesOriginal checks the freeze when the clone loses. Maps of
// 60 s, k = 0.5 (90 s), task scope with straggler.speculative: the clone,
// attempt 1 of the slowed task, is slowed alike. At t = 60, p = 2/3: the
// original's estimated end is 90, earlier than a fresh attempt (120), but
// a clone is estimated to end at 60 + 0.42 + 20 = 80.42. The clone runs
// 20 s × 1.5 = 30 s from 60.350526316, to 90.350526316; the original,
// frozen for the 0.175263158 s dump, ends at 90.175263158 and wins.
func TestCloneFreezesOriginal(t *testing.T) {
	conf, _ := stragglerConfScope(t, 1, 10, 0.5, "task")
	conf[speculator.KeyStragglerSpeculative] = "true"
	// Task scope: the clone, attempt 1 of the slowed task, is speculative
	// and now slowed alike (k = 0.5): it runs 20 × 1.5 = 30 s from
	// 60.350526316, ending at 90.350526316; the original, frozen for the
	// dump, ends at 90.175263158 and wins.
	st, _ := speculator.StragglersFromConfig(confMap(conf))
	slowedTasks := 0
	for m := 0; m < 10; m++ {
		if st.Factor(attemptID(0, partitions.Map, m, 0), "", false) > 0 {
			slowedTasks++
			if k := st.Factor(attemptID(0, partitions.Map, m, 1), "", true); k != 0.5 {
				t.Fatalf("task scope: the clone of map %d gets k = %v, want 0.5", m, k)
			}
		}
	}
	if slowedTasks != 1 {
		t.Fatalf("task scope slows %d maps, want 1 (same draw as attempt scope)", slowedTasks)
	}
	r, err := Run(oneJob(60), Options{Policy: "fifo", Slowstart: -1, Conf: conf, Speculation: Speculation{Mode: SpecClone}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := r.Jobs[0].Response, 90.175263158; math.Abs(got-want) > 1e-9 {
		t.Errorf("response %.9f s, want %.9f (the frozen original)", got, want)
	}
	if s := r.Speculation; s.Clones != 1 || s.Wins != 0 || s.Killed != 1 {
		t.Errorf("speculation %+v, want one clone that lost", *s)
	}
}

// TestNoStragglerNoChange: with equal task durations nothing straggles,
// so speculation on changes nothing: the same job records (speculation
// counts zero), the same offers.
func TestNoStragglerNoChange(t *testing.T) {
	var jobs []Job
	for i := 0; i < 4; i++ {
		jobs = append(jobs, Job{ID: "J" + strconv.Itoa(i), Submit: s(float64(40 * i)), Maps: repeat(30, 12), Reduces: repeat(20, 5)})
	}
	w := &Workload{Name: "flat", Jobs: jobs, Trackers: 2, MapSlots: 4, ReduceSlots: 2, Slowstart: 0.05}
	for _, p := range []string{"fifo", "fair", "tyrex-dynamic"} {
		base, err := Run(w, Options{Policy: p, Slowstart: -1})
		if err != nil {
			t.Fatal(err)
		}
		for _, mode := range []string{SpecFresh, SpecClone} {
			r, err := Run(w, Options{Policy: p, Slowstart: -1, Speculation: Speculation{Mode: mode}})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(r.Jobs, base.Jobs) || r.Summary.MakespanS != base.Summary.MakespanS || r.Offers != base.Offers {
				t.Errorf("%s/%s differs from none:\n%+v\n%+v", p, mode, r.Jobs[0], base.Jobs[0])
			}
			if st := r.Speculation; st.FreshAttempts+st.Clones+st.Killed != 0 {
				t.Errorf("%s/%s: speculation %+v without a straggler", p, mode, *st)
			}
		}
	}
}

// TestSpeculationDeterministic: the same seeds give the same run; another
// straggler seed slows other attempts.
func TestSpeculationDeterministic(t *testing.T) {
	w, err := Generate("terasort", GenOptions{Seed: 5, Jobs: 4})
	if err != nil {
		t.Fatal(err)
	}
	conf := map[string]string{speculator.KeyStragglerFraction: "0.1", speculator.KeyStragglerSeed: "7"}
	run := func(mode string, conf map[string]string) *Result {
		t.Helper()
		r, err := Run(w, Options{Policy: "fifo", Slowstart: -1, Conf: conf, Speculation: Speculation{Mode: mode}})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	for _, mode := range SpeculationModes() {
		a, b := run(mode, conf), run(mode, conf)
		if !reflect.DeepEqual(a.Jobs, b.Jobs) || !reflect.DeepEqual(a.Speculation, b.Speculation) {
			t.Errorf("%s: two runs differ", mode)
		}
	}
	a := run(SpecClone, conf)
	if a.Speculation.Clones == 0 {
		t.Errorf("no clone at fraction 0.1: %+v", *a.Speculation)
	}
	other := map[string]string{speculator.KeyStragglerFraction: "0.1", speculator.KeyStragglerSeed: "8"}
	if c := run(SpecClone, other); reflect.DeepEqual(a.Jobs, c.Jobs) {
		t.Error("another straggler seed gave the same run")
	}
}

// TestCloneCostLearnt: with a prior t_vm of 2 s against a true 140 ms,
// the speculator's clone-cost inputs after the run are exactly those of
// an estimator fed the run's clones, and have left the prior. Only maps
// are speculated, so every clone measured the same: a 200 MB image, dump
// and restore 0.175263158 s each.
func TestCloneCostLearnt(t *testing.T) {
	w, _ := Generate("terasort", GenOptions{Seed: 5, Jobs: 4})
	conf := map[string]string{speculator.KeyStragglerFraction: "0.1", speculator.KeyTVM: "2s", speculator.KeyReduceSpeculative: "false"}
	r, err := Run(w, Options{Policy: "fifo", Slowstart: -1, Conf: conf, Speculation: Speculation{Mode: SpecClone}})
	if err != nil {
		t.Fatal(err)
	}
	st := r.Speculation
	if st.Clones < 2 {
		t.Fatalf("only %d clones", st.Clones)
	}
	p, err := speculator.FromConfig(confMap(conf))
	if err != nil {
		t.Fatal(err)
	}
	est := speculator.NewEstimator(p.Estimator)
	m := speculator.CloneMeasurement{ImageBytes: 200e6, Dump: 175263158, Restore: 175263158}
	for i := int64(0); i < st.Clones; i++ {
		if err := est.Observe(m); err != nil {
			t.Fatal(err)
		}
	}
	tvm, imgBps, copyBps, n := est.Inputs()
	if st.EstTVM != tvm || st.EstImageBps != imgBps || st.EstCopyBps != copyBps || st.EstSamples != n {
		t.Errorf("estimate t_vm %v B %v B_copy %v from %d clones, want %v %v %v from %d",
			st.EstTVM, st.EstImageBps, st.EstCopyBps, st.EstSamples, tvm, imgBps, copyBps, n)
	}
	if st.EstTVM >= 2*time.Second {
		t.Errorf("t_vm estimate %v did not move from the 2 s prior", st.EstTVM)
	}
}

func TestAttemptIDTaskScope(t *testing.T) {
	if got, want := attemptID(0, partitions.Reduce, 3, 1), "attempt_sim_0001_r_000003_1"; got != want {
		t.Errorf("attemptID = %q, want %q", got, want)
	}
	st := speculator.Stragglers{Fraction: 1, ByTask: true, Shape: 2, MaxFactor: 50, Seed: 3, Speculative: true}
	for task := 0; task < 20; task++ {
		a := st.Factor(attemptID(4, partitions.Map, task, 0), "tracker_0", false)
		b := st.Factor(attemptID(4, partitions.Map, task, 2), "tracker_1", false)
		if a != b || a == 0 {
			t.Errorf("task scope: attempts 0 and 2 of map %d get %v and %v", task, a, b)
		}
	}
}

func TestCompareSpeculationCommand(t *testing.T) {
	var out, errOut bytes.Buffer
	err := Command(context.Background(), []string{"--policy", "fifo", "--workload", "terasort", "--jobs", "3", "--json",
		"--compare-speculation", "--straggler-fraction", "0.1", "--straggler-seed", "7", "--straggler-shape", "2",
		"--set", "speculation.clone.beta=1.5", "--clone-image-mb-reduce", "800"}, &out, &errOut)
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut.String())
	}
	var rep struct {
		Policies []map[string]json.RawMessage `json:"policies"`
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Policies) != 3 {
		t.Fatalf("%d results, want none, fresh and clone", len(rep.Policies))
	}
	if _, ok := rep.Policies[0]["speculation"]; ok {
		t.Errorf("mode none has a speculation object: %s", rep.Policies[0]["speculation"])
	}
	for i, mode := range []string{SpecFresh, SpecClone} {
		raw := rep.Policies[i+1]["speculation"]
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatalf("%s: speculation %s: %v", mode, raw, err)
		}
		var keys []string
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		if got := strings.Join(keys, ","); got != "clone_wins,clones,fresh_attempts,killed,mode,wins" {
			t.Errorf("%s: speculation keys %s", mode, got)
		}
		if m["mode"] != mode {
			t.Errorf("mode %v, want %s", m["mode"], mode)
		}
	}
	// the table shows the modes side by side
	out.Reset()
	if err := Command(context.Background(), []string{"--policy", "fifo", "--workload", "terasort", "--jobs", "3",
		"--compare-speculation", "--straggler-fraction", "0.1"}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"speculation", "none", "fresh", "clone", "response mean / none's", "clone wins"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
}

func TestSpeculationCommandErrors(t *testing.T) {
	base := []string{"--policy", "fifo", "--workload", "terasort", "--jobs", "2"}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--speculation", "maybe"}, `--speculation "maybe"`},
		{[]string{"--straggler-scope", "rack"}, "straggler.scope"},
		{[]string{"--straggler-fraction", "2"}, "straggler.fraction"},
		{[]string{"--speculation", "clone", "--set", "speculation.clone.beta=x"}, "speculation.clone.beta"},
		{[]string{"--speculation", "fresh", "--set", "mapreduce.job.speculative.retry-after-no-speculate=0"}, "must be positive"},
		{[]string{"--clone-image-mb-map", "0"}, "--clone-image-mb-map"},
		{[]string{"--clone-dump-share", "1.5"}, "--clone-dump-share"},
	} {
		var out, errOut bytes.Buffer
		err := Command(context.Background(), append(append([]string{}, base...), tc.args...), &out, &errOut)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.args, err, tc.want)
		}
	}
}
