package partitions

import (
	"slices"
	"testing"
)

// TestBalancedCutoffs: SITA-E's cutoffs give each partition the share of
// the sample's work that its capacity is of the slots, as near as whole
// jobs allow.
func TestBalancedCutoffs(t *testing.T) {
	w := func(pairs ...float64) []sizedWork {
		var xs []sizedWork
		for i := 0; i < len(pairs); i += 2 {
			xs = append(xs, sizedWork{size: pairs[i], work: pairs[i+1]})
		}
		return xs
	}
	tests := []struct {
		name string
		xs   []sizedWork
		caps []float64
		want []float64
		ok   bool
	}{
		{"exact share", w(10, 10, 20, 20, 70, 70), []float64{0.3, 0.7}, []float64{20}, true},
		{"unsorted input", w(70, 70, 10, 10, 20, 20), []float64{0.3, 0.7}, []float64{20}, true},
		// 10 of 100 below 10, 30 below 20: 30% reached at size 20
		{"work is not size", w(10, 10, 20, 20, 25, 70), []float64{0.3, 0.7}, []float64{20}, true},
		// target 50: 40 below 40 is nearer than 100 at 60
		{"nearer below", w(40, 40, 60, 60), []float64{0.5, 0.5}, []float64{40}, true},
		// target 40 of 80: 45 at 20 is nearer than 10 below
		{"nearer above", w(10, 10, 20, 35, 60, 35), []float64{0.5, 0.5}, []float64{20}, true},
		{"ties on one side", w(5, 10, 5, 10, 5, 10, 50, 70), []float64{0.3, 0.7}, []float64{5}, true},
		{"three partitions", w(1, 20, 2, 20, 3, 20, 4, 20, 5, 20), []float64{0.2, 0.4, 0.4}, []float64{1, 3}, true},
		// target 30: nothing below (0 off by 30) is nearer than everything (off by 70)
		{"one job carries all", w(1, 0, 2, 0, 1000, 100), []float64{0.3, 0.7}, []float64{2}, true},
		{"no work", w(1, 0, 2, 0), []float64{0.3, 0.7}, nil, false},
		{"one partition", w(1, 1), []float64{1}, nil, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := balancedCutoffs(tc.xs, tc.caps)
			if ok != tc.ok || !slices.Equal(got, tc.want) {
				t.Errorf("balancedCutoffs = %v, %v; want %v, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}
