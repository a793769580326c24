package partitions

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"time"

	"gomr/conf"
)

func init() {
	for _, name := range []string{"edf", "minedf", "minedf-wc"} {
		Register(name, func(cfg Config) (Policy, error) { return NewDeadline(name, cfg) })
	}
	registerKeys(deadlineKeys...)
}

// deadlineKeys are the configuration keys the deadline policies (edf,
// minedf, minedf-wc) read.
var deadlineKeys = []conf.Key{
	{Name: "scheduler.deadline.bound", Type: conf.String, Default: "avg", Description: "ARIA bound the minimum allocation targets", Check: conf.OneOf("low", "avg", "up")},
	{Name: "scheduler.deadline.round", Type: conf.String, Default: "lagrange-ceil", Description: "integer slots: round the Lagrange optimum up, or search for the exact integer minimum", Check: conf.OneOf("lagrange-ceil", "integer-exact")},
	{Name: "scheduler.deadline.refresh-all-on-arrival", Type: conf.Bool, Default: "false", Description: "MinEDF-WC: refresh every job's quota when a job arrives"},
	{Name: "scheduler.deadline.reduces-after-maps", Type: conf.Bool, Default: "true", Description: "minedf and minedf-wc give reduce slots only once all maps of the job finished (Algorithm 1, ARIA's model)"},
	{Name: "scheduler.edf.reduces-after-maps", Type: conf.Bool, Default: "false", Description: "edf gives reduce slots only once all maps of the job finished; false: as soon as the job's reduce slow-start allows (Hadoop's default allocation)"},

	{Name: "scheduler.minedfwc.algorithm", Type: conf.String, Default: "fixed", Description: "Algorithm 1 variant: fixed (<=, kill accounting from actual free slots, no kills when only reduces are short) or printed (as printed)", Check: conf.OneOf("fixed", "printed")},
	{Name: "scheduler.minedfwc.kill-only-needed", Type: conf.Bool, Default: "false", Description: "kill only the spare maps the new job needs instead of all spare maps of a victim job (A7)"},
	{Name: "scheduler.minedfwc.arrival-net-of-deficits", Type: conf.Bool, Default: "false", Description: "arrival check subtracts the quota deficits of earlier-deadline jobs from the free slots (A3)"},
	{Name: "scheduler.minedfwc.wait-estimate", Type: conf.String, Default: "mean", Description: "Algorithm 1's wait test (line 12): mean (as printed: a victim's spare map slots free after its average map duration M_avg) or remaining (each spare slot frees when one of the victim's running maps ends, after its expected remaining time: M_avg less its elapsed time, or M_max less it once past M_avg; slots credited one at a time, earliest first)", Check: conf.OneOf("mean", "remaining")},
	{Name: "scheduler.minedfwc.kill-when-infeasible", Type: conf.String, Default: "true", Description: "kill spare maps for an arriving job that cannot meet its deadline even with its largest allocation under the quota's bound (its quota is then the maximum, spec §1.7): true; false: such a job waits like MinEDF's (§III: kills are for a job that waiting cannot complete 'in time'); low or avg: kill only if some allocation meets the deadline under that more optimistic ARIA bound", Check: conf.OneOf("true", "false", "low", "avg")},
	{Name: "scheduler.minedfwc.reduce-release", Type: conf.String, Default: "r-avg", Description: "expected release time of a spare reduce slot (A10)", Check: conf.OneOf("r-avg", "shuffle-plus-r-avg")},
}

type deadlineKind int

const (
	kindEDF deadlineKind = iota
	kindMinEDF
	kindMinEDFWC
)

