package jobtracker

import (
	"bytes"
	"fmt"
	"time"

	"gomr/mr"
	"gomr/mrpb"
	"gomr/partitions"
)

// Amoeba-style reduce splitting on the JobTracker (docs/split.md, spec
// §5.9.4-5.9.6). A reduce ordered split stops between two reduce() calls,
// commits its output so far as fragment k of its partition (the commit is
// granted as any task commit: the task has one attempt) and ends SPLIT,
// reporting the last key group it reduced. The task records the fragment
// and goes back to pending: its next attempt reduces only the key groups
// after that key and writes fragment k+1. The job's commit joins each
// partition's fragments, in key order, into its one part file (spec
// §5.9.5 (b)), so the output is what a run without splits writes.

// reduceFrag is a committed output fragment of a reduce task: the key
// groups after the previous fragment's lastKey up to and including its
// own, reduced by attempt by (whose counters count for the task).
type reduceFrag struct {
	lastKey []byte
	by      *attempt
}

// nextFragment is the fragment a new attempt of the task writes, and the
// key after which its key groups start (nil for fragment 0: all of them).
func (s *taskSplit) nextFragment() (int, []byte) {
	if s == nil || len(s.frags) == 0 {
		if s != nil && s.piece {
			return 0, s.lower // a scale-up piece: after its lower bound
		}
		return 0, nil
	}
	return len(s.frags), s.frags[len(s.frags)-1].lastKey
}

// checkFragment tells whether an attempt launched to write fragment
// launched may commit cut as the task's next fragment: the fragment is
// the next one (fencing: an attempt of an earlier key range, or a second
// report of a recorded fragment, is refused), and its last key is after
// the previous fragment's (a piece's lower bound) under cmp (a fragment
// covers at least one key group) and, for a bounded task, not after its
// upper key.
func (s *taskSplit) checkFragment(cut *mrpb.ReduceCut, launched int, cmp mr.Comparator) error {
	next, after := s.nextFragment()
	lowered := next > 0 || (s != nil && s.piece)
	switch {
	case cut == nil:
		return fmt.Errorf("no fragment reported")
	case int(cut.Fragment) != launched:
		return fmt.Errorf("fragment %d reported by an attempt launched to write fragment %d", cut.Fragment, launched)
	case launched != next:
		return fmt.Errorf("fragment %d reported, but the task's next fragment is %d", launched, next)
	case lowered && cmp(cut.LastKey, after) <= 0:
		return fmt.Errorf("fragment %d ends at a key not after the start of its key range", next)
	case s != nil && s.bounded && cmp(cut.LastKey, s.upper) > 0:
		return fmt.Errorf("fragment %d ends at a key after the task's upper key", next)
	}
	return nil
}

// fragmentCounters sums the counters of the attempts that committed the
// task's fragments (nil when it has none): spec §5.9.6, fragment
// counters add up to the task's.
func (s *taskSplit) fragmentCounters() mr.CounterSet {
	if s == nil || len(s.frags) == 0 {
		return nil
	}
	sum := mr.CounterSet{}
	for _, f := range s.frags {
		f.by.counters.AddTo(sum)
	}
	return sum
}

// jobCompare is the job's key comparator (grouping, as the reduce
// groups), bytes.Compare when it has none.
func jobCompare(j *job) (mr.Comparator, error) {
	def, err := mr.LookupJob(j.spec.Def)
	if err != nil {
		return nil, err
	}
	if def.Compare == nil {
		return bytes.Compare, nil
	}
	return def.Compare, nil
}

