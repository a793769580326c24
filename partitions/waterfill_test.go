package partitions

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
)

func TestWaterFill(t *testing.T) {
	tests := []struct {
		name  string
		es    []entity
		total float64
		want  []float64
	}{
		{"demand met", []entity{{weight: 1, demand: 2}, {weight: 1, demand: 3}}, 10, []float64{2, 3}},
		{"equal", []entity{{weight: 1, demand: 2}, {weight: 1, demand: 10}, {weight: 1, demand: 10}}, 12, []float64{2, 5, 5}},
		{"weights", []entity{{weight: 2, demand: 100}, {weight: 1, demand: 100}}, 30, []float64{20, 10}},
		{"min share", []entity{{weight: 1, minShare: 8, demand: 100}, {weight: 1, demand: 100}}, 10, []float64{8, 2}},
		{"min share capped by demand", []entity{{weight: 1, minShare: 8, demand: 3}, {weight: 1, demand: 100}}, 10, []float64{3, 7}},
		{"min share below fair", []entity{{weight: 1, minShare: 2, demand: 100}, {weight: 1, demand: 100}}, 10, []float64{5, 5}},
	}
	for _, tt := range tests {
		waterFill(tt.es, tt.total)
		for i, e := range tt.es {
			if math.Abs(e.share-tt.want[i]) > 1e-9 {
				t.Errorf("%s: share[%d] = %v, want %v", tt.name, i, e.share, tt.want[i])
			}
		}
	}
}

// waterFillBySearch is waterFill as it was before the sweep: a binary
// search over the breakpoints with used(r) at each step.
func waterFillBySearch(es []entity, total float64) {
	demand := 0.0
	for i := range es {
		es[i].minShare = math.Min(es[i].minShare, es[i].demand)
		demand += es[i].demand
	}
	if demand <= total {
		for i := range es {
			es[i].share = es[i].demand
		}
		return
	}
	at := func(e *entity, r float64) float64 { return math.Min(e.demand, math.Max(e.minShare, r*e.weight)) }
	used := func(r float64) float64 {
		s := 0.0
		for i := range es {
			s += at(&es[i], r)
		}
		return s
	}
	bps := []float64{0}
	for _, e := range es {
		if e.weight > 0 {
			bps = append(bps, e.minShare/e.weight, e.demand/e.weight)
		}
	}
	sort.Float64s(bps)
	i := sort.Search(len(bps), func(i int) bool { return used(bps[i]) >= total })
	var r float64
	switch {
	case i == 0:
	case i == len(bps):
		r = bps[len(bps)-1]
	default:
		lo, hi := bps[i-1], bps[i]
		mid := (lo + hi) / 2
		var a, b float64
		for _, e := range es {
			v := mid * e.weight
			switch {
			case v <= e.minShare:
				a += e.minShare
			case v >= e.demand:
				a += e.demand
			default:
				b += e.weight
			}
		}
		if b > 0 {
			r = (total - a) / b
		} else {
			r = hi
		}
	}
	for i := range es {
		es[i].share = at(&es[i], r)
	}
}

// TestWaterFillSameAsSearch checks that the sweep finds the breakpoint
// the binary search found, bit for bit, on random pools and jobs: integer
// demands (ties at the breakpoints), log and priority weights, min shares.
func TestWaterFillSameAsSearch(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var w waterFiller // one filler for every case, as Fair keeps one
	for n := range 6000 {
		size := 1 + rng.IntN(40)
		if n%6 == 5 { // the radix sort's sizes: up to 2,000 jobs in a pool
			size = 40 + rng.IntN(2000)
		}
		es := make([]entity, size)
		for i := range es {
			w := []float64{1, 0.25, 0.5, 2, 4, math.Log2(float64(2 + rng.IntN(200))), 0}[rng.IntN(7)]
			es[i] = entity{weight: w, demand: float64(rng.IntN(50))}
			if rng.IntN(4) == 0 {
				es[i].minShare = float64(rng.IntN(10))
			}
		}
		total := float64(rng.IntN(20 * len(es)))
		want := slices.Clone(es)
		waterFillBySearch(want, total)
		w.fill(es, total)
		for i := range es {
			if es[i].share != want[i].share {
				t.Fatalf("case %d: share[%d] = %v, the search's %v (entities %+v, total %v)", n, i, es[i].share, want[i].share, want, total)
			}
		}
	}
}

// TestSortBreakpoints checks the radix sort against a comparison sort on
// the keys it sees: small integers over equal weights (most bytes
// shared), log weights (every byte differs), duplicates, one value.
func TestSortBreakpoints(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	keys := map[string]func() float64{
		"integers": func() float64 { return float64(1 + rng.IntN(100)) },
		"log":      func() float64 { return float64(1+rng.IntN(100)) / math.Log2(float64(2+rng.IntN(200))) },
		"wide":     func() float64 { return math.Ldexp(1+rng.Float64(), rng.IntN(200)-100) },
		"one":      func() float64 { return 7 },
	}
	var tmp []breakpoint
	for name, key := range keys {
		for _, n := range []int{1, 47, 48, 49, 300, 2001} {
			bps := make([]breakpoint, n)
			for i := range bps {
				bps[i] = breakpoint{r: key(), dc: float64(i), dslope: -float64(i)}
			}
			want := slices.Clone(bps)
			slices.SortStableFunc(want, func(a, b breakpoint) int { return cmp.Compare(a.r, b.r) })
			tmp = sortBreakpoints(bps, tmp)
			for i := range bps {
				if bps[i].r != want[i].r {
					t.Fatalf("%s, %d keys: r[%d] = %v, want %v", name, n, i, bps[i].r, want[i].r)
				}
				if bps[i].dc != -bps[i].dslope { // each entry moved whole
					t.Fatalf("%s, %d keys: entry %d torn: %+v", name, n, i, bps[i])
				}
			}
			if !slices.EqualFunc(sortedDCs(bps), sortedDCs(want), func(a, b float64) bool { return a == b }) {
				t.Fatalf("%s, %d keys: entries lost or duplicated", name, n)
			}
		}
	}
}

func sortedDCs(bps []breakpoint) []float64 {
	out := make([]float64, len(bps))
	for i, b := range bps {
		out[i] = b.dc
	}
	slices.Sort(out)
	return out
}
