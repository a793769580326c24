package preempt

import (
	"math"
	"sort"
	"time"
)

// Cost is what one mechanism costs for one victim (spec §5.5).
type Cost struct {
	// Release is the time until the slot is actually free.
	Release time.Duration
	// Waste is the slot time of work destroyed or redone, checkpoint and
	// restore included.
	Waste time.Duration
	// Resume is the latency added to the victim when it resumes.
	Resume time.Duration
}

// Reason is why a policy wants slots back; it sets how much the
// beneficiary's wait weighs against waste (Alpha).
type Reason uint8

// Reasons (spec §5.4).
const (
	ReasonUnspecified Reason = iota
	ReasonPriorityArrival
	ReasonFairMinShare
	ReasonFairShare
	ReasonDeadlineAtRisk
)

// Alpha is the weight of a victim's release time against its waste in
// auto mode: 0 for a fair-share request, 4 for a deadline at risk, 1
// otherwise (spec §5.5).
func Alpha(r Reason) float64 {
	switch r {
	case ReasonFairShare:
		return 0
	case ReasonDeadlineAtRisk:
		return 4
	}
	return 1
}

// Victim is a candidate with the name the planner reports it by.
type Victim struct {
	// ID names the attempt (unique among live attempts).
	ID string
	Candidate
}

// Request asks for Count slots back from the victims of one group (a job's
// attempts of one task type).
type Request struct {
	// Group names the victims' job and type, for in-flight accounting.
	Group string
	// Count is how many slots the policy wants back from the group,
	// counting those already being released.
	Count int
	// Reason sets Alpha; Budget is the longest release the beneficiary
	// tolerates (0: any), for every mechanism but kill.
	Reason Reason
	Budget time.Duration
	// Victims are the group's live attempts, the policy's preferred
	// victims first (the newest first, as Hadoop kills).
	Victims []Victim
}

// Choice is one victim and how it gives its slot back.
type Choice struct {
	ID   string
	Node string
	Mech Mechanism
	Cost Cost
	// Bytes is what a checkpoint dumps (0 for other mechanisms).
	Bytes int64
	// Reason is the request's: it orders a checkpoint's dump in its
	// node's queue (DumpClass).
	Reason Reason
}

// flight is a victim being released.
type flight struct {
	group  string
	mech   Mechanism
	reason Reason
}

// Planner chooses preemption victims and mechanisms. It keeps the learnt
// node models, the per-node checkpoint queue and the victims being
// released. It is not safe for concurrent use.
type Planner struct {
	cfg      Config
	learn    *Learner
	queue    *Queue
	inflight map[string]flight
	groups   map[string]int
	// dumping holds the victims whose slot was freed before their dump
	// ended (ReleasedEarly): their dumps stay in the queue until
	// DumpEnded.
	dumping map[string]bool
}

// New returns a planner for cfg.
func New(cfg Config) *Planner {
	return &Planner{cfg: cfg, learn: NewLearner(cfg.Prior, cfg.Smoothing, cfg.MinSampleBytes), queue: NewQueue(),
		inflight: map[string]flight{}, groups: map[string]int{}, dumping: map[string]bool{}}
}

// Config returns the planner's configuration.
func (p *Planner) Config() Config { return p.cfg }

// KillOnly tells whether the planner only ever kills (mechanism kill): the
// host need not describe the victims then.
func (p *Planner) KillOnly() bool { return p.cfg.Mechanism == SettingKill }

// Model returns the node's current (learnt) model.
func (p *Planner) Model(node string) Model { return p.learn.Model(node) }

// Observe takes a measured dump, restore or transfer into account.
func (p *Planner) Observe(node string, op Op, bytes int64, d time.Duration) error {
	return p.learn.Observe(node, op, bytes, d)
}

// QueueWait is the expected wait in node's checkpoint/restore queue at now.
func (p *Planner) QueueWait(node string, now time.Time) time.Duration { return p.queue.Wait(node, now) }

// Queue is the per-node checkpoint/restore queue: the planner queues its
// preemption dumps there; a host may queue restores and clone dumps with
// their Class (Alg. 2 weighs a restore's wait).
func (p *Planner) Queue() *Queue { return p.queue }

// InFlight is how many victims of group are being released.
func (p *Planner) InFlight(group string) int { return p.groups[group] }

