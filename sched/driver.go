// Package sched is the policy driver: the one place that turns what happens
// in a cluster into the events a scheduling policy (package partitions) is
// told, asks the policy for decisions on slot offers, checks each decision
// and carries it out through a Host. The JobTracker and the simulator (and
// the policy test harness, package schedtest) drive their policy through it
// and implement only Host, so a policy sees the same events with the same
// fields, and its decisions are checked and applied by the same rules, on
// the real runtime and in simulation.
//
// What stays with the host: building the ClusterView (how a task counts as
// pending depends on the host's own state: blacklists, data locality,
// speculative attempts waiting for a slot), choosing which pending task an
// assignment runs, and how a kill is carried out (a kill order in a
// heartbeat reply, a freed slot in the simulator).
//
// Preemption: for each Preemption of a decision the driver asks its
// planner (package preempt, SetPlanner; kill only by default) to choose
// victims among the job's live attempts of that type, and a mechanism for
// each, and carries them out through the host: Host.Kill, or the optional
// Checkpointer and Splitter. A host that implements Describer tells the
// planner what each candidate costs to checkpoint or split; one that does
// not implement an interface never gets that mechanism.
package sched

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"gomr/partitions"
	"gomr/preempt"
)

// Attempt names one task attempt the way policies key it.
type Attempt struct {
	Job     string
	Type    partitions.TaskType
	Task    int
	Attempt int
}

// String is "job/m3.0" for attempt 0 of map 3 of job.
func (a Attempt) String() string {
	return fmt.Sprintf("%s/%s%d.%d", a.Job, a.Type.String()[:1], a.Task, a.Attempt)
}

// Host carries out the decisions the driver accepted.
type Host interface {
	// Launch carries out one assignment on the offering tracker: it starts
	// an attempt of a task of the job (a pending task, or a speculative
	// attempt waiting for a slot) and reports it with Driver.Started before
	// it returns true. It returns false when it has nothing it can run
	// there after all (the assignment is dropped, as the policy contract
	// allows); an error stops the offer.
	Launch(offer partitions.SlotOffer, as partitions.Assignment) (bool, error)
	// Kill ends a live attempt the driver chose as a preemption victim and
	// reports its end with Driver.Ended before it returns.
	Kill(a Attempt) error
}

// Describer is a host that describes a live attempt to the preemption
// planner: its tracker, memory, progress, remaining time and what can be
// done with it. A host without it has its victims described by the
// driver alone (run time since start, nothing else known), so they are
// only ever killed.
type Describer interface {
	Describe(a Attempt) preempt.Candidate
}

// Checkpointer is a host that can checkpoint a live attempt (CRIU): it
// orders the dump (incremental: against the attempt's earlier image) and
// returns; the slot is freed later, when the host reports the attempt's
// end with Driver.Ended. An error means the order could not be given; the
// driver then kills the attempt.
type Checkpointer interface {
	Checkpoint(a Attempt, incremental bool) error
}

// Splitter is a host that can split a live attempt at its next safe point
// (Amoeba): it orders the split and returns; the slot is freed later, when
// the host reports the attempt's end with Driver.Ended. An error means the
// order could not be given; the driver then kills the attempt.
type Splitter interface {
	Split(a Attempt) error
}

// PreemptAction is one victim the driver had preempted, for the OnPreempt
// hook.
type PreemptAction struct {
	Time    time.Time
	Attempt Attempt
	// Mech is the mechanism carried out; Planned differs from it when the
	// planned one failed to be ordered (Err) and the attempt was killed.
	Mech, Planned preempt.Mechanism
	Cost          preempt.Cost
	// Bytes is what a checkpoint dumps.
	Bytes int64
	Err   error
}

// DecisionError is a policy decision the driver refused, whole: nothing of
// it was carried out.
type DecisionError struct {
	Policy  string
	Tracker string
	// Problem says which rule the decision broke.
	Problem string
}

