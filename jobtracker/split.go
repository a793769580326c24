package jobtracker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"gomr/mr"
	"gomr/mrpb"
	"gomr/partitions"
	"gomr/sched"
)

// Amoeba-style map splitting on the JobTracker (docs/split.md). A split
// order reaches a running map through its tracker's next heartbeat reply;
// the map stops after its current record, spills what it holds, announces
// that last spill with the split point (the offset of the next record, the
// records read, the next spill index) and ends as SPLIT, which frees its
// slot. The split point becomes part of the task's definition: every later
// attempt of the map starts at the first split point whose spills are not
// all published, and cuts a spill at every later one, so that spill k of
// any attempt is byte for byte spill k of any other and reducers mix them
// as they always do. The map is complete when a final spill is announced.

// StateSplit is the state of a map attempt that stopped early because it
// was split: not a failure, its spills stand, and its task's remainder
// runs as a new attempt.
const StateSplit = "SPLIT"

// mapCut is a recorded split point of a map task: the remainder starts
// with the record at byte offset off (of the split's file), its first spill
// is spill, and records input records of the split come before it.
type mapCut struct {
	off     int64
	spill   int
	records int64
}

// taskSplit is what a map task keeps of its splits.
type taskSplit struct {
	// cuts are the recorded split points, by offset (and so by spill).
	cuts []mapCut
	// chain holds, by first spill, the last attempt that started there and
	// ended split: the attempts whose counters count for the task beside
	// its successful attempt's.
	chain map[int]*attempt
	// prefix is the summed counters of the split attempts the successful
	// attempt continues, while the task is succeeded (lifecycle.go adds
	// them to the job's counters with the successful attempt's).
	prefix mr.CounterSet
	// frags are a reduce task's committed output fragments, in key order
	// (reduce_split.go).
	frags []reduceFrag
	// lost is set, in a restarted JobTracker's recovery, once a logged
	// fragment could not be kept: none after it is (recovery.go).
	lost bool
	// A reduce task's key range once a scale-up split cut a partition
	// (reduce_scaleup.go): a piece (a task the split added) reduces the
	// key groups of partition part after lower; a bounded task stops
	// after upper (the groups after it are the next piece's).
	piece   bool
	part    int
	lower   []byte
	bounded bool
	upper   []byte
}

// attemptSplitInfo is what a map attempt of a splittable job keeps of its
// place in the task's splits.
type attemptSplitInfo struct {
	// from is where the attempt started: the split's start (spill 0), or
	// a recorded cut.
	from mapCut
	// ordered is set once a split order was sent to its tracker.
	ordered bool
	// cut is the split point its last spill announced.
	cut *mapCut
	// fragment is the output fragment a reduce attempt writes (0 for a
	// task never split; reduce_split.go).
	fragment int
	// fanout is the pieces a scale-up split cuts the remainder into
	// (scaleup.go); 0 for a split that hands it to one attempt.
	fanout int
}

// insert records cut c. A cut already recorded at the same offset must
// agree with it.
func (s *taskSplit) insert(c mapCut) error {
	i, found := slices.BinarySearchFunc(s.cuts, c.off, func(x mapCut, off int64) int { return cmp.Compare(x.off, off) })
	if found {
		if s.cuts[i] != c {
			return fmt.Errorf("split point at offset %d: spill %d after %d records, but spill %d after %d records was recorded before",
				c.off, c.spill, c.records, s.cuts[i].spill, s.cuts[i].records)
		}
		return nil
	}
	if (i > 0 && (s.cuts[i-1].spill >= c.spill || s.cuts[i-1].records > c.records)) ||
		(i < len(s.cuts) && (s.cuts[i].spill <= c.spill || s.cuts[i].records < c.records)) {
		return fmt.Errorf("split point at offset %d (spill %d, %d records) is out of order with the recorded ones", c.off, c.spill, c.records)
	}
	s.cuts = slices.Insert(s.cuts, i, c)
	return nil
}

// loggedCut is a mapCut in the recovery event log (recovery.go).
type loggedCut struct {
	Offset  int64 `json:"offset"`
	Spill   int   `json:"spill"`
	Records int64 `json:"records"`
}

