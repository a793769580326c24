package sim

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"gomr/partitions"
	"gomr/speculator"
)

// Speculation modes of a run.
const (
	// SpecNone runs no speculative attempt (the straggler injector still
	// slows attempts).
	SpecNone = "none"
	// SpecFresh lets the speculator start fresh attempts only (Hadoop's
	// default speculator).
	SpecFresh = "fresh"
	// SpecClone lets it choose, per straggler, a fresh attempt or a CRIU
	// clone, whichever it expects to end first.
	SpecClone = "clone"
)

// SpeculationModes lists the modes in the order --compare-speculation
// runs them.
func SpeculationModes() []string { return []string{SpecNone, SpecFresh, SpecClone} }

// Default clone-cost model of a simulated task (MB = 10^6 bytes).
const (
	DefaultCloneImageMap    int64 = 200e6
	DefaultCloneImageReduce int64 = 500e6
	// DefaultDumpShare is the share of t_vm + image/B spent dumping, when
	// the original is frozen; the rest is the restore. Measured: dump ≈
	// restore ≈ 70 ms + S/1.9 GB/s (spec/criu-clone-mechanism.md).
	DefaultDumpShare = 0.5
)

// Speculation configures speculative execution in a run. The speculator's
// parameters and the straggler injector come from the run's configuration
// keys (speculator.Keys: mapreduce.job.speculative.*, speculation.*,
// straggler.*); the mode overrides speculation.clone.enabled.
type Speculation struct {
	// Mode is SpecNone (or ""), SpecFresh or SpecClone.
	Mode string
	// Clone is what a clone truly costs in the simulated cluster.
	Clone CloneModel
}

// CloneModel is the true cost of cloning a simulated attempt: the clone
// starts running t_vm + image/B + fileSet/B_copy after it is launched
// beside its source; the original is frozen for the dump, DumpShare of
// t_vm + image/B, and the file set is copied after it resumed, as the
// TaskTracker does. Zero fields take the defaults: images of 200 MB (map)
// and 500 MB (reduce), no file set, and the speculator's default priors
// t_vm = 140 ms, B = 0.95 GB/s, B_copy = 40 MB/s, which were measured on
// this project's machines. The speculator's estimate starts from its own
// configured priors (speculation.clone.*) and learns from every clone
// made, through Estimator.Observe.
type CloneModel struct {
	// ImageBytes and FileSetBytes are indexed by task type (map, reduce).
	ImageBytes   [2]int64
	FileSetBytes [2]int64
	TVM          time.Duration
	ImageBps     float64
	CopyBps      float64
	DumpShare    float64
}

// resolved fills in the defaults and checks the model.
func (c CloneModel) resolved() (CloneModel, error) {
	def := speculator.DefaultParams().Estimator
	if c.ImageBytes[partitions.Map] == 0 {
		c.ImageBytes[partitions.Map] = DefaultCloneImageMap
	}
	if c.ImageBytes[partitions.Reduce] == 0 {
		c.ImageBytes[partitions.Reduce] = DefaultCloneImageReduce
	}
	if c.TVM == 0 {
		c.TVM = def.TVM
	}
	if c.ImageBps == 0 {
		c.ImageBps = def.ImageBps
	}
	if c.CopyBps == 0 {
		c.CopyBps = def.CopyBps
	}
	if c.DumpShare == 0 {
		c.DumpShare = DefaultDumpShare
	}
	for t := range 2 {
		if c.ImageBytes[t] < 0 || c.FileSetBytes[t] < 0 {
			return c, fmt.Errorf("clone model: image %d B and file set %d B of a %v must not be negative", c.ImageBytes[t], c.FileSetBytes[t], partitions.TaskType(t))
		}
	}
	switch {
	case c.TVM < 0:
		return c, fmt.Errorf("clone model: t_vm %v must not be negative", c.TVM)
	case !(c.ImageBps > 0) || math.IsInf(c.ImageBps, 0) || !(c.CopyBps > 0) || math.IsInf(c.CopyBps, 0):
		return c, fmt.Errorf("clone model: image bandwidth %g B/s and copy bandwidth %g B/s must be positive and finite", c.ImageBps, c.CopyBps)
	case !(c.DumpShare > 0 && c.DumpShare <= 1):
		return c, fmt.Errorf("clone model: dump share %g must be in (0, 1]", c.DumpShare)
	}
	return c, nil
}

