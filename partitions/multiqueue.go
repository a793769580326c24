package partitions

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sort"
	"time"

	"gomr/conf"
)

func init() {
	Register("tyrex-static", func(cfg Config) (Policy, error) { return newMultiQueue("tyrex-static", cfg) })
	Register("tyrex-dynamic", func(cfg Config) (Policy, error) { return newMultiQueue("tyrex-dynamic", cfg) })
	Register("fbq", func(cfg Config) (Policy, error) { return newMultiQueue("fbq", cfg) })
	Register("sita", func(cfg Config) (Policy, error) { return newMultiQueue("sita", cfg) })
	Register("comp", func(cfg Config) (Policy, error) { return newMultiQueue("comp", cfg) })
	registerKeys(multiQueueKeys...)
}

// multiQueueKeys are the configuration keys the multi-queue policies read:
// TYREX (tyrex-static, tyrex-dynamic), FBQ, SITA and COMP. The sources of
// their defaults are in docs/policies.md.
var multiQueueKeys = []conf.Key{
	{Name: "scheduler.tyrex.capacities", Type: conf.String, Default: "0.3,0.7", Description: "TYREX partition capacities C_1..C_K as fractions of the map and reduce slots; K = their count; must sum to 1", Check: floatList, Valid: "comma-separated numbers: each in (0, 1], sum 1 (±1e-6), at least one"},
	{Name: "scheduler.tyrex.timers", Type: conf.String, Default: "200s", Description: "StaticTAGS timers T_1..T_{K-1} (service limits); read as cumulative boundaries unless limits-mode is per-queue", Check: durationList, Valid: "comma-separated durations: exactly K-1 positive durations; increasing when cumulative"},
	{Name: "scheduler.tyrex.limits-mode", Type: conf.String, Default: "cumulative", Description: "how timers are read: cumulative boundaries B_k or per-queue budgets L_k", Check: conf.OneOf("cumulative", "per-queue")},
	{Name: "scheduler.tyrex.migrated-order", Type: conf.String, Default: "tail", Description: "where a migrated job enters the next queue: tail (entry order) or arrival (original arrival order)", Check: conf.OneOf("tail", "arrival")},
	{Name: "scheduler.tyrex.partition-reduces", Type: conf.Bool, Default: "true", Description: "apply the capacities to reduce slots too (else reduces use the whole cluster)"},
	{Name: "scheduler.tyrex.cv2-threshold", Type: conf.Float, Default: "2", Description: "DynamicTAGS: migrate only when the CV^2 of the partial sizes exceeds this", Valid: "a number >= 0"},
	{Name: "scheduler.tyrex.min-sample", Type: conf.Int, Default: "2", Description: "DynamicTAGS: fewest jobs in the CV^2 test (with dynamic-sample queue: jobs of the partition; else jobs of the sample)", Valid: "an integer >= 2"},
	{Name: "scheduler.tyrex.dynamic-sample", Type: conf.String, Default: "recent", Description: "DynamicTAGS sample: recent (the partial sizes > 0 of the jobs in the partition plus those there of the latest dynamic-window jobs that left it, finished or moved on; test and cutoff over them), queue (CV^2 test over every job of the partition, waiting ones at 0; cutoff over the partial sizes > 0, down to 0+), positive (test and cutoff over the jobs in the partition with a partial size > 0) or all (both over every job in the partition, zeros included)", Check: conf.OneOf("recent", "queue", "positive", "all")},
	{Name: "scheduler.tyrex.dynamic-window", Type: conf.Int, Default: "100", Description: "DynamicTAGS recent sample: how many of the latest jobs to leave a partition (finished there or moved on) count with their partial size there, besides the jobs in it", Valid: "an integer >= 1"},
	{Name: "scheduler.tyrex.dynamic-timer", Type: conf.String, Default: "sticky", Description: "DynamicTAGS: sticky (the latest cutoff stays the partition's timer until the next one: the thesis' timer is 'always set to some value', §4.6.3; the default since a re-sweep on seeds 1-10, docs/policies.md) or check (jobs move only when a cutoff is computed, §4.4.4)", Check: conf.OneOf("check", "sticky")},
	{Name: "scheduler.tyrex.fallback-timer", Type: conf.Duration, Default: "0s", Description: "DynamicTAGS safety net: migrate a job whose partial size passes this even without a dynamic timer; 0 = never (faithful)", Valid: "a duration >= 0"},

	{Name: "scheduler.fbq.limits", Type: conf.String, Default: "12000s", Description: "FBQ service limits of queues 1..K-1; K = count+1", Check: durationList, Valid: "comma-separated durations: at least one positive duration; increasing when cumulative"},
	{Name: "scheduler.fbq.limits-mode", Type: conf.String, Default: "cumulative", Description: "cumulative boundaries or per-queue budgets", Check: conf.OneOf("cumulative", "per-queue")},

	{Name: "scheduler.sita.capacities", Type: conf.String, Default: "0.3,0.7", Description: "SITA partition capacities C_1..C_K; must sum to 1", Check: floatList, Valid: "comma-separated numbers: each in (0, 1], sum 1"},
	{Name: "scheduler.sita.cutoffs", Type: conf.String, Default: "18000s", Description: "SITA cumulative size cutoffs B_1..B_{K-1} (predicted job size)", Check: durationList, Valid: "comma-separated durations: exactly K-1 positive increasing durations"},
	{Name: "scheduler.sita.predictor", Type: conf.String, Default: "regression", Description: "job size predictor: regression (log-log least squares on input bytes over completed jobs) or oracle (JobView.EstimatedSize: the size the job is told at submission, from its name's history profile on the runtime and in mr sim by default, its true size with mr sim --knowledge oracle; 0 when unknown)", Check: conf.OneOf("regression", "oracle")},
	{Name: "scheduler.sita.min-fit", Type: conf.Int, Default: "10", Description: "completed jobs needed before the regression predictor is used (before that the oracle estimate, or 0, is used) and before balanced cutoffs are computed (before that the configured cutoffs apply)", Valid: "an integer >= 2"},
	{Name: "scheduler.sita.cutoff-mode", Type: conf.String, Default: "fixed", Description: "SITA cutoffs: fixed (scheduler.sita.cutoffs, the thesis' tuned 18,000 s) or balanced (SITA-E: recomputed at every job completion so that the completed jobs predicted into partitions 1..k carry C_1+..+C_k of their work; the configured cutoffs apply until min-fit jobs have completed)", Check: conf.OneOf("fixed", "balanced")},
	{Name: "scheduler.sita.unknown-size", Type: conf.String, Default: "last", Description: "where SITA dispatches a job whose size it cannot predict (no regression fit yet and no size told, e.g. the first min-fit jobs of a new cluster): last (the partition of the largest jobs, so that partition 1 receives only jobs predicted small) or first (partition 1, as a size of 0 reads)", Check: conf.OneOf("last", "first")},
	{Name: "scheduler.sita.balance-window", Type: conf.Int, Default: "1000", Description: "SITA balanced cutoffs: how many of the latest completed jobs they are computed over", Valid: "an integer >= 2"},

	{Name: "scheduler.comp.queues", Type: conf.Int, Default: "2", Description: "COMP number of queues K (compares with the last K-1 completed jobs)", Valid: "an integer >= 2"},
	{Name: "scheduler.comp.predictor", Type: conf.String, Default: "regression", Description: "job size predictor, as scheduler.sita.predictor", Check: conf.OneOf("regression", "oracle")},
}

