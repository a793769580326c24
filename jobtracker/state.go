package jobtracker

import (
	"container/list"
	"fmt"
	"time"

	"gomr/conf"
	"gomr/mr"
	"gomr/mrpb"
	"gomr/partitions"
	"gomr/speculator"
)

// Job, task and attempt states, as Hadoop names them.
const (
	StatePrep          = "PREP"
	StateRunning       = "RUNNING"
	StateSucceeded     = "SUCCEEDED"
	StateFailed        = "FAILED"
	StateKilled        = "KILLED"
	StatePending       = "PENDING"
	StateCommitPending = "COMMIT_PENDING"
)

// job is one submitted job and everything the JobTracker knows of it.
type job struct {
	id      string
	spec    mr.JobSpec
	conf    *conf.Config
	confMap map[string]string
	// specJSON is spec as launches carry it, marshalled at the first.
	specJSON []byte
	secret   []byte
	splits   []mr.Split
	priority int

	state   jobState
	err     string
	submit  time.Time
	start   time.Time
	finish  time.Time
	maps    []*task
	reduces []*task

	finishedMaps, finishedReduces int
	// committing is set while the job's output is being committed.
	committing bool

	// counters holds the job counters (launched, failed, killed, millis).
	counters mr.CounterSet

	// Per-spill shuffle bookkeeping: the event log reducers read, the
	// attempt whose announcement of (map, spill) is the one reducers use,
	// and a channel closed whenever events are appended.
	events  mapEventLog
	winners map[spillKey]*attempt
	notify  chan struct{}
	// spillsOnly: the job's spill events name the spill without the
	// reduces' segments of it, which reduces read from the serving
	// tracker's index (mapreduce.jobtracker.map-events.max-segments).
	spillsOnly bool
	// mapsDone is closed once every map of the job has finished, for the
	// event polls that batch events while maps run (mapsDoneLocked); nil
	// until a poll asks for it, and again when a map must run again or
	// maps are added.
	mapsDone       chan struct{}
	mapsDoneClosed bool

	// fetchFailures counts reducers' fetch-failure reports per map attempt.
	fetchFailures map[string]int
	// trackers that ran any of the job's attempts: they get a purge order.
	trackers map[string]bool

	// speculator judges the job's stragglers (its parameters come from the
	// job's configuration); speculations are its decisions, in order.
	speculator *speculator.Speculator
	// specScan is the speculator's view of the job, rebuilt each scan in
	// buffers kept from the last (speculation.go).
	specScan     specScratch
	speculations []*speculation

	// trackerFailures counts the job's failed attempts by tracker;
	// flakyTrackers is how many trackers reached the per-tracker limit
	// (blacklist.go).
	trackerFailures map[string]int
	flakyTrackers   int

	// What the policy's view of the job counts, kept as states change
	// (lifecycle.go) so that a view costs the same however many tasks
	// the job has: tasks pending and attempts live, by type; pending maps
	// by host of their split; tasks whose speculative attempt waits for a
	// slot; the job's pool and deadline and its input bytes.
	pending, live [2]int
	localPending  map[string]int
	// pendingFrom is, per task type, an index below which no task is
	// pending (pickTaskLocked's scan starts there); images counts the
	// tasks holding a checkpoint image to resume from.
	pendingFrom [2]int
	// hostMaps are the maps whose split is on each host, by index
	// (built at the first pick, hostMapsLocked); hostFrom is, per host, a
	// map index below which none of them is pending.
	hostMaps       map[string][]int32
	hostMapsUpTo   int
	hostFrom       map[string]int
	images         int
	specWaiting    map[*task]bool
	viewPool       string
	viewDeadline   time.Time
	viewInputBytes int64
	// vc is the view cache that holds the job's view (viewcache.go), nil
	// until the job is in it; viewIdx is the view's index there;
	// viewStale says the job is in vc's stale list, viewPerOffer in its
	// list of views rebuilt per offer.
	vc           *viewCache
	viewIdx      int
	viewStale    bool
	viewPerOffer bool
	// Likewise for the job's status: tasks by type and state, the tasks
	// running, and the summed counters of the tasks' successful attempts.
	byState      [2][taskKilled + 1]int
	active       map[*task]bool
	doneCounters mr.CounterSet
	// runProgress and runCounters are the running tasks' progress by
	// type and their counters, summed (running.go).
	runProgress [2]float64
	runCounters mr.CounterSet
	// cached are configuration values read on every offer (settings).
	cached jobSettings
	// finished are the succeeded tasks' durations by type, for the
	// speculator (speculation.go).
	finished [2]finishedDurations

	// history says where the job's history file stands once the job
	// ended; historyDone is closed when its first write ended.
	history     historyState
	historyDone chan struct{}

	// progressSeries is the job's map and reduce progress over time
	// (samples.go).
	progressSeries series[progressSample]

	// recoveryDeadline is set on a job recovered after a restart while
	// maps it kept wait for their trackers to confirm their output
	// (recovery.go).
	recoveryDeadline time.Time
}

