package partitions

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"gomr/conf"
)

func init() {
	Register("fair", func(cfg Config) (Policy, error) { return NewFair(cfg) })
	registerKeys(fairKeys...)
}

// fairKeys are the configuration keys the fair policy reads.
var fairKeys = []conf.Key{
	{Name: "scheduler.fair.pools", Type: conf.String, Default: "", Description: "fair pools as name:weight:minMaps:minReduces:minSharePreemptionTimeout, comma-separated; unknown pools get weight 1, no minimum and the default timeout", Valid: "items name[:weight[:minMaps[:minReduces[:timeout]]]]; weight > 0; minimums integers >= 0; timeout a duration >= 0 (0: the default); no name twice"},
	{Name: "scheduler.fair.default-pool", Type: conf.String, Default: "default", Description: "pool of a job that names none", Valid: "any name; empty means \"default\""},
	{Name: "scheduler.fair.weight", Type: conf.String, Default: "equal", Description: "job weight inside a pool: equal (Hadoop default), log (size-based, log2(1+tasks)), linear (tasks)", Check: conf.OneOf("equal", "log", "linear")},
}

// Pool is a fair-scheduler pool's configuration.
type Pool struct {
	Name       string
	Weight     float64
	MinMaps    int
	MinReduces int
	// MinShareTimeout is how long the pool may stay below its minimum
	// share before it preempts (Hadoop's per-pool
	// minSharePreemptionTimeout); 0 means the default,
	// scheduler.fair.min-share-preemption-timeout.
	MinShareTimeout time.Duration
}

// Fair is Hadoop's Fair Scheduler as users know it (Hadoop 1.x): jobs
// belong to pools; each slot type's capacity is shared between pools by
// weighted max-min fairness with minimum shares (water-filling, each pool
// capped at its demand), and inside a pool between its jobs the same way
// with job weights (equal, log or linear in the job's task count, times a
// priority factor 2^priority). A free slot goes first to the pool furthest
// below its minimum share, otherwise to the pool with the lowest
// running/fair-share ratio, and inside the pool to the job with the lowest
// running/fair-share ratio; ties by submission time, then ID.
//
// Preemption after a timeout is Hadoop's (fair_preempt.go; off by default,
// as there). Left out: delay scheduling for locality (the JobTracker still
// picks a data-local task of the chosen job), and per-pool FIFO mode.
type Fair struct {
	pools       map[string]Pool
	defaultPool string
	weightMode  string
	seq         int
	jobs        map[string]*fairJob
	buf         offerBuf
	// the latest computed shares, for Describe
	lastIDs       []string
	lastJobShare  [2][]float64
	lastPoolNames []string
	lastPoolShare [2][]float64
	preemption    fairPreemption
	// byView caches, by the last view's index, the job f.jobs had for it,
	// valid while no job left f.jobs (byViewGen == jobsGen): a view of
	// 1,000 jobs cost 1,000 lookups by ID per Offer.
	byView             []*fairJob
	byViewGen, jobsGen uint64
	// shareEs and shareIdx are shares' scratch: the jobs' entities
	// grouped by pool, and each one's candidate.
	shareEs  []entity
	shareIdx []int
	// Offer's scratch, kept between offers (with 1,000 jobs an offer's
	// slices were ~100 KB of garbage): the candidates, the pools in
	// order of first appearance and their indexes, each slot type's
	// shares (lastJobShare and lastPoolShare are views of these), the
	// pools' entities and bounds, pick's pool states.
	wf           waterFiller
	cands        []fairCand
	poolNames    []string
	jobShareBuf  [2][]float64
	poolShareBuf [2][]float64
	poolEs       []entity
	start, pos   []int
	pickPools    []pickPool
	// weightMode's code, not compared as a string per job per offer
	weightCode int
	// poolIDs numbers every pool a job has named (fairJob.poolID), so that
	// an offer finds a job's pool by index, not by its name in a map;
	// poolAt[id] is that pool's place in the current offer's poolNames
	// if its gen is offerGen. Pools are few and never forgotten, as
	// Hadoop's pool manager keeps the pools jobs create.
	poolIDs  map[string]int
	poolAt   []offerPool
	offerGen uint64
}