func (e *DecisionError) Error() string {
	return fmt.Sprintf("policy %s, offer of tracker %s: invalid decision: %s", e.Policy, e.Tracker, e.Problem)
}

// Stats count what the driver did.
type Stats struct {
	// Offers is the number of Offer calls, Refused the decisions refused.
	Offers, Refused int
	// Launched and Spare count attempts started by assignments (Spare: of
	// them, those lent beyond a quota, MinEDF-WC), by task type; Dropped
	// counts assignments the host could not carry out.
	Launched, Spare [2]int
	Dropped         int
	// Preempted counts attempts killed for preemptions, by task type.
	Preempted [2]int
	// Mechanisms counts preemption victims by mechanism (preempt.Mech*)
	// and task type: kills (as Preempted), and the checkpoints, splits
	// and waits ordered.
	Mechanisms [preempt.NumMechanisms][2]int
	// Fallbacks counts checkpoints and splits the host could not order,
	// killed instead.
	Fallbacks int
}

// Outcome is what one Offer did.
type Outcome struct {
	// Launched counts the attempts started, by task type; Preempted the
	// attempts killed (their slots are free); Releasing the victims
	// ordered to checkpoint or split, or left to finish (their slots are
	// not free yet).
	Launched  [2]int
	Preempted int
	Releasing int
}

// live is a running attempt as the driver knows it.
type live struct {
	a     Attempt
	start time.Time
	seq   uint64
}

type jobState struct {
	live map[Attempt]live
}

// Driver feeds one policy. It is not safe for concurrent use: the
// JobTracker calls it under its lock.
type Driver struct {
	pol  partitions.Policy
	jobs map[string]*jobState
	seq  uint64
	// onEvent, when set, sees every event after the policy did;
	// onDecision every decision before it is carried out.
	onEvent    func(partitions.Event)
	onDecision func(*partitions.ClusterView, partitions.SlotOffer, partitions.Decision, error)
	onPreempt  func(PreemptAction)
	stats      Stats
	// during an Offer: the assignment being launched and how many starts
	// it reported.
	launching *partitions.Assignment
	starts    int
	// planner chooses preemption victims and mechanisms; killing marks
	// the victim being killed, for its TaskFailed.
	planner *preempt.Planner
	killing *Attempt
	// viewPos indexes the offered views' jobs by ID for check; kept
	// across Offers and rebuilt when the view's job list changed.
	viewPos map[string]int
}

// New makes a driver for the policy. It preempts by killing, as Hadoop
// does, until SetPlanner gives it another planner.
func New(p partitions.Policy) *Driver {
	return &Driver{pol: p, jobs: map[string]*jobState{}, planner: preempt.New(preempt.DefaultConfig())}
}

// SetPlanner sets the preemption planner (nil: the default, kill only).
// Call it before the first Offer.
func (d *Driver) SetPlanner(p *preempt.Planner) {
	if p == nil {
		p = preempt.New(preempt.DefaultConfig())
	}
	d.planner = p
}

// Planner returns the preemption planner (a host reports the dumps,
// restores and transfers it measures to it: Planner().Observe).
func (d *Driver) Planner() *preempt.Planner { return d.planner }

// OnPreempt sets a function that sees every preemption victim as the
// driver has it preempted.
func (d *Driver) OnPreempt(f func(PreemptAction)) { d.onPreempt = f }

// Policy returns the driven policy.
func (d *Driver) Policy() partitions.Policy { return d.pol }

// OnEvent sets a function that sees every event after the policy did (the
// simulator samples the policy's timers with it).
func (d *Driver) OnEvent(f func(partitions.Event)) { d.onEvent = f }

// OnDecision sets a function that sees every decision of the policy, with
// the view and offer it answers and the driver's verdict on it (nil, or
// the *DecisionError that refused it), before the decision is carried out
// (the conformance tests record transcripts with it).
func (d *Driver) OnDecision(f func(*partitions.ClusterView, partitions.SlotOffer, partitions.Decision, error)) {
	d.onDecision = f
}

// Stats returns what the driver did so far.
func (d *Driver) Stats() Stats { return d.stats }

