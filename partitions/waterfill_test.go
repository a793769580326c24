package partitions

import (
	"math"
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
