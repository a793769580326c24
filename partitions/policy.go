// Package partitions holds every scheduling policy of the runtime as pure
// code: a policy is fed with events and asked for decisions, and is given
// the time as an argument. It never reads a clock, starts a goroutine or
// does I/O, so the JobTracker and the simulator in package sim drive the
// very same code.
package partitions

import (
	"fmt"
	"sort"
	"time"

	"gomr/conf"
)

// TaskType is a map or a reduce.
type TaskType int

// Task types.
const (
	Map TaskType = iota
	Reduce
)

// String returns "map" or "reduce".
func (t TaskType) String() string {
	if t == Map {
		return "map"
	}
	return "reduce"
}

// JobView is the scheduler's view of one running job.
type JobView struct {
	ID        string
	Name      string
	Pool      string
	Priority  int
	Submitted time.Time
	// Deadline is the absolute deadline; zero means none.
	Deadline time.Time

	Maps, Reduces                                   int
	PendingMaps, RunningMaps, FinishedMaps          int
	PendingReduces, RunningReduces, FinishedReduces int
	// ReducesReady is true once enough maps have finished for reduces to
	// start (mapreduce.job.reduce.slowstart.completedmaps).
	ReducesReady bool
	// LocalPendingMaps counts, per host, pending maps whose input has a
	// replica on that host.
	LocalPendingMaps map[string]int

	// InputBytes is the job's total input size; SITA and COMP predict a
	// job's size from it. Zero means unknown.
	InputBytes int64
	// EstimatedSize is a prediction of the job's total task time (the sum
	// of its task runtimes, in slot-time): Profile.EstimateSize of its
	// profile, or in the simulator with the oracle knowledge its true
	// size; zero means unknown. The "oracle" size predictor of SITA and COMP
	// uses it.
	EstimatedSize time.Duration
	// Profile holds the task durations of earlier completed runs of a job
	// with the same Name; nil when there is none. Deadline policies use it.
	Profile *Profile
}

// ClusterView is the whole cluster as a policy sees it at one instant.
type ClusterView struct {
	Now time.Time
	// Jobs are the running jobs in submission order.
	Jobs []JobView
	// Trackers, MapSlots and ReduceSlots describe the live cluster.
	Trackers, MapSlots, ReduceSlots int
}

// SlotOffer is a tracker with free slots asking for work.
type SlotOffer struct {
	Tracker     string
	Host        string
	FreeMaps    int
	FreeReduces int
}

// Assignment gives one free slot of the offering tracker to a job.
type Assignment struct {
	JobID string
	Type  TaskType
	// Local is set when the policy chose the job for a data-local map.
	Local bool
	// Spare is set when the slot is lent beyond the job's minimum quota
	// (MinEDF-WC); such tasks may later be preempted. For accounting.
	Spare bool
	// Queue is the partition or queue index (0-based) the task is launched
	// under, for policies that have them; 0 otherwise. For accounting.
	Queue int
}

// Preemption asks for Count slots of running tasks of a type of a job back,
// to free slots for others. The policy driver's preemption planner
// (package preempt, preemption.mechanism) chooses the victims and how each
// gives its slot back; with the default mechanism, kill, it kills the most
// recently started attempts, as Hadoop does. Count counts the job's
// attempts already giving their slot back (a checkpoint or a split under
// way), so a policy that asks again while they run preempts nothing more.
type Preemption struct {
	JobID string
	Type  TaskType
	Count int
	// Reason says why the slots are wanted (spec §5.4; it weighs the
	// beneficiary's wait against lost work in the planner's auto mode);
	// Budget is how long the beneficiary can wait for a slot (0: any).
	// Both are optional.
	Reason ReclaimReason
	Budget time.Duration
}

// ReclaimReason is why a policy preempts.
type ReclaimReason uint8

// Reclaim reasons.
const (
	ReclaimUnspecified ReclaimReason = iota
	// ReclaimPriorityArrival: a higher-priority job waits (FIFO).
	ReclaimPriorityArrival
	// ReclaimFairMinShare: a pool below its minimum share (FAIR).
	ReclaimFairMinShare
	// ReclaimFairShare: a pool below half its fair share (FAIR).
	ReclaimFairShare
	// ReclaimDeadlineAtRisk: a deadline job short of its slots (MinEDF-WC).
	ReclaimDeadlineAtRisk
)

// Decision is a policy's answer to a slot offer.
type Decision struct {
	Assign  []Assignment
	Preempt []Preemption
}

// EventKind names what happened.
type EventKind int