type spillKey struct{ mapTask, spill int }

// historyState is where an ended job's history file stands.
type historyState uint8

const (
	historyNone      historyState = iota // the job has not ended
	historyWriting                       // being written (jobend.go)
	historyWritten                       // written
	historyUnwritten                     // the write failed: the retirement pass retries it
)

func (j *job) done() bool {
	return j.state.final()
}

func (j *job) tasks(t partitions.TaskType) []*task {
	if t == partitions.Map {
		return j.maps
	}
	return j.reduces
}

// reducesReady applies mapreduce.job.reduce.slowstart.completedmaps.
func (j *job) reducesReady() bool {
	if len(j.maps) == 0 {
		return true
	}
	need := j.settings().slowstart * float64(len(j.maps))
	return float64(j.finishedMaps) >= need
}

// jobSettings are the job's configuration values read on every offer
// (every heartbeat looks at every running job): parsed once, not looked up
// and parsed per job per heartbeat (with 1,000 jobs that was most of a
// heartbeat's time).
type jobSettings struct {
	read               bool
	slowstart          float64
	maxTrackerFailures int
	blacklistMaxShare  float64
	// deadline is mapreduce.job.deadline.seconds (0: none).
	deadline float64
}

// settings reads the job's settings at the first call; a job's
// configuration does not change once submitted.
func (j *job) settings() *jobSettings {
	if s := &j.cached; !s.read {
		s.slowstart = j.conf.Float("mapreduce.job.reduce.slowstart.completedmaps")
		s.maxTrackerFailures = j.conf.Int("mapreduce.job.maxtaskfailures.per.tracker")
		s.blacklistMaxShare = j.conf.Float("mapreduce.job.blacklist.max.percent")
		s.deadline = j.conf.Float("mapreduce.job.deadline.seconds")
		s.read = true
	}
	return &j.cached
}

// appendEvent adds ev, whose spill's segments are segs (zero: none), to the
// job's map events, and wakes the polls waiting for one.
func (j *job) appendEvent(ev *mrpb.MapEvent, segs packedSpill) {
	j.events.append(j.id, ev, segs)
	close(j.notify)
	j.notify = make(chan struct{})
}

