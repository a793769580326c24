package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"time"
)

// GenOptions parameterise a workload generator.
type GenOptions struct {
	// Seed makes the workload; the same seed gives the same jobs.
	Seed uint64
	// Jobs overrides the source's job count when > 0.
	Jobs int
	// Load overrides the source's offered load ρ when > 0.
	Load float64
	// InterArrival, when > 0, sets the mean inter-arrival time instead of
	// deriving it from the load.
	InterArrival time.Duration
}

// WorkloadNames lists the built-in workloads.
func WorkloadNames() []string {
	return []string{"tyrex-hvw", "tyrex-mvw", "tyrex-lvw", "thesis-fb", "deadline-fb", "deadline-testbed", "terasort"}
}

// Generate builds a built-in workload.
func Generate(name string, opt GenOptions) (*Workload, error) {
	if opt.Load < 0 || opt.Jobs < 0 || opt.InterArrival < 0 {
		return nil, fmt.Errorf("workload %s: jobs %d, load %v and inter-arrival %v must not be negative", name, opt.Jobs, opt.Load, opt.InterArrival)
	}
	rng := rand.New(rand.NewPCG(opt.Seed, 0x5eed_6d72))
	switch name {
	case "tyrex-hvw":
		return tyrex(name, hvw, rng, opt), nil
	case "tyrex-mvw":
		return tyrex(name, mvw, rng, opt), nil
	case "tyrex-lvw":
		return tyrex(name, lvw, rng, opt), nil
	case "thesis-fb":
		return thesisFB(rng, opt), nil
	case "deadline-fb":
		return deadlineFB(rng, opt), nil
	case "deadline-testbed":
		return deadlineTestbed(rng, opt), nil
	case "terasort":
		return terasort(rng, opt), nil
	}
	return nil, fmt.Errorf("unknown workload %q (built-in: %v; or give a trace file path)", name, WorkloadNames())
}

// lognormal draws exp(N(mu, sigma)).
func lognormal(rng *rand.Rand, mu, sigma float64) float64 {
	return math.Exp(mu + sigma*rng.NormFloat64())
}

// sizeClass is one class of a job-size mixture: probability, mean size
// (slot-seconds) and the log-normal spread.
type sizeClass struct {
	p, mean, sigma float64
}

// mixture describes a chapter 4 workload: size classes, the last of which
// is scaled so that the mixture has the target mean.
type mixture struct {
	classes  []sizeClass
	mean     float64 // target mean size, seconds
	taskMean float64 // mean task duration, seconds
	desc     string
}

// The chapter 4 mixtures, calibrated to Table 4.2 (mean size 763/1495/3683
// s and CV² 20/10/4, mean task 33 s) and to §4.5 (more than 60% of jobs
// under 10 min); see docs/policies.md for the achieved figures.
var (
	hvw = mixture{mean: 763, taskMean: 33, desc: "thesis ch. 4 high-variability workload (CV² 20)",
		classes: []sizeClass{{0.715, 40, 0.5}, {0.20, 170, 0.5}, {0.05, 1700, 0.5}, {0.035, 0, 0.3}}}
	mvw = mixture{mean: 1495, taskMean: 33, desc: "thesis ch. 4 medium-variability workload (CV² 10)",
		classes: []sizeClass{{0.55, 40, 0.5}, {0.25, 200, 0.5}, {0.136, 2000, 0.5}, {0.064, 0, 0.3}}}
	lvw = mixture{mean: 3683, taskMean: 33, desc: "thesis ch. 4 low-variability workload (CV² 4)",
		classes: []sizeClass{{0.45, 40, 0.5}, {0.20, 250, 0.5}, {0.184, 3000, 0.5}, {0.166, 0, 0.3}}}
)

func (m mixture) lastMean() float64 {
	rest := 0.0
	for _, c := range m.classes[:len(m.classes)-1] {
		rest += c.p * c.mean
	}
	last := m.classes[len(m.classes)-1]
	return (m.mean - rest) / last.p
}