// offerPool is where a pool is in an offer's list of pools.
type offerPool struct {
	gen  uint64
	slot int
}

// pickPool is a pool's state in pick.
type pickPool struct {
	running  int
	eligible bool
}

// Codes of scheduler.fair.weight.
const (
	weightEqual = iota
	weightLog
	weightLinear
)

type fairJob struct {
	id        string
	seq       int
	pool      string
	poolID    int // the pool's number in Fair.poolIDs
	submitted time.Time
	priority  int
	tasks     int
	logTasks  float64 // log2(1 + tasks), made at its first use
}

// NewFair builds the fair scheduler from its configuration keys.
func NewFair(cfg Config) (*Fair, error) {
	r := newReader(cfg)
	f := &Fair{pools: map[string]Pool{}, jobs: map[string]*fairJob{}, poolIDs: map[string]int{}}
	f.defaultPool = r.Raw("scheduler.fair.default-pool")
	f.weightMode = r.OneOf("scheduler.fair.weight", "equal", "log", "linear")
	f.preemption = newFairPreemption(r)
	spec := r.Raw("scheduler.fair.pools")
	if r.Err() != nil {
		return nil, fmt.Errorf("policy fair: %w", r.Err())
	}
	pools, err := ParsePools(spec)
	if err != nil {
		return nil, fmt.Errorf("policy fair: scheduler.fair.pools=%q: %w", spec, err)
	}
	for _, p := range pools {
		f.pools[p.Name] = p
	}
	if f.defaultPool == "" {
		f.defaultPool = "default"
	}
	switch f.weightMode {
	case "log":
		f.weightCode = weightLog
	case "linear":
		f.weightCode = weightLinear
	}
	return f, nil
}

// ParsePools parses "name:weight:minMaps:minReduces,..." (weight and the
// minimums may be left out: "etl:2,adhoc").
func ParsePools(s string) ([]Pool, error) {
	var out []Pool
	seen := map[string]bool{}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		f := strings.Split(item, ":")
		if len(f) > 5 || f[0] == "" {
			return nil, fmt.Errorf("pool %q: want name[:weight[:minMaps[:minReduces[:minSharePreemptionTimeout]]]]", item)
		}
		p := Pool{Name: f[0], Weight: 1}
		if seen[p.Name] {
			return nil, fmt.Errorf("pool %q named twice", p.Name)
		}
		seen[p.Name] = true
		if len(f) > 1 {
			w, err := strconv.ParseFloat(f[1], 64)
			if err != nil || w <= 0 || math.IsInf(w, 0) {
				return nil, fmt.Errorf("pool %q: weight %q must be a positive number", p.Name, f[1])
			}
			p.Weight = w
		}
		for i, dst := range []*int{&p.MinMaps, &p.MinReduces} {
			if len(f) > 2+i {
				n, err := strconv.Atoi(f[2+i])
				if err != nil || n < 0 {
					return nil, fmt.Errorf("pool %q: minimum share %q must be a non-negative integer", p.Name, f[2+i])
				}
				*dst = n
			}
		}
		if len(f) > 4 {
			d, err := parseDuration(f[4])
			if err != nil || d < 0 {
				return nil, fmt.Errorf("pool %q: min-share preemption timeout %q must be a duration >= 0 such as 30s", p.Name, f[4])
			}
			p.MinShareTimeout = d
		}
		out = append(out, p)
	}
	return out, nil
}

// Name returns "fair".
func (*Fair) Name() string { return "fair" }

// Observe records arrivals and departures.
func (f *Fair) Observe(ev Event) {
	if f.preemption.on && ev.Kind == JobSubmitted && ev.Job != nil && f.jobs[ev.JobID] == nil {
		pool := ev.Job.Pool
		if pool == "" {
			pool = f.defaultPool
		}
		idle := true
		for _, j := range f.jobs {
			idle = idle && j.pool != pool
		}
		f.preemption.observe(ev, pool, idle)
	} else {
		f.preemption.observe(ev, "", false)
	}
	switch ev.Kind {
	case JobSubmitted:
		if ev.Job != nil {
			f.admit(ev.Job)
		}
	case JobFinished:
		delete(f.jobs, ev.JobID)
		f.jobsGen++
	}
}

