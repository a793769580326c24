package sim

import (
	"container/heap"
	"container/list"
	"fmt"
	"math"
	"sort"
	"strconv"
	"time"

	"gomr/partitions"
	"gomr/preempt"
	"gomr/sched"
	"gomr/speculator"
)

// Options say how to simulate a workload.
type Options struct {
	// Policy is the partitions policy name.
	Policy string
	// Conf overrides policy configuration keys (on top of the workload's).
	Conf map[string]string
	// Trackers, MapSlots and ReduceSlots (per tracker) override the
	// workload's cluster when > 0.
	Trackers, MapSlots, ReduceSlots int
	// Heartbeat is the trackers' heartbeat interval; 0 means a tracker asks
	// for work as soon as a slot frees (after every event).
	Heartbeat time.Duration
	// HeartbeatMaps and HeartbeatReduces cap the map and reduce tasks the
	// policy may launch on one tracker per heartbeat (0: no cap, the free
	// slots). They need Heartbeat > 0.
	HeartbeatMaps, HeartbeatReduces int
	// SetupTask and CleanupTask, when > 0, give every job a Hadoop 1 job
	// setup task, which must end before the policy sees any of the job's
	// tasks as pending, and a job cleanup task after its last task, which
	// the job's completion waits for. The engine launches them as Hadoop's
	// JobTracker does, ahead of the policy and outside its partitions or
	// shares: on a free map slot, else a free reduce slot; cleanups before
	// setups, in job order; with heartbeats one per heartbeat, and a
	// heartbeat that launches one assigns nothing else.
	SetupTask, CleanupTask time.Duration
	// Slowstart overrides the workload's when >= 0; set it to -1 to keep
	// the workload's.
	Slowstart float64
	// Knowledge is what policies are told of a job at its submission
	// (Knowledge*); empty means the workload's (Workload.Knowledge), and
	// KnowHistory when the workload names none.
	Knowledge string
	// Speculation turns on speculative execution (fresh attempts or CRIU
	// clones) and says what a clone costs; the zero value is off. The
	// speculator's and the straggler injector's configuration keys
	// (speculator.Keys) are read from Conf; the injector slows attempts
	// whatever the mode.
	Speculation Speculation
	// Preemption is the true cost of each preemption mechanism
	// (sim/preemption.go); the mechanism and the planner's priors are the
	// preemption.* keys of Conf.
	Preemption PreemptionModel
	// Overheads are the real runtime's costs per task and heartbeat
	// (sim/overhead.go); the zero value has none. They are not combined
	// with speculation.
	Overheads Overheads

	// alone marks the run of one job that gives another run its slowdown
	// reference (refRuntime); it needs no reference itself.
	alone bool
}

// What policies are told of a job at its submission (Options.Knowledge).
const (
	// KnowHistory is what the JobTracker tells: the profile of the
	// earlier runs of jobs with the same name (merged, as the JobTracker
	// builds it from its job history), and the size that profile
	// predicts; nothing for a name not seen complete before.
	KnowHistory = "history"
	// KnowOracle tells the job's own true profile and size, as if it had
	// run before exactly as it will: what the deadline paper assumes.
	KnowOracle = "oracle"
	// KnowNone tells neither profile nor size.
	KnowNone = "none"
)

// epoch is the virtual clock's zero.
var epoch = time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)

type evKind int

const (
	evFinish       evKind = iota // completions first
	evPreempted                  // a checkpoint or split freed its slot
	evHousekeeping               // a job setup or cleanup task ends
	evArrival
	evHeartbeat
	evCloneReady // a clone has been made and starts running
	evScan       // a speculation scan
	evWake       // the policy asked to be offered again (partitions.Waker)
	evDumpEnded  // the dump of a victim that freed its slot early ended
)

type event struct {
	at      time.Duration
	kind    evKind
	seq     int64
	att     *attempt
	job     *simJob
	tracker int
	// gen is a heartbeat's generation: a heartbeat restarts its
	// tracker's period, so an older one still queued is stale.
	gen int64
	// hkReduce: a housekeeping task occupied a reduce slot.
	hkReduce bool
}

type eventQueue []*event

func (q eventQueue) Len() int { return len(q) }
func (q eventQueue) Less(i, j int) bool {
	if q[i].at != q[j].at {
		return q[i].at < q[j].at
	}
	if q[i].kind != q[j].kind {
		return q[i].kind < q[j].kind
	}
	return q[i].seq < q[j].seq
}
func (q eventQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *eventQueue) Push(x any)   { *q = append(*q, x.(*event)) }
func (q *eventQueue) Pop() any {
	o := *q
	x := o[len(o)-1]
	*q = o[:len(o)-1]
	return x
}

type attempt struct {
	job     *simJob
	typ     partitions.TaskType
	task    int
	num     int
	tracker int
	start   time.Duration
	end     time.Duration
	killed  bool
	done    bool
	waiting bool // reduce waiting for the map stage to end
	spare   bool // launched on a spare slot (Assignment.Spare)
	queue   int
	elem    *list.Element

	// Straggler and speculation state (sim/speculation.go). id is set
	// when stragglers or speculation are on.
	id string
	// k is the straggler factor: the attempt's work takes (1+k) times as
	// long as its trace says.
	k float64
	// base is the attempt's unslowed running time from its start (for a
	// clone: its remaining work); known once end is.
	base time.Duration
	// Progress is pAt until pFrom, then grows linearly to 1 at end (a
	// frozen original or a clone being made has pFrom in the future).
	pAt     float64
	pFrom   time.Duration
	frozeAt time.Duration
	// cloneFrom is when the attempt reaches a phase it can be cloned in
	// (a reduce: its reduce phase).
	cloneFrom time.Duration
	kind      specKind
	// For a clone: its source, the progress it starts at, when it runs
	// and what making it cost. cloning is the clone being made of this
	// attempt.
	src     *attempt
	p0      float64
	ready   time.Duration
	meas    speculator.CloneMeasurement
	cloning *attempt
}

