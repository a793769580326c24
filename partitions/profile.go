package partitions

import (
	"math"
	"time"
)

// Profile is a job's performance profile in the sense of ARIA (Verma et
// al.): task duration statistics of earlier completed runs of a job with
// the same name. The JobTracker builds it from its job history (see
// NewProfile and MergeProfiles); the simulator gives an oracle profile of
// the durations it will replay.
type Profile struct {
	// Runs is how many completed runs the profile summarises.
	Runs int
	// MapAvg and MapMax are the mean and maximum map task durations.
	MapAvg, MapMax time.Duration
	// Shuffle1Avg and Shuffle1Max describe the shuffle of first-wave reduce
	// tasks, counting only the part after the job's last map finished.
	Shuffle1Avg, Shuffle1Max time.Duration
	// ShuffleAvg and ShuffleMax describe the shuffle of later-wave
	// ("typical") reduce tasks.
	ShuffleAvg, ShuffleMax time.Duration
	// ReduceAvg and ReduceMax describe the reduce phase (after the
	// shuffle and sort) of reduce tasks.
	ReduceAvg, ReduceMax time.Duration
}

// EstimateSize is the total task time (slot-time) a job of maps and
// reduces tasks is expected to take by the profile: every map its average
// map time, every reduce its typical shuffle and its reduce phase. It is 0
// without a profile (Runs 0). The JobTracker and the simulator both give
// it to policies as JobView.EstimatedSize.
func (p Profile) EstimateSize(maps, reduces int) time.Duration {
	if p.Runs <= 0 {
		return 0
	}
	return time.Duration(maps)*p.MapAvg + time.Duration(reduces)*(p.ShuffleAvg+p.ReduceAvg)
}

// ReduceSample is one reduce task of a completed run, for NewProfile.
type ReduceSample struct {
	// Shuffle is the shuffle and sort time; for a first-wave task, only
	// the part after the job's last map finished.
	Shuffle time.Duration
	// Reduce is the reduce phase time.
	Reduce time.Duration
	// FirstWave is set for a task launched before any reduce of the job
	// had completed.
	FirstWave bool
}

// NewProfile summarises one completed run. A run with no later-wave
// reduce gives its first-wave shuffle figures as the typical ones too, the
// best information there is.
func NewProfile(maps []time.Duration, reduces []ReduceSample) Profile {
	p := Profile{Runs: 1}
	p.MapAvg, p.MapMax = avgMax(maps)
	var first, typ, red []time.Duration
	for _, r := range reduces {
		if r.FirstWave {
			first = append(first, r.Shuffle)
		} else {
			typ = append(typ, r.Shuffle)
		}
		red = append(red, r.Reduce)
	}
	p.Shuffle1Avg, p.Shuffle1Max = avgMax(first)
	p.ShuffleAvg, p.ShuffleMax = avgMax(typ)
	if len(typ) == 0 {
		p.ShuffleAvg, p.ShuffleMax = p.Shuffle1Avg, p.Shuffle1Max
	}
	p.ReduceAvg, p.ReduceMax = avgMax(red)
	return p
}

// MergeProfiles combines two profiles of the same job name: averages
// weighted by their run counts, maxima as the larger.
func MergeProfiles(a, b Profile) Profile {
	if a.Runs <= 0 {
		return b
	}
	if b.Runs <= 0 {
		return a
	}
	wa, wb := float64(a.Runs), float64(b.Runs)
	avg := func(x, y time.Duration) time.Duration {
		return time.Duration((float64(x)*wa + float64(y)*wb) / (wa + wb))
	}
	return Profile{
		Runs:        a.Runs + b.Runs,
		MapAvg:      avg(a.MapAvg, b.MapAvg),
		MapMax:      max(a.MapMax, b.MapMax),
		Shuffle1Avg: avg(a.Shuffle1Avg, b.Shuffle1Avg),
		Shuffle1Max: max(a.Shuffle1Max, b.Shuffle1Max),
		ShuffleAvg:  avg(a.ShuffleAvg, b.ShuffleAvg),
		ShuffleMax:  max(a.ShuffleMax, b.ShuffleMax),
		ReduceAvg:   avg(a.ReduceAvg, b.ReduceAvg),
		ReduceMax:   max(a.ReduceMax, b.ReduceMax),
	}
}

func avgMax(ds []time.Duration) (avg, mx time.Duration) {
	if len(ds) == 0 {
		return 0, 0
	}
	var sum float64
	for _, d := range ds {
		sum += float64(d)
		mx = max(mx, d)
	}
	return time.Duration(sum / float64(len(ds))), mx
}

// Bound selects which ARIA completion-time bound an allocation targets.
type Bound int

// Bounds.
const (
	BoundLow Bound = iota
	BoundAvg
	BoundUp
)

// RoundMode selects how the continuous optimum becomes integer slots.
type RoundMode int

// Round modes.
const (
	// LagrangeCeil rounds the Lagrange optimum up (closest to the paper).
	LagrangeCeil RoundMode = iota
	// IntegerExact searches every map slot count for the integer minimum.
	IntegerExact
)

func sec(d time.Duration) float64 { return d.Seconds() }

