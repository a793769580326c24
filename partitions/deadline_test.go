package partitions_test

import (
	"fmt"
	. "gomr/partitions"
	"gomr/sched/schedtest"
	"strings"
	"testing"
	"time"
)

func prof(mapS, redS float64) *Profile {
	return &Profile{Runs: 1, MapAvg: secs(mapS), MapMax: secs(mapS), ReduceAvg: secs(redS), ReduceMax: secs(redS)}
}

func TestEDFNoPreemption(t *testing.T) {
	h := newHarness(t, "edf", nil, 4, 2)
	h.Submit(JobView{ID: "A", Maps: 10, Deadline: at(1000)})
	if got := h.Offer(4, 0); got != "A:m A:m A:m A:m" {
		t.Fatalf("offer %q", got)
	}
	h.Advance(10)
	h.Submit(JobView{ID: "B", Maps: 4, Deadline: at(100)})
	if got := h.Offer(0, 0); got != "" {
		t.Fatalf("EDF preempted: %q", got)
	}
	h.Finish("A", Map, secs(10))
	if got := h.Offer(1, 0); got != "B:m" {
		t.Fatalf("offer %q, want the earlier deadline", got)
	}
}

// TestDeadlineReduceStart: edf is Hadoop's default allocation, so a job's
// reduces take reduce slots as soon as its slow-start allows, before its
// map stage ends, and hold them; minedf and minedf-wc offer reduces only
// once every map finished (Algorithm 1, lines 33-35), whatever the
// slow-start. Each policy's key restores the other behaviour.
func TestDeadlineReduceStart(t *testing.T) {
	tests := []struct {
		policy string
		conf   map[string]string
		// ready is JobView.ReducesReady while the map stage runs (the
		// job's slow-start fraction of maps is done, or not)
		ready bool
		// before and after are the offers of the 2 reduce slots before
		// and after the job's last map finished
		before, after string
	}{
		{"edf", nil, true, "C:r C:r", ""},
		{"edf", nil, false, "", "C:r C:r"},
		{"edf", map[string]string{"scheduler.edf.reduces-after-maps": "true"}, true, "", "C:r C:r"},
		{"edf", map[string]string{"scheduler.deadline.reduces-after-maps": "true"}, true, "C:r C:r", ""},
		{"minedf", nil, true, "", "C:r C:r"},
		{"minedf-wc", nil, true, "", "C:r C:r"},
		{"minedf", map[string]string{"scheduler.deadline.reduces-after-maps": "false"}, true, "C:r C:r", ""},
		{"minedf-wc", map[string]string{"scheduler.edf.reduces-after-maps": "false"}, true, "", "C:r C:r"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s %v ready=%v", tt.policy, tt.conf, tt.ready), func(t *testing.T) {
			h := newHarness(t, tt.policy, tt.conf, 4, 2)
			// 2 maps and 2 reduces of 10 s due in 25 s: the quota is
			// every task at once
			h.Submit(JobView{ID: "C", Maps: 2, Reduces: 2, Deadline: at(25), Profile: prof(10, 10)})
			h.Job("C").ReducesReady = tt.ready
			if got := h.Offer(4, 0); got != "C:m C:m" {
				t.Fatalf("maps %q", got)
			}
			h.Advance(10)
			h.Finish("C", Map, secs(10))
			if got := h.Offer(0, 2); got != tt.before {
				t.Fatalf("reduce slots in the map stage: %q, want %q", got, tt.before)
			}
			h.Finish("C", Map, secs(10))
			h.Job("C").ReducesReady = true
			if got := h.Offer(0, 2); got != tt.after {
				t.Fatalf("reduce slots after the map stage: %q, want %q", got, tt.after)
			}
		})
	}
}

