package sim

import (
	"fmt"
	"math"
	"testing"
	"time"

	"gomr/preempt"
)

// timeline is the spec's §2.2 scenario (seed 002 §3.2.3.4, Fig. 12 and
// 15): one slot; a low-priority job of one 60 s task with 5 GiB of memory
// starts at 0; a high-priority job of the same shape arrives at 30 s. FIFO
// with priority preemption asks for the slot; the mechanism and the
// checkpoint bandwidth decide what happens. "wait" is the run without
// preemption.
func timeline(t *testing.T, mech string, bwMiB float64) (high, low time.Duration, r *Result) {
	t.Helper()
	return timelineWith(t, mech, bwMiB, nil)
}

// timelineWith is timeline with more configuration.
func timelineWith(t *testing.T, mech string, bwMiB float64, extra map[string]string) (high, low time.Duration, r *Result) {
	t.Helper()
	w := &Workload{Name: "timeline", Trackers: 1, MapSlots: 1, ReduceSlots: 0, Slowstart: 1, Jobs: []Job{
		{ID: "low", Name: "low", Maps: []time.Duration{time.Minute}, Memory: 5 << 30},
		{ID: "high", Name: "high", Priority: 1, Submit: 30 * time.Second, Maps: []time.Duration{time.Minute}, Memory: 5 << 30},
	}}
	conf := map[string]string{"scheduler.fifo.preemption": "true", preempt.KeyMechanism: mech,
		preempt.KeyBWWrite: fmt.Sprint(bwMiB), preempt.KeyBWRead: fmt.Sprint(bwMiB)}
	if mech == "wait" {
		conf = map[string]string{"scheduler.fifo.preemption": "false"}
	}
	for k, v := range extra {
		conf[k] = v
	}
	bw := bwMiB * preempt.MiB
	r, err := Run(w, Options{Policy: "fifo", Conf: conf, Slowstart: -1, Knowledge: KnowNone,
		Preemption: PreemptionModel{BWWrite: bw, BWRead: bw}})
	if err != nil {
		t.Fatalf("%s at %v MiB/s: %v", mech, bwMiB, err)
	}
	for _, j := range r.Jobs {
		switch j.ID {
		case "high":
			high = dur(j.Response)
		case "low":
			low = dur(j.Response)
		}
	}
	return high, low, r
}

func nearDur(a, b time.Duration) bool { return (a - b).Abs() <= 10*time.Millisecond }

// TestTimelineOracle checks the simulator against the spec's §2.2 table:
// wait 90/60, kill 60/150, checkpoint 60+D / 120+D+R, adaptive the
// checkpoint figures iff D+R < 30 s and the kill ones otherwise; and the
// order the table derives: the high-priority job is best with kill, worst
// with wait; the low-priority job best with wait, worst with kill.
func TestTimelineOracle(t *testing.T) {
	bw := 1750.0 // nvm: D = R = 5120/1750 s
	d := time.Duration(float64(5120) / bw * float64(time.Second))
	for _, tc := range []struct {
		mech      string
		high, low time.Duration
	}{
		{"wait", 90 * time.Second, 60 * time.Second},
		{"kill", 60 * time.Second, 150 * time.Second},
		{"checkpoint", 60*time.Second + d, 120*time.Second + 2*d},
		{"adaptive", 60*time.Second + d, 120*time.Second + 2*d},
	} {
		high, low, r := timeline(t, tc.mech, bw)
		if !nearDur(high, tc.high) || !nearDur(low, tc.low) {
			t.Errorf("%s: high %v low %v, want %v and %v", tc.mech, high, low, tc.high, tc.low)
		}
		t.Logf("%-10s high %6.2fs low %6.2fs wasted %6.2f slot-s", tc.mech, high.Seconds(), low.Seconds(), r.WastedSlotSeconds)
	}
	hw, lw, _ := timeline(t, "wait", bw)
	hk, lk, rk := timeline(t, "kill", bw)
	hc, lc, rc := timeline(t, "checkpoint", bw)
	if !(hk < hc && hc < hw) || !(lw < lc && lc < lk) {
		t.Errorf("order: high kill %v < checkpoint %v < wait %v; low wait %v < checkpoint %v < kill %v", hk, hc, hw, lw, lc, lk)
	}
	if rk.WastedSlotSeconds != 30 || math.Abs(rc.WastedSlotSeconds-2*d.Seconds()) > 0.01 {
		t.Errorf("wasted: kill %v (want 30), checkpoint %v (want D+R = %v)", rk.WastedSlotSeconds, rc.WastedSlotSeconds, 2*d.Seconds())
	}
	if s := rc.Preemption; s == nil || s.Checkpoints != 1 || s.ImageBytes != 5<<30 || math.Abs(s.WorkSavedSeconds-30) > 0.01 {
		t.Errorf("checkpoint stats %+v", s)
	}
}