// reduceSplitRefusal tells why reduce attempt a cannot be split now, or
// nil: the job must declare split.safe and write an output format whose
// files concatenate (its fragments are joined into one part file), and
// the attempt must be reducing (a reduce still shuffling or merging has
// no key group to stop after).
func (jt *JobTracker) reduceSplitRefusal(a *attempt) error {
	j := a.task.job
	if !j.conf.Bool(mr.KeySplitSafe) {
		return fmt.Errorf("job %s does not declare %s=true (its reduce may keep state across key groups)", j.id, mr.KeySplitSafe)
	}
	def, err := mr.LookupJob(j.spec.Def)
	if err != nil {
		return err
	}
	if co, ok := def.Output.(mr.ConcatenableOutput); !ok || !co.Concatenable() {
		return fmt.Errorf("job %s writes an output format whose files cannot be concatenated: the fragments of a split reduce could not be joined into its part file", j.id)
	}
	if a.phase != "REDUCE" {
		return fmt.Errorf("attempt %s is in its %s phase: a reduce is split in its reduce phase only", a.id, a.phase)
	}
	return nil
}

// reduceLaunchLocked sets which key groups a new reduce attempt reduces:
// those after the task's last fragment (nothing for a task never split);
// a clone writes the fragment its source writes.
func (jt *JobTracker) reduceLaunchLocked(t *task, a *attempt, launch *mrpb.LaunchTask, cloneOf *attempt) {
	if cloneOf != nil {
		if cloneOf.split != nil {
			a.split = &attemptSplitInfo{fragment: cloneOf.split.fragment}
		}
		return
	}
	k, after := t.split.nextFragment()
	s := t.split
	ranged := s != nil && (s.piece || s.bounded)
	if k == 0 && !ranged {
		return
	}
	a.split = &attemptSplitInfo{fragment: k}
	r := &mrpb.ReduceResume{AfterKey: after, Fragment: int32(k)}
	if ranged {
		// A scale-up piece, or a task cut into pieces (reduce_scaleup.go).
		r.Bounded, r.UpperKey, r.Piece = s.bounded, s.upper, s.piece
		if s.piece {
			r.Partition = int32(s.part)
		}
	}
	launch.ReduceResume = r
}

// reduceSplitLocked ends a live reduce attempt that reports SPLIT: its
// committed output joins the task's fragments, its slot is free, and the
// task goes back to pending for the key groups left.
func (jt *JobTracker) reduceSplitLocked(a *attempt, cut *mrpb.ReduceCut, now time.Time) {
	t := a.task
	j := t.job
	sp := a.split
	if sp == nil || !sp.ordered {
		jt.attemptFailedLocked(a, "reduce attempt ended as split without a split order", now, true)
		return
	}
	cmp, err := jobCompare(j)
	if err == nil {
		err = t.split.checkFragment(cut, sp.fragment, cmp)
	}
	if err != nil {
		jt.attemptFailedLocked(a, "bad reduce split: "+err.Error(), now, true)
		return
	}
	if !jt.attemptToLocked(a, attemptSplit) {
		return
	}
	if t.split == nil {
		t.split = &taskSplit{chain: map[int]*attempt{}}
	}
	t.split.frags = append(t.split.frags, reduceFrag{lastKey: cut.LastKey, by: a})
	if t.commitGrant == a {
		t.commitGrant = nil // the next fragment's attempt commits next
	}
	if tr := jt.trackers[a.tracker]; tr != nil {
		delete(tr.attempts, a.id)
	}
	a.finish = now
	jt.observeAttemptLocked(a)
	jt.addMillisLocked(a)
	j.counters.Add(mr.SplitGroup, mr.ReduceSplits, 1)
	jt.prom.splits.WithLabelValues("reduce").Inc()
	j.counters.Add(mr.SplitGroup, mr.OutputFragments, 1)
	// For a restarted JobTracker (recovery.go): the fragment, and the job
	// counters with it.
	jt.appendEventLocked(t, &taskEvent{Kind: "fragment", Type: "r", Task: t.index, Attempt: a.id, Tracker: a.tracker,
		Start: a.start, Finish: now, Counters: a.counters, JobCounters: j.counters, Fragment: sp.fragment, LastKey: cut.LastKey})
	jt.log.Info("reduce split", "attempt", a.id, "fragment", cut.Fragment)
	if sp.fanout > 1 && len(cut.Bounds) > 0 && !j.done() {
		jt.reducePiecesLocked(t, cut, cmp, now)
	}
	jt.driver.Ended(now, attemptKey(a), a.finish.Sub(a.start))
	if j.done() || t.state == taskSucceeded || len(t.running()) > 0 {
		return
	}
	jt.taskToLocked(t, taskPending)
}