// Coeffs returns the coefficients of the completion-time estimate
// T(m, r) = a/m + b/r + c of a job with nm maps and nr reduces still
// ahead of it, its whole map stage (and the first reduce wave) included,
// in seconds. A map-only job (nr = 0) has b = 0 and no shuffle term.
func Coeffs(p *Profile, nm, nr int, bound Bound) (a, b, c float64) {
	mAvg, mMax := sec(p.MapAvg), sec(p.MapMax)
	s1Avg, s1Max := sec(p.Shuffle1Avg), sec(p.Shuffle1Max)
	sAvg, sMax := sec(p.ShuffleAvg), sec(p.ShuffleMax)
	rAvg, rMax := sec(p.ReduceAvg), sec(p.ReduceMax)
	fm, fr := float64(nm), float64(nr)
	var aL, bL, cL, aU, bU, cU float64
	aL, aU = mAvg*fm, mAvg*math.Max(fm-1, 0)
	if nm == 0 {
		mMax = 0
	}
	if nr > 0 {
		bL, bU = (sAvg+rAvg)*fr, (sAvg+rAvg)*(fr-1)
		cL = s1Avg - sAvg
		cU = mMax + s1Max - sAvg + sMax + rMax
	} else {
		cL, cU = 0, mMax
	}
	return pick(bound, aL, aU), pick(bound, bL, bU), pick(bound, cL, cU)
}

// CoeffsReduceOnly returns the coefficients for a job whose map stage is
// done and that has nr reduces left; firstWave is set while no reduce of
// the job has been launched yet. a is always 0.
func CoeffsReduceOnly(p *Profile, nr int, bound Bound, firstWave bool) (b, c float64) {
	if nr <= 0 {
		return 0, 0
	}
	s1Avg, s1Max := sec(p.Shuffle1Avg), sec(p.Shuffle1Max)
	sAvg, sMax := sec(p.ShuffleAvg), sec(p.ShuffleMax)
	rAvg, rMax := sec(p.ReduceAvg), sec(p.ReduceMax)
	fr := float64(nr)
	bL, bU := (sAvg+rAvg)*fr, (sAvg+rAvg)*(fr-1)
	var cL, cU float64
	if firstWave {
		cL, cU = s1Avg-sAvg, s1Max-sAvg+sMax+rMax
	} else {
		cL, cU = 0, sMax+rMax
	}
	return pick(bound, bL, bU), pick(bound, cL, cU)
}

func pick(b Bound, lo, up float64) float64 {
	switch b {
	case BoundLow:
		return lo
	case BoundUp:
		return up
	default:
		return (lo + up) / 2
	}
}

// Estimate evaluates a/m + b/r + c; a term whose slot count is 0 is left
// out.
func Estimate(a, b, c float64, m, r int) float64 {
	t := c
	if m > 0 {
		t += a / float64(m)
	}
	if r > 0 {
		t += b / float64(r)
	}
	return t
}

func ceilEps(x float64) int {
	if x <= 0 || math.IsNaN(x) {
		return 0
	}
	if x > 1<<40 {
		return 1 << 40 // far beyond any slot count; avoids overflow
	}
	return int(math.Ceil(x - 1e-9))
}

func sign(n int) int {
	if n > 0 {
		return 1
	}
	return 0
}

// MinSlots returns the fewest map and reduce slots (m, r) whose estimate
// a/m + b/r + c is at most the budget d (seconds), for nm maps and nr
// reduces on a cluster of clusterM map and clusterR reduce slots. When no
// allocation meets d it returns the largest useful allocation,
// (min(nm, clusterM), min(nr, clusterR)), and ok = false.
func MinSlots(a, b, c, d float64, nm, nr, clusterM, clusterR int, mode RoundMode) (m, r int, ok bool) {
	capM, capR := min(nm, clusterM), min(nr, clusterR)
	if nm <= 0 && nr <= 0 {
		return 0, 0, true
	}
	dp := d - c
	if dp <= 0 || math.IsNaN(dp) {
		return capM, capR, false
	}
	switch {
	case nr <= 0 || b == 0:
		m = ceilEps(a / dp)
		r = min(capR, sign(nr))
	case nm <= 0 || a == 0:
		r = ceilEps(b / dp)
		m = min(capM, sign(nm))
	default:
		s := math.Sqrt(a) + math.Sqrt(b)
		m, r = ceilEps(math.Sqrt(a)*s/dp), ceilEps(math.Sqrt(b)*s/dp)
		if mode == IntegerExact {
			if em, er, found := exactSearch(a, b, dp, capM, capR); found {
				return em, er, true
			}
			return capM, capR, false
		}
	}
	if m > capM {
		m = capM
		rem := dp
		if m > 0 {
			rem -= a / float64(m)
		}
		if rem <= 0 {
			return capM, capR, false
		}
		r = ceilEps(b / rem)
	}
	if r > capR {
		r = capR
		rem := dp
		if r > 0 {
			rem -= b / float64(r)
		}
		if rem <= 0 {
			return capM, capR, false
		}
		m = ceilEps(a / rem)
	}
	if m > capM || r > capR {
		return capM, capR, false
	}
	return max(m, sign(nm)), max(r, sign(nr)), true
}

// exactSearch finds the integer (m, r) with the smallest m+r meeting the
// budget, ties broken by the smaller estimate.
func exactSearch(a, b, dp float64, capM, capR int) (int, int, bool) {
	bestM, bestR, found := 0, 0, false
	bestT := math.Inf(1)
	for m := 1; m <= capM; m++ {
		rem := dp - a/float64(m)
		if rem <= 0 {
			continue
		}
		r := max(ceilEps(b/rem), 1)
		if r > capR {
			continue
		}
		t := a/float64(m) + b/float64(r)
		if !found || m+r < bestM+bestR || (m+r == bestM+bestR && t < bestT) {
			bestM, bestR, bestT, found = m, r, t, true
		}
	}
	return bestM, bestR, found
}