// splitSize turns a job size into map and reduce task durations of about
// taskMean seconds. Every job has a reduce phase, as every application of
// the thesis' workloads does (Wordcount, PiEstimator, Sort, Grep, BTWorld;
// §4.5, and the smallest jobs of Table 5.2 have one reduce); reduces are a
// tenth of the maps, at least one, which gives Table 4.2's reduce counts
// within about 10%. A job of one task's size is one map and one reduce of
// half the size each.
func splitSize(rng *rand.Rand, size, taskMean float64) (maps, reduces []time.Duration) {
	n := max(int(math.Round(size/taskMean)), 1)
	ws := make([]float64, n)
	sum := 0.0
	for i := range ws {
		ws[i] = lognormal(rng, 0, 0.3)
		sum += ws[i]
	}
	if n == 1 {
		d := max(dur(size/2), time.Second)
		return []time.Duration{d}, []time.Duration{d}
	}
	nr := max(int(math.Round(float64(n)/11)), 1)
	nm := n - nr
	for i := 0; i < n; i++ {
		d := dur(size * ws[i] / sum)
		d = max(d, time.Second)
		if i < nm {
			maps = append(maps, d)
		} else {
			reduces = append(reduces, d)
		}
	}
	return maps, reduces
}

// poisson sets exponential inter-arrival times of the given mean.
func poisson(rng *rand.Rand, jobs []Job, mean float64) {
	t := 0.0
	for i := range jobs {
		if i > 0 {
			t += rng.ExpFloat64() * mean
		}
		jobs[i].Submit = dur(t)
	}
}

func tyrex(name string, m mixture, rng *rand.Rand, opt GenOptions) *Workload {
	n := opt.Jobs
	if n == 0 {
		n = 300
	}
	load := opt.Load
	if load == 0 {
		load = 0.7
	}
	w := &Workload{Name: name, Trackers: 20, MapSlots: 6, ReduceSlots: 2, Slowstart: 0.05,
		Conf: map[string]string{"scheduler.tyrex.capacities": "0.3,0.7", "scheduler.tyrex.timers": tyrexTimers[name]}}
	lastMean := m.lastMean()
	total := 0.0
	for i := 0; i < n; i++ {
		u := rng.Float64()
		c := m.classes[len(m.classes)-1]
		mean := lastMean
		acc := 0.0
		for k, cl := range m.classes[:len(m.classes)-1] {
			acc += cl.p
			if u < acc {
				c, mean = m.classes[k], cl.mean
				break
			}
		}
		size := lognormal(rng, math.Log(mean)-c.sigma*c.sigma/2, c.sigma)
		maps, reds := splitSize(rng, size, m.taskMean)
		j := Job{ID: fmt.Sprintf("job_%04d", i+1), Name: name + "-" + strconv.Itoa(i+1), Maps: maps, Reduces: reds,
			InputBytes: int64(len(maps)) * 64 << 20}
		total += j.Size().Seconds()
		w.Jobs = append(w.Jobs, j)
	}
	// The load is the map slots' (see tyrexLoad); the reduce slots see
	// what the reduces' share of the work gives.
	mapSlots := float64(w.Trackers * w.MapSlots)
	ia := meanMapWork(w.Jobs) / (load * mapSlots)
	if opt.InterArrival > 0 {
		ia = opt.InterArrival.Seconds()
	}
	poisson(rng, w.Jobs, ia)
	mapLoad := meanMapWork(w.Jobs) / (ia * mapSlots)
	redLoad := (total/float64(n) - meanMapWork(w.Jobs)) / (ia * float64(w.Trackers*w.ReduceSlots))
	w.Description = fmt.Sprintf("%s: %d jobs, Poisson arrivals every %.1f s on average (load %.2f of the %.0f map slots; reduce work %.2f of the reduce slots)",
		m.desc, n, ia, mapLoad, mapSlots, redLoad)
	return w
}

