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
package sched

import (
	"fmt"
	"sort"
	"time"

	"gomr/partitions"
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
}

// Outcome is what one Offer did.
type Outcome struct {
	// Launched counts the attempts started, by task type; Preempted the
	// attempts killed.
	Launched  [2]int
	Preempted int
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
	stats      Stats
	// during an Offer: the assignment being launched and how many starts
	// it reported.
	launching *partitions.Assignment
	starts    int
}

// New makes a driver for the policy.
func New(p partitions.Policy) *Driver {
	return &Driver{pol: p, jobs: map[string]*jobState{}}
}

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
	d.observe(partitions.Event{Time: now, Kind: partitions.TaskFinished, JobID: a.Job, Type: a.Type, Task: a.Task, Attempt: a.Attempt, Duration: ran})
}

// Ended tells the policy an attempt ended without its task succeeding by
// it: failed, killed, lost, or a speculative race lost. It is idempotent:
// an attempt that is not running is ignored, so a host may report an end
// from every path that ends an attempt.
func (d *Driver) Ended(now time.Time, a Attempt, ran time.Duration) {
	if !d.end(a) {
		return
	}
	d.observe(partitions.Event{Time: now, Kind: partitions.TaskFailed, JobID: a.Job, Type: a.Type, Task: a.Task, Attempt: a.Attempt, Duration: ran})
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

// Finished tells the policy a job ended (succeeded, failed or killed).
// Attempts of the job still running are ended first (TaskFailed), so the
// policy's own counts never keep a finished job's attempts.
func (d *Driver) Finished(now time.Time, job string) {
	js := d.jobs[job]
	if js == nil {
		return
	}
	for _, l := range sortedLive(js, nil) {
		d.Ended(now, l.a, now.Sub(l.start))
	}
	delete(d.jobs, job)
	d.observe(partitions.Event{Time: now, Kind: partitions.JobFinished, JobID: job})
}

// sortedLive lists a job's running attempts (of one type when typ is not
// nil), oldest first.
func sortedLive(js *jobState, typ *partitions.TaskType) []live {
	out := make([]live, 0, len(js.live))
	for _, l := range js.live {
		if typ == nil || l.a.Type == *typ {
			out = append(out, l)
		}
	}
	sort.Slice(out, func(i, k int) bool { return out[i].seq < out[k].seq })
	return out
}

// Victims lists the attempts a preemption of count attempts of a type of a
// job would kill: the most recently started first.
func (d *Driver) Victims(job string, typ partitions.TaskType, count int) []Attempt {
	js := d.jobs[job]
	if js == nil {
		return nil
	}
	ls := sortedLive(js, &typ)
	var out []Attempt
	for i := len(ls) - 1; i >= 0 && len(out) < count; i-- {
		out = append(out, ls[i].a)
	}
	return out
}

// Offer asks the policy what to do with a tracker's free slots (the offer)
// given the cluster view, checks the decision, and carries it out through
// the host: first the preemptions (the newest attempts of each named job
// and type are killed), then the assignments, in the policy's order. A
// decision that breaks a rule is refused whole with a *DecisionError and
// nothing of it is carried out; a host error stops the offer where it
// happened.
func (d *Driver) Offer(view *partitions.ClusterView, offer partitions.SlotOffer, h Host) (Outcome, error) {
	var out Outcome
	d.stats.Offers++
	dec := d.pol.Offer(view, offer)
	err := d.check(view, offer, dec)
	if d.onDecision != nil {
		d.onDecision(view, offer, dec, err)
	}
	if err != nil {
		d.stats.Refused++
		return out, err
	}
	for _, p := range dec.Preempt {
		for _, a := range d.Victims(p.JobID, p.Type, p.Count) {
			if err := h.Kill(a); err != nil {
				return out, fmt.Errorf("preempting %s: %w", a, err)
			}
			if d.Running(a) {
				return out, fmt.Errorf("preempting %s: the host did not end the attempt", a)
			}
			out.Preempted++
			d.stats.Preempted[a.Type]++
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

// check applies the rules a decision must keep, against the view and the
// offer it answers.
func (d *Driver) check(view *partitions.ClusterView, offer partitions.SlotOffer, dec partitions.Decision) error {
	bad := func(format string, args ...any) error {
		return &DecisionError{Policy: d.pol.Name(), Tracker: offer.Tracker, Problem: fmt.Sprintf(format, args...)}
	}
	jobs := make(map[string]*partitions.JobView, len(view.Jobs))
	for i := range view.Jobs {
		jobs[view.Jobs[i].ID] = &view.Jobs[i]
	}
	type jt struct {
		job string
		typ partitions.TaskType
	}
	// Preempted attempts' tasks are pending again (unless another attempt
	// of the task runs, which the host finds at launch): a decision may
	// give their slots back to the same job.
	freed := map[jt]int{}
	for _, p := range dec.Preempt {
		freed[jt{p.JobID, p.Type}] += max(p.Count, 0)
	}
	var total [2]int
	per := map[jt]int{}
	for _, as := range dec.Assign {
		if as.Type != partitions.Map && as.Type != partitions.Reduce {
			return bad("assignment of unknown task type %d to job %s", as.Type, as.JobID)
		}
		if as.Queue < 0 {
			return bad("assignment to job %s under queue %d", as.JobID, as.Queue)
		}
		v := jobs[as.JobID]
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