func (f *Fair) admit(v *JobView) *fairJob {
	if j := f.jobs[v.ID]; j != nil {
		return j
	}
	f.seq++
	pool := v.Pool
	if pool == "" {
		pool = f.defaultPool
	}
	id, ok := f.poolIDs[pool]
	if !ok {
		id = len(f.poolIDs)
		f.poolIDs[pool] = id
	}
	j := &fairJob{id: v.ID, seq: f.seq, pool: pool, poolID: id, submitted: v.Submitted, priority: v.Priority, tasks: v.Maps + v.Reduces}
	f.jobs[v.ID] = j
	return j
}

func (f *Fair) pool(name string) Pool {
	if p, ok := f.pools[name]; ok {
		return p
	}
	return Pool{Name: name, Weight: 1}
}

func (f *Fair) jobWeight(j *fairJob) float64 {
	w := 1.0
	switch f.weightCode {
	case weightLog:
		if j.logTasks == 0 {
			j.logTasks = math.Log2(1 + float64(j.tasks))
		}
		w = j.logTasks
	case weightLinear:
		w = float64(max(j.tasks, 1))
	}
	pr := min(max(j.priority, -2), 2)
	return w * priorityFactor[pr+2]
}

// priorityFactor is 2^priority for the priorities -2 to 2 (exact, as
// math.Pow's were).
var priorityFactor = [5]float64{0.25, 0.5, 1, 2, 4}

// entity is a pool or a job in a fair-share computation.
type entity struct {
	weight, minShare, demand float64
	share                    float64
}

// waterFill gives each entity min(demand, max(minShare, r·weight)) with r
// chosen so that the shares sum to total (or every demand is met), as
// Hadoop's fair scheduler computes fair shares. The result is exact: the
// sum is piecewise linear in r, and r is found between its breakpoints.
func waterFill(es []entity, total float64) {
	var w waterFiller
	w.fill(es, total)
}

// waterFiller is waterFill with its scratch kept between calls: the fair
// policy computes shares at every offer, and with 1,000 jobs the
// breakpoints were 48 KB of garbage an offer.
type waterFiller struct {
	bps, tmp []breakpoint
}

// breakpoint is where used(r) = c + slope·r changes: from r on, c grows
// by dc and the slope by dslope.
type breakpoint struct{ r, dc, dslope float64 }

// clampShare is min(demand, max(minShare, v)) for the values a share
// computation sees (finite, not NaN): math.Min and math.Max are calls on
// amd64, and this runs for every entity at every step.
func clampShare(e *entity, v float64) float64 {
	if v < e.minShare {
		v = e.minShare
	}
	if v > e.demand {
		v = e.demand
	}
	return v
}

