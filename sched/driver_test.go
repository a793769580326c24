package sched

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"gomr/partitions"
	"gomr/preempt"
)

var t0 = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// scripted answers every offer with the decision it holds.
type scripted struct{ dec partitions.Decision }

func (*scripted) Name() string             { return "scripted" }
func (*scripted) Observe(partitions.Event) {}
func (s *scripted) Offer(*partitions.ClusterView, partitions.SlotOffer) partitions.Decision {
	return s.dec
}

// fakeHost records what it is told; it can checkpoint and split (unless
// told to fail) and describes attempts as 100 MiB, started at their
// start time, on node n.
type fakeHost struct {
	d        *Driver
	now      time.Time
	log      []string
	ckptErr  error
	launched int
}

func (h *fakeHost) Launch(_ partitions.SlotOffer, as partitions.Assignment) (bool, error) {
	h.launched++
	h.d.Started(h.now, Attempt{Job: as.JobID, Type: as.Type, Task: 100 + h.launched})
	return true, nil
}

func (h *fakeHost) Kill(a Attempt) error {
	h.log = append(h.log, "kill "+a.String())
	h.d.Ended(h.now, a, 0)
	return nil
}

func (h *fakeHost) Describe(a Attempt) preempt.Candidate {
	return preempt.Candidate{Node: "n", RSSBytes: 100 * preempt.MiB, Progressed: time.Minute, Remaining: -1, CanCheckpoint: true, Splittable: true}
}

func (h *fakeHost) Checkpoint(a Attempt, inc bool) error {
	if h.ckptErr != nil {
		return h.ckptErr
	}
	h.log = append(h.log, "checkpoint "+a.String())
	return nil
}

func (h *fakeHost) Split(a Attempt) error {
	h.log = append(h.log, "split "+a.String())
	return nil
}

// killOnly is a host without the optional interfaces.
type killOnly struct{ h *fakeHost }

func (k killOnly) Launch(o partitions.SlotOffer, as partitions.Assignment) (bool, error) {
	return k.h.Launch(o, as)
}
func (k killOnly) Kill(a Attempt) error { return k.h.Kill(a) }

func setup(t *testing.T, mech string, dec partitions.Decision) (*Driver, *fakeHost, *[]partitions.Event) {
	t.Helper()
	d := New(&scripted{dec: dec})
	cfg := preempt.DefaultConfig()
	cfg.Mechanism = mech
	d.SetPlanner(preempt.New(cfg))
	var evs []partitions.Event
	d.OnEvent(func(ev partitions.Event) { evs = append(evs, ev) })
	d.Submitted(t0, partitions.JobView{ID: "A", Maps: 4})
	d.Submitted(t0, partitions.JobView{ID: "B", Maps: 4})
	for i := 0; i < 3; i++ {
		d.Started(t0.Add(time.Duration(i)*time.Second), Attempt{Job: "A", Type: partitions.Map, Task: i})
	}
	return d, &fakeHost{d: d, now: t0.Add(time.Minute)}, &evs
}

func view() *partitions.ClusterView {
	return &partitions.ClusterView{Now: t0.Add(time.Minute), Jobs: []partitions.JobView{
		{ID: "A", Maps: 4, PendingMaps: 1, RunningMaps: 3}, {ID: "B", Maps: 4, PendingMaps: 4}}}
}

var offer = partitions.SlotOffer{Tracker: "t", FreeMaps: 0}

// TestDriverMechanisms checks that the driver carries out each mechanism
// through the host, and what the stats, the outcome and the events say.
func TestDriverMechanisms(t *testing.T) {
	dec := partitions.Decision{Preempt: []partitions.Preemption{{JobID: "A", Type: partitions.Map, Count: 2}}}
	for _, tc := range []struct {
		mech      string
		plain     bool // the host has no Describer, Checkpointer or Splitter
		ckptErr   error
		want      string
		preempted int
		releasing int
		by        string
	}{
		{mech: "kill", want: "kill A/m2.0, kill A/m1.0", preempted: 2, by: "kill"},
		{mech: "checkpoint", want: "checkpoint A/m2.0, checkpoint A/m1.0", releasing: 2, by: "checkpoint"},
		{mech: "split", want: "split A/m2.0, split A/m1.0", releasing: 2, by: "split"},
		{mech: "checkpoint", plain: true, want: "kill A/m2.0, kill A/m1.0", preempted: 2, by: "kill"},
		{mech: "checkpoint", ckptErr: errors.New("criu refused"), want: "kill A/m2.0, kill A/m1.0", preempted: 2, by: "kill"},
	} {
		t.Run(fmt.Sprintf("%s plain=%v err=%v", tc.mech, tc.plain, tc.ckptErr), func(t *testing.T) {
			d, h, evs := setup(t, tc.mech, dec)
			h.ckptErr = tc.ckptErr
			var host Host = h
			if tc.plain {
				host = killOnly{h}
			}
			var acts []PreemptAction
			d.OnPreempt(func(a PreemptAction) { acts = append(acts, a) })
			out, err := d.Offer(view(), offer, host)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(h.log, ", "); got != tc.want {
				t.Errorf("host was told %q, want %q", got, tc.want)
			}
			if out.Preempted != tc.preempted || out.Releasing != tc.releasing {
				t.Errorf("outcome %+v", out)
			}
			if len(acts) != 2 || (tc.ckptErr != nil) != (acts[0].Err != nil) {
				t.Errorf("actions %+v", acts)
			}
			if tc.ckptErr != nil && d.Stats().Fallbacks != 2 {
				t.Errorf("fallbacks %d", d.Stats().Fallbacks)
			}
			// The victims still running end now, as their host reports.
			for _, a := range []Attempt{{Job: "A", Task: 2}, {Job: "A", Task: 1}} {
				d.Ended(h.now, a, 0)
			}
			n := 0
			for _, ev := range *evs {
				if ev.Kind == partitions.TaskFailed {
					n++
					if ev.PreemptedBy != tc.by {
						t.Errorf("TaskFailed of %s by %q, want %q", ev.JobID, ev.PreemptedBy, tc.by)
					}
				}
			}
			if n != 2 {
				t.Errorf("%d TaskFailed events, want 2", n)
			}
			if d.Planner().InFlight("A/map") != 0 {
				t.Errorf("still in flight after the ends")
			}
		})
	}
}

