package replay

import (
	"sort"
	"strings"
	"testing"
	"time"

	"gomr/sim"
)

// TestMixesFitTheEmbeddedCluster generates every small mix and checks,
// with the simulator, that it runs in 2-5 minutes on the default
// embedded cluster under FIFO and fair sharing, with few enough tasks.
func TestMixesFitTheEmbeddedCluster(t *testing.T) {
	for _, m := range Mixes {
		w, err := Load(m.Name, 1)
		if err != nil {
			t.Fatal(err)
		}
		tasks := 0
		for _, j := range w.Jobs {
			tasks += len(j.Maps) + len(j.Reduces)
			for _, d := range append(append([]time.Duration(nil), j.Maps...), j.Reduces...) {
				if d < MinTask {
					t.Errorf("%s: job %s has a task of %v < %v", m.Name, j.ID, d, MinTask)
				}
			}
		}
		for _, p := range []string{"fifo", "fair"} {
			r, err := Simulate(w, p, w.Conf, DefaultTrackers, DefaultMapSlots, DefaultReduceSlots, 0.05, SimModel{})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s %s: %d jobs, %d tasks, makespan %.0f s, mean slowdown %.2f", m.Name, p, len(w.Jobs), tasks, r.Summary.MakespanS, r.Summary.Slowdown.Mean)
			if r.Summary.MakespanS < 120 || r.Summary.MakespanS > 300 {
				t.Errorf("%s under %s: simulated makespan %.0f s, want 2-5 min", m.Name, p, r.Summary.MakespanS)
			}
		}
	}
}

func TestLoadRefusesBadTraces(t *testing.T) {
	if _, err := Load("no-such-mix", 1); err == nil || !strings.Contains(err.Error(), "hvw-small") {
		t.Errorf("unknown trace: %v, want an error listing the mixes", err)
	}
	if _, err := Scale(&sim.Workload{}, 0); err == nil {
		t.Error("time scale 0 accepted")
	}
}

func TestRankingsAgree(t *testing.T) {
	run := func(p string, mean float64) PolicyRun {
		r := &sim.Result{Policy: p}
		r.Summary.Slowdown.Mean = mean
		return PolicyRun{Policy: p, Real: r}
	}
	real := Ranking([]PolicyRun{run("fifo", 3), run("fair", 2), run("sita", 2)}, func(r PolicyRun) *sim.Result { return r.Real })
	if got := rankString(real); got != "fair = sita < fifo" {
		t.Errorf("ranking %q", got)
	}
	if !RankingsAgree(real, [][]string{{"sita"}, {"fair"}, {"fifo"}}) {
		t.Error("a tie should agree with any order of its policies")
	}
	if RankingsAgree(real, [][]string{{"fifo"}, {"fair", "sita"}}) {
		t.Error("fifo first should disagree")
	}
}