// tyrexTimers are the StaticTAGS timers of the chapter 4 workloads, from a
// sweep at C_1 = 30% with --hadoop1 on seeds 1-10 (docs/policies.md): the
// lowest mean V(95), the thesis' criterion (§4.6.1, Fig. 4.6), for HVW and
// MVW (below Fig. 4.6's 250 s); for LVW, whose V(95) is flat from 1000 s
// on while its median grows with the timer, 1000 s (inside Fig. 4.10's LVW
// range of 500-2500 s).
var tyrexTimers = map[string]string{"tyrex-hvw": "60s", "tyrex-mvw": "60s", "tyrex-lvw": "1000s"}

// fbPool are the parameters of the chapter 5 pool (thesisFB). The thesis
// states the pool's statistics, not how its jobs are built; these were
// chosen so that the pool has them (TestThesisFBStatistics,
// docs/policies.md).
var fbPool = struct {
	// classes of map work (slot-seconds): probability, mean and
	// log-normal spread
	classes []sizeClass
	// the one reduce: redMedian seconds times log-normal noise of spread
	// redSigma; for a fraction heavyP of the jobs (reduce-heavy:
	// aggregations, joins) uniform in [heavyLo, heavyHi] seconds
	redMedian, redSigma, heavyP, heavyLo, heavyHi float64
	// map task durations: a per-job scale, log-normal around taskMedian
	// with jobSigma, times per-task noise of taskSigma; the map count is
	// the map work over the scale, at most maxMaps
	taskMedian, jobSigma, taskSigma float64
	maxMaps                         int
}{
	classes:   []sizeClass{{0.05, 300, 0.8}, {0.87, 17000, 1.0}, {0.08, 184000, 0.37}},
	redMedian: 10, redSigma: 0.8, heavyP: 0.013, heavyLo: 3500, heavyHi: 10000,
	taskMedian: 20, jobSigma: 0.7, taskSigma: 0.3, maxMaps: 20000,
}

// fbSITACutoff and fbFBQLimit are SITA's cutoff and FBQ's limit on the
// chapter 5 pool, re-tuned by the thesis' criterion (the lowest slowdown
// variability V(95) with the median kept in view, §5.5.1, Figs. 5.7-5.8)
// on seeds 1-5 and confirmed on 6-10 (docs/policies.md). The thesis'
// 18,000 s and 12,000 s were tuned on its own pool, which completes 35% of
// its work in SITA's partition 1 at 18,000 s (§5.5.1); ours puts 16% of
// its work under 18,000 s and 22% under 24,000 s. SITA's V(95) halves from
// 18,000 to 24,000 s (8.8 to 5.0) for a median 0.1 higher; larger cutoffs
// lower it by a further 0.7-0.9 while the median passes FIFO's. FBQ's V(95)
// is lowest and flat from 30,000 to 40,000 s (3.2).
const (
	fbSITACutoff = "24000s"
	fbFBQLimit   = "40000s"
)

