package partitions

import (
	"math"
	"sort"
	"testing"
)

func TestCV2(t *testing.T) {
	tests := []struct {
		xs   []float64
		want float64
	}{
		{nil, 0},
		{[]float64{5}, 0},
		{[]float64{3, 3, 3}, 0},
		{[]float64{1, 3}, 0.25},
		{[]float64{10, 10, 10, 10, 1000}, 5*(400+1e6)/(1040.0*1040) - 1},
		{[]float64{0, 0}, 0},
	}
	for _, tt := range tests {
		if got := CV2(tt.xs); math.Abs(got-tt.want) > 1e-12 {
			t.Errorf("CV2(%v) = %v, want %v", tt.xs, got, tt.want)
		}
	}
}

// bruteCutoff is OptimalCutoff written the obvious way.
func bruteCutoff(xs []float64) (float64, bool) {
	v := append([]float64(nil), xs...)
	sort.Float64s(v)
	best, bp, found := math.Inf(1), 0.0, false
	for i, p := range v {
		if p == v[len(v)-1] || (i+1 < len(v) && v[i+1] == p) {
			continue
		}
		var l, r []float64
		for _, x := range v {
			l = append(l, math.Min(x, p))
			if x > p {
				r = append(r, x-p)
			}
		}
		d := math.Abs(CV2(l) - CV2(r))
		if !found || d <= best+1e-12 {
			bp, best, found = p, math.Min(best, d), true
		}
	}
	return bp, found
}

func TestOptimalCutoff(t *testing.T) {
	tests := []struct {
		xs   []float64
		want float64
		ok   bool
	}{
		{[]float64{10, 10, 10, 10, 1000}, 10, true},
		{[]float64{10, 20}, 10, true},
		{[]float64{7, 7, 7}, 0, false},
		{[]float64{42}, 0, false},
		// p=1: L {1,1,1,1} 0, R {2,9,99} 1.451; p=3: L {1,3,3,3} 0.12,
		// R {7,97} 0.749; p=10: L {1,3,10,10} 0.458, R {90} 0. Closest: 10.
		{[]float64{1, 3, 10, 100}, 10, true},
	}
	for _, tt := range tests {
		got, ok := OptimalCutoff(tt.xs)
		if ok != tt.ok || (ok && got != tt.want) {
			t.Errorf("OptimalCutoff(%v) = %v,%v want %v,%v", tt.xs, got, ok, tt.want, tt.ok)
		}
		bp, bok := bruteCutoff(tt.xs)
		if bok != ok || (ok && bp != got) {
			t.Errorf("brute force disagrees on %v: %v,%v", tt.xs, bp, bok)
		}
	}
}

func FuzzOptimalCutoff(f *testing.F) {
	f.Add(1.0, 3.0, 10.0, 100.0, 1000.0)
	f.Add(5.0, 5.0, 5.0, 6.0, 500.0)
	f.Add(30.0, 60.0, 90.0, 120.0, 20000.0)
	f.Fuzz(func(t *testing.T, a, b, c, d, e float64) {
		xs := []float64{a, b, c, d, e}
		for _, x := range xs {
			if !(x > 0 && x < 1e7) {
				return
			}
		}
		got, ok := OptimalCutoff(xs)
		want, wok := bruteCutoff(xs)
		if ok != wok {
			t.Fatalf("%v: ok %v, brute %v", xs, ok, wok)
		}
		if !ok {
			return
		}
		// the two agree up to rounding ties between candidates
		if got != want {
			diff := func(p float64) float64 {
				var l, r []float64
				for _, x := range xs {
					l = append(l, math.Min(x, p))
					if x > p {
						r = append(r, x-p)
					}
				}
				return math.Abs(CV2(l) - CV2(r))
			}
			if math.Abs(diff(got)-diff(want)) > 1e-6 {
				t.Fatalf("%v: cutoff %v (diff %v), brute %v (diff %v)", xs, got, diff(got), want, diff(want))
			}
		}
	})
}

func TestOptimalCutoffFromZero(t *testing.T) {
	tests := []struct {
		name string
		xs   []float64
		want float64
		ok   bool
	}{
		{"empty", nil, 0, false},
		// one value: at p in (0, 42) both CV² are 0, so it moves (p = 0)
		{"lone job", []float64{42}, 0, true},
		{"equal values", []float64{7, 7, 7}, 0, true},
		// p=0+: L const (0), R the sample (3.62); p=10: L {10..} 0, R {990} 0
		{"one large", []float64{10, 10, 10, 10, 1000}, 10, true},
		// p=0+: |0 - CV²{1,3,10,100}| = 2.17 loses to p=10 (0.458)
		{"spread", []float64{1, 3, 10, 100}, 10, true},
		// p=0+: CV²{10,20} = 0.11; p=10: L {10,10} 0, R {10} 0: tie, the larger p
		{"two", []float64{10, 20}, 10, true},
	}
	for _, tt := range tests {
		got, ok := OptimalCutoffFromZero(tt.xs)
		if ok != tt.ok || (ok && got != tt.want) {
			t.Errorf("%s: OptimalCutoffFromZero(%v) = %v,%v want %v,%v", tt.name, tt.xs, got, ok, tt.want, tt.ok)
		}
		if len(tt.xs) >= 2 {
			// above 0 it is OptimalCutoff
			p, pok := OptimalCutoff(tt.xs)
			if pok && got != 0 && got != p {
				t.Errorf("%s: %v above 0, OptimalCutoff %v", tt.name, got, p)
			}
		}
	}
}
