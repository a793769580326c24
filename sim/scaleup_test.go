package sim

import (
	"math"
	"testing"
	"time"

	"gomr/preempt"
)

// scaleUpRun runs one job of a 300 s map and a 10 s reduce on 2 trackers
// of 2 map slots, heartbeat 1 s, with scale-up splits on or off (maps may
// be split after 10 s, with at least 30 s left; a piece's start-up 1 s).
func scaleUpRun(t *testing.T, policy string, on bool, deadline time.Duration) *Result {
	t.Helper()
	w := &Workload{Name: "scale-up", Trackers: 2, MapSlots: 2, ReduceSlots: 1, Slowstart: 1, Jobs: []Job{
		{ID: "long", Name: "long", Maps: []time.Duration{300 * time.Second}, Reduces: []time.Duration{10 * time.Second},
			Shuffles: []time.Duration{0}, Deadline: deadline},
	}}
	conf := map[string]string{preempt.KeySplitMinAge: "10s", preempt.KeySplitMinRemaining: "30s", preempt.KeyStartupCost: "1s"}
	if on {
		conf[preempt.KeyScaleUp] = "true"
	}
	r, err := Run(w, Options{Policy: policy, Conf: conf, Slowstart: -1, Knowledge: KnowOracle, Heartbeat: time.Second,
		Preemption: PreemptionModel{Splittable: true}})
	if err != nil {
		t.Fatalf("%s, scale-up %v: %v", policy, on, err)
	}
	return r
}

// TestScaleUpSplit: with scale-up splits the idle slots take pieces of the
// long map, so the job ends far sooner; the map work is conserved (the
// busy map slot-seconds are the map's 300 s plus one start-up per piece
// and remainder); the policy is told of the added maps, so a deadline
// policy runs them too (MinEDF gave them no quota before TasksAdded, and
// the run never finished).
func TestScaleUpSplit(t *testing.T) {
	for _, policy := range []string{"fifo", "fair", "minedf", "minedf-wc"} {
		t.Run(policy, func(t *testing.T) {
			off := scaleUpRun(t, policy, false, 400*time.Second)
			on := scaleUpRun(t, policy, true, 400*time.Second)
			if off.ScaleUp != nil {
				t.Errorf("scale-up stats %+v with scale-up off", off.ScaleUp)
			}
			su := on.ScaleUp
			if su == nil || su.Splits == 0 || su.MapsAdded < su.Splits {
				t.Fatalf("scale-up stats %+v, want splits that add maps", su)
			}
			respOff, respOn := off.Jobs[0].Response, on.Jobs[0].Response
			if respOn > respOff/2 {
				t.Errorf("response %.1f s with scale-up, %.1f s without: want under half", respOn, respOff)
			}
			// Each split of k pieces starts k attempts that pay the
			// start-up: k-1 added maps and the map's own remainder.
			startups := float64(su.Splits + su.MapsAdded)
			if got, want := on.busy[0], 300+startups; math.Abs(got-want) > 1e-6 {
				t.Errorf("busy map slot-s %.3f, want the map's 300 plus %v start-ups", got, startups)
			}
			if got := on.WastedSlotSeconds; math.Abs(got-startups) > 1e-6 {
				t.Errorf("wasted slot-s %.3f, want the %v start-ups", got, startups)
			}
			if on.KilledMapTasks != 0 {
				t.Errorf("%d maps killed", on.KilledMapTasks)
			}
			t.Logf("%s: response %.1f s without, %.1f s with scale-up (%d splits, %d maps added)", policy, respOff, respOn, su.Splits, su.MapsAdded)
		})
	}
}

// reduceScaleUpRun runs one job of a 10 s map and a 300 s reduce on 2
// trackers of 2 reduce slots, heartbeat 1 s, with scale-up splits on or
// off (a reduce may be split after 10 s, with at least 30 s left; a
// piece's start-up 1 s, its replay of its key range 2 s).
func reduceScaleUpRun(t *testing.T, policy string, on bool, deadline time.Duration) *Result {
	t.Helper()
	w := &Workload{Name: "reduce-scale-up", Trackers: 2, MapSlots: 1, ReduceSlots: 2, Slowstart: 1, Jobs: []Job{
		{ID: "long", Name: "long", Maps: []time.Duration{10 * time.Second}, Reduces: []time.Duration{300 * time.Second},
			Shuffles: []time.Duration{0}, Deadline: deadline},
	}}
	conf := map[string]string{preempt.KeySplitMinAge: "10s", preempt.KeySplitMinRemaining: "30s", preempt.KeyStartupCost: "1s"}
	if on {
		conf[preempt.KeyScaleUp] = "true"
	}
	r, err := Run(w, Options{Policy: policy, Conf: conf, Slowstart: -1, Knowledge: KnowOracle, Heartbeat: time.Second,
		Preemption: PreemptionModel{Splittable: true, ReduceReplay: 2 * time.Second}})
	if err != nil {
		t.Fatalf("%s, scale-up %v: %v", policy, on, err)
	}
	return r
}

// TestScaleUpSplitReduce: reduces are split for idle reduce slots as maps
// are for map slots: the job ends far sooner, the reduce work is
// conserved (the busy reduce slot-seconds are the reduce's 300 s plus a
// start-up and a replay per piece and remainder), and the policy is told
// of the added reduces, so that the deadline policies run them.
func TestScaleUpSplitReduce(t *testing.T) {
	for _, policy := range []string{"fifo", "fair", "minedf", "minedf-wc"} {
		t.Run(policy, func(t *testing.T) {
			off := reduceScaleUpRun(t, policy, false, 400*time.Second)
			on := reduceScaleUpRun(t, policy, true, 400*time.Second)
			su := on.ScaleUp
			if su == nil || su.ReduceSplits == 0 || su.ReducesAdded < su.ReduceSplits || su.Splits != 0 {
				t.Fatalf("scale-up stats %+v, want reduce splits that add reduces (and no map split)", su)
			}
			respOff, respOn := off.Jobs[0].Response, on.Jobs[0].Response
			if respOn > respOff/2 {
				t.Errorf("response %.1f s with scale-up, %.1f s without: want under half", respOn, respOff)
			}
			// Each split of k pieces starts k attempts that pay the
			// start-up and the replay: k-1 added reduces and the
			// reduce's own remainder.
			costs := 3 * float64(su.ReduceSplits+su.ReducesAdded)
			if got, want := on.busy[1], 300+costs; math.Abs(got-want) > 1e-6 {
				t.Errorf("busy reduce slot-s %.3f, want the reduce's 300 plus %v of start-ups and replays", got, costs)
			}
			if got := on.WastedSlotSeconds; math.Abs(got-costs) > 1e-6 {
				t.Errorf("wasted slot-s %.3f, want the %v of start-ups and replays", got, costs)
			}
			if on.KilledReduceTasks != 0 {
				t.Errorf("%d reduces killed", on.KilledReduceTasks)
			}
			t.Logf("%s: response %.1f s without, %.1f s with scale-up (%d reduce splits, %d reduces added)", policy, respOff, respOn, su.ReduceSplits, su.ReducesAdded)
		})
	}
}
