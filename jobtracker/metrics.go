package jobtracker

// The JobTracker's Prometheus metrics, served at GET /metrics of its HTTP
// server (docs/metrics.md lists every family). Each JobTracker has its own
// registry (no global state): the gauges and the counters that the
// JobTracker's state already keeps are read under jt.mu at scrape time by
// jtCollector; the histograms and the fetch-failure counter are updated
// where their events happen. The heartbeat path does three histogram
// observations (its duration, its wait for the lock and its hold of it)
// and nothing else: heartbeats received are the first one's count.

import (
	"net/http"
	"runtime"
	"runtime/metrics"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	dto "github.com/prometheus/client_model/go"

	"gomr/internal/promexport"
	"gomr/mr"
	"gomr/partitions"
	"gomr/sched"
)

// jtMetrics are the JobTracker's registry and the metrics updated where
// events happen.
type jtMetrics struct {
	reg *prometheus.Registry
	// heartbeat is the time a Heartbeat call takes, from its arrival to
	// its reply (or refusal).
	heartbeat prometheus.Histogram
	// heartbeatServer is a Heartbeat call's time in the gRPC server, its
	// decoding and encoding included (rpcstats.go), in finer buckets.
	heartbeatServer prometheus.Histogram
	// lockWait is the time a heartbeat waits for its turn under the
	// JobTracker's lock (from its queueing to the start of its answer,
	// combineHeartbeat), lockHeld the time its answer takes under it (the
	// work every other heartbeat and client call queues behind).
	lockWait, lockHeld prometheus.Histogram
	// holdsVec is every hold of the lock by holder (lockholders.go),
	// holds its observer for each holder.
	holdsVec *prometheus.HistogramVec
	holds    [numLockHolders]prometheus.Observer
	// jobDuration is a job's time from submission to its end, by final
	// state; attemptDuration an attempt's from launch to its end, by
	// task type and final state.
	jobDuration     *prometheus.HistogramVec
	attemptDuration *prometheus.HistogramVec
	// fetchFailures counts reducers' fetch-failure reports accepted.
	fetchFailures prometheus.Counter
	// preemptCheckpoints counts checkpoints for preemption by outcome
	// (checkpointed, failed), preemptRestores the resumes of checkpointed
	// tasks by outcome (succeeded, failed, lost: the image's tracker
	// was lost first); checkpointBytes the image and file-set bytes kept
	// (checkpoint.go).
	preemptCheckpoints, preemptRestores *prometheus.CounterVec
	checkpointBytes                     prometheus.Counter
	// splits counts attempts that ended SPLIT, by task type, and
	// scaleUpMaps the maps scale-up splits added (split.go, scaleup.go),
	// scaleUpReduces the reduces (reduce_scaleup.go).
	splits         *prometheus.CounterVec
	scaleUpMaps    prometheus.Counter
	scaleUpReduces prometheus.Counter
}

