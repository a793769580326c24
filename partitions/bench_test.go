package partitions

import (
	"fmt"
	"testing"
)

// BenchmarkOffer measures one assignment decision on a cluster of 1,000
// trackers (10 map + 4 reduce slots each) running 10,000 tasks of 200
// jobs, for every policy.
func BenchmarkOffer(b *testing.B) {
	const (
		trackers = 1000
		jobs     = 200
		running  = 10000
	)
	for _, name := range Names() {
		b.Run(name, func(b *testing.B) {
			cfg, _ := NewMapConfig(map[string]string{"scheduler.tyrex.capacities": "0.3,0.7", "scheduler.sita.predictor": "oracle"})
			p, err := New(name, cfg)
			if err != nil {
				b.Fatal(err)
			}
			view := &ClusterView{Now: at(1000), Trackers: trackers, MapSlots: 10 * trackers, ReduceSlots: 4 * trackers}
			perJob := running / jobs
			for i := 0; i < jobs; i++ {
				v := JobView{ID: fmt.Sprintf("job_%04d", i), Name: fmt.Sprintf("app%d", i%7), Pool: fmt.Sprintf("pool%d", i%5),
					Submitted: at(float64(i)), Maps: 400, Reduces: 20, PendingMaps: 400 - perJob, RunningMaps: perJob - 5,
					RunningReduces: 5, PendingReduces: 15, ReducesReady: true, EstimatedSize: secs(float64(1000 + 100*i)),
					Deadline: at(float64(5000 + 10*i)), Profile: prof(30, 60), InputBytes: int64(i+1) << 26,
					LocalPendingMaps: map[string]int{"host7": 3}}
				cp := v
				p.Observe(Event{Time: v.Submitted, Kind: JobSubmitted, JobID: v.ID, Job: &cp})
				for k := 0; k < perJob; k++ {
					typ := Map
					if k >= perJob-5 {
						typ = Reduce
					}
					p.Observe(Event{Time: v.Submitted, Kind: TaskStarted, JobID: v.ID, Type: typ, Task: k})
				}
				view.Jobs = append(view.Jobs, v)
			}
			offer := SlotOffer{Tracker: "tracker_7", Host: "host7", FreeMaps: 2, FreeReduces: 1}
			p.Offer(view, offer)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				p.Offer(view, offer)
			}
		})
	}
}
