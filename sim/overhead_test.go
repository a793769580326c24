package sim

import (
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"gomr/partitions"
)

func ms(x float64) time.Duration { return time.Duration(x * float64(time.Millisecond)) }

// TestOverheadFormulas checks the model's formulas (Overheads).
func TestOverheadFormulas(t *testing.T) {
	o := Overheads{Launch: ms(20), Report: ms(10), MapEvents: ms(5), OutOfBand: true, AfterLaunch: ms(50)}
	neg := o
	neg.MapEvents = -ms(8)
	tests := []struct {
		name      string
		got, want time.Duration
	}{
		{"map: launch + work + report", o.mapEnd(s(1), s(2)), s(3) + ms(30)},
		{"map: zero model adds nothing", Overheads{}.mapEnd(s(1), s(2)), s(3)},
		{"reduce waiting for the maps: phase at maps end + map events", phaseOf(o.reduceEnd(s(1), s(1), s(5), s(2))), s(5) + ms(5)},
		{"reduce waiting for the maps: end", endOf(o.reduceEnd(s(1), s(1), s(5), s(2))), s(7) + ms(15)},
		{"reduce whose shuffle outlasts the maps: phase after launch + shuffle", phaseOf(o.reduceEnd(s(1), s(5), s(3), s(2))), s(6) + ms(20)},
		{"reduce: end = phase + reduce + report", endOf(o.reduceEnd(s(1), s(5), s(3), s(2))), s(8) + ms(30)},
		{"reduce: map events before the map's end is reported", phaseOf(neg.reduceEnd(s(1), 0, s(5), s(2))), s(5) - ms(8)},
		{"reduce: zero model is max(start + shuffle, maps end)", endOf(Overheads{}.reduceEnd(s(1), s(1), s(5), s(2))), s(7)},
		{"heartbeat soon after a launch: after-launch delay", o.nextHeartbeat(s(1), ms(300), true), s(1) + ms(50)},
		{"heartbeat without a launch: the period", o.nextHeartbeat(s(1), ms(300), false), s(1) + ms(300)},
		{"after-launch delay is at most the period", o.nextHeartbeat(s(1), ms(30), true), s(1) + ms(30)},
		{"no after-launch delay: the period", Overheads{}.nextHeartbeat(s(1), ms(300), true), s(1) + ms(300)},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, tt.got, tt.want)
		}
	}
}

// TestSoonAfter checks when a tracker heartbeats again soon after a
// heartbeat (Overheads.soonAfter): as the TaskTracker's reportSoonAfter,
// after a launch that left a slot of a launched type free, or an offer
// that preempted; with AfterEveryLaunch after every launch.
func TestSoonAfter(t *testing.T) {
	every := Overheads{AfterLaunch: ms(50), AfterEveryLaunch: true}
	tests := []struct {
		name      string
		o         Overheads
		lm, lr    bool // launched maps, reduces
		fm, fr    int  // free slots after
		preempted bool
		want      bool
	}{
		{"nothing launched", Overheads{}, false, false, 2, 1, false, false},
		{"a map launched, a map slot still free", Overheads{}, true, false, 1, 0, false, true},
		{"a map launched filling the map slots, a reduce slot free", Overheads{}, true, false, 0, 1, false, false},
		{"a reduce launched filling the reduce slots, map slots free", Overheads{}, false, true, 2, 0, false, false},
		{"a reduce launched, a reduce slot still free", Overheads{}, false, true, 0, 1, false, true},
		{"both launched, both types full", Overheads{}, true, true, 0, 0, false, false},
		{"both launched, reduce slots full, a map slot free", Overheads{}, true, true, 1, 0, false, true},
		{"preempted, nothing launched", Overheads{}, false, false, 0, 0, true, true},
		{"preempted and filled", Overheads{}, true, false, 0, 0, true, true},
		{"after every launch: filled", every, true, false, 0, 0, false, true},
		{"after every launch: nothing launched", every, false, false, 1, 1, false, false},
	}
	for _, tt := range tests {
		if got := tt.o.soonAfter(tt.lm, tt.lr, tt.fm, tt.fr, tt.preempted); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}

func phaseOf(phase, _ time.Duration) time.Duration { return phase }
func endOf(_, end time.Duration) time.Duration     { return end }

func TestOverheadChecks(t *testing.T) {
	tests := []struct {
		o         Overheads
		heartbeat time.Duration
		want      string // "" valid
	}{
		{Overheads{}, 0, ""},
		{MeasuredOverheads, ms(300), ""},
		{Overheads{Launch: ms(10), Report: ms(10), MapEvents: -ms(10)}, 0, ""},
		{Overheads{Launch: -ms(1)}, 0, "must not be negative"},
		{Overheads{AfterLaunch: -ms(1)}, ms(300), "must not be negative"},
		{Overheads{Report: ms(10), MapEvents: -ms(11)}, 0, "earlier than the last map's code ends"},
		{Overheads{OutOfBand: true}, 0, "need a heartbeat interval"},
		{Overheads{AfterLaunch: ms(50)}, 0, "need a heartbeat interval"},
	}
	for _, tt := range tests {
		err := tt.o.check(tt.heartbeat)
		if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("%+v, heartbeat %v: %v, want %q", tt.o, tt.heartbeat, err, tt.want)
		}
	}
	w := tiny(Job{ID: "A", Maps: ds(1)})
	if _, err := Run(w, Options{Policy: "fifo", Slowstart: -1, Overheads: Overheads{OutOfBand: true}}); err == nil || !strings.Contains(err.Error(), "heartbeat") {
		t.Errorf("Run with out-of-band heartbeats and no heartbeat: %v", err)
	}
	if _, err := Run(w, Options{Policy: "fifo", Slowstart: -1, Overheads: Overheads{Launch: ms(1)}, Speculation: Speculation{Mode: SpecFresh}}); err == nil || !strings.Contains(err.Error(), "speculation") {
		t.Errorf("Run with overheads and speculation: %v", err)
	}
}