// thesisFB is the chapter 5 Facebook-derived pool, rebuilt: the thesis'
// 1,121 recorded jobs are not available, so jobs are drawn to match the
// statistics it states (§5.4.3): job sizes with a squared CV of 3.32 and
// fewer than 8% of the jobs carrying half of the load, reference runtimes
// with a squared CV of 16.35 summing to about 60 h, from fewer than ten
// tasks to more than 10,000, input bytes strongly correlated with size.
// Sizes come from a two-class log-normal mixture; each job has one reduce
// (most of SWIM's jobs have one; docs/policies.md) that takes a
// log-normally varying share of the size, which makes runtimes far more
// variable than sizes, as in the thesis; the map work is split into tasks
// of a per-job duration scale, which spreads task counts wider than sizes.
// The load is the map slots'.
func thesisFB(rng *rand.Rand, opt GenOptions) *Workload {
	n := opt.Jobs
	if n == 0 {
		n = 1121
	}
	load := opt.Load
	if load == 0 {
		load = 0.7
	}
	w := &Workload{Name: "thesis-fb", Trackers: 100, MapSlots: 6, ReduceSlots: 2, Slowstart: 0.05,
		Conf: map[string]string{
			"scheduler.tyrex.capacities": "0.5,0.5", "scheduler.tyrex.timers": "14000s",
			"scheduler.sita.capacities": "0.3,0.7", "scheduler.sita.cutoffs": fbSITACutoff,
			"scheduler.fbq.limits": fbFBQLimit, "scheduler.comp.queues": "2",
		}}
	p := fbPool
	for i := 0; i < n; i++ {
		c := p.classes[len(p.classes)-1]
		u, acc := rng.Float64(), 0.0
		for _, cl := range p.classes {
			if acc += cl.p; u < acc {
				c = cl
				break
			}
		}
		mapWork := lognormal(rng, math.Log(c.mean)-c.sigma*c.sigma/2, c.sigma)
		red := p.redMedian * lognormal(rng, 0, p.redSigma)
		if rng.Float64() < p.heavyP {
			red = p.heavyLo + (p.heavyHi-p.heavyLo)*rng.Float64()
		}
		base := lognormal(rng, math.Log(p.taskMedian), p.jobSigma)
		nm := min(max(int(math.Round(mapWork/base)), 1), p.maxMaps)
		j := Job{ID: fmt.Sprintf("job_%04d", i+1), Name: "fb-" + strconv.Itoa(i+1)}
		ws, sum := make([]float64, nm), 0.0
		for k := range ws {
			ws[k] = lognormal(rng, 0, p.taskSigma)
			sum += ws[k]
		}
		for _, x := range ws {
			j.Maps = append(j.Maps, max(dur(mapWork*x/sum), time.Second))
		}
		j.Reduces = []time.Duration{max(dur(red), time.Second)}
		j.InputBytes = int64(mapWork / p.taskMedian * float64(64<<20) * (0.8 + 0.2*rng.Float64()))
		w.Jobs = append(w.Jobs, j)
	}
	mapSlots := float64(w.Trackers * w.MapSlots)
	ia := meanMapWork(w.Jobs) / (load * mapSlots)
	if opt.InterArrival > 0 {
		ia = opt.InterArrival.Seconds()
	}
	poisson(rng, w.Jobs, ia)
	w.Description = fmt.Sprintf("thesis ch. 5 Facebook-like pool (rebuilt): %d jobs, Poisson arrivals every %.1f s (load %.2f of the %.0f map slots)",
		n, ia, meanMapWork(w.Jobs)/(ia*mapSlots), mapSlots)
	return w
}

// hadoopSlowstart is Hadoop 0.20.2's default fraction of a job's maps
// done before its reduces may start (mapred.reduce.slowstart.completed.maps),
// the release the deadline paper's testbed ran. The deadline workloads use
// it so that edf, Hadoop's default allocation, launches reduces early and
// holds their slots through the map stage; minedf and minedf-wc offer
// reduces only after the map stage whatever it is (Algorithm 1, lines
// 33-35; scheduler.deadline.reduces-after-maps).
const hadoopSlowstart = 0.05

