package partitions

import (
	"container/heap"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// the test profile of spec/deadline.md §1.9
var specProfile = Profile{Runs: 1, MapAvg: secs(20), MapMax: secs(30), Shuffle1Avg: secs(10), Shuffle1Max: secs(15),
	ShuffleAvg: secs(8), ShuffleMax: secs(12), ReduceAvg: secs(30), ReduceMax: secs(40)}

func TestCoeffsAndMinSlotsSpecVectors(t *testing.T) {
	tests := []struct {
		bound          Bound
		a, b, c        float64
		ceilM, ceilR   int
		ceilT          float64
		exactM, exactR int
		exactT         float64
	}{
		{BoundLow, 4000, 1900, 2, 12, 8, 572.83, 12, 8, 572.83},
		{BoundAvg, 3990, 1881, 45.5, 13, 9, 561.42, 12, 9, 587.00},
		{BoundUp, 3980, 1862, 89, 14, 9, 580.17, 14, 9, 580.17},
	}
	for _, tt := range tests {
		a, b, c := Coeffs(&specProfile, 200, 50, tt.bound)
		if math.Abs(a-tt.a) > 1e-9 || math.Abs(b-tt.b) > 1e-9 || math.Abs(c-tt.c) > 1e-9 {
			t.Errorf("bound %d: coeffs %v %v %v, want %v %v %v", tt.bound, a, b, c, tt.a, tt.b, tt.c)
		}
		m, r, ok := MinSlots(a, b, c, 600, 200, 50, 1000, 1000, LagrangeCeil)
		if !ok || m != tt.ceilM || r != tt.ceilR || math.Abs(Estimate(a, b, c, m, r)-tt.ceilT) > 0.005 {
			t.Errorf("bound %d LagrangeCeil: (%d,%d,%v) T=%.2f, want (%d,%d) T=%.2f", tt.bound, m, r, ok, Estimate(a, b, c, m, r), tt.ceilM, tt.ceilR, tt.ceilT)
		}
		m, r, ok = MinSlots(a, b, c, 600, 200, 50, 1000, 1000, IntegerExact)
		if !ok || m != tt.exactM || r != tt.exactR || math.Abs(Estimate(a, b, c, m, r)-tt.exactT) > 0.005 {
			t.Errorf("bound %d IntegerExact: (%d,%d,%v), want (%d,%d)", tt.bound, m, r, ok, tt.exactM, tt.exactR)
		}
		// at the continuous optimum the estimate equals D
		s := math.Sqrt(a) + math.Sqrt(b)
		dp := 600 - c
		cm, cr := math.Sqrt(a)*s/dp, math.Sqrt(b)*s/dp
		if got := a/cm + b/cr + c; math.Abs(got-600) > 1e-9 {
			t.Errorf("bound %d: estimate at the continuous optimum %v, want 600", tt.bound, got)
		}
	}
}

func TestMinSlotsEdges(t *testing.T) {
	tests := []struct {
		name       string
		a, b, c, d float64
		nm, nr     int
		cm, cr     int
		m, r       int
		ok         bool
	}{
		{"map-only", 1000, 0, 0, 100, 50, 0, 64, 64, 10, 0, true},
		{"Nm=1 under Up", 0, 380, 30, 100, 1, 10, 64, 64, 1, 6, true},
		{"nothing left", 0, 0, 0, 10, 0, 0, 64, 64, 0, 0, true},
		{"budget gone", 100, 100, 50, 40, 10, 10, 64, 64, 10, 10, false},
		{"clamp maps then resolve reduces", 100, 100, 0, 30, 5, 20, 64, 64, 5, 10, true},
		{"clamp to cluster", 10000, 0, 0, 100, 500, 0, 64, 64, 64, 0, false},
		{"clamped re-solve fails", 1000, 100, 0, 200, 4, 20, 64, 64, 4, 20, false},
		{"exact integer not off by one", 100, 0, 0, 10, 50, 0, 64, 64, 10, 0, true},
	}
	for _, tt := range tests {
		m, r, ok := MinSlots(tt.a, tt.b, tt.c, tt.d, tt.nm, tt.nr, tt.cm, tt.cr, LagrangeCeil)
		if m != tt.m || r != tt.r || ok != tt.ok {
			t.Errorf("%s: MinSlots = (%d,%d,%v), want (%d,%d,%v)", tt.name, m, r, ok, tt.m, tt.r, tt.ok)
		}
	}
}

// slotHeap is the free times of k slots.
type slotHeap []float64

func (h slotHeap) Len() int           { return len(h) }
func (h slotHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h slotHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *slotHeap) Push(x any)        { *h = append(*h, x.(float64)) }
func (h *slotHeap) Pop() any          { o := *h; x := o[len(o)-1]; *h = o[:len(o)-1]; return x }

// TestGreedyMakespanBounds is the property of spec/deadline.md §1.3: a
// greedy list schedule's makespan lies in [n·avg/k, (n−1)·avg/k + max].
func TestGreedyMakespanBounds(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, k := range []int{1, 7, 64} {
		for trial := 0; trial < 200; trial++ {
			n := 1 + rng.IntN(300)
			var sum, mx, makespan float64
			h := make(slotHeap, k)
			for i := 0; i < n; i++ {
				d := math.Exp(rng.NormFloat64()*1.5) * 10
				sum += d
				mx = math.Max(mx, d)
				s := heap.Pop(&h).(float64)
				heap.Push(&h, s+d)
				makespan = math.Max(makespan, s+d)
			}
			avg := sum / float64(n)
			lo, up := float64(n)*avg/float64(k), float64(n-1)*avg/float64(k)+mx
			if makespan < lo-1e-9 || makespan > up+1e-9 {
				t.Fatalf("k=%d n=%d: makespan %v outside [%v, %v]", k, n, makespan, lo, up)
			}
		}
	}
}

func TestNewProfileAndMerge(t *testing.T) {
	p := NewProfile([]time.Duration{secs(10), secs(30)}, []ReduceSample{
		{Shuffle: secs(4), Reduce: secs(20), FirstWave: true},
		{Shuffle: secs(6), Reduce: secs(40), FirstWave: true},
		{Shuffle: secs(9), Reduce: secs(30)},
	})
	want := Profile{Runs: 1, MapAvg: secs(20), MapMax: secs(30), Shuffle1Avg: secs(5), Shuffle1Max: secs(6),
		ShuffleAvg: secs(9), ShuffleMax: secs(9), ReduceAvg: secs(30), ReduceMax: secs(40)}
	if p != want {
		t.Fatalf("NewProfile = %+v, want %+v", p, want)
	}
	one := NewProfile([]time.Duration{secs(10)}, []ReduceSample{{Shuffle: secs(2), Reduce: secs(3), FirstWave: true}})
	if one.ShuffleAvg != secs(2) || one.ShuffleMax != secs(2) {
		t.Errorf("single wave: typical shuffle %v/%v, want the first wave's 2s", one.ShuffleAvg, one.ShuffleMax)
	}
	m := MergeProfiles(p, MergeProfiles(one, one))
	if m.Runs != 3 || m.MapAvg != secs(40.0/3) || m.MapMax != secs(30) {
		t.Errorf("merge: %+v", m)
	}
	if MergeProfiles(Profile{}, p) != p {
		t.Error("merge with an empty profile changed it")
	}
}

func FuzzMinSlots(f *testing.F) {
	f.Add(4000.0, 1900.0, 2.0, 600.0, 200, 50, 64, 64, true)
	f.Add(1000.0, 0.0, 0.0, 100.0, 50, 0, 64, 64, false)
	f.Add(0.0, 380.0, 30.0, 100.0, 1, 10, 64, 64, true)
	f.Add(5.0, 5.0, 1000.0, 10.0, 3, 3, 1, 1, false)
	f.Fuzz(func(t *testing.T, a, b, c, d float64, nm, nr, cm, cr int, exact bool) {
		if nm < 0 || nr < 0 || cm < 1 || cr < 1 || nm > 5000 || nr > 5000 || cm > 2000 || cr > 2000 {
			return
		}
		for _, x := range []float64{a, b, c, d} {
			if math.IsNaN(x) || math.IsInf(x, 0) || math.Abs(x) > 1e9 {
				return
			}
		}
		if a < 0 || b < 0 || (nm == 0 && a != 0) || (nr == 0 && b != 0) {
			return
		}
		mode := LagrangeCeil
		if exact {
			mode = IntegerExact
		}
		m, r, ok := MinSlots(a, b, c, d, nm, nr, cm, cr, mode)
		if nm == 0 && nr == 0 {
			if m != 0 || r != 0 || !ok {
				t.Fatalf("no tasks left: (%d,%d,%v)", m, r, ok)
			}
			return
		}
		capM, capR := min(nm, cm), min(nr, cr)
		if m < 0 || r < 0 || m > capM || r > capR {
			t.Fatalf("(%d,%d) outside [0,%d]x[0,%d]", m, r, capM, capR)
		}
		if !ok && (m != capM || r != capR) {
			t.Fatalf("infeasible but not the maximum: (%d,%d)", m, r)
		}
		if ok {
			if (nm > 0) != (m > 0) || (nr > 0) != (r > 0) {
				t.Fatalf("(%d,%d) for %d maps and %d reduces", m, r, nm, nr)
			}
			if est := Estimate(a, b, c, m, r); est > d+1e-6*math.Max(1, math.Abs(d)) {
				t.Fatalf("estimate %v over the budget %v at (%d,%d)", est, d, m, r)
			}
		}
	})
}