// Deadline implements the deadline policies of Verma et al., "Deadline-based
// Workload Management for MapReduce Environments":
//   - edf: jobs in earliest-deadline-first order, each taking every slot it
//     can use (Hadoop's default allocation);
//   - minedf: EDF order, each deadline job limited to the minimum map and
//     reduce slots that ARIA's bounds say meet its deadline (its quota),
//     recomputed at its arrival and at each completion of its tasks; not
//     work-conserving;
//   - minedf-wc: minedf whose spare slots go to the earliest-deadline job
//     with pending work (Assignment.Spare), and, when a new job cannot get
//     its quota from free slots or from spare slots released in time, that
//     kills spare map tasks (Algorithm 1; Decision.Preempt).
//
// Jobs without a deadline come after every deadline job. Under minedf and
// minedf-wc their quota is 0: they use only slots no deadline job's quota
// needs (under minedf-wc those tasks are spare and may be killed). A
// deadline job without a profile cannot be modelled and gets the maximum
// quota (as an infeasible job does), which makes it behave as under edf.
//
// Under minedf and minedf-wc the reduces of a job are offered only once
// all its maps finished (Algorithm 1, lines 33-35, and ARIA's model;
// scheduler.deadline.reduces-after-maps). edf is Hadoop's default
// allocation: a job's reduces are offered as soon as its slow-start
// fraction of maps finished (JobView.ReducesReady), so that the head job
// takes the reduce slots early and holds them through its map stage
// (scheduler.edf.reduces-after-maps).
type Deadline struct {
	name string
	kind deadlineKind
	cfg  deadlineCfg

	jobs     map[string]*dlJob
	order    []*dlJob // EDF order
	seq      int
	arrivals []*dlJob // minedf-wc: arrivals not yet handled
	mapSlots int
	redSlots int
	buf      offerBuf

	spareMaps, spareReduces, killedMaps int64
}

type deadlineCfg struct {
	bound            Bound
	round            RoundMode
	refreshAll       bool
	reducesAfterMaps bool
	printed          bool
	killOnlyNeeded   bool
	netOfDeficits    bool
	releaseShuffle   bool
	waitRemaining    bool
	killInfeasible   bool
	// killBound, when killInfeasible is false and killBoundSet is true, is
	// the bound under which an arrival must be feasible to kill for it.
	killBound    Bound
	killBoundSet bool
}

type dlJob struct {
	id        string
	seq       int
	submitted time.Time
	deadline  time.Time // zero: none
	rel       float64   // relative deadline, seconds
	maps      int
	reduces   int
	profile   *Profile

	runMaps, runReds, doneMaps, doneReds, launchedReds int
	// attempts are the running attempts with their start times.
	attempts map[attemptKey]time.Time

	minMaps, minReds int
	feasible         bool
	dirty            bool
	refreshAt        time.Time
	hint             int
}

// NewDeadline builds edf, minedf or minedf-wc.
func NewDeadline(name string, cfg Config) (*Deadline, error) {
	p := &Deadline{name: name, jobs: map[string]*dlJob{}}
	switch name {
	case "edf":
		p.kind = kindEDF
	case "minedf":
		p.kind = kindMinEDF
	case "minedf-wc":
		p.kind = kindMinEDFWC
	default:
		return nil, fmt.Errorf("deadline policy %q does not exist", name)
	}
	r := newReader(cfg)
	switch r.OneOf("scheduler.deadline.bound", "low", "avg", "up") {
	case "low":
		p.cfg.bound = BoundLow
	case "up":
		p.cfg.bound = BoundUp
	default:
		p.cfg.bound = BoundAvg
	}
	if r.OneOf("scheduler.deadline.round", "lagrange-ceil", "integer-exact") == "integer-exact" {
		p.cfg.round = IntegerExact
	}
	p.cfg.refreshAll = r.Bool("scheduler.deadline.refresh-all-on-arrival")
	if p.kind == kindEDF {
		p.cfg.reducesAfterMaps = r.Bool("scheduler.edf.reduces-after-maps")
	} else {
		p.cfg.reducesAfterMaps = r.Bool("scheduler.deadline.reduces-after-maps")
	}
	p.cfg.printed = r.OneOf("scheduler.minedfwc.algorithm", "fixed", "printed") == "printed"
	p.cfg.killOnlyNeeded = r.Bool("scheduler.minedfwc.kill-only-needed")
	p.cfg.netOfDeficits = r.Bool("scheduler.minedfwc.arrival-net-of-deficits")
	switch r.OneOf("scheduler.minedfwc.kill-when-infeasible", "true", "false", "low", "avg") {
	case "true":
		p.cfg.killInfeasible = true
	case "low":
		p.cfg.killBound, p.cfg.killBoundSet = BoundLow, true
	case "avg":
		p.cfg.killBound, p.cfg.killBoundSet = BoundAvg, true
	}
	p.cfg.waitRemaining = r.OneOf("scheduler.minedfwc.wait-estimate", "mean", "remaining") == "remaining"
	p.cfg.releaseShuffle = r.OneOf("scheduler.minedfwc.reduce-release", "r-avg", "shuffle-plus-r-avg") == "shuffle-plus-r-avg"
	if r.Err() != nil {
		return nil, fmt.Errorf("policy %s: %w", name, r.Err())
	}
	return p, nil
}