func TestMinEDFQuota(t *testing.T) {
	h := newHarness(t, "minedf", nil, 10, 2)
	// 20 maps of 10 s, 100 s: avg bound a = 195, c = 5: ceil(195/95) = 3
	h.Submit(JobView{ID: "A", Maps: 20, Deadline: at(100), Profile: prof(10, 0)})
	h.Submit(JobView{ID: "N", Maps: 5}) // no deadline: leftovers only
	if got := h.Offer(10, 0); got != "A:m A:m A:m N:m* N:m* N:m* N:m* N:m*" {
		t.Fatalf("offer %q", got)
	}
	if got := h.Offer(2, 0); got != "" {
		t.Fatalf("MinEDF lent a slot beyond the quota: %q", got)
	}
	// at 80 s one map is done, 19 left in 20 s: infeasible, quota = max
	h.Advance(80)
	h.Finish("A", Map, secs(10))
	if got := h.Offer(3, 0); got != "A:m A:m A:m" {
		t.Fatalf("late job: offer %q", got)
	}
	st := h.Policy().(*Deadline).Describe(h.Now)
	if st.Jobs[0].ID != "A" || st.Jobs[0].MinMaps != 10 || st.Jobs[0].Feasible {
		t.Errorf("status %+v", st.Jobs[0])
	}
}

func TestMinEDFNoProfileGetsMax(t *testing.T) {
	h := newHarness(t, "minedf", nil, 4, 2)
	h.Submit(JobView{ID: "A", Maps: 10, Deadline: at(1000)})
	if got := h.Offer(4, 0); got != "A:m A:m A:m A:m" {
		t.Fatalf("offer %q", got)
	}
}

// wcSetup: A (far deadline, quota 1) runs 10 maps on a 10-map cluster.
func wcSetup(t *testing.T, conf map[string]string) *schedtest.Harness {
	h := newHarness(t, "minedf-wc", conf, 10, 2)
	h.Submit(JobView{ID: "A", Maps: 100, Deadline: at(10000), Profile: prof(10, 0)})
	if got := h.Offer(10, 0); got != "A:m A:m* A:m* A:m* A:m* A:m* A:m* A:m* A:m* A:m*" {
		t.Fatalf("setup offer %q", got)
	}
	return h
}

func TestMinEDFWCArrival(t *testing.T) {
	tests := []struct {
		name     string
		conf     map[string]string
		deadline float64
		want     string
	}{
		// quota 8 for 30 s; waiting 10 s leaves 20 s: infeasible; kill A's 9 spare
		{"kill", nil, 30, "kill:A:map:9"},
		{"kill only needed", map[string]string{"scheduler.minedfwc.kill-only-needed": "true"}, 30, "kill:A:map:8"},
		// quota 4 for 60 s; after 10 s of waiting 5 <= 9 spare: wait
		{"waiting suffices", nil, 60, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := wcSetup(t, tt.conf)
			h.Advance(1)
			h.Submit(JobView{ID: "J", Maps: 20, Deadline: h.Now.Add(secs(tt.deadline)), Profile: prof(10, 0)})
			if got := h.Offer(0, 0); got != tt.want {
				t.Fatalf("arrival offer %q, want %q", got, tt.want)
			}
			if tt.want == "" {
				return
			}
			// the killed slots go to J first (below quota), then spare to J
			if got := h.Offer(2, 0); got != "J:m J:m" {
				t.Fatalf("after kill %q", got)
			}
		})
	}
}

func TestMinEDFWCEnoughFreeSlots(t *testing.T) {
	h := newHarness(t, "minedf-wc", nil, 10, 2)
	h.Submit(JobView{ID: "A", Maps: 100, Deadline: at(10000), Profile: prof(10, 0)})
	if got := h.Offer(5, 0); got != "A:m A:m* A:m* A:m* A:m*" {
		t.Fatalf("setup %q", got)
	}
	h.Submit(JobView{ID: "J", Maps: 20, Deadline: at(60), Profile: prof(10, 0)}) // quota 4 <= 5 free
	if got := h.Offer(0, 0); got != "" {
		t.Fatalf("killed with enough free slots: %q", got)
	}
}

