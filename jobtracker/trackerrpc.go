package jobtracker

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"gomr/mr"
	"gomr/mrpb"
	"gomr/partitions"
	"gomr/speculator"
)

// The tracker and task RPCs besides the heartbeat (heartbeat.go): attempt
// status reports, spill announcements, the map events reducers read, fetch
// failures and output commits.

// attemptRef is an attempt id taken apart: its job, task type and task
// index (parseAttemptRef); ok is false for an id of another form.
type attemptRef struct {
	id   string
	job  string
	typ  partitions.TaskType
	task int
	ok   bool
}

// parseAttemptRef takes an attempt id apart:
// attempt_<ident>_<n>_<m|r>_<task>_<k>. It needs no lock: a heartbeat's
// ids are parsed before the JobTracker's lock is taken.
func parseAttemptRef(id string) attemptRef {
	r := attemptRef{id: id}
	parts := strings.Split(id, "_")
	if len(parts) != 6 || parts[0] != "attempt" {
		return r
	}
	r.job = "job_" + parts[1] + "_" + parts[2]
	idx, err := strconv.Atoi(parts[4])
	if err != nil || idx < 0 {
		r.task = -1
		return r
	}
	r.task, r.ok = idx, true
	if parts[3] == "r" {
		r.typ = partitions.Reduce
	}
	return r
}

// findAttempt finds a live job's attempt by its id.
func (jt *JobTracker) findAttempt(id string) (*job, *attempt) {
	return jt.attemptByRefLocked(parseAttemptRef(id))
}

// attemptByRefLocked finds a live job's attempt by its parsed id: the job
// (nil if there is none) and the attempt (nil if the job has none of that
// id).
func (jt *JobTracker) attemptByRefLocked(r attemptRef) (*job, *attempt) {
	if r.job == "" {
		return nil, nil
	}
	j := jt.jobs[r.job]
	if j == nil || !r.ok {
		return j, nil
	}
	ts := j.tasks(r.typ)
	if r.task >= len(ts) {
		return j, nil
	}
	for _, a := range ts[r.task].attempts {
		if a.id == r.id {
			return j, a
		}
	}
	return j, nil
}

// decodedStatus is what a heartbeat's attempt status says that can be
// worked out without the JobTracker's lock: its attempt id taken apart and
// its counters (nil for a RUNNING status that carries none: the tracker
// sends a running attempt's counters only every
// mapreduce.tasktracker.counters.update.interval, and the attempt keeps
// the last ones it sent).
type decodedStatus struct {
	ref      attemptRef
	counters mr.PackedCounters
}

// decodedSpill is a spill announcement's segments, copied out of its
// messages before the lock (segmentsOfAnnouncement), or why they cannot be;
// with their digest, which a job that announces spills only keeps instead.
type decodedSpill struct {
	segments packedSpill
	digested packedSpill
	err      error
}

// decodeSpills decodes a heartbeat's spill announcements, before the lock.
// Each spill's digest is computed too, whatever its job keeps: the job is
// known under the lock only (about 10 µs for 1,000 partitions).
func decodeSpills(req *mrpb.HeartbeatRequest) []decodedSpill {
	out := make([]decodedSpill, len(req.Spills))
	for i, sp := range req.Spills {
		out[i].segments, out[i].err = segmentsOfAnnouncement(sp)
		if out[i].err == nil {
			out[i].digested = out[i].segments.digested()
		}
	}
	return out
}

// decodeStatuses decodes a heartbeat's attempt statuses, before the lock.
func decodeStatuses(req *mrpb.HeartbeatRequest) []decodedStatus {
	out := make([]decodedStatus, len(req.Attempts))
	for i, st := range req.Attempts {
		out[i].ref = parseAttemptRef(st.AttemptId)
		if len(st.Counters) > 0 || st.State != StateRunning {
			out[i].counters = countersOfStatus(st.Counters)
		}
	}
	return out
}

