package partitions

import "testing"

func TestRemainingTask(t *testing.T) {
	tests := []struct {
		name                 string
		elapsed, avg, maxDur float64
		want                 float64
	}{
		{"just started", 0, 85, 1000, 85},
		{"before the average", 60, 85, 1000, 25},
		{"at the average", 85, 85, 1000, 915},
		{"past the average", 100, 85, 1000, 900},
		{"past the maximum", 1200, 85, 1000, 0},
		{"equal tasks", 4, 10, 10, 6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := remainingTask(tt.elapsed, tt.avg, tt.maxDur); got != tt.want {
				t.Errorf("remainingTask(%v, %v, %v) = %v, want %v", tt.elapsed, tt.avg, tt.maxDur, got, tt.want)
			}
		})
	}
}