// SpecStats count a run's speculative attempts (JSON: the `speculation`
// object of a policy's report).
type SpecStats struct {
	Mode string `json:"mode"`
	// FreshAttempts and Clones are the speculative attempts launched.
	FreshAttempts int64 `json:"fresh_attempts"`
	Clones        int64 `json:"clones"`
	// Wins counts the speculative attempts that finished their task
	// first; CloneWins those of them that were clones.
	Wins      int64 `json:"wins"`
	CloneWins int64 `json:"clone_wins"`
	// Killed counts the attempts (originals or speculative) killed because
	// another attempt of their task finished first.
	Killed int64 `json:"killed"`
	// Dropped counts speculative attempts decided but never launched: the
	// task ended (or its source was preempted) while they waited for a
	// slot. FreshDropped and CloneDropped split them by kind.
	FreshDropped int64 `json:"-"`
	CloneDropped int64 `json:"-"`
	// FreshWait and CloneWait sum the time launched speculative attempts
	// waited for a slot after the decision.
	FreshWait time.Duration `json:"-"`
	CloneWait time.Duration `json:"-"`
	// The speculator's clone-cost inputs at the end of the run (learnt
	// from EstSamples clones), for tables.
	EstTVM      time.Duration `json:"-"`
	EstImageBps float64       `json:"-"`
	EstCopyBps  float64       `json:"-"`
	EstSamples  int           `json:"-"`
}

type specKind int8

const (
	noSpec specKind = iota
	freshSpec
	cloneSpec
)

// taskState is one task of a job when speculation is on.
type taskState struct {
	// live are the task's running attempts, oldest first.
	live []*attempt
	done bool
	// pend is the speculative attempt decided and waiting for a slot.
	pend       *pendingSpec
	speculated bool
	id         string // the speculator's task id, made on first use
}

// pendingSpec is a speculative attempt the speculator asked for, waiting
// for a slot: a fresh one on a tracker other than its source's, a clone on
// any tracker (every simulated tracker has CRIU; as in the JobTracker, a
// clone may land on its source's tracker or another one).
type pendingSpec struct {
	kind    speculator.Kind
	typ     partitions.TaskType
	task    int
	src     *attempt
	decided time.Duration
}

func (ps *pendingSpec) fits(tracker int) bool {
	if ps.kind == speculator.Clone {
		return true
	}
	return ps.src.tracker != tracker
}

// specState is a run's speculation: one speculator for all jobs (so one
// clone-cost estimator learns from every clone), the true clone costs,
// whether a scan is scheduled and how many speculative attempts wait for
// a slot.
type specState struct {
	sp      *speculator.Speculator
	clone   CloneModel
	armed   bool
	waiting int
	// waitJobs are the jobs with speculative attempts waiting, in the
	// order they got their first.
	waitJobs []*simJob
}

// confMap gives configuration values by key; a missing key reads as
// empty, which the speculator takes as its default.
type confMap map[string]string

func (m confMap) String(key string) string { return m[key] }

// isSpeculatorKey tells the speculator's and the straggler injector's keys
// from the policies'.
func isSpeculatorKey(key string) bool {
	for _, k := range speculator.Keys() {
		if k.Name == key {
			return true
		}
	}
	return false
}

func typeLetter(t partitions.TaskType) string {
	if t == partitions.Map {
		return "m"
	}
	return "r"
}

// attemptID is the id of attempt n of a task of the job at position job
// of the workload, shaped like the runtime's
// (attempt_<cluster>_<job>_<m|r>_<index>_<n>) so that the straggler
// injector's task scope finds the task in it.
func attemptID(job int, t partitions.TaskType, task, n int) string {
	return fmt.Sprintf("attempt_sim_%04d_%s_%06d_%d", job+1, typeLetter(t), task, n)
}