// dispatch says how a job reaches its queue.
type dispatch int

const (
	feedback  dispatch = iota // enter queue 1, move on after a service limit
	bySize                    // SITA: predicted size against cutoffs
	byCompare                 // COMP: predicted size against recent completions
)

// MultiQueue implements the multi-queue policies of Ghiț's thesis (chapters
// 4 and 5): K FIFO queues, either owning partitions of the map and reduce
// slots (tyrex-static, tyrex-dynamic, sita) or sharing the whole cluster
// with strict priority between queues (fbq, comp), and jobs reaching a
// queue by feedback (service limits: StaticTAGS, DynamicTAGS, FBQ) or by
// dispatch on arrival (SITA, COMP). Moving a job keeps its completed work;
// running tasks are never killed and finish under the queue they started
// in. Build it with New.
type MultiQueue struct {
	name string
	k    int
	// caps are the capacity fractions; nil when queues share the cluster.
	caps             []float64
	partitionReduces bool
	dispatch         dispatch
	// limits are per-queue service budgets (len k-1) for static feedback.
	limits       []time.Duration
	dynamic      bool
	cv2Threshold float64
	minSample    int
	fallback     time.Duration
	sample       string // DynamicTAGS sample: recent, queue, positive or all
	window       int    // DynamicTAGS recent sample: jobs that left a partition kept
	sticky       bool   // DynamicTAGS: the latest cutoff stays the timer
	arrivalOrder bool
	// cutoffs are SITA's cumulative size cutoffs (len k-1).
	cutoffs   []time.Duration
	predictor string
	minFit    int
	// balanced: SITA's cutoffs are recomputed from done, the latest
	// completed jobs (at most balanceWindow), to balance the work.
	balanced      bool
	balanceWindow int
	// unknownLast: SITA sends a job it cannot predict to the last queue.
	unknownLast bool
	done        []doneJob
	sizes       []sizedWork

	queues   [][]*mqJob
	jobs     map[string]*mqJob
	seq      int
	attempts map[attemptKey]int
	running  [2][]int
	mapSlots int
	redSlots int

	timers     []time.Duration
	checks     int
	migrations int64
	history    []time.Duration // COMP: sizes of the latest completed jobs
	// left holds, per partition, the partial sizes there of the latest
	// jobs that left it (finished or moved on), newest last, at most
	// window of them (DynamicTAGS recent sample).
	left    [][]float64
	fit     logFit
	buf     offerBuf
	xs      []float64
	scratch cutoffScratch
	move    []*mqJob
}

