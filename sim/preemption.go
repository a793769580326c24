package sim

import (
	"fmt"
	"math"
	"time"

	"gomr/partitions"
	"gomr/preempt"
	"gomr/sched"
)

// DefaultTaskMemory is the resident memory of a simulated attempt whose
// job gives none (Job.Memory) and whose run sets none
// (PreemptionModel.TaskMemory): 1 GiB.
const DefaultTaskMemory int64 = 1 << 30

// PreemptionModel is the true cost of preempting a simulated attempt by
// each mechanism (spec preemption-elasticity §1.6, §5.5):
//
//   - kill: the slot is free at once and the task starts again from
//     scratch (the engine's preempt);
//   - checkpoint: the attempt runs until its tracker's checkpoint queue
//     reaches it (one dump or restore at a time per tracker), is then
//     dumped for memory/BWWrite and its slot freed; when its task is
//     launched again it first restores, memory/BWRead through the queue of
//     the tracker it resumes on (plus memory/BWNet when that is not the
//     tracker holding the image), then does the work it had left;
//   - split (Amoeba): the attempt reaches its safe point one heartbeat
//     after the order, commits what it did and frees its slot; the rest
//     is a task of the same work left plus a start-up cost. A reduce is
//     split only once its maps are done (in its reduce phase), and its
//     remainder first spends ReduceReplay re-fetching and merging its
//     partition (the runtime's skip-replay);
//   - wait: nothing; the attempt finishes and frees its slot.
//
// The planner (preemption.* keys) decides from its own estimates, which
// start at the keys' priors and learn from the dumps and restores made
// here. Zero fields take the defaults: the memory DefaultTaskMemory, the
// bandwidths and the start-up cost the planner's priors (the keys).
type PreemptionModel struct {
	// TaskMemory is an attempt's memory, for jobs without Job.Memory.
	TaskMemory int64
	// BWWrite, BWRead and BWNet are the true dump, restore and transfer
	// bandwidths, in bytes per second.
	BWWrite, BWRead, BWNet float64
	// NoCheckpoint: no tracker can checkpoint (no CRIU).
	NoCheckpoint bool
	// Splittable: maps, and reduces whose maps are done, may be split at
	// a safe point.
	Splittable bool
	// StartupCost is what starting a split's remainder costs.
	StartupCost time.Duration
	// ReduceReplay is what a split reduce's remainder spends, after its
	// start-up, fetching and merging its partition again before it
	// reaches the key groups left (the runtime's skip-replay,
	// docs/split.md); 0 models the spec's range fetch, which costs
	// nothing here.
	ReduceReplay time.Duration
}

// PreemptStats count what preemption did in a run.
type PreemptStats struct {
	// Mechanism is the run's preemption.mechanism.
	Mechanism string `json:"mechanism"`
	// Victims by mechanism (kills also in Result.Killed*Tasks), and the
	// checkpoints or splits that fell back to a kill.
	Kills       int64 `json:"kills"`
	Checkpoints int64 `json:"checkpoints"`
	Splits      int64 `json:"splits"`
	Waits       int64 `json:"waits"`
	// ImageBytes, DumpSeconds and RestoreSeconds add up the checkpoints'
	// images and the time their dumps and restores took (slot time: part
	// of Result.WastedSlotSeconds).
	ImageBytes     int64   `json:"image_bytes"`
	DumpSeconds    float64 `json:"dump_s"`
	RestoreSeconds float64 `json:"restore_s"`
	// WorkSavedSeconds is the progress checkpoints and splits kept: what
	// killing those victims would have lost.
	WorkSavedSeconds float64 `json:"work_saved_s"`
}

type taskKey struct {
	job  *simJob
	typ  partitions.TaskType
	task int
}

// saved is a task waiting to resume: the work it had left, and its image
// (a checkpoint) or none (a split's remainder).
type saved struct {
	work  time.Duration
	image bool
	node  int
	bytes int64
	// ready is when the image is complete: a victim that freed its slot
	// before its dump ended (release-slot frozen or quiesced) cannot be
	// restored before.
	ready time.Duration
}