func (d *Driver) observe(ev partitions.Event) {
	d.pol.Observe(ev)
	if d.onEvent != nil {
		d.onEvent(ev)
	}
}

// Submitted tells the policy of a new job; view describes it at its
// submission. A job already known is ignored.
func (d *Driver) Submitted(now time.Time, view partitions.JobView) {
	if d.jobs[view.ID] != nil {
		return
	}
	d.jobs[view.ID] = &jobState{live: map[Attempt]live{}}
	v := view
	d.observe(partitions.Event{Time: now, Kind: partitions.JobSubmitted, JobID: view.ID, Job: &v})
}

// Known tells whether a job was submitted and has not finished.
func (d *Driver) Known(job string) bool { return d.jobs[job] != nil }

// Started tells the policy an attempt started. An attempt of an unknown job,
// or one already running, is ignored.
func (d *Driver) Started(now time.Time, a Attempt) {
	js := d.jobs[a.Job]
	if js == nil {
		return
	}
	if _, dup := js.live[a]; dup {
		return
	}
	d.seq++
	js.live[a] = live{a: a, start: now, seq: d.seq}
	if d.launching != nil {
		d.starts++
	}
	d.observe(partitions.Event{Time: now, Kind: partitions.TaskStarted, JobID: a.Job, Type: a.Type, Task: a.Task, Attempt: a.Attempt})
}

// Succeeded tells the policy an attempt succeeded and with it its task,
// after running for ran. Only an attempt that is running counts.
func (d *Driver) Succeeded(now time.Time, a Attempt, ran time.Duration) {
	if !d.end(a) {
		return
	}
	if !d.planner.Idle() {
		d.planner.Released(now, a.String())
	}
	d.observe(partitions.Event{Time: now, Kind: partitions.TaskFinished, JobID: a.Job, Type: a.Type, Task: a.Task, Attempt: a.Attempt, Duration: ran})
}

// Ended tells the policy an attempt ended without its task succeeding by
// it: failed, killed, lost, or a speculative race lost. It is idempotent:
// an attempt that is not running is ignored, so a host may report an end
// from every path that ends an attempt.
//
// The end of a victim being checkpointed or split is how the host reports
// that the mechanism freed its slot; the TaskFailed event then carries the
// mechanism (PreemptedBy), as it does for a victim killed.
func (d *Driver) Ended(now time.Time, a Attempt, ran time.Duration) {
	if !d.end(a) {
		return
	}
	by := ""
	if !d.planner.Idle() {
		// (Idle: no victim is being released, and the attempt's name,
		// a string a task end, is not needed.)
		id := a.String()
		if m, ok := d.planner.Releasing(id); ok && m != preempt.MechWait {
			by = m.String()
		}
		d.planner.Released(now, id)
	}
	if by == "" && d.killing != nil && *d.killing == a {
		by = preempt.MechKill.String()
	}
	d.observe(partitions.Event{Time: now, Kind: partitions.TaskFailed, JobID: a.Job, Type: a.Type, Task: a.Task, Attempt: a.Attempt, Duration: ran, PreemptedBy: by})
}

// CheckpointSlotReleased tells the policy and the planner that the
// tracker of attempt a, being checkpointed, counts its slot free before
// its dump ended (preemption.checkpoint.release-slot frozen or quiesced):
// the attempt ends for the policy (Ended: its slot is free, as a killed
// victim's would be), while its dump stays in the planner's mirror of
// the tracker's queue until DumpEnded. The host keeps the task from
// running again until the image is kept (or the dump failed).
func (d *Driver) CheckpointSlotReleased(now time.Time, a Attempt, ran time.Duration) {
	d.planner.ReleasedEarly(a.String())
	d.Ended(now, a, ran)
}

// DumpEnded tells the planner that the dump of an attempt whose slot was
// released early (CheckpointSlotReleased) has ended, its image kept or
// not: it leaves the mirror of its tracker's queue. Other attempts are
// ignored.
func (d *Driver) DumpEnded(now time.Time, a Attempt) {
	d.planner.DumpEnded(now, a.String())
}