// recoverFragmentLocked keeps, in a restarted JobTracker, the fragment a
// "fragment" line of reduce task t's event log records, when it is the
// task's next one and its file is committed: the task's next attempt
// then reduces only the key groups after it. Its attempt is rebuilt from
// the line, as an attempt that ended SPLIT, for its counters (spec
// §5.9.6). A fragment out of order, or whose file is gone, is not kept,
// nor any after it: the reduce runs again from the last kept one, and
// rewrites the later fragments under the same names.
func (jt *JobTracker) recoverFragmentLocked(t *task, ev *taskEvent, committer *mr.Committer) {
	next, _ := t.split.nextFragment()
	if ev.Fragment != next || (t.split != nil && t.split.lost) || !committer.PieceFragmentCommitted(t.partition(), t.index, ev.Fragment) {
		if t.split == nil {
			t.split = &taskSplit{chain: map[int]*attempt{}}
		}
		if !t.split.lost {
			jt.log.Warn("recovered reduce fragment not kept: the reduce runs again after the fragments before it",
				"task", t.id(), "fragment", ev.Fragment, "kept", next)
		}
		t.split.lost = true
		return
	}
	a := &attempt{id: ev.Attempt, task: t, tracker: ev.Tracker, state: attemptSplit, start: ev.Start, finish: ev.Finish,
		counters: ev.Counters, final: -1, split: &attemptSplitInfo{fragment: ev.Fragment, ordered: true}}
	t.attempts = append(t.attempts, a)
	if t.split == nil {
		t.split = &taskSplit{chain: map[int]*attempt{}}
	}
	t.split.frags = append(t.split.frags, reduceFrag{lastKey: ev.LastKey, by: a})
	jt.log.Info("recovered reduce fragment kept", "task", t.id(), "fragment", ev.Fragment, "attempt", a.id)
}

// recoveredLastFragment tells whether a split reduce task t that succeeded
// before a restart with an attempt that wrote fragment n can be kept: its
// n earlier fragments were kept (recoverFragmentLocked) and fragment n is
// committed.
func recoveredLastFragment(t *task, n int, committer *mr.Committer) bool {
	return t.split != nil && !t.split.lost && len(t.split.frags) == n && committer.PieceFragmentCommitted(t.partition(), t.index, n)
}

// fragmentJoinsLocked lists, by partition, the fragments the job commit
// joins into each split reduce's part file: for each reduce task of the
// partition (its own, and the pieces scale-up splits added), in key order
// (by lower bound), its recorded fragments and its successful attempt's;
// or says why the job's fragments do not add up.
func (jt *JobTracker) fragmentJoinsLocked(j *job) (map[int][]mr.FragmentRun, error) {
	byPart := map[int][]*task{}
	for _, t := range j.reduces {
		if t.typ != partitions.Reduce || t.split == nil || (len(t.split.frags) == 0 && !t.split.piece && !t.split.bounded) {
			continue
		}
		n := len(t.split.frags)
		if s := t.successful; s == nil || s.split == nil || s.split.fragment != n {
			return nil, fmt.Errorf("reduce %s has %d fragments, but its successful attempt did not write fragment %d", t.id(), n, n)
		}
		byPart[t.partition()] = append(byPart[t.partition()], t)
	}
	if len(byPart) == 0 {
		return nil, nil
	}
	cmp, err := jobCompare(j)
	if err != nil {
		return nil, err
	}
	joins := map[int][]mr.FragmentRun{}
	for p, ts := range byPart {
		runs, err := partitionRuns(ts, cmp)
		if err != nil {
			return nil, fmt.Errorf("partition %d: %w", p, err)
		}
		joins[p] = runs
	}
	return joins, nil
}