// releasing is a victim ordered to checkpoint or split, until its slot is
// free.
type releasing struct {
	mech     preempt.Mechanism
	work     time.Duration // left at the dump or the safe point
	dump     time.Duration
	bytes    int64
	progress time.Duration // what a kill would have lost
	// ready is when the dump ends; early says the slot is free before
	// (preemption.checkpoint.release-slot frozen or quiesced).
	ready time.Duration
	early bool
	// pieces > 1: a scale-up split (sim/scaleup.go), whose work left is
	// cut into this many pieces.
	pieces int
}

type preState struct {
	pl    *preempt.Planner
	cfg   preempt.Config
	m     PreemptionModel
	mech  string
	busy  []time.Duration // per tracker: when its checkpoint queue is free
	saved map[taskKey]saved
	rel   map[*attempt]releasing
	// resumed are the running attempts that resumed a task: what they
	// resumed from (a kill sends the task back to it: the image, or the
	// split's remainder, is still there) and when their useful work began,
	// after the restore or start-up (others' begins at their start).
	resumed map[*attempt]resumedFrom
	stats   *PreemptStats
	scaleUp *ScaleUpStats
}

type resumedFrom struct {
	s      saved
	useful time.Duration
}

// setupPreemption builds the driver's planner from the run's preemption.*
// keys and the true cost model from Options.Preemption.
func (e *engine) setupPreemption(conf confMap) error {
	cfg, err := preempt.FromConfig(conf)
	if err != nil {
		return err
	}
	cfg.Heartbeat = e.opt.Heartbeat
	m := e.opt.Preemption
	if m.TaskMemory < 0 || m.BWWrite < 0 || m.BWRead < 0 || m.BWNet < 0 || m.StartupCost < 0 {
		return fmt.Errorf("preemption model %+v: sizes, bandwidths and costs must not be negative", m)
	}
	if m.TaskMemory == 0 {
		m.TaskMemory = DefaultTaskMemory
	}
	if m.BWWrite == 0 {
		m.BWWrite = cfg.Prior.BWWrite
	}
	if m.BWRead == 0 {
		m.BWRead = cfg.Prior.BWRead
	}
	if m.BWNet == 0 {
		m.BWNet = cfg.Prior.BWNet
	}
	if m.StartupCost == 0 {
		m.StartupCost = cfg.StartupCost
	}
	if cfg.Mechanism != preempt.SettingKill && e.sp != nil {
		return fmt.Errorf("preemption.mechanism=%s with speculation is not modelled in the simulator", cfg.Mechanism)
	}
	if cfg.ScaleUp && e.sp != nil {
		return fmt.Errorf("%s with speculation is not modelled in the simulator", preempt.KeyScaleUp)
	}
	p := preempt.New(cfg)
	e.d.SetPlanner(p)
	e.pre = &preState{pl: p, cfg: cfg, m: m, mech: cfg.Mechanism, busy: make([]time.Duration, len(e.trackers)),
		saved: map[taskKey]saved{}, rel: map[*attempt]releasing{}, resumed: map[*attempt]resumedFrom{},
		stats: &PreemptStats{Mechanism: cfg.Mechanism}}
	e.res.Preemption = e.pre.stats
	if cfg.ScaleUp {
		e.pre.scaleUp = &ScaleUpStats{}
		e.res.ScaleUp = e.pre.scaleUp
	}
	e.d.OnPreempt(func(a sched.PreemptAction) {
		switch a.Mech {
		case preempt.MechKill:
			e.pre.stats.Kills++
		case preempt.MechWait:
			e.pre.stats.Waits++
		}
	})
	return nil
}

func (e *engine) memory(sj *simJob) int64 {
	if sj.spec.Memory > 0 {
		return sj.spec.Memory
	}
	return e.pre.m.TaskMemory
}

func byteDur(bytes int64, bps float64) time.Duration {
	return time.Duration(math.Round(float64(bytes) / bps * float64(time.Second)))
}

// attemptFor finds a running attempt by the driver's name.
func (e *engine) attemptFor(a sched.Attempt) (*attempt, error) {
	sj := e.find(a.Job)
	if sj == nil {
		return nil, fmt.Errorf("job %s is not running", a.Job)
	}
	for el := sj.running[a.Type].Front(); el != nil; el = el.Next() {
		if at := el.Value.(*attempt); at.task == a.Task && at.num == a.Attempt {
			return at, nil
		}
	}
	return nil, fmt.Errorf("attempt %s is not running", a)
}