type mqJob struct {
	id      string
	seq     int
	arrival time.Time
	entered time.Time
	queue   int
	partial []time.Duration
	service time.Duration
	// work is the service without the time reduces held their slots
	// waiting for the job's map stage to end (a reduce's work counts from
	// the later of its start and the last map's end): the size SITA's
	// regression and COMP's comparison learn from.
	work      time.Duration
	lastMap   time.Time
	input     int64
	estimate  time.Duration
	predicted time.Duration
	hint      int
}

// doneJob is what SITA's balanced cutoffs keep of a completed job: what
// its size is predicted from, and its work.
type doneJob struct {
	input    int64
	estimate time.Duration
	work     time.Duration
}

// sizedWork pairs a job's predicted size with its work (both in seconds).
type sizedWork struct{ size, work float64 }

// logFit is a least-squares fit of ln(size) on ln(input bytes).
type logFit struct {
	n, sx, sy, sxx, sxy float64
}

func (f *logFit) add(input int64, size time.Duration) {
	if input <= 0 || size <= 0 {
		return
	}
	x, y := math.Log(float64(input)), math.Log(size.Seconds())
	f.n++
	f.sx += x
	f.sy += y
	f.sxx += x * x
	f.sxy += x * y
}

func (f *logFit) predict(input int64) (time.Duration, bool) {
	den := f.n*f.sxx - f.sx*f.sx
	if f.n < 2 || input <= 0 || math.Abs(den) < 1e-12 {
		return 0, false
	}
	beta := (f.n*f.sxy - f.sx*f.sy) / den
	alpha := (f.sy - beta*f.sx) / f.n
	s := math.Exp(alpha + beta*math.Log(float64(input)))
	if math.IsInf(s, 0) || math.IsNaN(s) || s > 1e12 {
		return 0, false
	}
	return time.Duration(s * float64(time.Second)), true
}

