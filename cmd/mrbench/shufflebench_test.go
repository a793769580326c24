package main

import "testing"

// TestCutRange: the parts of a range cover it end to end, in order, the
// last one taking the remainder.
func TestCutRange(t *testing.T) {
	tests := []struct {
		from, to int64
		n        int
		want     [][2]int64
	}{
		{0, 10, 1, [][2]int64{{0, 10}}},
		{0, 10, 3, [][2]int64{{0, 3}, {3, 6}, {6, 10}}},
		{100, 110, 5, [][2]int64{{100, 102}, {102, 104}, {104, 106}, {106, 108}, {108, 110}}},
		{0, 2, 4, [][2]int64{{0, 0}, {0, 0}, {0, 0}, {0, 2}}},
	}
	for _, tc := range tests {
		for i, w := range tc.want {
			lo, hi := cutRange(tc.from, tc.to, tc.n, i)
			if lo != w[0] || hi != w[1] {
				t.Errorf("cutRange(%d, %d, %d, %d) = [%d, %d), want [%d, %d)", tc.from, tc.to, tc.n, i, lo, hi, w[0], w[1])
			}
		}
	}
}
