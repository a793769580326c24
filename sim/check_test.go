package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBuiltinClaims: the claims file parses, names built-in workloads and
// policies, and every claim's metric is one that Metrics reports.
func TestBuiltinClaims(t *testing.T) {
	claims, err := LoadClaims("")
	if err != nil {
		t.Fatal(err)
	}
	if len(claims) < 40 {
		t.Fatalf("%d claims", len(claims))
	}
	known := map[string]bool{"deadline.relative_exceeded_pct": true, "deadline.relative_exceeded_trim1_pct": true,
		"deadline.missed_pct": true, "deadline.kill_ratio_pct": true, "deadline.completion_mean": true, "queue.q1.finished": true, "queue.q1.work": true,
		"timer.median": true, "v95": true}
	w, _ := Generate("tyrex-hvw", GenOptions{Jobs: 5, Seed: 1})
	r, err := Run(w, Options{Policy: "fifo", Slowstart: -1})
	if err != nil {
		t.Fatal(err)
	}
	for k := range Metrics(r) {
		known[k] = true
	}
	for _, c := range claims {
		if !contains(WorkloadNames(), c.Workload) {
			t.Errorf("%s: workload %q", c.ID, c.Workload)
		}
		if !known[c.Metric] {
			t.Errorf("%s: metric %q", c.ID, c.Metric)
		}
		if c.Source == "" || c.Says == "" {
			t.Errorf("%s: no source or statement", c.ID)
		}
	}
	if got := FilterClaims(claims, "c4.hvw.,dl.tb."); len(got) == 0 || !strings.HasPrefix(got[0].ID, "c4.hvw.") {
		t.Errorf("filter: %v", got)
	}
}

func TestParseClaimsErrors(t *testing.T) {
	head := "id\tsource\tworkload\tflags\tpolicy\tmetric\top\trhs\ttolerance\tsays\n"
	for _, tc := range []struct{ line, want string }{
		{"a\ts\ttyrex-hvw\t\tfifo\tv95\t=\t2\t0\tx", "op"},
		{"a\ts\ttyrex-hvw\t\tfifo\tv95\t<\t2\t-1\tx", "tolerance"},
		{"a\ts\ttyrex-hvw\t--nope\tfifo\tv95\t<\t2\t0\tx", "flags"},
		{"a\ts\ttyrex-hvw\t\tfifo\tv95\tin\t3..2\t0\tx", "lo..hi"},
		{"a\ts\ttyrex-hvw\t\tfifo\tv95", "10"},
		{"a\ts\ttyrex-hvw\t\tfifo\tv95\t<\t2\t0\tx\na\ts\ttyrex-hvw\t\tfifo\tv95\t<\t2\t0\tx", "twice"},
		{"a\ts\ttyrex-hvw\t\tfifo\tv95\tpaired>\t2\t0\tx", "policy rhs"},
		{"a\ts\ttyrex-hvw\t\tfifo|fair\tv95\tpaired<\tsita\t0\tx", "one policy"},
	} {
		if _, err := ParseClaims(strings.NewReader(head + tc.line + "\n")); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.line, err, tc.want)
		}
	}
}