func newMultiQueue(name string, cfg Config) (*MultiQueue, error) {
	r := newReader(cfg)
	p := &MultiQueue{name: name, jobs: map[string]*mqJob{}, attempts: map[attemptKey]int{}}
	switch name {
	case "tyrex-static", "tyrex-dynamic":
		p.caps = capacities(r, "scheduler.tyrex.capacities")
		p.k = len(p.caps)
		p.partitionReduces = r.Bool("scheduler.tyrex.partition-reduces")
		p.arrivalOrder = r.OneOf("scheduler.tyrex.migrated-order", "tail", "arrival") == "arrival"
		if name == "tyrex-static" {
			cum := r.OneOf("scheduler.tyrex.limits-mode", "cumulative", "per-queue") == "cumulative"
			p.limits = budgets(limits(r, "scheduler.tyrex.timers", p.k-1, cum), cum)
		} else {
			p.dynamic = true
			p.cv2Threshold = r.Float("scheduler.tyrex.cv2-threshold", 0, math.Inf(1))
			p.minSample = r.Int("scheduler.tyrex.min-sample", 2)
			p.fallback = r.Duration("scheduler.tyrex.fallback-timer")
			p.sample = r.OneOf("scheduler.tyrex.dynamic-sample", "recent", "queue", "positive", "all")
			p.window = r.Int("scheduler.tyrex.dynamic-window", 1)
			p.sticky = r.OneOf("scheduler.tyrex.dynamic-timer", "check", "sticky") == "sticky"
		}
	case "fbq":
		cum := r.OneOf("scheduler.fbq.limits-mode", "cumulative", "per-queue") == "cumulative"
		ls := limits(r, "scheduler.fbq.limits", -1, cum)
		if r.Err() == nil && len(ls) == 0 {
			r.Fail("scheduler.fbq.limits", r.Raw("scheduler.fbq.limits"), "needs at least one limit")
		}
		p.limits = budgets(ls, cum)
		p.k = len(ls) + 1
	case "sita":
		p.caps = capacities(r, "scheduler.sita.capacities")
		p.k = len(p.caps)
		p.partitionReduces = true
		p.dispatch = bySize
		p.cutoffs = limits(r, "scheduler.sita.cutoffs", p.k-1, true)
		p.predictor = r.OneOf("scheduler.sita.predictor", "regression", "oracle")
		p.minFit = r.Int("scheduler.sita.min-fit", 2)
		p.balanced = r.OneOf("scheduler.sita.cutoff-mode", "fixed", "balanced") == "balanced"
		p.balanceWindow = r.Int("scheduler.sita.balance-window", 2)
		p.unknownLast = r.OneOf("scheduler.sita.unknown-size", "last", "first") == "last"
	case "comp":
		p.k = r.Int("scheduler.comp.queues", 2)
		p.dispatch = byCompare
		p.predictor = r.OneOf("scheduler.comp.predictor", "regression", "oracle")
		p.minFit = 2
	default:
		return nil, fmt.Errorf("multi-queue policy %q does not exist", name)
	}
	if r.Err() != nil {
		return nil, fmt.Errorf("policy %s: %w", name, r.Err())
	}
	p.queues = make([][]*mqJob, p.k)
	if p.sample == "recent" {
		p.left = make([][]float64, p.k)
	}
	p.running[Map] = make([]int, p.k)
	p.running[Reduce] = make([]int, p.k)
	p.timers = make([]time.Duration, max(p.k-1, 0))
	for i := range p.timers {
		if p.dynamic {
			p.timers[i] = -1
		} else if i < len(p.limits) {
			p.timers[i] = p.limits[i]
		}
	}
	return p, nil
}

// budgets turns configured limits into per-queue budgets.
func budgets(ls []time.Duration, cumulative bool) []time.Duration {
	out := make([]time.Duration, len(ls))
	for i, l := range ls {
		out[i] = l
		if cumulative && i > 0 {
			out[i] = l - ls[i-1]
		}
	}
	return out
}