// TestMinEDFWCUnknownReleaseKills: the running job has no profile, so
// nothing tells when its slots free; waiting for it cannot meet the new
// job's deadline, though the largest quota the infeasible budget falls
// back to equals the slots that wait would credit. The fixed algorithm
// kills; it used to wait for ever.
func TestMinEDFWCUnknownReleaseKills(t *testing.T) {
	h := newHarness(t, "minedf-wc", nil, 2, 1)
	h.Submit(JobView{ID: "F", Maps: 6})
	if got := h.Offer(2, 0); got != "F:m* F:m*" {
		t.Fatalf("setup offer %q", got)
	}
	h.Advance(1)
	h.Submit(JobView{ID: "J", Maps: 2, Deadline: h.Now.Add(secs(8)), Profile: prof(0.3, 0)})
	if got := h.Offer(0, 0); got != "kill:F:map:2" {
		t.Fatalf("arrival offer %q, want the filler's spare maps killed", got)
	}
	if got := h.Offer(2, 0); got != "J:m J:m*" {
		t.Fatalf("after kill %q", got)
	}
}

// reduceSetup: A in its map stage with 4 spare maps, B in its reduce stage
// holding both reduce slots (quota 1).
func reduceSetup(t *testing.T, conf map[string]string) *schedtest.Harness {
	h := newHarness(t, "minedf-wc", conf, 10, 2)
	h.Submit(JobView{ID: "A", Maps: 100, Deadline: at(10000), Profile: prof(10, 0)})
	for i := 0; i < 5; i++ {
		h.Start("A", Map)
	}
	h.Submit(JobView{ID: "B", Maps: 1, Reduces: 2, Deadline: at(10000), Profile: prof(10, 1000)})
	h.Start("B", Map)
	h.Finish("B", Map, secs(10))
	h.Start("B", Reduce)
	h.Start("B", Reduce)
	return h
}

func TestMinEDFWCPrintedDefects(t *testing.T) {
	tests := []struct {
		name    string
		printed bool
		job     JobView
		want    string
	}{
		// (e) only reduce slots are short: killing maps would not help
		{"reduce-only shortage fixed", false, JobView{ID: "J", Maps: 4, Reduces: 4, Deadline: at(100), Profile: prof(10, 10)}, ""},
		{"reduce-only shortage printed", true, JobView{ID: "J", Maps: 4, Reduces: 4, Deadline: at(100), Profile: prof(10, 10)}, "kill:A:map:4"},
		// (d) a map-only job needs no reduce slot: no kill (A2)
		{"map-only fixed", false, JobView{ID: "J", Maps: 4, Deadline: at(100), Profile: prof(10, 0)}, ""},
		{"map-only printed", true, JobView{ID: "J", Maps: 4, Deadline: at(100), Profile: prof(10, 0)}, "kill:A:map:4"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conf := map[string]string{}
			if tt.printed {
				conf["scheduler.minedfwc.algorithm"] = "printed"
			}
			h := reduceSetup(t, conf)
			h.Submit(tt.job)
			if got := h.Offer(0, 0); got != tt.want {
				t.Fatalf("offer %q, want %q", got, tt.want)
			}
			// reduces are never killed
			if b := h.Job("B"); b.RunningReduces != 2 {
				t.Fatalf("B's reduces were killed")
			}
		})
	}
}

func TestDeadlineConfigErrors(t *testing.T) {
	cfg, _ := NewMapConfig(nil)
	cfg["scheduler.deadline.bound"] = "middle"
	if _, err := New("minedf", cfg); err == nil {
		t.Error("bad bound accepted")
	}
	cfg, _ = NewMapConfig(nil)
	cfg["scheduler.deadline.refresh-all-on-arrival"] = "perhaps"
	if _, err := New("minedf-wc", cfg); err == nil {
		t.Error("bad bool accepted")
	}
}

func TestAllPoliciesRegistered(t *testing.T) {
	want := []string{"comp", "edf", "fair", "fbq", "fifo", "minedf", "minedf-wc", "sita", "tyrex-dynamic", "tyrex-static"}
	got := Names()
	if len(got) != len(want) {
		t.Fatalf("Names() = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("Names() = %v, want %v", got, want)
		}
	}
	cfg, _ := NewMapConfig(nil)
	for _, n := range want {
		p, err := New(n, cfg)
		if err != nil || p.Name() != n {
			t.Errorf("New(%s) = %v, %v", n, p, err)
		}
	}
	if _, err := New("nope", cfg); err == nil {
		t.Error("unknown policy accepted")
	}
	_ = time.Second
}