// logged is the task's split points for the recovery event log.
func (s *taskSplit) logged() []loggedCut {
	if s == nil {
		return nil
	}
	out := make([]loggedCut, len(s.cuts))
	for i, c := range s.cuts {
		out[i] = loggedCut{Offset: c.off, Spill: c.spill, Records: c.records}
	}
	return out
}

// splitFromLog rebuilds a task's split points from the recovery event
// log (nil when it has none). A restarted JobTracker keeps a split map's
// points, so that its attempts cut their spills as before; the counters
// of its split attempts are in the job's logged counters.
func splitFromLog(cs []loggedCut) *taskSplit {
	if len(cs) == 0 {
		return nil
	}
	s := &taskSplit{chain: map[int]*attempt{}}
	for _, c := range cs {
		if s.insert(mapCut{off: c.Offset, spill: c.Spill, records: c.Records}) != nil {
			return nil // a corrupt log: the map runs again as never split
		}
	}
	return s
}

// resumePoint is where a new attempt of a map task starts: the first
// split point (the split's start included) after which a spill is not
// published, or the last one; and the cuts after it. published tells
// whether spill k of the task is published.
func (s *taskSplit) resumePoint(published func(k int) bool) (mapCut, []mapCut) {
	if s == nil || len(s.cuts) == 0 {
		return mapCut{}, nil
	}
	points := append([]mapCut{{}}, s.cuts...)
	for i := 0; i+1 < len(points); i++ {
		for k := points[i].spill; k < points[i+1].spill; k++ {
			if !published(k) {
				return points[i], points[i+1:]
			}
		}
	}
	return points[len(points)-1], nil
}

// prefixCounters sums the counters of the chain of split attempts from
// the split's start to the point from (nil when from is the start, or the
// chain does not reach it).
func (s *taskSplit) prefixCounters(from mapCut) mr.CounterSet {
	if s == nil || from.spill == 0 {
		return nil
	}
	sum := mr.CounterSet{}
	k := 0
	for k < from.spill {
		a := s.chain[k]
		if a == nil || a.split == nil || a.split.cut == nil {
			return nil
		}
		a.counters.AddTo(sum)
		k = a.split.cut.spill
	}
	if k != from.spill {
		return nil
	}
	return sum
}

// splitPrefixOf is the counters of the split attempts that running
// attempt a of task t continues (nil if none): a running remainder's job
// counters include them, as a successful one's do.
func (t *task) splitPrefixOf(a *attempt) mr.CounterSet {
	if t.split == nil || a.split == nil {
		return nil
	}
	if t.typ == partitions.Reduce {
		if a.split.fragment == 0 {
			return nil
		}
		return t.split.fragmentCounters()
	}
	return t.split.prefixCounters(a.split.from)
}

// jobSplitRefusal tells why the job's maps cannot be split, or nil.
func (jt *JobTracker) jobSplitRefusal(j *job, m *task) error {
	if !j.conf.Bool(mr.KeySplitSafe) {
		return fmt.Errorf("job %s does not declare %s=true (its map may keep state across records)", j.id, mr.KeySplitSafe)
	}
	if len(j.reduces) == 0 {
		return fmt.Errorf("job %s is map-only: its maps write their output files directly, and only maps with spills can be split", j.id)
	}
	def, err := mr.LookupJob(j.spec.Def)
	if err != nil {
		return err
	}
	in, ok := def.Input.(mr.ResumableInput)
	if !ok || !in.Resumable(j.splits[m.index]) {
		return fmt.Errorf("the input of map %s cannot be resumed at a record (its input format is not an mr.ResumableInput, or says this split cannot seek)", m.id())
	}
	return nil
}