// Name returns the policy's configuration name.
func (p *MultiQueue) Name() string { return p.name }

// Queues returns the number of queues K.
func (p *MultiQueue) Queues() int { return p.k }

// Observe updates the queues: arrivals, task accounting, migrations.
func (p *MultiQueue) Observe(ev Event) {
	switch ev.Kind {
	case JobSubmitted:
		if ev.Job != nil {
			p.admit(ev.Job, ev.Time)
		}
	case JobFinished:
		j := p.jobs[ev.JobID]
		if j == nil {
			return
		}
		if p.dispatch != feedback {
			p.fit.add(j.input, j.work)
			if p.balanced {
				p.rebalance(j)
			}
			if p.k > 1 {
				p.history = append(p.history, j.work)
				if len(p.history) > p.k-1 {
					p.history = p.history[len(p.history)-(p.k-1):]
				}
			}
		}
		p.removeFromQueue(j)
		p.recordLeft(j, j.queue)
		delete(p.jobs, ev.JobID)
		for key, q := range p.attempts {
			if key.job == ev.JobID {
				p.running[key.typ][q]--
				delete(p.attempts, key)
			}
		}
	case TaskStarted:
		j := p.jobs[ev.JobID]
		if j == nil {
			return
		}
		key := keyOf(ev)
		if _, dup := p.attempts[key]; dup {
			return
		}
		p.attempts[key] = j.queue
		p.running[ev.Type][j.queue]++
	case TaskFinished, TaskFailed:
		key := keyOf(ev)
		q, ok := p.attempts[key]
		if ok {
			delete(p.attempts, key)
			p.running[ev.Type][q]--
		}
		if ev.Kind == TaskFailed {
			return
		}
		j := p.jobs[ev.JobID]
		if j == nil {
			return
		}
		if !ok {
			q = j.queue
		}
		j.partial[q] += ev.Duration
		j.service += ev.Duration
		j.work += taskWork(j, ev)
		switch {
		case p.dynamic:
			for k := 0; k < p.k-1; k++ {
				p.dynamicMigrate(k, ev.Time)
			}
		case p.dispatch == feedback:
			if k := j.queue; k < p.k-1 && j.partial[k] > p.limits[k] {
				p.migrate(j, ev.Time)
			}
		}
	}
}

// taskWork is a finished task's work for the size estimates: a map's
// running time, and a reduce's running time since the later of its start
// and its job's last map end, as a reduce launched at slow-start holds its
// slot without working until the map stage ends.
func taskWork(j *mqJob, ev Event) time.Duration {
	if ev.Kind != TaskFinished {
		return ev.Duration
	}
	if ev.Type == Map {
		if ev.Time.After(j.lastMap) {
			j.lastMap = ev.Time
		}
		return ev.Duration
	}
	if j.lastMap.IsZero() {
		return ev.Duration
	}
	return max(min(ev.Duration, ev.Time.Sub(j.lastMap)), 0)
}

func (p *MultiQueue) admit(v *JobView, now time.Time) *mqJob {
	if j := p.jobs[v.ID]; j != nil {
		return j
	}
	p.seq++
	j := &mqJob{id: v.ID, seq: p.seq, arrival: v.Submitted, entered: now, partial: make([]time.Duration, p.k),
		input: v.InputBytes, estimate: v.EstimatedSize}
	if j.arrival.IsZero() {
		j.arrival = now
	}
	switch p.dispatch {
	case bySize:
		j.predicted = p.predict(j)
		if j.predicted <= 0 && p.unknownLast {
			// no prediction is not a prediction of a small job
			j.queue = p.k - 1
		}
		for j.queue < p.k-1 && j.predicted > p.cutoffs[j.queue] {
			j.queue++
		}
	case byCompare:
		j.predicted = p.predict(j)
		for _, h := range p.history {
			if j.predicted > h {
				j.queue++
			}
		}
	}
	p.jobs[v.ID] = j
	p.enqueue(j)
	return j
}