func (w *waterFiller) fill(es []entity, total float64) {
	demand := 0.0
	for i := range es {
		if es[i].demand < es[i].minShare {
			es[i].minShare = es[i].demand
		}
		demand += es[i].demand
	}
	if demand <= total {
		for i := range es {
			es[i].share = es[i].demand
		}
		return
	}
	used := func(r float64) float64 {
		s := 0.0
		for i := range es {
			s += clampShare(&es[i], r*es[i].weight)
		}
		return s
	}
	// The breakpoints, each with what it changes in used(r) = c + slope·r
	// from there on: an entity of positive weight gives m below m/w, r·w
	// between m/w and d/w, d above; one of no weight gives m throughout.
	// Those at r = 0 (every job's m/w: jobs have no minimum share) are
	// summed into the first, so only the others are sorted.
	bps := append(w.bps[:0], breakpoint{})
	c0 := 0.0
	for _, e := range es {
		if e.weight > 0 {
			for _, b := range [2]breakpoint{{e.minShare / e.weight, -e.minShare, e.weight}, {e.demand / e.weight, e.demand, -e.weight}} {
				if b.r == 0 {
					bps[0].dc += b.dc
					bps[0].dslope += b.dslope
				} else {
					bps = append(bps, b)
				}
			}
		}
		c0 += e.minShare
	}
	w.tmp = sortBreakpoints(bps[1:], w.tmp)
	w.bps = bps
	// The first breakpoint where used >= total: located by a sweep that
	// keeps c and the slope (one pass instead of a used(r) per step of a
	// binary search, O(n) each), then confirmed, and moved if rounding
	// put it off by one, with used(r) itself, so that it is exactly the
	// binary search's over used(r): what decides r is the largest
	// breakpoint value below the crossing and the smallest at or above
	// it, which do not depend on how equal values were grouped.
	i := len(bps)
	c, slope := c0, 0.0
	for k := range bps {
		c, slope = c+bps[k].dc, slope+bps[k].dslope
		if c+slope*bps[k].r >= total {
			i = k
			break
		}
	}
	for i < len(bps) && used(bps[i].r) < total {
		i++
	}
	for i > 0 && used(bps[i-1].r) >= total {
		i--
	}
	var r float64
	switch {
	case i == 0:
		r = 0
	case i == len(bps):
		r = bps[len(bps)-1].r
	default:
		lo, hi := bps[i-1].r, bps[i].r
		mid := (lo + hi) / 2
		var a, b float64 // used(r) = a + b·r on [lo, hi]
		for _, e := range es {
			v := mid * e.weight
			switch {
			case v <= e.minShare:
				a += e.minShare
			case v >= e.demand:
				a += e.demand
			default:
				b += e.weight
			}
		}
		if b > 0 {
			r = (total - a) / b
		} else {
			r = hi
		}
	}
	for i := range es {
		es[i].share = clampShare(&es[i], r*es[i].weight)
	}
}

// sortBreakpoints sorts bps by r, all positive and finite, and returns
// the scratch it used for the next call. Above a few dozen it is a radix
// sort on r's bits (for positive floats their order as integers),
// byte by byte from the lowest, skipping the bytes every key shares
// (demands over equal weights are small integers: most of their bits are
// the same), so that 1,000 jobs sort in a few passes of 1,000 moves.
func sortBreakpoints(bps, tmp []breakpoint) []breakpoint {
	n := len(bps)
	if n < 48 {
		slices.SortFunc(bps, func(a, b breakpoint) int { return cmp.Compare(a.r, b.r) })
		return tmp
	}
	var counts [8][256]int32
	for i := range bps {
		k := math.Float64bits(bps[i].r)
		for d := range 8 {
			counts[d][byte(k>>(8*d))]++
		}
	}
	if cap(tmp) < n {
		tmp = make([]breakpoint, n)
	}
	src, dst := bps, tmp[:n]
	for d := range 8 {
		c := &counts[d]
		if c[byte(math.Float64bits(src[0].r)>>(8*d))] == int32(n) {
			continue // every key has this byte
		}
		var pos [256]int32
		sum := int32(0)
		for b := range 256 {
			pos[b] = sum
			sum += c[b]
		}
		for i := range src {
			b := byte(math.Float64bits(src[i].r) >> (8 * d))
			dst[pos[b]] = src[i]
			pos[b]++
		}
		src, dst = dst, src
	}
	if &src[0] != &bps[0] {
		copy(bps, src)
	}
	return tmp
}

type fairCand struct {
	job    *fairJob
	w      *work
	pool   int
	weight float64 // the job's weight in its pool, this offer
}

