package jobtracker

import (
	"context"
	"runtime/trace"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Who holds the JobTracker's lock, and for how long: every taker of jt.mu
// outside tests names itself (jt.lock), and the release (jt.unlockEarly)
// observes the hold in gomr_jobtracker_lock_held_seconds under that name.
// Heartbeats queue behind every hold, so a long one of any holder is a
// heartbeat's latency (docs/scaling.md).

// lockHolder names a taker of the JobTracker's lock.
type lockHolder uint8

// The takers of the lock. A name covers one concept (several call sites
// where they do the same kind of thing).
const (
	// holderHeartbeat is a batch of heartbeats answered under one hold
	// (combineHeartbeat), and the check of a previous tracker process.
	holderHeartbeat lockHolder = iota
	// holderSubmit is SubmitJob.
	holderSubmit
	// holderClientStatus is GetJobStatus, a client's poll.
	holderClientStatus
	// holderClientList is ListJobs and the other calls over every job,
	// taken a chunk of jobs at a time.
	holderClientList
	// holderClient is the other client calls (kill, priority, history,
	// attempts, split, checkpoint, task logs, ACL checks).
	holderClient
	// holderTrackerRPC is the trackers' calls other than Heartbeat:
	// GetMapEvents, fetch failures, CanCommit.
	holderTrackerRPC
	// holderWebUI is the status pages and the JSON API.
	holderWebUI
	// holderMetrics is a scrape of /metrics.
	holderMetrics
	// holderExpiry is the tracker expiry pass.
	holderExpiry
	// holderSpeculator is the speculator's scan.
	holderSpeculator
	// holderJobEnd is a job's end after its output commit (endJobLocked:
	// attempts killed, the policy told, the history record built).
	holderJobEnd
	// holderHistoryWritten is the bookkeeping once a job's history file
	// is written (the job's profile learnt).
	holderHistoryWritten
	// holderRetire is the retirement of completed jobs, and the lookup of
	// a retired one.
	holderRetire
	// holderRecovery is the recovery of jobs at start.
	holderRecovery
	numLockHolders
)

// lockHolderNames are the holder label's values, by lockHolder.
var lockHolderNames = [numLockHolders]string{
	holderHeartbeat:      "heartbeat",
	holderSubmit:         "submit",
	holderClientStatus:   "client_status",
	holderClientList:     "client_list",
	holderClient:         "client_other",
	holderTrackerRPC:     "tracker_rpc",
	holderWebUI:          "web_ui",
	holderMetrics:        "metrics",
	holderExpiry:         "expiry",
	holderSpeculator:     "speculator",
	holderJobEnd:         "job_end",
	holderHistoryWritten: "history_written",
	holderRetire:         "retire",
	holderRecovery:       "recovery",
}

// String is the holder's label value.
func (h lockHolder) String() string { return lockHolderNames[h] }

// newLockHoldMetrics is gomr_jobtracker_lock_held_seconds and its
// observer for each holder, made once so that a release looks up no
// label.
func newLockHoldMetrics() (*prometheus.HistogramVec, [numLockHolders]prometheus.Observer) {
	vec := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "gomr_jobtracker_lock_held_seconds",
		Help:    "Time the JobTracker's lock was held, by holder (heartbeat: a batch of heartbeats answered under one hold).",
		Buckets: prometheus.ExponentialBuckets(0.000005, 2, 20), // 5 us to 2.6 s
	}, []string{"holder"})
	var obs [numLockHolders]prometheus.Observer
	for h := range numLockHolders {
		obs[h] = vec.WithLabelValues(h.String())
	}
	return vec, obs
}

// lockRegionNames are the execution trace's region names of the holds,
// by holder ("jobtracker.lock.heartbeat"...), made once.
var lockRegionNames = func() (names [numLockHolders]string) {
	for h := range numLockHolders {
		names[h] = "jobtracker.lock." + h.String()
	}
	return names
}()

// lock takes the JobTracker's lock for holder h; the release (jt.unlock or
// jt.unlockEarly) records how long h held it. While an execution trace is
// being taken (mr jobtracker --pprof, /debug/pprof/trace), the hold is
// also a trace region named after its holder, so that a long hold can be
// told apart in the trace: its goroutine running, waiting for a CPU, in a
// system call or assisting the garbage collector.
func (jt *JobTracker) lock(h lockHolder) {
	jt.mu.Lock()
	jt.holder, jt.lockedAt = h, time.Now()
	if trace.IsEnabled() {
		jt.region = trace.StartRegion(context.Background(), lockRegionNames[h])
	}
}

// longHold is the hold of the lock that is logged with its holder (and,
// for a batch of heartbeats, their number): at 3,333 heartbeats a second,
// one such hold makes hundreds of heartbeats wait as long.
const longHold = 100 * time.Millisecond

// endHoldLocked ends the timing of the current hold, if jt.lock started
// one (a test's own jt.mu.Lock does not), and returns its observation to
// make once the lock is released; a hold of longHold or more is logged
// (the log only queues the record: logqueue.go).
func (jt *JobTracker) endHoldLocked() (obs prometheus.Observer, held time.Duration) {
	if jt.lockedAt.IsZero() {
		return nil, 0
	}
	held = time.Since(jt.lockedAt)
	jt.lockedAt = time.Time{}
	if jt.region != nil {
		jt.region.End()
		jt.region = nil
	}
	if held >= longHold {
		args := []any{"holder", jt.holder.String(), "held", held.Round(time.Microsecond)}
		if jt.holder == holderHeartbeat {
			args = append(args, "heartbeats", jt.batchSize)
		}
		jt.log.Warn("long hold of the JobTracker's lock", args...)
	}
	return jt.prom.holds[jt.holder], held
}
