package jobtracker

import (
	"fmt"
	"slices"
	"time"

	"gomr/mr"
	"gomr/mrpb"
	"gomr/partitions"
)

// Scale-up splits of reduces (docs/split.md, spec §5.9.4): when a tracker
// has reduce slots that no job wants and a job has no pending reduce but a
// long one in its reduce phase, the JobTracker splits that reduce with a
// fanout k, as it splits a long map. The reduce stops at its next key
// group and commits its output so far as a fragment (as any split reduce),
// then reads the rest of its key range once, without reducing it, and
// reports up to k-1 keys that cut it into pieces of about equal records
// (ReduceCut.bounds). The task keeps the first piece (it is now bounded:
// its next attempt stops after the first bound) and each other piece
// becomes a new reduce task of the same partition, reducing the key groups
// after its lower bound through its upper one (ReduceResume.piece,
// .partition, .upper_key). Every piece writes fragments of the partition
// (mr.PieceFragmentName), and the job commit joins the partition's
// fragments task by task in key order into its one part file, so that the
// output is that of an undivided run byte for byte.

// partition is the map-output partition reduce task t reduces: its index,
// or a scale-up piece's partition.
func (t *task) partition() int {
	if t.split != nil && t.split.piece {
		return t.split.part
	}
	return t.index
}

// partitions is the number of map-output partitions of the job: its
// reduces at submission (scale-up pieces reduce parts of them).
func (j *job) partitions() int { return j.spec.NumReduces }

// checkBounds tells whether bounds, reported by a reduce of task range s
// split after lastKey, cut the rest of its range: increasing under cmp,
// the first after lastKey, the last before s's upper key when s is
// bounded. Without hasLast (a replayed line) the bounds are checked
// without lastKey.
func checkBounds(s *taskSplit, lastKey []byte, hasLast bool, bounds [][]byte, cmp mr.Comparator) error {
	prev := lastKey
	for i, b := range bounds {
		if (i > 0 || hasLast) && cmp(b, prev) <= 0 {
			return fmt.Errorf("bound %d is not after the key before it", i)
		}
		prev = b
	}
	if s != nil && s.bounded && len(bounds) > 0 && cmp(prev, s.upper) >= 0 {
		return fmt.Errorf("the last bound is not before the task's upper key")
	}
	return nil
}

// addReducePieces cuts the key groups of reduce task t after its last
// fragment at bounds (increasing, checkBounds): t keeps those through
// bounds[0] and each bounds[i] starts a new pending reduce task of t's
// partition, through bounds[i+1] or, for the last, through t's own upper
// key (none: the partition's end). It returns the new tasks; a restarted
// JobTracker replays it from the event log, so that the tasks are the same.
func addReducePieces(j *job, t *task, bounds [][]byte) []*task {
	if t.split == nil {
		t.split = &taskSplit{chain: map[int]*attempt{}}
	}
	s := t.split
	part := t.partition()
	upper, bounded := s.upper, s.bounded
	s.upper, s.bounded = bounds[0], true
	added := make([]*task, 0, len(bounds))
	for i, lo := range bounds {
		p := &taskSplit{chain: map[int]*attempt{}, piece: true, part: part, lower: lo, upper: upper, bounded: bounded}
		if i+1 < len(bounds) {
			p.upper, p.bounded = bounds[i+1], true
		}
		nt := &task{job: j, typ: partitions.Reduce, index: len(j.reduces), state: taskPending, failedOn: map[string]bool{},
			split: p, nextAttempt: t.nextAttempt - t.nextAttempt%1000}
		j.reduces = append(j.reduces, nt)
		j.viewChanged()
		j.byState[partitions.Reduce][taskPending]++
		j.pendingChanged(nt, 1)
		added = append(added, nt)
	}
	return added
}

