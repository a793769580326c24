package jobtracker

import (
	"context"
	"fmt"
	"slices"
	"time"

	"gomr/conf"
	"gomr/mr"
	"gomr/mrpb"
	"gomr/partitions"
	"gomr/speculator"
)

// speculation is one speculative attempt the speculator asked for. It is
// launched through the scheduler like any task (the job's pending count
// includes it, so the policy decides whose slot it takes), on a tracker
// other than the one its source runs on.
type speculation struct {
	task    *task
	kind    speculator.Kind
	source  *attempt
	attempt *attempt // nil until launched
	decided time.Time
	explain string
	// note says why a clone became a fresh attempt.
	note string
	// dropped says why it was never launched (the task ended first).
	dropped string
}

// outcome is what became of the speculation, for `mr job -status`.
func (s *speculation) outcome() string {
	switch {
	case s.dropped != "":
		return "DROPPED"
	case s.attempt == nil:
		return StatePending
	case s.attempt.live():
		return StateRunning
	case s.attempt.state == attemptSucceeded:
		return "WON"
	case s.attempt.state == attemptKilled && s.task.successful != nil && s.task.successful != s.attempt:
		return "LOST"
	}
	return s.attempt.state.String()
}

func (s *speculation) proto() *mrpb.Speculation {
	p := &mrpb.Speculation{
		TaskId: s.task.id(), Kind: s.kind.String(), SourceAttempt: s.source.id,
		DecidedMs: s.decided.UnixMilli(), Explanation: s.explain, Outcome: s.outcome(), Note: s.note,
	}
	if s.attempt != nil {
		p.AttemptId = s.attempt.id
	}
	if s.dropped != "" {
		p.Note = s.dropped
	}
	return p
}

// newJobSpeculator builds a job's speculator from its configuration; the
// clone-cost estimator is the JobTracker's, shared by all jobs.
func (jt *JobTracker) newJobSpeculator(jcfg *conf.Config) (*speculator.Speculator, error) {
	p, err := speculator.FromConfig(jcfg)
	if err != nil {
		return nil, err
	}
	return speculator.NewShared(p, jt.cloneCost), nil
}

// speculationLoop scans the running jobs for stragglers: after a scan that
// asked for a speculative attempt it waits
// mapreduce.job.speculative.retry-after-speculate, otherwise
// retry-after-no-speculate, as Hadoop's DefaultSpeculator does.
func (jt *JobTracker) speculationLoop(ctx context.Context) {
	timer := time.NewTimer(jt.specParams.RetryNoSpec)
	defer timer.Stop()
	scanner := speculator.New(jt.specParams)
	// The loop's own views of the jobs, built a chunk at a time
	// (speculateChunked).
	views := map[*job]*specScratch{}
	for {
		select {
		case <-ctx.Done():
			return
		case <-jt.stop:
			return
		case <-timer.C:
		}
		began := time.Now()
		launched := jt.speculateChunked(views)
		timer.Reset(scanner.NextScanAfter(launched, time.Since(began)))
	}
}

// speculateLocked runs one scan of every running job and records the
// speculative attempts asked for; it reports whether there was any. Its
// views are built under this one hold of the lock; the speculation loop
// builds them a chunk at a time instead (speculateChunked).
func (jt *JobTracker) speculateLocked(now time.Time) bool {
	any := false
	for _, j := range jt.order {
		if j.done() || j.committing || j.speculator == nil {
			// Its buffers (a last wave's views: megabytes on a large
			// cluster) are not kept while the job waits to be retired.
			j.specScan = specScratch{}
			continue
		}
		jt.speculatorViewLocked(j, now)
		any = jt.decideLocked(j, &j.specScan, now) || any
	}
	return any
}

// specChunk is how many tasks of a job a hold of the lock adds to the
// speculation loop's view: about a millisecond of the lock on a busy
// machine, where the whole of a 20,000-task last wave took 9-80 ms (a
// variable for the tests).
var specChunk = 2048

