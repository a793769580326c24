package sim

import (
	"time"

	"gomr/partitions"
	"gomr/preempt"
)

// Scale-up splits in the simulator (Amoeba's work stealing, spec §5.9.3;
// the JobTracker's rule of jobtracker/scaleup.go, docs/split.md): with
// preemption.split.scale-up on, when an offer leaves map slots of a
// tracker free (the policy wanted none of them), the engine splits the
// running map, of a splittable job with reduces, no pending map and no
// scale-up split on the way, expected to run the longest: at least
// preemption.split.min-task-age old and preemption.split.min-remaining
// left. The split reaches its safe point one heartbeat later, as a
// preemption split does (sim/preemption.go); the work left then is cut
// into k = min(preemption.split.scale-up-fanout, idle slots + 1) pieces
// of equal work (fewer when a piece would be shorter than the start-up
// cost): the task keeps the first as its remainder, the others are new
// maps of the job, each paying the start-up cost as a remainder does. The
// policy is told of them (the driver's TasksAdded) before the split
// attempt's end. What the simulator does not model is the runtime's
// bytes: a piece here is a share of the remaining time, where the
// JobTracker cuts the remaining input bytes.
//
// Reduces the same way (jobtracker/reduce_scaleup.go): when an offer
// leaves reduce slots free, the engine splits the running reduce, of a job
// whose map stage is done (the reduce is in its reduce phase) and that has
// no pending reduce and no reduce scale-up split on the way, expected to
// run the longest; its work left at the safe point is cut into pieces of
// equal time, each added reduce paying the start-up cost and
// PreemptionModel.ReduceReplay (it fetches and merges its key range) as a
// split reduce's remainder does. The runtime cuts the rest by key groups
// of about equal records; the simulator's equal time is that with every
// record taking the same time.

// ScaleUpStats count the scale-up splits of a run.
type ScaleUpStats struct {
	// Splits is the maps split for idle slots, MapsAdded the maps their
	// pieces added.
	Splits    int64 `json:"splits"`
	MapsAdded int64 `json:"maps_added"`
	// ReduceSplits is the reduces split for idle slots, ReducesAdded the
	// reduces their pieces added.
	ReduceSplits int64 `json:"reduce_splits"`
	ReducesAdded int64 `json:"reduces_added"`
}

// scaleUp orders at most one scale-up split for a tracker that has idle
// map slots the policy left free in its offer.
func (e *engine) scaleUp(idle int) {
	c := e.pre.cfg
	if !c.ScaleUp || idle <= 0 || !e.pre.m.Splittable {
		return
	}
	var best *attempt
	var bestLeft time.Duration
	for _, sj := range e.active {
		if sj.prep || sj.cleaning || len(sj.pendMaps) > 0 || len(sj.spec.Reduces) == 0 || e.scaleUpInFlight(sj, partitions.Map) {
			continue
		}
		for el := sj.running[partitions.Map].Front(); el != nil; el = el.Next() {
			at := el.Value.(*attempt)
			if _, rel := e.pre.rel[at]; rel || at.end < 0 {
				continue
			}
			left := at.end - e.now
			if e.now-e.usefulFrom(at) < c.SplitMinAge || left < c.SplitMinRemaining {
				continue
			}
			if best == nil || left > bestLeft {
				best, bestLeft = at, left
			}
		}
	}
	if best != nil {
		e.orderScaleUp(best, idle, e.pre.m.StartupCost)
	}
}

// scaleUpReduces orders at most one scale-up split for a tracker that has
// idle reduce slots the policy left free in its offer: of the longest
// running reduce in its reduce phase (its job's maps done).
func (e *engine) scaleUpReduces(idle int) {
	c := e.pre.cfg
	if !c.ScaleUp || idle <= 0 || !e.pre.m.Splittable {
		return
	}
	var best *attempt
	var bestLeft time.Duration
	for _, sj := range e.active {
		if sj.prep || sj.cleaning || len(sj.pendReds) > 0 || sj.doneMaps < e.nMaps(sj) || e.scaleUpInFlight(sj, partitions.Reduce) {
			continue
		}
		for el := sj.running[partitions.Reduce].Front(); el != nil; el = el.Next() {
			at := el.Value.(*attempt)
			if _, rel := e.pre.rel[at]; rel || at.end < 0 || at.waiting {
				continue
			}
			left := at.end - e.now
			if e.now-e.usefulFrom(at) < c.SplitMinAge || left < c.SplitMinRemaining {
				continue
			}
			if best == nil || left > bestLeft {
				best, bestLeft = at, left
			}
		}
	}
	if best != nil {
		e.orderScaleUp(best, idle, e.pre.m.StartupCost+e.pre.m.ReduceReplay)
	}
}

