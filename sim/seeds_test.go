package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"
)

func TestParseSeeds(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []uint64
		err  string
	}{
		{"1-5", []uint64{1, 2, 3, 4, 5}, ""},
		{"7", []uint64{7}, ""},
		{"1,3, 5", []uint64{1, 3, 5}, ""},
		{"1-3,2-4,10", []uint64{1, 2, 3, 4, 10}, ""},
		{"0-0", []uint64{0}, ""},
		{"5-3", nil, "a <= b"},
		{"x", nil, "not a seed"},
		{"1-y", nil, "a <= b"},
		{"", nil, "no seed"},
		{"1-1000000", nil, "more than"},
	} {
		got, err := ParseSeeds(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseSeeds(%q) = %v, %v; want error %q", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ParseSeeds(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
		if back, _ := ParseSeeds(FormatSeeds(got)); !reflect.DeepEqual(back, got) {
			t.Errorf("FormatSeeds(%v) = %q does not parse back", got, FormatSeeds(got))
		}
	}
	if got := FormatSeeds([]uint64{1, 2, 3, 5, 7, 8}); got != "1-3,5,7-8" {
		t.Errorf("FormatSeeds = %q", got)
	}
}

func TestTQuantileAndAggregate(t *testing.T) {
	for _, tc := range []struct {
		df   int
		want float64
	}{{1, 12.706}, {19, 2.093}, {29, 2.045}, {40, 2.021}, {60, 2.000}, {120, 1.980}, {100000, 1.960}} {
		if got := tQuantile975(tc.df); math.Abs(got-tc.want) > 1e-3 {
			t.Errorf("t(0.975, %d) = %.4f, want %.3f", tc.df, got, tc.want)
		}
	}
	a := Aggregate("x", []float64{1, 2, 3, 4, 5})
	// sd = sqrt(2.5), t(4) = 2.7764
	if a.Mean != 3 || a.Min != 1 || a.Max != 5 || a.N != 5 || math.Abs(a.CI95-2.7764*math.Sqrt(2.5)/math.Sqrt(5)) > 1e-9 {
		t.Errorf("Aggregate = %+v", a)
	}
	if one := Aggregate("x", []float64{4}); one.Mean != 4 || one.CI95 != 0 {
		t.Errorf("one seed: %+v", one)
	}
}

// TestRunSeedsMatchesSingleRuns: the parallel multi-seed run gives, per
// seed, exactly what a single run of that seed gives, whatever the
// parallelism.
func TestRunSeedsMatchesSingleRuns(t *testing.T) {
	exp := SeedExperiment{Workload: "tyrex-hvw", Gen: GenOptions{Jobs: 40}, Policies: []string{"fifo", "tyrex-static"},
		Options: Options{Slowstart: -1}, Seeds: []uint64{3, 1, 2}}
	var reps []*SeedReport
	for _, par := range []int{1, 3} {
		exp.Parallel = par
		rep, err := RunSeeds(context.Background(), exp)
		if err != nil {
			t.Fatal(err)
		}
		reps = append(reps, rep)
	}
	if !reflect.DeepEqual(reps[0], reps[1]) {
		t.Fatalf("parallel 1 and 3 differ")
	}
	rep := reps[0]
	if rep.Seeds != "3,1-2" || len(rep.Policies) != 2 {
		t.Fatalf("report %+v", rep)
	}
	for si, seed := range exp.Seeds {
		w, err := Generate("tyrex-hvw", GenOptions{Jobs: 40, Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		r, err := Run(w, Options{Policy: "tyrex-static", Slowstart: -1})
		if err != nil {
			t.Fatal(err)
		}
		ps, _ := rep.Policy("tyrex-static")
		for name, v := range Metrics(r) {
			m, ok := ps.Metric(name)
			if !ok || m.Values[si] != v {
				t.Errorf("seed %d %s: report %v, single run %v", seed, name, m.Values, v)
			}
		}
	}
	if _, err := RunSeeds(context.Background(), SeedExperiment{Workload: "tyrex-hvw", Policies: []string{"nope"}, Seeds: []uint64{1}, Options: Options{Slowstart: -1}}); err == nil {
		t.Error("unknown policy: no error")
	}
}

func TestCommandSeeds(t *testing.T) {
	var out, errOut bytes.Buffer
	args := []string{"--compare", "edf,minedf-wc", "--workload", "deadline-fb", "--jobs", "60", "--seeds", "1-3", "--json"}
	if err := Command(context.Background(), args, &out, &errOut); err != nil {
		t.Fatalf("%v\n%s", err, errOut.String())
	}
	var rep SeedReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	ps, ok := rep.Policy("minedf-wc")
	if !ok || rep.Seeds != "1-3" {
		t.Fatalf("report %+v", rep)
	}
	for _, name := range []string{"slowdown.p95", "deadline.relative_exceeded_pct", "deadline.relative_exceeded_trim1_pct",
		"deadline.overrun_median_pct", "deadline.missed_pct", "deadline.kill_ratio_pct"} {
		if m, ok := ps.Metric(name); !ok || m.N != 3 || len(m.Values) != 3 {
			t.Errorf("metric %s: %+v", name, m)
		}
	}
	out.Reset()
	if err := Command(context.Background(), args[:len(args)-1], &out, &errOut); err != nil {
		t.Fatal(err)
	}
	if s := out.String(); !strings.Contains(s, "seeds 1-3") || !strings.Contains(s, "slowdown.p95") || !strings.Contains(s, " ± ") {
		t.Errorf("table:\n%s", s)
	}
	err := Command(context.Background(), append(args, "--plots", t.TempDir()), &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), "aggregates only") {
		t.Errorf("--seeds with --plots: %v", err)
	}
}

func TestDeadlineRobustMetrics(t *testing.T) {
	r := &Result{MapSlots: 1, ReduceSlots: 1, ExtraMapTasks: 200, KilledMapTasks: 3}
	// 150 jobs with deadlines: 4 missed with overruns 10%, 20%, 30% and
	// 1000%; the top 1% (2 jobs, rounded up) drops 1000% and 30%.
	for i := 0; i < 150; i++ {
		j := JobRecord{ID: string(rune('a'+i%26)) + string(rune('a'+i/26)), Response: 10, Ref: 10, Deadline: 100}
		switch i {
		case 0, 1, 2, 3:
			j.Response = 100 * []float64{1.1, 1.2, 1.3, 11}[i]
		}
		r.Jobs = append(r.Jobs, j)
	}
	r.Summarize()
	d := r.Summary.Deadline
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	if d.MissedJobs != 4 || !near(d.RelativeExceededPct, 1060) || !near(d.RelativeExceededTrim1Pct, 30) ||
		!near(d.OverrunMedianPct, 20) || !near(d.KillRatioPct, 1.5) {
		t.Errorf("deadline stats %+v", d)
	}
}