// task is one map or reduce task.
type task struct {
	job      *job
	typ      partitions.TaskType
	index    int
	state    taskState
	attempts []*attempt
	failures int
	// failedOn lists trackers an attempt of this task failed on.
	failedOn   map[string]bool
	successful *attempt
	// commitGrant is the attempt allowed to commit its output.
	commitGrant *attempt
	lastError   string
	// specPending is the task's speculative attempt, from the speculator's
	// decision until the task or either attempt ends; speculated is set
	// once the task has had one (Hadoop's mayHaveSpeculated).
	specPending *speculation
	speculated  bool
	// nextAttempt numbers the task's next attempt (from 1000 times the
	// restarts for a recovered job).
	nextAttempt int
	// image is the checkpoint a preempted task resumes from (nil: none;
	// checkpoint.go).
	image *taskImage
	// split holds a map task's recorded split points (split.go); nil
	// until it is first split.
	split *taskSplit
	// sortMB is a map task's pinned sort buffer (MiB): the one its first
	// announced spill was cut with, which every later attempt is launched
	// with (LaunchTask.sort_mb), so that it cuts the same spills whatever
	// its tracker's memory budget; 0 until a spill is announced.
	sortMB int32
	// withdrawn is, by spill index, the attempt of this map whose
	// announcement of that spill reducers were first told of, once it was
	// withdrawn (obsoleteMapOutputLocked); nil until a withdrawal. A later
	// attempt's spills are compared with it (noteRerunLocked).
	withdrawn map[int]*attempt
	// rerunKills counts a reduce task's attempts that stopped because a
	// map's re-run contradicted spills they fetched (rerunKillExcusedLocked).
	rerunKills int
	// run is the task's part of its job's running totals (running.go).
	run runningShare
	// finishedAt is 1 + its index in job.finished while it counts there
	// (0: it does not).
	finishedAt int
	// viewIDCache is id(), kept by viewID for the speculator's scans.
	viewIDCache string
}

func (t *task) id() string {
	return fmt.Sprintf("task_%s_%s_%06d", trimJob(t.job.id), typeLetter(t.typ), t.index)
}

// viewID is id(), made once: the speculator's view names every running
// task of a job in its last wave on every scan. Under the lock only (it
// sets the cache).
func (t *task) viewID() string {
	if t.viewIDCache == "" {
		t.viewIDCache = t.id()
	}
	return t.viewIDCache
}

// setSpec makes s the task's pending speculation (nil: none), keeping the
// job's set of tasks whose speculative attempt waits for a slot.
func (t *task) setSpec(s *speculation) {
	t.job.viewChanged()
	t.specPending = s
	if s != nil && s.attempt == nil {
		t.job.specWaiting[t] = true
	} else {
		delete(t.job.specWaiting, t)
	}
}

func (t *task) running() []*attempt {
	var out []*attempt
	for _, a := range t.attempts {
		if a.live() {
			out = append(out, a)
		}
	}
	return out
}

// progress is the task's progress: 1 when done, else its best attempt's.
func (t *task) progress() float64 {
	if t.state == taskSucceeded {
		return 1
	}
	best := 0.0
	for _, a := range t.attempts {
		if a.live() && float64(a.progress) > best {
			best = float64(a.progress)
		}
	}
	return best
}

// attempt is one run of a task on a tracker.
type attempt struct {
	id string
	// num is the attempt's number within its task (the last part of id).
	num      int
	task     *task
	tracker  string
	state    attemptState
	progress float32
	phase    string
	// counters are the attempt's last reported counters
	// (mr.PackedCounters).
	counters                  mr.PackedCounters
	diag                      string
	start                     time.Time
	finish                    time.Time
	shuffleFinish, sortFinish time.Time
	// spills holds the map attempt's announced spills by index (nil
	// until the first).
	spills map[int]packedSpill
	final  int // index of the final spill, -1 until announced
	// obsolete is set when the attempt's map output can no longer be
	// fetched (lost tracker, too many fetch failures).
	obsolete    bool
	shuffleAddr string
	// rerunDiffers is set once the attempt's spills were found to differ
	// from a withdrawn attempt's (counted once).
	rerunDiffers bool

	// Speculation inputs: whether this is a speculative attempt, when its
	// last status arrived and when its progress last changed, the progress
	// it started from (a clone's), and the sizes a clone of it would move.
	speculative     bool
	reportAt        time.Time
	progressChanged time.Time
	startProgress   float64
	// rate is the smoothed progress rate (speculator.SmoothRate) as of
	// the report at rateAt with progress rateP.
	rate         float64
	rateP        float64
	rateAt       time.Time
	rssBytes     int64
	fileSetBytes int64
	// cloned is set once an attempt made by cloning is running and its
	// cost was counted; cloneCost is that cost (dump, copy and restore).
	cloned    bool
	cloneCost time.Duration
	// cloneable is the tracker's last word on whether it can clone the
	// attempt now.
	cloneable bool
	// sentIn is the id of the first heartbeat reply that carried the
	// attempt's launch to its tracker (0 until one did).
	sentIn int64
	// countersVer counts the reports that replaced counters (running.go).
	countersVer uint64
	// unacked is its element in the launches not yet acknowledged
	// (expiry.go), nil once acknowledged or ended.
	unacked *list.Element
	// unconfirmed marks a map output kept by recovery whose tracker has
	// not yet confirmed it still holds it.
	unconfirmed bool
	// ckpt is the attempt's part in preemption by checkpoint (nil: none;
	// checkpoint.go).
	ckpt *attemptCkpt
	// split is where a map attempt of a split task started, and whether
	// and where it was split (split.go); nil for a map never split.
	split *attemptSplitInfo
}