type simJob struct {
	spec     *Job
	idx      int // position in the workload, for attempt ids
	view     partitions.JobView
	viewIdx  int
	pendMaps []int
	pendReds []int
	running  [2]*list.List
	waiting  []*attempt
	tries    [2][]int
	doneMaps int
	doneReds int
	ready    int // maps needed for reduces
	mapsEnd  time.Duration
	started  bool
	first    time.Duration
	finish   time.Duration
	queue    int
	rec      *JobRecord
	// prep is set while the job waits for its setup task (Options.
	// SetupTask): the policy sees nothing pending. cleaning is set once
	// the job waits for or runs its cleanup task.
	prep     bool
	cleaning bool
	// Speculation state, allocated when speculation is on: per type, the
	// tasks, the speculative attempts waiting for a slot and the
	// durations of first successes.
	tasks    [2][]taskState
	specWait [2][]*pendingSpec
	finished [2][]time.Duration
	// added are the works of the maps scale-up splits added, task
	// len(spec.Maps) onwards, and addedReds those of the reduces, task
	// len(spec.Reduces) onwards (sim/scaleup.go).
	added     []time.Duration
	addedReds []time.Duration
}

type tracker struct {
	name     string
	freeMaps int
	freeReds int
	// hbGen is the generation of the tracker's next heartbeat.
	hbGen int64
}

type engine struct {
	w   *Workload
	opt Options
	pol partitions.Policy
	// know is what policies are told of a job at its submission
	// (Knowledge*); profiles are the profiles of the jobs completed so
	// far, by name (KnowHistory).
	know     string
	profiles map[string]partitions.Profile
	// d drives the policy: every event and decision goes through it, as
	// in the JobTracker.
	d        *sched.Driver
	timers   partitions.TimerSource
	now      time.Duration
	q        eventQueue
	seq      int64
	trackers []tracker
	// freeMapSlots is the sum of the trackers' freeMaps, kept by
	// takeMapSlot and releaseMapSlot.
	freeMapSlots int
	mapSlots     int
	redSlots     int
	active       []*simJob
	views        []partitions.JobView
	needOff      bool
	// wakeAt is the time of the latest evWake queued (scheduleWake).
	wakeAt time.Duration
	left   int // jobs not finished
	// others counts the queued events that are not heartbeats; stallSince
	// is when the heartbeats last started to find nothing to launch with
	// no other event queued (nothing running, nothing arriving): see
	// stallLimit.
	others     int
	stallSince time.Duration
	res        *Result
	checks     int
	byID       map[string]*simJob
	// lastKills is set by offer when the decision preempted tasks.
	lastKills bool
	// viewsDirty is set when the set of active jobs changed.
	viewsDirty bool
	// specBuf holds the views of an offer that counts waiting
	// speculative attempts (specViews).
	specBuf []partitions.JobView
	// strag is the straggler injector; ids is set when attempts need ids.
	strag speculator.Stragglers
	ids   bool
	// sp is the speculation state; nil when speculation is off.
	sp *specState
	// setups and cleanups are the jobs waiting for a slot for their
	// setup or cleanup task, in arrival order.
	setups, cleanups []*simJob
	// pre is the preemption state (sim/preemption.go).
	pre *preState
}