func (jt *JobTracker) attemptStatusLocked(t *trackerState, st *mrpb.AttemptStatus, d decodedStatus, now time.Time) {
	j, a := jt.attemptByRefLocked(d.ref)
	if a == nil || a.tracker != t.name {
		// An attempt we do not know (purged job, or from before a reinit).
		t.actions = append(t.actions, &mrpb.TaskAction{Action: &mrpb.TaskAction_KillAttempt{KillAttempt: st.AttemptId}})
		return
	}
	if !a.live() {
		// Already final here (killed by us, or lost). A tracker that still
		// runs it has not got the kill order: it is sent again.
		if (st.State == StateRunning || st.State == StateCommitPending) && !killOrderPendingLocked(t, a.id) {
			t.actions = append(t.actions, &mrpb.TaskAction{Action: &mrpb.TaskAction_KillAttempt{KillAttempt: a.id}})
		}
		return
	}
	// A report counts for the runtime estimate once the attempt has made
	// progress: before that it has nothing to extrapolate from (an
	// attempt still at 0 is judged by the stagnation rule instead).
	if st.Progress > 0 {
		if st.Progress != a.progress || a.progressChanged.IsZero() {
			a.progressChanged = now
		}
		a.reportAt = now
		if j.speculator != nil {
			prevP, prevAt := a.rateP, a.rateAt
			if prevAt.IsZero() {
				prevP, prevAt = a.startProgress, a.start
			}
			a.rate = speculator.SmoothRate(a.rate, prevP, prevAt, float64(st.Progress), now, j.speculator.Params().SmoothLambda)
			a.rateP, a.rateAt = float64(st.Progress), now
		}
	}
	a.rssBytes, a.fileSetBytes, a.cloneable = st.RssBytes, st.FileSetBytes, st.Cloneable
	a.progress = st.Progress
	a.phase = st.Phase
	if d.counters.Reported() {
		a.counters = d.counters
		a.countersVer++
	}
	j.refreshRunning(a.task, false)
	if st.ShuffleFinishMs > 0 {
		a.shuffleFinish = time.UnixMilli(st.ShuffleFinishMs)
	}
	if st.SortFinishMs > 0 {
		a.sortFinish = time.UnixMilli(st.SortFinishMs)
	}
	if st.Clone != nil {
		if jt.cloneStatusLocked(a, st.Clone, now) {
			return
		}
	}
	if st.Restore != nil && jt.restoreStatusLocked(a, st.Restore, now) {
		return
	}
	switch st.State {
	case StateCheckpointed:
		jt.attemptCheckpointedLocked(a, st.Checkpoint, now)
	case StateRunning:
		if st.GetCheckpoint().GetSlotReleased() {
			jt.checkpointSlotReleasedLocked(a, now)
		}
	case StateCommitPending:
		if a.state == attemptRunning {
			jt.attemptToLocked(a, attemptCommitPending)
		}
	case StateSucceeded:
		jt.attemptSucceededLocked(a, now)
	case StateFailed:
		jt.attemptFailedLocked(a, st.Diagnostic, now, true)
	case StateKilled:
		jt.checkpointFailedLocked(a, st.Checkpoint)
		jt.attemptFailedLocked(a, st.Diagnostic, now, st.NotOwnFault && !jt.rerunKillExcusedLocked(a))
	case StateSplit:
		jt.attemptSplitLocked(a, st.ReduceCut, now)
	}
}

// spillAnnouncedLocked records spill k of a map attempt. The first
// announcement of each (map, spill) is the one reducers are told of; a later
// one from another attempt must agree with it (same records, lengths and
// checksums in every partition), or that attempt is failed: mixing spills of
// attempts is only correct when they are identical.
func (jt *JobTracker) spillAnnouncedLocked(t *trackerState, sp *mrpb.SpillAnnouncement, d decodedSpill) {
	j, a := jt.findAttempt(sp.AttemptId)
	if a == nil || a.task.typ != partitions.Map || j.done() || !a.live() {
		return
	}
	k := int(sp.Spill)
	if d.err != nil {
		jt.failAttemptLocked(a, fmt.Sprintf("spill %d: %v", k, d.err))
		return
	}
	segs := d.segments
	if segs.partitions() != j.partitions() {
		jt.failAttemptLocked(a, fmt.Sprintf("spill %d has %d partitions, job has %d reduces", k, segs.partitions(), j.partitions()))
		return
	}
	if !jt.pinSortBufferLocked(a, k, sp.SortMb) {
		return
	}
	if j.spillsOnly {
		segs = d.digested
	}
	if a.spills == nil {
		a.spills = map[int]packedSpill{}
	}
	a.spills[k] = segs
	a.shuffleAddr = t.shuffleAddr
	if sp.Final {
		a.final = k
	}
	if sp.SplitAt != nil {
		jt.splitAnnouncedLocked(a, k, sp.SplitAt)
		if !a.live() {
			return
		}
	}
	key := spillKey{a.task.index, k}
	w, published := j.winners[key]
	if published && w != a && !sameSegments(w.spills[k], segs) {
		jt.failAttemptLocked(a, fmt.Sprintf("non-deterministic map output: spill %d differs from the one %s announced", k, w.id))
		return
	}
	if why := finalMarkContradiction(j, a, k, sp.Final); why != "" {
		jt.failAttemptLocked(a, "non-deterministic map output: "+why)
		return
	}
	if published {
		return
	}
	jt.noteRerunLocked(a, k)
	jt.publishSpillLocked(j, a, k)
}