func (p *MultiQueue) predict(j *mqJob) time.Duration {
	return p.predictFrom(j.input, j.estimate)
}

// predictFrom predicts a job's size from its input bytes with the
// regression, or returns the estimate it was told.
func (p *MultiQueue) predictFrom(input int64, estimate time.Duration) time.Duration {
	if p.predictor == "regression" && p.fit.n >= float64(p.minFit) {
		if s, ok := p.fit.predict(input); ok {
			return s
		}
	}
	return estimate
}

// rebalance adds a completed job to SITA's balanced sample and, once
// min-fit jobs have completed, recomputes the cutoffs over the sample with
// the current predictor (SITA-E: every partition's share of the work equals
// its share of the slots). The cutoffs are also reported as the policy's
// timers.
func (p *MultiQueue) rebalance(j *mqJob) {
	p.done = append(p.done, doneJob{input: j.input, estimate: j.estimate, work: j.work})
	if len(p.done) > p.balanceWindow {
		p.done = slices.Delete(p.done, 0, len(p.done)-p.balanceWindow)
	}
	if len(p.done) < p.minFit {
		return
	}
	p.sizes = p.sizes[:0]
	for _, d := range p.done {
		p.sizes = append(p.sizes, sizedWork{size: p.predictFrom(d.input, d.estimate).Seconds(), work: d.work.Seconds()})
	}
	if cs, ok := balancedCutoffs(p.sizes, p.caps); ok {
		for k, c := range cs {
			p.cutoffs[k] = time.Duration(c * float64(time.Second))
		}
		copy(p.timers, p.cutoffs)
		p.checks++
	}
}

// balancedCutoffs returns SITA-E's cutoffs for partitions of capacities
// caps (summing to 1) over a sample of jobs: the k-th cutoff is a predicted
// size such that the jobs predicted at or below it carry C_1+..+C_k of the
// sample's work, as near as whole jobs allow (the first size whose share
// reaches the target, or the size before it when that share is nearer;
// jobs of equal predicted size fall on the same side). It sorts and
// overwrites xs, and reports false when the sample has no work or there is
// one partition.
func balancedCutoffs(xs []sizedWork, caps []float64) ([]float64, bool) {
	var total float64
	for _, x := range xs {
		total += max(x.work, 0)
	}
	if total <= 0 || len(caps) < 2 {
		return nil, false
	}
	slices.SortFunc(xs, func(a, b sizedWork) int { return cmp.Compare(a.size, b.size) })
	// collapse equal sizes: xs[:n] holds each distinct size once, with the
	// work of the jobs at or below it
	n, cum := 0, 0.0
	for _, x := range xs {
		cum += max(x.work, 0)
		if n > 0 && xs[n-1].size == x.size {
			xs[n-1].work = cum
			continue
		}
		xs[n] = sizedWork{size: x.size, work: cum}
		n++
	}
	xs = xs[:n]
	out := make([]float64, 0, len(caps)-1)
	target := 0.0
	for k := 0; k < len(caps)-1; k++ {
		target += caps[k] * total
		g := sort.Search(len(xs), func(i int) bool { return xs[i].work >= target })
		g = min(g, len(xs)-1)
		cut := xs[g].size
		if g > 0 && target-xs[g-1].work < xs[g].work-target {
			cut = xs[g-1].size
		}
		if len(out) > 0 {
			cut = max(cut, out[len(out)-1])
		}
		out = append(out, cut)
	}
	return out, true
}

// enqueue puts j at its place in its queue: the tail, or by arrival.
func (p *MultiQueue) enqueue(j *mqJob) {
	q := p.queues[j.queue]
	if !p.arrivalOrder {
		p.queues[j.queue] = append(q, j)
		return
	}
	i := sort.Search(len(q), func(i int) bool {
		return q[i].arrival.After(j.arrival) || (q[i].arrival.Equal(j.arrival) && q[i].seq > j.seq)
	})
	p.queues[j.queue] = slices.Insert(q, i, j)
}