func (a *attempt) live() bool { return a.state.live() }

func typeLetter(t partitions.TaskType) string {
	if t == partitions.Map {
		return "m"
	}
	return "r"
}

func trimJob(jobID string) string { return jobID[len("job_"):] }

func attemptID(t *task, n int) string {
	return fmt.Sprintf("attempt_%s_%s_%06d_%d", trimJob(t.job.id), typeLetter(t.typ), t.index, n)
}

// trackerState is what the JobTracker knows of a live TaskTracker.
type trackerState struct {
	name, host, shuffleAddr string
	mapSlots, reduceSlots   int
	lastSeen                time.Time
	actions                 []*mrpb.TaskAction
	attempts                map[string]*attempt
	criu                    bool

	// Identity: the process that registered the name (its own random
	// instance id, its address as the JobTracker saw it, when), and the
	// incarnation issued to it, which its heartbeats must carry.
	instance, incarnation, peer string
	registered                  time.Time
	// Replies: the id of the last reply sent, the highest id the tracker
	// acknowledged, the actions sent and not yet acknowledged, and how
	// many replies were lost.
	replyID, acked int64
	unacked        []pendingAction
	lostReplies    int
	// crQueue and crWait are the tracker's checkpoint/restore queue as
	// its last heartbeat reported it: operations waiting or running, and
	// the expected wait of a new one.
	crQueue int
	crWait  time.Duration
	// blacklisted: the tracker gets no task of any job (blacklist.go).
	blacklisted     bool
	blacklistReason string
	// seen is its element in the trackers by last heartbeat (expiry.go).
	seen *list.Element
	// fullConf: the tracker's build has other configuration defaults than
	// the JobTracker's (or did not say), so its launches carry every key
	// of the job's configuration, not only those that differ from the
	// defaults (launchConf).
	fullConf bool
}

func countersToProto(cs mr.CounterSet) []*mrpb.Counter {
	var out []*mrpb.Counter
	for _, g := range cs.Groups() {
		for _, n := range cs.Names(g) {
			out = append(out, &mrpb.Counter{Group: g, Name: n, Value: cs[g][n]})
		}
	}
	return out
}

// countersOfStatus packs a status's counters (a counter named twice is
// summed, as in countersFromProto).
func countersOfStatus(cs []*mrpb.Counter) mr.PackedCounters {
	keys := make([]mr.CounterKey, len(cs))
	values := make([]int64, len(cs))
	for i, c := range cs {
		keys[i], values[i] = mr.CounterKey{Group: c.Group, Name: c.Name}, c.Value
	}
	return mr.PackCounters(keys, values)
}

// countersFromProto makes the counter set of a status's counters
// (a client's: the JobTracker keeps an attempt's packed, countersOfStatus).
// Each group's map is made for the group's own counters, counted first.
func countersFromProto(cs []*mrpb.Counter) mr.CounterSet {
	out := make(mr.CounterSet, 1)
	for i, c := range cs {
		g := out[c.Group]
		if g == nil {
			n := 1
			for _, d := range cs[i+1:] {
				if d.Group == c.Group {
					n++
				}
			}
			g = make(map[string]int64, n)
			out[c.Group] = g
		}
		g[c.Name] += c.Value
	}
	return out
}
