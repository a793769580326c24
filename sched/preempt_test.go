package sched

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"gomr/partitions"
	"gomr/preempt"
)

// nopHost launches and kills without recording anything: the driver's own
// cost of a preemption, without a host's.
type nopHost struct{ d *Driver }

func (h nopHost) Launch(partitions.SlotOffer, partitions.Assignment) (bool, error) { return false, nil }
func (h nopHost) Kill(a Attempt) error                                             { h.d.Ended(t0, a, 0); return nil }

// BenchmarkPreemptKills is one offer whose decision kills `kill` of the
// `live` running maps of a job with the default (kill) planner, as
// MinEDF-WC does for a deadline job's arrival at 10,000 trackers: 20,000
// maps of the earlier jobs running, 1,400 to 7,000 of them spare. The
// offer runs under the JobTracker's lock, so its time is a heartbeat's
// hold of it.
func BenchmarkPreemptKills(b *testing.B) {
	for _, sz := range []struct{ live, kill int }{{20000, 1400}, {20000, 7000}} {
		b.Run(fmt.Sprintf("live=%d/kill=%d", sz.live, sz.kill), func(b *testing.B) {
			dec := partitions.Decision{Preempt: []partitions.Preemption{{JobID: "A", Type: partitions.Map, Count: sz.kill, Reason: partitions.ReclaimDeadlineAtRisk}}}
			v := &partitions.ClusterView{Now: t0.Add(time.Minute), MapSlots: sz.live, Jobs: []partitions.JobView{{ID: "A", Maps: 2 * sz.live, RunningMaps: sz.live}}}
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				d := New(&scripted{dec: dec})
				d.SetPlanner(preempt.New(preempt.DefaultConfig()))
				d.Submitted(t0, partitions.JobView{ID: "A", Maps: 2 * sz.live})
				for k := range sz.live {
					d.Started(t0.Add(time.Duration(k)*time.Millisecond), Attempt{Job: "A", Type: partitions.Map, Task: k})
				}
				b.StartTimer()
				out, err := d.Offer(v, partitions.SlotOffer{Tracker: "t"}, nopHost{d})
				if err != nil || out.Preempted != sz.kill {
					b.Fatalf("offer: %d preempted, %v; want %d", out.Preempted, err, sz.kill)
				}
			}
		})
	}
}

// TestSortedLiveNewest: the newest attempts of a type, oldest first, for
// every count asked (negative: all).
func TestSortedLiveNewest(t *testing.T) {
	js := &jobState{live: map[Attempt]live{}}
	// maps started with seqs 1, 3, 5, 7, 9; reduces with 2, 4, 6
	for s := uint64(1); s <= 9; s++ {
		typ := partitions.Map
		if s%2 == 0 {
			if s > 6 {
				continue
			}
			typ = partitions.Reduce
		}
		a := Attempt{Job: "A", Type: typ, Task: int(s)}
		js.live[a] = live{a: a, seq: s}
	}
	m := partitions.Map
	for _, tc := range []struct {
		typ    *partitions.TaskType
		newest int
		want   []uint64
	}{
		{&m, -1, []uint64{1, 3, 5, 7, 9}},
		{&m, 0, nil},
		{&m, 2, []uint64{7, 9}},
		{&m, 5, []uint64{1, 3, 5, 7, 9}},
		{&m, 6, []uint64{1, 3, 5, 7, 9}},
		{nil, 3, []uint64{6, 7, 9}},
		{nil, -1, []uint64{1, 2, 3, 4, 5, 6, 7, 9}},
	} {
		var got []uint64
		for _, l := range sortedLive(js, tc.typ, tc.newest) {
			got = append(got, l.seq)
		}
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("typ %v, newest %d: seqs %v, want %v", tc.typ, tc.newest, got, tc.want)
		}
	}
}

// TestKillOnlyNamesTheNewest: a kill-only planner kills the newest
// attempts of the job, newest first, whatever their number against the
// live ones; a planner that may checkpoint is given every live attempt.
func TestKillOnlyNamesTheNewest(t *testing.T) {
	for _, tc := range []struct {
		mech string
		kill int
		want string
	}{
		{"kill", 1, "kill A/m9.0"},
		{"kill", 3, "kill A/m9.0, kill A/m8.0, kill A/m7.0"},
		{"kill", 10, "kill A/m9.0, kill A/m8.0, kill A/m7.0, kill A/m6.0, kill A/m5.0, kill A/m4.0, kill A/m3.0, kill A/m2.0, kill A/m1.0, kill A/m0.0"},
		{"checkpoint", 2, "checkpoint A/m9.0, checkpoint A/m8.0"},
	} {
		dec := partitions.Decision{Preempt: []partitions.Preemption{{JobID: "A", Type: partitions.Map, Count: tc.kill}}}
		d := New(&scripted{dec: dec})
		cfg := preempt.DefaultConfig()
		cfg.Mechanism = tc.mech
		d.SetPlanner(preempt.New(cfg))
		d.Submitted(t0, partitions.JobView{ID: "A", Maps: 20})
		for i := range 10 {
			d.Started(t0.Add(time.Duration(i)*time.Second), Attempt{Job: "A", Type: partitions.Map, Task: i})
		}
		h := &fakeHost{d: d, now: t0.Add(time.Minute)}
		v := &partitions.ClusterView{Now: h.now, Jobs: []partitions.JobView{{ID: "A", Maps: 20, PendingMaps: 10, RunningMaps: 10}}}
		if _, err := d.Offer(v, offer, h); err != nil {
			t.Fatalf("%s %d: %v", tc.mech, tc.kill, err)
		}
		if got := strings.Join(h.log, ", "); got != tc.want {
			t.Errorf("%s %d: host was told %q, want %q", tc.mech, tc.kill, got, tc.want)
		}
	}
}
