package partitions

import "time"

// Describer is implemented by policies that can show their current view,
// for the JobTracker's status pages and `mr job -status`.
type Describer interface {
	// Describe returns the policy's view at now. The result is a copy the
	// caller may keep.
	Describe(now time.Time) PolicyStatus
}

// TimerSource is implemented by policies with per-partition timers
// (tyrex-static, tyrex-dynamic, fbq). It is cheap, for the simulator to
// call after every event.
type TimerSource interface {
	// Timers returns, per partition but the last, the timer in force; for
	// DynamicTAGS the cutoff of the latest check, or -1 when the latest
	// check computed none (CV^2 at or under the threshold, or too few
	// jobs). The slice is reused by the next call.
	Timers() []time.Duration
	// TimerChecks counts the dynamic timer computations so far; it
	// changes when a new timer was computed.
	TimerChecks() int
}

// Waker is implemented by policies whose decision can change with the
// passing of time alone: a starved pool's preemption timeout expiring.
// The JobTracker needs nothing of it (every tracker heartbeats, full or
// not, so the policy is asked often); the simulator, which offers slots
// when they free, asks the policy again at the time it names.
type Waker interface {
	// NextWake is the earliest time after now at which an offer of no
	// free slots may get a different decision than now, with nothing else
	// happening; the zero time for none.
	NextWake(now time.Time) time.Time
}

// PolicyStatus is a policy's view of the cluster for users.
type PolicyStatus struct {
	Policy string `json:"policy"`
	// Partitions are the queues or partitions of multi-queue policies.
	Partitions []PartitionStatus `json:"partitions,omitempty"`
	// Pools are the fair scheduler's pools.
	Pools []PoolStatus `json:"pools,omitempty"`
	// Jobs are the jobs the policy knows, in its own order of service.
	Jobs []JobStatus `json:"jobs"`
	// Counters are policy-specific totals (migrations, spare tasks, kills).
	Counters map[string]int64 `json:"counters,omitempty"`
}

// PartitionStatus is one queue or partition.
type PartitionStatus struct {
	Index int `json:"index"`
	// Capacity is the fraction of slots the partition owns; 0 where queues
	// share the whole cluster.
	Capacity float64 `json:"capacity"`
	// MapSlots and ReduceSlots are the partition's slot caps; 0 where
	// queues share the whole cluster.
	MapSlots    int `json:"map_slots"`
	ReduceSlots int `json:"reduce_slots"`
	// RunningMaps and RunningReduces are the tasks running under it.
	RunningMaps    int `json:"running_maps"`
	RunningReduces int `json:"running_reduces"`
	// Timer is the partition's service limit; 0 when there is none (the
	// last partition, or a dynamic timer not computed).
	Timer time.Duration `json:"timer_ns"`
	// Jobs counts the jobs in the queue.
	Jobs int `json:"jobs"`
}

// PoolStatus is one fair-scheduler pool.
type PoolStatus struct {
	Name             string  `json:"name"`
	Weight           float64 `json:"weight"`
	MinMaps          int     `json:"min_maps"`
	MinReduces       int     `json:"min_reduces"`
	FairShareMaps    float64 `json:"fair_share_maps"`
	FairShareReduces float64 `json:"fair_share_reduces"`
}

// JobStatus is one job as the policy sees it.
type JobStatus struct {
	ID string `json:"id"`
	// Queue is the job's partition or queue (0-based), where the policy
	// has them.
	Queue int `json:"queue"`
	// PartialSize is the service the job received in its current queue.
	PartialSize time.Duration `json:"partial_size_ns"`
	// Service is the total service the job received.
	Service time.Duration `json:"service_ns"`
	Pool    string        `json:"pool,omitempty"`
	// FairShareMaps and FairShareReduces are the fair shares (fair).
	FairShareMaps    float64 `json:"fair_share_maps,omitempty"`
	FairShareReduces float64 `json:"fair_share_reduces,omitempty"`
	// Deadline is the absolute deadline; zero if none.
	Deadline time.Time `json:"deadline"`
	// MinMaps and MinReduces are the deadline quota (minedf, minedf-wc).
	MinMaps    int `json:"min_maps"`
	MinReduces int `json:"min_reduces"`
	// Feasible is false when the quota is the maximum because no
	// allocation meets the deadline (or the job has no profile).
	Feasible bool `json:"feasible"`
}