// TestMinEDFWCWaitRemaining: with wait-estimate remaining, Algorithm 1's
// wait test counts how long the victim's running maps still have to run,
// not a whole average map; a map already past the average is expected to
// run to the profile's maximum.
func TestMinEDFWCWaitRemaining(t *testing.T) {
	long := &Profile{Runs: 1, MapAvg: secs(10), MapMax: secs(50)}
	tests := []struct {
		name    string
		mode    string
		profile *Profile
		elapsed float64
		want    string
	}{
		// A's maps started 8 s ago: the printed test waits a whole 10 s
		// map, leaving J 20 s (infeasible); 2 s remain, leaving 28 s
		{"mean kills", "mean", prof(10, 0), 8, "kill:A:map:9"},
		{"remaining waits", "remaining", prof(10, 0), 8, ""},
		// 12 s into 10 s-average maps that may run 50 s: 38 s to go
		{"past the average kills", "remaining", long, 12, "kill:A:map:9"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, "minedf-wc", map[string]string{"scheduler.minedfwc.wait-estimate": tt.mode}, 10, 2)
			h.Submit(JobView{ID: "A", Maps: 100, Deadline: at(10000), Profile: tt.profile})
			if got := h.Offer(10, 0); got != "A:m A:m* A:m* A:m* A:m* A:m* A:m* A:m* A:m* A:m*" {
				t.Fatalf("setup offer %q", got)
			}
			h.Advance(tt.elapsed)
			h.Submit(JobView{ID: "J", Maps: 20, Deadline: h.Now.Add(secs(30)), Profile: prof(10, 0)})
			if got := h.Offer(0, 0); got != tt.want {
				t.Fatalf("arrival offer %q, want %q", got, tt.want)
			}
		})
	}
}

// TestMinEDFWCKillWhenInfeasible: a job that no allocation can finish by its
// deadline (a 10 s map against 5 s) gets the largest quota and, by default,
// kills for it; with kill-when-infeasible=false it waits instead.
func TestMinEDFWCKillWhenInfeasible(t *testing.T) {
	for _, tt := range []struct {
		set, want string
	}{{"true", "kill:A:map:9"}, {"false", ""}} {
		t.Run(tt.set, func(t *testing.T) {
			h := wcSetup(t, map[string]string{"scheduler.minedfwc.kill-when-infeasible": tt.set})
			h.Advance(1)
			h.Submit(JobView{ID: "J", Maps: 20, Deadline: h.Now.Add(secs(5)), Profile: prof(10, 0)})
			if got := h.Offer(0, 0); got != tt.want {
				t.Fatalf("arrival offer %q, want %q", got, tt.want)
			}
		})
	}
}

// TestMinEDFWCKillWhenInfeasibleBound: under the upper bound a 20-map job
// of 10 s average and 30 s longest maps needs 49 s on the 10 slots (avg
// bound 34.5 s, low 20 s). kill-when-infeasible=avg (low) kills for it only
// when its deadline is within reach under the average (lower) bound.
func TestMinEDFWCKillWhenInfeasibleBound(t *testing.T) {
	long := &Profile{Runs: 1, MapAvg: secs(10), MapMax: secs(30)}
	for _, tt := range []struct {
		set      string
		deadline float64
		want     string
	}{
		{"true", 40, "kill:A:map:9"},
		{"false", 40, ""},
		{"avg", 40, "kill:A:map:9"},
		{"low", 40, "kill:A:map:9"},
		{"avg", 25, ""},
		{"low", 25, "kill:A:map:9"},
		{"avg", 15, ""},
		{"low", 15, ""},
		{"true", 15, "kill:A:map:9"},
	} {
		t.Run(fmt.Sprintf("%s/%gs", tt.set, tt.deadline), func(t *testing.T) {
			h := wcSetup(t, map[string]string{"scheduler.deadline.bound": "up", "scheduler.minedfwc.kill-when-infeasible": tt.set})
			h.Advance(1)
			h.Submit(JobView{ID: "J", Maps: 20, Deadline: h.Now.Add(secs(tt.deadline)), Profile: long})
			if got := h.Offer(0, 0); got != tt.want {
				t.Fatalf("arrival offer %q, want %q", got, tt.want)
			}
		})
	}
}

