package sim

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// LaunchSample is one real run's launch distribution with the machine's
// load while it ran: what a load-matched launch model (LaunchLoadModel)
// is fitted on.
type LaunchSample struct {
	// Name says which run it is (mix, seed, policy).
	Name string
	// Seed is the seed of the run's trace (the fits are judged on seeds
	// they were not fitted on).
	Seed uint64
	// Load is the machine's 1-minute load average over the run: the mean
	// of its values at the run's start and end.
	Load float64
	// Quantiles are the run's launch costs at probabilities 0, 1/(n−1),
	// ..., 1 (LaunchQuantiles of them), in milliseconds.
	Quantiles []float64
}

// ReadLaunchSamples reads launch samples from tab-separated lines
// (sim/testdata/launch-load-samples.tsv): name (mix and seed), policy,
// seed, load at the run's start, load at its end, whether the load is
// estimated, and the LaunchQuantiles quantiles in milliseconds,
// comma-separated; a line starting with '#' is a comment. A sample's load
// is the mean of its start and end loads.
func ReadLaunchSamples(r io.Reader) ([]LaunchSample, error) {
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
			return nil, fmt.Errorf("launch samples: line %d: %d fields, want 7", line, len(f))
		}
		seed, err := strconv.ParseUint(f[2], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("launch samples: line %d: seed: %w", line, err)
		}
		l0, err0 := strconv.ParseFloat(f[3], 64)
		l1, err1 := strconv.ParseFloat(f[4], 64)
		if err0 != nil || err1 != nil {
			return nil, fmt.Errorf("launch samples: line %d: loads %q, %q are not numbers", line, f[3], f[4])
		}
		s := LaunchSample{Name: f[0] + " " + f[1], Seed: seed, Load: (l0 + l1) / 2}
		for _, v := range strings.Split(f[6], ",") {
			x, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return nil, fmt.Errorf("launch samples: line %d: quantile %q: %w", line, v, err)
			}
			s.Quantiles = append(s.Quantiles, x)
		}
		if len(s.Quantiles) != LaunchQuantiles {
			return nil, fmt.Errorf("launch samples: line %d: %d quantiles, want %d", line, len(s.Quantiles), LaunchQuantiles)
		}
		out = append(out, s)
	}
	return out, sc.Err()
}

// LaunchBand is one load band of a LaunchLoadModel: the launch
// distribution of the runs whose load fell in [MinLoad, MaxLoad).
type LaunchBand struct {
	MinLoad, MaxLoad float64
	// Centre is the median load of the runs the band was fitted on: the
	// load its distribution stands for.
	Centre float64
	// Runs is how many runs it was fitted on.
	Runs int
	// Quantiles are, quantile by quantile, the median over those runs of
	// each run's quantile, in milliseconds (LaunchQuantiles of them).
	Quantiles []float64
}

// LaunchLoadModel is the launch cost's distribution as a function of the
// machine's load: on a shared machine a task's launch (an exec of a child
// process) takes longer the more runnable processes there are, so that
// one distribution for every load is too slow for a quiet machine and too
// fast for a busy one. Bands are ordered by load; Dist interpolates
// between their centres.
type LaunchLoadModel struct {
	Bands []LaunchBand
	// Slope, in milliseconds per unit of load, extends the model above
	// the loads it was fitted on: above the last band's centre every
	// quantile is the last band's plus Slope × (load − that centre). On
	// the fitted runs the median launch grew linearly with the load (a
	// launch is an exec and a first report, each waiting for the CPU
	// behind the runnable processes); FitLaunchSlope fits it. 0 holds the
	// last band.
	Slope float64
}

// FitLaunchLoad fits a load-matched launch model on samples: edges
// (increasing, at least two) delimit the bands [edges[i], edges[i+1]);
// each band's quantiles are the quantile-wise median of its samples'
// (non-decreasing when theirs are), its centre their median load. A
// band with no sample is left out; a sample outside the edges is refused.
func FitLaunchLoad(samples []LaunchSample, edges []float64) (LaunchLoadModel, error) {
	increasing := len(edges) >= 2
	for i := 1; i < len(edges); i++ {
		increasing = increasing && edges[i] > edges[i-1]
	}
	if !increasing {
		return LaunchLoadModel{}, fmt.Errorf("fit launch load: band edges %v must be at least two increasing loads", edges)
	}
	groups := make([][]LaunchSample, len(edges)-1)
	for _, s := range samples {
		if len(s.Quantiles) != LaunchQuantiles {
			return LaunchLoadModel{}, fmt.Errorf("fit launch load: sample %s has %d quantiles, want %d", s.Name, len(s.Quantiles), LaunchQuantiles)
		}
		i := bandOf(edges, s.Load)
		if i < 0 {
			return LaunchLoadModel{}, fmt.Errorf("fit launch load: sample %s has load %.2f, outside the bands' %v", s.Name, s.Load, edges)
		}
		groups[i] = append(groups[i], s)
	}
	var m LaunchLoadModel
	for i, g := range groups {
		if len(g) == 0 {
			continue
		}
		b := LaunchBand{MinLoad: edges[i], MaxLoad: edges[i+1], Runs: len(g), Quantiles: make([]float64, LaunchQuantiles)}
		loads := make([]float64, len(g))
		for k, s := range g {
			loads[k] = s.Load
		}
		b.Centre = medianOf(loads)
		for q := range b.Quantiles {
			xs := make([]float64, len(g))
			for k, s := range g {
				xs[k] = s.Quantiles[q]
			}
			b.Quantiles[q] = medianOf(xs)
		}
		m.Bands = append(m.Bands, b)
	}
	if len(m.Bands) == 0 {
		return LaunchLoadModel{}, fmt.Errorf("fit launch load: no samples")
	}
	return m, nil
}