// Releasing tells whether the victim is being released, and how.
func (p *Planner) Releasing(id string) (Mechanism, bool) {
	f, ok := p.inflight[id]
	return f.mech, ok
}

// Idle tells whether no victim is being released: Released and Releasing
// then have nothing to find (the policy driver asks before it names the
// attempt that ended, which costs a string a task end).
func (p *Planner) Idle() bool { return len(p.inflight) == 0 }

// Busy is how many victims, of any group, are being released
// (checkpointed or split, not yet ended): Plan passes over them when it
// picks.
func (p *Planner) Busy() int { return len(p.inflight) }

// Reason is why victim id, being released, was chosen (its request's
// Reason); ok is false when it is not being released.
func (p *Planner) Reason(id string) (r Reason, ok bool) {
	f, ok := p.inflight[id]
	return f.reason, ok
}

// Begin records that a choice was carried out at now: a checkpoint
// queues its dump on its node in its reason's class (DumpClass), and
// every mechanism but kill (whose slot is free when the host's Kill
// returns) counts as in flight until Released.
func (p *Planner) Begin(now time.Time, group string, c Choice) {
	if !c.Mech.Releases() {
		return
	}
	if c.Mech == MechCkpt || c.Mech == MechCkptInc {
		p.queue.Add(c.Node, c.ID, DumpClass(c.Reason), now, p.learn.Model(c.Node).Dump(c.Bytes))
	}
	p.inflight[c.ID] = flight{group: group, mech: c.Mech, reason: c.Reason}
	p.groups[group]++
}

// Released records that a victim's slot is free (its attempt ended, by
// the mechanism or otherwise) at now. An id not in flight is ignored.
func (p *Planner) Released(now time.Time, id string) {
	f, ok := p.inflight[id]
	if !ok {
		return
	}
	delete(p.inflight, id)
	if p.groups[f.group]--; p.groups[f.group] <= 0 {
		delete(p.groups, f.group)
	}
	if !p.dumping[id] {
		p.queue.Done(id, now)
	}
}

// ReleasedEarly records that checkpointed victim id frees its slot before
// its dump ends (preemption.checkpoint.release-slot=frozen or quiesced):
// the Released that follows frees the slot and ends the victim's
// in-flight count, but its dump holds its node's queue until DumpEnded,
// as it holds the tracker's.
func (p *Planner) ReleasedEarly(id string) {
	if f, ok := p.inflight[id]; ok && (f.mech == MechCkpt || f.mech == MechCkptInc) {
		p.dumping[id] = true
	}
}

// DumpEnded records that the dump of victim id ended at now (its image
// is kept, or it failed): it leaves its node's queue. It is what Released
// does to the queue for a victim not ReleasedEarly; an id the queue does
// not hold is ignored.
func (p *Planner) DumpEnded(now time.Time, id string) {
	delete(p.dumping, id)
	p.queue.Done(id, now)
}

// Costs are the candidate's feasible mechanisms at now with their costs
// (spec §5.5 costs), given the wait in its node's queue.
func (p *Planner) Costs(c Candidate, queue time.Duration) map[Mechanism]Cost {
	hb := p.cfg.Heartbeat
	out := map[Mechanism]Cost{}
	if c.Remaining >= 0 && c.Remaining <= p.cfg.WaitBelow {
		out[MechWait] = Cost{Release: c.Remaining}
	}
	if p.splittable(c) {
		out[MechSplit] = Cost{Release: hb, Waste: p.cfg.StartupCost, Resume: p.cfg.StartupCost}
	}
	if c.CanCheckpoint {
		m := p.learn.Model(c.Node)
		b, mech := c.dumpBytes()
		d, r := m.Dump(b), m.Restore(c.RSSBytes)
		var release time.Duration
		switch p.cfg.Release {
		case ReleaseAtQuiet:
			release = hb // before the queue (the quiet point: ~0)
		case ReleaseAtFreeze:
			release = sat(hb, queue) // when the dump begins
		default:
			release = sat(sat(hb, queue), d)
		}
		out[mech] = Cost{Release: release, Waste: sat(sat(d, r), queue), Resume: r}
	}
	out[MechKill] = Cost{Release: hb, Waste: c.Progressed}
	return out
}

func (p *Planner) splittable(c Candidate) bool {
	return c.Splittable && c.Progressed >= p.cfg.SplitMinAge && (c.Remaining < 0 || c.Remaining >= p.cfg.SplitMinRemaining)
}