// TestOverheadsInTheEngine checks the engine's use of the model on
// hand-made schedules, to the millisecond.
func TestOverheadsInTheEngine(t *testing.T) {
	type want struct{ start, finish float64 }
	costs := Overheads{Launch: ms(100), Report: ms(50), MapEvents: ms(20)}
	oneSlot := func(slowstart float64, jobs ...Job) *Workload {
		return &Workload{Name: "one", Trackers: 1, MapSlots: 1, ReduceSlots: 1, Slowstart: slowstart, Jobs: jobs}
	}
	twoTrackers := func(jobs ...Job) *Workload {
		return &Workload{Name: "two", Trackers: 2, MapSlots: 1, ReduceSlots: 1, Slowstart: 1, Jobs: jobs}
	}
	tests := []struct {
		name string
		w    *Workload
		opt  Options
		want map[string]want
		// ref is A's slowdown reference (the ideal runtime alone).
		ref float64
	}{
		{
			// map 0: 0-1.15, map 1: 1.15-2.3; the reduce starts at 2.3,
			// its phase at max(2.3 + 0.1, 2.3 + 0.02) = 2.4, ends at
			// 2.4 + 2 + 0.05
			name: "task costs, reduce after the maps",
			w:    oneSlot(1, Job{ID: "A", Maps: ds(1, 1), Reduces: ds(2)}),
			opt:  Options{Overheads: costs},
			want: map[string]want{"A": {0, 4.45}},
			ref:  4,
		},
		{
			// the reduce starts at 0 and waits: phase at 2.3 + 0.02
			name: "task costs, reduce waiting for the maps",
			w:    oneSlot(0, Job{ID: "A", Maps: ds(1, 1), Reduces: ds(2)}),
			opt:  Options{Overheads: costs},
			want: map[string]want{"A": {0, 4.37}},
			ref:  4,
		},
		{
			// the reduce's shuffle (3 s from its process start at 0.1)
			// outlasts the maps: phase at 3.1
			name: "task costs, long shuffle",
			w:    oneSlot(0, Job{ID: "A", Maps: ds(1, 1), Reduces: ds(2), Shuffles: ds(3)}),
			opt:  Options{Overheads: costs},
			want: map[string]want{"A": {0, 5.15}},
			ref:  5,
		},
		{
			// heartbeats every 1 s, tracker 0 at 0, 1, 2..., tracker 1 at
			// 0.5, 1.5...: A arrives at 0.2 and starts at tracker 1's 0.5
			// (map 0: 0.5-2.3), then tracker 0's 1.0 (map 1: 1.0-2.8). Map
			// 0's end on tracker 1 is reported out of band at 2.3, which
			// launches map 2 at once: 2.3-4.1.
			name: "a job waits for a heartbeat; a task's end offers its tracker at once",
			w:    twoTrackers(Job{ID: "A", Submit: s(0.2), Maps: ds(1.8, 1.8, 1.8)}),
			opt:  Options{Heartbeat: s(1), Overheads: Overheads{OutOfBand: true}},
			want: map[string]want{"A": {0.5, 4.1}},
			ref:  3.6,
		},
		{
			// without the out-of-band heartbeat map 2 waits for tracker
			// 1's 2.5
			name: "without out-of-band heartbeats a freed slot waits",
			w:    twoTrackers(Job{ID: "A", Submit: s(0.2), Maps: ds(1.8, 1.8, 1.8)}),
			opt:  Options{Heartbeat: s(1)},
			want: map[string]want{"A": {0.5, 4.3}},
		},
		{
			// A's last map (2.3-2.8 on tracker 1) and map 1 (1.0-2.8 on
			// tracker 0) end at 2.8; their out-of-band heartbeats restart
			// both trackers' periods: next heartbeats at 3.8, not tracker
			// 1's 3.5 or tracker 0's 3.0. B, arriving at 3.4, starts at 3.8.
			name: "every heartbeat restarts the tracker's period",
			w:    twoTrackers(Job{ID: "A", Submit: s(0.2), Maps: ds(1.8, 1.8, 0.5)}, Job{ID: "B", Submit: s(3.4), Maps: ds(1)}),
			opt:  Options{Heartbeat: s(1), Overheads: Overheads{OutOfBand: true}},
			want: map[string]want{"A": {0.5, 2.8}, "B": {3.8, 4.8}},
		},
		{
			// one tracker of 2 map slots: A's heartbeat at 0 launches its
			// map, so the tracker heartbeats again at 0.05 and B (0.02)
			// starts then, not at 1
			name: "a heartbeat that launched is followed by another soon",
			w: &Workload{Name: "after", Trackers: 1, MapSlots: 2, ReduceSlots: 1, Slowstart: 1,
				Jobs: []Job{{ID: "A", Maps: ds(5)}, {ID: "B", Submit: s(0.02), Maps: ds(1)}}},
			opt:  Options{Heartbeat: s(1), Overheads: Overheads{AfterLaunch: ms(50)}},
			want: map[string]want{"A": {0, 5}, "B": {0.05, 1.05}},
			ref:  5,
		},
		{
			// one tracker of 1 map and 1 reduce slot, slow-start 0: A's
			// heartbeat at 0 launches its map, which fills the map slots,
			// so the tracker waits for its period: B (0.02) gets the free
			// reduce slot at 1, and its map after A's ends (5-6, reported
			// out of band)
			name: "a heartbeat whose launch filled the slots waits for the period",
			w: &Workload{Name: "filled", Trackers: 1, MapSlots: 1, ReduceSlots: 1, Slowstart: 0,
				Jobs: []Job{{ID: "A", Maps: ds(5)}, {ID: "B", Submit: s(0.02), Maps: ds(1), Reduces: ds(0.5)}}},
			opt:  Options{Heartbeat: s(1), Overheads: Overheads{OutOfBand: true, AfterLaunch: ms(50)}},
			want: map[string]want{"A": {0, 5}, "B": {1, 6.5}},
			ref:  5,
		},
		{
			// the same with the TaskTracker before 2026-11-26, which
			// heartbeated 50 ms after every launch: B's reduce at 0.05
			name: "after every launch: the reduce slot is offered at 0.05",
			w: &Workload{Name: "every", Trackers: 1, MapSlots: 1, ReduceSlots: 1, Slowstart: 0,
				Jobs: []Job{{ID: "A", Maps: ds(5)}, {ID: "B", Submit: s(0.02), Maps: ds(1), Reduces: ds(0.5)}}},
			opt:  Options{Heartbeat: s(1), Overheads: Overheads{OutOfBand: true, AfterLaunch: ms(50), AfterEveryLaunch: true}},
			want: map[string]want{"A": {0, 5}, "B": {0.05, 6.5}},
			ref:  5,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opt := tt.opt
			opt.Policy, opt.Slowstart = "fifo", -1
			r, err := Run(tt.w, opt)
			if err != nil {
				t.Fatal(err)
			}
			got := byID(r)
			for id, w := range tt.want {
				j := got[id]
				if !nearMs(j.Start, w.start) || !nearMs(j.Finish, w.finish) {
					t.Errorf("%s: start %v finish %v, want %v %v", id, j.Start, j.Finish, w.start, w.finish)
				}
			}
			if a := got["A"]; tt.ref > 0 && !nearMs(a.Ref, tt.ref) {
				t.Errorf("A's reference %v, want the ideal runtime alone %v", a.Ref, tt.ref)
			}
		})
	}
}