// TestDriverInFlight checks that a policy asking again while checkpoints
// run preempts nothing more, and that a checkpoint frees no slot for the
// decision's own assignments.
func TestDriverInFlight(t *testing.T) {
	dec := partitions.Decision{Preempt: []partitions.Preemption{{JobID: "A", Type: partitions.Map, Count: 2}}}
	d, h, _ := setup(t, "checkpoint", dec)
	for i := 0; i < 3; i++ {
		if _, err := d.Offer(view(), offer, h); err != nil {
			t.Fatal(err)
		}
	}
	if got := strings.Join(h.log, ", "); got != "checkpoint A/m2.0, checkpoint A/m1.0" {
		t.Errorf("host was told %q", got)
	}
	if s := d.Stats(); s.Mechanisms[preempt.MechCkpt][partitions.Map] != 2 || s.Preempted[partitions.Map] != 0 {
		t.Errorf("stats %+v", s)
	}
	d.Ended(h.now, Attempt{Job: "A", Task: 2}, 0)
	if _, err := d.Offer(view(), offer, h); err != nil {
		t.Fatal(err)
	}
	if got := h.log[len(h.log)-1]; got != "checkpoint A/m0.0" {
		t.Errorf("after one dump ended the policy got %q", got)
	}

	// A decision giving a preempted slot back to the same job: allowed
	// when the victim is killed (its task is pending again), refused when
	// it is checkpointed (the slot is not free in this offer).
	give := partitions.Decision{Preempt: []partitions.Preemption{{JobID: "A", Type: partitions.Map, Count: 1}},
		Assign: []partitions.Assignment{{JobID: "A", Type: partitions.Map}, {JobID: "A", Type: partitions.Map}}}
	for mech, refused := range map[string]bool{"kill": false, "checkpoint": true} {
		d, h, _ := setup(t, mech, give)
		_, err := d.Offer(view(), partitions.SlotOffer{Tracker: "t", FreeMaps: 2}, h)
		var de *DecisionError
		if errors.As(err, &de) != refused {
			t.Errorf("%s: error %v, want refused=%v", mech, err, refused)
		}
	}
}

// TestReasons checks that every reclaim reason of the policies maps to the
// planner's reason of the same name.
func TestReasons(t *testing.T) {
	for pr, r := range reasons {
		if int(pr) != int(r) {
			t.Errorf("partitions reason %d maps to planner reason %d", pr, r)
		}
	}
	if len(reasons) != int(partitions.ReclaimDeadlineAtRisk)+1 {
		t.Errorf("%d reasons mapped", len(reasons))
	}
}

// TestTasksAdded: the driver tells the policy of tasks added to a job it
// knows, and nothing for a job it does not or for no task.
func TestTasksAdded(t *testing.T) {
	tests := []struct {
		name string
		job  string
		typ  partitions.TaskType
		n    int
		want string
	}{
		{"maps", "A", partitions.Map, 3, "A map +3"},
		{"reduces", "A", partitions.Reduce, 1, "A reduce +1"},
		{"none", "A", partitions.Map, 0, ""},
		{"unknown job", "B", partitions.Map, 2, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := New(&scripted{})
			d.Submitted(t0, partitions.JobView{ID: "A", Maps: 1})
			got := ""
			d.OnEvent(func(ev partitions.Event) {
				if ev.Kind == partitions.TasksAdded {
					got = fmt.Sprintf("%s %v +%d", ev.JobID, ev.Type, ev.Count)
				}
			})
			d.TasksAdded(t0, tt.job, tt.typ, tt.n)
			if got != tt.want {
				t.Errorf("event %q, want %q", got, tt.want)
			}
		})
	}
}