// TestEvaluateClaim: the comparisons, the better of alternatives, policy
// bounds, tolerance, ranges, margins and per-seed counts.
func TestEvaluateClaim(t *testing.T) {
	rep := &SeedReport{Policies: []PolicySeedStats{
		{Policy: "a", Metrics: []MetricAgg{Aggregate("m", []float64{1, 3})}},   // mean 2
		{Policy: "b", Metrics: []MetricAgg{Aggregate("m", []float64{4, 4})}},   // mean 4
		{Policy: "c", Metrics: []MetricAgg{Aggregate("m", []float64{10, 10})}}, // mean 10
	}}
	for _, tc := range []struct {
		policy, op, rhs string
		tol             float64
		ok              bool
		margin          float64
		held            int
		who             string
	}{
		{"a", "<", "3", 0, true, 1.0 / 3, 1, "a"},
		{"a", "<", "2", 0, false, 0, 1, "a"},
		{"a", "<=", "2", 0, true, 0, 1, "a"},
		{"a", "<", "1.9", 0.1, true, -0.1 / 1.9, 1, "a"},
		{"b", "<=", "c*0.5", 0, true, 0.2, 2, "b"},
		{"c", ">", "b", 0, true, 1.5, 2, "c"},
		{"b|a", "<", "c*0.3", 0, true, 1.0 / 3, 1, "a"},
		{"b|a", ">", "3", 0, true, 1.0 / 3, 2, "b"},
		{"b", "in", "3..6", 0, true, 1.0 / 3, 2, "b"},
		{"c", "in", "3..6", 0, false, -4.0 / 6, 0, "c"},
	} {
		c := Claim{ID: "x", Policy: tc.policy, Metric: "m", Op: tc.op, RHS: tc.rhs, Tolerance: tc.tol}
		o, err := evaluate(c, rep)
		if err != nil {
			t.Fatal(err)
		}
		if o.Reproduced != tc.ok || o.SeedsHeld != tc.held || o.Policy != tc.who || !nearly(o.Margin, tc.margin) {
			t.Errorf("%s %s %s tol %g: reproduced %v margin %.4f held %d policy %s; want %v %.4f %d %s",
				tc.policy, tc.op, tc.rhs, tc.tol, o.Reproduced, o.Margin, o.SeedsHeld, o.Policy, tc.ok, tc.margin, tc.held, tc.who)
		}
	}
	if _, err := evaluate(Claim{Policy: "a", Metric: "nope", Op: "<", RHS: "1"}, rep); err == nil {
		t.Error("unknown metric: no error")
	}
}

// TestEvaluatePairedClaim: the paired ops compare the geometric mean of
// the per-seed ratios, which one seed far above the others cannot turn as
// it turns the means; seeds without a ratio are left out.
func TestEvaluatePairedClaim(t *testing.T) {
	rep := &SeedReport{Policies: []PolicySeedStats{
		// a is twice b on three seeds of four, and a tenth of it on the
		// fourth, where b is 1,000 times larger: b's mean is the larger.
		{Policy: "a", Metrics: []MetricAgg{Aggregate("m", []float64{2, 4, 6, 100})}},
		{Policy: "b", Metrics: []MetricAgg{Aggregate("m", []float64{1, 2, 3, 1000})}},
		{Policy: "z", Metrics: []MetricAgg{Aggregate("m", []float64{0, 2, 3, 1000})}},
	}}
	g := math.Pow(2*2*2*0.1, 0.25) // 0.946
	for _, tc := range []struct {
		policy, op, rhs string
		tol             float64
		ok              bool
		ratio, margin   float64
		held, seeds     int
	}{
		{"a", "paired>", "b", 0, false, g, g - 1, 3, 4},
		{"a", "paired<", "b", 0, true, g, 1 - g, 1, 4},
		{"a", "paired>", "b*0.9", 0, true, g, (g - 0.9) / 0.9, 3, 4},
		{"a", "paired>", "b", 0.1, true, g, g - 1, 3, 4},
		{"z", "paired<", "b", 0, false, 1, 0, 0, 3}, // seed 1 has no ratio
		{"a", "paired>", "z", 0, false, math.Pow(2*2*0.1, 1.0/3), math.Pow(2*2*0.1, 1.0/3) - 1, 2, 3},
	} {
		c := Claim{ID: "x", Workload: "w", Policy: tc.policy, Metric: "m", Op: tc.op, RHS: tc.rhs, Tolerance: tc.tol}
		if err := c.validate(); err != nil {
			t.Errorf("%s %s %s: %v", tc.policy, tc.op, tc.rhs, err)
		}
		o, err := evaluate(c, rep)
		if err != nil {
			t.Fatal(err)
		}
		if o.Reproduced != tc.ok || o.SeedsHeld != tc.held || o.Seeds != tc.seeds || !nearly(o.Mean, tc.ratio) || !nearly(o.Margin, tc.margin) {
			t.Errorf("%s %s %s tol %g: reproduced %v ratio %.4f margin %.4f held %d/%d; want %v %.4f %.4f %d/%d",
				tc.policy, tc.op, tc.rhs, tc.tol, o.Reproduced, o.Mean, o.Margin, o.SeedsHeld, o.Seeds, tc.ok, tc.ratio, tc.margin, tc.held, tc.seeds)
		}
		if o.Seeds > 1 && !(o.RatioLo <= o.Mean && o.Mean <= o.RatioHi) {
			t.Errorf("%s %s %s: interval [%g, %g] around %g", tc.policy, tc.op, tc.rhs, o.RatioLo, o.RatioHi, o.Mean)
		}
	}
	// the means say the opposite of the typical seed
	if o, _ := evaluate(Claim{Policy: "a", Metric: "m", Op: ">", RHS: "b"}, rep); o.Reproduced {
		t.Error("a's mean above b's")
	}
	var out bytes.Buffer
	o, _ := evaluate(Claim{ID: "p", Policy: "a", Metric: "m", Op: "paired<", RHS: "b"}, rep)
	if err := WriteCheckTable(&out, []uint64{1, 2, 3, 4}, []Outcome{o}); err != nil || !strings.Contains(out.String(), "a / b m, geometric mean of the seeds' ratios = 0.946 [") {
		t.Errorf("table: %v\n%s", err, out.String())
	}
}

