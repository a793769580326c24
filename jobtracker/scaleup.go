package jobtracker

import (
	"fmt"
	"time"

	"gomr/mr"
	"gomr/mrpb"
	"gomr/partitions"
	"gomr/preempt"
)

// Scale-up splits (Amoeba's work stealing, spec §5.9.3, docs/split.md):
// when a tracker has map slots that no job wants (the policy left them
// free) and a job has no pending map but a long running one, the
// JobTracker splits that map with a fanout k: its remainder is cut into k
// pieces of about equal bytes. The first piece stays the map's own (its
// split ends earlier, and its next attempt resumes at the split point with
// ExactStart, as any remainder); the others become new map tasks of the
// job with ordinary splits (they skip to the first record after their
// start and finish the record that straddles their end), so that idle
// slots take part of the work. Reducers learn of the new maps from a
// MAPS_ADDED event and wait for them too. Reduces are split for idle
// reduce slots the same way, by key range (reduce_scaleup.go).

// Its configuration keys, preempt.KeyScaleUp and preempt.KeyScaleUpFanout,
// are the planner's package's, which the simulator reads too; which tasks
// may be split at all is preempt's KeySplitMinAge and KeySplitMinRemaining.

// scaleUpMinPieceBytes is the smallest piece a scale-up split makes: a
// smaller remainder is cut into fewer pieces, or not split.
const scaleUpMinPieceBytes = 64 << 10

// scaleUpLocked orders at most one scale-up split for the map slots of
// tracker t left free after its offer and one for its reduce slots
// (scaleUpTypeLocked). Off unless preemption.split.scale-up is set.
func (jt *JobTracker) scaleUpLocked(t *trackerState, now time.Time) {
	if !jt.cfg.Bool(preempt.KeyScaleUp) || t.blacklisted {
		return
	}
	jt.scaleUpTypeLocked(t, partitions.Map, now, func(a *attempt) bool {
		return jt.scaleUpBytesLocked(a) >= 2*scaleUpMinPieceBytes
	})
	jt.scaleUpTypeLocked(t, partitions.Reduce, now, func(a *attempt) bool { return a.phase == "REDUCE" })
}

// scaleUpLocked's rule, for maps and reduces alike: scaleUpTypeLocked
// orders at most one scale-up split for the slots of type typ of tracker t
// left free, of the running attempt of that type, of a job with no
// pending task of the type and no scale-up split of one on the way,
// expected to run the longest (and at least preemption.split.min-remaining;
// at least preemption.split.min-task-age old) among those splittable
// says may be split, with the fanout min(preemption.split.scale-up-fanout,
// idle slots + 1).
//
// For maps, splittable asks for a remainder large enough for two pieces
// (scaleUpBytesLocked); for reduces, that the attempt is in its reduce
// phase: a reduce's pieces are cut by key groups, and the reduce finds
// them (reduce_scaleup.go).
func (jt *JobTracker) scaleUpTypeLocked(t *trackerState, typ partitions.TaskType, now time.Time, splittable func(*attempt) bool) {
	idle := t.mapSlots
	tasks := func(j *job) []*task { return j.maps }
	what := "map"
	if typ == partitions.Reduce {
		idle = t.reduceSlots
		tasks = func(j *job) []*task { return j.reduces }
		what = "reduce"
	}
	for _, a := range t.attempts {
		if a.task.typ == typ {
			idle--
		}
	}
	if idle <= 0 {
		return
	}
	minAge, minLeft := jt.cfg.Duration(preempt.KeySplitMinAge), jt.cfg.Duration(preempt.KeySplitMinRemaining)
	var best *attempt
	var bestLeft time.Duration
	for _, j := range jt.order {
		if j.done() || j.committing || j.pending[typ] > 0 || scaleUpInFlight(j, typ) {
			continue
		}
		for _, tk := range tasks(j) {
			if tk.state != taskRunning {
				continue
			}
			for _, a := range tk.running() {
				left := time.Duration(-1)
				if a.rate > 0 && a.progress < 1 {
					left = time.Duration((1 - float64(a.progress)) / a.rate * float64(time.Second))
				}
				switch {
				case now.Sub(a.start) < minAge, left >= 0 && left < minLeft, left < 0 && minLeft > 0:
					continue
				case !splittable(a) || jt.splitRefusalLocked(a) != nil:
					continue
				}
				if best == nil || left > bestLeft {
					best, bestLeft = a, left
				}
			}
		}
	}
	if best == nil {
		return
	}
	fanout := min(jt.cfg.Int(preempt.KeyScaleUpFanout), idle+1)
	if fanout < 2 {
		return
	}
	if err := jt.orderSplitLocked(best, fanout); err != nil {
		jt.log.Warn("scale-up split refused", "type", what, "attempt", best.id, "error", err)
		return
	}
	jt.log.Info("scale-up split ordered", "type", what, "attempt", best.id, "fanout", fanout, "idle_slots", idle, "tracker", t.name)
}