// Name returns the policy's configuration name.
func (p *Deadline) Name() string { return p.name }

// edfLess orders deadline jobs by deadline, then jobs without one; ties by
// submission time and arrival sequence.
func edfLess(a, b *dlJob) bool {
	ad, bd := !a.deadline.IsZero(), !b.deadline.IsZero()
	if ad != bd {
		return ad
	}
	if ad && !a.deadline.Equal(b.deadline) {
		return a.deadline.Before(b.deadline)
	}
	if !a.submitted.Equal(b.submitted) {
		return a.submitted.Before(b.submitted)
	}
	return a.seq < b.seq
}

func (p *Deadline) admit(v *JobView, now time.Time) *dlJob {
	if j := p.jobs[v.ID]; j != nil {
		return j
	}
	p.seq++
	j := &dlJob{id: v.ID, seq: p.seq, submitted: v.Submitted, deadline: v.Deadline, maps: v.Maps, reduces: v.Reduces,
		profile: v.Profile, attempts: map[attemptKey]time.Time{}, doneMaps: v.FinishedMaps, doneReds: v.FinishedReduces}
	if j.submitted.IsZero() {
		j.submitted = now
	}
	if !j.deadline.IsZero() {
		j.rel = j.deadline.Sub(j.submitted).Seconds()
	}
	p.jobs[v.ID] = j
	i := sort.Search(len(p.order), func(i int) bool { return edfLess(j, p.order[i]) })
	p.order = slices.Insert(p.order, i, j)
	j.dirty, j.refreshAt = true, now
	if p.kind == kindMinEDFWC {
		p.arrivals = append(p.arrivals, j)
	}
	return j
}

// Observe keeps the policy's own task counts and marks quotas for refresh.
func (p *Deadline) Observe(ev Event) {
	if ev.Kind == JobSubmitted {
		if ev.Job != nil {
			p.admit(ev.Job, ev.Time)
		}
		return
	}
	j := p.jobs[ev.JobID]
	if j == nil {
		return
	}
	key := keyOf(ev)
	switch ev.Kind {
	case JobFinished:
		delete(p.jobs, ev.JobID)
		if i := slices.Index(p.order, j); i >= 0 {
			p.order = slices.Delete(p.order, i, i+1)
		}
		if i := slices.Index(p.arrivals, j); i >= 0 {
			p.arrivals = slices.Delete(p.arrivals, i, i+1)
		}
	case TaskStarted:
		if _, dup := j.attempts[key]; dup {
			return
		}
		j.attempts[key] = ev.Time
		if ev.Type == Map {
			j.runMaps++
		} else {
			j.runReds++
			j.launchedReds++
		}
	case TaskFinished, TaskFailed:
		if _, ok := j.attempts[key]; ok {
			delete(j.attempts, key)
			if ev.Type == Map {
				j.runMaps--
			} else {
				j.runReds--
			}
		}
		if ev.Kind == TaskFinished {
			if ev.Type == Map {
				j.doneMaps++
			} else {
				j.doneReds++
			}
			j.dirty, j.refreshAt = true, ev.Time
		}
	case MapOutputLost:
		// The map runs again: it is work left, not work done.
		if j.doneMaps > 0 {
			j.doneMaps--
		}
		j.dirty, j.refreshAt = true, ev.Time
	}
}

func (j *dlJob) mapStageDone() bool { return j.doneMaps >= j.maps }