func (d *Driver) end(a Attempt) bool {
	js := d.jobs[a.Job]
	if js == nil {
		return false
	}
	if _, ok := js.live[a]; !ok {
		return false
	}
	delete(js.live, a)
	return true
}

// Running tells whether the driver counts an attempt as running.
func (d *Driver) Running(a Attempt) bool {
	js := d.jobs[a.Job]
	if js == nil {
		return false
	}
	_, ok := js.live[a]
	return ok
}

// MapOutputLost tells the policy that a finished map of a job lost its
// output and is pending again.
func (d *Driver) MapOutputLost(now time.Time, job string, task int) {
	if d.jobs[job] == nil {
		return
	}
	d.observe(partitions.Event{Time: now, Kind: partitions.MapOutputLost, JobID: job, Type: partitions.Map, Task: task})
}

// TasksAdded tells the policy that a running job has n more tasks of a
// type: a scale-up split cut a running task's remainder into pieces that
// run as new tasks, pending from now (partitions.TasksAdded). The host's
// views count them from now on too. n <= 0, or a job the driver does not
// know, is ignored.
func (d *Driver) TasksAdded(now time.Time, job string, typ partitions.TaskType, n int) {
	if d.jobs[job] == nil || n <= 0 {
		return
	}
	d.observe(partitions.Event{Time: now, Kind: partitions.TasksAdded, JobID: job, Type: typ, Count: n})
}

// Finished tells the policy a job ended (succeeded, failed or killed).
// Attempts of the job still running are ended first (TaskFailed), so the
// policy's own counts never keep a finished job's attempts.
func (d *Driver) Finished(now time.Time, job string) {
	js := d.jobs[job]
	if js == nil {
		return
	}
	for _, l := range sortedLive(js, nil, -1) {
		d.Ended(now, l.a, now.Sub(l.start))
	}
	delete(d.jobs, job)
	d.observe(partitions.Event{Time: now, Kind: partitions.JobFinished, JobID: job})
}

// sortedLive lists a job's running attempts (of one type when typ is not
// nil), oldest first: the newest of them only, with newest 0 or more.
func sortedLive(js *jobState, typ *partitions.TaskType, newest int) []live {
	of := func(l live) bool { return typ == nil || l.a.Type == *typ }
	if newest == 0 {
		return nil
	}
	// The oldest seq kept: with newest given, the newest-th largest, found
	// by sorting the seqs alone (8 bytes each) rather than the attempts.
	var from uint64
	if newest > 0 && newest < len(js.live) {
		seqs := make([]uint64, 0, len(js.live))
		for _, l := range js.live {
			if of(l) {
				seqs = append(seqs, l.seq)
			}
		}
		if newest < len(seqs) {
			slices.Sort(seqs)
			from = seqs[len(seqs)-newest]
		}
	}
	n := len(js.live)
	if newest > 0 {
		n = min(n, newest)
	}
	out := make([]live, 0, n)
	for _, l := range js.live {
		if of(l) && l.seq >= from {
			out = append(out, l)
		}
	}
	// seqs are unique. slices.SortFunc, not sort.Slice, whose swaps by
	// reflection were most of a preemption's offer at 20,000 live maps.
	slices.SortFunc(out, func(a, b live) int { return cmp.Compare(a.seq, b.seq) })
	return out
}