// Run simulates the workload under one policy.
func Run(w *Workload, opt Options) (*Result, error) {
	conf := map[string]string{}
	specConf, preConf := confMap{}, confMap{}
	for _, src := range []map[string]string{w.Conf, opt.Conf} {
		for k, v := range src {
			if isSpeculatorKey(k) {
				specConf[k] = v
			} else if preempt.IsKey(k) {
				preConf[k] = v
			} else {
				conf[k] = v
			}
		}
	}
	cfg, err := partitions.NewMapConfig(conf)
	if err != nil {
		return nil, fmt.Errorf("simulate %s: %w", opt.Policy, err)
	}
	pol, err := partitions.New(opt.Policy, cfg)
	if err != nil {
		return nil, fmt.Errorf("simulate: %w", err)
	}
	n, ms, rs := w.Trackers, w.MapSlots, w.ReduceSlots
	if opt.Trackers > 0 {
		n = opt.Trackers
	}
	if opt.MapSlots > 0 {
		ms = opt.MapSlots
	}
	if opt.ReduceSlots > 0 {
		rs = opt.ReduceSlots
	}
	if n <= 0 || ms <= 0 || rs < 0 {
		return nil, fmt.Errorf("simulate: cluster of %d trackers with %d map and %d reduce slots each is not usable", n, ms, rs)
	}
	if opt.Slowstart < 0 {
		opt.Slowstart = w.Slowstart
	}
	if opt.Slowstart > 1 {
		return nil, fmt.Errorf("simulate: slowstart %v must be in [0, 1]", opt.Slowstart)
	}
	if opt.Heartbeat < 0 {
		return nil, fmt.Errorf("simulate: heartbeat %v must not be negative", opt.Heartbeat)
	}
	if opt.HeartbeatMaps < 0 || opt.HeartbeatReduces < 0 {
		return nil, fmt.Errorf("simulate: per-heartbeat caps of %d maps and %d reduces must not be negative", opt.HeartbeatMaps, opt.HeartbeatReduces)
	}
	if (opt.HeartbeatMaps > 0 || opt.HeartbeatReduces > 0) && opt.Heartbeat == 0 {
		return nil, fmt.Errorf("simulate: per-heartbeat task caps need a heartbeat interval")
	}
	if err := opt.Overheads.check(opt.Heartbeat); err != nil {
		return nil, fmt.Errorf("simulate: %w", err)
	}
	if opt.SetupTask < 0 || opt.CleanupTask < 0 {
		return nil, fmt.Errorf("simulate: job setup %v and cleanup %v must not be negative", opt.SetupTask, opt.CleanupTask)
	}
	know := opt.Knowledge
	if know == "" {
		know = w.Knowledge
	}
	if know == "" {
		know = KnowHistory
	}
	if know != KnowHistory && know != KnowOracle && know != KnowNone {
		return nil, fmt.Errorf("simulate: knowledge %q: want %s, %s or %s", know, KnowHistory, KnowOracle, KnowNone)
	}
	e := &engine{w: w, opt: opt, pol: pol, d: sched.New(pol), mapSlots: n * ms, redSlots: n * rs, byID: map[string]*simJob{},
		know: know, profiles: map[string]partitions.Profile{}}
	e.timers, _ = pol.(partitions.TimerSource)
	if e.timers != nil {
		e.d.OnEvent(e.sampleTimers)
	}
	e.res = &Result{Policy: opt.Policy, Workload: w.Name, Trackers: n, MapSlots: n * ms, ReduceSlots: n * rs}
	if err := e.setupSpeculation(specConf); err != nil {
		return nil, fmt.Errorf("simulate %s: %w", opt.Policy, err)
	}
	if e.sp != nil && !opt.Overheads.IsZero() {
		return nil, fmt.Errorf("simulate %s: the overhead model is not combined with speculation", opt.Policy)
	}
	for i := 0; i < n; i++ {
		e.trackers = append(e.trackers, tracker{name: "tracker_" + strconv.Itoa(i), freeMaps: ms, freeReds: rs})
	}
	e.freeMapSlots = n * ms
	if err := e.setupPreemption(preConf); err != nil {
		return nil, fmt.Errorf("simulate %s: %w", opt.Policy, err)
	}
	for i := range w.Jobs {
		j := &w.Jobs[i]
		if len(j.Maps) == 0 {
			return nil, fmt.Errorf("simulate: job %s has no map task", j.ID)
		}
		sj := &simJob{spec: j, idx: i}
		e.push(&event{at: j.Submit, kind: evArrival, job: sj})
	}
	e.left = len(w.Jobs)
	e.stallSince = -1
	if opt.Heartbeat > 0 {
		for i := range e.trackers {
			e.push(&event{at: opt.Overheads.firstHeartbeat(i, n, opt.Heartbeat), kind: evHeartbeat, tracker: i})
		}
	}
	if err := e.loop(); err != nil {
		return nil, err
	}
	free := 0
	for i := range e.trackers {
		free += e.trackers[i].freeMaps
	}
	if free != e.freeMapSlots {
		return nil, fmt.Errorf("simulate %s: internal error: the trackers have %d free map slots, the running count says %d", opt.Policy, free, e.freeMapSlots)
	}
	if e.sp != nil {
		st := e.res.Speculation
		st.EstTVM, st.EstImageBps, st.EstCopyBps, st.EstSamples = e.sp.sp.Estimator().Inputs()
	}
	e.res.finish(e)
	return e.res, nil
}

func (e *engine) push(ev *event) {
	e.seq++
	ev.seq = e.seq
	if ev.kind != evHeartbeat {
		e.others++
	}
	heap.Push(&e.q, ev)
}

// stallLimit is how long, in simulated time, the trackers' heartbeats may
// find nothing to launch while nothing runs and nothing else is queued
// before the run ends as "never finished". Without heartbeats the event
// queue empties and the loop ends by itself; with them it never empties.
// A day is far beyond any policy's timer (delay scheduling's waits,
// TAGS' and preemption timeouts), which may rightly hold tasks back for a
// while on an idle cluster.
const stallLimit = 24 * time.Hour