// hasQuota tells whether the job is limited by a modelled quota.
func (j *dlJob) modelled() bool { return !j.deadline.IsZero() && j.profile != nil }

// refresh recomputes the job's quota for the time left at now.
func (p *Deadline) refresh(j *dlJob, now time.Time) {
	j.dirty = false
	if j.deadline.IsZero() {
		j.minMaps, j.minReds, j.feasible = 0, 0, true
		return
	}
	nm := max(j.maps-j.doneMaps, 0)
	nr := max(j.reduces-j.doneReds, 0)
	capM, capR := min(nm, p.mapSlots), min(nr, p.redSlots)
	if !j.modelled() {
		j.minMaps, j.minReds, j.feasible = capM, capR, false
		return
	}
	left := j.deadline.Sub(now).Seconds()
	if !j.mapStageDone() {
		a, b, c := Coeffs(j.profile, nm, nr, p.cfg.bound)
		j.minMaps, j.minReds, j.feasible = MinSlots(a, b, c, left, nm, nr, p.mapSlots, p.redSlots, p.cfg.round)
		return
	}
	b, c := CoeffsReduceOnly(j.profile, nr, p.cfg.bound, j.launchedReds == 0)
	_, j.minReds, j.feasible = MinSlots(0, b, c, left, 0, nr, p.mapSlots, p.redSlots, p.cfg.round)
	j.minMaps = 0
}

// quotaFor returns the quota of a job arriving now with budget seconds.
func (p *Deadline) quotaFor(j *dlJob, budget float64) (int, int) {
	m, r, _ := p.quotaForOK(j, budget)
	return m, r
}

// quotaForOK is quotaFor that also tells whether the quota meets the
// budget (false: no allocation does, and the quota is the largest useful).
func (p *Deadline) quotaForOK(j *dlJob, budget float64) (int, int, bool) {
	if !j.modelled() {
		return min(j.maps, p.mapSlots), min(j.reduces, p.redSlots), false
	}
	a, b, c := Coeffs(j.profile, j.maps, j.reduces, p.cfg.bound)
	return MinSlots(a, b, c, budget, j.maps, j.reduces, p.mapSlots, p.redSlots, p.cfg.round)
}

// Offer assigns the free slots in EDF order within quotas, then (minedf-wc)
// spare slots; a pending arrival may first cause preemptions.
func (p *Deadline) Offer(view *ClusterView, offer SlotOffer) Decision {
	p.mapSlots, p.redSlots = view.MapSlots, view.ReduceSlots
	if len(view.Jobs) > len(p.jobs) {
		// jobs the policy was not told of (for example after a restart)
		for i := range view.Jobs {
			if p.jobs[view.Jobs[i].ID] == nil {
				p.admit(&view.Jobs[i], view.Now)
			}
		}
	}
	p.buf.load(view, offer.Host, p.cfg.reducesAfterMaps)
	if p.kind != kindEDF {
		for _, j := range p.order {
			if j.dirty {
				p.refresh(j, j.refreshAt)
			}
		}
	}
	var d Decision
	if p.kind == kindMinEDFWC && len(p.arrivals) > 0 {
		arr := p.arrivals
		p.arrivals = nil
		if p.cfg.refreshAll {
			for _, j := range p.order {
				p.refresh(j, view.Now)
			}
		}
		for _, j := range arr {
			p.onArrival(view, j, &d)
		}
	}
	for _, t := range []TaskType{Map, Reduce} {
		n := free(offer, t)
		for ; n > 0; n-- {
			w, spare := p.pick(t)
			if w == nil {
				break
			}
			p.buf.take(t, w, &d, spare, 0)
			if spare {
				if t == Map {
					p.spareMaps++
				} else {
					p.spareReduces++
				}
			}
		}
	}
	return d
}

func (j *dlJob) quota(t TaskType) int {
	if t == Map {
		return j.minMaps
	}
	return j.minReds
}