// speculateChunked is a scan of the speculation loop: speculateLocked,
// except that each job's view is built specChunk tasks per hold of the
// lock (heartbeats are answered between the holds), and the speculator
// then decides on the views under one more hold, in which the types'
// pending counts and finished durations are read again. The view of a
// large last wave is thus not one instant's but that of a few
// milliseconds; a decision on a task that ended meanwhile is dropped
// (decideLocked checks the task and its attempt under the lock), and a
// task that began meanwhile waits for the next scan. views are the loop's
// own buffers, by job (those of jobs no longer scanned are dropped).
func (jt *JobTracker) speculateChunked(views map[*job]*specScratch) bool {
	jt.lock(holderSpeculator)
	var jobs []*job
	for _, j := range jt.order {
		if !j.done() && !j.committing && j.speculator != nil {
			jobs = append(jobs, j)
		}
	}
	jt.unlock()
	for j := range views {
		if !slices.Contains(jobs, j) {
			delete(views, j)
		}
	}
	for _, j := range jobs {
		if views[j] == nil {
			views[j] = &specScratch{}
		}
		jt.buildViewChunked(j, views[j])
	}
	jt.lock(holderSpeculator)
	defer jt.unlock()
	now := jt.now()
	any := false
	for _, j := range jobs {
		if j.done() || j.committing {
			continue
		}
		sc := views[j]
		for _, typ := range []partitions.TaskType{partitions.Map, partitions.Reduce} {
			tv := sc.view.Type(typ)
			tv.Total = len(j.tasks(typ))
			if !j.speculatesType(typ) || j.pending[typ] > 0 {
				tv.Pending, tv.Finished, tv.Tasks, sc.tasks[typ] = j.pending[typ], nil, tv.Tasks[:0], sc.tasks[typ][:0]
				continue
			}
			tv.Pending, tv.Finished = 0, j.finished[typ].d
		}
		any = jt.decideLocked(j, sc, now) || any
	}
	return any
}

// buildViewChunked builds j's view in sc as speculatorViewLocked does, a
// chunk of tasks per hold of the lock; the types' counts and finished
// durations are left for the caller to set under its final hold.
func (jt *JobTracker) buildViewChunked(j *job, sc *specScratch) {
	sc.view = speculator.JobView{ID: j.id, Map: speculator.TypeView{Tasks: sc.view.Map.Tasks[:0]},
		Reduce: speculator.TypeView{Tasks: sc.view.Reduce.Tasks[:0]}}
	sc.attempts = sc.attempts[:0]
	for _, typ := range []partitions.TaskType{partitions.Map, partitions.Reduce} {
		sc.tasks[typ] = sc.tasks[typ][:0]
		tv := sc.view.Type(typ)
		for from := 0; ; from += specChunk {
			jt.lock(holderSpeculator)
			tasks := j.tasks(typ)
			if j.done() || j.committing || !j.speculatesType(typ) || j.pending[typ] > 0 || from >= len(tasks) {
				jt.unlock()
				break
			}
			for _, tk := range tasks[from:min(from+specChunk, len(tasks))] {
				if j.active[tk] {
					jt.appendTaskViewLocked(sc, tv, typ, tk)
				}
			}
			jt.unlock()
		}
	}
}

// speculatesType tells whether the job's speculator considers tasks of
// type typ at all (its switch for the type).
func (j *job) speculatesType(typ partitions.TaskType) bool {
	p := j.speculator.Params()
	return (typ == partitions.Map && p.MapSpeculative) || (typ == partitions.Reduce && p.ReduceSpeculative)
}