// partitionRuns orders the reduce tasks of one partition that write
// fragments by key range (the partition's own task first, then the
// pieces by lower bound under cmp), checks that their ranges follow one
// another (each piece starts where the task before it ends, the last is
// not bounded), and lists their fragments for the join: a task's
// recorded fragments and its successful attempt's.
func partitionRuns(ts []*task, cmp mr.Comparator) ([]mr.FragmentRun, error) {
	ts = slices.Clone(ts)
	slices.SortFunc(ts, func(a, b *task) int {
		switch {
		case !a.split.piece && !b.split.piece:
			return a.index - b.index
		case !a.split.piece:
			return -1
		case !b.split.piece:
			return 1
		}
		return cmp(a.split.lower, b.split.lower)
	})
	runs := make([]mr.FragmentRun, 0, len(ts))
	for i, t := range ts {
		s := t.split
		switch {
		case i == 0 && s.piece:
			return nil, fmt.Errorf("reduce %s is a piece, but the partition's own task writes no fragment", t.id())
		case i > 0 && !s.piece:
			return nil, fmt.Errorf("reduce %s and %s both start the partition", ts[0].id(), t.id())
		case i > 0 && (!ts[i-1].split.bounded || cmp(ts[i-1].split.upper, s.lower) != 0):
			return nil, fmt.Errorf("reduce %s does not start where %s ends", t.id(), ts[i-1].id())
		case i == len(ts)-1 && s.bounded:
			return nil, fmt.Errorf("reduce %s ends before the partition does, and no piece follows it", t.id())
		}
		runs = append(runs, mr.FragmentRun{Task: t.index, N: len(s.frags) + 1})
	}
	return runs, nil
}

// reducePiecesLocked makes the pieces of reduce task t, whose attempt
// ordered split for idle slots committed fragment cut.Fragment and
// reported the bounds of the rest (cut.Bounds): new reduce tasks of its
// partition, told to the policy by the driver's TasksAdded (the deadline
// policies and FAIR count them), and logged for a restarted JobTracker (a
// "pieces" line). Bounds that do not cut the rest are ignored (logged):
// the task then runs its rest as one remainder, as after any split.
func (jt *JobTracker) reducePiecesLocked(t *task, cut *mrpb.ReduceCut, cmp mr.Comparator, now time.Time) {
	j := t.job
	if err := checkBounds(t.split, cut.LastKey, true, cut.Bounds, cmp); err != nil {
		jt.log.Warn("reduce scale-up split: bounds ignored, the rest runs as one remainder", "task", t.id(), "error", err)
		return
	}
	added := addReducePieces(j, t, cut.Bounds)
	ids := make([]string, len(added))
	for i, nt := range added {
		ids[i] = nt.id()
	}
	jt.driver.TasksAdded(now, j.id, partitions.Reduce, len(added))
	j.counters.Add(mr.SplitGroup, mr.ScaleUpReduceSplits, 1)
	j.counters.Add(mr.SplitGroup, mr.ScaleUpReduces, int64(len(added)))
	// For a restarted JobTracker (recovery.go): after the fragment's line.
	jt.appendEventLocked(t, &taskEvent{Kind: "pieces", Type: "r", Task: t.index, Bounds: cut.Bounds, JobCounters: j.counters})
	jt.prom.scaleUpReduces.Add(float64(len(added)))
	jt.log.Info("reduce scale-up split: rest cut into key ranges", "task", t.id(), "partition", t.partition(), "pieces", len(added)+1, "new_reduces", ids)
}

// recoverReducePiecesLocked replays, in a restarted JobTracker, a
// "pieces" line of reduce task ev.Task (addReducePieces).
func recoverReducePiecesLocked(j *job, ev *taskEvent, cmp mr.Comparator) error {
	if ev.Task < 0 || ev.Task >= len(j.reduces) || len(ev.Bounds) == 0 {
		return fmt.Errorf("event log has scale-up pieces of reduce %d (%d bounds) for a job of %d reduces", ev.Task, len(ev.Bounds), len(j.reduces))
	}
	t := j.reduces[ev.Task]
	if err := checkBounds(t.split, nil, false, ev.Bounds, cmp); err != nil {
		return fmt.Errorf("event log has scale-up pieces of reduce %d whose bounds do not cut its range: %w", ev.Task, err)
	}
	addReducePieces(j, t, ev.Bounds)
	return nil
}