// finalMarkContradiction tells how spill k of map attempt a, announced
// final or not, contradicts the spills of its map that other attempts
// published (j.winners), or "" if it does not: a published spill after a
// final k, a published final spill before k, or a published spill k whose
// mark is known to differ. Every attempt of a deterministic map cuts the
// same spills with the same marks (sameSegments compares the rest); an
// attempt that does not would leave reducers two ends of one map. A split
// map's parts are cut by several attempts, all of one numbering, and a
// re-run of a lost part meets the published spills of the part not lost.
// It costs O(the task's attempts) an announcement, and O(their spills) a
// final one; nothing for a task of one attempt.
func finalMarkContradiction(j *job, a *attempt, k int, final bool) string {
	t := a.task
	if len(t.attempts) < 2 {
		return ""
	}
	if w := j.winners[spillKey{t.index, k}]; w != nil && w != a {
		switch {
		case final && w.spillsAfter(k):
			return fmt.Sprintf("spill %d is announced final, but %s published it as not final", k, w.id)
		case !final && w.final == k:
			return fmt.Sprintf("spill %d is announced not final, but %s published it as final", k, w.id)
		}
	}
	for _, o := range t.attempts {
		if o == a {
			continue
		}
		if o.final >= 0 && o.final < k && j.winners[spillKey{t.index, o.final}] == o {
			return fmt.Sprintf("spill %d is announced, but the final spill of %s, %d, is published", k, o.id, o.final)
		}
		if !final {
			continue
		}
		after := -1
		for ok := range o.spills {
			if ok > k && (after < 0 || ok < after) && j.winners[spillKey{t.index, ok}] == o {
				after = ok
			}
		}
		if after >= 0 {
			return fmt.Sprintf("spill %d is announced final, but spill %d of %s is published", k, after, o.id)
		}
	}
	return ""
}

// spillsAfter tells whether map attempt a is known to have spills after
// spill k: its final spill is later, it announced a later one, or it was
// split after k.
func (a *attempt) spillsAfter(k int) bool {
	if a.final > k || (a.split != nil && a.split.cut != nil && a.split.cut.spill > k) {
		return true
	}
	for ok := range a.spills {
		if ok > k {
			return true
		}
	}
	return false
}

// noteRerunLocked compares spill k of map attempt a, about to be
// published after spills of another attempt of its map were withdrawn,
// with what reducers were first told of: the same segments for the same
// spill, and the same final spill index. The re-run's spills are published
// whatever the outcome (the withdrawn ones cannot be fetched any more);
// a difference is logged and counted once per attempt in the job's
// NONDETERMINISTIC_MAP_RERUNS, so that the user learns their map is not
// deterministic. Each reduce checks the spills it fetched itself and
// restarts when they are contradicted (shuffle.ErrNondeterministic).
func (jt *JobTracker) noteRerunLocked(a *attempt, k int) {
	t := a.task
	if len(t.withdrawn) == 0 || a.rerunDiffers {
		return
	}
	why := ""
	if w := t.withdrawn[k]; w != nil && w != a && !sameSegments(w.spills[k], a.spills[k]) {
		why = fmt.Sprintf("spill %d differs from the one %s announced", k, w.id)
	} else {
		ks := make([]int, 0, len(t.withdrawn))
		for wk := range t.withdrawn {
			ks = append(ks, wk)
		}
		sort.Ints(ks)
		for _, wk := range ks {
			w := t.withdrawn[wk]
			if w == a {
				continue
			}
			switch final := a.final == k; {
			case final && wk > k:
				why = fmt.Sprintf("its final spill is %d, but %s announced spill %d", k, w.id, wk)
			case w.final >= 0 && (k > w.final || (k == w.final) != final):
				why = fmt.Sprintf("it announced spill %d (final=%t), but the final spill of %s was %d", k, final, w.id, w.final)
			}
			if why != "" {
				break
			}
		}
	}
	if why == "" {
		return
	}
	a.rerunDiffers = true
	j := t.job
	j.counters.Add(mr.JobCounterGroup, mr.NondeterministicMapReruns, 1)
	jt.log.Warn("non-deterministic map: a re-run's output differs from a withdrawn attempt's, which reducers may have fetched; they restart",
		"job", j.id, "map", t.index, "attempt", a.id, "difference", why)
}