func (e *engine) loop() error {
	// changed says whether an event of the current instant may have
	// changed what the policy would assign: a scan that decided nothing
	// or a clone becoming ready does not, so that speculation without a
	// straggler offers slots exactly when a run without it does.
	changed := false
	for e.q.Len() > 0 {
		ev := heap.Pop(&e.q).(*event)
		if ev.at > e.now {
			e.accountIdle(ev.at - e.now)
		}
		e.now = ev.at
		if ev.kind != evHeartbeat {
			e.others--
		}
		changed = changed || (ev.kind != evScan && ev.kind != evCloneReady)
		switch ev.kind {
		case evFinish:
			// A frozen original's end moved: its first event is stale.
			if !ev.att.killed && !ev.att.done && ev.at == ev.att.end {
				e.finishAttempt(ev.att)
			}
		case evPreempted:
			e.preempted(ev.att)
		case evDumpEnded:
			e.d.DumpEnded(e.at(), attemptOf(ev.att))
		case evCloneReady:
			if err := e.cloneReady(ev.att); err != nil {
				return err
			}
		case evScan:
			if e.scan() {
				changed = true
			}
		case evHousekeeping:
			e.housekeepingDone(ev)
		case evArrival:
			e.arrive(ev.job)
		case evWake:
			// A preemption timeout expired: the policy is offered again
			// even if no slot is free, as a tracker's heartbeat would.
			e.needOff = true
		case evHeartbeat:
			t := &e.trackers[ev.tracker]
			if e.left == 0 || ev.gen != t.hbGen {
				continue
			}
			// launched is set when the heartbeat launched a task; soon
			// when the tracker then heartbeats again after AfterLaunch
			// (Overheads.soonAfter).
			launched, soon := false, false
			if fm, fr := t.freeMaps, t.freeReds; e.launchHousekeeping(ev.tracker) {
				// Hadoop 1's JobTracker answers a heartbeat that gets a
				// setup or cleanup task with that task alone.
				launched = true
				soon = e.opt.Overheads.soonAfter(t.freeMaps < fm, t.freeReds < fr, t.freeMaps, t.freeReds, false)
			} else if t.freeMaps > 0 || t.freeReds > 0 || e.needOff {
				e.buildViews()
				fm, fr := t.freeMaps, t.freeReds
				if c := e.opt.HeartbeatMaps; c > 0 {
					fm = min(fm, c)
				}
				if c := e.opt.HeartbeatReduces; c > 0 {
					fr = min(fr, c)
				}
				gm, gr, err := e.offer(ev.tracker, fm, fr)
				if err != nil {
					return err
				}
				launched = gm+gr > 0
				soon = e.opt.Overheads.soonAfter(gm > 0, gr > 0, t.freeMaps, t.freeReds, e.lastKills)
				e.needOff = false
				if gm < fm {
					e.scaleUp(t.freeMaps)
				}
				if gr < fr {
					e.scaleUpReduces(t.freeReds)
				}
			}
			switch {
			case launched || e.others > 0:
				e.stallSince = -1
			case e.stallSince < 0:
				e.stallSince = e.now
			case e.now-e.stallSince > stallLimit:
				return fmt.Errorf("simulate %s: %d job(s) never finished: the policy left their tasks unscheduled with the cluster idle for %v of heartbeats", e.opt.Policy, e.left, stallLimit)
			}
			t.hbGen++
			e.push(&event{at: e.opt.Overheads.nextHeartbeat(e.now, e.opt.Heartbeat, soon), kind: evHeartbeat, tracker: ev.tracker, gen: t.hbGen})
		}
		if e.opt.Heartbeat == 0 && (e.q.Len() == 0 || e.q[0].at != e.now) {
			if changed {
				if err := e.pass(); err != nil {
					return err
				}
			}
			changed = false
		}
	}
	if e.left > 0 {
		return fmt.Errorf("simulate %s: %d job(s) never finished: the policy left their tasks unscheduled with the cluster idle", e.opt.Policy, e.left)
	}
	return nil
}

func (e *engine) at() time.Time { return epoch.Add(e.now) }

// accountIdle adds to the result the map slot time left free for dt while
// jobs had maps pending: the free map slots, up to the pending maps of
// the jobs past their setup, as the last instant's offers left them.
func (e *engine) accountIdle(dt time.Duration) {
	free := e.freeMapSlots
	if free == 0 {
		return
	}
	pend := 0
	for _, sj := range e.active {
		if !sj.prep {
			pend += len(sj.pendMaps)
		}
		if pend >= free {
			break
		}
	}
	e.res.idleMapPending += float64(min(free, pend)) * dt.Seconds()
}

// takeMapSlot and releaseMapSlot change a tracker's free map slots and
// the cluster's count of them (freeMapSlots), which accountIdle reads at
// every instant instead of summing over the trackers.
func (e *engine) takeMapSlot(t *tracker) {
	t.freeMaps--
	e.freeMapSlots--
}

func (e *engine) releaseMapSlot(t *tracker) {
	t.freeMaps++
	e.freeMapSlots++
}

// sampleTimers records the policy's timers each time a task's end made it
// check them.
func (e *engine) sampleTimers(ev partitions.Event) {
	if ev.Kind == partitions.TaskFinished {
		if c := e.timers.TimerChecks(); c != e.checks {
			e.checks = c
			for _, t := range e.timers.Timers() {
				if t > 0 {
					e.res.timerTrace = append(e.res.timerTrace, t.Seconds())
				}
			}
		}
	}
}