func nearMs(a, b float64) bool { return a-b < 1e-6 && b-a < 1e-6 }

// TestLaunchDistAt checks the inverse distribution of a launch spread:
// its quantiles at their probabilities, linear between them, clamped.
func TestLaunchDistAt(t *testing.T) {
	d := &LaunchDist{Quantiles: []time.Duration{ms(20), ms(40), ms(100)}}
	tests := []struct {
		u    float64
		want time.Duration
	}{
		{0, ms(20)},
		{0.25, ms(30)},
		{0.5, ms(40)},
		{0.75, ms(70)},
		{0.9, ms(88)},
		{1, ms(100)},
		{-1, ms(20)},
		{2, ms(100)},
	}
	for _, tt := range tests {
		if got := d.At(tt.u); got != tt.want {
			t.Errorf("At(%v) = %v, want %v", tt.u, got, tt.want)
		}
	}
	if got := (&LaunchDist{Quantiles: []time.Duration{ms(7)}}).At(0.5); got != ms(7) {
		t.Errorf("one quantile: At(0.5) = %v, want 7ms", got)
	}
}

// TestLaunchDistDraw checks the draws: deterministic per seed and attempt
// whatever the order, different across seeds and attempts, and spread as
// the quantiles say.
func TestLaunchDistDraw(t *testing.T) {
	q := []time.Duration{ms(20), ms(30), ms(40), ms(60), ms(1000)} // quartiles
	d1, d1b, d2 := &LaunchDist{Quantiles: q, Seed: 1}, &LaunchDist{Quantiles: q, Seed: 1}, &LaunchDist{Quantiles: q, Seed: 2}
	type key struct {
		job       string
		typ       partitions.TaskType
		task, num int
	}
	var keys []key
	for j := 0; j < 20; j++ {
		for task := 0; task < 50; task++ {
			keys = append(keys, key{"job" + strconv.Itoa(j), partitions.Map, task, 0}, key{"job" + strconv.Itoa(j), partitions.Reduce, task, 1})
		}
	}
	first := map[key]time.Duration{}
	for _, k := range keys {
		first[k] = d1.Draw(k.job, k.typ, k.task, k.num)
	}
	sameSeed, otherSeed := 0, 0
	var below30, below60, all int
	for i := len(keys) - 1; i >= 0; i-- { // the other order
		k := keys[i]
		v := d1b.Draw(k.job, k.typ, k.task, k.num)
		if v == first[k] {
			sameSeed++
		}
		if d2.Draw(k.job, k.typ, k.task, k.num) == v {
			otherSeed++
		}
		if v < q[0] || v > q[4] {
			t.Fatalf("draw %v outside [%v, %v]", v, q[0], q[4])
		}
		all++
		if v <= ms(30) {
			below30++
		}
		if v <= ms(60) {
			below60++
		}
	}
	if sameSeed != len(keys) {
		t.Errorf("same seed, other order: %d of %d draws equal", sameSeed, len(keys))
	}
	if otherSeed > len(keys)/20 {
		t.Errorf("seeds 1 and 2 gave %d of %d equal draws", otherSeed, len(keys))
	}
	tests := []struct {
		name     string
		got, exp float64
	}{
		{"share at most the first quartile", float64(below30) / float64(all), 0.25},
		{"share at most the third quartile", float64(below60) / float64(all), 0.75},
	}
	for _, tt := range tests {
		if math.Abs(tt.got-tt.exp) > 0.03 {
			t.Errorf("%s: %.3f, want %.2f ± 0.03 over %d draws", tt.name, tt.got, tt.exp, all)
		}
	}
}

