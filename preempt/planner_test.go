package preempt

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"gomr/conf"
)

func planner(t *testing.T, mech string, bw float64) *Planner {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Mechanism = mech
	cfg.Prior = medium(bw)
	cfg.Heartbeat = sec(1)
	return New(cfg)
}

func victims(cs ...Candidate) []Victim {
	out := make([]Victim, len(cs))
	for i, c := range cs {
		if c.Node == "" {
			c.Node = "n"
		}
		out[i] = Victim{ID: fmt.Sprintf("v%d", i), Candidate: c}
	}
	return out
}

func summary(cs []Choice) string {
	var b []string
	for _, c := range cs {
		b = append(b, c.ID+":"+c.Mech.String())
	}
	return strings.Join(b, " ")
}

// TestPlan checks victim order and mechanism per setting (spec §5.5).
func TestPlan(t *testing.T) {
	big := Candidate{RSSBytes: 1000 * MiB, Progressed: sec(100), Remaining: -1, CanCheckpoint: true}
	small := Candidate{RSSBytes: 100 * MiB, Progressed: sec(100), Remaining: -1, CanCheckpoint: true}
	young := Candidate{RSSBytes: 100 * MiB, Progressed: sec(1), Remaining: -1, CanCheckpoint: true}
	noCRIU := Candidate{RSSBytes: 100 * MiB, Progressed: sec(100), Remaining: -1}
	dup := Candidate{RSSBytes: 100 * MiB, Progressed: sec(100), Remaining: -1, CanCheckpoint: true, Duplicate: true}
	sp := func(age float64) Candidate {
		return Candidate{Progressed: sec(age), Remaining: -1, Splittable: true}
	}
	for _, tc := range []struct {
		name   string
		mech   string
		bw     float64
		count  int
		reason Reason
		budget time.Duration
		vs     []Candidate
		want   string
	}{
		{"kill: the request's order", SettingKill, 100, 2, 0, 0, []Candidate{big, small, dup}, "v0:kill v1:kill"},
		{"checkpoint: cheapest dump first", SettingCheckpoint, 100, 2, 0, 0, []Candidate{big, noCRIU, small}, "v2:checkpoint v0:checkpoint"},
		{"checkpoint: no CRIU is killed last", SettingCheckpoint, 100, 3, 0, 0, []Candidate{noCRIU, big, small}, "v2:checkpoint v1:checkpoint v0:kill"},
		{"checkpoint: duplicates first, killed", SettingCheckpoint, 100, 2, 0, 0, []Candidate{big, dup, small}, "v1:kill v2:checkpoint"},
		// adaptive at 100 MiB/s: big overhead 20s (+ small's 1s in the queue), small 2s, young 2s > 1s.
		{"adaptive: Alg. 1, cheapest first", SettingAdaptive, 100, 3, 0, 0, []Candidate{big, young, small}, "v1:kill v2:checkpoint v0:checkpoint"},
		{"adaptive: slow medium kills", SettingAdaptive, 1, 2, 0, 0, []Candidate{big, small}, "v1:kill v0:kill"},
		{"split: longest-running first", SettingSplit, 100, 2, 0, 0, []Candidate{sp(70), sp(200), sp(100)}, "v1:split v2:split"},
		{"split: too young to split is killed", SettingSplit, 100, 2, 0, 0, []Candidate{sp(10), sp(70)}, "v1:split v0:kill"},
		{"split: split min remaining", SettingSplit, 100, 1, 0, 0, []Candidate{{Progressed: sec(100), Remaining: sec(5), Splittable: true}}, "v0:kill"},
		{"auto: a task about to end waits", SettingAuto, 100, 1, 0, 0, []Candidate{big, {Progressed: sec(100), Remaining: sec(2)}}, "v1:wait"},
		{"auto: young task killed, old checkpointed", SettingAuto, 100, 2, ReasonFairShare, 0, []Candidate{small, young}, "v1:kill v0:checkpoint"},
		{"auto: split beats checkpoint", SettingAuto, 100, 1, 0, 0, []Candidate{small, sp(100)}, "v1:split"},
		{"auto: budget rules out a slow dump", SettingAuto, 100, 1, ReasonFairShare, sec(5), []Candidate{big}, "v0:kill"},
		{"auto: duplicate first", SettingAuto, 100, 1, 0, 0, []Candidate{sp(100), dup}, "v1:kill"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := planner(t, tc.mech, tc.bw)
			got := p.Plan(time.Unix(0, 0), []Request{{Group: "g", Count: tc.count, Reason: tc.reason, Budget: tc.budget, Victims: victims(tc.vs...)}})
			if s := summary(got[0]); s != tc.want {
				t.Errorf("plan %q, want %q", s, tc.want)
			}
		})
	}
}

