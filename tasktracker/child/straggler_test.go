package child

import (
	"testing"
	"time"
)

// TestSlowdownPauseLeavesOutTheQuietTime: the time an original spent
// stopped for a clone's dump is not work that the injector multiplies.
func TestSlowdownPauseLeavesOutTheQuietTime(t *testing.T) {
	tests := []struct {
		name          string
		since, paused time.Duration
		want          time.Duration
	}{
		{"no pause", 100 * time.Millisecond, 0, 100 * time.Millisecond},
		{"paused most of it", 100 * time.Millisecond, 80 * time.Millisecond, 20 * time.Millisecond},
		{"paused all of it", 100 * time.Millisecond, 100 * time.Millisecond, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			now := time.Now()
			s := &slowdown{k: 3, last: now.Add(-tt.since)} // lastCPU 0: wall time only
			s.pause(tt.paused)
			if got := s.workSince(now); got != tt.want {
				t.Errorf("work since the last tick = %v, want %v", got, tt.want)
			}
		})
	}
	var none *slowdown
	none.pause(time.Second) // a task without the injector: no-op
}