// decideLocked asks j's speculator for its decisions on the view in sc
// and records the speculative attempts asked for, each on a task still
// running from an attempt still live; it reports whether there was any.
func (jt *JobTracker) decideLocked(j *job, sc *specScratch, now time.Time) bool {
	any := false
	for _, d := range j.speculator.Scan(now, &sc.view, "") {
		tk := sc.taskOf(d.Type, d.TaskID)
		if tk == nil || tk.specPending != nil || tk.state != taskRunning {
			continue
		}
		var src *attempt
		for _, a := range tk.running() {
			if a.id == d.Source {
				src = a
			}
		}
		if src == nil || (src.ckpt != nil && !src.ckpt.ordered.IsZero()) || (src.split != nil && src.split.ordered && tk.typ == partitions.Reduce) {
			continue // not an attempt being preempted or split (spec §5.10)
		}
		s := &speculation{task: tk, kind: d.Kind, source: src, decided: now, explain: d.Explanation.String()}
		tk.setSpec(s)
		tk.speculated = true
		j.speculations = append(j.speculations, s)
		any = true
		jt.log.Info("speculating", "task", tk.id(), "kind", d.Kind, "source", src.id, "why", s.explain)
	}
	return any
}

// specScratch is a job's speculator view and the buffers it is built in,
// reused from scan to scan (a job in its last wave on a large cluster has
// tens of thousands of running tasks, scanned every second under the
// lock); the view is read by the speculator during the scan only.
type specScratch struct {
	view     speculator.JobView
	running  []*task
	tasks    [2][]*task // tasks[typ][i] is view's Type(typ).Tasks[i]
	attempts []speculator.AttemptView
}

// taskOf is the task of the last view whose id is id.
func (s *specScratch) taskOf(typ partitions.TaskType, id string) *task {
	tv := s.view.Type(typ)
	for i := range tv.Tasks {
		if tv.Tasks[i].ID == id {
			return s.tasks[typ][i]
		}
	}
	return nil
}

// speculatorViewLocked is the speculator's view of a job (in j.specScan,
// whose tasks it also sets).
func (jt *JobTracker) speculatorViewLocked(j *job, now time.Time) *speculator.JobView {
	sc := &j.specScan
	sc.view = speculator.JobView{ID: j.id, Map: speculator.TypeView{Tasks: sc.view.Map.Tasks[:0]},
		Reduce: speculator.TypeView{Tasks: sc.view.Reduce.Tasks[:0]}}
	sc.attempts = sc.attempts[:0]
	params := j.speculator.Params()
	for _, typ := range []partitions.TaskType{partitions.Map, partitions.Reduce} {
		tv := sc.view.Type(typ)
		sc.tasks[typ] = sc.tasks[typ][:0]
		tasks := j.tasks(typ)
		tv.Total = len(tasks)
		if speculative := (typ == partitions.Map && params.MapSpeculative) || (typ == partitions.Reduce && params.ReduceSpeculative); !speculative || j.pending[typ] > 0 {
			// The speculator looks no further than the pending count
			// (nothing is speculated while tasks of the type wait for a
			// slot, as in Hadoop) or the type's switch: the walk over
			// every task, a large job's under the lock every scan, is
			// skipped.
			tv.Pending = j.pending[typ]
			continue
		}
		// No task of the type waits (the job's last wave): the finished
		// durations are kept as tasks succeed (finishedDurations; the
		// speculator only reads them, under the lock) and the running
		// tasks are the job's active ones, in task order: O(running),
		// not O(tasks).
		tv.Finished = j.finished[typ].d
		running := sc.running[:0]
		for tk := range j.active {
			if tk.typ == typ {
				running = append(running, tk)
			}
		}
		slices.SortFunc(running, func(a, b *task) int { return a.index - b.index })
		sc.running = running
		// The attempt views of every task in one buffer, each task's a
		// slice of it (grown once here; a growth would leave the slices
		// made before in the old buffer, which stays theirs).
		n := 0
		for _, tk := range running {
			n += len(tk.attempts)
		}
		sc.attempts = slices.Grow(sc.attempts, n)
		for _, tk := range running {
			jt.appendTaskViewLocked(sc, tv, typ, tk)
		}
	}
	return &sc.view
}