func (e *engine) arrive(sj *simJob) {
	j := sj.spec
	sj.running = [2]*list.List{list.New(), list.New()}
	sj.pendMaps = make([]int, len(j.Maps))
	for i := range sj.pendMaps {
		sj.pendMaps[i] = i
	}
	sj.pendReds = make([]int, len(j.Reduces))
	for i := range sj.pendReds {
		sj.pendReds[i] = i
	}
	sj.tries = [2][]int{make([]int, len(j.Maps)), make([]int, len(j.Reduces))}
	if e.sp != nil {
		sj.tasks = [2][]taskState{make([]taskState, len(j.Maps)), make([]taskState, len(j.Reduces))}
		e.armScan()
	}
	sj.ready = int(math.Ceil(e.opt.Slowstart*float64(len(j.Maps)) - 1e-9))
	v := partitions.JobView{ID: j.ID, Name: j.Name, Pool: j.Pool, Priority: j.Priority, Submitted: e.at(),
		Maps: len(j.Maps), Reduces: len(j.Reduces), PendingMaps: len(j.Maps), PendingReduces: len(j.Reduces),
		InputBytes: j.InputBytes}
	v.ReducesReady = sj.ready <= 0
	if e.opt.SetupTask > 0 {
		sj.prep = true
		v.PendingMaps, v.PendingReduces, v.ReducesReady = 0, 0, false
		e.setups = append(e.setups, sj)
	}
	if j.Deadline > 0 {
		v.Deadline = e.at().Add(j.Deadline)
	}
	switch e.know {
	case KnowOracle:
		p := j.Profile()
		v.Profile, v.EstimatedSize = &p, j.Size()
	case KnowHistory:
		if p, ok := e.profiles[j.Name]; ok {
			v.Profile, v.EstimatedSize = &p, p.EstimateSize(len(j.Maps), len(j.Reduces))
		}
	}
	sj.view = v
	sj.rec = &JobRecord{ID: j.ID, Name: j.Name, Submit: j.Submit.Seconds(), Maps: len(j.Maps), Reduces: len(j.Reduces),
		Size: j.Size().Seconds(), Deadline: j.Deadline.Seconds()}
	e.active = append(e.active, sj)
	e.byID[j.ID] = sj
	e.viewsDirty = true
	e.d.Submitted(e.at(), v)
	e.needOff = true
}

// buildViews rebuilds the view slice when the active jobs changed; in
// between, syncView keeps it current.
func (e *engine) buildViews() {
	if !e.viewsDirty {
		return
	}
	e.viewsDirty = false
	e.views = e.views[:0]
	for i, sj := range e.active {
		sj.viewIdx = i
		e.views = append(e.views, sj.view)
	}
}

// pass offers the free slots of every tracker, as heartbeats on idle would,
// until the policy stops assigning; kills free slots and cause another
// round.
func (e *engine) pass() error {
	for {
		if len(e.setups)+len(e.cleanups) > 0 {
			for i := range e.trackers {
				for e.launchHousekeeping(i) {
				}
			}
		}
		e.buildViews()
		mapsBlocked, redsBlocked := false, false
		offered, killed := false, false
		for i := range e.trackers {
			t := &e.trackers[i]
			fm, fr := t.freeMaps, t.freeReds
			// Once a tracker was left with free slots of a type, the
			// policy would leave the next ones too, unless a speculative
			// attempt waits that may run on this one only.
			if mapsBlocked && !e.specFits(partitions.Map, i) {
				fm = 0
			}
			if redsBlocked && !e.specFits(partitions.Reduce, i) {
				fr = 0
			}
			if fm == 0 && fr == 0 {
				continue
			}
			gm, gr, err := e.offer(i, fm, fr)
			if err != nil {
				return err
			}
			offered = true
			killed = killed || e.lastKills
			if gm < fm {
				mapsBlocked = true
			}
			if gr < fr {
				redsBlocked = true
			}
			if mapsBlocked && redsBlocked && (e.sp == nil || e.sp.waiting == 0) {
				break
			}
		}
		if !offered && e.needOff && len(e.active) > 0 {
			if _, _, err := e.offer(0, 0, 0); err != nil {
				return err
			}
			killed = killed || e.lastKills
		}
		e.needOff = false
		if !killed {
			// The policy left these map slots free: scale-up splits
			// may take them.
			for i := range e.trackers {
				e.scaleUp(e.trackers[i].freeMaps)
				e.scaleUpReduces(e.trackers[i].freeReds)
			}
			return nil
		}
	}
}

// offer asks the policy for tracker i's free slots and carries out the
// decision; it returns how many maps and reduces were assigned.
func (e *engine) offer(i, fm, fr int) (int, int, error) {
	e.lastKills = false
	t := &e.trackers[i]
	// The view of this offer counts the speculative attempts that may run
	// on this tracker as pending (specViews, a copy: launches update
	// e.views as they happen); the driver checks the decision against it
	// before anything is carried out.
	view := &partitions.ClusterView{Now: e.at(), Jobs: e.specViews(i), Trackers: len(e.trackers), MapSlots: e.mapSlots, ReduceSlots: e.redSlots}
	out, err := e.d.Offer(view, partitions.SlotOffer{Tracker: t.name, Host: t.name, FreeMaps: fm, FreeReduces: fr}, simHost{e, i})
	e.res.Offers++
	e.lastKills = out.Preempted > 0
	e.scheduleWake()
	if err != nil {
		return 0, 0, fmt.Errorf("simulate: %w", err)
	}
	return out.Launched[partitions.Map], out.Launched[partitions.Reduce], nil
}

// scheduleWake queues an evWake at the time a partitions.Waker policy
// names: the runtime's trackers heartbeat whether or not they have a free
// slot, so a policy there is asked again when a preemption timeout
// expires; here offers follow freed slots, so the policy says when.
func (e *engine) scheduleWake() {
	w, ok := e.d.Policy().(partitions.Waker)
	if !ok {
		return
	}
	t := w.NextWake(e.at())
	if t.IsZero() {
		return
	}
	if at := t.Sub(epoch); at > e.now && at != e.wakeAt {
		e.wakeAt = at
		e.push(&event{at: at, kind: evWake})
	}
}

// simHost carries out the driver's decisions on tracker i.
type simHost struct {
	e *engine
	i int
}

