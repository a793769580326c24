package sim

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"gomr/partitions"
)

// readLaunchSamples reads launch samples from tab-separated lines: name
// (mix and seed), policy, seed, load at start, load at end, whether the
// load is estimated, and the LaunchQuantiles quantiles in milliseconds,
// comma-separated; '#' starts a comment line. keep picks the samples by
// seed. A sample's load is the mean of its start and end.
func readLaunchSamples(r io.Reader, keep func(seed uint64) bool) ([]LaunchSample, error) {
	var out []LaunchSample
	sc := bufio.NewScanner(r)
	line := 0
	for sc.Scan() {
		line++
		t := strings.TrimSpace(sc.Text())
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		f := strings.Split(t, "\t")
		if len(f) != 7 {
			return nil, fmt.Errorf("line %d: %d fields, want 7", line, len(f))
		}
		seed, err := strconv.ParseUint(f[2], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("line %d: seed: %w", line, err)
		}
		l0, err0 := strconv.ParseFloat(f[3], 64)
		l1, err1 := strconv.ParseFloat(f[4], 64)
		if err0 != nil || err1 != nil {
			return nil, fmt.Errorf("line %d: loads %q, %q are not numbers", line, f[3], f[4])
		}
		s := LaunchSample{Name: f[0] + " " + f[1], Load: (l0 + l1) / 2}
		for _, v := range strings.Split(f[6], ",") {
			x, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return nil, fmt.Errorf("line %d: quantile %q: %w", line, v, err)
			}
			s.Quantiles = append(s.Quantiles, x)
		}
		if keep(seed) {
			out = append(out, s)
		}
	}
	return out, sc.Err()
}