// splitRefusalLocked tells why attempt a cannot be split now, or nil.
func (jt *JobTracker) splitRefusalLocked(a *attempt) error {
	t := a.task
	j := t.job
	switch {
	case j.done():
		return fmt.Errorf("job %s has ended", j.id)
	case a.state != attemptRunning:
		return fmt.Errorf("attempt %s is %s, not running", a.id, a.state)
	case a.speculative || a.cloned:
		return fmt.Errorf("attempt %s is a speculative attempt or a clone: only a task's only attempt is split", a.id)
	case len(t.running()) > 1 || t.specPending != nil:
		return fmt.Errorf("task %s has another attempt, or one on the way: only a task's only attempt is split", t.id())
	case t.typ == partitions.Map && a.final >= 0:
		return fmt.Errorf("attempt %s has announced its final spill", a.id)
	case t.typ == partitions.Map && publishedAhead(a) != nil:
		o, k := publishedAhead(a), a.nextSpill()
		return fmt.Errorf("spill %d of its map is published, by %s, and attempt %s has not announced it: split now, its last spill would end before that spill's end", k, o.id, a.id)
	case a.split != nil && a.split.ordered:
		return fmt.Errorf("attempt %s was already ordered split", a.id)
	case jt.trackers[a.tracker] == nil:
		return fmt.Errorf("the tracker of attempt %s is lost", a.id)
	case t.typ == partitions.Reduce:
		return jt.reduceSplitRefusal(a)
	}
	return jt.jobSplitRefusal(j, t)
}

// nextSpill is the index of the next spill map attempt a announces.
func (a *attempt) nextSpill() int {
	next := 0
	if a.split != nil {
		next = a.split.from.spill
	}
	for k := range a.spills {
		next = max(next, k+1)
	}
	return next
}

// publishedAhead is the other attempt of map attempt a's task that
// published the spill a announces next, or nil. A split attempt's last
// spill ends at the split point, so a split is only right where no
// attempt cut that spill further.
func publishedAhead(a *attempt) *attempt {
	if o := a.task.job.winners[spillKey{a.task.index, a.nextSpill()}]; o != nil && o != a {
		return o
	}
	return nil
}

// splittableLocked tells whether attempt a may be split now (the reclaim
// planner's candidate description uses it).
func (jt *JobTracker) splittableLocked(a *attempt) bool {
	return jt.splitRefusalLocked(a) == nil
}

// orderSplitLocked orders attempt a split in its tracker's next heartbeat
// reply, or says why it may not be. A fanout above 1 makes it a scale-up
// split: a map's remainder, or a reduce's rest of its key range, is cut
// into up to fanout pieces (scaleup.go, reduce_scaleup.go); a reduce's
// order carries the fanout, for the child finds the pieces' bounds.
func (jt *JobTracker) orderSplitLocked(a *attempt, fanout int) error {
	if err := jt.splitRefusalLocked(a); err != nil {
		return fmt.Errorf("cannot split %s: %w", a.id, err)
	}
	if a.split == nil {
		a.split = &attemptSplitInfo{}
	}
	a.split.ordered = true
	a.split.fanout = fanout
	tr := jt.trackers[a.tracker]
	act := &mrpb.TaskAction{Action: &mrpb.TaskAction_SplitAttempt{SplitAttempt: a.id}}
	if a.task.typ == partitions.Reduce && fanout > 1 {
		act.SplitFanout = int32(fanout)
	}
	tr.actions = append(tr.actions, act)
	jt.log.Info("split ordered", "attempt", a.id, "tracker", a.tracker)
	return nil
}

// trackerHost is the policy driver's splitter (sched.Splitter).
var _ interface{ Split(sched.Attempt) error } = (*trackerHost)(nil)

// Split orders a running attempt split at its next record or key group
// (the policy driver's sched.Splitter): the order goes out in the attempt's tracker's
// next heartbeat reply; the slot is freed, and Driver.Ended reported, when
// the tracker reports the attempt SPLIT.
func (h *trackerHost) Split(k sched.Attempt) error {
	a := h.jt.attemptOfLocked(k)
	if a == nil {
		return fmt.Errorf("no attempt %s", k)
	}
	return h.jt.orderSplitLocked(a, 0)
}