// TestLaunchDistInTheEngine checks that a spread of one value is the
// constant, and that a spread charges each attempt its own draw.
func TestLaunchDistInTheEngine(t *testing.T) {
	w := &Workload{Name: "one", Trackers: 1, MapSlots: 1, ReduceSlots: 1, Slowstart: 1,
		Jobs: []Job{{ID: "A", Maps: ds(1, 1), Reduces: ds(2)}}}
	run := func(o Overheads) time.Duration {
		t.Helper()
		r, err := Run(w, Options{Policy: "fifo", Slowstart: -1, Overheads: o})
		if err != nil {
			t.Fatal(err)
		}
		return time.Duration(math.Round(r.Jobs[0].Finish*1e6)) * time.Microsecond
	}
	base := Overheads{Launch: ms(100), Report: ms(50), MapEvents: ms(20)}
	flat := base
	flat.Launch, flat.LaunchDist = 0, &LaunchDist{Quantiles: []time.Duration{ms(100), ms(100)}, Seed: 3}
	if a, b := run(base), run(flat); a != b {
		t.Errorf("a spread of one value: %v, the constant: %v", b, a)
	}
	// the three attempts' draws, summed: maps in turn, then the reduce
	// (its phase after its own launch, the maps having ended)
	d := &LaunchDist{Quantiles: []time.Duration{0, ms(400)}, Seed: 9}
	spread := base
	spread.LaunchDist = d
	want := s(4) + 3*ms(50) + d.Draw("A", partitions.Map, 0, 0) + d.Draw("A", partitions.Map, 1, 0) + d.Draw("A", partitions.Reduce, 0, 0)
	if got := run(spread); got != want.Round(time.Microsecond) {
		t.Errorf("spread: job A ran %v, want %v", got, want)
	}
	bad := []Overheads{
		{LaunchDist: &LaunchDist{Quantiles: []time.Duration{ms(1)}}},
		{LaunchDist: &LaunchDist{Quantiles: []time.Duration{ms(5), ms(1)}}},
		{LaunchDist: &LaunchDist{Quantiles: []time.Duration{-ms(5), ms(1)}}},
	}
	for _, o := range bad {
		if _, err := Run(w, Options{Policy: "fifo", Slowstart: -1, Overheads: o}); err == nil || !strings.Contains(err.Error(), "launch distribution") {
			t.Errorf("quantiles %v: %v, want a launch distribution error", o.LaunchDist.Quantiles, err)
		}
	}
}

