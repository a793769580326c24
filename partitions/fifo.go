package partitions

import "sort"

func init() {
	Register("fifo", func(Config) (Policy, error) { return &FIFO{}, nil })
}

// FIFO is Hadoop's default scheduler: jobs in order of priority (higher
// first), then submission time. A free map slot goes to the first job with
// a pending map, preferring, among jobs of the same rank, none: order is
// strict, as in Hadoop's JobQueueTaskScheduler. Within the chosen job the
// JobTracker picks a data-local task when it has one.
type FIFO struct{}

// Name returns "fifo".
func (*FIFO) Name() string { return "fifo" }

// Observe does nothing: FIFO keeps no state of its own.
func (*FIFO) Observe(Event) {}

// Offer fills the free slots from the jobs in FIFO order.
func (*FIFO) Offer(view *ClusterView, offer SlotOffer) Decision {
	jobs := make([]JobView, len(view.Jobs))
	copy(jobs, view.Jobs)
	sort.SliceStable(jobs, func(i, j int) bool {
		if jobs[i].Priority != jobs[j].Priority {
			return jobs[i].Priority > jobs[j].Priority
		}
		return jobs[i].Submitted.Before(jobs[j].Submitted)
	})
	localLeft := make([]int, len(jobs))
	for i := range jobs {
		localLeft[i] = jobs[i].LocalPendingMaps[offer.Host]
	}
	var d Decision
	free := offer.FreeMaps
	for i := range jobs {
		for free > 0 && jobs[i].PendingMaps > 0 {
			local := localLeft[i] > 0
			if local {
				localLeft[i]--
			}
			d.Assign = append(d.Assign, Assignment{JobID: jobs[i].ID, Type: Map, Local: local})
			jobs[i].PendingMaps--
			free--
		}
	}
	free = offer.FreeReduces
	for i := range jobs {
		for free > 0 && jobs[i].ReducesReady && jobs[i].PendingReduces > 0 {
			d.Assign = append(d.Assign, Assignment{JobID: jobs[i].ID, Type: Reduce})
			jobs[i].PendingReduces--
			free--
		}
	}
	return d
}
