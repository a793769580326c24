package jobtracker

import (
	"testing"
	"time"
)

func TestFullTaskDuration(t *testing.T) {
	s := time.Second
	cases := []struct {
		name      string
		wall      time.Duration
		cost      time.Duration
		p0        float64
		want      time.Duration
		wantCount bool
	}{
		{"fresh attempt: its wall time", 40 * s, 0, 0, 40 * s, true},
		{"clone from half way: twice its run", 21 * s, 1 * s, 0.5, 40 * s, true},
		{"clone from 0.8: five times its run", 9 * s, 1 * s, 0.8, 40 * s, true},
		{"clone whose cost exceeds its wall time", 1 * s, 2 * s, 0.5, 0, true},
		{"clone from 0.96: no sample", 3 * s, 1 * s, 0.96, 0, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := fullTaskDuration(c.wall, c.cost, c.p0)
			if ok != c.wantCount || (ok && (got-c.want).Abs() > time.Millisecond) {
				t.Errorf("fullTaskDuration(%v, %v, %v) = %v, %v; want %v, %v", c.wall, c.cost, c.p0, got, ok, c.want, c.wantCount)
			}
		})
	}
}