func TestPairsResolved(t *testing.T) {
	mean := func(r *sim.Result) float64 { return r.Summary.Slowdown.Mean }
	// run is policy p with real mean slowdown real and its draws' means.
	run := func(p string, real float64, draws ...float64) PolicyRun {
		r := &sim.Result{Policy: p}
		r.Summary.Slowdown.Mean = real
		pr := PolicyRun{Policy: p, Real: r}
		for _, d := range draws {
			var s sim.Summary
			s.Slowdown.Mean = d
			pr.Draws = append(pr.Draws, s)
		}
		return pr
	}
	for _, tc := range []struct {
		name                         string
		runs                         []PolicyRun
		ok                           bool
		agree, contradict, unresolve string
	}{
		{name: "every draw agrees", ok: true,
			runs:  []PolicyRun{run("fifo", 3, 3, 3.1, 2.9, 3), run("fair", 2, 2, 2.1, 1.9, 2)},
			agree: "fair < fifo (100%)"},
		{name: "every draw contradicts", ok: true,
			runs:       []PolicyRun{run("fifo", 3, 1, 1, 1, 1), run("fair", 2, 2, 2, 2, 2)},
			contradict: "fair < fifo (0%)"},
		{name: "half the draws each way", ok: true,
			runs:      []PolicyRun{run("fifo", 3, 1, 3, 1, 3), run("fair", 2, 2, 2, 2, 2)},
			unresolve: "fair < fifo (50%)"},
		{name: "a tied draw counts half: 3.5 of 4 is below 90%", ok: true,
			runs:      []PolicyRun{run("fifo", 3, 3, 3, 3, 2), run("fair", 2, 2, 2, 2, 2)},
			unresolve: "fair < fifo (88%)"},
		{name: "real tie is left out", ok: true,
			runs: []PolicyRun{run("fifo", 2, 3, 3), run("fair", 2, 2, 2)}},
		{name: "three policies", ok: true,
			runs:       []PolicyRun{run("a", 1, 1, 1), run("b", 2, 2, 0.5), run("c", 3, 0, 0)},
			agree:      "",
			contradict: "a < c (0%), b < c (0%)",
			unresolve:  "a < b (50%)"},
		{name: "no draws", runs: []PolicyRun{run("fifo", 3), run("fair", 2)}},
		{name: "draw counts differ", runs: []PolicyRun{run("fifo", 3, 3, 3), run("fair", 2, 2, 2, 2)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ag, con, un, ok := PairsResolved(tc.runs, mean, 0.9)
			if ok != tc.ok {
				t.Fatalf("ok %v, want %v", ok, tc.ok)
			}
			if got := pairsString(ag); got != tc.agree {
				t.Errorf("agree %q, want %q", got, tc.agree)
			}
			if got := pairsString(con); got != tc.contradict {
				t.Errorf("contradict %q, want %q", got, tc.contradict)
			}
			if got := pairsString(un); got != tc.unresolve {
				t.Errorf("unresolved %q, want %q", got, tc.unresolve)
			}
		})
	}
}

// TestDrawErrors: each draw's job errors against the draws' median, and
// their P90s sorted.
func TestDrawErrors(t *testing.T) {
	res := func(resp ...float64) *sim.Result {
		r := &sim.Result{}
		for i, x := range resp {
			r.Jobs = append(r.Jobs, sim.JobRecord{ID: string(rune('a' + i)), Response: x})
		}
		return r
	}
	med := res(1, 2)
	errs := DrawErrors([]*sim.Result{res(1, 3), res(1.5, 2), res(1, 2)}, med)
	if len(errs) != 3 || errs[0][0] != 0 || errs[0][1] != 0.5 || errs[1][1] != 0.5 || errs[2][1] != 0 {
		t.Fatalf("draw errors %v, want [[0 0.5] [0 0.5] [0 0]]", errs)
	}
	p := DrawP90s(errs)
	if len(p) != 3 || p[0] != 0 || p[2] < 0.45 || p[2] > 0.5 || !sort.Float64sAreSorted(p) {
		t.Errorf("P90s %v, want sorted, from 0 to about 0.5", p)
	}
	if got := drawErrSpread(nil); got != "-" {
		t.Errorf("no draws: %q", got)
	}
}

func TestMergeTruncateScale(t *testing.T) {
	s := time.Second
	ds := []time.Duration{1 * s, 2 * s, 3 * s, 4 * s, 5 * s}
	if got := merge(ds, 2); len(got) != 2 || got[0]+got[1] != 15*s {
		t.Errorf("merge: %v, want 2 tasks of 15 s in all", got)
	}
	if got := truncate(ds, 2); len(got) != 2 || got[0] != s || got[1] != 2*s {
		t.Errorf("truncate: %v", got)
	}
	w := &sim.Workload{Conf: map[string]string{"scheduler.tyrex.timers": "60s"},
		Jobs: []sim.Job{{ID: "a", Submit: 10 * s, Maps: ds, Reduces: []time.Duration{s}, Deadline: 30 * s}}}
	c, err := Scale(w, 0.5)
	if err != nil {
		t.Fatal(err)
	}
	j := c.Jobs[0]
	if j.Submit != 5*s || j.Maps[4] != 2500*time.Millisecond || j.Reduces[0] != s/2 || j.Deadline != 15*s || c.Conf["scheduler.tyrex.timers"] != "30s" {
		t.Errorf("scaled: %+v, conf %v", j, c.Conf)
	}
	if w.Jobs[0].Maps[4] != 5*s {
		t.Error("Scale changed its input")
	}
}