// pick returns the job for the next slot of type t and whether the slot is
// spare (beyond the job's quota).
func (p *Deadline) pick(t TaskType) (*work, bool) {
	if p.kind == kindEDF {
		for _, j := range p.order {
			if w := p.buf.getHinted(j.id, &j.hint); w != nil && w.eligible(t) {
				return w, false
			}
		}
		return nil, false
	}
	for _, j := range p.order {
		if w := p.buf.getHinted(j.id, &j.hint); w != nil && w.eligible(t) && w.running(t) < j.quota(t) {
			return w, false
		}
	}
	for _, j := range p.order {
		if p.kind == kindMinEDF && !j.deadline.IsZero() {
			continue // MinEDF lends nothing to deadline jobs
		}
		if w := p.buf.getHinted(j.id, &j.hint); w != nil && w.eligible(t) {
			return w, true
		}
	}
	return nil, false
}

// stageDur is the task duration after which a job's running tasks of its
// current stage are expected to free their slots; +Inf when unknown.
func (p *Deadline) stageDur(j *dlJob) float64 {
	if j.profile == nil {
		return math.Inf(1)
	}
	if !j.mapStageDone() {
		return sec(j.profile.MapAvg)
	}
	return p.reduceRelease(j)
}

// mapReleases returns, earliest first, the expected times from now until
// each of j's running maps ends (remainingTask over its profile).
func mapReleases(j *dlJob, now time.Time) []float64 {
	if j.profile == nil {
		return nil
	}
	out := make([]float64, 0, j.runMaps)
	for k, start := range j.attempts {
		if k.typ == Map {
			out = append(out, remainingTask(now.Sub(start).Seconds(), sec(j.profile.MapAvg), sec(j.profile.MapMax)))
		}
	}
	slices.Sort(out)
	return out
}

// remainingTask is the expected remaining time of a task that has run
// elapsed seconds, from its stage's average and maximum task durations: the
// average less the elapsed time, or, for a task already past the average,
// the maximum less it (a long task is not about to end), never below 0.
func remainingTask(elapsed, avg, maxDur float64) float64 {
	if elapsed < avg {
		return avg - elapsed
	}
	return math.Max(maxDur-elapsed, 0)
}

func (p *Deadline) reduceRelease(j *dlJob) float64 {
	if j.profile == nil {
		return math.Inf(1)
	}
	if p.cfg.releaseShuffle {
		return sec(j.profile.ShuffleAvg + j.profile.ReduceAvg)
	}
	return sec(j.profile.ReduceAvg)
}