// Offer asks the policy what to do with a tracker's free slots (the offer)
// given the cluster view, checks the decision, and carries it out through
// the host: first the preemptions (for each, the victims and mechanisms
// the planner chooses: with the default planner the newest attempts of
// the named job and type, killed), then the assignments, in the policy's
// order. A decision that breaks a rule is refused whole with a
// *DecisionError and nothing of it is carried out; a host error stops the
// offer where it happened.
func (d *Driver) Offer(view *partitions.ClusterView, offer partitions.SlotOffer, h Host) (Outcome, error) {
	var out Outcome
	d.stats.Offers++
	dec := d.pol.Offer(view, offer)
	// The planner runs only on preemptions that keep the rules; a
	// checkpoint, a split or a wait frees no slot in this offer, so only
	// kills make their tasks pending again for the assignments.
	var plan []planned
	freed := map[jobType]int{}
	if d.checkPreempt(offer, dec) == nil {
		plan = d.plan(view.Now, dec, h)
		for _, pl := range plan {
			if pl.c.Mech == preempt.MechKill {
				freed[jobType{pl.a.Job, pl.a.Type}]++
			}
		}
	} else {
		for _, p := range dec.Preempt {
			freed[jobType{p.JobID, p.Type}] += max(p.Count, 0)
		}
	}
	err := d.check(view, offer, dec, freed)
	if d.onDecision != nil {
		d.onDecision(view, offer, dec, err)
	}
	if err != nil {
		d.stats.Refused++
		return out, err
	}
	for _, pl := range plan {
		if err := d.carry(view.Now, pl, h, &out); err != nil {
			return out, err
		}
	}
	for i := range dec.Assign {
		as := dec.Assign[i]
		d.launching, d.starts = &as, 0
		ok, err := h.Launch(offer, as)
		starts := d.starts
		d.launching, d.starts = nil, 0
		if err != nil {
			return out, fmt.Errorf("launching a %v of job %s: %w", as.Type, as.JobID, err)
		}
		switch {
		case !ok && starts == 0:
			d.stats.Dropped++
		case ok && starts == 1:
			out.Launched[as.Type]++
			d.stats.Launched[as.Type]++
			if as.Spare {
				d.stats.Spare[as.Type]++
			}
		default:
			return out, fmt.Errorf("launching a %v of job %s: the host reported %d attempt starts for an assignment it says it %s",
				as.Type, as.JobID, starts, map[bool]string{true: "carried out", false: "dropped"}[ok])
		}
	}
	return out, nil
}

type jobType struct {
	job string
	typ partitions.TaskType
}

// planned is one victim of a decision with its group and the planner's
// choice.
type planned struct {
	group string
	a     Attempt
	c     preempt.Choice
}

func group(job string, typ partitions.TaskType) string { return job + "/" + typ.String() }

// reasons maps the policies' reclaim reasons to the planner's.
var reasons = map[partitions.ReclaimReason]preempt.Reason{
	partitions.ReclaimUnspecified:     preempt.ReasonUnspecified,
	partitions.ReclaimPriorityArrival: preempt.ReasonPriorityArrival,
	partitions.ReclaimFairMinShare:    preempt.ReasonFairMinShare,
	partitions.ReclaimFairShare:       preempt.ReasonFairShare,
	partitions.ReclaimDeadlineAtRisk:  preempt.ReasonDeadlineAtRisk,
}

// plan asks the planner for the victims of a decision's preemptions: each
// job and type's candidates are its live attempts, newest first (Hadoop's
// kill order). Preemptions of the same job and type are asked for together.
// A kill-only planner takes the newest attempts it may, passing over those
// being released, so its candidates are only that many: a deadline job's
// arrival under MinEDF-WC at 10,000 trackers kills some thousands of the
// 20,000 running maps, and naming every one of them took most of the
// offer's 25 ms (BenchmarkPreemptKills).
func (d *Driver) plan(now time.Time, dec partitions.Decision, h Host) []planned {
	if len(dec.Preempt) == 0 {
		return nil
	}
	byID := map[string]Attempt{}
	var reqs []preempt.Request
	var of []jobType // the job and type of each request
	at := map[string]int{}
	for _, p := range dec.Preempt {
		g := group(p.JobID, p.Type)
		if i, ok := at[g]; ok {
			reqs[i].Count += p.Count
			continue
		}
		at[g] = len(reqs)
		reqs = append(reqs, preempt.Request{Group: g, Count: p.Count, Reason: reasons[p.Reason], Budget: p.Budget})
		of = append(of, jobType{p.JobID, p.Type})
	}
	for i := range reqs {
		limit := -1 // every live attempt
		if d.planner.KillOnly() {
			limit = reqs[i].Count + d.planner.Busy()
		}
		reqs[i].Victims = d.candidates(now, d.jobs[of[i].job], of[i].typ, h, byID, limit)
	}
	var out []planned
	for i, cs := range d.planner.Plan(now, reqs) {
		for _, c := range cs {
			out = append(out, planned{group: reqs[i].Group, a: byID[c.ID], c: c})
		}
	}
	return out
}

