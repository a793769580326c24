package sim

import (
	"math"
	"strings"
	"testing"
)

// TestEDFReduceHoarding: under edf (Hadoop's default allocation) a job's
// reduce takes the reduce slot once its slow-start fraction of maps is
// done and holds it until its map stage ends; a job that arrives later
// with an earlier deadline finishes its maps first, then waits for that
// slot and misses its deadline. minedf-wc, and edf with
// scheduler.edf.reduces-after-maps, launch reduces only after the map
// stage, so the slot is free for it.
func TestEDFReduceHoarding(t *testing.T) {
	// A: 4 maps of 10 s on 2 map slots, a reduce of 5 s, loose deadline;
	// B arrives at 1 s with one map and one reduce of 2 s, due at 21 s.
	w := tiny(
		Job{ID: "A", Maps: ds(10, 10, 10, 10), Reduces: ds(5), Deadline: s(1000)},
		Job{ID: "B", Submit: s(1), Maps: ds(2), Reduces: ds(2), Deadline: s(20)},
	)
	w.Slowstart = 0.25
	tests := []struct {
		policy  string
		conf    map[string]string
		bFinish float64
	}{
		// A's reduce holds the slot from 10 s to A's map end (22 s) + 5 s;
		// B's map runs 10-12 s, its reduce 27-29 s
		{"edf", nil, 29},
		// B's reduce runs 12-14 s, A's 22-27 s
		{"edf", map[string]string{"scheduler.edf.reduces-after-maps": "true"}, 14},
		{"minedf-wc", nil, 14},
		// the old minedf-wc setting keeps reduces after the maps whatever
		// edf does
		{"minedf-wc", map[string]string{"scheduler.edf.reduces-after-maps": "false"}, 14},
	}
	for _, tt := range tests {
		r, err := Run(w, Options{Policy: tt.policy, Conf: tt.conf, Slowstart: -1})
		if err != nil {
			t.Fatal(err)
		}
		got := byID(r)
		if b := got["B"]; b.Finish != tt.bFinish || b.Missed != (tt.bFinish-1 > 20) {
			t.Errorf("%s %v: B finished at %v (missed %v), want %v", tt.policy, tt.conf, b.Finish, b.Missed, tt.bFinish)
		}
		if a := got["A"]; a.Finish != 27 {
			t.Errorf("%s %v: A finished at %v, want 27", tt.policy, tt.conf, a.Finish)
		}
	}
}

// TestDeadlineWorkloadSetup: both deadline workloads run Hadoop 0.20.2's
// reduce slow-start (edf's reduces start early) and give the deadline
// policies ARIA's upper bound; an explicit setting overrides the latter.
func TestDeadlineWorkloadSetup(t *testing.T) {
	for _, name := range []string{"deadline-fb", "deadline-testbed"} {
		w, err := Generate(name, GenOptions{Seed: 1, Jobs: 20})
		if err != nil {
			t.Fatal(err)
		}
		if w.Slowstart != 0.05 || w.Conf["scheduler.deadline.bound"] != "up" {
			t.Errorf("%s: slowstart %v, conf %v", name, w.Slowstart, w.Conf)
		}
		for i := range w.Jobs {
			j := &w.Jobs[i]
			// the deadline reference is the runtime alone with reduces
			// after the map stage
			lo, hi := 1.0, 2.0
			if name == "deadline-testbed" {
				lo, hi = 2, 4
			}
			tj := AloneRuntime(j, 64, 64, 1)
			if j.Deadline < dur(lo*tj.Seconds())-1 || j.Deadline > dur(hi*tj.Seconds())+1 {
				t.Fatalf("%s job %s: deadline %v outside [%g, %g]·%v", name, j.ID, j.Deadline, lo, hi, tj)
			}
		}
	}
	w, _ := Generate("deadline-testbed", GenOptions{Seed: 1, Jobs: 20})
	a, err := Run(w, Options{Policy: "minedf", Slowstart: -1})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Run(w, Options{Policy: "minedf", Slowstart: -1, Conf: map[string]string{"scheduler.deadline.bound": "low"}})
	if err != nil {
		t.Fatal(err)
	}
	// larger quotas finish jobs sooner
	if a.Summary.Response.Mean >= b.Summary.Response.Mean {
		t.Errorf("upper-bound quotas (mean response %v) not faster than lower-bound ones (%v): the override or the workload's bound is ignored",
			a.Summary.Response.Mean, b.Summary.Response.Mean)
	}
}