func (h simHost) Launch(_ partitions.SlotOffer, as partitions.Assignment) (bool, error) {
	return h.e.launch(h.i, as)
}

func (h simHost) Kill(a sched.Attempt) error {
	sj := h.e.find(a.Job)
	if sj == nil {
		return fmt.Errorf("job %s is not running", a.Job)
	}
	for el := sj.running[a.Type].Front(); el != nil; el = el.Next() {
		if at := el.Value.(*attempt); at.task == a.Task && at.num == a.Attempt {
			h.e.attemptEnded(at, true)
			h.e.preempt(at)
			return nil
		}
	}
	return fmt.Errorf("attempt %s is not running", a)
}

// attemptOf names an attempt for the driver.
func attemptOf(at *attempt) sched.Attempt {
	return sched.Attempt{Job: at.job.spec.ID, Type: at.typ, Task: at.task, Attempt: at.num}
}

func (e *engine) find(id string) *simJob { return e.byID[id] }

func (e *engine) syncView(sj *simJob) {
	v := &sj.view
	v.PendingMaps, v.PendingReduces = len(sj.pendMaps), len(sj.pendReds)
	v.RunningMaps, v.RunningReduces = sj.running[0].Len(), sj.running[1].Len()
	v.FinishedMaps, v.FinishedReduces = sj.doneMaps, sj.doneReds
	v.ReducesReady = sj.doneMaps >= sj.ready
	if sj.prep {
		v.PendingMaps, v.PendingReduces, v.ReducesReady = 0, 0, false
	}
	if sj.viewIdx < len(e.views) && e.views[sj.viewIdx].ID == v.ID {
		e.views[sj.viewIdx] = *v
	}
}

// launch carries out an assignment on tracker ti; it returns false when
// the job has no task to run there after all.
func (e *engine) launch(ti int, a partitions.Assignment) (bool, error) {
	sj := e.find(a.JobID)
	if sj == nil {
		return false, fmt.Errorf("job %s is not running", a.JobID)
	}
	t := &e.trackers[ti]
	var task int
	var ps *pendingSpec
	switch a.Type {
	case partitions.Map:
		if len(sj.pendMaps) > 0 {
			task, sj.pendMaps = sj.pendMaps[0], sj.pendMaps[1:]
		} else if ps = e.takeSpec(sj, a.Type, ti); ps == nil {
			// The decision gave a slot freed by its own preemption back to
			// the job, but the victim's task has another live attempt.
			return false, nil
		}
		e.takeMapSlot(t)
		if a.Spare {
			e.res.ExtraMapTasks++
		}
	default:
		if len(sj.pendReds) > 0 {
			task, sj.pendReds = sj.pendReds[0], sj.pendReds[1:]
		} else if ps = e.takeSpec(sj, a.Type, ti); ps == nil {
			return false, nil
		}
		t.freeReds--
		if a.Spare {
			e.res.ExtraReduceTasks++
		}
	}
	if ps != nil {
		e.launchSpec(ti, sj, ps, a.Queue)
		return true, nil
	}
	at := e.newAttempt(sj, a.Type, task, ti, a.Queue, noSpec)
	at.spare = a.Spare
	e.schedule(at)
	e.started(at)
	return true, nil
}

// newAttempt makes the next attempt of a task, with its id and straggler
// factor when they are needed.
func (e *engine) newAttempt(sj *simJob, typ partitions.TaskType, task, ti, queue int, kind specKind) *attempt {
	at := &attempt{job: sj, typ: typ, task: task, tracker: ti, start: e.now, pFrom: e.now, cloneFrom: e.now, queue: queue, kind: kind}
	at.num = sj.tries[typ][task]
	sj.tries[typ][task]++
	if e.ids {
		at.id = attemptID(sj.idx, typ, task, at.num)
		at.k = e.strag.Factor(at.id, e.trackers[ti].name, kind != noSpec)
	}
	return at
}

// schedule sets the end of an attempt that runs its task from the start:
// a map ends after its (slowed) duration; a reduce ends after its
// shuffle and the job's map stage, then its reduce phase, or waits for
// the map stage to end.
func (e *engine) schedule(at *attempt) {
	if e.resume(at) {
		return
	}
	sj := at.job
	if at.typ == partitions.Map {
		at.base = mapWork(sj, at.task)
		at.end = e.overheadsOf(at).mapEnd(e.now, slowed(at.base, at.k))
		return
	}
	if at.task >= len(sj.spec.Reduces) {
		// A piece of a reduce split for idle slots (sim/scaleup.go): the
		// job's maps are done; its work includes its start-up and replay.
		at.base = sj.addedReds[at.task-len(sj.spec.Reduces)]
		at.cloneFrom, at.end = e.now, e.now+slowed(at.base, at.k)
		return
	}
	if sj.doneMaps >= e.nMaps(sj) {
		e.setReduceEnd(at, sj.mapsEnd)
		return
	}
	at.waiting = true
	sj.waiting = append(sj.waiting, at)
}

// setReduceEnd sets a reduce attempt's end once its job's map stage ended
// at mapsEnd: max(start + shuffle, mapsEnd) + reduce, both phases slowed,
// plus the overheads (Overheads.reduceEnd).
func (e *engine) setReduceEnd(at *attempt, mapsEnd time.Duration) {
	j := at.job.spec
	sh, rd := j.shuffle(at.task), j.Reduces[at.task]
	o := e.overheadsOf(at)
	at.cloneFrom, at.end = o.reduceEnd(at.start, slowed(sh, at.k), mapsEnd, slowed(rd, at.k))
	_, at.base = o.reduceEnd(0, sh, mapsEnd-at.start, rd)
}

