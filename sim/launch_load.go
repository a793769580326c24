package sim

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// LaunchSample is one real run's launch distribution with the machine's
// load while it ran: what a load-matched launch model (LaunchLoadModel)
// is fitted on.
type LaunchSample struct {
	// Name says which run it is (mix, seed, policy).
	Name string
	// Load is the machine's 1-minute load average over the run: the mean
	// of its values at the run's start and end.
	Load float64
	// Quantiles are the run's launch costs at probabilities 0, 1/(n−1),
	// ..., 1 (LaunchQuantiles of them), in milliseconds.
	Quantiles []float64
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
// alone (the model does not extrapolate beyond the loads it was fitted
// on).
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
// bracketing bands' quantiles weighted as Bracket says. A weighted mean
// of non-decreasing quantile sets is non-decreasing, so the result is a
// distribution.
func (m LaunchLoadModel) Quantiles(load float64) []float64 {
	i, j, w := m.Bracket(load)
	if i < 0 {
		return nil
	}
	a, b := m.Bands[i].Quantiles, m.Bands[j].Quantiles
	q := make([]float64, len(a))
	for k := range q {
		q[k] = (1-w)*a[k] + w*b[k]
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
// seed-3 runs are not fitted on). TestMeasuredLaunchLoadIsTheFit checks
// that it is the fit of those samples.
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
}}
