package sim

import (
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"gomr/partitions"
)

// readLaunchSamples reads ReadLaunchSamples' lines of the seeds keep
// accepts.
func readLaunchSamples(r io.Reader, keep func(seed uint64) bool) ([]LaunchSample, error) {
	all, err := ReadLaunchSamples(r)
	var out []LaunchSample
	for _, s := range all {
		if keep(s.Seed) {
			out = append(out, s)
		}
	}
	return out, err
}

// TestMeasuredLaunchLoadIsTheFit checks that the shipped load-matched
// models, of the launch and of a reduce's launch, are FitLaunchLoad and
// FitLaunchSlope of the seed 1 and 2 runs of
// testdata/launch-load-samples.tsv and reduce-launch-load-samples.tsv
// (and of nothing else: the seed 3 runs judge them), to the 0.05 ms the
// tables are written with.
func TestMeasuredLaunchLoadIsTheFit(t *testing.T) {
	for _, c := range []struct {
		file  string
		model LaunchLoadModel
	}{
		{"testdata/launch-load-samples.tsv", MeasuredLaunchLoad},
		{"testdata/reduce-launch-load-samples.tsv", MeasuredReduceLaunchLoad},
	} {
		f, err := os.Open(c.file)
		if err != nil {
			t.Fatal(err)
		}
		samples, err := readLaunchSamples(f, func(seed uint64) bool { return seed == 1 || seed == 2 })
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		if len(samples) != 32 {
			t.Fatalf("%s: %d samples of seeds 1 and 2, want 32", c.file, len(samples))
		}
		got, err := FitLaunchLoad(samples, MeasuredLaunchLoadEdges)
		if err != nil {
			t.Fatal(err)
		}
		// The judging fit's fourth edge at 16 changes nothing below it.
		if wide, err := FitLaunchLoad(samples, LaunchLoadFitEdges); err != nil || !slices.EqualFunc(wide.Bands, got.Bands, func(a, b LaunchBand) bool {
			return a.Centre == b.Centre && a.Runs == b.Runs && slices.Equal(a.Quantiles, b.Quantiles)
		}) {
			t.Errorf("%s: the fit over LaunchLoadFitEdges %+v (%v) differs from the table's edges' %+v", c.file, wide, err, got)
		}
		if got.Slope, err = FitLaunchSlope(samples); err != nil {
			t.Fatal(err)
		}
		want := c.model
		if len(got.Bands) != len(want.Bands) {
			t.Fatalf("%s: fit has %d bands, the table %d", c.file, len(got.Bands), len(want.Bands))
		}
		close := func(a, b float64) bool { return math.Abs(a-b) <= 0.05+1e-9 }
		if !close(got.Slope, want.Slope) {
			t.Errorf("%s: fitted slope %v, the table's %v", c.file, got.Slope, want.Slope)
		}
		for i, g := range got.Bands {
			w := want.Bands[i]
			ok := g.MinLoad == w.MinLoad && g.MaxLoad == w.MaxLoad && g.Runs == w.Runs && close(g.Centre, w.Centre) && len(g.Quantiles) == len(w.Quantiles)
			for k := range g.Quantiles {
				ok = ok && k < len(w.Quantiles) && close(g.Quantiles[k], w.Quantiles[k])
			}
			if !ok {
				t.Errorf("%s: band %d: fit %+v, table %+v", c.file, i, g, w)
			}
			if !slices.IsSorted(w.Quantiles) {
				t.Errorf("%s: band %d: quantiles %v not non-decreasing", c.file, i, w.Quantiles)
			}
		}
	}
}

// TestFitLaunchSlope: the least-squares slope of the samples' medians
// on their loads, at least 0, and its refusals.
func TestFitLaunchSlope(t *testing.T) {
	sample := func(load, median float64) LaunchSample {
		q := make([]float64, LaunchQuantiles)
		for i := range q {
			q[i] = median + float64(i-LaunchQuantiles/2)
		}
		return LaunchSample{Name: "s", Load: load, Quantiles: q}
	}
	for _, c := range []struct {
		name    string
		samples []LaunchSample
		want    float64
		err     string
	}{
		{"on a line", []LaunchSample{sample(1, 25), sample(5, 45), sample(10, 70)}, 5, ""},
		{"scattered", []LaunchSample{sample(0, 10), sample(0, 30), sample(10, 50), sample(10, 70)}, 4, ""},
		{"falling: 0", []LaunchSample{sample(1, 50), sample(9, 10)}, 0, ""},
		{"one load", []LaunchSample{sample(3, 20), sample(3, 40)}, 0, "two different loads"},
		{"one sample", []LaunchSample{sample(3, 20)}, 0, "two different loads"},
		{"no sample", nil, 0, "two different loads"},
		{"short quantiles", []LaunchSample{sample(1, 1), {Name: "x", Load: 2, Quantiles: []float64{1, 2}}}, 0, "2 quantiles"},
	} {
		got, err := FitLaunchSlope(c.samples)
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s: %v, %v; want an error saying %q", c.name, got, err, c.err)
		case c.err == "" && (err != nil || math.Abs(got-c.want) > 1e-9):
			t.Errorf("%s: %v, %v; want %v", c.name, got, err, c.want)
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
	// With a slope, above the last centre (10) every quantile shifts by
	// Slope × (load − 10); at and below it nothing changes.
	m.Slope = 2
	for _, c := range []struct{ load, q0, q20 float64 }{
		{load: 7.5, q0: 75, q20: 95},
		{load: 10, q0: 100, q20: 120},
		{load: 12.5, q0: 105, q20: 125},
		{load: 30, q0: 140, q20: 160},
	} {
		if q := m.Quantiles(c.load); math.Abs(q[0]-c.q0) > 1e-9 || math.Abs(q[20]-c.q20) > 1e-9 || !slices.IsSorted(q) {
			t.Errorf("slope 2: Quantiles(%v) = %v, want %v to %v", c.load, q, c.q0, c.q20)
		}
	}
	// The shipped model: quiet below busy at every quantile but the
	// minimum's noise, and its interpolations are distributions.
	for load := 0.0; load <= 40; load += 0.5 {
		if err := MeasuredLaunchLoad.Dist(load, 1).check(); err != nil {
			t.Errorf("MeasuredLaunchLoad at load %v: %v", load, err)
		}
		if err := MeasuredReduceLaunchLoad.Dist(load, 1).check(); err != nil {
			t.Errorf("MeasuredReduceLaunchLoad at load %v: %v", load, err)
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