// overheadsOf is the overhead model of one attempt: its own launch cost
// when the model has a spread (Overheads.LaunchDist).
func (e *engine) overheadsOf(at *attempt) Overheads {
	return e.opt.Overheads.forAttempt(at.job.spec.ID, at.typ, at.task, at.num)
}

// started records a launched attempt and tells the policy.
func (e *engine) started(at *attempt) {
	sj := at.job
	at.elem = sj.running[at.typ].PushBack(at)
	if e.sp != nil {
		ts := &sj.tasks[at.typ][at.task]
		ts.live = append(ts.live, at)
	}
	if !sj.started {
		sj.started, sj.first = true, e.now
	}
	sj.queue = at.queue
	e.syncView(sj)
	e.d.Started(e.at(), attemptOf(at))
	if !at.waiting {
		e.push(&event{at: at.end, kind: evFinish, att: at})
	}
}

// preempt kills a running attempt the driver chose as a preemption
// victim; its slot is free at once.
func (e *engine) preempt(at *attempt) {
	sj := at.job
	sj.running[at.typ].Remove(at.elem)
	at.killed = true
	t := &e.trackers[at.tracker]
	// With speculation, a task that keeps another live attempt is not
	// pending again.
	requeue := e.sp == nil || e.dropAttempt(at)
	if at.typ == partitions.Map {
		e.releaseMapSlot(t)
		if requeue {
			sj.pendMaps = append([]int{at.task}, sj.pendMaps...)
		}
		e.res.KilledMapTasks++
		if at.spare {
			e.res.KilledSpareMapTasks++
		}
	} else {
		t.freeReds++
		if requeue {
			sj.pendReds = append([]int{at.task}, sj.pendReds...)
		}
		e.res.KilledReduceTasks++
		if at.waiting {
			for i, w := range sj.waiting {
				if w == at {
					sj.waiting = append(sj.waiting[:i], sj.waiting[i+1:]...)
					break
				}
			}
		}
	}
	el := e.now - at.start
	e.res.WastedSlotSeconds += el.Seconds()
	e.res.busy[at.typ] += el.Seconds()
	e.syncView(sj)
	e.d.Ended(e.at(), attemptOf(at), el)
}

func (e *engine) finishAttempt(at *attempt) {
	sj := at.job
	at.done = true
	e.attemptEnded(at, false)
	sj.running[at.typ].Remove(at.elem)
	t := &e.trackers[at.tracker]
	d := at.end - at.start
	e.res.busy[at.typ] += d.Seconds()
	e.res.addQueueBusy(at.queue, d.Seconds())
	if at.typ == partitions.Map {
		e.releaseMapSlot(t)
		sj.doneMaps++
		if sj.doneMaps == e.nMaps(sj) {
			sj.mapsEnd = e.now
			for _, w := range sj.waiting {
				w.waiting = false
				e.setReduceEnd(w, e.now)
				e.push(&event{at: w.end, kind: evFinish, att: w})
			}
			sj.waiting = nil
		}
	} else {
		t.freeReds++
		sj.doneReds++
	}
	if e.opt.Overheads.OutOfBand {
		// The tracker reports the end at once, and the JobTracker offers
		// its free slots in the reply (after this instant's other events).
		e.push(&event{at: e.now, kind: evHeartbeat, tracker: at.tracker, gen: t.hbGen})
	}
	e.syncView(sj)
	e.d.Succeeded(e.at(), attemptOf(at), d)
	if e.sp != nil {
		e.settle(at)
	}
	if sj.doneMaps == e.nMaps(sj) && sj.doneReds == e.nReds(sj) && !sj.cleaning {
		if e.opt.CleanupTask > 0 {
			sj.cleaning = true
			e.cleanups = append(e.cleanups, sj)
			return
		}
		e.complete(sj)
	}
}

// launchHousekeeping starts the next waiting job cleanup or setup task on
// a free slot of tracker ti, a map slot if there is one; it reports
// whether it started one.
func (e *engine) launchHousekeeping(ti int) bool {
	var sj *simJob
	var d time.Duration
	switch {
	case len(e.cleanups) > 0:
		sj, d = e.cleanups[0], e.opt.CleanupTask
	case len(e.setups) > 0:
		sj, d = e.setups[0], e.opt.SetupTask
	default:
		return false
	}
	t := &e.trackers[ti]
	ev := &event{at: e.now + d, kind: evHousekeeping, job: sj, tracker: ti}
	switch {
	case t.freeMaps > 0:
		e.takeMapSlot(t)
	case t.freeReds > 0:
		t.freeReds--
		ev.hkReduce = true
	default:
		return false
	}
	if sj.cleaning {
		e.cleanups = e.cleanups[1:]
	} else {
		e.setups = e.setups[1:]
		if !sj.started {
			sj.started, sj.first = true, e.now
		}
	}
	e.push(ev)
	return true
}