// candidates describes a job's live attempts of a type, newest first, and
// records their ids in byID: at most limit of them (the newest), or all
// with limit negative. With a kill-only planner they are not described: a
// kill needs nothing but the order.
func (d *Driver) candidates(now time.Time, js *jobState, typ partitions.TaskType, h Host, byID map[string]Attempt, limit int) []preempt.Victim {
	ls := sortedLive(js, &typ, limit)
	describe := !d.planner.KillOnly()
	ds, _ := h.(Describer)
	_, canCkpt := h.(Checkpointer)
	_, canSplit := h.(Splitter)
	perTask := map[int]int{}
	if describe {
		for _, l := range ls {
			perTask[l.a.Task]++
		}
	}
	out := make([]preempt.Victim, 0, len(ls))
	for i := len(ls) - 1; i >= 0; i-- {
		l := ls[i]
		c := preempt.Candidate{Progressed: now.Sub(l.start), Remaining: -1}
		if describe {
			if ds != nil {
				c = ds.Describe(l.a)
			}
			c.CanCheckpoint = c.CanCheckpoint && canCkpt
			c.Splittable = c.Splittable && canSplit
			c.Duplicate = c.Duplicate || perTask[l.a.Task] > 1
		}
		id := l.a.String()
		byID[id] = l.a
		out = append(out, preempt.Victim{ID: id, Candidate: c})
	}
	return out
}

// carry has one victim preempted by its planned mechanism. A checkpoint or
// a split the host cannot order falls back to a kill.
func (d *Driver) carry(now time.Time, pl planned, h Host, out *Outcome) error {
	a, c := pl.a, pl.c
	act := PreemptAction{Time: now, Attempt: a, Mech: c.Mech, Planned: c.Mech, Cost: c.Cost, Bytes: c.Bytes}
	if c.Mech != preempt.MechKill {
		// In flight before the order: a host may report the end at once.
		d.planner.Begin(now, pl.group, c)
		var err error
		switch c.Mech {
		case preempt.MechCkpt, preempt.MechCkptInc:
			err = h.(Checkpointer).Checkpoint(a, c.Mech == preempt.MechCkptInc)
		case preempt.MechSplit:
			err = h.(Splitter).Split(a)
		}
		if err != nil {
			d.planner.Released(now, a.String())
			act.Mech, act.Err = preempt.MechKill, fmt.Errorf("%s of %s: %w", c.Mech, a, err)
			d.stats.Fallbacks++
		}
	}
	if act.Mech == preempt.MechKill {
		if d.Running(a) {
			d.killing = &a
			err := h.Kill(a)
			d.killing = nil
			if err != nil {
				return fmt.Errorf("preempting %s: %w", a, err)
			}
			if d.Running(a) {
				return fmt.Errorf("preempting %s: the host did not end the attempt", a)
			}
		}
		out.Preempted++
		d.stats.Preempted[a.Type]++
	} else {
		out.Releasing++
	}
	d.stats.Mechanisms[act.Mech][a.Type]++
	if d.onPreempt != nil {
		d.onPreempt(act)
	}
	return nil
}