func nearly(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }

// TestCommandCheckShort is the short form of make sim-check: the chapter 4
// HVW claims and the testbed claims on two seeds, through mr sim --check,
// plus --strict on a claim that cannot hold. It asserts the mechanics and
// the claims that hold with a wide margin on every seed (P95 against
// FIFO, the jobs finishing in P1), not the close ones.
func TestCommandCheckShort(t *testing.T) {
	var out, errOut bytes.Buffer
	args := []string{"--check", "--only", "c4.hvw.,dl.tb.", "--seeds", "11-12", "--json"}
	if err := Command(context.Background(), args, &out, &errOut); err != nil {
		t.Fatalf("%v\n%s", err, errOut.String())
	}
	var res struct {
		Seeds    string    `json:"seeds"`
		Claims   int       `json:"claims"`
		Outcomes []Outcome `json:"outcomes"`
	}
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatal(err)
	}
	if res.Seeds != "11-12" || res.Claims != len(res.Outcomes) || res.Claims < 15 {
		t.Fatalf("check: %+v", res)
	}
	for _, o := range res.Outcomes {
		if o.Seeds != 2 {
			t.Errorf("%s: %d seeds", o.Claim.ID, o.Seeds)
		}
		switch o.Claim.ID {
		case "c4.hvw.p95-vs-fifo", "c4.hvw.p1-finished", "c4.hvw.static-median":
			if !o.Reproduced || o.SeedsHeld != 2 {
				t.Errorf("%s: %+v", o.Claim.ID, o)
			}
		}
	}
	out.Reset()
	if err := Command(context.Background(), args[:len(args)-1], &out, &errOut); err != nil {
		t.Fatal(err)
	}
	if s := out.String(); !strings.Contains(s, "c4.hvw.p95-vs-fifo") || !strings.Contains(s, "claims reproduced") {
		t.Errorf("table:\n%s", s)
	}
	bad := filepath.Join(t.TempDir(), "claims.tsv")
	os.WriteFile(bad, []byte("id\tsource\tworkload\tflags\tpolicy\tmetric\top\trhs\ttolerance\tsays\n"+
		"never\tnone\ttyrex-hvw\t--jobs 20\tfifo\tslowdown.median\t<\t0.5\t0\ta slowdown below 1\n"), 0o644)
	if err := Command(context.Background(), []string{"--check", "--claims", bad, "--seeds", "1"}, &out, &errOut); err != nil {
		t.Errorf("not reproduced without --strict: %v", err)
	}
	err := Command(context.Background(), []string{"--check", "--claims", bad, "--seeds", "1", "--strict"}, &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), "1 of 1 claims not reproduced") {
		t.Errorf("--strict: %v", err)
	}
}