// Offer gives each free slot to the neediest pool's neediest job.
func (f *Fair) Offer(view *ClusterView, offer SlotOffer) Decision {
	f.buf.load(view, offer.Host, false)
	if f.byViewGen != f.jobsGen {
		f.byView = f.byView[:0]
		f.byViewGen = f.jobsGen
	}
	// jobs and pools in a deterministic order
	cands := f.cands[:0]
	poolNames := f.poolNames[:0]
	f.offerGen++
	for i := range view.Jobs {
		v := &view.Jobs[i]
		var j *fairJob
		if i < len(f.byView) && f.byView[i] != nil && f.byView[i].id == v.ID {
			j = f.byView[i]
		} else {
			j = f.admit(v) // the job's state, made on its first offer
			if i < len(f.byView) {
				f.byView[i] = j
			} else {
				f.byView = append(f.byView, j)
			}
		}
		w := f.buf.at(i)
		j.priority = v.Priority // it may change (mr job -set-priority)
		if j.poolID >= len(f.poolAt) {
			f.poolAt = append(f.poolAt, make([]offerPool, j.poolID+1-len(f.poolAt))...)
		}
		at := &f.poolAt[j.poolID]
		if at.gen != f.offerGen {
			at.gen, at.slot = f.offerGen, len(poolNames)
			poolNames = append(poolNames, j.pool)
		}
		pi := at.slot
		cands = append(cands, fairCand{job: j, w: w, pool: pi, weight: f.jobWeight(j)})
	}
	f.cands, f.poolNames = cands, poolNames
	f.byView = f.byView[:min(len(f.byView), len(view.Jobs))]
	var d Decision
	f.lastIDs = f.lastIDs[:0]
	for _, c := range cands {
		f.lastIDs = append(f.lastIDs, c.job.id)
	}
	f.lastPoolNames = poolNames
	for _, t := range []TaskType{Map, Reduce} {
		n := free(offer, t)
		jobShare, poolShare := f.shares(cands, poolNames, t, float64(slots(view, t)))
		f.lastJobShare[t], f.lastPoolShare[t] = jobShare, poolShare
		if f.preemption.on {
			d.Preempt = append(d.Preempt, f.preempt(view.Now, cands, poolNames, poolShare, t)...)
		}
		for ; n > 0; n-- {
			best := f.pick(cands, poolNames, jobShare, poolShare, t)
			if best < 0 {
				break
			}
			f.buf.take(t, cands[best].w, &d, false, 0)
		}
	}
	return d
}

func demandOf(w *work, t TaskType) float64 {
	if t == Map {
		return float64(w.runMaps + w.pendMaps)
	}
	d := w.runReds
	if w.ready {
		d += w.pendReds
	}
	return float64(d)
}

// shares computes the fair share of each candidate job and each pool, in
// buffers of t's kept until t's next shares.
func (f *Fair) shares(cands []fairCand, poolNames []string, t TaskType, total float64) (jobShare, poolShare []float64) {
	pools := resize(&f.poolEs, len(poolNames))
	clear(pools)
	for i, name := range poolNames {
		p := f.pool(name)
		pools[i].weight = p.Weight
		if t == Map {
			pools[i].minShare = float64(p.MinMaps)
		} else {
			pools[i].minShare = float64(p.MinReduces)
		}
	}
	for _, c := range cands {
		pools[c.pool].demand += demandOf(c.w, t)
	}
	f.wf.fill(pools, total)
	poolShare = resize(&f.poolShareBuf[t], len(pools))
	for i := range pools {
		poolShare[i] = pools[i].share
	}
	jobShare = resize(&f.jobShareBuf[t], len(cands))
	// Each pool's jobs, in candidate order, in one buffer kept across
	// Offers (a counting sort by pool).
	start := resize(&f.start, len(pools)+1)
	clear(start)
	for _, c := range cands {
		start[c.pool+1]++
	}
	for pi := range pools {
		start[pi+1] += start[pi]
	}
	pos := resize(&f.pos, len(pools))
	copy(pos, start)
	if cap(f.shareEs) < len(cands) {
		f.shareEs, f.shareIdx = make([]entity, len(cands)), make([]int, len(cands))
	}
	es, idx := f.shareEs[:len(cands)], f.shareIdx[:len(cands)]
	for i, c := range cands {
		k := pos[c.pool]
		pos[c.pool]++
		es[k] = entity{weight: c.weight, demand: demandOf(c.w, t)}
		idx[k] = i
	}
	for pi := range pools {
		f.wf.fill(es[start[pi]:start[pi+1]], pools[pi].share)
	}
	for k, i := range idx {
		jobShare[i] = es[k].share
	}
	return jobShare, poolShare
}