// appendTaskViewLocked adds running task tk of type typ, with its live
// attempts, to the view tv in sc (nothing when none is live). The attempt
// views are in sc.attempts, each task's a slice of it; a growth of it
// leaves the slices made before in the old buffer, which stays theirs.
func (jt *JobTracker) appendTaskViewLocked(sc *specScratch, tv *speculator.TypeView, typ partitions.TaskType, tk *task) {
	start := len(sc.attempts)
	for _, a := range tk.attempts {
		if a.live() {
			sc.attempts = append(sc.attempts, jt.attemptViewLocked(a))
		}
	}
	if len(sc.attempts) == start {
		return
	}
	tv.Tasks = append(tv.Tasks, speculator.TaskView{
		ID:                 tk.viewID(),
		Attempts:           sc.attempts[start:len(sc.attempts):len(sc.attempts)],
		SpeculativePending: tk.specPending != nil && tk.specPending.attempt == nil,
		Speculated:         tk.speculated,
	})
	sc.tasks[typ] = append(sc.tasks[typ], tk)
}

// cloneMeasurement turns a clone's stats into the estimator's sample. The
// tracker times one copy, of the image and the file set together (one
// stream); the image's share of it, by bytes, is moving the process image
// and goes with the dump and restore (the spec's t_vm is dump, move and
// restore), the rest is the file set's copy.
func cloneMeasurement(cs *mrpb.CloneStats) speculator.CloneMeasurement {
	ms := func(n int64) time.Duration { return time.Duration(n) * time.Millisecond }
	copyTime := ms(cs.CopyMs)
	var imageMove time.Duration
	if total := cs.ImageBytes + cs.FileSetBytes; total > 0 {
		imageMove = time.Duration(float64(copyTime) * float64(cs.ImageBytes) / float64(total))
	}
	return speculator.CloneMeasurement{
		ImageBytes:    cs.ImageBytes,
		Dump:          ms(cs.DumpMs),
		Restore:       ms(cs.RestoreMs) + imageMove,
		TransferBytes: cs.FileSetBytes,
		Transfer:      copyTime - imageMove,
	}
}

// maxCloneStartProgress is the largest start progress of a winning clone
// whose duration still enters the mean runtime: past it, the clone did too
// little of the task for its time to say anything about the whole.
const maxCloneStartProgress = 0.95

// fullTaskDuration is what a successful attempt says about how long a task
// of its type takes (spec/speculation.md §3.7): a fresh attempt its wall
// time; a clone, which started at progress p0 after a clone cost, the
// time it ran scaled to the whole task, (wall − cost)/(1 − p0), so that
// winning clones do not drag the mean runtime down. ok is false for a
// clone that started too close to the end to tell.
// finishedDurations are the full durations (fullTaskDuration) of a job's
// succeeded tasks of one type, kept as tasks succeed and leave success
// (task.to), for the speculator's statistics: d[i] is tasks[i]'s, and a
// task's index in them is its finishedAt - 1.
type finishedDurations struct {
	d     []time.Duration
	tasks []*task
}

// add records t's duration, if it has one.
func (f *finishedDurations) add(t *task) {
	a := t.successful
	if a == nil || t.finishedAt != 0 {
		return
	}
	d, ok := fullTaskDuration(a.finish.Sub(a.start), a.cloneCost, a.startProgress)
	if !ok {
		return
	}
	f.d = append(f.d, d)
	f.tasks = append(f.tasks, t)
	t.finishedAt = len(f.d)
}

// remove forgets t's duration (its output was lost: it runs again).
func (f *finishedDurations) remove(t *task) {
	i := t.finishedAt - 1
	if i < 0 {
		return
	}
	last := len(f.d) - 1
	f.d[i], f.tasks[i] = f.d[last], f.tasks[last]
	f.tasks[i].finishedAt = i + 1
	f.d, f.tasks = f.d[:last], f.tasks[:last]
	t.finishedAt = 0
}