// Describe implements sched.Describer: the simulator knows an attempt's
// true remaining time.
func (h simHost) Describe(a sched.Attempt) preempt.Candidate {
	e := h.e
	at, err := e.attemptFor(a)
	if err != nil || e.pre == nil {
		return preempt.Candidate{Remaining: -1}
	}
	from := e.usefulFrom(at)
	// An attempt ordered split for scale-up is releasing already.
	_, rel := e.pre.rel[at]
	c := preempt.Candidate{Node: e.trackers[at.tracker].name, RSSBytes: e.memory(at.job), Progressed: max(e.now-from, 0), Remaining: -1,
		CanCheckpoint: !e.pre.m.NoCheckpoint && !at.waiting && !rel, Splittable: e.pre.m.Splittable && !at.waiting && !rel}
	if !at.waiting {
		c.Remaining = max(at.end-e.now, 0)
	}
	return c
}

// Checkpoint implements sched.Checkpointer: the dump is queued on the
// attempt's tracker. By preemption.checkpoint.release-slot:
//   - dumped: the attempt runs until its dump starts and its slot is free
//     when the dump ends;
//   - frozen: the same, but the slot is free when the dump starts;
//   - quiesced: the attempt stops at once (its quiet point) and frees its
//     slot; its dump runs when the queue reaches it.
//
// The image is ready when the dump ends, whenever the slot was freed. An
// attempt that would finish before it stops just finishes.
func (h simHost) Checkpoint(a sched.Attempt, _ bool) error {
	e := h.e
	at, err := e.attemptFor(a)
	if err != nil {
		return err
	}
	if at.waiting {
		return fmt.Errorf("attempt %s waits for its job's maps: not checkpointed in the simulator", a)
	}
	if _, rel := e.pre.rel[at]; rel {
		return fmt.Errorf("attempt %s is being split", a)
	}
	start := max(e.now, e.pre.busy[at.tracker])
	stop, free := start, start // when it stops working; when its slot is free
	switch e.pre.cfg.Release {
	case preempt.ReleaseAtQuiet:
		stop, free = e.now, e.now
	case preempt.ReleaseAtFreeze:
	default:
		free = -1 // at the dump's end
	}
	if at.end <= stop {
		return nil
	}
	bytes := e.memory(at.job)
	d := byteDur(bytes, e.pre.m.BWWrite)
	e.pre.busy[at.tracker] = start + d
	early := free >= 0
	if !early {
		free = start + d
	}
	from := e.usefulFrom(at)
	e.pre.rel[at] = releasing{mech: preempt.MechCkpt, work: at.end - stop, dump: d, bytes: bytes, progress: stop - from,
		ready: start + d, early: early}
	at.end = -1 // its finish event is stale now
	e.push(&event{at: free, kind: evPreempted, att: at})
	if early {
		e.push(&event{at: start + d, kind: evDumpEnded, att: at})
	}
	return nil
}

// Split implements sched.Splitter: the attempt reaches its safe point one
// heartbeat after the order (the order travels in the heartbeat reply)
// and its slot is free then; one that finishes before just finishes. A
// reduce that waits for its job's maps (shuffling) is not split.
func (h simHost) Split(a sched.Attempt) error {
	e := h.e
	at, err := e.attemptFor(a)
	if err != nil {
		return err
	}
	if at.waiting {
		return fmt.Errorf("attempt %s waits for its job's maps: a reduce is split in its reduce phase only", a)
	}
	if _, rel := e.pre.rel[at]; rel {
		return fmt.Errorf("attempt %s is being split already", a)
	}
	sp := e.now + e.opt.Heartbeat
	if at.end <= sp {
		return nil
	}
	from := e.usefulFrom(at)
	e.pre.rel[at] = releasing{mech: preempt.MechSplit, work: at.end - sp, progress: sp - from}
	at.end = -1
	e.push(&event{at: sp, kind: evPreempted, att: at})
	return nil
}