// resize makes *buf n long, reallocating only to grow, and returns it
// (its contents are whatever was there).
func resize[T any](buf *[]T, n int) []T {
	if cap(*buf) < n {
		*buf = make([]T, n, n+n/4)
	}
	*buf = (*buf)[:n]
	return *buf
}

func ratio(running int, share float64) float64 {
	if share <= 0 {
		return math.Inf(1)
	}
	return float64(running) / share
}

// pick returns the index of the candidate that gets the next slot of type
// t, or -1.
func (f *Fair) pick(cands []fairCand, poolNames []string, jobShare, poolShare []float64, t TaskType) int {
	ps := resize(&f.pickPools, len(poolNames))
	clear(ps)
	for _, c := range cands {
		ps[c.pool].running += c.w.running(t)
		if c.w.eligible(t) {
			ps[c.pool].eligible = true
		}
	}
	bestPool := -1
	var bestNeedy bool
	var bestKey float64
	for i, name := range poolNames {
		if !ps[i].eligible {
			continue
		}
		p := f.pool(name)
		minShare := float64(p.MinMaps)
		if t == Reduce {
			minShare = float64(p.MinReduces)
		}
		needy := float64(ps[i].running) < minShare
		key := ratio(ps[i].running, poolShare[i])
		if needy {
			key = float64(ps[i].running) / minShare
		}
		better := bestPool < 0 ||
			(needy && !bestNeedy) ||
			(needy == bestNeedy && (key < bestKey || (key == bestKey && name < poolNames[bestPool])))
		if better {
			bestPool, bestNeedy, bestKey = i, needy, key
		}
	}
	if bestPool < 0 {
		return -1
	}
	best := -1
	var bk float64
	for i, c := range cands {
		if c.pool != bestPool || !c.w.eligible(t) {
			continue
		}
		key := ratio(c.w.running(t), jobShare[i])
		if best < 0 || key < bk || (key == bk && earlier(c.job, cands[best].job)) {
			best, bk = i, key
		}
	}
	return best
}

func earlier(a, b *fairJob) bool {
	if !a.submitted.Equal(b.submitted) {
		return a.submitted.Before(b.submitted)
	}
	return a.seq < b.seq
}

// Describe returns the pools and the jobs with their latest fair shares.
func (f *Fair) Describe(now time.Time) PolicyStatus {
	st := PolicyStatus{Policy: "fair"}
	names := map[string]bool{f.defaultPool: true}
	for n := range f.pools {
		names[n] = true
	}
	for _, j := range f.jobs {
		names[j.pool] = true
	}
	sorted := make([]string, 0, len(names))
	for n := range names {
		sorted = append(sorted, n)
	}
	sort.Strings(sorted)
	poolShare := map[string][2]float64{}
	for i, n := range f.lastPoolNames {
		poolShare[n] = [2]float64{f.lastPoolShare[Map][i], f.lastPoolShare[Reduce][i]}
	}
	jobShare := map[string][2]float64{}
	for i, id := range f.lastIDs {
		jobShare[id] = [2]float64{f.lastJobShare[Map][i], f.lastJobShare[Reduce][i]}
	}
	for _, n := range sorted {
		p := f.pool(n)
		s := poolShare[n]
		st.Pools = append(st.Pools, PoolStatus{Name: n, Weight: p.Weight, MinMaps: p.MinMaps, MinReduces: p.MinReduces,
			FairShareMaps: s[Map], FairShareReduces: s[Reduce]})
	}
	jobs := make([]*fairJob, 0, len(f.jobs))
	for _, j := range f.jobs {
		jobs = append(jobs, j)
	}
	sort.Slice(jobs, func(a, b int) bool { return earlier(jobs[a], jobs[b]) })
	for _, j := range jobs {
		s := jobShare[j.id]
		st.Jobs = append(st.Jobs, JobStatus{ID: j.id, Pool: j.pool, FairShareMaps: s[Map], FairShareReduces: s[Reduce], Feasible: true})
	}
	return st
}