// rerunKillExcusedLocked says whether attempt a, which stopped because a
// map's re-run contradicts spills it fetched (AttemptStatus.not_own_fault),
// is excused: not counted against its task's attempts. A reduce is
// restarted at most once for each map re-run the JobTracker saw differ
// from a withdrawn attempt (NONDETERMINISTIC_MAP_RERUNS), since its new
// attempt fetches only the spills not withdrawn; more such kills than
// that count as failures, so that a reduce that keeps finding
// contradictions the JobTracker did not see (a JobTracker restart forgot
// the withdrawn spills, or a fault) ends after
// mapreduce.reduce.maxattempts rather than running for ever.
func (jt *JobTracker) rerunKillExcusedLocked(a *attempt) bool {
	t := a.task
	j := t.job
	t.rerunKills++
	seen := j.counters.Get(mr.JobCounterGroup, mr.NondeterministicMapReruns)
	if int64(t.rerunKills) <= seen {
		return true
	}
	jt.log.Warn("reduce stopped by a map re-run more often than the JobTracker saw map re-runs differ; counted as a failure",
		"attempt", a.id, "kills", t.rerunKills, "nondeterministic_map_reruns", seen)
	return false
}

// pinSortBufferLocked pins the sort buffer of map attempt a's task to
// sortMB, the one a's spill k was cut with, if the task has none pinned
// yet (its first announced spill), and fails a if it cut its spill with
// another one: every attempt of a map must cut the same spills, and the
// budget of a tracker may give a map slot another sort buffer than the
// first attempt's tracker did. An announcement without a sort buffer (0:
// a child that does not report it) neither pins nor is checked.
func (jt *JobTracker) pinSortBufferLocked(a *attempt, k int, sortMB int32) bool {
	tk := a.task
	switch {
	case sortMB <= 0:
		return true
	case tk.sortMB == 0:
		tk.sortMB = sortMB
		return true
	case tk.sortMB == sortMB:
		return true
	}
	jt.failAttemptLocked(a, fmt.Sprintf("non-deterministic map output: spill %d was cut with a sort buffer of %d MiB, the task's spills with %d MiB (mapreduce.task.io.sort.mb)", k, sortMB, tk.sortMB))
	return false
}

func (jt *JobTracker) publishSpillLocked(j *job, a *attempt, k int) {
	j.winners[spillKey{a.task.index, k}] = a
	segs := a.spills[k]
	if j.spillsOnly {
		segs = packedSpill{}
	}
	j.appendEvent(&mrpb.MapEvent{
		Kind:           "SPILL_READY",
		MapTask:        int32(a.task.index),
		Spill:          int32(k),
		Final:          a.final == k,
		AttemptId:      a.id,
		ShuffleAddress: a.shuffleAddr,
	}, segs)
}

// spillsOnly tells whether a job of maps maps and reduces reduces
// announces its spills without their segments: when maps × reduces, the
// segments of one spill of every map, is over
// mapreduce.jobtracker.map-events.max-segments (-1: never). Its reduces
// then read their segments from the index of the tracker that serves each
// spill (shuffle/resolve.go), as Hadoop's reduces do, and the event log
// holds nothing per reduce.
func (jt *JobTracker) spillsOnly(maps, reduces int) bool {
	limit := jt.cfg.Int64("mapreduce.jobtracker.map-events.max-segments")
	return limit >= 0 && int64(maps)*int64(reduces) > limit
}