// deadlineConf is the policy configuration of the deadline workloads:
// quotas from ARIA's upper bound, the only one of the three bounds that
// makes a quota sufficient for the deadline (the greedy makespan of a
// stage never exceeds it). With the Facebook workload's log-normal task
// durations (σ ≈ 1.65, the longest task dominating) the average bound
// under-provisions so often that minedf misses about a fifth of the jobs
// of a run with no contention at all (docs/policies.md); with the testbed
// stand-ins the two bounds differ little.
//
// MinEDF-WC kills only the spare maps the arriving job needs
// (kill-only-needed): Algorithm 1's line 26 kills all of a victim's spare
// maps, but the paper's text has the scheduler decide "how many of the
// slots (as well as which ones) should cancel" (§III.C) and calls the
// kills "very low at any point" (Fig. 2). On seeds 1-10 this cuts the kill
// ratio on the Facebook mix from 14.6 / 8.1 / 4.3% to 5.5 / 2.2 / 1.0% of
// the spare maps at 100 / 300 / 600 s inter-arrival, with the same misses.
//
// Arrivals that no allocation can finish by their deadline under the
// upper bound still kill (kill-when-infeasible stays true): not killing for
// them halves the kill ratio at every inter-arrival but, on seeds 1-5, raises
// the misses at 600 and 1000 s (3.00 to 3.30%, 1.06 to 1.32%), as the upper
// bound is pessimistic and many of them make their deadline when they kill
// (docs/policies.md). kill-when-infeasible=avg (kill for them only if the
// average bound finds an allocation that meets the deadline) changes
// nothing on seeds 1-10: nearly all of them are feasible under it.
func deadlineConf() map[string]string {
	return map[string]string{"scheduler.deadline.bound": "up", "scheduler.minedfwc.kill-only-needed": "true"}
}

// fbBins is Table I of the deadline paper (Zaharia et al.'s Facebook bins):
// maps, reduces, jobs of 1000.
var fbBins = []struct{ maps, reduces, jobs int }{
	{1, 0, 380}, {2, 0, 160}, {10, 3, 140}, {50, 0, 80}, {100, 0, 60},
	{200, 50, 60}, {400, 0, 40}, {800, 180, 40}, {2400, 360, 20}, {4800, 0, 20},
}

// setDeadlines draws D = U[lo, hi]·T_J, T_J being the job's runtime alone
// with all the slots it can use (64 + 64 by default), reduces after the
// map stage (the same with Hadoop's slow-start when no reduce has a
// shuffle, as in deadline-fb).
func setDeadlines(rng *rand.Rand, w *Workload, lo, hi float64) {
	ms, rs := w.Trackers*w.MapSlots, w.Trackers*w.ReduceSlots
	for i := range w.Jobs {
		tj := AloneRuntime(&w.Jobs[i], ms, rs, 1).Seconds()
		w.Jobs[i].Deadline = dur(tj * (lo + (hi-lo)*rng.Float64()))
	}
	w.Deadlines = fmt.Sprintf("U[%g, %g]·T_J, T_J the runtime alone on %d map and %d reduce slots (replayed, reduces after the map stage)", lo, hi, ms, rs)
}

// meanMapWork is the mean map slot-time per job.
func meanMapWork(jobs []Job) float64 {
	s := 0.0
	for i := range jobs {
		for _, d := range jobs[i].Maps {
			s += d.Seconds()
		}
	}
	return s / float64(len(jobs))
}

func deadlineFB(rng *rand.Rand, opt GenOptions) *Workload {
	n := opt.Jobs
	if n == 0 {
		n = 1000
	}
	load := opt.Load
	if load == 0 {
		load = 0.7
	}
	w := &Workload{Name: "deadline-fb", Trackers: 64, MapSlots: 1, ReduceSlots: 1, Slowstart: hadoopSlowstart, Conf: deadlineConf(),
		// The paper profiles each job from its past runs (ARIA).
		Knowledge: KnowOracle}
	// the exact multiset of Table I, scaled to n jobs, then shuffled
	var bins []int
	for b, bin := range fbBins {
		for k := 0; k < bin.jobs*n/1000; k++ {
			bins = append(bins, b)
		}
	}
	for len(bins) < n {
		bins = append(bins, len(bins)%len(fbBins))
	}
	rng.Shuffle(len(bins), func(a, b int) { bins[a], bins[b] = bins[b], bins[a] })
	for i, b := range bins {
		bin := fbBins[b]
		j := Job{ID: fmt.Sprintf("job_%04d", i+1), Name: fmt.Sprintf("fb-bin%d", b+1)}
		for k := 0; k < bin.maps; k++ {
			j.Maps = append(j.Maps, max(dur(lognormal(rng, 9.9511, 1.6764)/1000), time.Millisecond))
		}
		for k := 0; k < bin.reduces; k++ {
			j.Reduces = append(j.Reduces, max(dur(lognormal(rng, 12.375, 1.6262)/1000), time.Millisecond))
		}
		j.InputBytes = int64(bin.maps) * 64 << 20
		w.Jobs = append(w.Jobs, j)
	}
	ia := meanMapWork(w.Jobs) / (load * float64(w.Trackers*w.MapSlots))
	if opt.InterArrival > 0 {
		ia = opt.InterArrival.Seconds()
		load = meanMapWork(w.Jobs) / (ia * float64(w.Trackers*w.MapSlots))
	}
	poisson(rng, w.Jobs, ia)
	setDeadlines(rng, w, 1, 2)
	w.Description = fmt.Sprintf("deadline paper Facebook-like workload: %d jobs of Table I, log-normal task durations (ms), Poisson arrivals every %.1f s (map load %.2f of 64 slots)", n, ia, load)
	return w
}

