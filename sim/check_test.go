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
// the per-seed ratios, whose 95% interval must lie beyond the bound; one
// seed far above the others cannot turn it as it turns the means; seeds
// without a ratio are left out.
func TestEvaluatePairedClaim(t *testing.T) {
	rep := &SeedReport{Policies: []PolicySeedStats{
		// a is twice b on five seeds of six and 0.8 of it on the sixth,
		// where both are 100 times larger: b's mean is the larger.
		{Policy: "a", Metrics: []MetricAgg{Aggregate("m", []float64{2, 4, 6, 8, 10, 800})}},
		{Policy: "b", Metrics: []MetricAgg{Aggregate("m", []float64{1, 2, 3, 4, 5, 1000})}},
		{Policy: "z", Metrics: []MetricAgg{Aggregate("m", []float64{0, 2, 3, 4, 5, 1000})}},
	}}
	// geometric mean (2^5 · 0.8)^(1/6), its interval exp(mean ± t(5)·se)
	// of the log ratios, computed by hand
	g, lo, hi := 1.716748, 1.159354, 2.542128
	for _, tc := range []struct {
		policy, op, rhs string
		tol             float64
		ok              bool
		ratio, margin   float64
		held, seeds     int
	}{
		{"a", "paired>", "b", 0, true, g, lo - 1, 5, 6},
		{"a", "paired<", "b", 0, false, g, 1 - hi, 1, 6},
		{"a", "paired>", "b*1.5", 0, false, g, (lo - 1.5) / 1.5, 5, 6},
		{"a", "paired>", "b*1.3", 0.2, true, g, (lo - 1.3) / 1.3, 5, 6},
		{"a", "paired<", "b*3", 0, true, g, (3 - hi) / 3, 6, 6},
		{"z", "paired<", "b", 0, false, 1, 0, 0, 5}, // seed 1 has no ratio; the rest are 1
	} {
		c := Claim{ID: "x", Workload: "w", Policy: tc.policy, Metric: "m", Op: tc.op, RHS: tc.rhs, Tolerance: tc.tol}
		if err := c.validate(); err != nil {
			t.Errorf("%s %s %s: %v", tc.policy, tc.op, tc.rhs, err)
		}
		o, err := evaluate(c, rep)
		if err != nil {
			t.Fatal(err)
		}
		if o.Reproduced != tc.ok || o.SeedsHeld != tc.held || o.Seeds != tc.seeds || math.Abs(o.Mean-tc.ratio) > 1e-5 || math.Abs(o.Margin-tc.margin) > 1e-5 {
			t.Errorf("%s %s %s tol %g: reproduced %v ratio %.6f margin %.6f held %d/%d; want %v %.6f %.6f %d/%d",
				tc.policy, tc.op, tc.rhs, tc.tol, o.Reproduced, o.Mean, o.Margin, o.SeedsHeld, o.Seeds, tc.ok, tc.ratio, tc.margin, tc.held, tc.seeds)
		}
	}
	o, _ := evaluate(Claim{ID: "p", Policy: "a", Metric: "m", Op: "paired>", RHS: "b"}, rep)
	if math.Abs(o.RatioLo-lo) > 1e-5 || math.Abs(o.RatioHi-hi) > 1e-5 {
		t.Errorf("interval [%g, %g], want [%g, %g]", o.RatioLo, o.RatioHi, lo, hi)
	}
	// the means say the opposite of the typical seed
	if m, _ := evaluate(Claim{Policy: "a", Metric: "m", Op: ">", RHS: "b"}, rep); m.Reproduced {
		t.Error("a's mean above b's")
	}
	var out bytes.Buffer
	if err := WriteCheckTable(&out, []uint64{1, 2, 3, 4, 5, 6}, []Outcome{o}); err != nil || !strings.Contains(out.String(), "a / b m, geometric mean of the seeds' ratios = 1.72 [1.16, 2.54]  > 1.00") {
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