// mapLaunchLocked sets where a new map attempt starts: at the task's
// resume point with the cuts after it (nothing for a task never split), or
// for a clone where its source started.
func (jt *JobTracker) mapLaunchLocked(t *task, a *attempt, launch *mrpb.LaunchTask, cloneOf *attempt) {
	if t.typ != partitions.Map {
		jt.reduceLaunchLocked(t, a, launch, cloneOf)
		return
	}
	// Every attempt cuts its spills with the sort buffer of the task's
	// first announced spill (a clone runs with its original's).
	launch.SortMb = t.sortMB
	if cloneOf != nil {
		if cloneOf.split != nil {
			a.split = &attemptSplitInfo{from: cloneOf.split.from}
		}
		return
	}
	j := t.job
	from, cuts := t.split.resumePoint(func(k int) bool {
		w := j.winners[spillKey{t.index, k}]
		return w != nil && !w.obsolete
	})
	if from.spill == 0 && len(cuts) == 0 {
		return
	}
	a.split = &attemptSplitInfo{from: from}
	// From the split's start (first spill 0) the reader finds the first
	// record itself; from a cut it starts exactly there.
	r := &mrpb.MapResume{Offset: from.off, FirstSpill: int32(from.spill), RecordsBefore: from.records}
	if from.spill == 0 {
		r.Offset = j.splits[t.index].Start
	}
	for _, c := range cuts {
		r.Cuts = append(r.Cuts, &mrpb.MapCut{Offset: c.off, Spill: int32(c.spill), Records: c.records})
	}
	launch.Resume = r
}

// splitAnnouncedLocked records the split point that map attempt a
// announced with its last spill k. It is the task's at once: spill k is
// published with it as its end, so every later attempt must cut there,
// whether a ends as SPLIT or is killed first. a counts, for the task's
// counters, as the attempt that covered its part.
func (jt *JobTracker) splitAnnouncedLocked(a *attempt, k int, at *mrpb.MapCut) {
	c := mapCut{off: at.Offset, spill: int(at.Spill), records: at.Records}
	sp := splitInfo(a)
	s := a.task.job.splits[a.task.index]
	switch {
	case !sp.ordered:
		jt.failAttemptLocked(a, fmt.Sprintf("spill %d announces a split point, but the attempt was not ordered split", k))
	case c.spill != k+1 || c.off <= max(sp.from.off, s.Start) || c.off > s.Start+s.Length || c.records <= sp.from.records:
		jt.failAttemptLocked(a, fmt.Sprintf("spill %d announces a bad split point (offset %d, spill %d, %d records) for an attempt that started at offset %d",
			k, c.off, c.spill, c.records, sp.from.off))
	default:
		t := a.task
		if t.split == nil {
			t.split = &taskSplit{chain: map[int]*attempt{}}
		}
		if err := t.split.insert(c); err != nil {
			jt.failAttemptLocked(a, "non-deterministic map split: "+err.Error())
			return
		}
		sp.cut = &c
		t.split.chain[sp.from.spill] = a
	}
}

// splitInfo is a's split state, made if it has none.
func splitInfo(a *attempt) *attemptSplitInfo {
	if a.split == nil {
		a.split = &attemptSplitInfo{}
	}
	return a.split
}

// attemptSplitLocked ends a live attempt that reports SPLIT: a map's split
// point joins the task's, its slot is free, and the task goes back to
// pending for its remainder (unless another attempt runs it); a reduce's
// committed fragment (cut) joins the task's (reduceSplitLocked).
func (jt *JobTracker) attemptSplitLocked(a *attempt, cut *mrpb.ReduceCut, now time.Time) {
	t := a.task
	j := t.job
	if t.typ == partitions.Reduce {
		jt.reduceSplitLocked(a, cut, now)
		return
	}
	sp := a.split
	if t.typ != partitions.Map || sp == nil || !sp.ordered || sp.cut == nil {
		jt.attemptFailedLocked(a, "attempt ended as split without a split order and an announced split point", now, true)
		return
	}
	if !jt.attemptToLocked(a, attemptSplit) {
		return
	}
	if tr := jt.trackers[a.tracker]; tr != nil {
		delete(tr.attempts, a.id)
	}
	a.finish = now
	jt.observeAttemptLocked(a)
	jt.addMillisLocked(a)
	s := j.splits[t.index]
	j.counters.Add(mr.SplitGroup, mr.MapSplits, 1)
	jt.prom.splits.WithLabelValues("map").Inc()
	j.counters.Add(mr.SplitGroup, mr.SplitFragments, int64(sp.cut.spill-sp.from.spill))
	j.counters.Add(mr.SplitGroup, mr.RemainderBytes, s.Start+s.Length-sp.cut.off)
	if sp.from.spill > 0 {
		j.counters.Add(mr.SplitGroup, mr.RemainderRecords, a.counters.Get(mr.TaskCounterGroup, mr.MapInputRecords))
	}
	if sp.fanout > 1 && !j.done() {
		jt.scaleUpPiecesLocked(t, *sp.cut, sp.fanout, now)
	}
	jt.log.Info("map split", "attempt", a.id, "next_offset", sp.cut.off, "next_spill", sp.cut.spill, "records", sp.cut.records)
	jt.driver.Ended(now, attemptKey(a), a.finish.Sub(a.start))
	if j.done() || t.state == taskSucceeded || len(t.running()) > 0 {
		return
	}
	jt.taskToLocked(t, taskPending)
}

