package partitions

import (
	"fmt"
	"sort"

	"gomr/conf"
)

// fifoKeys are the FIFO policy's keys.
var fifoKeys = []conf.Key{
	{Name: "scheduler.fifo.preemption", Type: conf.Bool, Default: "false", Description: "fifo: when a job of higher priority has pending tasks and no slot of their type is free, preempt tasks of the lowest-priority running jobs (the spec's PriorityArrival trigger; Hadoop's FIFO never preempts)"},
}

func init() {
	registerKeys(fifoKeys...)
	Register("fifo", func(cfg Config) (Policy, error) {
		r := newReader(cfg)
		f := &FIFO{Preemption: r.Bool("scheduler.fifo.preemption")}
		if r.Err() != nil {
			return nil, fmt.Errorf("policy fifo: %w", r.Err())
		}
		return f, nil
	})
}

// FIFO is Hadoop's default scheduler: jobs in order of priority (higher
// first), then submission time. A free map slot goes to the first job with
// a pending map, preferring, among jobs of the same rank, none: order is
// strict, as in Hadoop's JobQueueTaskScheduler. Within the chosen job the
// JobTracker picks a data-local task when it has one.
//
// With Preemption (scheduler.fifo.preemption), a job of higher priority
// that has pending tasks of a type while no slot of that type is free in
// the cluster takes slots back from running jobs of lower priority, the
// lowest priority first, among equals the most recently submitted first
// (spec preemption-elasticity §5.4, PriorityArrival): the policy asks for
// as many as the higher-priority jobs have pending, counting those already
// being released, so asking again at every offer while checkpoints run
// preempts nothing more (the driver's in-flight accounting).
type FIFO struct {
	Preemption bool

	order []int // Offer's scratch: the jobs' FIFO order, reused
}

// Name returns "fifo".
func (*FIFO) Name() string { return "fifo" }

// Observe does nothing: FIFO keeps no state of its own.
func (*FIFO) Observe(Event) {}

// Offer fills the free slots from the jobs in FIFO order, then preempts
// for higher-priority jobs left waiting when Preemption is on.
func (f *FIFO) Offer(view *ClusterView, offer SlotOffer) Decision {
	// The jobs' FIFO order as indexes into the view, and each job's
	// remaining pending counts and local maps only for the jobs this
	// offer reaches: an Offer among 1,000 jobs copied and sorted every
	// view and looked the offer's host up in each job's map of hosts.
	order := fifoOrder(view.Jobs, f.order[:0])
	f.order = order
	var d Decision
	var assigned [2]int
	free := offer.FreeMaps
	for _, i := range order {
		if free == 0 {
			break
		}
		j := &view.Jobs[i]
		if j.PendingMaps == 0 {
			continue
		}
		localLeft := j.LocalPendingMaps[offer.Host]
		for n := j.PendingMaps; free > 0 && n > 0; n-- {
			local := localLeft > 0
			if local {
				localLeft--
			}
			d.Assign = append(d.Assign, Assignment{JobID: j.ID, Type: Map, Local: local})
			free--
			assigned[Map]++
		}
	}
	free = offer.FreeReduces
	for _, i := range order {
		if free == 0 {
			break
		}
		j := &view.Jobs[i]
		if !j.ReducesReady {
			continue
		}
		for n := j.PendingReduces; free > 0 && n > 0; n-- {
			d.Assign = append(d.Assign, Assignment{JobID: j.ID, Type: Reduce})
			free--
			assigned[Reduce]++
		}
	}
	if f.Preemption {
		// The preemption rule looks at every job: it gets them in FIFO
		// order with this offer's assignments taken off their pending
		// counts.
		jobs := make([]JobView, len(order))
		for k, i := range order {
			jobs[k] = view.Jobs[i]
		}
		for _, as := range d.Assign {
			for k := range jobs {
				if jobs[k].ID == as.JobID {
					if as.Type == Map {
						jobs[k].PendingMaps--
					} else {
						jobs[k].PendingReduces--
					}
					break
				}
			}
		}
		for _, t := range []TaskType{Map, Reduce} {
			d.Preempt = append(d.Preempt, fifoPreempt(view, jobs, t, assigned[t])...)
		}
	}
	return d
}

// fifoOrder returns, in buf, the indexes of jobs in FIFO order: higher
// priority first, then earlier submission, ties in view order (a stable
// sort). A view already in that order, as the JobTracker's usually is
// (submission order, one priority), costs one pass.
func fifoOrder(jobs []JobView, buf []int) []int {
	for i := range jobs {
		buf = append(buf, i)
	}
	before := func(a, b int) bool {
		ja, jb := &jobs[a], &jobs[b]
		if ja.Priority != jb.Priority {
			return ja.Priority > jb.Priority
		}
		return ja.Submitted.Before(jb.Submitted)
	}
	sorted := true
	for k := 1; k < len(buf); k++ {
		if before(buf[k], buf[k-1]) {
			sorted = false
			break
		}
	}
	if !sorted {
		sort.SliceStable(buf, func(a, b int) bool { return before(buf[a], buf[b]) })
	}
	return buf
}

// fifoPreempt returns the preemptions of type t for the jobs (in FIFO
// order, their pending counts less this offer's assignments) when no slot
// of type t is free in the cluster.
func fifoPreempt(view *ClusterView, jobs []JobView, t TaskType, assigned int) []Preemption {
	slots, running := view.MapSlots, 0
	if t == Reduce {
		slots = view.ReduceSlots
	}
	pend := func(j *JobView) int {
		if t == Map {
			return j.PendingMaps
		}
		if !j.ReducesReady {
			return 0
		}
		return j.PendingReduces
	}
	run := func(j *JobView) int {
		if t == Map {
			return j.RunningMaps
		}
		return j.RunningReduces
	}
	for i := range jobs {
		running += run(&jobs[i])
	}
	if slots-running-assigned > 0 {
		return nil
	}
	// Victims: lowest priority first, then the most recently submitted.
	victims := make([]int, 0, len(jobs))
	for i := range jobs {
		if run(&jobs[i]) > 0 {
			victims = append(victims, i)
		}
	}
	sort.SliceStable(victims, func(a, b int) bool {
		ja, jb := &jobs[victims[a]], &jobs[victims[b]]
		if ja.Priority != jb.Priority {
			return ja.Priority < jb.Priority
		}
		return ja.Submitted.After(jb.Submitted)
	})
	avail := make(map[int]int, len(victims))
	for _, v := range victims {
		avail[v] = run(&jobs[v])
	}
	count := map[int]int{}
	for w := range jobs { // highest priority first
		need := pend(&jobs[w])
		for _, v := range victims {
			if need == 0 {
				break
			}
			if jobs[v].Priority >= jobs[w].Priority || avail[v] == 0 {
				continue
			}
			k := min(need, avail[v])
			avail[v] -= k
			count[v] += k
			need -= k
		}
	}
	var out []Preemption
	for _, v := range victims {
		if count[v] > 0 {
			out = append(out, Preemption{JobID: jobs[v].ID, Type: t, Count: count[v], Reason: ReclaimPriorityArrival})
		}
	}
	return out
}