// housekeepingDone ends a setup task (the job's tasks become pending) or a
// cleanup task (the job completes).
func (e *engine) housekeepingDone(ev *event) {
	t := &e.trackers[ev.tracker]
	typ := partitions.Map
	if ev.hkReduce {
		t.freeReds++
		typ = partitions.Reduce
	} else {
		e.releaseMapSlot(t)
	}
	d := e.opt.SetupTask
	sj := ev.job
	if sj.cleaning {
		d = e.opt.CleanupTask
	}
	e.res.busy[typ] += d.Seconds()
	if sj.cleaning {
		e.complete(sj)
		return
	}
	sj.prep = false
	e.syncView(sj)
	e.needOff = true
}

func (e *engine) complete(sj *simJob) {
	sj.finish = e.now
	if e.know == KnowHistory {
		// What the JobTracker's history would hold of the run: the
		// profile of its tasks' durations (as generated: a straggler's
		// slowdown is not in it), merged with the name's earlier runs.
		e.profiles[sj.spec.Name] = partitions.MergeProfiles(e.profiles[sj.spec.Name], sj.spec.Profile())
	}
	for i, x := range e.active {
		if x == sj {
			e.active = append(e.active[:i], e.active[i+1:]...)
			break
		}
	}
	e.left--
	e.viewsDirty = true
	delete(e.byID, sj.spec.ID)
	r := sj.rec
	r.Start = sj.first.Seconds()
	r.Finish = sj.finish.Seconds()
	r.Response = r.Finish - r.Submit
	r.Queue = sj.queue
	e.res.Jobs = append(e.res.Jobs, *r)
	e.d.Finished(e.at(), sj.spec.ID)
}

// refRuntime is the slowdown's reference, the job's runtime alone in the
// empty cluster. Without heartbeats and job setup and cleanup tasks it is
// AloneRuntime. With them the job is simulated alone (FIFO, no stragglers)
// under the same heartbeat, caps and setup and cleanup tasks, submitted at
// the same phase of the heartbeats: the thesis measured its reference
// runtimes on the same Hadoop cluster as its response times, overheads
// included.
func (e *engine) refRuntime(j *Job) time.Duration {
	if e.opt.alone {
		return 0
	}
	if !e.opt.Overheads.IsZero() {
		// The ideal runtime, the reference a real run is measured
		// against (replay.ResultOf): slowdowns then show the overheads.
		return AloneRuntime(j, e.mapSlots, e.redSlots, e.opt.Slowstart)
	}
	if e.opt.Heartbeat == 0 && e.opt.SetupTask == 0 && e.opt.CleanupTask == 0 {
		return AloneRuntime(j, e.mapSlots, e.redSlots, e.opt.Slowstart)
	}
	n := len(e.trackers)
	jc := *j
	jc.Deadline = 0
	jc.Submit = 0
	if hb := e.opt.Heartbeat; hb > 0 {
		jc.Submit = j.Submit % hb
	}
	w := &Workload{Name: "alone", Trackers: n, MapSlots: e.mapSlots / n, ReduceSlots: e.redSlots / n, Slowstart: e.opt.Slowstart, Jobs: []Job{jc}}
	r, err := Run(w, Options{Policy: "fifo", Slowstart: e.opt.Slowstart, Knowledge: KnowNone, Heartbeat: e.opt.Heartbeat,
		HeartbeatMaps: e.opt.HeartbeatMaps, HeartbeatReduces: e.opt.HeartbeatReduces,
		SetupTask: e.opt.SetupTask, CleanupTask: e.opt.CleanupTask, alone: true})
	if err != nil || len(r.Jobs) != 1 {
		// cannot happen: the same cluster ran the job with others
		return AloneRuntime(j, e.mapSlots, e.redSlots, e.opt.Slowstart)
	}
	return dur(r.Jobs[0].Response)
}

// AloneRuntime is the job's runtime alone in an empty cluster of mapSlots
// and reduceSlots, from its first task's start to its last task's end,
// with greedy assignment in task order (the slowdown reference, and the
// T_J of the deadline paper with slowstart 1).
func AloneRuntime(j *Job, mapSlots, reduceSlots int, slowstart float64) time.Duration {
	k := max(min(len(j.Maps), mapSlots), 1)
	free := make(durHeap, k)
	ends := make([]time.Duration, 0, len(j.Maps))
	var mapsEnd time.Duration
	for _, d := range j.Maps {
		s := heap.Pop(&free).(time.Duration)
		heap.Push(&free, s+d)
		ends = append(ends, s+d)
		mapsEnd = max(mapsEnd, s+d)
	}
	if len(j.Reduces) == 0 || reduceSlots <= 0 {
		return mapsEnd
	}
	sort.Slice(ends, func(a, b int) bool { return ends[a] < ends[b] })
	need := int(math.Ceil(slowstart*float64(len(j.Maps)) - 1e-9))
	var readyAt time.Duration
	if need > 0 {
		readyAt = ends[min(need, len(ends))-1]
	}
	kr := min(len(j.Reduces), reduceSlots)
	rf := make(durHeap, kr)
	for i := range rf {
		rf[i] = readyAt
	}
	end := mapsEnd
	for i, d := range j.Reduces {
		s := heap.Pop(&rf).(time.Duration)
		f := max(s+j.shuffle(i), mapsEnd) + d
		heap.Push(&rf, f)
		end = max(end, f)
	}
	return end
}

type durHeap []time.Duration

func (h durHeap) Len() int           { return len(h) }
func (h durHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h durHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *durHeap) Push(x any)        { *h = append(*h, x.(time.Duration)) }
func (h *durHeap) Pop() any {
	o := *h
	x := o[len(o)-1]
	*h = o[:len(o)-1]
	return x
}