// preempted ends a victim whose dump ended or which reached its safe
// point: its slot is free and its task waits to resume with the work it
// had left.
func (e *engine) preempted(at *attempt) {
	r, ok := e.pre.rel[at]
	if !ok || at.killed || at.done {
		return
	}
	delete(e.pre.rel, at)
	delete(e.pre.resumed, at)
	sj := at.job
	sj.running[at.typ].Remove(at.elem)
	at.killed = true
	t := &e.trackers[at.tracker]
	s := saved{work: r.work}
	st := e.pre.stats
	st.WorkSavedSeconds += r.progress.Seconds()
	switch {
	case r.pieces > 1:
		// A scale-up split, not a preemption victim.
		s.work = e.addPieces(at, r)
	case r.mech == preempt.MechSplit:
		st.Splits++
	default:
		s.image, s.node, s.bytes, s.ready = true, at.tracker, r.bytes, r.ready
		st.Checkpoints++
		st.ImageBytes += r.bytes
		st.DumpSeconds += r.dump.Seconds()
		if !r.early {
			// An early release's dump runs beside the slot's next task:
			// it holds the tracker's queue (the driver's DumpEnded), not
			// the slot.
			e.res.WastedSlotSeconds += r.dump.Seconds()
		}
		// The planner learns the medium from the dumps made.
		_ = e.pre.pl.Observe(t.name, preempt.OpDump, r.bytes, r.dump)
	}
	e.pre.saved[taskKey{sj, at.typ, at.task}] = s
	if at.typ == partitions.Map {
		e.releaseMapSlot(t)
		sj.pendMaps = append([]int{at.task}, sj.pendMaps...)
	} else {
		t.freeReds++
		sj.pendReds = append([]int{at.task}, sj.pendReds...)
	}
	el := e.now - at.start
	e.res.busy[at.typ] += el.Seconds()
	e.syncView(sj)
	if r.early {
		e.d.CheckpointSlotReleased(e.at(), attemptOf(at), el)
	} else {
		e.d.Ended(e.at(), attemptOf(at), el)
	}
}

// resume sets the end of an attempt of a task that waits to resume, and
// reports whether it did: a checkpointed task restores (through its
// tracker's queue, after sending the image when it is elsewhere) and
// then does the work it had left; a split's remainder starts up and does
// the rest.
func (e *engine) resume(at *attempt) bool {
	if e.pre == nil {
		return false
	}
	k := taskKey{at.job, at.typ, at.task}
	s, ok := e.pre.saved[k]
	if !ok {
		return false
	}
	delete(e.pre.saved, k)
	var overhead time.Duration
	if s.image {
		r := byteDur(s.bytes, e.pre.m.BWRead)
		if at.tracker != s.node {
			r += byteDur(s.bytes, e.pre.m.BWNet)
		}
		start := max(e.now, e.pre.busy[at.tracker], s.ready)
		e.pre.busy[at.tracker] = start + r
		overhead = start + r - e.now
		e.pre.stats.RestoreSeconds += r.Seconds()
		e.res.WastedSlotSeconds += overhead.Seconds()
		_ = e.pre.pl.Observe(e.trackers[at.tracker].name, preempt.OpRestore, s.bytes, byteDur(s.bytes, e.pre.m.BWRead))
	} else {
		overhead = e.pre.m.StartupCost
		if at.typ == partitions.Reduce {
			overhead += e.pre.m.ReduceReplay
		}
		e.res.WastedSlotSeconds += overhead.Seconds()
	}
	at.base = overhead + s.work
	at.end = e.now + at.base
	e.pre.resumed[at] = resumedFrom{s: s, useful: e.now + overhead}
	return true
}

// usefulFrom is when the attempt's useful work began: its start, or the
// end of its restore or start-up when it resumed a task.
func (e *engine) usefulFrom(at *attempt) time.Duration {
	if r, ok := e.pre.resumed[at]; ok {
		return r.useful
	}
	return at.start
}

// attemptEnded forgets a finished or killed attempt; a killed one that
// had resumed a task sends the task back to what it resumed from, so it
// loses only what it did since (the planner's Progressed).
func (e *engine) attemptEnded(at *attempt, killed bool) {
	if e.pre == nil {
		return
	}
	if r, ok := e.pre.resumed[at]; ok {
		delete(e.pre.resumed, at)
		if killed {
			e.pre.saved[taskKey{at.job, at.typ, at.task}] = r.s
		}
	}
}
