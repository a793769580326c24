package sim

import (
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
