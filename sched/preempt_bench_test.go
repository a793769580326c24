package sched

import (
	"fmt"
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
