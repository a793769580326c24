// Package speculator decides which running task attempt gets a speculative
// copy and whether that copy is a fresh attempt or a CRIU clone of the
// running process (spec/speculation.md §1-§3).
//
// Like the scheduling policies in package partitions, the decision is pure
// code: the caller passes the speculator's view of a job and the time, and
// gets decisions back. Nothing here reads a clock, starts a goroutine or
// does I/O, so the JobTracker and the simulator drive the same code.
//
// Hadoop's default speculator (DefaultSpeculator with the
// LegacyTaskRuntimeEstimator) is followed as the spec gives it: a task's
// estimated end comes from its progress rate, nothing of a type is
// speculated before max(1, 5%) of its tasks finished, the best positive
// gain per task type and scan is speculated when the caps allow it, a task
// has at most one extra attempt. The cloning extension (Kukreti, §3) scores
// each candidate against the cheaper of a fresh attempt (the mean runtime)
// and a clone (the damped clone cost plus the remaining part of the
// original's work). The clone cost comes from an Estimator whose inputs
// start from configured priors and are updated from measured clones.
package speculator

import (
	"time"

	"gomr/partitions"
)

// TaskType is a map or a reduce: the scheduler's type, shared.
type TaskType = partitions.TaskType

// Task types.
const (
	Map    = partitions.Map
	Reduce = partitions.Reduce
)

// AttemptView is the speculator's view of one live (running or starting)
// attempt.
type AttemptView struct {
	// ID is the attempt id.
	ID string
	// Tracker is the TaskTracker the attempt runs on.
	Tracker string
	// Start is when the JobTracker enrolled the attempt (Hadoop's start
	// time of the attempt); zero means not started yet.
	Start time.Time
	// Progress is the last reported progress, 0..1, read as the fraction
	// of the task's work done.
	Progress float64
	// ReportAt is the time of the last progress report.
	ReportAt time.Time
	// ProgressChangedAt is when the reported progress last changed; the
	// stagnation rule uses it. Zero means ReportAt.
	ProgressChangedAt time.Time
	// StartProgress is the progress a clone started at (p0, §3.7); 0 for
	// an attempt that started from scratch.
	StartProgress float64
	// Rate is the attempt's exponentially smoothed progress rate, in
	// progress per second (SmoothRate over its reports); 0 when unknown.
	// Only the smoothed estimator reads it.
	Rate float64

	// FileSetBytes is the size of the clone's file set: for a map the
	// spill in progress and what it needs, for a reduce the fetched and
	// merged data (§2.5).
	FileSetBytes int64
	// RSSBytes is the resident set size of the attempt's process, the
	// size of the CRIU image; 0 means unknown, and then it is not cloned.
	RSSBytes int64
	// CRIU is true when the attempt can be cloned now: its tracker has a
	// working CRIU (probed at TaskTracker start) and the attempt can reach
	// a quiet point in its current phase. Otherwise it is never cloned.
	CRIU bool
	// BeingCloned is true while a clone of this attempt is in progress;
	// the stagnation rule is suspended for it and it is not cloned again.
	BeingCloned bool
	// CommitPending is true once the attempt asked to commit; it is never
	// cloned (§6, item 16).
	CommitPending bool
	// NoOtherTracker is true when no tracker but the attempt's own has
	// slots of its task's type, so a fresh attempt, which never runs
	// beside its original, could run nowhere. Only a clone (which may run
	// beside it) is then considered, and nothing is decided while the
	// attempt cannot be cloned: a fresh attempt waiting for a slot that
	// never comes would keep the task from being cloned later.
	NoOtherTracker bool
}

// TaskView is the speculator's view of one task of a job.
type TaskView struct {
	// ID is the task id.
	ID string
	// Attempts are the task's live (running or starting) attempts.
	Attempts []AttemptView
	// SpeculativePending is true when a speculative attempt of the task
	// was decided but is not live yet (waiting for a slot, or a clone in
	// progress). The task then counts as already speculating.
	SpeculativePending bool
	// Speculated is true when the task has ever had a speculative
	// attempt (Hadoop's mayHaveSpeculated).
	Speculated bool
}

// TypeView is the speculator's view of the tasks of one type of a job.
type TypeView struct {
	// Total is the number of tasks of the type in the job.
	Total int
	// Pending counts attempts of the type waiting for a slot (new tasks
	// and re-attempts of failed ones). While it is positive nothing of
	// the type is speculated: ordinary work comes first.
	Pending int
	// Tasks are the tasks of the type that are not finished.
	Tasks []TaskView
	// Finished holds the duration of the first successful attempt of each
	// finished task of the type (Hadoop's DataStatistics input).
	Finished []time.Duration
}

// JobView is the speculator's view of one running job.
type JobView struct {
	ID     string
	Map    TypeView
	Reduce TypeView
}

// Type returns the view of the tasks of type t.
func (j *JobView) Type(t TaskType) *TypeView {
	if t == Map {
		return &j.Map
	}
	return &j.Reduce
}

// Kind is the kind of speculative attempt.
type Kind int

// Kinds of speculative attempt.
const (
	Fresh Kind = iota // a new attempt that starts the task from scratch
	Clone             // a CRIU clone of the running attempt
)

// String returns "fresh" or "clone".
func (k Kind) String() string {
	if k == Clone {
		return "clone"
	}
	return "fresh"
}