// TestDeadlineTestbedStatistics checks deadline-testbed against the
// paper's description of its testbed workload (Verma et al. §IV.C), over
// seeds 1-5 of 1,000 jobs: the 18 jobs (six applications on three inputs
// each) with the map counts their inputs give (input/64 MB; WikiTrends one
// map per hourly compressed log), concatenated uniformly random
// permutations of the 18, exponential inter-arrivals (mean as asked, CV
// about 1), deadlines U[2, 4]·T_J (mean ratio 3, spread over the
// interval), and Sort's reduce work growing with its input.
func TestDeadlineTestbedStatistics(t *testing.T) {
	gb := func(g int) int { return g << 10 / 64 } // maps of g GB in 64 MB blocks
	wantMaps := map[string]int{
		"wordcount-1": gb(32), "wordcount-2": gb(40), "wordcount-3": gb(43),
		"bayes-1": gb(32), "bayes-2": gb(40), "bayes-3": gb(43),
		"tfidf-1": gb(32), "tfidf-2": gb(40), "tfidf-3": gb(43),
		"sort-1": gb(16), "sort-2": gb(32), "sort-3": gb(64),
		"twitter-1": gb(12), "twitter-2": gb(18), "twitter-3": 400, // 25 GB: 400 blocks
		"wikitrends-1": 30 * 24, "wikitrends-2": 31 * 24, "wikitrends-3": 30 * 24, // April, May, June 2010, hourly
	}
	const ia = 300.0
	for seed := uint64(1); seed <= 5; seed++ {
		w, err := Generate("deadline-testbed", GenOptions{Seed: seed, InterArrival: dur(ia)})
		if err != nil {
			t.Fatal(err)
		}
		if len(w.Jobs) != 1000 || w.Trackers*w.MapSlots != 64 || w.Trackers*w.ReduceSlots != 64 {
			t.Fatalf("seed %d: %d jobs on %d+%d slots, want 1000 on 64+64", seed, len(w.Jobs), w.Trackers*w.MapSlots, w.Trackers*w.ReduceSlots)
		}
		maps := map[string]int{}
		for i := range w.Jobs {
			j := &w.Jobs[i]
			if m, ok := maps[j.Name]; ok && m != len(j.Maps) {
				t.Fatalf("seed %d: %s has %d and %d maps: not one replayed job", seed, j.Name, m, len(j.Maps))
			}
			maps[j.Name] = len(j.Maps)
			// Sort's reduces carry the whole input: its reduce work keeps
			// pace with its map work at every input size
			if strings.HasPrefix(j.Name, "sort-") {
				var mw, rw float64
				for _, d := range j.Maps {
					mw += d.Seconds()
				}
				for k := range j.Reduces {
					rw += j.Reduces[k].Seconds() + j.Shuffles[k].Seconds()
				}
				if r := rw / mw; r < 1.1 || r > 1.4 {
					t.Errorf("seed %d: %s: reduce work %.0f slot-s is %.2f times its map work, want about 1.25", seed, j.Name, rw, r)
				}
			}
		}
		for name, want := range wantMaps {
			if maps[name] != want {
				t.Errorf("seed %d: %s has %d maps, want %d", seed, name, maps[name], want)
			}
		}
		if len(maps) != len(wantMaps) {
			t.Errorf("seed %d: %d distinct jobs, want 18", seed, len(maps))
		}
		// every block of 18 consecutive jobs is a permutation of the 18
		for b := 0; b+18 <= len(w.Jobs); b += 18 {
			seen := map[string]bool{}
			for _, j := range w.Jobs[b : b+18] {
				seen[j.Name] = true
			}
			if len(seen) != 18 {
				t.Fatalf("seed %d: jobs %d-%d are not a permutation of the 18 (%d distinct)", seed, b, b+17, len(seen))
			}
		}
		// exponential inter-arrivals: mean within 10% of the asked one, CV
		// within 0.15 of 1 (999 gaps)
		var s, s2 float64
		for i := 1; i < len(w.Jobs); i++ {
			g := (w.Jobs[i].Submit - w.Jobs[i-1].Submit).Seconds()
			s += g
			s2 += g * g
		}
		n := float64(len(w.Jobs) - 1)
		mean := s / n
		cv := math.Sqrt(s2/n-mean*mean) / mean
		if math.Abs(mean/ia-1) > 0.1 || math.Abs(cv-1) > 0.15 {
			t.Errorf("seed %d: inter-arrival mean %.1f s (want %.0f) and CV %.2f (want 1)", seed, mean, ia, cv)
		}
		// deadlines U[2, 4]·T_J: mean ratio 3, both halves of the interval used
		var rs float64
		low := 0
		for i := range w.Jobs {
			r := w.Jobs[i].Deadline.Seconds() / AloneRuntime(&w.Jobs[i], 64, 64, 1).Seconds()
			rs += r
			if r < 3 {
				low++
			}
		}
		if m := rs / float64(len(w.Jobs)); math.Abs(m-3) > 0.1 || low < 430 || low > 570 {
			t.Errorf("seed %d: deadline/T_J mean %.2f (want 3), %d of 1000 below 3 (want about 500)", seed, m, low)
		}
	}
}

