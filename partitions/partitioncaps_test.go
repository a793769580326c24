package partitions

import (
	"fmt"
	"testing"
)

func TestPartitionCaps(t *testing.T) {
	tests := []struct {
		cs    []float64
		total int
		want  []int
	}{
		{[]float64{0.3, 0.7}, 10, []int{3, 7}},
		{[]float64{0.3, 0.7}, 160, []int{48, 112}},
		{[]float64{0.3, 0.7}, 2, []int{1, 1}},
		{[]float64{0.1, 0.9}, 3, []int{1, 2}},
		{[]float64{0.5, 0.5}, 1, []int{1, 0}},
		{[]float64{0.2, 0.3, 0.5}, 64, []int{13, 19, 32}},
		{[]float64{1}, 7, []int{7}},
	}
	for _, tt := range tests {
		got := partitionCaps(tt.cs, tt.total, nil)
		if fmt.Sprint(got) != fmt.Sprint(tt.want) {
			t.Errorf("partitionCaps(%v, %d) = %v, want %v", tt.cs, tt.total, got, tt.want)
		}
	}
}

// TestTyrexStatic walks two jobs through StaticTAGS: the partition caps, a
// migration when the partial size passes the timer, running tasks staying
// in their partition, and the short job then having P1 to itself.
