package speculator

import (
	"math"
	"strings"
	"testing"
	"time"
)

// roundPriors: t_vm 100 ms, B 1 GB/s, B_copy 100 MB/s, beta 1.2; the prior
// line goes through (0 GB, 0.1 s) and (1 GB, 1.1 s).
func roundPriors(w float64) EstimatorParams {
	return EstimatorParams{Beta: 1.2, TVM: 100 * time.Millisecond, ImageBps: 1e9, CopyBps: 1e8, Smoothing: w, MinSampleBytes: 1 << 20}
}

func near(a, b, rel float64) bool { return math.Abs(a-b) <= rel*math.Abs(b) }

func TestEstimatorPriorCost(t *testing.T) {
	e := NewEstimator(roundPriors(0.5))
	// 1.2 × (0.1 + 0.5 + 2) = 3.12 s.
	c := e.Cost(5e8, 2e8)
	if c.Total != 3120*time.Millisecond || c.Undamped != 2600*time.Millisecond {
		t.Errorf("cost %v (undamped %v), want 3.12s (2.6s)", c.Total, c.Undamped)
	}
	if c.TVM != 100*time.Millisecond || c.ImageBps != 1e9 || c.CopyBps != 1e8 || c.Beta != 1.2 {
		t.Errorf("inputs %+v", c)
	}
	// The project's priors: 140 ms + 100 MB / 0.95 GB/s + 40 MB / 40 MB/s.
	d := NewEstimator(DefaultParams().Estimator)
	want := 1.2 * (0.14 + 1e8/0.95e9 + 1.0)
	if got := d.Cost(1e8, 40e6).Total.Seconds(); !near(got, want, 1e-9) {
		t.Errorf("default prior cost %v s, want %v s", got, want)
	}
}

func TestEstimatorUpdates(t *testing.T) {
	type step struct {
		m       CloneMeasurement
		tvm     time.Duration
		img     float64
		copyBps float64
	}
	cases := []struct {
		name  string
		w     float64
		steps []step
	}{
		{
			// Points (0, .1) and (1, 1.1) at 1/4 each, (0.5, 1.0) at 1/2:
			// mean x 0.5, mean y 0.8, cov 0.125, var 0.125 -> slope 1 s/GB,
			// t_vm 0.3 s. Copy: 0.5 × 1e8 + 0.5 × 3e8 = 2e8.
			// Then (1, 1.5) at 1/2: mean x .75, mean y 1.15, var .125,
			// cov .15 -> slope 1.2 s/GB (B = 1e9/1.2), t_vm 0.25 s.
			"two clones", 0.5, []step{
				{CloneMeasurement{ImageBytes: 5e8, Dump: 600 * time.Millisecond, Restore: 400 * time.Millisecond, TransferBytes: 3e8, Transfer: time.Second},
					300 * time.Millisecond, 1e9, 2e8},
				{CloneMeasurement{ImageBytes: 1e9, Dump: time.Second, Restore: 500 * time.Millisecond},
					250 * time.Millisecond, 1e9 / 1.2, 2e8},
			},
		},
		{
			// Weight 1 keeps only the last point: no spread, B is kept and
			// t_vm = 1.0 - 0.5 = 0.5 s.
			"weight one", 1, []step{
				{CloneMeasurement{ImageBytes: 5e8, Dump: 600 * time.Millisecond, Restore: 400 * time.Millisecond, TransferBytes: 5e7, Transfer: 250 * time.Millisecond},
					500 * time.Millisecond, 1e9, 2e8},
			},
		},
		{
			// (2, 3.0) at 1/2 gives a line with a negative intercept; the
			// fit through the origin has slope mean xy / mean xx =
			// 3.275 / 2.25 s/GB, and t_vm 0.
			"negative intercept", 0.5, []step{
				{CloneMeasurement{ImageBytes: 2e9, Dump: 2 * time.Second, Restore: time.Second},
					0, 2.25e9 / 3.275, 1e8},
			},
		},
		{
			// A transfer under MinSampleBytes (1 MiB) teaches nothing about
			// B_copy; a transfer-only measurement leaves t_vm and B alone.
			"small transfer ignored", 0.5, []step{
				{CloneMeasurement{TransferBytes: 1000, Transfer: time.Second}, 100 * time.Millisecond, 1e9, 1e8},
				{CloneMeasurement{TransferBytes: 4e8, Transfer: 2 * time.Second}, 100 * time.Millisecond, 1e9, 1.5e8},
			},
		},
	}
	for _, c := range cases {
		e := NewEstimator(roundPriors(c.w))
		for i, s := range c.steps {
			if err := e.Observe(s.m); err != nil {
				t.Fatalf("%s step %d: %v", c.name, i, err)
			}
			tvm, img, cp, n := e.Inputs()
			if tvm != s.tvm || !near(img, s.img, 1e-9) || !near(cp, s.copyBps, 1e-12) || n != i+1 {
				t.Errorf("%s step %d: t_vm %v B %.6g B_copy %.6g n %d, want %v %.6g %.6g %d",
					c.name, i, tvm, img, cp, n, s.tvm, s.img, s.copyBps, i+1)
			}
		}
	}
}