// TestSpareKillCount: the kills MinEDF-WC makes are counted, and those of
// attempts launched on a spare slot (the paper's "extra slots allocated
// and then cancelled") are among them; EDF kills nothing.
func TestSpareKillCount(t *testing.T) {
	w, err := Generate("deadline-fb", GenOptions{Seed: 1, Jobs: 200, InterArrival: dur(300)})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"minedf-wc", "edf"} {
		r, err := Run(w, Options{Policy: p, Slowstart: -1})
		if err != nil {
			t.Fatal(err)
		}
		d := r.Summary.Deadline
		if p == "edf" {
			if d.KilledMapTasks != 0 || d.KilledSpareMapTasks != 0 || d.ExtraMapTasks != 0 {
				t.Errorf("edf: %d kills, %d of spare attempts, %d extra maps", d.KilledMapTasks, d.KilledSpareMapTasks, d.ExtraMapTasks)
			}
			continue
		}
		if d.KilledSpareMapTasks <= 0 || d.KilledSpareMapTasks > d.KilledMapTasks {
			t.Errorf("%s: %d kills of spare attempts of %d kills", p, d.KilledSpareMapTasks, d.KilledMapTasks)
		}
		if want := float64(d.KilledSpareMapTasks) / float64(d.ExtraMapTasks) * 100; math.Abs(d.SpareKillRatioPct-want) > 1e-9 {
			t.Errorf("%s: spare kill ratio %v, want %v", p, d.SpareKillRatioPct, want)
		}
	}
}

// TestIdleMapPending: the map slot time left free while maps are pending
// is MinEDF's by design (a loose deadline's quota of one map on two
// slots) and none of EDF's or MinEDF-WC's, which lends the spare slot;
// it is what MinEDF carries into an overload (docs/policies.md).
func TestIdleMapPending(t *testing.T) {
	// 4 maps of 10 s, 1,000 s to finish: a quota of 1 map slot of 2
	w := tiny(Job{ID: "A", Maps: ds(10, 10, 10, 10), Deadline: s(1000)})
	w.Knowledge = KnowOracle
	for _, tt := range []struct {
		policy string
		idle   float64 // slot-seconds
		finish float64
	}{
		{"edf", 0, 20},
		// one slot free while 3, 2, then 1 maps wait
		{"minedf", 30, 40},
		{"minedf-wc", 0, 20},
		{"fifo", 0, 20},
	} {
		r, err := Run(w, Options{Policy: tt.policy, Slowstart: -1})
		if err != nil {
			t.Fatal(err)
		}
		if got := r.Summary.IdleMapPendingS; math.Abs(got-tt.idle) > 1e-9 {
			t.Errorf("%s: idle with maps pending %v slot-s, want %v", tt.policy, got, tt.idle)
		}
		if got := Metrics(r)["idle.map_pending"]; math.Abs(got-tt.idle) > 1e-9 {
			t.Errorf("%s: metric idle.map_pending %v, want %v", tt.policy, got, tt.idle)
		}
		if a := byID(r)["A"]; a.Finish != tt.finish {
			t.Errorf("%s: A finished at %v, want %v", tt.policy, a.Finish, tt.finish)
		}
	}
	// with a heartbeat a freed slot waits for its tracker's next one
	r, err := Run(tiny(Job{ID: "A", Maps: ds(10, 10, 10)}), Options{Policy: "fifo", Slowstart: -1, Heartbeat: s(3)})
	if err != nil {
		t.Fatal(err)
	}
	if r.Summary.IdleMapPendingS <= 0 {
		t.Errorf("fifo with a 3 s heartbeat: idle with maps pending %v, want > 0", r.Summary.IdleMapPendingS)
	}
}