func taskID(job int, t partitions.TaskType, task int) string {
	return fmt.Sprintf("task_sim_%04d_%s_%06d", job+1, typeLetter(t), task)
}

// slowed is d × (1+k).
func slowed(d time.Duration, k float64) time.Duration {
	if k == 0 {
		return d
	}
	return time.Duration(math.Round(float64(d) * (1 + k)))
}

func secs(s float64) time.Duration { return time.Duration(math.Round(s * float64(time.Second))) }

// progress is the attempt's progress at now: linear in its own running
// time over its own (slowed) duration, held while it is frozen.
func (a *attempt) progress(now time.Duration) float64 {
	switch {
	case a.waiting:
		return 0
	case now <= a.pFrom:
		return a.pAt
	case now >= a.end:
		return 1
	}
	return a.pAt + (1-a.pAt)*float64(now-a.pFrom)/float64(a.end-a.pFrom)
}

// setupSpeculation reads the straggler injector and, unless the mode is
// none, the speculator from conf.
func (e *engine) setupSpeculation(conf confMap) error {
	strag, err := speculator.StragglersFromConfig(conf)
	if err != nil {
		return err
	}
	e.strag = strag
	e.ids = strag.Fraction > 0
	mode := e.opt.Speculation.Mode
	switch mode {
	case "", SpecNone:
		return nil
	case SpecFresh, SpecClone:
	default:
		return fmt.Errorf("speculation mode %q: want %s", mode, strings.Join(SpeculationModes(), ", "))
	}
	p, err := speculator.FromConfig(conf)
	if err != nil {
		return err
	}
	if p.RetryNoSpec <= 0 || p.RetryAfterSpec <= 0 {
		return fmt.Errorf("speculation scan periods %s=%v and %s=%v must be positive in the simulator",
			speculator.KeyRetryNoSpec, p.RetryNoSpec, speculator.KeyRetryAfterSpec, p.RetryAfterSpec)
	}
	p.CloneEnabled = mode == SpecClone
	cm, err := e.opt.Speculation.Clone.resolved()
	if err != nil {
		return err
	}
	e.sp = &specState{sp: speculator.New(p), clone: cm}
	e.ids = true
	e.res.Speculation = &SpecStats{Mode: mode}
	return nil
}

// armScan schedules a scan RetryNoSpec from now unless one is scheduled.
func (e *engine) armScan() {
	if e.sp.armed {
		return
	}
	e.sp.armed = true
	e.push(&event{at: e.now + e.sp.sp.Params().RetryNoSpec, kind: evScan})
}

// scan runs one speculation scan of every active job, as the
// JobTracker's speculation loop does, and schedules the next one after
// NextScanAfter (scans take no virtual time). With no active job the
// scans stop until the next arrival. It reports whether it decided any
// speculative attempt.
func (e *engine) scan() bool {
	e.sp.armed = false
	if len(e.active) == 0 {
		return false
	}
	now := e.at()
	launched := false
	for _, sj := range e.active {
		if sj.running[partitions.Map].Len()+sj.running[partitions.Reduce].Len() == 0 {
			continue // nothing to speculate
		}
		view := e.specView(sj)
		for _, d := range e.sp.sp.Scan(now, view, "") {
			if e.decide(sj, d) {
				launched = true
			}
		}
	}
	e.sp.armed = true
	e.push(&event{at: e.now + e.sp.sp.NextScanAfter(launched, 0), kind: evScan})
	return launched
}