// testbedApps are stand-in profiles of the deadline paper's six testbed
// applications (§IV.C; the paper gives no profiles). Map counts follow from
// the inputs it names: input/64 MB (the testbed's block size) for the
// splittable text inputs (WordCount, Bayes and TF-IDF on the 32, 40 and
// 43 GB Wikipedia dumps, Sort on 16, 32 and 64 GB, Twitter on 12, 18 and
// 25 GB), and one map per file for WikiTrends, whose input is Wikipedia's
// traffic logs "collected (and compressed) every hour" in April, May and
// June 2010: 720, 744 and 720 gzip files, which Hadoop 0.20.2 does not
// split. Map and reduce durations and reduce counts are our own choice,
// with one rule from what the applications do: Sort's reduces receive and
// write the whole input (identity map and reduce), so its shuffle and
// reduce durations grow with the input per reduce (passThrough: the given
// durations are those of the smallest input, 256 MB per reduce, and scale
// with it), keeping its reduce work about 1.25 times its map work at every
// size; the other applications' reduces aggregate (counts, model
// statistics) and their reduce input hardly grows with the job's input.
var testbedApps = []struct {
	name           string
	maps           [3]int
	mapS           float64
	reduces        int
	shuffleS, redS float64
	passThrough    bool
}{
	{"wordcount", [3]int{512, 640, 688}, 30, 32, 10, 20, false},
	{"sort", [3]int{256, 512, 1024}, 12, 64, 20, 40, true},
	{"bayes", [3]int{512, 640, 688}, 40, 16, 10, 30, false},
	{"tfidf", [3]int{512, 640, 688}, 25, 32, 10, 40, false},
	{"wikitrends", [3]int{720, 744, 720}, 35, 32, 10, 20, false},
	{"twitter", [3]int{192, 288, 400}, 50, 64, 15, 30, false},
}