func TestEstimatorRejects(t *testing.T) {
	cases := []struct {
		m    CloneMeasurement
		want string
	}{
		{CloneMeasurement{ImageBytes: -1, Dump: time.Second}, "negative"},
		{CloneMeasurement{Restore: -time.Second}, "negative"},
		{CloneMeasurement{ImageBytes: 1e6}, "no dump, restore or transfer time"},
	}
	for _, c := range cases {
		e := NewEstimator(roundPriors(0.5))
		err := e.Observe(c.m)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want %q", c.m, err, c.want)
		}
		tvm, img, cp, n := e.Inputs()
		if tvm != 100*time.Millisecond || img != 1e9 || cp != 1e8 || n != 0 {
			t.Errorf("%+v: state changed to %v %g %g %d", c.m, tvm, img, cp, n)
		}
	}
}

func TestKeysAndConfig(t *testing.T) {
	seen := map[string]bool{}
	for _, k := range Keys() {
		if seen[k.Name] || k.Description == "" {
			t.Errorf("key %s duplicated or undocumented", k.Name)
		}
		seen[k.Name] = true
	}
	p := DefaultParams()
	if !p.MapSpeculative || !p.ReduceSpeculative || p.CapRunning != 0.1 || p.CapTotal != 0.01 ||
		p.MinAllowed != 10 || p.RetryNoSpec != time.Second || p.RetryAfterSpec != 15*time.Second ||
		p.MinDoneCount != 1 || p.MinDoneFraction != 0.05 || p.Stagnation != 9*time.Second || p.CloneEnabled ||
		p.Estimator.Beta != 1.2 || p.Estimator.TVM != 140*time.Millisecond || p.Estimator.ImageBps != 0.95e9 ||
		p.Estimator.CopyBps != 40e6 || p.Estimator.Smoothing != 0.25 ||
		p.RuntimeEstimator != EstimatorLegacy || p.SmoothLambda != time.Minute {
		t.Errorf("defaults %+v", p)
	}
	good := mapGetter{KeyBeta: "1.5", KeyCloneEnabled: "true", KeyTVM: "0.2", KeyMapSpeculative: "false"}
	q, err := FromConfig(good)
	if err != nil {
		t.Fatal(err)
	}
	if q.Estimator.Beta != 1.5 || !q.CloneEnabled || q.Estimator.TVM != 200*time.Millisecond || q.MapSpeculative {
		t.Errorf("overrides not read: %+v", q)
	}
	bad := []struct {
		key, value string
	}{
		{KeyBeta, "-1"},
		{KeySmoothing, "0"},
		{KeySmoothing, "1.5"},
		{KeyImageBandwidth, "0"},
		{KeyCopyBandwidth, "fast"},
		{KeyCapRunning, "2"},
		{KeyStagnation, "-3s"},
		{KeyMinDoneCount, "0"},
		{KeyReduceSpeculative, "maybe"},
		{KeyRuntimeEstimator, "clairvoyant"},
		{KeySmoothLambda, "0s"},
	}
	for _, b := range bad {
		_, err := FromConfig(mapGetter{b.key: b.value})
		if err == nil || !strings.Contains(err.Error(), b.key) || !strings.Contains(err.Error(), b.value) {
			t.Errorf("%s=%q: error %v, want one naming key and value", b.key, b.value, err)
		}
	}
}

type mapGetter map[string]string

func (m mapGetter) String(k string) string { return m[k] }