func fullTaskDuration(wall, cloneCost time.Duration, p0 float64) (d time.Duration, ok bool) {
	if p0 <= 0 {
		return wall, true
	}
	if p0 > maxCloneStartProgress {
		return 0, false
	}
	ran := max(wall-cloneCost, 0)
	return time.Duration(float64(ran) / (1 - p0)), true
}

func (jt *JobTracker) attemptViewLocked(a *attempt) speculator.AttemptView {
	v := speculator.AttemptView{
		ID: a.id, Tracker: a.tracker, Start: a.start, Progress: float64(a.progress),
		ReportAt: a.reportAt, ProgressChangedAt: a.progressChanged, StartProgress: a.startProgress, Rate: a.rate,
		FileSetBytes: a.fileSetBytes, RSSBytes: a.rssBytes,
		CommitPending: a.state == attemptCommitPending,
	}
	// The tracker says whether the attempt can be cloned now: it has CRIU
	// and the child can reach a quiet point (a map's output is spills or a
	// flushable local file; a reduce is in its reduce phase, writing a
	// flushable local file).
	t := jt.trackers[a.tracker]
	if t != nil {
		v.CRIU = t.criu && a.cloneable
	}
	v.NoOtherTracker = jt.noOtherTrackerLocked(a, t)
	if sp := a.task.specPending; sp != nil && sp.kind == speculator.Clone && sp.source == a && sp.attempt != nil && sp.attempt.live() && !sp.attempt.cloned {
		v.BeingCloned = true
	}
	return v
}

// noOtherTrackerLocked tells whether no tracker but a's own (t, nil if
// lost) could run a fresh attempt of a's task: a fresh attempt never runs
// beside its original, nor on a tracker the job has blacklisted or the
// task failed on (waitsFor, the policy's offers). Those exclusions are
// counted only when they could leave no tracker, so that a large cluster
// pays one subtraction per attempt view.
func (jt *JobTracker) noOtherTrackerLocked(a *attempt, t *trackerState) bool {
	tk, j := a.task, a.task.job
	others := jt.typeTrackers[tk.typ]
	if jt.hasSlotsFor(t, tk.typ) {
		others--
	}
	if others <= 0 || others > len(j.trackerFailures)+len(tk.failedOn) {
		return others <= 0
	}
	excluded := func(name string) bool {
		return name != a.tracker && jt.hasSlotsFor(jt.trackers[name], tk.typ)
	}
	for name := range j.trackerFailures {
		if jt.jobAvoidsLocked(j, name) && excluded(name) {
			others--
		}
	}
	for name := range tk.failedOn {
		if !jt.jobAvoidsLocked(j, name) && excluded(name) {
			others--
		}
	}
	return others <= 0
}

// speculativeTaskLocked picks a task of the job with a speculative attempt
// waiting for a slot that may run on tracker t (never beside its source).
func speculativeTaskLocked(j *job, typ partitions.TaskType, t *trackerState) *task {
	for _, tk := range j.tasks(typ) {
		if tk.state == taskRunning && waitsFor(tk, t) {
			return tk
		}
	}
	return nil
}

// waitsFor tells whether tk has a speculative attempt waiting for a slot
// that may run on tracker t (any tracker when t is nil). A fresh attempt
// never runs beside its source; a clone may (the slowness the speculator
// saw is the attempt's progress, and the clone leaves the original's slot
// to it), on any tracker that can restore it. The policy's view of an
// offer counts only these, so that it does not give the job a slot the
// attempt cannot take.
func waitsFor(tk *task, t *trackerState) bool {
	s := tk.specPending
	if s == nil || s.attempt != nil {
		return false
	}
	if t == nil {
		return true
	}
	return !tk.failedOn[t.name] && !(s.kind == speculator.Clone && !t.criu) && !(s.kind == speculator.Fresh && s.source.tracker == t.name)
}