// newJTMetrics builds the registry of jt: its own collector, the event
// metrics, and the Go runtime and process collectors.
func newJTMetrics(jt *JobTracker) *jtMetrics {
	m := &jtMetrics{
		reg: prometheus.NewRegistry(),
		heartbeat: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "gomr_heartbeat_duration_seconds",
			Help:    "Time the JobTracker took to handle a TaskTracker heartbeat, from its arrival to the reply.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16), // 0.1 ms to 3.3 s
		}),
		lockWait: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "gomr_heartbeat_lock_wait_seconds",
			Help:    "Time a TaskTracker heartbeat waited for its turn under the JobTracker's lock (heartbeats are answered in batches).",
			Buckets: prometheus.ExponentialBuckets(0.000005, 2, 20), // 5 us to 2.6 s
		}),
		lockHeld: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "gomr_heartbeat_lock_held_seconds",
			Help:    "Time a TaskTracker heartbeat's answer took under the JobTracker's lock.",
			Buckets: prometheus.ExponentialBuckets(0.000005, 2, 20),
		}),
		jobDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "gomr_job_duration_seconds",
			Help:    "Time of ended jobs from submission to their end, by final state.",
			Buckets: prometheus.ExponentialBuckets(1, 2, 16), // 1 s to 9 h
		}, []string{"state"}),
		attemptDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "gomr_attempt_duration_seconds",
			Help:    "Time of ended task attempts from launch to their end, by task type and final state.",
			Buckets: prometheus.ExponentialBuckets(0.25, 2, 17), // 0.25 s to 4.5 h
		}, []string{"type", "state"}),
		fetchFailures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gomr_fetch_failures_reported_total",
			Help: "Reducers' reports of a map output they could not fetch, accepted by the JobTracker.",
		}),
		preemptCheckpoints: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gomr_preemption_checkpoints_total",
			Help: "Attempts checkpointed with CRIU for preemption, by outcome (checkpointed; failed: killed instead).",
		}, []string{"outcome"}),
		preemptRestores: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gomr_preemption_restores_total",
			Help: "Checkpointed tasks resumed from their image, by outcome (succeeded; failed or lost: the task restarted from scratch).",
		}, []string{"outcome"}),
		checkpointBytes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gomr_preemption_checkpoint_bytes_total",
			Help: "Bytes (CRIU image plus working-file snapshot) of the checkpoints for preemption made.",
		}),
		splits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gomr_task_splits_total",
			Help: "Task attempts split (Amoeba): a map stopped at a record, a reduce at a key group with its output so far committed as a fragment; by task type.",
		}, []string{"type"}),
		scaleUpMaps: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gomr_scale_up_maps_total",
			Help: "Maps added by scale-up splits (a split map's remainder cut into several maps for idle slots).",
		}),
		scaleUpReduces: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gomr_scale_up_reduces_total",
			Help: "Reduces added by scale-up splits (a split reduce's remaining key groups cut into key ranges run by several reduces for idle slots).",
		}),
	}
	m.holdsVec, m.holds = newLockHoldMetrics()
	m.heartbeatServer = newHeartbeatServerHistogram()
	for _, ty := range []string{"map", "reduce"} {
		m.splits.WithLabelValues(ty)
	}
	for _, o := range []string{"checkpointed", "failed"} {
		m.preemptCheckpoints.WithLabelValues(o)
	}
	for _, o := range []string{"succeeded", "failed", "lost"} {
		m.preemptRestores.WithLabelValues(o)
	}
	m.reg.MustRegister(m.heartbeat, m.heartbeatServer, m.lockWait, m.lockHeld, m.holdsVec, m.jobDuration, m.attemptDuration, m.fetchFailures,
		m.preemptCheckpoints, m.preemptRestores, m.checkpointBytes, m.splits, m.scaleUpMaps, m.scaleUpReduces,
		newJTCollector(jt, m.heartbeat),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// handler serves the registry (promexport.Handler: a failed collector is
// logged, the others served).
func (m *jtMetrics) handler(jt *JobTracker) http.Handler {
	return promexport.Handler(m.reg, jt.log)
}

// typeLabel is the value of the type label of task type t.
func typeLabel(t partitions.TaskType) string {
	if t == partitions.Map {
		return "map"
	}
	return "reduce"
}

// observeAttemptLocked records the duration of attempt a, which has just
// ended (its state and finish are set).
func (jt *JobTracker) observeAttemptLocked(a *attempt) {
	jt.prom.attemptDuration.WithLabelValues(typeLabel(a.task.typ), strings.ToLower(a.state.String())).
		Observe(a.finish.Sub(a.start).Seconds())
}

// observeJobLocked records the duration of job j, which has just ended.
func (jt *JobTracker) observeJobLocked(j *job) {
	jt.prom.jobDuration.WithLabelValues(strings.ToLower(j.state.String())).Observe(j.finish.Sub(j.submit).Seconds())
}

// metricsSnapshot is what jtCollector reports from the JobTracker's state;
// index 0 is map, 1 reduce.
type metricsSnapshot struct {
	jobs                    map[string]int
	retired                 int64
	trackers, blacklisted   int
	lostReplies             int
	slots, running          [2]int
	launched, failed, kills [2]int64
	// occupied counts the slots taken by live attempts, tracker by
	// tracker (at most a tracker's slots); the others are free.
	occupied [2]int
	// pending counts the pending tasks of the running jobs.
	pending [2]int
	// sched is what the policy driver did.
	sched sched.Stats
	// illegal counts refused state changes (lifecycle.go).
	illegal int
	// policy is the policy's own view (nil when it has none), and
	// poolRunning the live attempts of the running jobs by pool.
	policy      *partitions.PolicyStatus
	poolRunning map[string][2]int
}

// metrics takes what the collector reports. The tracker gauges are the
// totals kept as the trackers' published rows change (publish.go), read
// without the lock; the rest is read under it, O(jobs).
func (jt *JobTracker) metrics() metricsSnapshot {
	m := metricsSnapshot{
		jobs: map[string]int{StateRunning: 0, StateSucceeded: 0, StateFailed: 0, StateKilled: 0},
	}
	tot := jt.trackerTotalsNow()
	m.trackers, m.blacklisted = tot.counts.Live, tot.counts.Blacklisted
	m.slots, m.running, m.occupied = tot.slots, tot.running, tot.occupied
	jt.lock(holderMetrics)
	defer jt.unlock()
	m.lostReplies = jt.lostReplies
	m.sched = jt.driver.Stats()
	m.illegal = jt.illegalTransitions
	// The totals are sums over every job the JobTracker has run, taken
	// from the job counters: those of the jobs in memory plus the totals
	// of the retired ones, so that they only grow.
	r := &jt.retire
	m.retired = r.retired
	m.launched, m.failed, m.kills = r.launched, r.failed, r.kills
	for _, s := range r.cache {
		m.jobs[s.state]++
	}
	for _, j := range jt.order {
		m.jobs[j.state.String()]++
		c := j.counters[mr.JobCounterGroup]
		m.launched[0] += c[mr.TotalLaunchedMaps]
		m.launched[1] += c[mr.TotalLaunchedReduces]
		m.failed[0] += c[mr.NumFailedMaps]
		m.failed[1] += c[mr.NumFailedReduces]
		m.kills[0] += c[mr.NumKilledMaps]
		m.kills[1] += c[mr.NumKilledReduces]
	}
	// Policies are pure code driven under jt.mu; Describe returns a copy.
	if d, ok := jt.policy.(partitions.Describer); ok {
		st := d.Describe(jt.now())
		m.policy = &st
		m.poolRunning = map[string][2]int{}
		for _, p := range st.Pools {
			m.poolRunning[p.Name] = [2]int{}
		}
	}
	for _, j := range jt.order {
		if j.done() {
			continue
		}
		m.pending[0] += j.pending[0]
		m.pending[1] += j.pending[1]
		if m.policy != nil && len(m.policy.Pools) > 0 {
			v := m.poolRunning[j.viewPool]
			v[0] += j.live[0]
			v[1] += j.live[1]
			m.poolRunning[j.viewPool] = v
		}
	}
	return m
}

// jtCollector reports the gauges and counters kept in the JobTracker's
// state, read under its lock at scrape time.
type jtCollector struct {
	jt        *JobTracker
	heartbeat prometheus.Histogram

	jobs, retired, trackers, blacklisted, lostReplies          *prometheus.Desc
	offers, refused, preempted, spare, illegal                 *prometheus.Desc
	slots, slotsByState, running, pending                      *prometheus.Desc
	launched, failed, killed, heapLive, goroutines, heartbeats *prometheus.Desc
	poolRunning, poolFairShare, poolMinShare, poolWeight       *prometheus.Desc
	partCapacity, partSlots, partRunning, partJobs, partTimer  *prometheus.Desc
}

func newJTCollector(jt *JobTracker, heartbeat prometheus.Histogram) *jtCollector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, labels, nil)
	}
	return &jtCollector{
		jt: jt, heartbeat: heartbeat,
		jobs:        d("gomr_jobs", "Jobs the JobTracker lists (in memory, or retired and cached), by state.", "state"),
		retired:     d("gomr_jobs_retired_total", "Completed jobs retired from the JobTracker's memory."),
		trackers:    d("gomr_trackers", "Live TaskTrackers."),
		blacklisted: d("gomr_trackers_blacklisted", "Live TaskTrackers blacklisted across all jobs (they get no task)."),
		lostReplies: d("gomr_heartbeat_replies_lost_total", "Heartbeat replies a TaskTracker did not get (their actions were sent again)."),
		heartbeats:  d("gomr_heartbeats_received_total", "TaskTracker heartbeats received (the count of gomr_heartbeat_duration_seconds)."),
		offers:      d("gomr_policy_offers_total", "Slot offers made to the scheduling policy."),
		refused:     d("gomr_policy_decisions_refused_total", "Policy decisions refused whole for breaking a rule (a policy bug; the log names the rule)."),
		preempted:   d("gomr_policy_preempted_total", "Attempts killed for the policy's preemptions, by task type.", "type"),
		spare:       d("gomr_policy_spare_launches_total", "Attempts launched on slots lent beyond a job's quota (MinEDF-WC), by task type.", "type"),
		illegal:     d("gomr_jobtracker_illegal_state_changes_total", "State changes of jobs, tasks and attempts refused as illegal (a bug; the log names both states)."),
		slots:       d("gomr_slots", "Task slots of the live TaskTrackers, by task type.", "type"),
		slotsByState: d("gomr_slots_by_state", "Task slots of the live TaskTrackers by task type and state: occupied by a live attempt, or free.",
			"type", "state"),
		running:    d("gomr_running_attempts", "Live task attempts, by task type.", "type"),
		pending:    d("gomr_pending_tasks", "Tasks of running jobs waiting for a slot, by task type.", "type"),
		launched:   d("gomr_tasks_launched_total", "Task attempts launched, by task type.", "type"),
		failed:     d("gomr_attempts_failed_total", "Task attempts failed, by task type.", "type"),
		killed:     d("gomr_attempts_killed_total", "Task attempts killed (preempted, lost, superseded), by task type.", "type"),
		heapLive:   d("gomr_jobtracker_heap_live_bytes", "The JobTracker's live heap as of its latest garbage collection (Go's /gc/heap/live:bytes)."),
		goroutines: d("gomr_jobtracker_goroutines", "Goroutines of the JobTracker process."),
		poolRunning: d("gomr_pool_running_tasks", "Live task attempts of the running jobs of each pool, by task type (policies with pools).",
			"pool", "type"),
		poolFairShare: d("gomr_pool_fair_share", "Fair share of each pool in slots, by task type (policies with pools).", "pool", "type"),
		poolMinShare:  d("gomr_pool_min_share", "Minimum share of each pool in slots, by task type (policies with pools).", "pool", "type"),
		poolWeight:    d("gomr_pool_weight", "Weight of each pool (policies with pools).", "pool"),
		partCapacity: d("gomr_partition_capacity_ratio", "Fraction of the slots each partition owns, 0 where queues share the cluster (policies with partitions).",
			"partition"),
		partSlots: d("gomr_partition_slots", "Slot cap of each partition by task type, 0 where queues share the cluster (policies with partitions).",
			"partition", "type"),
		partRunning: d("gomr_partition_running_tasks", "Tasks running under each partition, by task type (policies with partitions).",
			"partition", "type"),
		partJobs: d("gomr_partition_jobs", "Jobs in each partition or queue (policies with partitions).", "partition"),
		partTimer: d("gomr_partition_timer_seconds", "Service limit of each partition, 0 when it has none (policies with partitions).",
			"partition"),
	}
}