// onArrival is Algorithm 1's arrival handler for job nj, with the fixes of
// the spec unless scheduler.minedfwc.algorithm is "printed".
func (p *Deadline) onArrival(view *ClusterView, nj *dlJob, d *Decision) {
	if !nj.modelled() {
		return // nothing to protect: no deadline or no profile
	}
	fits := func(need, have int) bool {
		if p.cfg.printed {
			return need < have
		}
		return need <= have
	}
	mJ, rJ := p.quotaFor(nj, nj.rel)
	// free slots now, from the view's counts after this Offer's kills
	usedM, usedR := 0, 0
	for i := range view.Jobs {
		w := p.buf.at(i)
		usedM += w.runMaps
		usedR += w.runReds
	}
	fm0, fr0 := max(view.MapSlots-usedM, 0), max(view.ReduceSlots-usedR, 0)
	if p.cfg.netOfDeficits {
		for _, j := range p.order {
			if j == nj || edfLess(nj, j) {
				continue
			}
			if w := p.buf.getHinted(j.id, &j.hint); w != nil {
				fm0 -= max(0, j.minMaps-w.runMaps)
				fr0 -= max(0, j.minReds-w.runReds)
			}
		}
		fm0, fr0 = max(fm0, 0), max(fr0, 0)
	}
	if fits(mJ, fm0) && fits(rJ, fr0) {
		return
	}
	others := make([]*dlJob, 0, len(p.order))
	for _, j := range p.order {
		if j != nj && p.buf.getHinted(j.id, &j.hint) != nil {
			others = append(others, j)
		}
	}
	sort.SliceStable(others, func(a, b int) bool { return p.stageDur(others[a]) < p.stageDur(others[b]) })
	fm, fr, wait := fm0, fr0, 0.0
	for _, j := range others {
		w := p.buf.getHinted(j.id, &j.hint)
		// lines 8 and 14: j is in its map (reduce) stage and nj is short on
		// map (reduce) slots
		switch {
		case !j.mapStageDone() && mJ > fm && p.cfg.waitRemaining:
			// credit j's spare map slots one at a time, as its running
			// maps are expected to end
			rel := mapReleases(j, view.Now)
			for i := 0; i < min(max(0, w.runMaps-j.minMaps), len(rel)); i++ {
				fm++
				wait = math.Max(wait, rel[i])
				var ok bool
				mJ, rJ, ok = p.quotaForOK(nj, nj.rel-wait)
				if fits(mJ, fm) && fits(rJ, fr) && (ok || p.cfg.printed) {
					return // waiting suffices
				}
			}
			continue
		case !j.mapStageDone() && mJ > fm:
			fm += max(0, w.runMaps-j.minMaps)
			wait = math.Max(wait, p.stageDur(j))
		case j.mapStageDone() && rJ > fr:
			fr += max(0, w.runReds-j.minReds)
			wait = math.Max(wait, p.reduceRelease(j))
		default:
			continue
		}
		var ok bool
		mJ, rJ, ok = p.quotaForOK(nj, nj.rel-wait)
		// A wait that leaves no allocation able to meet the deadline
		// (it uses up the budget, or nothing tells when j's slots free)
		// does not suffice, though the largest allocation it falls back
		// to may fit the slots credited: the printed algorithm waits
		// then, the fixed one goes on to kill.
		if fits(mJ, fm) && fits(rJ, fr) && (ok || p.cfg.printed) {
			return // waiting suffices
		}
	}
	// kill spare map tasks
	if !p.cfg.killInfeasible && !p.feasibleToKill(nj) {
		return // no allocation meets the deadline: killing cannot
	}
	if !p.cfg.printed {
		mJ, _ = p.quotaFor(nj, nj.rel)
		fm = fm0
		if fits(mJ, fm) {
			return // only reduces are short: killing maps would not help
		}
	}
	for _, j := range others {
		w := p.buf.getHinted(j.id, &j.hint)
		extra := w.runMaps - j.minMaps
		if extra <= 0 {
			continue
		}
		k := extra
		if p.cfg.killOnlyNeeded {
			k = min(extra, max(mJ-fm, 1))
		}
		d.Preempt = append(d.Preempt, Preemption{JobID: j.id, Type: Map, Count: k, Reason: ReclaimDeadlineAtRisk})
		w.runMaps -= k
		w.pendMaps += k
		p.killedMaps += int64(k)
		fm += k
		if fits(mJ, fm) {
			return
		}
	}
}

// feasibleToKill tells whether some allocation meets the arriving job's
// deadline, under the quota's bound or, with kill-when-infeasible=low or
// avg, under that bound if the quota's one says no.
func (p *Deadline) feasibleToKill(j *dlJob) bool {
	if _, _, ok := p.quotaForOK(j, j.rel); ok {
		return true
	}
	if !p.cfg.killBoundSet || !j.modelled() {
		return false
	}
	a, b, c := Coeffs(j.profile, j.maps, j.reduces, p.cfg.killBound)
	_, _, ok := MinSlots(a, b, c, j.rel, j.maps, j.reduces, p.mapSlots, p.redSlots, p.cfg.round)
	return ok
}

// Describe returns the jobs in EDF order with their deadlines and quotas.
func (p *Deadline) Describe(now time.Time) PolicyStatus {
	st := PolicyStatus{Policy: p.name, Counters: map[string]int64{
		"spare_map_tasks": p.spareMaps, "spare_reduce_tasks": p.spareReduces, "killed_map_tasks": p.killedMaps}}
	for _, j := range p.order {
		st.Jobs = append(st.Jobs, JobStatus{ID: j.id, Deadline: j.deadline, MinMaps: j.minMaps, MinReduces: j.minReds, Feasible: j.feasible || p.kind == kindEDF})
	}
	return st
}