// TestTimelineReleaseSlot: with the victim's slot free before its dump
// ends (preemption.checkpoint.release-slot frozen or quiesced), the
// high-priority job starts at 30 s as with kill (60 s response, not 60+D);
// the low one restores once the high one ends (its image was ready long
// before): 120+D, D less than with dumped, since the dump ran beside the
// high job; the slot time wasted is the restore's alone.
func TestTimelineReleaseSlot(t *testing.T) {
	bw := 1750.0
	d := time.Duration(float64(5120) / bw * float64(time.Second))
	for _, tc := range []struct {
		release   string
		high, low time.Duration
		wasted    float64
	}{
		{preempt.ReleaseDumped, 60*time.Second + d, 120*time.Second + 2*d, 2 * d.Seconds()},
		{preempt.ReleaseFrozen, 60 * time.Second, 120*time.Second + d, d.Seconds()},
		{preempt.ReleaseQuiesced, 60 * time.Second, 120*time.Second + d, d.Seconds()},
	} {
		high, low, r := timelineWith(t, "checkpoint", bw, map[string]string{preempt.KeyReleaseSlot: tc.release})
		if !nearDur(high, tc.high) || !nearDur(low, tc.low) || math.Abs(r.WastedSlotSeconds-tc.wasted) > 0.01 {
			t.Errorf("%s: high %v low %v wasted %.2f slot-s, want %v, %v and %.2f", tc.release, high, low, r.WastedSlotSeconds, tc.high, tc.low, tc.wasted)
		}
		if s := r.Preemption; s == nil || s.Checkpoints != 1 || math.Abs(s.DumpSeconds-d.Seconds()) > 0.01 {
			t.Errorf("%s: checkpoint stats %+v", tc.release, s)
		}
	}
}

// TestTimelineBandwidthSensitivity is the spec's §5.14 sensitivity run:
// bandwidth swept from 10 MiB/s to 2 GiB/s; adaptive is kill below
// 2·5120/30 ≈ 341 MiB/s and checkpoint above, and its high-priority
// response is never worse than wait's.
func TestTimelineBandwidthSensitivity(t *testing.T) {
	hw, _, _ := timeline(t, "wait", 100)
	for _, bw := range []float64{10, 30, 117, 300, 340, 342, 400, 1000, 1750, 2048} {
		ha, la, _ := timeline(t, "adaptive", bw)
		hk, lk, _ := timeline(t, "kill", bw)
		hc, lc, _ := timeline(t, "checkpoint", bw)
		want := "kill"
		wh, wl := hk, lk
		if bw > 2*5120.0/30 {
			want, wh, wl = "checkpoint", hc, lc
		}
		if ha != wh || la != wl {
			t.Errorf("%v MiB/s: adaptive high %v low %v, want %s's %v %v", bw, ha, la, want, wh, wl)
		}
		if ha > hw {
			t.Errorf("%v MiB/s: adaptive high %v worse than wait %v", bw, ha, hw)
		}
		t.Logf("%6.0f MiB/s: adaptive=%-10s high %6.2fs low %6.2fs (checkpoint %6.2fs %6.2fs)", bw, want, ha.Seconds(), la.Seconds(), hc.Seconds(), lc.Seconds())
	}
}

// TestTimelineSplitAndAuto runs the timeline with a splittable low job:
// split frees the slot at once (no heartbeat) and the low job's remainder
// costs its start-up (1 s); auto leaves a task about to finish alone
// (wait) and splits one that is not.
func TestTimelineSplitAndAuto(t *testing.T) {
	for _, tc := range []struct {
		name      string
		mech      string
		arrive    time.Duration
		high, low time.Duration
		wantMech  string
	}{
		{"split at 30s", preempt.SettingSplit, 30 * time.Second, 60 * time.Second, 121 * time.Second, "split"},
		{"auto at 30s: split", preempt.SettingAuto, 30 * time.Second, 60 * time.Second, 121 * time.Second, "split"},
		{"auto at 55s: wait 5s", preempt.SettingAuto, 55 * time.Second, 65 * time.Second, 60 * time.Second, "wait"},
		{"kill at 55s", preempt.SettingKill, 55 * time.Second, 60 * time.Second, 175 * time.Second, "kill"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &Workload{Name: "timeline", Trackers: 1, MapSlots: 1, Slowstart: 1, Jobs: []Job{
				{ID: "low", Name: "low", Maps: []time.Duration{time.Minute}},
				{ID: "high", Name: "high", Priority: 1, Submit: tc.arrive, Maps: []time.Duration{time.Minute}},
			}}
			conf := map[string]string{"scheduler.fifo.preemption": "true", preempt.KeyMechanism: tc.mech, preempt.KeySplitMinAge: "10s"}
			r, err := Run(w, Options{Policy: "fifo", Conf: conf, Slowstart: -1, Knowledge: KnowNone, Preemption: PreemptionModel{Splittable: true}})
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]time.Duration{}
			for _, j := range r.Jobs {
				got[j.ID] = dur(j.Response)
			}
			if !nearDur(got["high"], tc.high) || !nearDur(got["low"], tc.low) {
				t.Errorf("high %v low %v, want %v %v", got["high"], got["low"], tc.high, tc.low)
			}
			s := r.Preemption
			n := map[string]int64{"split": s.Splits, "wait": s.Waits, "kill": s.Kills, "checkpoint": s.Checkpoints}
			if n[tc.wantMech] != 1 || s.Splits+s.Waits+s.Kills+s.Checkpoints != 1 {
				t.Errorf("stats %+v, want one %s", s, tc.wantMech)
			}
		})
	}
}