// TestDeadlineCountsAddedTasks: the maps a scale-up split adds to a job
// (the driver's TasksAdded) are part of its map stage. Before the deadline
// policies counted them, the job's map stage was done once its maps at
// submission were, so it got its reduce slots while the added maps still
// waited, and no map quota for them.
func TestDeadlineCountsAddedTasks(t *testing.T) {
	for _, policy := range []string{"edf", "minedf", "minedf-wc"} {
		t.Run(policy, func(t *testing.T) {
			h := newHarness(t, policy, map[string]string{"scheduler.edf.reduces-after-maps": "true"}, 4, 2)
			h.Submit(JobView{ID: "C", Maps: 2, Reduces: 2, Deadline: at(25), Profile: prof(10, 10)})
			if got := h.Offer(2, 0); got != "C:m C:m" {
				t.Fatalf("maps %q", got)
			}
			h.Advance(5)
			// A scale-up split cuts a running map's remainder into 3
			// pieces: 2 maps more, pending (the split map's own
			// remainder runs on in this harness).
			j := h.Job("C")
			j.Maps += 2
			j.PendingMaps += 2
			h.Driver().TasksAdded(h.Now, "C", Map, 2)
			h.Advance(5)
			h.Finish("C", Map, secs(10))
			h.Finish("C", Map, secs(10))
			if got := h.Offer(0, 2); got != "" {
				t.Errorf("reduce slots while 2 added maps wait: %q, want none", got)
			}
			if got := h.Offer(2, 0); got != "C:m C:m" {
				t.Errorf("map slots: %q, want the added maps", got)
			}
			st := h.Policy().(*Deadline).Describe(h.Now)
			if policy != "edf" && st.Jobs[0].MinMaps == 0 {
				t.Errorf("map quota 0 while 2 added maps are left: %+v", st.Jobs[0])
			}
		})
	}
}

// TestDeadlineCountsAddedReduces: a reduce scale-up split adds reduces
// (key ranges of the split reduce's partition, docs/split.md). The
// deadline policies count them, so that the job's reduce stage is not
// done for them before the added reduces are: without TasksAdded MinEDF
// gave them no quota and they never ran (in the simulator the job never
// ended, sim.TestScaleUpSplitReduce).
func TestDeadlineCountsAddedReduces(t *testing.T) {
	for _, policy := range []string{"edf", "minedf", "minedf-wc"} {
		t.Run(policy, func(t *testing.T) {
			h := newHarness(t, policy, map[string]string{"scheduler.edf.reduces-after-maps": "true"}, 2, 4)
			h.Submit(JobView{ID: "C", Maps: 1, Reduces: 1, Deadline: at(100), Profile: prof(10, 10)})
			if got := h.Offer(1, 0); got != "C:m" {
				t.Fatalf("maps %q", got)
			}
			h.Advance(10)
			h.Finish("C", Map, secs(10))
			if got := h.Offer(0, 1); got != "C:r" {
				t.Fatalf("reduces %q", got)
			}
			h.Advance(5)
			// A scale-up split cuts the running reduce's rest into 3
			// pieces: 2 reduces more, pending.
			j := h.Job("C")
			j.Reduces += 2
			j.PendingReduces += 2
			h.Driver().TasksAdded(h.Now, "C", Reduce, 2)
			h.Advance(5)
			h.Finish("C", Reduce, secs(10))
			// MinEDF runs as many as its quota (one, the deadline being
			// far), MinEDF-WC the other as a spare, EDF both.
			if got := h.Offer(0, 2); !strings.HasPrefix(got, "C:r") {
				t.Errorf("reduce slots: %q, want the added reduces", got)
			}
			st := h.Policy().(*Deadline).Describe(h.Now)
			if policy != "edf" && st.Jobs[0].MinReduces == 0 {
				t.Errorf("reduce quota 0 while 2 added reduces are left: %+v", st.Jobs[0])
			}
		})
	}
}