// TestPlanInFlight checks §5.4's in-flight accounting: a policy that asks
// again while dumps run gets no more victims, one that asks for more gets
// the difference, and a released victim no longer counts.
func TestPlanInFlight(t *testing.T) {
	p := planner(t, SettingCheckpoint, 100)
	now := time.Unix(0, 0)
	c := Candidate{RSSBytes: 100 * MiB, Progressed: sec(100), Remaining: -1, CanCheckpoint: true}
	vs := victims(c, c, c)
	req := Request{Group: "g", Count: 2, Victims: vs}
	first := p.Plan(now, []Request{req})[0]
	if len(first) != 2 {
		t.Fatalf("first plan %q", summary(first))
	}
	for _, ch := range first {
		p.Begin(now, "g", ch)
	}
	if p.InFlight("g") != 2 {
		t.Fatalf("in flight %d", p.InFlight("g"))
	}
	// The queue: two 1 s dumps on n.
	if w := p.QueueWait("n", now); w != sec(2) {
		t.Errorf("queue wait %v, want 2s", w)
	}
	if again := p.Plan(now.Add(sec(1)), []Request{req})[0]; len(again) != 0 {
		t.Errorf("asked again while dumping: %q", summary(again))
	}
	req.Count = 3
	more := p.Plan(now.Add(sec(1)), []Request{req})[0]
	if s := summary(more); s != "v2:checkpoint" {
		t.Errorf("asked for one more: %q", s)
	}
	p.Released(now.Add(sec(1)), first[0].ID)
	if p.InFlight("g") != 1 {
		t.Errorf("in flight after a release %d", p.InFlight("g"))
	}
	if _, ok := p.Releasing(first[1].ID); !ok {
		t.Error("the second victim is no longer releasing")
	}
	// Kills are not in flight: their slot is free when Kill returns.
	k := planner(t, SettingKill, 100)
	for _, ch := range k.Plan(now, []Request{{Group: "g", Count: 1, Victims: vs}})[0] {
		k.Begin(now, "g", ch)
	}
	if k.InFlight("g") != 0 {
		t.Errorf("a kill counts in flight")
	}
}

// TestPlanReleaseEarly checks the planner's side of
// preemption.checkpoint.release-slot: a checkpoint's Release is the
// heartbeat, the queue wait and the dump (dumped), the heartbeat and the
// queue wait (frozen: the slot is free when the dump begins), or the
// heartbeat (quiesced); and a victim ReleasedEarly then Released leaves
// the in-flight count but keeps its dump in the node's queue until
// DumpEnded.
func TestPlanReleaseEarly(t *testing.T) {
	now := time.Unix(0, 0)
	c := Candidate{Node: "n", RSSBytes: 100 * MiB, Progressed: sec(100), Remaining: -1, CanCheckpoint: true}
	for _, tc := range []struct {
		name    string
		at      SlotRelease
		queue   time.Duration
		release time.Duration
	}{
		{"dumped, empty queue", ReleaseAtDump, 0, sec(2)},      // hb 1s + dump 1s
		{"dumped, queue 3s", ReleaseAtDump, sec(3), sec(5)},    // hb + queue + dump
		{"frozen, empty queue", ReleaseAtFreeze, 0, sec(1)},    // hb
		{"frozen, queue 3s", ReleaseAtFreeze, sec(3), sec(4)},  // hb + queue
		{"quiesced, queue 3s", ReleaseAtQuiet, sec(3), sec(1)}, // hb
	} {
		p := planner(t, SettingCheckpoint, 100)
		cfg := p.Config()
		cfg.Release = tc.at
		p = New(cfg)
		got := p.Costs(c, tc.queue)[MechCkpt]
		if got.Release != tc.release || got.Waste != sec(2)+tc.queue {
			t.Errorf("%s: cost %+v, want release %v, waste %v", tc.name, got, tc.release, sec(2)+tc.queue)
		}
	}

	p := planner(t, SettingCheckpoint, 100)
	vs := victims(c, c)
	chosen := p.Plan(now, []Request{{Group: "g", Count: 2, Victims: vs}})[0]
	for _, ch := range chosen {
		p.Begin(now, "g", ch)
	}
	if w := p.QueueWait("n", now); w != sec(2) {
		t.Fatalf("queue wait %v, want 2s (two 1s dumps)", w)
	}
	// v0's slot is freed at its freeze, 100 ms into its dump.
	at := now.Add(100 * time.Millisecond)
	p.ReleasedEarly("v0")
	p.Released(at, "v0")
	if p.InFlight("g") != 1 {
		t.Errorf("in flight %d after the freeze, want 1", p.InFlight("g"))
	}
	if _, ok := p.Releasing("v0"); ok {
		t.Error("v0 is still releasing after its slot was freed")
	}
	if w := p.QueueWait("n", at); w != sec(1.9) {
		t.Errorf("queue wait %v after the freeze, want 1.9s (v0's dump still runs)", w)
	}
	// Its dump ends at 1 s: v1's starts then.
	p.DumpEnded(now.Add(sec(1)), "v0")
	if w := p.QueueWait("n", now.Add(sec(1))); w != sec(1) {
		t.Errorf("queue wait %v after v0's dump ended, want 1s (v1's)", w)
	}
	// ReleasedEarly on a victim not being checkpointed does nothing: its
	// Released empties the queue as before.
	p.ReleasedEarly("nobody")
	p.Released(now.Add(sec(1.5)), "v1")
	if n := p.Queue().Len("n"); n != 0 {
		t.Errorf("queue holds %d operations, want none", n)
	}
}

