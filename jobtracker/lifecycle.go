package jobtracker

import (
	"fmt"
	"slices"

	"gomr/mr"
	"gomr/partitions"
)

// The lifecycles of jobs, tasks and attempts. Each state is a small typed
// enum whose String is Hadoop's name (what the RPCs, the pages and the
// history carry), and each changes only through its to method, which
// checks the change against the table below: an illegal one changes
// nothing and is a *TransitionError naming both states. So an attempt
// cannot end twice (counted failed, then killed), a job cannot end twice,
// and a task cannot leave a final state.

// jobState is a job's state.
type jobState uint8

const (
	jobRunning jobState = iota
	jobSucceeded
	jobFailed
	jobKilled
)

var jobStateNames = [...]string{jobRunning: StateRunning, jobSucceeded: StateSucceeded, jobFailed: StateFailed, jobKilled: StateKilled}

func (s jobState) String() string { return stateName(jobStateNames[:], int(s)) }

// final tells whether the job has ended.
func (s jobState) final() bool { return s != jobRunning }

// jobTransitions lists the states a job may go to from each state.
var jobTransitions = map[jobState][]jobState{
	jobRunning: {jobSucceeded, jobFailed, jobKilled},
}

// taskState is a task's state.
type taskState uint8

const (
	taskPending taskState = iota
	taskRunning
	taskSucceeded
	taskFailed
	taskKilled
)

var taskStateNames = [...]string{taskPending: StatePending, taskRunning: StateRunning, taskSucceeded: StateSucceeded,
	taskFailed: StateFailed, taskKilled: StateKilled}

func (s taskState) String() string { return stateName(taskStateNames[:], int(s)) }

// taskTransitions lists the states a task may go to from each state.
var taskTransitions = map[taskState][]taskState{
	// Running: an attempt starts. Succeeded: kept across a JobTracker
	// restart (recovery.go). Failed: out of attempts after its map output
	// was lost (it went back to pending first). Killed: its job ended.
	taskPending: {taskRunning, taskSucceeded, taskFailed, taskKilled},
	// Pending: its last live attempt ended without success.
	taskRunning: {taskPending, taskSucceeded, taskFailed, taskKilled},
	// Pending: a map whose output was lost runs again.
	taskSucceeded: {taskPending},
}

// attemptState is an attempt's state.
type attemptState uint8

const (
	attemptRunning attemptState = iota
	attemptCommitPending
	attemptSucceeded
	attemptFailed
	attemptKilled
	// attemptCheckpointed: dumped for preemption; its task resumes from
	// the image (checkpoint.go).
	attemptCheckpointed
	// attemptSplit: a map that stopped early because it was split
	// (split.go); its spills stand.
	attemptSplit
)

var attemptStateNames = [...]string{attemptRunning: StateRunning, attemptCommitPending: StateCommitPending,
	attemptSucceeded: StateSucceeded, attemptFailed: StateFailed, attemptKilled: StateKilled,
	attemptCheckpointed: StateCheckpointed, attemptSplit: StateSplit}

func (s attemptState) String() string { return stateName(attemptStateNames[:], int(s)) }

// live tells whether an attempt in this state runs.
func (s attemptState) live() bool { return s == attemptRunning || s == attemptCommitPending }

// attemptTransitions lists the states an attempt may go to from each
// state.
var attemptTransitions = map[attemptState][]attemptState{
	// Checkpointed: its tracker dumped it for preemption (an attempt
	// committing its output is never checkpointed). Split: a map stopped
	// at a record on a split order; a reduce split at a key group commits
	// its output so far first (commit pending, then split).
	attemptRunning:       {attemptCommitPending, attemptSucceeded, attemptFailed, attemptKilled, attemptCheckpointed, attemptSplit},
	attemptCommitPending: {attemptSucceeded, attemptFailed, attemptKilled, attemptSplit},
	// Failed: a succeeded map whose output reducers could not fetch
	// (Hadoop marks it FAILED, "Too many fetch-failures").
	attemptSucceeded: {attemptFailed},
}

func stateName(names []string, i int) string {
	if i < len(names) {
		return names[i]
	}
	return fmt.Sprintf("state(%d)", i)
}

// TransitionError is a state change its table does not allow.
type TransitionError struct {
	// What names the job, task or attempt.
	What     string
	From, To string
}

func (e *TransitionError) Error() string {
	return fmt.Sprintf("%s: illegal state change from %s to %s", e.What, e.From, e.To)
}

// transition moves *cur to state to if table allows it, and otherwise
// returns a *TransitionError naming what. what is called only then: the
// names are built for the error, not for every change of a task's state on
// the heartbeat's path (a task's id is formatted).
func transition[S ~uint8](table map[S][]S, what func() string, cur *S, to S, name func(S) string) error {
	if !slices.Contains(table[*cur], to) {
		return &TransitionError{What: what(), From: name(*cur), To: name(to)}
	}
	*cur = to
	return nil
}

// to moves the job to state s.
func (j *job) to(s jobState) error {
	if err := transition(jobTransitions, func() string { return "job " + j.id }, &j.state, s, jobState.String); err != nil {
		return err
	}
	if s.final() && j.vc != nil {
		j.vc.viewListChanged() // it leaves the view
	}
	return nil
}

