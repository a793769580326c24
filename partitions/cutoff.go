package partitions

import (
	"math"
	"slices"
)

// CV2 returns the squared coefficient of variation n·Σx²/(Σx)² − 1 of xs
// (population variance over the squared mean); 0 for fewer than two values
// or a zero sum.
func CV2(xs []float64) float64 {
	if len(xs) < 2 {
		return 0
	}
	var s, s2 float64
	for _, x := range xs {
		s += x
		s2 += x * x
	}
	return cv2Sums(float64(len(xs)), s, s2)
}

func cv2Sums(n, s, s2 float64) float64 {
	if n < 2 || s == 0 {
		return 0
	}
	v := n*s2/(s*s) - 1
	if v < 0 {
		return 0 // rounding
	}
	return v
}

// OptimalCutoff returns the DynamicTAGS cutoff of the sample xs: among the
// distinct sample values but the largest, the p at which the CV² of
// min(X, p) is closest to the CV² of X − p over the values above p; ties
// go to the larger p. ok is false when there are fewer than two distinct
// values. The work is O(n log n); xs is not modified.
func OptimalCutoff(xs []float64) (p float64, ok bool) {
	var sc cutoffScratch
	return sc.optimalCutoff(xs, false)
}

// OptimalCutoffFromZero is OptimalCutoff of a sample of positive values
// with p also ranging below the smallest value, down to 0+, where min(X, p)
// is constant (CV² 0) and X − p is the whole sample: the cutoff that moves
// every job. It then returns p = 0. A sample of one value, or of equal
// values, has that cutoff only, at which both CV² are 0; ok is false only
// for an empty sample.
func OptimalCutoffFromZero(xs []float64) (p float64, ok bool) {
	var sc cutoffScratch
	return sc.optimalCutoff(xs, true)
}

// cutoffScratch holds OptimalCutoff's buffers for reuse.
type cutoffScratch struct {
	v, pre, pre2 []float64
}

func grow(b []float64, n int) []float64 {
	if cap(b) < n {
		return make([]float64, n)
	}
	return b[:n]
}

func (sc *cutoffScratch) optimalCutoff(xs []float64, fromZero bool) (p float64, ok bool) {
	n := len(xs)
	if n < 2 && !(fromZero && n == 1) {
		return 0, false
	}
	sc.v = append(sc.v[:0], xs...)
	v := sc.v
	slices.Sort(v)
	sc.pre, sc.pre2 = grow(sc.pre, n+1), grow(sc.pre2, n+1)
	pre := sc.pre   // Σ v[0..i)
	pre2 := sc.pre2 // Σ v[0..i)²
	for i, x := range v {
		pre[i+1] = pre[i] + x
		pre2[i+1] = pre2[i] + x*x
	}
	fn := float64(n)
	best := math.Inf(1)
	found := false
	if fromZero {
		// p -> 0+: min(X, p) is constant, X - p is the sample.
		best, found = cv2Sums(fn, pre[n], pre2[n]), true
	}
	for i := 0; i < n; i++ {
		if i+1 < n && v[i+1] == v[i] {
			continue // take the last of equal values
		}
		if i == n-1 {
			break // the maximum is no candidate
		}
		c := v[i]
		le := i + 1 // values <= c
		m := n - le // values > c
		sumL := pre[le] + float64(m)*c
		sumL2 := pre2[le] + float64(m)*c*c
		cvL := cv2Sums(fn, sumL, sumL2)
		s1 := pre[n] - pre[le]
		s2 := pre2[n] - pre2[le]
		cvR := 0.0
		if m > 1 {
			sumR := s1 - float64(m)*c
			sumR2 := s2 - 2*c*s1 + float64(m)*c*c
			cvR = cv2Sums(float64(m), sumR, sumR2)
		}
		diff := math.Abs(cvL - cvR)
		if !found || diff <= best+1e-12 {
			if !found || diff < best-1e-12 || c > p {
				p = c
			}
			best = math.Min(best, diff)
			found = true
		}
	}
	return p, found
}