// TestPlanDeadlineDumpsFirst checks the spec's first queue class (§5.6):
// a checkpoint chosen for a deadline at risk carries its reason, waits in
// its node's queue only for the dump running (and other deadlines'), and
// goes before the preemption dumps waiting there.
func TestPlanDeadlineDumpsFirst(t *testing.T) {
	p := planner(t, SettingCheckpoint, 100) // 100 MiB: a 1 s dump; heartbeat 1 s
	t0 := time.Unix(0, 0)
	c := Candidate{Node: "n", RSSBytes: 100 * MiB, Progressed: sec(100), Remaining: -1, CanCheckpoint: true}
	prio := p.Plan(t0, []Request{{Group: "a", Count: 2, Reason: ReasonPriorityArrival,
		Victims: []Victim{{ID: "a0", Candidate: c}, {ID: "a1", Candidate: c}}}})[0]
	for _, ch := range prio {
		p.Begin(t0, "a", ch)
	}
	at := t0.Add(sec(0.5)) // a0 dumps until 1 s, a1 waits until then
	for _, tc := range []struct {
		reason  Reason
		release time.Duration
	}{
		{ReasonPriorityArrival, sec(3.5)}, // hb + a0's 0.5 s left + a1's 1 s + its own 1 s
		{ReasonFairShare, sec(3.5)},
		{ReasonDeadlineAtRisk, sec(2.5)}, // hb + a0's 0.5 s left + its own 1 s
	} {
		got := p.Plan(at, []Request{{Group: "d", Count: 1, Reason: tc.reason, Victims: []Victim{{ID: "d0", Candidate: c}}}})[0]
		if len(got) != 1 || got[0].Reason != tc.reason || got[0].Cost.Release != tc.release {
			t.Errorf("reason %d: plan %+v, want d0 with its reason and release %v", tc.reason, got, tc.release)
		}
	}
	dl := p.Plan(at, []Request{{Group: "d", Count: 1, Reason: ReasonDeadlineAtRisk, Victims: []Victim{{ID: "d0", Candidate: c}}}})[0]
	p.Begin(at, "d", dl[0])
	if r, ok := p.Reason("d0"); !ok || r != ReasonDeadlineAtRisk {
		t.Errorf("Reason(d0) = %d, %v", r, ok)
	}
	// d0 runs from 1 s to 2 s, a1 from 2 s to 3 s: a new preemption dump
	// waits 2.5 s at 0.5 s; once a0 is done, d0's 1 s goes first.
	if w := p.QueueWait("n", at); w != sec(2.5) {
		t.Errorf("queue wait %v, want 2.5s", w)
	}
	p.Released(t0.Add(sec(1)), "a0")
	if w := p.Queue().WaitClass("n", ClassDeadlineDump, t0.Add(sec(1))); w != sec(1) {
		t.Errorf("a deadline's wait once a0 is done: %v, want 1s (d0 running)", w)
	}
	if _, ok := p.Reason("a0"); ok {
		t.Error("a0 still has a reason once released")
	}
}