// specView is the speculator's view of a job, built as the JobTracker
// builds it: per type, the pending count, the first-success durations and
// the tasks with live attempts.
func (e *engine) specView(sj *simJob) *speculator.JobView {
	jv := &speculator.JobView{ID: sj.spec.ID}
	for _, typ := range []partitions.TaskType{partitions.Map, partitions.Reduce} {
		tv := jv.Type(typ)
		tv.Total = len(sj.tasks[typ])
		tv.Pending = len(sj.pendMaps)
		if typ == partitions.Reduce {
			tv.Pending = len(sj.pendReds)
		}
		if sj.running[typ].Len() == 0 {
			continue // no task to judge: skip the statistics
		}
		tv.Finished = sj.finished[typ]
		for el := sj.running[typ].Front(); el != nil; el = el.Next() {
			at := el.Value.(*attempt)
			ts := &sj.tasks[typ][at.task]
			if len(ts.live) == 0 || ts.live[0] != at {
				continue // a task appears once, with its oldest attempt
			}
			if ts.id == "" {
				ts.id = taskID(sj.idx, typ, at.task)
			}
			v := speculator.TaskView{ID: ts.id, SpeculativePending: ts.pend != nil, Speculated: ts.speculated}
			for _, a := range ts.live {
				v.Attempts = append(v.Attempts, e.attemptView(a))
			}
			tv.Tasks = append(tv.Tasks, v)
		}
	}
	return jv
}

// attemptView is what the speculator sees of an attempt: a running
// attempt reports its progress now; a reduce waiting for the map stage, or
// a clone being made, has no usable report yet; a frozen original last
// reported when it was frozen.
func (e *engine) attemptView(a *attempt) speculator.AttemptView {
	start := epoch.Add(a.start)
	v := speculator.AttemptView{ID: a.id, Tracker: e.trackers[a.tracker].name, Start: start,
		ReportAt: start, ProgressChangedAt: start,
		RSSBytes: e.sp.clone.ImageBytes[a.typ], FileSetBytes: e.sp.clone.FileSetBytes[a.typ],
		BeingCloned: a.cloning != nil}
	making := a.kind == cloneSpec && e.now < a.ready
	switch {
	case a.waiting || making:
	case e.now < a.pFrom:
		v.Progress = a.pAt
		v.ReportAt = epoch.Add(a.frozeAt)
		v.ProgressChangedAt = v.ReportAt
	default:
		v.Progress = a.progress(e.now)
		v.ReportAt = e.at()
		v.ProgressChangedAt = v.ReportAt
	}
	if a.kind == cloneSpec && !making {
		v.StartProgress = a.p0
	}
	// Every simulated tracker has a working CRIU; an attempt can be
	// cloned once it runs in a phase with a quiet point (for a reduce,
	// its reduce phase), as the TaskTracker reports it.
	v.CRIU = !a.waiting && !making && e.now >= a.cloneFrom && e.now >= a.pFrom
	// Every simulated tracker has the same slots: a fresh attempt, never
	// beside its original, needs a second tracker.
	v.NoOtherTracker = len(e.trackers) < 2
	return v
}

// decide records a speculator decision as a speculative attempt waiting
// for a slot; it reports whether it did.
func (e *engine) decide(sj *simJob, d speculator.Decision) bool {
	i := strings.LastIndexByte(d.TaskID, '_')
	task, err := strconv.Atoi(d.TaskID[i+1:])
	if err != nil || task < 0 || task >= len(sj.tasks[d.Type]) {
		return false
	}
	ts := &sj.tasks[d.Type][task]
	if ts.done || ts.pend != nil || len(ts.live) != 1 || ts.live[0].id != d.Source {
		return false
	}
	ps := &pendingSpec{kind: d.Kind, typ: d.Type, task: task, src: ts.live[0], decided: e.now}
	ts.pend, ts.speculated = ps, true
	if len(sj.specWait[partitions.Map])+len(sj.specWait[partitions.Reduce]) == 0 {
		e.sp.waitJobs = append(e.sp.waitJobs, sj)
	}
	sj.specWait[d.Type] = append(sj.specWait[d.Type], ps)
	e.sp.waiting++
	return true
}

// specViews returns the job views of an offer of tracker ti: e.views, or
// while speculative attempts wait, a copy of them in which those that may
// run on ti count as pending tasks of their jobs, so that the policy gives
// them slots like any task.
func (e *engine) specViews(ti int) []partitions.JobView {
	if e.sp == nil || e.sp.waiting == 0 {
		return e.views
	}
	e.specBuf = append(e.specBuf[:0], e.views...)
	for _, sj := range e.sp.waitJobs {
		if sj.viewIdx >= len(e.specBuf) || e.specBuf[sj.viewIdx].ID != sj.spec.ID {
			continue
		}
		v := &e.specBuf[sj.viewIdx]
		for _, ps := range sj.specWait[partitions.Map] {
			if ps.fits(ti) {
				v.PendingMaps++
			}
		}
		for _, ps := range sj.specWait[partitions.Reduce] {
			if ps.fits(ti) {
				v.PendingReduces++
			}
		}
	}
	return e.specBuf
}