// TestMeasuredLaunchLoadIsTheFit checks that the shipped load-matched
// model is FitLaunchLoad of the seed 1 and 2 runs of
// testdata/launch-load-samples.tsv (and of nothing else: the seed 3 runs
// judge it), to the 0.05 ms the table is written with.
func TestMeasuredLaunchLoadIsTheFit(t *testing.T) {
	f, err := os.Open("testdata/launch-load-samples.tsv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	samples, err := readLaunchSamples(f, func(seed uint64) bool { return seed == 1 || seed == 2 })
	if err != nil {
		t.Fatal(err)
	}
	if len(samples) != 32 {
		t.Fatalf("%d samples of seeds 1 and 2, want 32", len(samples))
	}
	got, err := FitLaunchLoad(samples, MeasuredLaunchLoadEdges)
	if err != nil {
		t.Fatal(err)
	}
	want := MeasuredLaunchLoad
	if len(got.Bands) != len(want.Bands) {
		t.Fatalf("fit has %d bands, the table %d", len(got.Bands), len(want.Bands))
	}
	close := func(a, b float64) bool { return math.Abs(a-b) <= 0.05+1e-9 }
	for i, g := range got.Bands {
		w := want.Bands[i]
		ok := g.MinLoad == w.MinLoad && g.MaxLoad == w.MaxLoad && g.Runs == w.Runs && close(g.Centre, w.Centre) && len(g.Quantiles) == len(w.Quantiles)
		for k := range g.Quantiles {
			ok = ok && k < len(w.Quantiles) && close(g.Quantiles[k], w.Quantiles[k])
		}
		if !ok {
			t.Errorf("band %d: fit %+v, table %+v", i, g, w)
		}
		if !slices.IsSorted(w.Quantiles) {
			t.Errorf("band %d: quantiles %v not non-decreasing", i, w.Quantiles)
		}
	}
}

// TestFitLaunchLoad checks the fit on hand-made samples: the bands, their
// centres (median load) and quantile-wise medians, and the refusals.
func TestFitLaunchLoad(t *testing.T) {
	q := func(base float64) []float64 {
		x := make([]float64, LaunchQuantiles)
		for i := range x {
			x[i] = base + float64(i)
		}
		return x
	}
	samples := []LaunchSample{
		{Name: "a", Load: 0.5, Quantiles: q(10)},
		{Name: "b", Load: 1.5, Quantiles: q(20)},
		{Name: "c", Load: 1.0, Quantiles: q(30)},
		{Name: "d", Load: 9, Quantiles: q(100)},
		{Name: "e", Load: 11, Quantiles: q(200)},
	}
	m, err := FitLaunchLoad(samples, []float64{0, 2, 8, math.Inf(1)})
	if err != nil {
		t.Fatal(err)
	}
	// The band [2, 8) has no sample and is left out.
	if len(m.Bands) != 2 {
		t.Fatalf("%d bands, want 2: %+v", len(m.Bands), m.Bands)
	}
	for i, want := range []struct {
		centre float64
		runs   int
		q0     float64
	}{{1.0, 3, 20}, {10, 2, 150}} {
		b := m.Bands[i]
		if b.Centre != want.centre || b.Runs != want.runs || b.Quantiles[0] != want.q0 || b.Quantiles[20] != want.q0+20 {
			t.Errorf("band %d: centre %v runs %d quantiles %v, want centre %v runs %d from %v", i, b.Centre, b.Runs, b.Quantiles, want.centre, want.runs, want.q0)
		}
	}
	for _, bad := range []struct {
		name    string
		samples []LaunchSample
		edges   []float64
	}{
		{"one edge", samples, []float64{0}},
		{"edges not increasing", samples, []float64{0, 2, 2, 10}},
		{"sample above the edges", samples, []float64{0, 2, 10}},
		{"sample below the edges", samples, []float64{1, 2, 100}},
		{"short quantiles", []LaunchSample{{Name: "x", Load: 1, Quantiles: []float64{1, 2}}}, []float64{0, 2}},
		{"no samples", nil, []float64{0, 2}},
	} {
		if _, err := FitLaunchLoad(bad.samples, bad.edges); err == nil {
			t.Errorf("%s: fitted, want an error", bad.name)
		}
	}
}

// threeBands is a model of three bands with centres 1, 5 and 10 whose
// quantiles are 10, 50 and 100 ms flat, plus the quantile's index.
func threeBands() LaunchLoadModel {
	band := func(c, base float64) LaunchBand {
		q := make([]float64, LaunchQuantiles)
		for i := range q {
			q[i] = base + float64(i)
		}
		return LaunchBand{Centre: c, Runs: 1, Quantiles: q}
	}
	return LaunchLoadModel{Bands: []LaunchBand{band(1, 10), band(5, 50), band(10, 100)}}
}

// TestLaunchLoadBracket checks which bands a load selects and with what
// weight: the first band alone up to its centre, linear between centres,
// the last band alone from its centre on (no extrapolation).
func TestLaunchLoadBracket(t *testing.T) {
	m := threeBands()
	for _, c := range []struct {
		load float64
		i, j int
		w    float64
	}{
		{0, 0, 0, 0},
		{0.5, 0, 0, 0},
		{1, 0, 0, 0},
		{2, 0, 1, 0.25},
		{3, 0, 1, 0.5},
		{5, 1, 2, 0},
		{7.5, 1, 2, 0.5},
		{9, 1, 2, 0.8},
		{10, 2, 2, 0},
		{30, 2, 2, 0},
		{math.NaN(), 0, 0, 0},
	} {
		i, j, w := m.Bracket(c.load)
		if i != c.i || j != c.j || math.Abs(w-c.w) > 1e-12 {
			t.Errorf("Bracket(%v) = %d, %d, %v; want %d, %d, %v", c.load, i, j, w, c.i, c.j, c.w)
		}
	}
	if i, j, _ := (LaunchLoadModel{}).Bracket(3); i != -1 || j != -1 {
		t.Errorf("no bands: Bracket = %d, %d, want -1, -1", i, j)
	}
	one := LaunchLoadModel{Bands: m.Bands[1:2]}
	for _, load := range []float64{0, 5, 50} {
		if i, j, w := one.Bracket(load); i != 0 || j != 0 || w != 0 {
			t.Errorf("one band: Bracket(%v) = %d, %d, %v, want 0, 0, 0", load, i, j, w)
		}
	}
}

// TestLaunchLoadQuantiles checks the interpolated distributions: each
// quantile the weighted mean of the bracketing bands', non-decreasing,
// and the distribution Dist makes of it.
func TestLaunchLoadQuantiles(t *testing.T) {
	m := threeBands()
	for _, c := range []struct {
		load     float64
		q0, q20  float64
		median   time.Duration
		atLoad30 bool
	}{
		{load: 1, q0: 10, q20: 30, median: ms(20)},
		{load: 3, q0: 30, q20: 50, median: ms(40)},
		{load: 7.5, q0: 75, q20: 95, median: ms(85)},
		{load: 30, q0: 100, q20: 120, median: ms(110)},
	} {
		q := m.Quantiles(c.load)
		if len(q) != LaunchQuantiles || math.Abs(q[0]-c.q0) > 1e-9 || math.Abs(q[20]-c.q20) > 1e-9 || !slices.IsSorted(q) {
			t.Errorf("Quantiles(%v) = %v, want %v to %v, non-decreasing", c.load, q, c.q0, c.q20)
		}
		d := m.Dist(c.load, 7)
		if d.Seed != 7 || d.At(0.5) != c.median || d.check() != nil {
			t.Errorf("Dist(%v, 7): seed %d, median %v (want %v), check %v", c.load, d.Seed, d.At(0.5), c.median, d.check())
		}
	}
	if (LaunchLoadModel{}).Quantiles(1) != nil || (LaunchLoadModel{}).Dist(1, 1) != nil {
		t.Error("a model without bands gave a distribution")
	}
	// The shipped model: quiet below busy at every quantile but the
	// minimum's noise, and its interpolations are distributions.
	for load := 0.0; load <= 40; load += 0.5 {
		if err := MeasuredLaunchLoad.Dist(load, 1).check(); err != nil {
			t.Errorf("MeasuredLaunchLoad at load %v: %v", load, err)
		}
	}
}

// TestLaunchLoadDrawsAreCommon checks that the draws of a load-matched
// distribution are common random numbers: for the same seed and attempt,
// the draw is the same quantile of whatever load's distribution, so a
// busier load never charges an attempt less when every band's quantiles
// are above the quieter one's.
func TestLaunchLoadDrawsAreCommon(t *testing.T) {
	m := threeBands()
	for task := 0; task < 200; task++ {
		u := uniformOf(3, "job-1", int(partitions.Map), task, 0)
		prev := time.Duration(-1)
		for _, load := range []float64{0, 2, 4, 6, 8, 10, 20} {
			d := m.Dist(load, 3)
			got := d.Draw("job-1", partitions.Map, task, 0)
			if got != d.At(u) {
				t.Fatalf("task %d at load %v: draw %v, want At(%v) = %v", task, load, got, u, d.At(u))
			}
			if got < prev {
				t.Fatalf("task %d: draw %v at load %v below %v at a lower load", task, got, load, prev)
			}
			prev = got
		}
	}
}
