package tasktracker

// The TaskTracker's Prometheus metrics, served at GET /metrics of its HTTP
// server (the shuffle server; with TLS on, to jobtracker and tasktracker
// certificates only). docs/metrics.md lists every family. Each tracker has
// its own registry: the slot and attempt gauges are read under its lock at
// scrape time by ttCollector; the counters and the histogram are updated
// where their events happen.

import (
	"net/http"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"gomr/internal/promexport"
	"gomr/mr"
	"gomr/mrpb"
	"gomr/shuffle"
)

// MetricsPath is the path of the tracker's metrics on its HTTP server.
const MetricsPath = "/metrics"

// ttMetrics are a tracker's registry and the metrics updated where events
// happen.
type ttMetrics struct {
	reg *prometheus.Registry
	// started counts attempts registered (launches and clones), by task
	// type; ended counts them by type and final state.
	started *prometheus.CounterVec
	ended   *prometheus.CounterVec
	// shuffleBytes counts segment bytes served, shuffleRequests the
	// shuffle requests by outcome (shuffle.Outcome*).
	shuffleBytes    prometheus.Counter
	shuffleRequests *prometheus.CounterVec
	// shuffleEntries counts the index entries the shuffle server sent to
	// reduces told of spills without their segments.
	shuffleEntries prometheus.Counter
	// fetchedBytes adds up the REDUCE_SHUFFLE_BYTES of ended reduce
	// attempts.
	fetchedBytes prometheus.Counter
	// spills counts spill announcements of the map children.
	spills prometheus.Counter
	// clones counts clones made here by outcome, checkpoints the
	// checkpoints sent to other trackers' clones by outcome.
	clones, checkpoints *prometheus.CounterVec
	// preemptions counts checkpoints for preemption by outcome
	// (checkpointed, failed), restores the restores of preempted attempts
	// by outcome (succeeded, failed); imageBytes the bytes (image plus
	// file set) of the checkpoints kept.
	preemptions, restores *prometheus.CounterVec
	imageBytes            prometheus.Counter
	// heartbeat is the round trip of heartbeats answered; lostReplies
	// counts the heartbeats that got no reply.
	heartbeat   prometheus.Histogram
	lostReplies prometheus.Counter
}