// pick is one candidate's mechanism and its ordering key.
type pick struct {
	v     Victim
	order int // position in the request
	mech  Mechanism
	cost  Cost
	bytes int64
	score float64
}

// Plan chooses, for each request, the victims that bring its group's
// slots being released up to Count, and a mechanism each. It changes
// nothing: the caller carries the choices out and reports them with Begin.
// Queue waits count the checkpoints chosen earlier in the same call.
//
// By setting:
//   - kill: the first victims of the request (its order), killed;
//   - checkpoint: victims the host can checkpoint, cheapest dump first, are
//     checkpointed (incremental when they have an image), then the others
//     are killed in the request's order;
//   - adaptive: [002] Alg. 1 over the victims sorted by dump time plus
//     queue wait (cost-aware eviction), stopping at Count;
//   - split: splittable victims, longest-running first, are split, then
//     the others are killed in the request's order;
//   - auto: each victim takes its cheapest feasible mechanism by Waste +
//     Alpha·Release within the Budget (kill is always feasible; a tie goes
//     to the later mechanism, kill last), and the cheapest victims are
//     chosen; splits among equals longest-running first, others in the
//     request's order.
//
// Duplicates (another attempt of the task runs) come first in every
// setting but kill, which keeps Hadoop's order.
func (p *Planner) Plan(now time.Time, reqs []Request) [][]Choice {
	out := make([][]Choice, len(reqs))
	extra := map[string]time.Duration{} // dumps chosen in this call, by node
	for ri, req := range reqs {
		// A dump waits for those its class does not overtake (a
		// deadline's only for the running ones and other deadlines').
		class := DumpClass(req.Reason)
		wait := func(node string) time.Duration { return sat(p.queue.WaitClass(node, class, now), extra[node]) }
		need := req.Count - p.groups[req.Group]
		if need <= 0 {
			continue
		}
		var vs []pick
		for i, v := range req.Victims {
			if _, busy := p.inflight[v.ID]; busy {
				continue
			}
			vs = append(vs, pick{v: v, order: i, mech: MechKill})
		}
		var chosen []pick
		switch p.cfg.Mechanism {
		case SettingKill:
			chosen = vs[:min(need, len(vs))]
		case SettingSplit:
			chosen = p.planSplit(vs, need)
		case SettingCheckpoint, SettingAdaptive:
			chosen = p.planCheckpoint(vs, need, wait, extra, p.cfg.Mechanism == SettingAdaptive)
		default:
			chosen = p.planAuto(vs, need, req, wait, extra)
		}
		for _, c := range chosen {
			if c.mech == MechKill && c.cost == (Cost{}) {
				c.cost = Cost{Release: p.cfg.Heartbeat, Waste: c.v.Progressed}
			}
			out[ri] = append(out[ri], Choice{ID: c.v.ID, Node: c.v.Node, Mech: c.mech, Cost: c.cost, Bytes: c.bytes, Reason: req.Reason})
		}
	}
	return out
}

// dupFirst orders duplicates first, keeping the given order otherwise.
func dupFirst(vs []pick, less func(a, b pick) bool) {
	sort.SliceStable(vs, func(i, k int) bool {
		if vs[i].v.Duplicate != vs[k].v.Duplicate {
			return vs[i].v.Duplicate
		}
		return less(vs[i], vs[k])
	})
}

func byOrder(a, b pick) bool { return a.order < b.order }

func (p *Planner) planSplit(vs []pick, need int) []pick {
	var split, rest []pick
	for _, v := range vs {
		if !v.v.Duplicate && p.splittable(v.v.Candidate) {
			v.mech = MechSplit
			v.cost = p.Costs(v.v.Candidate, 0)[MechSplit]
			split = append(split, v)
		} else {
			rest = append(rest, v)
		}
	}
	sort.SliceStable(split, func(i, k int) bool { return split[i].v.Progressed > split[k].v.Progressed })
	dupFirst(rest, byOrder)
	// Duplicates are killed first: they lose no unique work.
	var out []pick
	for _, v := range rest {
		if v.v.Duplicate && len(out) < need {
			out = append(out, v)
		}
	}
	for _, v := range split {
		if len(out) < need {
			out = append(out, v)
		}
	}
	for _, v := range rest {
		if !v.v.Duplicate && len(out) < need {
			out = append(out, v)
		}
	}
	return out
}