// splitSucceededLocked is told that map attempt a is about to make its
// task succeed: the counters of the split attempts it continues count for
// the job with its own, and if it resumed a split map, its records count
// as read by a remainder.
func (jt *JobTracker) splitSucceededLocked(a *attempt) {
	t := a.task
	if t.split == nil {
		return
	}
	t.split.prefix = nil
	if t.typ == partitions.Reduce {
		if a.split != nil && a.split.fragment > 0 {
			t.split.prefix = t.split.fragmentCounters()
		}
		return
	}
	if a.split == nil || a.split.from.spill == 0 {
		return
	}
	t.split.prefix = t.split.prefixCounters(a.split.from)
	t.job.counters.Add(mr.SplitGroup, mr.RemainderRecords, a.counters.Get(mr.TaskCounterGroup, mr.MapInputRecords))
}

// splitOutputLostLocked is told that map task m lost published spills
// (an attempt's output was withdrawn). When the lost spills lie before
// where its running or completed attempts started (the output of a split
// attempt), the map must run again from the first split point whose
// output is missing: a completed map is re-run, and running attempts that
// started after that point are killed, so that the task's next attempt
// starts there (mapLaunchLocked).
func (jt *JobTracker) splitOutputLostLocked(m *task, now time.Time) {
	if m.split == nil || len(m.split.cuts) == 0 {
		return
	}
	j := m.job
	from, later := m.split.resumePoint(func(k int) bool {
		w := j.winners[spillKey{m.index, k}]
		return w != nil && !w.obsolete
	})
	if len(later) == 0 {
		return // only the last part's output is missing: the usual re-run
	}
	jt.log.Info("split map lost the output of an earlier part: it runs again from there", "task", m.id(), "from_offset", from.off, "from_spill", from.spill)
	startedAfter := func(a *attempt) bool { return a.split != nil && a.split.from.spill > from.spill }
	if m.state == taskSucceeded && startedAfter(m.successful) {
		jt.rerunMapLocked(m, now)
		return
	}
	for _, a := range m.running() {
		if startedAfter(a) {
			jt.killAttemptLocked(a, fmt.Sprintf("the output of map %s before offset %d was lost: the map runs again from there", m.id(), a.split.from.off))
		}
	}
}

// SplitTaskAttempt orders a running attempt split at its next record (a
// map) or key group (a reduce) at a user's request (`mr job -split-task`); it refuses, saying why, an
// attempt that may not be split.
func (jt *JobTracker) SplitTaskAttempt(ctx context.Context, req *mrpb.SplitTaskAttemptRequest) (*mrpb.SplitTaskAttemptResponse, error) {
	jt.lock(holderClient)
	defer jt.unlock()
	_, a := jt.findAttempt(req.AttemptId)
	if a == nil {
		return nil, status.Errorf(codes.NotFound, "no task attempt %s (an attempt id is attempt_<jobtracker>_<job>_<m|r>_<task>_<n>)", req.AttemptId)
	}
	if err := jt.orderSplitLocked(a, 0); err != nil {
		return nil, status.Error(codes.FailedPrecondition, err.Error())
	}
	return &mrpb.SplitTaskAttemptResponse{}, nil
}

// SplitTask orders a running attempt split at its next record or key group
// (docs/split.md).
func (c *Client) SplitTask(ctx context.Context, attemptID string) error {
	if _, err := c.jt.SplitTaskAttempt(ctx, &mrpb.SplitTaskAttemptRequest{AttemptId: attemptID}); err != nil {
		if s, ok := status.FromError(err); ok {
			return errors.New(s.Message())
		}
		return err
	}
	return nil
}