func newTTMetrics(tt *TaskTracker) *ttMetrics {
	m := &ttMetrics{
		reg: prometheus.NewRegistry(),
		started: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gomr_tasktracker_attempts_started_total",
			Help: "Task attempts this tracker was given (launches and clones), by task type.",
		}, []string{"type"}),
		ended: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gomr_tasktracker_attempts_ended_total",
			Help: "Task attempts of this tracker that ended, by task type and final state (succeeded, failed, killed, checkpointed).",
		}, []string{"type", "state"}),
		shuffleBytes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gomr_tasktracker_shuffle_served_bytes_total",
			Help: "Map output bytes this tracker's shuffle server sent to reducers.",
		}),
		shuffleEntries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gomr_tasktracker_shuffle_index_entries_total",
			Help: "Index entries this tracker's shuffle server sent to reducers whose JobTracker announced spills without their segments (mapreduce.jobtracker.map-events.max-segments).",
		}),
		shuffleRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gomr_tasktracker_shuffle_requests_total",
			Help: "Requests to this tracker's shuffle server, by outcome (served, cut_short, unauthorized, bad_request, not_found, error).",
		}, []string{"outcome"}),
		fetchedBytes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gomr_tasktracker_shuffle_fetched_bytes_total",
			Help: "Map output bytes fetched by this tracker's reduce attempts (their REDUCE_SHUFFLE_BYTES, added when an attempt ends).",
		}),
		spills: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gomr_tasktracker_spills_announced_total",
			Help: "Spills the map attempts of this tracker announced (sent to the JobTracker in heartbeats).",
		}),
		clones: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gomr_tasktracker_clones_total",
			Help: "Attempts cloned onto this tracker from a running attempt's checkpoint, by outcome (succeeded, failed).",
		}, []string{"outcome"}),
		checkpoints: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gomr_tasktracker_checkpoints_total",
			Help: "Checkpoints of this tracker's running attempts asked for by other trackers' clones, by outcome (sent, failed).",
		}, []string{"outcome"}),
		preemptions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gomr_tasktracker_preemption_checkpoints_total",
			Help: "Attempts of this tracker checkpointed for preemption (dumped with CRIU, image kept), by outcome (checkpointed, failed: killed instead).",
		}, []string{"outcome"}),
		restores: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gomr_tasktracker_preemption_restores_total",
			Help: "Preempted attempts restored on this tracker from their checkpoint, by outcome (succeeded, failed).",
		}, []string{"outcome"}),
		imageBytes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gomr_tasktracker_preemption_checkpoint_bytes_total",
			Help: "Bytes (CRIU image plus working-file snapshot) of the checkpoints for preemption this tracker made.",
		}),
		heartbeat: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "gomr_tasktracker_heartbeat_rtt_seconds",
			Help:    "Round trip of this tracker's heartbeats that the JobTracker answered.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16), // 0.5 ms to 16 s
		}),
		lostReplies: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gomr_tasktracker_heartbeat_replies_lost_total",
			Help: "Heartbeats of this tracker that got no reply (an error or a time-out; they are sent again).",
		}),
	}
	// Every label value known in advance is there from the start, at 0.
	for _, typ := range []string{"map", "reduce"} {
		m.started.WithLabelValues(typ)
		for _, st := range []string{"succeeded", "failed", "killed", "checkpointed"} {
			m.ended.WithLabelValues(typ, st)
		}
	}
	for _, o := range []string{shuffle.OutcomeServed, shuffle.OutcomeCutShort, shuffle.OutcomeUnauthorized,
		shuffle.OutcomeBadRequest, shuffle.OutcomeNotFound, shuffle.OutcomeError} {
		m.shuffleRequests.WithLabelValues(o)
	}
	for _, o := range []string{"succeeded", "failed"} {
		m.clones.WithLabelValues(o)
	}
	for _, o := range []string{"sent", "failed"} {
		m.checkpoints.WithLabelValues(o)
	}
	for _, o := range []string{"checkpointed", "failed"} {
		m.preemptions.WithLabelValues(o)
	}
	for _, o := range []string{"succeeded", "failed"} {
		m.restores.WithLabelValues(o)
	}
	m.reg.MustRegister(m.started, m.ended, m.shuffleBytes, m.shuffleRequests, m.shuffleEntries, m.fetchedBytes, m.spills,
		m.clones, m.checkpoints, m.preemptions, m.restores, m.imageBytes, m.heartbeat, m.lostReplies,
		newTTCollector(tt),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// handler serves the registry (promexport.Handler: a failed collector is
// logged, the others served).
func (m *ttMetrics) handler(tt *TaskTracker) http.Handler {
	return promexport.Handler(m.reg, tt.log)
}

// typeLabel is the type label of a launch's type ("m" or "r").
func typeLabel(launchType string) string {
	if launchType == "m" {
		return "map"
	}
	return "reduce"
}

// attemptEnded counts an attempt that has just ended in state (SUCCEEDED,
// FAILED or KILLED) with its last counters. It takes no lock: callers
// call it under the attempt's, so that the end is counted before any
// heartbeat reports it.
func (m *ttMetrics) attemptEnded(l *mrpb.LaunchTask, state string, counters []*mrpb.Counter) {
	m.ended.WithLabelValues(typeLabel(l.Type), strings.ToLower(state)).Inc()
	if l.Type != "r" {
		return
	}
	for _, c := range counters {
		if c.Group == mr.TaskCounterGroup && c.Name == mr.ReduceShuffleBytes && c.Value > 0 {
			m.fetchedBytes.Add(float64(c.Value))
		}
	}
}

// ttCollector reports the tracker's slots and live attempts, read under
// its lock at scrape time.
type ttCollector struct {
	tt                      *TaskTracker
	slots, running, crQueue *prometheus.Desc
}

func newTTCollector(tt *TaskTracker) *ttCollector {
	return &ttCollector{
		tt: tt,
		slots: prometheus.NewDesc("gomr_tasktracker_slots",
			"Task slots of this tracker by task type and state: occupied by a live attempt, or free.", []string{"type", "state"}, nil),
		running: prometheus.NewDesc("gomr_tasktracker_running_attempts",
			"Live task attempts of this tracker (started and not ended), by task type.", []string{"type"}, nil),
		crQueue: prometheus.NewDesc("gomr_tasktracker_cr_queue_operations",
			"CRIU dumps and restores of this tracker waiting or running (they run one at a time).", nil, nil),
	}
}

// Describe sends the collector's descriptors.
func (c *ttCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.slots
	ch <- c.running
	ch <- c.crQueue
}

// Collect counts the live attempts by type under the tracker's lock, as
// a heartbeat does.
func (c *ttCollector) Collect(ch chan<- prometheus.Metric) {
	tt := c.tt
	var live, busy [2]int
	tt.mu.Lock()
	for _, a := range tt.attempts {
		a.mu.Lock()
		state, released := a.state, a.slotReleased
		a.mu.Unlock()
		if terminal(state) {
			continue
		}
		i := boolIndex(a.launch.Type != "m")
		live[i]++
		if !released {
			busy[i]++
		}
	}
	slots := [2]int{tt.mapSlots, tt.reduceSlots}
	tt.mu.Unlock()
	ops, _ := tt.cr.stats()
	ch <- prometheus.MustNewConstMetric(c.crQueue, prometheus.GaugeValue, float64(ops))
	for i, typ := range []string{"map", "reduce"} {
		occupied := min(busy[i], slots[i])
		ch <- prometheus.MustNewConstMetric(c.slots, prometheus.GaugeValue, float64(occupied), typ, "occupied")
		ch <- prometheus.MustNewConstMetric(c.slots, prometheus.GaugeValue, float64(slots[i]-occupied), typ, "free")
		ch <- prometheus.MustNewConstMetric(c.running, prometheus.GaugeValue, float64(live[i]), typ)
	}
}