// FitLaunchSlope is the least-squares slope, in milliseconds per unit of
// load, of the samples' median launch (their middle quantile) on their
// loads, at least 0: LaunchLoadModel.Slope. It needs samples at two
// different loads at least.
func FitLaunchSlope(samples []LaunchSample) (float64, error) {
	var sx, sy float64
	for _, s := range samples {
		if len(s.Quantiles) != LaunchQuantiles {
			return 0, fmt.Errorf("fit launch slope: sample %s has %d quantiles, want %d", s.Name, len(s.Quantiles), LaunchQuantiles)
		}
		sx += s.Load
		sy += s.Quantiles[LaunchQuantiles/2]
	}
	n := float64(len(samples))
	mx, my := sx/n, sy/n
	var sxx, sxy float64
	for _, s := range samples {
		sxx += (s.Load - mx) * (s.Load - mx)
		sxy += (s.Load - mx) * (s.Quantiles[LaunchQuantiles/2] - my)
	}
	if len(samples) < 2 || sxx == 0 {
		return 0, fmt.Errorf("fit launch slope: %d samples, want some at two different loads at least", len(samples))
	}
	return max(sxy/sxx, 0), nil
}

// bandOf is the index of the band [edges[i], edges[i+1]) holding load, or
// −1.
func bandOf(edges []float64, load float64) int {
	for i := 0; i+1 < len(edges); i++ {
		if load >= edges[i] && load < edges[i+1] {
			return i
		}
	}
	return -1
}

// medianOf is the median of xs (the mean of the middle two for an even
// count); xs is sorted in place.
func medianOf(xs []float64) float64 {
	slices.Sort(xs)
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}

// Bracket says which bands the distribution for load is made of: bands i
// and j (i ≤ j, adjacent), with weight w on j and 1 − w on i. Between two
// bands' centres the weight is linear in load; at or below the first
// centre it is the first band alone, at or above the last the last band
// alone (Quantiles shifts it by Slope above the last centre).
func (m LaunchLoadModel) Bracket(load float64) (i, j int, w float64) {
	n := len(m.Bands)
	switch {
	case n == 0:
		return -1, -1, 0
	case math.IsNaN(load) || load <= m.Bands[0].Centre:
		return 0, 0, 0
	case load >= m.Bands[n-1].Centre:
		return n - 1, n - 1, 0
	}
	for k := 0; k+1 < n; k++ {
		lo, hi := m.Bands[k].Centre, m.Bands[k+1].Centre
		if load >= lo && load < hi {
			return k, k + 1, (load - lo) / (hi - lo)
		}
	}
	return n - 1, n - 1, 0 // centres out of order: not from FitLaunchLoad
}

// Quantiles are the launch quantiles, in milliseconds, for load: the
// bracketing bands' quantiles weighted as Bracket says, shifted by Slope
// above the last band's centre. A weighted mean of non-decreasing
// quantile sets is non-decreasing, and so is a shifted one, so the result
// is a distribution.
func (m LaunchLoadModel) Quantiles(load float64) []float64 {
	i, j, w := m.Bracket(load)
	if i < 0 {
		return nil
	}
	a, b := m.Bands[i].Quantiles, m.Bands[j].Quantiles
	var shift float64
	if last := m.Bands[len(m.Bands)-1].Centre; m.Slope > 0 && load > last {
		shift = m.Slope * (load - last)
	}
	q := make([]float64, len(a))
	for k := range q {
		q[k] = (1-w)*a[k] + w*b[k] + shift
	}
	return q
}