// check applies the rules a decision must keep, against the view and the
// offer it answers.
// freed counts, by job and type, the attempts the decision's preemptions
// kill: their tasks are pending again (unless another attempt of the task
// runs, which the host finds at launch), so a decision may give their
// slots back to the same job.
func (d *Driver) check(view *partitions.ClusterView, offer partitions.SlotOffer, dec partitions.Decision, freed map[jobType]int) error {
	bad := func(format string, args ...any) error {
		return &DecisionError{Policy: d.pol.Name(), Tracker: offer.Tracker, Problem: fmt.Sprintf(format, args...)}
	}
	type jt = jobType
	var total [2]int
	per := map[jt]int{}
	for _, as := range dec.Assign {
		if as.Type != partitions.Map && as.Type != partitions.Reduce {
			return bad("assignment of unknown task type %d to job %s", as.Type, as.JobID)
		}
		if as.Queue < 0 {
			return bad("assignment to job %s under queue %d", as.JobID, as.Queue)
		}
		v := d.viewJob(view, as.JobID)
		if v == nil {
			return bad("assigned a %v slot to job %s, which is not in the view", as.Type, as.JobID)
		}
		total[as.Type]++
		k := jt{as.JobID, as.Type}
		per[k]++
		n := per[k]
		if as.Type == partitions.Map {
			if n > v.PendingMaps+freed[k] {
				return bad("assigned %d maps to job %s, which has %d pending (%d more once preempted)", n, as.JobID, v.PendingMaps, freed[k])
			}
		} else {
			if !v.ReducesReady {
				return bad("assigned a reduce to job %s, whose reduces are not ready", as.JobID)
			}
			if n > v.PendingReduces+freed[k] {
				return bad("assigned %d reduces to job %s, which has %d pending (%d more once preempted)", n, as.JobID, v.PendingReduces, freed[k])
			}
		}
	}
	if total[partitions.Map] > offer.FreeMaps || total[partitions.Reduce] > offer.FreeReduces {
		return bad("assigned %d maps and %d reduces for %d and %d free slots",
			total[partitions.Map], total[partitions.Reduce], offer.FreeMaps, offer.FreeReduces)
	}
	return d.checkPreempt(offer, dec)
}

// viewJob returns the view's job id, nil if the view lacks it. The index
// behind it is rebuilt only when it is stale, so that a check costs the
// decision's jobs, not the view's (an index built per Offer was a tenth of
// an Offer's time with 1,000 jobs).
func (d *Driver) viewJob(view *partitions.ClusterView, id string) *partitions.JobView {
	if i, ok := d.viewPos[id]; ok && i < len(view.Jobs) && view.Jobs[i].ID == id {
		return &view.Jobs[i]
	}
	if d.viewPos == nil {
		d.viewPos = make(map[string]int, len(view.Jobs))
	}
	clear(d.viewPos)
	for i := range view.Jobs {
		d.viewPos[view.Jobs[i].ID] = i
	}
	if i, ok := d.viewPos[id]; ok {
		return &view.Jobs[i]
	}
	return nil
}

// checkPreempt applies the rules a decision's preemptions must keep.
func (d *Driver) checkPreempt(offer partitions.SlotOffer, dec partitions.Decision) error {
	bad := func(format string, args ...any) error {
		return &DecisionError{Policy: d.pol.Name(), Tracker: offer.Tracker, Problem: fmt.Sprintf(format, args...)}
	}
	type jt = jobType
	kills := map[jt]int{}
	for _, p := range dec.Preempt {
		if p.Type != partitions.Map && p.Type != partitions.Reduce {
			return bad("preemption of unknown task type %d of job %s", p.Type, p.JobID)
		}
		if p.Count <= 0 {
			return bad("preemption of %d %v attempts of job %s", p.Count, p.Type, p.JobID)
		}
		js := d.jobs[p.JobID]
		if js == nil {
			return bad("preempted job %s, which is not running", p.JobID)
		}
		kills[jt{p.JobID, p.Type}] += p.Count
		running := 0
		for a := range js.live {
			if a.Type == p.Type {
				running++
			}
		}
		if k := kills[jt{p.JobID, p.Type}]; k > running {
			return bad("preempted %d %v attempts of job %s, which runs %d", k, p.Type, p.JobID, running)
		}
	}
	return nil
}