// obsoleteMapOutputLocked withdraws a map attempt's spills: reducers are
// told, and any other attempt that announced the same spills takes over.
func (jt *JobTracker) obsoleteMapOutputLocked(a *attempt) {
	if a.obsolete || len(a.spills) == 0 {
		a.obsolete = true
		return
	}
	a.obsolete = true
	j := a.task.job
	j.appendEvent(&mrpb.MapEvent{Kind: "MAP_OBSOLETE", MapTask: int32(a.task.index), AttemptId: a.id}, packedSpill{})
	ks := make([]int, 0, len(a.spills))
	for k := range a.spills {
		ks = append(ks, k)
	}
	sort.Ints(ks)
	var logged []int
	for _, k := range ks {
		key := spillKey{a.task.index, k}
		if j.winners[key] != a {
			continue
		}
		delete(j.winners, key)
		if a.task.withdraw(a, k) {
			logged = append(logged, k)
		}
		for _, other := range a.task.attempts {
			if other != a && !other.obsolete && other.hasSpill(k) && jt.trackers[other.tracker] != nil {
				jt.publishSpillLocked(j, other, k)
				break
			}
		}
	}
	if len(logged) > 0 {
		jt.logWithdrawnLocked(a, logged)
	}
}

// withdraw records that spill k of map attempt a was withdrawn, unless
// a withdrawal of that spill was recorded before (the first is what a
// re-run is compared with: what reducers were first told of); it reports
// whether it recorded it.
func (t *task) withdraw(a *attempt, k int) bool {
	if t.withdrawn[k] != nil {
		return false
	}
	if t.withdrawn == nil {
		t.withdrawn = map[int]*attempt{}
	}
	t.withdrawn[k] = a
	return true
}

// attemptSucceededLocked ends a live attempt that reports success: its
// task succeeds by it, unless another attempt did first (then it ends as
// KILLED for the policy: it lost the race) or it is a map that never
// announced its final spill (it fails).
func (jt *JobTracker) attemptSucceededLocked(a *attempt, now time.Time) {
	t := a.task
	j := t.job
	if t.state != taskSucceeded && t.typ == partitions.Map && len(j.reduces) > 0 && a.final < 0 {
		jt.attemptFailedLocked(a, "map attempt finished without announcing its final spill", now, true)
		return
	}
	if !jt.attemptToLocked(a, attemptSucceeded) {
		return
	}
	a.finish, a.progress = now, 1
	jt.observeAttemptLocked(a)
	if tr := jt.trackers[a.tracker]; tr != nil {
		delete(tr.attempts, a.id)
	}
	jt.addMillisLocked(a)
	if t.state == taskSucceeded {
		// Another attempt won the task: for the policy this one ended
		// without making it succeed.
		jt.driver.Ended(now, attemptKey(a), a.finish.Sub(a.start))
		return
	}
	jt.splitSucceededLocked(a)
	t.successful = a
	if !jt.taskToLocked(t, taskSucceeded) {
		t.successful = nil
		return
	}
	jt.taskImageDoneLocked(t, "its task has succeeded")
	jt.logTaskLocked(a)
	if a.speculative {
		j.counters.Add(mr.SpeculationGroup, mr.SpeculativeWins, 1)
	}
	endSpeculationLocked(t, "the task finished first")
	if t.typ == partitions.Map {
		j.finishedMaps++
		j.mapFinishedLocked()
	} else {
		j.finishedReduces++
	}
	j.viewChanged()
	jt.driver.Succeeded(now, attemptKey(a), a.finish.Sub(a.start))
	for _, other := range t.running() {
		jt.killAttemptLocked(other, "another attempt of the task succeeded")
	}
	jt.inheritedSuccessLocked(a, now)
	jt.checkJobDoneLocked(j)
}

func (jt *JobTracker) addMillisLocked(a *attempt) {
	name := mr.MillisMaps
	if a.task.typ == partitions.Reduce {
		name = mr.MillisReduces
	}
	a.task.job.counters.Add(mr.JobCounterGroup, name, a.finish.Sub(a.start).Milliseconds())
}