// Events a policy is told about.
const (
	JobSubmitted EventKind = iota
	JobFinished            // succeeded, failed or killed
	TaskStarted
	// TaskFinished: the attempt succeeded, and with it its task.
	TaskFinished
	// TaskFailed: the attempt failed, was killed or was lost. Its task is
	// pending again unless another attempt of it still runs or has
	// succeeded (a losing speculative attempt ends with TaskFailed too).
	TaskFailed
	SpillReported
	// MapOutputLost: a map task that had finished (TaskFinished) lost its
	// output (its tracker was lost, or reducers could not fetch it) and is
	// pending again. It names the task, not an attempt: the attempt ended
	// when it finished.
	MapOutputLost
	// TasksAdded: a running job has Count more tasks of Type than it was
	// submitted with (or last told of). A scale-up split cut a running
	// task's remainder into pieces that run as new tasks (docs/split.md);
	// they are pending now. The tasks' work is not new: it is the split
	// task's, spread over more tasks. The views count them already; a
	// policy that sizes a job by its task count at submission (the
	// deadline policies) must count them too, or it takes the job's map
	// stage for done while the added maps still run.
	TasksAdded
)

// Event is something that happened in the cluster, at Time.
type Event struct {
	Time  time.Time
	Kind  EventKind
	JobID string
	Type  TaskType
	Task  int
	// Attempt tells concurrent attempts of the same task apart (0 for the
	// first). Policies key their per-attempt records by (JobID, Type, Task,
	// Attempt).
	Attempt int
	// Duration is a finished task's running time.
	Duration time.Duration
	// PreemptedBy is set on the TaskFailed of an attempt that ended as a
	// preemption victim: the mechanism that took its slot ("kill",
	// "checkpoint", "checkpoint-incremental", "split").
	PreemptedBy string
	// Job is set on JobSubmitted.
	Job *JobView
	// Count is the number of tasks a TasksAdded adds.
	Count int
}

// Policy is a scheduling policy.
//
// Driving contract (package sched carries it out, for the JobTracker and
// package sim alike):
//   - every event is passed to Observe in time order, JobSubmitted before
//     any other event of the job and JobFinished last;
//   - for each Assignment of a Decision that the driver carries out, it
//     reports TaskStarted (with the same JobID and Type) before it calls
//     Offer again; assignments it does not carry out are simply dropped;
//   - every TaskStarted of an attempt is followed by exactly one
//     TaskFinished or TaskFailed of the same attempt (same JobID, Type, Task
//     and Attempt), before the job's JobFinished;
//   - in a Decision, the preemptions are carried out before the
//     assignments: for each Preemption the driver has the victims the
//     planner chose killed (reported as TaskFailed at once, so an attempt
//     launched by the same decision is never a victim), or checkpointed or
//     split (reported as TaskFailed when the host has done it, a later
//     heartbeat; the slot stays taken until then);
//   - after a JobSubmitted it calls Offer at least once, even with no free
//     slot (a heartbeat of a full tracker does), so that a policy can
//     answer an arrival with preemptions;
//   - the view passed to Offer is read-only for the policy and is not
//     retained after Offer returns.
type Policy interface {
	// Name is the policy's configuration name, e.g. "fifo".
	Name() string
	// Observe is told of every event, in time order.
	Observe(ev Event)
	// Offer asks which jobs get the free slots of a tracker. The policy
	// must not assign more slots than offered, nor more tasks of a job
	// than it has pending (reduces: only once ReducesReady), nor preempt
	// more attempts of a job than it runs; a decision that does is refused
	// whole (sched.DecisionError).
	Offer(view *ClusterView, offer SlotOffer) Decision
}

// Factory builds a policy from its configuration.
type Factory func(cfg Config) (Policy, error)

// Config gives a policy its parameters by configuration key.
type Config interface {
	String(key string) string
	Int(key string) int
	Float(key string) float64
	Duration(key string) time.Duration
}

// factories are the registered policies by name.
var factories = map[string]Factory{}

// The scheduler.policy key chooses the policy; it accepts the registered
// names. A policy's file registers it (Register) and declares the keys it
// reads (registerKeys), both from its init function.
func init() {
	conf.Register(conf.Key{Name: "scheduler.policy", Type: conf.String, Default: "fifo", Description: "task scheduling policy", Check: conf.OneOfFunc(Names)})
}

// Register adds a policy factory under name; it panics on a duplicate.
func Register(name string, f Factory) {
	if _, dup := factories[name]; dup {
		panic("partitions: policy registered twice: " + name)
	}
	factories[name] = f
}

// New builds the policy called name.
func New(name string, cfg Config) (Policy, error) {
	f, ok := factories[name]
	if !ok {
		return nil, fmt.Errorf("unknown scheduler policy %q (known: %v)", name, Names())
	}
	return f(cfg)
}

// Names lists the registered policies.
func Names() []string {
	out := make([]string, 0, len(factories))
	for n := range factories {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