// launchSpeculativeLocked starts the waiting speculative attempt of tk on
// tracker t.
func (jt *JobTracker) launchSpeculativeLocked(j *job, tk *task, t *trackerState, now time.Time) {
	s := tk.specPending
	var cloneOf *attempt
	if s.kind == speculator.Clone {
		cloneOf = s.source
	}
	a := jt.startAttemptLocked(j, tk, t, now, true, cloneOf)
	s.attempt = a
	tk.setSpec(s) // no longer waiting
	name := mr.SpeculativeMaps
	if tk.typ == partitions.Reduce {
		name = mr.SpeculativeReduces
	}
	j.counters.Add(mr.SpeculationGroup, name, 1)
	jt.log.Info("speculative attempt", "attempt", a.id, "tracker", t.name, "source", s.source.id, "kind", s.kind)
}

// endSpeculationLocked settles tk's speculation when the task ends or its
// source attempt dies before the speculative one was launched.
func endSpeculationLocked(tk *task, why string) {
	s := tk.specPending
	if s == nil {
		return
	}
	if s.attempt == nil {
		s.dropped = why
	}
	tk.setSpec(nil)
}

func (s *speculation) String() string {
	return fmt.Sprintf("%s %s of %s", s.kind, s.task.id(), s.source.id)
}

// cloneStatusLocked takes in what a tracker reports of an attempt made by
// cloning: once the clone runs, its measured cost goes to the clone-cost
// estimator and the job's counters, and its progress starts where its
// original was. A clone that could not be made is ended (KILLED, not
// counted against the task) and replaced by a fresh speculative attempt; it
// reports true then, the status being fully handled.
func (jt *JobTracker) cloneStatusLocked(a *attempt, cs *mrpb.CloneStats, now time.Time) bool {
	tk := a.task
	j := tk.job
	if cs.Error != "" {
		sp := tk.specPending
		jt.attemptFailedLocked(a, "clone failed: "+cs.Error, now, false)
		j.counters.Add(mr.SpeculationGroup, mr.CloneFallbacks, 1)
		if sp == nil || sp.attempt != a || j.done() || tk.state == taskSucceeded || !sp.source.live() {
			return true
		}
		sp.note = "clone failed: " + cs.Error
		fresh := &speculation{task: tk, kind: speculator.Fresh, source: sp.source, decided: now,
			explain: sp.explain, note: "instead of a clone that failed: " + cs.Error}
		tk.setSpec(fresh)
		j.speculations = append(j.speculations, fresh)
		jt.log.Warn("clone failed; speculating with a fresh attempt", "attempt", a.id, "source", sp.source.id, "error", cs.Error)
		return true
	}
	if a.cloned || cs.ImageBytes <= 0 {
		return false // being made, or already counted
	}
	a.cloned = true
	a.startProgress = float64(cs.StartProgress)
	a.cloneCost = time.Duration(cs.DumpMs+cs.CopyMs+cs.RestoreMs) * time.Millisecond
	m := cloneMeasurement(cs)
	if err := jt.cloneCost.Observe(m); err != nil {
		jt.log.Warn("clone measurement not used", "attempt", a.id, "error", err)
	}
	g := mr.SpeculationGroup
	j.counters.Add(g, mr.ClonesLaunched, 1)
	j.counters.Add(g, mr.CloneBytes, cs.ImageBytes+cs.FileSetBytes)
	j.counters.Add(g, mr.CloneDumpMillis, cs.DumpMs)
	j.counters.Add(g, mr.CloneTransferMillis, cs.CopyMs)
	j.counters.Add(g, mr.CloneRestoreMillis, cs.RestoreMs)
	tvm, imgBps, copyBps, n := jt.cloneCost.Inputs()
	jt.log.Info("clone running", "attempt", a.id, "source", cs.SourceAttempt, "dump_ms", cs.DumpMs, "copy_ms", cs.CopyMs,
		"restore_ms", cs.RestoreMs, "image_bytes", cs.ImageBytes, "file_set_bytes", cs.FileSetBytes,
		"t_vm", tvm, "image_Bps", imgBps, "copy_Bps", copyBps, "samples", n)
	return false
}