// TestKillAfterResumeKeepsImage checks that killing a resumed attempt
// loses only what it did since its image: adaptive checkpoints the low job
// at 30 s (30 s of progress against 1.17 s of dump and restore), resumes
// it at 90.585 s, then kills it at 91.5 s (0.33 s of progress since the
// restore); its task resumes from the same image after the high job.
func TestKillAfterResumeKeepsImage(t *testing.T) {
	w := &Workload{Name: "resume", Trackers: 1, MapSlots: 1, Slowstart: 1, Jobs: []Job{
		{ID: "low", Name: "low", Maps: []time.Duration{time.Minute}},
		{ID: "mid", Name: "mid", Priority: 1, Submit: 30 * time.Second, Maps: []time.Duration{time.Minute}},
		{ID: "high", Name: "high", Priority: 2, Submit: 91500 * time.Millisecond, Maps: []time.Duration{time.Minute}},
	}}
	bw := 1750.0 * preempt.MiB
	conf := map[string]string{"scheduler.fifo.preemption": "true", preempt.KeyMechanism: preempt.SettingAdaptive, preempt.KeyMedium: "nvm"}
	r, err := Run(w, Options{Policy: "fifo", Conf: conf, Slowstart: -1, Knowledge: KnowNone, Preemption: PreemptionModel{BWWrite: bw, BWRead: bw}})
	if err != nil {
		t.Fatal(err)
	}
	d := time.Duration(float64(1<<30) / bw * float64(time.Second))
	want := 151500*time.Millisecond + d + 30*time.Second
	for _, j := range r.Jobs {
		if j.ID == "low" && !nearDur(dur(j.Response), want) {
			t.Errorf("low job's response %v, want %v (resumed twice from its one image)", dur(j.Response), want)
		}
	}
	if s := r.Preemption; s.Checkpoints != 1 || s.Kills != 1 {
		t.Errorf("stats %+v, want one checkpoint and one kill", s)
	}
}

// contention is an Amoeba-style contention run (seed 004 §4): a long job
// of 20 maps of 300 s on 5 trackers of 2 map slots, and a periodic job of
// higher priority, 8 maps of 50 s (80% of the slots) every 200 s from
// 100 s, six times; FIFO with priority preemption, heartbeat 1 s, 1 GiB
// attempts on ssd. It returns the long job's response, the periodic
// jobs' mean response and the run.
func contention(t *testing.T, mech string) (long, periodic float64, r *Result) {
	t.Helper()
	w := &Workload{Name: "contention", Trackers: 5, MapSlots: 2, Slowstart: 1}
	var lm []time.Duration
	for i := 0; i < 20; i++ {
		lm = append(lm, 300*time.Second)
	}
	w.Jobs = append(w.Jobs, Job{ID: "long", Name: "long", Maps: lm})
	for k := 0; k < 6; k++ {
		var pm []time.Duration
		for i := 0; i < 8; i++ {
			pm = append(pm, 50*time.Second)
		}
		w.Jobs = append(w.Jobs, Job{ID: fmt.Sprint("periodic", k), Name: "periodic", Priority: 1, Submit: time.Duration(100+200*k) * time.Second, Maps: pm})
	}
	conf := map[string]string{"scheduler.fifo.preemption": "true", preempt.KeyMechanism: mech,
		preempt.KeySplitMinAge: "0s", preempt.KeySplitMinRemaining: "0s"}
	r, err := Run(w, Options{Policy: "fifo", Conf: conf, Slowstart: -1, Knowledge: KnowNone, Heartbeat: time.Second,
		Preemption: PreemptionModel{Splittable: true}})
	if err != nil {
		t.Fatalf("%s: %v", mech, err)
	}
	for _, j := range r.Jobs {
		if j.ID == "long" {
			long = j.Response
		} else {
			periodic += j.Response / 6
		}
	}
	return long, periodic, r
}