// scaleUpInFlight tells whether a scale-up split of one of j's tasks of
// type typ was ordered and has not ended yet.
func scaleUpInFlight(j *job, typ partitions.TaskType) bool {
	ts := j.maps
	if typ == partitions.Reduce {
		ts = j.reduces
	}
	for _, m := range ts {
		for _, a := range m.running() {
			if a.split != nil && a.split.ordered && a.split.fanout > 1 {
				return true
			}
		}
	}
	return false
}

// scaleUpBytesLocked estimates the input bytes map attempt a has left: its
// part of the split times the share of its record loop not done (the loop
// is 2/3 of a map's progress).
func (jt *JobTracker) scaleUpBytesLocked(a *attempt) int64 {
	s := a.task.job.splits[a.task.index]
	from := s.Start
	if a.split != nil && a.split.from.spill > 0 {
		from = a.split.from.off
	}
	done := min(float64(a.progress)*3/2, 1)
	return int64((1 - done) * float64(s.Start+s.Length-from))
}

// scaleUpPiecesLocked cuts the remainder of map task t, split at cut by
// a scale-up split of fanout k, into up to k pieces of about equal bytes
// (at least scaleUpMinPieceBytes each): the task keeps the first (its
// split now ends where the second starts) and the others become new map
// tasks, announced to the reducers by a MAPS_ADDED event and to the
// policy by the driver's TasksAdded (the deadline policies size a job by
// its maps), and logged for a restarted JobTracker (a "pieces" line).
func (jt *JobTracker) scaleUpPiecesLocked(t *task, cut mapCut, k int, now time.Time) {
	j := t.job
	s := j.splits[t.index]
	end := s.Start + s.Length
	left := end - cut.off
	k = min(k, int(left/scaleUpMinPieceBytes))
	if k < 2 {
		return
	}
	bounds := make([]int64, k+1)
	for i := range bounds {
		bounds[i] = cut.off + left*int64(i)/int64(k)
	}
	first := s
	first.Length = bounds[1] - s.Start
	j.splits[t.index] = first
	var ids []string
	logged := []mr.Split{first}
	for i := 1; i < k; i++ {
		p := s
		p.Start, p.Length, p.ExactStart = bounds[i], bounds[i+1]-bounds[i], false
		ids = append(ids, addMapTask(j, p).id())
		logged = append(logged, p)
	}
	j.appendEvent(&mrpb.MapEvent{Kind: "MAPS_ADDED", MapTask: int32(len(j.maps))}, packedSpill{})
	jt.driver.TasksAdded(now, j.id, partitions.Map, k-1)
	j.counters.Add(mr.SplitGroup, mr.ScaleUpSplits, 1)
	j.counters.Add(mr.SplitGroup, mr.ScaleUpMaps, int64(k-1))
	// For a restarted JobTracker (recovery.go): the map's new split and
	// the pieces', and the job counters with them.
	jt.appendEventLocked(t, &taskEvent{Kind: "pieces", Type: "m", Task: t.index, Splits: logged, JobCounters: j.counters})
	jt.prom.scaleUpMaps.Add(float64(k - 1))
	jt.log.Info("scale-up split: remainder cut into pieces", "task", t.id(), "pieces", k, "first_ends", bounds[1], "new_maps", ids)
}

// addMapTask adds a pending map task of split s to job j (a scale-up
// split's piece).
func addMapTask(j *job, s mr.Split) *task {
	nt := &task{job: j, typ: partitions.Map, index: len(j.maps), state: taskPending, failedOn: map[string]bool{}}
	j.maps = append(j.maps, nt)
	j.mapsNotDoneLocked()
	j.viewChanged()
	j.splits = append(j.splits, s)
	j.byState[partitions.Map][taskPending]++
	j.pendingChanged(nt, 1)
	return nt
}

// recoverPiecesLocked replays, in a restarted JobTracker, a "pieces" line
// of the job's event log: map task ev.Task's split becomes ev.Splits[0]
// and each other split a new pending map, as scaleUpPiecesLocked made
// them. It says why a line does not fit the job.
func recoverPiecesLocked(j *job, ev *taskEvent) error {
	if ev.Task < 0 || ev.Task >= len(j.maps) || len(ev.Splits) < 2 {
		return fmt.Errorf("event log has scale-up pieces of map %d (%d splits) for a job of %d maps", ev.Task, len(ev.Splits), len(j.maps))
	}
	j.splits[ev.Task] = ev.Splits[0]
	for _, s := range ev.Splits[1:] {
		// Numbered as the recovered job's other attempts, past those
		// the pieces had before the restart.
		addMapTask(j, s).nextAttempt = j.maps[ev.Task].nextAttempt
	}
	return nil
}