func (p *MultiQueue) removeFromQueue(j *mqJob) {
	q := p.queues[j.queue]
	for i, x := range q {
		if x == j {
			p.queues[j.queue] = slices.Delete(q, i, i+1)
			return
		}
	}
}

func (p *MultiQueue) migrate(j *mqJob, now time.Time) {
	p.removeFromQueue(j)
	p.recordLeft(j, j.queue)
	j.queue++
	j.entered = now
	p.enqueue(j)
	p.migrations++
}

// recordLeft keeps the partial size in partition k of a job leaving it,
// for the recent DynamicTAGS sample; a job that leaves with none (killed
// or failed before a task of it finished there) is not a size.
func (p *MultiQueue) recordLeft(j *mqJob, k int) {
	if p.left == nil || k >= p.k-1 || j.partial[k] <= 0 {
		return
	}
	l := append(p.left[k], j.partial[k].Seconds())
	if len(l) > p.window {
		l = l[len(l)-p.window:]
	}
	p.left[k] = l
}

// dynamicMigrate applies the DynamicTAGS rule (thesis §4.4.4) to queue k:
// when the CV² of the partial sizes in the partition exceeds the
// threshold, the optimal cutoff of their distribution becomes the timer
// and the jobs above it move on. Which jobs form the sample:
//
//   - recent (default): the partial sizes > 0 of the jobs in the partition
//     and the partial sizes there of the latest window jobs that left it
//     (finished in it or moved on); test and cutoff over them. The thesis
//     calls it "the distribution of the current partial job sizes"; with
//     FIFO inside the partition the jobs in it are a handful, mostly one
//     large job at the head and small ones behind it with no service, so
//     the recent history supplies the distribution the job is measured
//     against (a reading, docs/policies.md);
//   - queue: the CV² test is over every job of the partition,
//     those still waiting counting with partial size 0 ("the jobs in the
//     queue", §4.6.4); the cutoff is over the positive partial sizes (the
//     cutoff is defined for a positive X, §4.4.4), p ranging down to 0+,
//     so that a job that alone has service while others wait can move on;
//   - positive: both over the jobs with a partial size > 0, cutoffs at the
//     sample values (a lone job with service never moves);
//   - all: both over every job, zeros included.
//
// With sticky timers the latest cutoff stays the partition's timer, applied
// like a StaticTAGS timer until the next one is computed.
func (p *MultiQueue) dynamicMigrate(k int, now time.Time) {
	p.xs = p.xs[:0]
	var all, allSq float64
	nAll := 0
	for _, j := range p.queues[k] {
		x := j.partial[k].Seconds()
		all += x
		allSq += x * x
		nAll++
		if x > 0 || p.sample == "all" {
			p.xs = append(p.xs, x)
		}
	}
	if p.sample == "recent" {
		p.xs = append(p.xs, p.left[k]...)
	}
	cut := math.Inf(1)
	if p.sticky && p.timers[k] > 0 {
		cut = p.timers[k].Seconds()
	} else {
		p.timers[k] = -1
	}
	var test bool
	if p.sample == "queue" {
		test = nAll >= p.minSample && len(p.xs) > 0 && cv2Sums(float64(nAll), all, allSq) > p.cv2Threshold
	} else {
		test = len(p.xs) >= p.minSample && CV2(p.xs) > p.cv2Threshold
	}
	if test {
		if c, ok := p.scratch.optimalCutoff(p.xs, p.sample == "queue"); ok {
			cut = c
			p.timers[k] = max(time.Duration(c*float64(time.Second)), 0)
			p.checks++
		}
	}
	if math.IsInf(cut, 1) && p.fallback <= 0 {
		return
	}
	p.move = p.move[:0]
	for _, j := range p.queues[k] {
		if (j.partial[k] > 0 && j.partial[k].Seconds() > cut) || (p.fallback > 0 && j.partial[k] > p.fallback) {
			p.move = append(p.move, j)
		}
	}
	for _, j := range p.move {
		p.migrate(j, now)
	}
}