// specFits tells whether a speculative attempt of type t waits that may
// run on tracker ti.
func (e *engine) specFits(t partitions.TaskType, ti int) bool {
	if e.sp == nil || e.sp.waiting == 0 {
		return false
	}
	for _, sj := range e.sp.waitJobs {
		for _, ps := range sj.specWait[t] {
			if ps.fits(ti) {
				return true
			}
		}
	}
	return false
}

// takeSpec takes the job's first speculative attempt of type typ that may
// run on tracker ti.
func (e *engine) takeSpec(sj *simJob, typ partitions.TaskType, ti int) *pendingSpec {
	for _, ps := range sj.specWait[typ] {
		if ps.fits(ti) {
			e.unwait(sj, ps)
			return ps
		}
	}
	return nil
}

// unwait removes a speculative attempt from the waiting ones.
func (e *engine) unwait(sj *simJob, ps *pendingSpec) {
	w := sj.specWait[ps.typ]
	for i, x := range w {
		if x == ps {
			sj.specWait[ps.typ] = append(w[:i], w[i+1:]...)
			e.sp.waiting--
			break
		}
	}
	if len(sj.specWait[partitions.Map])+len(sj.specWait[partitions.Reduce]) == 0 {
		for i, x := range e.sp.waitJobs {
			if x == sj {
				e.sp.waitJobs = append(e.sp.waitJobs[:i], e.sp.waitJobs[i+1:]...)
				break
			}
		}
	}
	if ts := &sj.tasks[ps.typ][ps.task]; ts.pend == ps {
		ts.pend = nil
	}
}

// cloneCost is the true cost of cloning an attempt of type t: the dump
// (the original is frozen), the file-set copy and the restore.
func (e *engine) cloneCost(t partitions.TaskType) (dump, copy, restore time.Duration) {
	c := &e.sp.clone
	dr := c.TVM.Seconds() + float64(c.ImageBytes[t])/c.ImageBps
	dump = secs(c.DumpShare * dr)
	restore = secs(dr) - dump
	copy = secs(float64(c.FileSetBytes[t]) / c.CopyBps)
	return dump, copy, restore
}

// launchSpec starts a speculative attempt on tracker ti, whose slot is
// taken. A fresh attempt runs its task from the start (unslowed unless
// straggler.speculative). A clone starts at its source's progress p0,
// runs after the clone cost, then does the remaining (1-p0) of its
// source's unslowed work; the source is frozen for the dump.
func (e *engine) launchSpec(ti int, sj *simJob, ps *pendingSpec, queue int) {
	kind := freshSpec
	if ps.kind == speculator.Clone {
		kind = cloneSpec
	}
	at := e.newAttempt(sj, ps.typ, ps.task, ti, queue, kind)
	if kind == freshSpec {
		e.res.Speculation.FreshAttempts++
		e.res.Speculation.FreshWait += e.now - ps.decided
		sj.rec.SpecFresh++
		e.schedule(at)
		e.started(at)
		return
	}
	src := ps.src
	dump, cp, restore := e.cloneCost(ps.typ)
	p0 := src.progress(e.now)
	at.src, at.p0, at.pAt = src, p0, p0
	at.ready = e.now + dump + cp + restore
	at.pFrom, at.cloneFrom = at.ready, at.ready
	at.base = time.Duration(math.Round((1 - p0) * float64(src.base)))
	at.end = at.ready + slowed(at.base, at.k)
	at.meas = speculator.CloneMeasurement{ImageBytes: e.sp.clone.ImageBytes[ps.typ], Dump: dump, Restore: restore,
		TransferBytes: e.sp.clone.FileSetBytes[ps.typ], Transfer: cp}
	src.pAt, src.frozeAt, src.pFrom = p0, e.now, e.now+dump
	src.cloning = at
	if dump > 0 {
		src.end += dump
		e.push(&event{at: src.end, kind: evFinish, att: src})
	}
	e.push(&event{at: at.ready, kind: evCloneReady, att: at})
	e.res.Speculation.Clones++
	e.res.Speculation.CloneWait += e.now - ps.decided
	sj.rec.SpecClones++
	e.started(at)
}