func deadlineTestbed(rng *rand.Rand, opt GenOptions) *Workload {
	n := opt.Jobs
	if n == 0 {
		n = 1000
	}
	load := opt.Load
	if load == 0 {
		load = 0.7
	}
	w := &Workload{Name: "deadline-testbed", Trackers: 64, MapSlots: 1, ReduceSlots: 1, Slowstart: hadoopSlowstart, Conf: deadlineConf(),
		// The paper profiles each job from its past runs (ARIA).
		Knowledge: KnowOracle}
	// the 18 jobs, each with its fixed task durations (a replayed trace)
	type proto struct {
		name            string
		maps, reds, shs []time.Duration
		input           int64
	}
	var protos []proto
	for _, app := range testbedApps {
		for s := 0; s < 3; s++ {
			p := proto{name: fmt.Sprintf("%s-%d", app.name, s+1), input: int64(app.maps[s]) * 64 << 20}
			for k := 0; k < app.maps[s]; k++ {
				p.maps = append(p.maps, dur(app.mapS*lognormal(rng, 0, 0.25)))
			}
			scale := 1.0
			if app.passThrough {
				scale = float64(app.maps[s]) / float64(app.maps[0])
			}
			for k := 0; k < app.reduces; k++ {
				p.shs = append(p.shs, dur(scale*app.shuffleS*lognormal(rng, 0, 0.25)))
				p.reds = append(p.reds, dur(scale*app.redS*lognormal(rng, 0, 0.25)))
			}
			protos = append(protos, p)
		}
	}
	// concatenated uniformly random permutations of the 18 jobs
	var order []int
	for len(order) < n {
		perm := rng.Perm(len(protos))
		order = append(order, perm...)
	}
	order = order[:n]
	for i, k := range order {
		p := protos[k]
		w.Jobs = append(w.Jobs, Job{ID: fmt.Sprintf("job_%04d", i+1), Name: p.name, Maps: p.maps, Reduces: p.reds, Shuffles: p.shs, InputBytes: p.input})
	}
	ia := meanMapWork(w.Jobs) / (load * float64(w.Trackers*w.MapSlots))
	if opt.InterArrival > 0 {
		ia = opt.InterArrival.Seconds()
		load = meanMapWork(w.Jobs) / (ia * float64(w.Trackers*w.MapSlots))
	}
	poisson(rng, w.Jobs, ia)
	setDeadlines(rng, w, 2, 4)
	w.Description = fmt.Sprintf("deadline paper testbed-like workload (stand-in profiles): %d jobs from 18, Poisson arrivals every %.1f s (map load %.2f of 64 slots)", n, ia, load)
	return w
}

// terasort is a TeraSort-like synthetic workload for the speculation
// experiments (the source's R1 job, scaled in time): jobs of 32 maps of
// about 60 s and 64 reduces of about 60 s (15 s of shuffle, 45 s of
// reduce), each duration × LogNormal(0, 0.1), on 16 trackers of 4 map and
// 8 reduce slots, so that a job's maps and reduces run in one wave with
// as many slots spare for speculative attempts. Jobs arrive at a fixed
// spacing, by default 900 s (a job runs mostly alone, as the source's
// did); --interarrival sets the spacing, --load derives it from the
// offered load of the 192 slots.
func terasort(rng *rand.Rand, opt GenOptions) *Workload {
	n := opt.Jobs
	if n == 0 {
		n = 20
	}
	w := &Workload{Name: "terasort", Trackers: 16, MapSlots: 4, ReduceSlots: 8, Slowstart: 0.05}
	total := 0.0
	for i := 0; i < n; i++ {
		j := Job{ID: fmt.Sprintf("job_%04d", i+1), Name: "terasort-" + strconv.Itoa(i+1), InputBytes: 32 * 4e9}
		for k := 0; k < 32; k++ {
			j.Maps = append(j.Maps, dur(60*lognormal(rng, 0, 0.1)))
		}
		for k := 0; k < 64; k++ {
			j.Shuffles = append(j.Shuffles, dur(15*lognormal(rng, 0, 0.1)))
			j.Reduces = append(j.Reduces, dur(45*lognormal(rng, 0, 0.1)))
		}
		total += j.Size().Seconds()
		w.Jobs = append(w.Jobs, j)
	}
	ia := 900.0
	switch {
	case opt.InterArrival > 0:
		ia = opt.InterArrival.Seconds()
	case opt.Load > 0:
		ia = total / float64(n) / (opt.Load * float64(w.Trackers*(w.MapSlots+w.ReduceSlots)))
	}
	for i := range w.Jobs {
		w.Jobs[i].Submit = dur(ia * float64(i))
	}
	w.Description = fmt.Sprintf("TeraSort-like workload: %d jobs of 32 maps × ~60 s and 64 reduces × ~60 s, one every %.1f s, on 16 trackers × (4 map + 8 reduce slots)", n, ia)
	return w
}