// TestReduceLaunchDistInTheEngine: with ReduceLaunchDist, a reduce's
// launch is its draw from it (with the same uniform number as
// LaunchDist's draw for it) and the maps keep LaunchDist's; a bad
// reduce distribution is refused.
func TestReduceLaunchDistInTheEngine(t *testing.T) {
	w := &Workload{Name: "one", Trackers: 1, MapSlots: 1, ReduceSlots: 1, Slowstart: 1,
		Jobs: []Job{{ID: "A", Maps: ds(1, 1), Reduces: ds(2)}}}
	run := func(o Overheads) time.Duration {
		t.Helper()
		r, err := Run(w, Options{Policy: "fifo", Slowstart: -1, Overheads: o})
		if err != nil {
			t.Fatal(err)
		}
		return time.Duration(math.Round(r.Jobs[0].Finish*1e6)) * time.Microsecond
	}
	o := Overheads{Report: ms(50), MapEvents: ms(20)}
	o.LaunchDist = &LaunchDist{Quantiles: []time.Duration{0, ms(400)}, Seed: 9}
	o.ReduceLaunchDist = &LaunchDist{Quantiles: []time.Duration{ms(1000), ms(3000)}, Seed: 9}
	d, r := o.LaunchDist, o.ReduceLaunchDist
	want := s(4) + 3*ms(50) + d.Draw("A", partitions.Map, 0, 0) + d.Draw("A", partitions.Map, 1, 0) + r.Draw("A", partitions.Reduce, 0, 0)
	if got := run(o); got != want.Round(time.Microsecond) {
		t.Errorf("job A ran %v, want %v (the reduce's launch from its own distribution)", got, want)
	}
	// the same uniform number: the reduce's draw is at the same quantile
	u := float64(d.Draw("A", partitions.Reduce, 0, 0)) / float64(ms(400))
	if got, want := r.Draw("A", partitions.Reduce, 0, 0), ms(1000)+time.Duration(u*float64(ms(2000))); (got - want).Abs() > time.Millisecond {
		t.Errorf("reduce draw %v, want %v (quantile %.3f)", got, want, u)
	}
	bad := o
	bad.ReduceLaunchDist = &LaunchDist{Quantiles: []time.Duration{ms(5), ms(1)}}
	if _, err := Run(w, Options{Policy: "fifo", Slowstart: -1, Overheads: bad}); err == nil || !strings.Contains(err.Error(), "launch distribution") {
		t.Errorf("a decreasing reduce launch distribution: %v, want a launch distribution error", err)
	}
}