func (p *Planner) planCheckpoint(vs []pick, need int, wait func(string) time.Duration, extra map[string]time.Duration, adaptive bool) []pick {
	// Cost-aware eviction ([002 §3.4.2.2]): cheapest dump plus queue
	// wait first; victims that cannot be checkpointed after, in the
	// request's order; duplicates before all.
	dumpCost := func(v pick) time.Duration {
		if !v.v.CanCheckpoint {
			return time.Duration(math.MaxInt64)
		}
		b, _ := v.v.dumpBytes()
		return sat(p.learn.Model(v.v.Node).Dump(b), wait(v.v.Node))
	}
	dupFirst(vs, func(a, b pick) bool {
		ca, cb := dumpCost(a), dumpCost(b)
		if ca != cb {
			return ca < cb
		}
		return a.order < b.order
	})
	var out []pick
	for _, v := range vs {
		if len(out) == need {
			break
		}
		c := v.v.Candidate
		q := wait(c.Node)
		mech := MechKill
		if !c.Duplicate && c.CanCheckpoint {
			if adaptive {
				mech = Adaptive(c, p.learn.Model(c.Node), q)
			} else {
				_, mech = c.dumpBytes()
			}
		}
		v.mech = mech
		if mech != MechKill {
			v.cost = p.Costs(c, q)[mech]
			v.bytes, _ = c.dumpBytes()
			extra[c.Node] = sat(extra[c.Node], p.learn.Model(c.Node).Dump(v.bytes))
		}
		out = append(out, v)
	}
	return out
}

func (p *Planner) planAuto(vs []pick, need int, req Request, wait func(string) time.Duration, extra map[string]time.Duration) []pick {
	alpha := Alpha(req.Reason)
	// Choose one at a time, so that a checkpoint chosen raises the queue
	// wait of the candidates on its node.
	var out []pick
	for len(out) < need && len(vs) > 0 {
		for i := range vs {
			vs[i].mech, vs[i].cost, vs[i].score = p.choose(vs[i].v.Candidate, wait(vs[i].v.Node), alpha, req.Budget)
		}
		best := 0
		for i := 1; i < len(vs); i++ {
			if autoLess(vs[i], vs[best]) {
				best = i
			}
		}
		v := vs[best]
		vs = append(vs[:best:best], vs[best+1:]...)
		if v.mech == MechCkpt || v.mech == MechCkptInc {
			v.bytes, _ = v.v.dumpBytes()
			extra[v.v.Node] = sat(extra[v.v.Node], p.learn.Model(v.v.Node).Dump(v.bytes))
		}
		out = append(out, v)
	}
	return out
}

// autoLess orders auto-mode candidates: duplicates, then lower score;
// among equal scores splits longest-running first, the others in the
// request's order.
func autoLess(a, b pick) bool {
	if a.v.Duplicate != b.v.Duplicate {
		return a.v.Duplicate
	}
	if a.score != b.score {
		return a.score < b.score
	}
	if a.mech == MechSplit && b.mech == MechSplit && a.v.Progressed != b.v.Progressed {
		return a.v.Progressed > b.v.Progressed
	}
	return a.order < b.order
}

// choose is a candidate's cheapest feasible mechanism by Waste +
// alpha·Release: every mechanism but kill must release within budget
// (when set); a tie goes to the later mechanism (kill over checkpoint,
// as in Alg. 1). A duplicate is killed: it holds no unique work.
func (p *Planner) choose(c Candidate, queue time.Duration, alpha float64, budget time.Duration) (Mechanism, Cost, float64) {
	costs := p.Costs(c, queue)
	if c.Duplicate {
		k := costs[MechKill]
		k.Waste = 0
		return MechKill, k, 0
	}
	best, bestC, bestScore := MechKill, Cost{}, math.Inf(1)
	for m := MechWait; m < numMechanisms; m++ {
		cost, ok := costs[m]
		if !ok || (m != MechKill && budget > 0 && cost.Release > budget) {
			continue
		}
		score := cost.Waste.Seconds() + alpha*cost.Release.Seconds()
		if score <= bestScore {
			best, bestC, bestScore = m, cost, score
		}
	}
	return best, bestC, bestScore
}
