package child

import (
	"context"
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

// TestSlowdownWakeCutsTheSleepShort: an order for the work loop (a quiesce
// for a checkpoint, a split) cuts the injector's sleep short, so the slot's
// reclaim does not wait for the injector's delay; what was not slept stays
// owed, and the next tick sleeps it.
func TestSlowdownWakeCutsTheSleepShort(t *testing.T) {
	tests := []struct {
		name   string
		wakeAt time.Duration // after the sleep began; <0: no wake
		work   time.Duration
	}{
		{"woken early", 20 * time.Millisecond, 100 * time.Millisecond},
		{"woken before the sleep", 0, 100 * time.Millisecond},
		{"not woken", -1, 10 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wake := make(chan struct{}, 1)
			const k = 10
			s := &slowdown{k: k, wake: wake}
			s.last = time.Now().Add(-tt.work) // lastCPU 0: wall time only
			if tt.wakeAt == 0 {
				wake <- struct{}{}
			} else if tt.wakeAt > 0 {
				time.AfterFunc(tt.wakeAt, func() { wake <- struct{}{} })
			}
			began := time.Now()
			s.tick(context.Background())
			took := time.Since(began)
			owedTotal := time.Duration(k * float64(s.worked))
			if got := s.slept + s.owed; got < owedTotal-time.Millisecond || got > owedTotal+time.Millisecond {
				t.Errorf("slept %v + owed %v = %v, want the delay owed for the work, %v", s.slept, s.owed, got, owedTotal)
			}
			if tt.wakeAt < 0 {
				if s.owed != 0 || took < owedTotal {
					t.Errorf("not woken: slept %v of %v, %v still owed", took, owedTotal, s.owed)
				}
				return
			}
			if took > tt.wakeAt+300*time.Millisecond {
				t.Errorf("woken at %v, the sleep took %v", tt.wakeAt, took)
			}
			if s.owed <= 0 {
				t.Errorf("woken: nothing left owed (slept %v)", s.slept)
			}
			// The next tick, not woken, sleeps what is owed.
			owed := s.owed
			began = time.Now()
			s.tick(context.Background())
			if took := time.Since(began); took < owed || s.owed != 0 {
				t.Errorf("the next tick slept %v of the %v owed, %v still owed", took, owed, s.owed)
			}
		})
	}
}

// TestSlowdownCPUWork: with straggler.work=cpu the wall time outside the
// delays (a task waiting for a CPU on a loaded machine) is not work; only
// the process's CPU time is.
func TestSlowdownCPUWork(t *testing.T) {
	for _, cpuOnly := range []bool{false, true} {
		s := &slowdown{k: 1, cpuOnly: cpuOnly}
		s.start()
		time.Sleep(50 * time.Millisecond) // waiting, not working
		work := s.workSince(time.Now())
		if cpuOnly && work >= 25*time.Millisecond {
			t.Errorf("cpu: 50 ms asleep counted as %v of work", work)
		}
		if !cpuOnly && work < 50*time.Millisecond {
			t.Errorf("wall: 50 ms asleep counted as %v of work, want at least 50 ms", work)
		}
	}
}