// to moves the task to state s, keeping its job's count of pending tasks.
func (t *task) to(s taskState) error {
	from := t.state
	if err := transition(taskTransitions, func() string { return "task " + t.id() }, &t.state, s, taskState.String); err != nil {
		return err
	}
	t.job.viewChanged()
	j := t.job
	if from == taskPending {
		j.pendingChanged(t, -1)
	}
	if s == taskPending {
		j.pendingChanged(t, 1)
	}
	j.byState[t.typ][from]--
	j.byState[t.typ][s]++
	if j.active != nil {
		delete(j.active, t)
		if s == taskRunning {
			j.active[t] = true
		}
	}
	j.refreshRunning(t, true)
	if s == taskSucceeded {
		j.finished[t.typ].add(t)
	} else if from == taskSucceeded {
		j.finished[t.typ].remove(t)
	}
	// The successful attempt's counters count for the job while the task
	// stays succeeded: callers set t.successful before the change to
	// succeeded and clear it after the change from it.
	if j.doneCounters != nil && t.successful != nil {
		// So do those of the split attempts it continues (split.go).
		var prefix mr.CounterSet
		if t.split != nil {
			prefix = t.split.prefix
		}
		if s == taskSucceeded {
			t.successful.counters.AddTo(j.doneCounters)
			j.doneCounters.Merge(prefix)
		} else if from == taskSucceeded {
			t.successful.counters.SubtractFrom(j.doneCounters)
			j.doneCounters.Subtract(prefix)
		}
	}
	return nil
}

// pendingChanged adds d to the job's pending tasks of t's type (and, for
// a map, to the pending maps of each host of its split).
func (j *job) pendingChanged(t *task, d int) {
	j.viewChanged()
	j.pending[t.typ] += d
	if d > 0 && t.index < j.pendingFrom[t.typ] {
		j.pendingFrom[t.typ] = t.index
	}
	if t.typ != partitions.Map || t.index >= len(j.splits) || j.localPending == nil {
		return
	}
	for _, h := range j.splits[t.index].Hosts {
		if j.localPending[h] += d; j.localPending[h] <= 0 {
			delete(j.localPending, h)
		}
		if from, ok := j.hostFrom[h]; ok && d > 0 && t.index < from {
			j.hostFrom[h] = t.index
		}
	}
}

// to moves the attempt to state s, keeping its job's count of live
// attempts (startAttemptLocked counts a new one).
func (a *attempt) to(s attemptState) error {
	from := a.state
	if err := transition(attemptTransitions, func() string { return "attempt " + a.id }, &a.state, s, attemptState.String); err != nil {
		return err
	}
	if from.live() && !s.live() {
		a.task.job.live[a.task.typ]--
		a.task.job.viewChanged()
	}
	if a.task != nil {
		a.task.job.refreshRunning(a.task, true)
	}
	return nil
}

// afterUnlockLocked queues work to run once the lock is released
// (jt.unlock), outside it: file I/O that must not hold up heartbeats.
func (jt *JobTracker) afterUnlockLocked(f func()) {
	jt.deferred = append(jt.deferred, f)
}

// afterRepliesLocked queues work to run once the lock is released, as
// afterUnlockLocked does, except that a combiner of heartbeats hands it to
// a goroutine of its own once it has answered its batch (goBackground),
// so that no heartbeat's reply waits for it: work that need not precede
// the replies. Other callers run it before they return.
func (jt *JobTracker) afterRepliesLocked(f func()) {
	jt.deferredLate = append(jt.deferredLate, f)
}

// unlock releases the lock, then runs the work queued while it was held.
// Every release of jt.mu goes through it (or unlockEarly), so queued work
// runs before the call that queued it returns.
func (jt *JobTracker) unlock() {
	for _, f := range jt.unlockEarly() {
		f()
	}
}

// unlockEarly releases the lock and runs the work queued with
// afterUnlockLocked; it returns the work queued with afterRepliesLocked,
// which the caller runs before it returns.
func (jt *JobTracker) unlockEarly() (late []func()) {
	jt.publishLocked()
	work, late := jt.deferred, jt.deferredLate
	jt.deferred, jt.deferredLate = nil, nil
	obs, held := jt.endHoldLocked()
	jt.mu.Unlock()
	if obs != nil {
		obs.Observe(held.Seconds())
	}
	for _, f := range work {
		f()
	}
	return late
}

// illegalLocked records an illegal state change: a bug, logged and
// counted (tests fail on any), never carried out.
func (jt *JobTracker) illegalLocked(err error) {
	jt.illegalTransitions++
	jt.log.Error("illegal state change refused", "error", err)
}

// taskToLocked moves a task to state s; an illegal change is recorded
// and not made.
func (jt *JobTracker) taskToLocked(t *task, s taskState) bool {
	if err := t.to(s); err != nil {
		jt.illegalLocked(err)
		return false
	}
	return true
}

// attemptToLocked moves an attempt to state s; an illegal change is
// recorded and not made.
func (jt *JobTracker) attemptToLocked(a *attempt, s attemptState) bool {
	jt.trackerChangedLocked(a.tracker)
	if !s.live() {
		jt.launchDoneLocked(a)
	}
	if err := a.to(s); err != nil {
		jt.illegalLocked(err)
		return false
	}
	return true
}