// capsFor returns the slot cap of each queue for a type, nil when queues
// share the cluster.
func (p *MultiQueue) capsFor(t TaskType, total int, out []int) []int {
	if p.caps == nil || (t == Reduce && !p.partitionReduces) {
		return nil
	}
	return partitionCaps(p.caps, total, out)
}

// partitionCaps splits total slots by the fractions cs: round(C_k·S) but at
// least 1 for every partition but the last, which gets the rest.
func partitionCaps(cs []float64, total int, out []int) []int {
	out = out[:0]
	sum := 0
	for k, c := range cs {
		if k == len(cs)-1 {
			out = append(out, max(total-sum, 0))
			break
		}
		n := max(int(math.Round(c*float64(total))), 1)
		n = min(n, max(total-sum, 0))
		out = append(out, n)
		sum += n
	}
	return out
}

// Offer fills the free slots: queues in order, FIFO inside each, within
// each partition's cap where queues own partitions.
func (p *MultiQueue) Offer(view *ClusterView, offer SlotOffer) Decision {
	p.mapSlots, p.redSlots = view.MapSlots, view.ReduceSlots
	if len(view.Jobs) > len(p.jobs) {
		// jobs the policy was not told of (for example after a restart)
		for i := range view.Jobs {
			if p.jobs[view.Jobs[i].ID] == nil {
				p.admit(&view.Jobs[i], view.Now)
			}
		}
	}
	p.buf.load(view, offer.Host, false)
	var d Decision
	var capBuf [8]int
	for _, t := range []TaskType{Map, Reduce} {
		n := free(offer, t)
		if n <= 0 {
			continue
		}
		caps := p.capsFor(t, slots(view, t), capBuf[:0])
		used := make([]int, p.k)
		for n > 0 {
			assigned := false
			for k := 0; k < p.k && !assigned; k++ {
				if caps != nil && p.running[t][k]+used[k] >= caps[k] {
					continue
				}
				for _, j := range p.queues[k] {
					w := p.buf.getHinted(j.id, &j.hint)
					if w == nil || !w.eligible(t) {
						continue
					}
					p.buf.take(t, w, &d, false, k)
					used[k]++
					assigned = true
					break
				}
			}
			if !assigned {
				break
			}
			n--
		}
	}
	return d
}

// Timers returns the timer of each queue but the last (see TimerSource).
func (p *MultiQueue) Timers() []time.Duration { return p.timers }

// TimerChecks counts the dynamic timers computed so far.
func (p *MultiQueue) TimerChecks() int { return p.checks }

// QueueOf returns the queue (0-based) of a job, and whether it is known.
func (p *MultiQueue) QueueOf(jobID string) (int, bool) {
	j := p.jobs[jobID]
	if j == nil {
		return 0, false
	}
	return j.queue, true
}

// Describe returns the queues, their caps, timers and jobs.
func (p *MultiQueue) Describe(now time.Time) PolicyStatus {
	st := PolicyStatus{Policy: p.name, Counters: map[string]int64{"migrations": p.migrations}}
	mc := p.capsFor(Map, p.mapSlots, nil)
	rc := p.capsFor(Reduce, p.redSlots, nil)
	for k := 0; k < p.k; k++ {
		ps := PartitionStatus{Index: k, RunningMaps: p.running[Map][k], RunningReduces: p.running[Reduce][k], Jobs: len(p.queues[k])}
		if p.caps != nil {
			ps.Capacity = p.caps[k]
		}
		if mc != nil {
			ps.MapSlots = mc[k]
		}
		if rc != nil {
			ps.ReduceSlots = rc[k]
		}
		if k < len(p.timers) && p.timers[k] > 0 {
			ps.Timer = p.timers[k]
		}
		st.Partitions = append(st.Partitions, ps)
		for _, j := range p.queues[k] {
			st.Jobs = append(st.Jobs, JobStatus{ID: j.id, Queue: k, PartialSize: j.partial[k], Service: j.service, Feasible: true})
		}
	}
	return st
}