// TestContentionSplitVsKill checks the direction of Amoeba's contention
// result: the long job finishes at least 25% sooner when its tasks are
// split than when they are killed (seed 004 reports 33% longer with
// kill), and the periodic job waits at most a heartbeat more for its
// slots (a split frees its slot at the safe point, a heartbeat after the
// order).
func TestContentionSplitVsKill(t *testing.T) {
	lk, pk, rk := contention(t, preempt.SettingKill)
	ls, ps, rs := contention(t, preempt.SettingSplit)
	for _, m := range []string{preempt.SettingCheckpoint, preempt.SettingAdaptive, preempt.SettingAuto} {
		l, p, r := contention(t, m)
		t.Logf("%-10s long %7.1fs periodic mean %5.1fs wasted %6.0f slot-s", m, l, p, r.WastedSlotSeconds)
	}
	t.Logf("%-10s long %7.1fs periodic mean %5.1fs wasted %6.0f slot-s", "kill", lk, pk, rk.WastedSlotSeconds)
	t.Logf("%-10s long %7.1fs periodic mean %5.1fs wasted %6.0f slot-s", "split", ls, ps, rs.WastedSlotSeconds)
	if lk < 1.25*ls {
		t.Errorf("long job: kill %.1fs, split %.1fs: want kill at least 25%% longer", lk, ls)
	}
	if ps > pk+1 {
		t.Errorf("periodic jobs: split %.1fs, kill %.1fs: want split at most a heartbeat slower", ps, pk)
	}
}

// TestTimelineReduceSplit is the timeline on a reduce slot: a low-priority
// job of one 1 s map and one 60 s reduce, and a high-priority job of the
// same shape arriving at 30 s; FIFO with priority preemption, one map and
// one reduce slot. When the high job's map is done (31 s) it takes the
// reduce slot: a kill loses the low reduce's 30 s of work, a split keeps
// it, and the low job's remainder costs its start-up (1 s) plus the
// re-fetch and merge of skip-replay (ReduceReplay).
func TestTimelineReduceSplit(t *testing.T) {
	run := func(mech string, replay time.Duration) (high, low time.Duration, s *PreemptStats) {
		t.Helper()
		w := &Workload{Name: "reduce-timeline", Trackers: 1, MapSlots: 1, ReduceSlots: 1, Slowstart: 1, Jobs: []Job{
			{ID: "low", Name: "low", Maps: []time.Duration{time.Second}, Reduces: []time.Duration{time.Minute}},
			{ID: "high", Name: "high", Priority: 1, Submit: 30 * time.Second, Maps: []time.Duration{time.Second}, Reduces: []time.Duration{time.Minute}},
		}}
		conf := map[string]string{"scheduler.fifo.preemption": "true", preempt.KeyMechanism: mech,
			preempt.KeySplitMinAge: "0s", preempt.KeySplitMinRemaining: "0s"}
		r, err := Run(w, Options{Policy: "fifo", Conf: conf, Slowstart: -1, Knowledge: KnowNone,
			Preemption: PreemptionModel{Splittable: true, ReduceReplay: replay}})
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range r.Jobs {
			if j.ID == "high" {
				high = dur(j.Response)
			} else {
				low = dur(j.Response)
			}
		}
		return high, low, r.Preemption
	}
	hk, lk, sk := run(preempt.SettingKill, 0)
	hs, ls, ss := run(preempt.SettingSplit, 0)
	hr, lr, sr := run(preempt.SettingSplit, 10*time.Second)
	t.Logf("kill: high %v low %v; split: high %v low %v; split with 10 s replay: high %v low %v", hk, lk, hs, ls, hr, lr)
	if sk.Kills != 1 || ss.Splits != 1 || sr.Splits != 1 || ss.Kills+ss.Checkpoints+ss.Waits != 0 {
		t.Fatalf("victims: kill run %+v, split run %+v", sk, ss)
	}
	if !nearDur(hs, hk) || !nearDur(hr, hk) {
		t.Errorf("high job: %v with split, %v with kill: the reduce slot is free at once either way", hs, hk)
	}
	// The kill loses the 30 s the low reduce had run (from 1 s to 31 s);
	// the split keeps them, less the remainder's 1 s start-up.
	if !nearDur(lk-ls, 29*time.Second) {
		t.Errorf("low job: %v with kill, %v with split; want the split 29 s sooner", lk, ls)
	}
	if !nearDur(lr-ls, 10*time.Second) {
		t.Errorf("low job: %v with 10 s of replay, %v without", lr, ls)
	}
}