// attemptFailedLocked ends a live attempt as FAILED (counted against the
// task's attempt limit) or KILLED (not counted), and reschedules or fails
// the task. An attempt that has already ended is left as it is.
func (jt *JobTracker) attemptFailedLocked(a *attempt, diag string, now time.Time, counts bool) {
	t := a.task
	j := t.job
	to := attemptKilled
	if counts {
		to = attemptFailed
	}
	if !jt.attemptToLocked(a, to) {
		return
	}
	if tr := jt.trackers[a.tracker]; tr != nil {
		delete(tr.attempts, a.id)
	}
	a.finish = now
	a.diag = diag
	jt.observeAttemptLocked(a)
	if t.commitGrant == a {
		t.commitGrant = nil
	}
	if sp := t.specPending; sp != nil && (sp.source == a || sp.attempt == a) {
		endSpeculationLocked(t, "attempt "+a.id+" ended first")
	}
	if counts {
		t.failures++
		t.failedOn[a.tracker] = true
		t.lastError = diag
		jt.noteTrackerFailureLocked(j, a.tracker)
		name := mr.NumFailedMaps
		if t.typ == partitions.Reduce {
			name = mr.NumFailedReduces
		}
		j.counters.Add(mr.JobCounterGroup, name, 1)
		jt.log.Warn("attempt failed", "attempt", a.id, "tracker", a.tracker, "error", firstLine(diag))
	} else {
		name := mr.NumKilledMaps
		if t.typ == partitions.Reduce {
			name = mr.NumKilledReduces
		}
		j.counters.Add(mr.JobCounterGroup, name, 1)
	}
	jt.addMillisLocked(a)
	// Every end of an attempt is told, a losing speculative attempt's
	// too: the policy counts attempts, not tasks.
	jt.driver.Ended(now, attemptKey(a), a.finish.Sub(a.start))
	if j.done() || t.state == taskSucceeded || len(t.running()) > 0 {
		return
	}
	if !jt.taskToLocked(t, taskPending) {
		return
	}
	jt.failIfExhaustedLocked(t)
}

