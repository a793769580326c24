package sim

import (
	"fmt"
	"testing"
	"time"
)

// TestFairPreemptionWakes: a pool with a minimum share of 8 maps and a
// 1 s timeout arrives into a cluster full of another pool's 100 s maps.
// The policy is asked again when the timeout expires (partitions.Waker),
// with or without a simulated heartbeat: each periodic job gets its 8
// slots 1 s after it arrives (plus up to a heartbeat), not when the long
// maps end. Before the wake-up, offering only freed slots, the simulator
// never preempted here without a heartbeat.
func TestFairPreemptionWakes(t *testing.T) {
	long := make([]time.Duration, 200)
	for i := range long {
		long[i] = 100 * time.Second
	}
	jobs := []Job{{ID: "long", Name: "long", Pool: "long", Maps: long}}
	for k := range 6 {
		per := make([]time.Duration, 8)
		for i := range per {
			per[i] = 50 * time.Second
		}
		jobs = append(jobs, Job{ID: fmt.Sprintf("p%d", k), Name: "periodic", Pool: "periodic",
			Submit: time.Duration(50+200*k) * time.Second, Maps: per})
	}
	for _, hb := range []time.Duration{0, time.Second} {
		w := &Workload{Name: "fair-wake", Trackers: 1, MapSlots: 10, ReduceSlots: 1, Slowstart: 1, Jobs: jobs}
		r, err := Run(w, Options{Policy: "fair", Heartbeat: hb, Slowstart: -1, Knowledge: KnowNone, Conf: map[string]string{
			"scheduler.fair.preemption": "true", "scheduler.fair.pools": "long:1,periodic:4:8:0:1s"}})
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range r.Jobs {
			if j.ID == "long" {
				continue
			}
			if resp := dur(j.Response); resp < 51*time.Second || resp > 51*time.Second+2*hb+time.Millisecond {
				t.Errorf("heartbeat %v: %s took %v, want 51 s (50 s of work after the 1 s timeout) plus up to two heartbeats", hb, j.ID, resp)
			}
		}
		if k := r.Preemption; k == nil || k.Kills != 48 {
			t.Errorf("heartbeat %v: preemption stats %+v, want 48 kills (8 per periodic job)", hb, k)
		}
	}
}