// TestFirstHeartbeat: trackers spread evenly over the period, or drawn in
// it from the launch distribution's seed when DrawPhases is set; or all
// one period after the start (FirstAtPeriod).
func TestFirstHeartbeat(t *testing.T) {
	even := Overheads{}
	for i, want := range []time.Duration{0, ms(100), ms(200)} {
		if got := even.firstHeartbeat(i, 3, ms(300)); got != want {
			t.Errorf("even: tracker %d at %v, want %v", i, got, want)
		}
	}
	d := func(seed uint64) Overheads {
		return Overheads{DrawPhases: true, LaunchDist: &LaunchDist{Quantiles: []time.Duration{0, ms(1)}, Seed: seed}}
	}
	differ := 0
	for i := 0; i < 50; i++ {
		a, b := d(1).firstHeartbeat(i, 50, ms(300)), d(1).firstHeartbeat(i, 50, ms(300))
		if a != b || a < 0 || a >= ms(300) {
			t.Fatalf("tracker %d: %v and %v, want the same draw in [0, 300ms)", i, a, b)
		}
		if d(2).firstHeartbeat(i, 50, ms(300)) != a {
			differ++
		}
	}
	if differ < 45 {
		t.Errorf("seeds 1 and 2 drew the same phase for %d of 50 trackers", 50-differ)
	}
	if got := (Overheads{DrawPhases: true}).firstHeartbeat(1, 3, ms(300)); got != ms(100) {
		t.Errorf("drawn phases without a launch distribution (no seed): %v, want the even 100ms", got)
	}
	at := Overheads{FirstAtPeriod: true}
	for i := 0; i < 3; i++ {
		if got := at.firstHeartbeat(i, 3, ms(300)); got != ms(300)+time.Duration(i) {
			t.Errorf("at the period: tracker %d at %v, want 300ms + %dns", i, got, i)
		}
	}
	orders := map[bool]int{}
	for seed := uint64(1); seed <= 20; seed++ {
		o := d(seed)
		o.FirstAtPeriod = true
		a, b := o.firstHeartbeat(0, 2, ms(300)), o.firstHeartbeat(1, 2, ms(300))
		for _, x := range []time.Duration{a, b} {
			if x < ms(300) || x >= ms(301) {
				t.Fatalf("seed %d: drawn at the period: %v, want in [300ms, 301ms)", seed, x)
			}
		}
		orders[a < b]++
	}
	if orders[true] == 0 || orders[false] == 0 {
		t.Errorf("drawn at the period: tracker 0 first in %d of 20 seeds, want both orders", orders[true])
	}
	w := &Workload{Name: "one", Trackers: 1, MapSlots: 1, ReduceSlots: 1, Jobs: []Job{{ID: "A", Maps: ds(1)}}}
	if _, err := Run(w, Options{Policy: "fifo", Slowstart: -1, Overheads: d(1)}); err == nil || !strings.Contains(err.Error(), "drawn heartbeat phases") {
		t.Errorf("drawn phases without a heartbeat: %v, want refused", err)
	}
	if _, err := Run(w, Options{Policy: "fifo", Slowstart: -1, Overheads: at}); err == nil || !strings.Contains(err.Error(), "first heartbeats at the period") {
		t.Errorf("first heartbeats at the period without a heartbeat: %v, want refused", err)
	}
	// A job submitted at 0 starts at the first heartbeat: 300 ms.
	w1 := &Workload{Name: "one", Trackers: 2, MapSlots: 1, ReduceSlots: 1, Jobs: []Job{{ID: "A", Maps: ds(1)}}}
	r, err := Run(w1, Options{Policy: "fifo", Slowstart: -1, Heartbeat: ms(300), Overheads: at})
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Jobs[0].Start; got < 0.3 || got > 0.3001 {
		t.Errorf("first job started at %vs, want 0.3", got)
	}
}