// TestPlanQueueWithinCall checks that dumps chosen earlier in one Plan
// call raise the queue wait of later ones on the same node.
func TestPlanQueueWithinCall(t *testing.T) {
	p := planner(t, SettingAdaptive, 100)
	// 100 MiB at 100 MiB/s: overhead 2s, plus 1s per dump queued before.
	c := Candidate{RSSBytes: 100 * MiB, Progressed: sec(3.5), Remaining: -1, CanCheckpoint: true}
	got := p.Plan(time.Unix(0, 0), []Request{
		{Group: "a", Count: 1, Victims: []Victim{{ID: "a0", Candidate: c}}},
		{Group: "b", Count: 1, Victims: []Victim{{ID: "b0", Candidate: c}}},
	})
	if s := summary(got[0]) + " " + summary(got[1]); s != "a0:checkpoint b0:checkpoint" {
		t.Errorf("plan %q", s)
	}
	c.Progressed = sec(3)
	got = p.Plan(time.Unix(0, 0), []Request{
		{Group: "a", Count: 1, Victims: []Victim{{ID: "a0", Candidate: c}}},
		{Group: "b", Count: 1, Victims: []Victim{{ID: "b0", Candidate: c}}},
	})
	if s := summary(got[0]) + " " + summary(got[1]); s != "a0:checkpoint b0:kill" {
		t.Errorf("plan %q, want the second killed (3s = 2s + 1s queued)", s)
	}
}

// TestConfig checks the keys' registration, defaults and errors.
func TestConfig(t *testing.T) {
	c := DefaultConfig()
	if c.Mechanism != SettingKill || c.Prior.BWWrite != 117*MiB || c.Prior.BWRead != 117*MiB || c.WaitBelow != sec(10) ||
		c.SplitMinAge != sec(60) || c.SplitMinRemaining != sec(30) {
		t.Errorf("defaults %+v", c)
	}
	def := conf.Default()
	for _, k := range Keys() {
		if got := def.String(k.Name); got != k.Default {
			t.Errorf("%s: conf default %q, want %q", k.Name, got, k.Default)
		}
	}
	got, err := FromConfig(def)
	if err != nil || got.Mechanism != SettingKill {
		t.Errorf("FromConfig(conf.Default()) = %+v, %v", got, err)
	}
	for _, tc := range []struct {
		set  map[string]string
		want string // error substring; "" = ok
	}{
		{map[string]string{KeyMechanism: "auto", KeyMedium: "nvm"}, ""},
		{map[string]string{KeyMechanism: "suspend"}, `preemption.mechanism="suspend": want one of kill, checkpoint, adaptive, split, auto`},
		{map[string]string{KeyBWNet: "0"}, "preemption.bandwidth.net"},
		{map[string]string{KeySmoothing: "2"}, "preemption.bandwidth.smoothing"},
		{map[string]string{KeyWaitBelow: "-1s"}, "must not be negative"},
		{map[string]string{KeyReleaseSlot: ReleaseFrozen}, ""},
		{map[string]string{KeyReleaseSlot: ReleaseQuiesced}, ""},
		{map[string]string{KeyReleaseSlot: "quiet"}, "preemption.checkpoint.release-slot"},
	} {
		_, err := FromConfig(mapGetter(tc.set))
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%v: error %v, want %q", tc.set, err, tc.want)
		}
	}
	if c.Release != ReleaseAtDump {
		t.Errorf("the default releases the slot %v", c.Release)
	}
	for want, name := range releaseSettings {
		if f, _ := FromConfig(mapGetter{KeyReleaseSlot: name}); f.Release != SlotRelease(want) || f.Release.String() != name {
			t.Errorf("%s=%s: %v", KeyReleaseSlot, name, f.Release)
		}
	}
	c, _ = FromConfig(mapGetter{KeyMedium: "hdd", KeyBWRead: "60"})
	if c.Prior.BWWrite != 30*MiB || c.Prior.BWRead != 60*MiB {
		t.Errorf("hdd with a read bandwidth: %+v", c.Prior)
	}
}

type mapGetter map[string]string

func (m mapGetter) String(k string) string { return m[k] }