// failIfExhaustedLocked fails a pending task, and its job, once its failed
// attempts reach mapreduce.map.maxattempts (or .reduce.): the one place
// that decides a task is out of attempts.
func (jt *JobTracker) failIfExhaustedLocked(t *task) bool {
	j := t.job
	maxAttempts := j.conf.Int("mapreduce.map.maxattempts")
	if t.typ == partitions.Reduce {
		maxAttempts = j.conf.Int("mapreduce.reduce.maxattempts")
	}
	if t.failures < maxAttempts || !jt.taskToLocked(t, taskFailed) {
		return false
	}
	jt.endJobLocked(j, jobFailed, fmt.Sprintf("Task %s failed %d times; last error: %s", t.id(), t.failures, t.lastError))
	return true
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// failAttemptLocked fails a live attempt on the JobTracker's own decision
// and tells its tracker to kill it.
func (jt *JobTracker) failAttemptLocked(a *attempt, diag string) {
	if !a.live() {
		return
	}
	if tr := jt.trackers[a.tracker]; tr != nil {
		tr.actions = append(tr.actions, &mrpb.TaskAction{Action: &mrpb.TaskAction_KillAttempt{KillAttempt: a.id}})
	}
	jt.attemptFailedLocked(a, diag, jt.now(), true)
}

func (jt *JobTracker) killAttemptLocked(a *attempt, why string) {
	if !a.live() {
		return
	}
	if tr := jt.trackers[a.tracker]; tr != nil {
		tr.actions = append(tr.actions, &mrpb.TaskAction{Action: &mrpb.TaskAction_KillAttempt{KillAttempt: a.id}})
	}
	jt.attemptFailedLocked(a, why, jt.now(), false)
}

// lostTrackerLocked handles a tracker that stopped heartbeating: its live
// attempts are killed (not counted as failures, as in Hadoop), and the map
// outputs it held are withdrawn; completed maps whose output lived only
// there are re-run while a reduce of their job still needs them.
func (jt *JobTracker) lostTrackerLocked(t *trackerState, why string) {
	delete(jt.trackers, t.name)
	jt.forgetTrackerLocked(t)
	jt.trackerChangedLocked(t.name)
	jt.slotTotals[partitions.Map] -= t.mapSlots
	jt.slotTotals[partitions.Reduce] -= t.reduceSlots
	jt.addCapacityLocked(t, -1)
	now := jt.now()
	jt.imagesLostLocked(t.name)
	for _, j := range jt.order {
		if j.done() {
			continue
		}
		needMaps := j.finishedReduces < len(j.reduces)
		for _, m := range j.maps {
			for _, a := range m.attempts {
				if a.tracker != t.name {
					continue
				}
				if a.live() {
					jt.attemptFailedLocked(a, why, now, false)
				}
				if needMaps {
					jt.obsoleteMapOutputLocked(a)
					if m.successful == a {
						jt.rerunMapLocked(m, now)
					}
					jt.splitOutputLostLocked(m, now)
					jt.inheritedOutputLostLocked(m, now)
				}
			}
		}
		for _, r := range j.reduces {
			for _, a := range r.running() {
				if a.tracker == t.name {
					jt.attemptFailedLocked(a, why, now, false)
				}
			}
		}
	}
}

// rerunMapLocked puts a completed map back to pending because its output
// is lost.
func (jt *JobTracker) rerunMapLocked(m *task, now time.Time) {
	j := m.job
	if m.state != taskSucceeded {
		return
	}
	if !jt.taskToLocked(m, taskPending) {
		return
	}
	m.successful = nil
	m.commitGrant = nil
	j.finishedMaps--
	j.mapsNotDoneLocked()
	j.viewChanged()
	jt.logRerunLocked(m)
	j.counters.Add(mr.JobCounterGroup, mr.NumKilledMaps, 1)
	jt.driver.MapOutputLost(now, j.id, m.index)
	jt.log.Info("re-running map whose output was lost", "task", m.id())
}

// MaxMapEventsPerCall bounds the events one GetMapEvents reply carries,
// as Hadoop's reduce asks for at most 10,000 completion events a call: a
// reduce that starts late in a job of many maps and spills pages through
// the log (it asks again from where the reply ended, at once while events
// are left), so that no reply outgrows gRPC's message limit and no call
// holds the JobTracker's lock for the whole log.
const MaxMapEventsPerCall = 10000

// mapEventsReply is the reply carrying events evs as messages, each with
// reduce's segment of its spill if it has one (for in-process callers; the
// gRPC server encodes the same reply by hand, encodedMapEvents).
func mapEventsReply(evs mapEventSlice, reduce int) *mrpb.MapEventsResponse {
	resp := &mrpb.MapEventsResponse{Events: make([]*mrpb.MapEvent, evs.Len())}
	for i := range resp.Events {
		out := evs.event(i)
		if evs.segs[i] != (mrpb.PackedSegments{}) {
			out.Segment = evs.segs[i].At(reduce).Proto()
		}
		resp.Events[i] = out
	}
	return resp
}

// GetMapEvents gives a reduce the spill events of its job from index From
// (at most MaxMapEventsPerCall of them), waiting up to WaitMs for new ones.
// The gRPC server answers with the same events encoded by hand
// (wireServer.GetMapEvents).
func (jt *JobTracker) GetMapEvents(ctx context.Context, req *mrpb.MapEventsRequest) (*mrpb.MapEventsResponse, error) {
	evs, err := jt.mapEventsFrom(ctx, req)
	if err != nil {
		return nil, err
	}
	return mapEventsReply(evs, int(req.Reduce)), nil
}

// mapEventsFrom is GetMapEvents' events, not yet in a reply: a slice of
// the job's append-only event log, or none when WaitMs passed with no new
// event.
func (jt *JobTracker) mapEventsFrom(ctx context.Context, req *mrpb.MapEventsRequest) (mapEventSlice, error) {
	wait := time.Duration(req.WaitMs) * time.Millisecond
	start := time.Now()
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	// batch fires at the end of the job's batch window, once a poll found
	// new events but fewer than a reply holds (mapEventsWindow).
	var batch *time.Timer
	batchDue := false
	defer func() {
		if batch != nil {
			batch.Stop()
		}
	}()
	polls := jt.cfg.Int(KeyMapEventPollsInSecond)
	for {
		jt.lock(holderTrackerRPC)
		j, ok := jt.jobs[req.JobId]
		if !ok {
			jt.unlock()
			return mapEventSlice{}, status.Errorf(codes.NotFound, "unknown job %s", req.JobId)
		}
		if req.AttemptId != "" {
			if _, a := jt.findAttempt(req.AttemptId); a == nil || !a.live() {
				jt.unlock()
				return mapEventSlice{}, status.Errorf(codes.FailedPrecondition, "attempt %s is not running", req.AttemptId)
			}
		}
		if int(req.Reduce) < 0 || int(req.Reduce) >= j.partitions() {
			jt.unlock()
			return mapEventSlice{}, status.Errorf(codes.InvalidArgument, "job %s has no reduce %d", req.JobId, req.Reduce)
		}
		from := int(req.From)
		if from < 0 || from > j.events.Len() {
			jt.unlock()
			return mapEventSlice{}, status.Errorf(codes.InvalidArgument, "event index %d out of range", from)
		}
		if n := j.events.Len() - from; n > 0 && n < MaxMapEventsPerCall && !batchDue && !j.done() && j.finishedMaps < len(j.maps) {
			// A few new events while maps still run: let more come, until
			// the job's window from the poll's start, so that a job's
			// reduces are answered about polls times a second in all. The
			// poll sleeps through the window rather than waking at each
			// new event: a thousand polls woken by every heartbeat that
			// announces a spill would queue on the lock. It wakes when the
			// last map finishes.
			if rest := mapEventsWindow(len(j.reduces), polls, wait) - time.Since(start); rest > 0 {
				done := j.mapsDoneLocked()
				jt.unlock()
				batch = time.NewTimer(rest)
				select {
				case <-batch.C:
				case <-done:
				case <-deadline.C:
				case <-ctx.Done():
					return mapEventSlice{}, ctx.Err()
				}
				batchDue = true
				continue
			}
		}
		if from < j.events.Len() || j.done() {
			// The log is append-only and its entries are never changed:
			// the reply is built from this slice of it off the lock
			// (decoding a reduce's segment of each spill), while appends
			// write past its end.
			to := min(j.events.Len(), from+MaxMapEventsPerCall)
			evs := j.events.slice(from, to)
			jt.unlock()
			return evs, nil
		}
		ch := j.notify
		jt.unlock()
		select {
		case <-ch:
		case <-deadline.C:
			return mapEventSlice{}, nil
		case <-ctx.Done():
			return mapEventSlice{}, ctx.Err()
		}
	}
}

// ReportFetchFailure counts a reducer's failure to fetch a map's output;
// after mapreduce.job.maxfetchfailures.per.map reports the map attempt's
// output is declared lost and the map re-run.
func (jt *JobTracker) ReportFetchFailure(ctx context.Context, req *mrpb.FetchFailureRequest) (*mrpb.Empty, error) {
	jt.lock(holderTrackerRPC)
	defer jt.unlock()
	j, a := jt.findAttempt(req.MapAttemptId)
	if a == nil || j.done() || a.obsolete {
		return &mrpb.Empty{}, nil
	}
	if jobOfAttempt(req.ReduceAttemptId) != j.id || !strings.Contains(req.ReduceAttemptId, "_r_") || a.task.typ != partitions.Map {
		// Only a reduce of the map's own job may report it.
		return nil, status.Errorf(codes.PermissionDenied, "fetch failure of %s reported by %s, which is not a reduce of job %s",
			req.MapAttemptId, req.ReduceAttemptId, j.id)
	}
	j.fetchFailures[a.id]++
	jt.prom.fetchFailures.Inc()
	n := j.fetchFailures[a.id]
	jt.log.Warn("fetch failure reported", "map_attempt", a.id, "spill", req.Spill, "by", req.ReduceAttemptId, "reports", n, "cause", req.Cause)
	if n < j.conf.Int("mapreduce.job.maxfetchfailures.per.map") {
		return &mrpb.Empty{}, nil
	}
	now := jt.now()
	m := a.task
	jt.obsoleteMapOutputLocked(a)
	jt.splitOutputLostLocked(m, now)
	if a.live() {
		jt.failAttemptLocked(a, "Too many fetch-failures")
	} else if m.successful == a && jt.attemptToLocked(a, attemptFailed) {
		// Hadoop fails a succeeded map whose output cannot be fetched:
		// it counts against the task's attempts.
		a.diag = "Too many fetch-failures"
		m.failures++
		m.lastError = a.diag
		j.counters.Add(mr.JobCounterGroup, mr.NumFailedMaps, 1)
		jt.rerunMapLocked(m, now)
		jt.failIfExhaustedLocked(m)
	}
	jt.inheritedOutputLostLocked(m, now)
	return &mrpb.Empty{}, nil
}

// CanCommit grants the output commit of a task to exactly one attempt.
func (jt *JobTracker) CanCommit(ctx context.Context, req *mrpb.CanCommitRequest) (*mrpb.CanCommitResponse, error) {
	jt.lock(holderTrackerRPC)
	defer jt.unlock()
	j, a := jt.findAttempt(req.AttemptId)
	if a == nil || j.done() || !a.live() {
		return &mrpb.CanCommitResponse{CanCommit: false}, nil
	}
	t := a.task
	if t.state == taskSucceeded {
		return &mrpb.CanCommitResponse{CanCommit: false}, nil
	}
	if t.commitGrant == nil || !t.commitGrant.live() {
		t.commitGrant = a
	}
	if a.state == attemptRunning {
		jt.attemptToLocked(a, attemptCommitPending)
	}
	return &mrpb.CanCommitResponse{CanCommit: t.commitGrant == a}, nil
}