// cloneReady is the end of making a clone: it runs from now on, and what
// it cost goes to the clone-cost estimator (as the JobTracker does when the
// clone's first status arrives). A clone killed while being made teaches
// nothing.
func (e *engine) cloneReady(at *attempt) error {
	if at.src.cloning == at {
		at.src.cloning = nil
	}
	if at.killed {
		return nil
	}
	if err := e.sp.sp.RecordClone(at.meas); err != nil {
		return fmt.Errorf("simulate: clone %s of %s: %w", at.id, at.src.id, err)
	}
	return nil
}

// settle ends the task of an attempt that finished first: its duration
// joins the speculator's statistics, the task's other attempts are killed
// and a speculative attempt still waiting for a slot is dropped.
func (e *engine) settle(at *attempt) {
	sj := at.job
	ts := &sj.tasks[at.typ][at.task]
	ts.done = true
	st := e.res.Speculation
	if at.kind != noSpec {
		st.Wins++
		sj.rec.SpecWins++
		if at.kind == cloneSpec {
			st.CloneWins++
		}
	}
	d := at.end - at.start
	if at.kind == cloneSpec && at.p0 < 1 {
		// A winning clone stands for the whole task: its running time over
		// the share of the work it did (spec §3.7), not its short wall time.
		d = time.Duration(math.Round(float64(at.end-at.ready) / (1 - at.p0)))
	}
	sj.finished[at.typ] = append(sj.finished[at.typ], d)
	for _, o := range ts.live {
		if o != at {
			e.killLoser(o)
		}
	}
	ts.live = nil
	if ts.pend != nil {
		e.drop(sj, ts.pend)
	}
}

// drop forgets a speculative attempt that will never be launched.
func (e *engine) drop(sj *simJob, ps *pendingSpec) {
	if ps.kind == speculator.Clone {
		e.res.Speculation.CloneDropped++
	} else {
		e.res.Speculation.FreshDropped++
	}
	e.unwait(sj, ps)
}

// killLoser kills an attempt whose task another attempt finished.
func (e *engine) killLoser(o *attempt) {
	sj := o.job
	sj.running[o.typ].Remove(o.elem)
	o.killed = true
	t := &e.trackers[o.tracker]
	if o.typ == partitions.Map {
		e.releaseMapSlot(t)
	} else {
		t.freeReds++
	}
	if o.waiting {
		for i, w := range sj.waiting {
			if w == o {
				sj.waiting = append(sj.waiting[:i], sj.waiting[i+1:]...)
				break
			}
		}
	}
	if o.src != nil && o.src.cloning == o {
		o.src.cloning = nil
	}
	el := e.now - o.start
	e.res.busy[o.typ] += el.Seconds()
	e.res.addQueueBusy(o.queue, el.Seconds())
	e.res.Speculation.Killed++
	e.syncView(sj)
	e.d.Ended(e.at(), attemptOf(o), el)
}

// dropAttempt forgets a preempted attempt; it reports whether its task has
// no live attempt left, and so is pending again. A speculative attempt
// waiting to copy or clone it is dropped.
func (e *engine) dropAttempt(at *attempt) bool {
	sj := at.job
	ts := &sj.tasks[at.typ][at.task]
	for i, x := range ts.live {
		if x == at {
			ts.live = append(ts.live[:i], ts.live[i+1:]...)
			break
		}
	}
	if at.src != nil && at.src.cloning == at {
		at.src.cloning = nil
	}
	if ps := ts.pend; ps != nil && ps.src == at {
		e.drop(sj, ps)
	}
	return len(ts.live) == 0
}