// Dist is the launch distribution for a machine at load, drawing with
// seed; nil for a model without bands. The draws stay a pure function of
// the seed and the attempt (LaunchDist.Draw): two runs at different loads
// charge an attempt the same quantile of their own distributions.
func (m LaunchLoadModel) Dist(load float64, seed uint64) *LaunchDist {
	q := m.Quantiles(load)
	if q == nil {
		return nil
	}
	d := &LaunchDist{Seed: seed, Quantiles: make([]time.Duration, len(q))}
	for k, v := range q {
		d.Quantiles[k] = time.Duration(v * float64(time.Millisecond)).Round(time.Microsecond)
	}
	return d
}

// MeasuredLaunchLoadEdges are the load bands of MeasuredLaunchLoad: a
// quiet machine (below 2), a shared one (2 to 8), a busy one (8 and up).
var MeasuredLaunchLoadEdges = []float64{0, 2, 8, math.Inf(1)}

// MeasuredLaunchLoad is the load-matched launch model fitted
// (FitLaunchLoad, MeasuredLaunchLoadEdges) on the 32 real runs of seeds 1
// and 2 of the four small mixes (docs/comparison.md, "A load-matched
// launch"; the samples are sim/testdata/launch-load-samples.tsv, whose
// seed-3 runs are not fitted on), with their FitLaunchSlope above load 10
// (docs/comparison.md, "Launch and fetch under load").
// TestMeasuredLaunchLoadIsTheFit checks that it is the fit of those
// samples.
var MeasuredLaunchLoad = LaunchLoadModel{Bands: []LaunchBand{
	{MinLoad: 0, MaxLoad: 2, Centre: 1.025, Runs: 10, Quantiles: []float64{
		11, 13.8, 15.15, 16.35, 17.4, 18.25, 19.3, 20.15, 20.85, 22, 23.05,
		24.1, 25.15, 25.9, 27.4, 29.15, 30.55, 33.45, 38.05, 48.7, 108.35}},
	{MinLoad: 2, MaxLoad: 8, Centre: 4.615, Runs: 13, Quantiles: []float64{
		8.8, 13.4, 16, 20, 23.8, 27.4, 32.6, 36.1, 41.4, 51.9, 55.4,
		59.4, 63.8, 72.7, 78.7, 90.5, 113.8, 129.5, 142.6, 170.6, 415.9}},
	{MinLoad: 8, MaxLoad: math.Inf(1), Centre: 9.985, Runs: 9, Quantiles: []float64{
		11.5, 18.7, 23.1, 26.7, 30.7, 35.4, 38.5, 41.2, 45.3, 49.2, 53.4,
		60.8, 64.4, 71.5, 92, 113.7, 123.8, 162.7, 179, 241.1, 412.3}},
}, Slope: 3.68}

// LaunchLoadFitEdges are the load bands a fit for judging (mr workload
// compare --sim-launch-fit) uses: MeasuredLaunchLoadEdges with a fourth
// edge at 16, which only samples at a load of 16 or more fill (a band with
// no sample is left out, so a fit on the seed 1 and 2 runs, loads 0.5-12,
// is MeasuredLaunchLoad).
var LaunchLoadFitEdges = []float64{0, 2, 8, 16, math.Inf(1)}

// MeasuredReduceLaunchLoad is the load-matched model of a reduce's own
// launch (its start to its reduce phase once its job's maps have ended:
// the launch, the fetch of the maps' output and the merge;
// Overheads.ReduceLaunchDist), fitted as MeasuredLaunchLoad is
// (FitLaunchLoad, MeasuredLaunchLoadEdges) on the same 32 runs of seeds 1
// and 2 (sim/testdata/reduce-launch-load-samples.tsv, whose seed-3 runs
// are not fitted on), with their FitLaunchSlope.
// TestMeasuredLaunchLoadIsTheFit checks it.
var MeasuredReduceLaunchLoad = LaunchLoadModel{Bands: []LaunchBand{
	{MinLoad: 0, MaxLoad: 2, Centre: 1.025, Runs: 10, Quantiles: []float64{
		15.5, 16.6, 17.65, 18.6, 18.85, 19.4, 20.4, 21.25, 22.35, 24.4, 26.25,
		26.9, 27.55, 31.35, 34.55, 37.55, 40.25, 47, 50.75, 58.9, 80.3}},
	{MinLoad: 2, MaxLoad: 8, Centre: 4.615, Runs: 13, Quantiles: []float64{
		19.3, 24.6, 26.6, 27.9, 30.2, 32, 32.6, 36.4, 40.7, 42.9, 43.9,
		45.3, 48, 51.3, 53.6, 61, 97.3, 131.1, 146.9, 176.8, 212.4}},
	{MinLoad: 8, MaxLoad: math.Inf(1), Centre: 9.985, Runs: 9, Quantiles: []float64{
		25.6, 37.9, 39.9, 43.4, 51, 52.5, 54.2, 56.6, 63, 70.2, 75.8,
		79.9, 86.1, 91.1, 102.3, 109.4, 123.4, 156.7, 169.7, 305.9, 427.1}},
}, Slope: 5.35}