// Describe sends every descriptor of the collector.
func (c *jtCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.jobs, c.retired, c.trackers, c.blacklisted, c.lostReplies, c.heartbeats,
		c.offers, c.refused, c.preempted, c.spare, c.illegal, c.slots, c.slotsByState, c.running, c.pending,
		c.launched, c.failed, c.killed, c.heapLive, c.goroutines, c.poolRunning, c.poolFairShare, c.poolMinShare,
		c.poolWeight, c.partCapacity, c.partSlots, c.partRunning, c.partJobs, c.partTimer} {
		ch <- d
	}
}

// Collect reads the JobTracker's state once, under its lock, and sends
// the metrics derived from it.
func (c *jtCollector) Collect(ch chan<- prometheus.Metric) {
	m := c.jt.metrics()
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	byType := func(d *prometheus.Desc, kind prometheus.ValueType, v [2]float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, kind, v[0], append(labels, "map")...)
		ch <- prometheus.MustNewConstMetric(d, kind, v[1], append(labels, "reduce")...)
	}
	ints := func(v [2]int) [2]float64 { return [2]float64{float64(v[0]), float64(v[1])} }
	int64s := func(v [2]int64) [2]float64 { return [2]float64{float64(v[0]), float64(v[1])} }

	for s, n := range m.jobs {
		gauge(c.jobs, float64(n), strings.ToLower(s))
	}
	counter(c.retired, float64(m.retired))
	gauge(c.trackers, float64(m.trackers))
	gauge(c.blacklisted, float64(m.blacklisted))
	counter(c.lostReplies, float64(m.lostReplies))
	var h dto.Metric
	if err := c.heartbeat.Write(&h); err == nil {
		counter(c.heartbeats, float64(h.GetHistogram().GetSampleCount()))
	}
	counter(c.offers, float64(m.sched.Offers))
	counter(c.refused, float64(m.sched.Refused))
	byType(c.preempted, prometheus.CounterValue, ints(m.sched.Preempted))
	byType(c.spare, prometheus.CounterValue, ints(m.sched.Spare))
	counter(c.illegal, float64(m.illegal))
	byType(c.slots, prometheus.GaugeValue, ints(m.slots))
	for i, typ := range []string{"map", "reduce"} {
		gauge(c.slotsByState, float64(m.occupied[i]), typ, "occupied")
		gauge(c.slotsByState, float64(m.slots[i]-m.occupied[i]), typ, "free")
	}
	byType(c.running, prometheus.GaugeValue, ints(m.running))
	byType(c.pending, prometheus.GaugeValue, ints(m.pending))
	byType(c.launched, prometheus.CounterValue, int64s(m.launched))
	byType(c.failed, prometheus.CounterValue, int64s(m.failed))
	byType(c.killed, prometheus.CounterValue, int64s(m.kills))
	gauge(c.heapLive, float64(heapLiveBytes()))
	gauge(c.goroutines, float64(runtime.NumGoroutine()))

	if p := m.policy; p != nil {
		for _, pool := range p.Pools {
			byType(c.poolFairShare, prometheus.GaugeValue, [2]float64{pool.FairShareMaps, pool.FairShareReduces}, pool.Name)
			byType(c.poolMinShare, prometheus.GaugeValue, [2]float64{float64(pool.MinMaps), float64(pool.MinReduces)}, pool.Name)
			gauge(c.poolWeight, pool.Weight, pool.Name)
		}
		pools := make([]string, 0, len(m.poolRunning))
		for name := range m.poolRunning {
			pools = append(pools, name)
		}
		sort.Strings(pools)
		for _, name := range pools {
			byType(c.poolRunning, prometheus.GaugeValue, ints(m.poolRunning[name]), name)
		}
		for _, part := range p.Partitions {
			i := strconv.Itoa(part.Index)
			gauge(c.partCapacity, part.Capacity, i)
			byType(c.partSlots, prometheus.GaugeValue, [2]float64{float64(part.MapSlots), float64(part.ReduceSlots)}, i)
			byType(c.partRunning, prometheus.GaugeValue, [2]float64{float64(part.RunningMaps), float64(part.RunningReduces)}, i)
			gauge(c.partJobs, float64(part.Jobs), i)
			gauge(c.partTimer, part.Timer.Seconds(), i)
		}
	}
}

// heapLiveBytes is the heap the latest garbage collection found live:
// unlike MemStats.HeapAlloc it does not include garbage not collected yet,
// so it tells how much the JobTracker keeps (docs/reliability.md).
func heapLiveBytes() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// sinceSeconds is the time since start in seconds, on the real clock
// (the heartbeat latency is real time even when a test sets jt.now).
func sinceSeconds(start time.Time) float64 { return time.Since(start).Seconds() }