// orderScaleUp orders attempt at split for idle slots: it reaches its
// safe point a heartbeat later, and its work left then is cut into k =
// min(fanout, idle + 1) pieces, fewer when a piece would be shorter than
// startup (what a piece pays before its work).
func (e *engine) orderScaleUp(at *attempt, idle int, startup time.Duration) {
	sp := e.now + e.opt.Heartbeat
	work := at.end - sp
	k := min(e.pre.cfg.ScaleUpFanout, idle+1)
	for k >= 2 && work/time.Duration(k) < startup {
		k--
	}
	if k < 2 {
		return
	}
	e.pre.rel[at] = releasing{mech: preempt.MechSplit, work: work, pieces: k}
	at.end = -1
	e.push(&event{at: sp, kind: evPreempted, att: at})
}

// scaleUpInFlight tells whether a scale-up split of one of sj's tasks of
// type typ was ordered and has not reached its safe point.
func (e *engine) scaleUpInFlight(sj *simJob, typ partitions.TaskType) bool {
	for at, r := range e.pre.rel {
		if at.job == sj && at.typ == typ && r.pieces > 1 && !at.killed && !at.done {
			return true
		}
	}
	return false
}

// addPieces cuts the work left of a map split for scale-up into r.pieces:
// it returns the task's own share (its remainder) and adds the other
// pieces as new pending maps of the job, told to the policy.
func (e *engine) addPieces(at *attempt, r releasing) time.Duration {
	sj := at.job
	k := time.Duration(r.pieces)
	piece := r.work / k
	own := r.work - (k-1)*piece
	if at.typ == partitions.Reduce {
		return e.addReducePieces(sj, r.pieces, piece, own)
	}
	for range r.pieces - 1 {
		task := e.nMaps(sj)
		sj.added = append(sj.added, piece+e.pre.m.StartupCost)
		sj.pendMaps = append(sj.pendMaps, task)
		sj.tries[partitions.Map] = append(sj.tries[partitions.Map], 0)
		e.res.WastedSlotSeconds += e.pre.m.StartupCost.Seconds()
	}
	sj.view.Maps = e.nMaps(sj)
	st := e.pre.scaleUp
	st.Splits++
	st.MapsAdded += int64(r.pieces - 1)
	e.d.TasksAdded(e.at(), sj.spec.ID, partitions.Map, r.pieces-1)
	return own
}

// addReducePieces adds the k-1 other pieces of a reduce split for idle
// slots, of work piece each (plus the start-up and the replay of its key
// range), as new pending reduces of the job, told to the policy; it
// returns own, the split reduce's share.
func (e *engine) addReducePieces(sj *simJob, k int, piece, own time.Duration) time.Duration {
	cost := e.pre.m.StartupCost + e.pre.m.ReduceReplay
	for range k - 1 {
		task := e.nReds(sj)
		sj.addedReds = append(sj.addedReds, piece+cost)
		sj.pendReds = append(sj.pendReds, task)
		sj.tries[partitions.Reduce] = append(sj.tries[partitions.Reduce], 0)
		e.res.WastedSlotSeconds += cost.Seconds()
	}
	sj.view.Reduces = e.nReds(sj)
	st := e.pre.scaleUp
	st.ReduceSplits++
	st.ReducesAdded += int64(k - 1)
	e.d.TasksAdded(e.at(), sj.spec.ID, partitions.Reduce, k-1)
	return own
}

// nReds is the job's number of reduces: its own and those scale-up splits
// added.
func (e *engine) nReds(sj *simJob) int { return len(sj.spec.Reduces) + len(sj.addedReds) }

// nMaps is the job's number of maps: its own and those scale-up splits
// added.
func (e *engine) nMaps(sj *simJob) int { return len(sj.spec.Maps) + len(sj.added) }

// mapWork is the work of map task i of the job: its trace's, or for a
// piece a scale-up split added its share with the start-up cost.
func mapWork(sj *simJob, i int) time.Duration {
	if i < len(sj.spec.Maps) {
		return sj.spec.Maps[i]
	}
	return sj.added[i-len(sj.spec.Maps)]
}
