package replay

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"gomr/conf"
	"gomr/jobtracker/jobhistory"
	"gomr/partitions"
	"gomr/sim"
)

// CompareOptions say what `mr workload compare` runs.
type CompareOptions struct {
	// Policies are run one after the other, each on a fresh embedded
	// cluster, on the trace (a mix, simulator workload or file) generated
	// with each of Seeds (one run when the trace is a file).
	Policies []string
	Trace    string
	Seeds    []uint64
	// TimeScale multiplies every time of the trace (1: as is).
	TimeScale float64
	// Trackers, MapSlots and ReduceSlots (per tracker) shape the embedded
	// cluster and the simulated one.
	Trackers, MapSlots, ReduceSlots int
	// Replay are the replay options (bytes, progress).
	Replay Options
	// Config returns the configuration of the cluster that runs policy on
	// w: the caller's (defaults, file, environment, -D) with the policy,
	// the slots and the workload's policy settings. It is asked for every
	// run before any runs, so that a bad setting stops the comparison
	// before it starts.
	Config func(policy string, w *sim.Workload) (*conf.Config, error)
	// NewLog makes the daemons' logger; Keep keeps their work directories.
	NewLog func(*conf.Config) *slog.Logger
	Keep   bool
	// Log receives what the comparison is doing (runs starting); nil: none.
	Log io.Writer
	// Ideal simulates the ideal cluster (SimModel{}: no heartbeats, no
	// costs) instead of the model of the configured one (ModelOf).
	Ideal bool
	// Costs are the task costs of the model (ModelOf); nil:
	// sim.MeasuredOverheads. With a launch distribution (LaunchDist), each
	// seed's simulation draws with that seed.
	Costs *sim.Overheads
	// LaunchFromRun simulates each run with the launch distribution its
	// own history shows (MeasuredOverheads.LaunchDist) instead of Costs':
	// what a model measured on the run itself would predict.
	LaunchFromRun bool
	// LaunchLoad, when set, simulates each run with the launch
	// distribution this model gives for the machine's load during the run
	// (RunLoad of PolicyRun.Load, measured around the run, not from its
	// tasks) instead of Costs': the launch cost grows with the load. A run
	// whose load was not recorded keeps Costs' distribution.
	LaunchLoad *sim.LaunchLoadModel
	// ReduceLaunchLoad, when set with LaunchLoad, draws each reduce's
	// launch (its start to its reduce phase once its maps have ended:
	// launch, fetch, merge; sim.Overheads.ReduceLaunchDist) from the
	// distribution this model gives for the run's load, and the maps'
	// from LaunchLoad's.
	ReduceLaunchLoad *sim.LaunchLoadModel
	// LaunchDraws, when > 1 and the model draws launches, simulates each
	// run that many times (launch seeds DrawSeed(seed, 0..n−1)) and
	// compares the real run with the per-job median of the draws
	// (MedianOfDraws); the spread of the draws' missed deadlines is kept.
	LaunchDraws int
	// FirstHeartbeat is where the model puts the trackers' first
	// heartbeats (sim.Overheads.FirstAtPeriod).
	FirstHeartbeat FirstHeartbeat
	// clusterStart is how the runs' clusters started (the report's
	// cluster_start): ClusterStartRegistered for Compare's own runs.
	clusterStart string
	// RankResolve is the share of the simulator's draws that must order two
	// policies alike for the simulator to resolve their order
	// (PairsResolved); 0 means DefaultRankResolve, else it must be above
	// 0.5 and at most 1.
	RankResolve float64
}

// FirstHeartbeat chooses where the simulator puts the trackers' first
// heartbeats.
type FirstHeartbeat int

const (
	// FirstHeartbeatAuto is FirstHeartbeatAtPeriod for runs made by
	// Compare since the embedded cluster waits for its trackers'
	// registrations (their reports say ClusterStartRegistered), and
	// FirstHeartbeatSpread for older reports.
	FirstHeartbeatAuto FirstHeartbeat = iota
	// FirstHeartbeatAtPeriod: every tracker one period after the start
	// (sim.Overheads.FirstAtPeriod).
	FirstHeartbeatAtPeriod
	// FirstHeartbeatSpread: spread over the period (evenly, or drawn with
	// sim.Overheads.DrawPhases).
	FirstHeartbeatSpread
)

// ClusterStartRegistered is the report's cluster_start for runs whose
// clock started once every tracker had registered (StartCluster).
const ClusterStartRegistered = "registered"

// firstAtPeriod tells whether a run whose report says clusterStart is
// simulated with its trackers' first heartbeats at the period.
func (f FirstHeartbeat) firstAtPeriod(clusterStart string) bool {
	switch f {
	case FirstHeartbeatAtPeriod:
		return true
	case FirstHeartbeatSpread:
		return false
	}
	return clusterStart == ClusterStartRegistered
}

// DefaultRankResolve is CompareOptions.RankResolve's default: an order
// of two policies that 90% of the simulator's draws share.
const DefaultRankResolve = 0.9

// PolicyRun is one policy on one seed: the real run and the simulator's.
type PolicyRun struct {
	Policy string
	Seed   uint64
	// Real are the metrics of the real run, Sim the simulator's.
	Real, Sim *sim.Result
	// Run is the real run (jobs, histories).
	Run *Run
	// JobErrors are the relative errors of the jobs' response times,
	// |real − sim| / sim, sorted.
	JobErrors []float64
	// Model is the simulator's model of the cluster; Costs what the real
	// run's history shows of the costs it models.
	Model SimModel
	Costs MeasuredOverheads
	// Recorded is the simulator's run of the real run's recorded task
	// durations (Recorded, RecordedModel; the median of LaunchDraws
	// heartbeat phase draws, simulateRecorded), RecordedErrors the relative
	// errors of the real jobs' response times against it, sorted.
	Recorded       *sim.Result
	RecordedErrors []float64
	// DrawMissed are the missed deadlines of each of the simulator's draws
	// (LaunchDraws), when there are several and jobs have deadlines.
	DrawMissed []int
	// Draws are the summaries of each of the simulator's draws
	// (LaunchDraws), when there are several: with common random numbers
	// (draw k of every policy uses the launch seed DrawSeed(seed, k)),
	// they tell which orders of policies the simulator resolves
	// (PairsResolved).
	Draws []sim.Summary
	// DrawErrors are each draw's job errors against the draws' median
	// (DrawErrors), sorted, when there are several draws.
	DrawErrors [][]float64
	// Conf are the run's settings the simulation reads (simulatedConf).
	Conf map[string]string
	// Load is the machine's 1-minute load average at the run's start and
	// end (LoadAverage; zero when unknown).
	Load [2]float64
	// LaunchLoad is the load the simulation's launch distribution was
	// matched to (CompareOptions.LaunchLoad), 0 when it was not.
	LaunchLoad float64
}

// RunLoad is the load a run ran under: the mean of the load averages at
// its start and end (Load), the one known when the other is 0, 0 when
// neither was recorded.
func RunLoad(load [2]float64) float64 {
	switch {
	case load[0] > 0 && load[1] > 0:
		return (load[0] + load[1]) / 2
	default:
		return max(load[0], load[1])
	}
}

// LoadAverage is the machine's 1-minute load average (/proc/loadavg), 0
// where there is none: the runtime's per-task costs grow with it, so a
// real run's figures go with the load they were measured under.
func LoadAverage() float64 {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(data))
	if len(f) == 0 {
		return 0
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return 0
	}
	return v
}

// Comparison is the outcome of `mr workload compare`.
type Comparison struct {
	Trace                           string
	Description                     string
	TimeScale                       float64
	Trackers, MapSlots, ReduceSlots int
	Runs                            []PolicyRun
	// ClusterStart is how the real runs' embedded clusters started:
	// ClusterStartRegistered when the trace's clock started once every
	// tracker had registered (StartCluster, since 2026-11-26); empty for
	// runs made before (Resimulate keeps a report's).
	ClusterStart string
	// rankResolve is CompareOptions.RankResolve (its default applied).
	rankResolve float64
}

// checkPolicies refuses an unknown policy name, listing the known ones.
func checkPolicies(ps []string) error {
	if len(ps) == 0 {
		return errNoPolicies
	}
	known := partitions.Names()
	for _, p := range ps {
		ok := false
		for _, k := range known {
			ok = ok || k == p
		}
		if !ok {
			return fmt.Errorf("unknown policy %q (want one of %s)", p, strings.Join(known, ", "))
		}
	}
	return nil
}

// Compare runs the trace under each policy on a fresh embedded cluster,
// simulates it under the same policy and cluster shape, and returns both.
// The trace, the policies and every run's configuration are checked
// before the first run starts.
func Compare(ctx context.Context, o CompareOptions) (*Comparison, error) {
	o.clusterStart = ClusterStartRegistered
	if err := checkPolicies(o.Policies); err != nil {
		return nil, fmt.Errorf("compare: %w", err)
	}
	if o.Trackers < 1 || o.MapSlots < 1 || o.ReduceSlots < 0 {
		return nil, fmt.Errorf("compare: a cluster of %d trackers with %d map and %d reduce slots each is not usable", o.Trackers, o.MapSlots, o.ReduceSlots)
	}
	seeds := o.Seeds
	if len(seeds) == 0 {
		seeds = []uint64{1}
	}
	if _, err := os.Stat(o.Trace); err == nil && len(seeds) > 1 {
		seeds = seeds[:1] // a file is the same whatever the seed
	}
	type plan struct {
		seed uint64
		w    *sim.Workload
		sims map[string]simPlan
	}
	var plans []plan
	for _, seed := range seeds {
		w, err := o.load(seed)
		if err != nil {
			return nil, fmt.Errorf("compare: %w", err)
		}
		p := plan{seed: seed, w: w, sims: map[string]simPlan{}}
		for _, pol := range o.Policies {
			sp, err := o.simulate(pol, w, seed)
			if err != nil {
				return nil, fmt.Errorf("compare: %w", err)
			}
			p.sims[pol] = sp
		}
		plans = append(plans, p)
	}
	c := o.comparison(plans[0].w)
	for _, p := range plans {
		for _, pol := range o.Policies {
			if o.Log != nil {
				fmt.Fprintf(o.Log, "compare: %s, seed %d, policy %s: %d jobs on an embedded cluster of %d trackers × (%d map + %d reduce) slots\n",
					p.w.Name, p.seed, pol, len(p.w.Jobs), o.Trackers, o.MapSlots, o.ReduceSlots)
			}
			sp := p.sims[pol]
			load0 := LoadAverage()
			run, err := replayOnFreshCluster(ctx, sp.cfg, p.w, o)
			if err != nil {
				return c, fmt.Errorf("compare: policy %s, seed %d: %w", pol, p.seed, err)
			}
			pr, err := o.policyRun(pol, p.seed, run, sp, [2]float64{load0, LoadAverage()})
			if err != nil {
				return c, fmt.Errorf("compare: policy %s, seed %d: %w", pol, p.seed, err)
			}
			c.Runs = append(c.Runs, pr)
		}
	}
	return c, nil
}

// simPlan is one policy's configuration on a trace and its simulation.
type simPlan struct {
	pol        string
	cfg        *conf.Config
	conf       map[string]string
	model      SimModel
	res        *sim.Result
	drawMissed []int
	draws      []sim.Summary
	// drawErrs are each draw's job errors against the draws' median
	// (DrawErrors).
	drawErrs [][]float64
}

// load reads or generates the trace of seed, scaled.
func (o CompareOptions) load(seed uint64) (*sim.Workload, error) {
	w, err := Load(o.Trace, seed)
	if err != nil {
		return nil, err
	}
	if o.TimeScale != 0 && o.TimeScale != 1 {
		return Scale(w, o.TimeScale)
	}
	return w, nil
}

// simulate builds the configuration of policy's run of w, checks it, and
// runs the simulator on the model of that cluster; a launch distribution
// draws with seed.
func (o CompareOptions) simulate(pol string, w *sim.Workload, seed uint64) (simPlan, error) {
	cfg, err := o.Config(pol, w)
	if err != nil {
		return simPlan{}, fmt.Errorf("policy %s: %w", pol, err)
	}
	if got := cfg.String("scheduler.policy"); got != pol {
		return simPlan{}, fmt.Errorf("policy %s: the configuration sets scheduler.policy=%s; compare sets it from --policies", pol, got)
	}
	conf := map[string]string{}
	for _, e := range cfg.Entries() {
		conf[e.Key] = cfg.String(e.Key)
	}
	var m SimModel
	if !o.Ideal {
		costs := sim.MeasuredOverheads
		if o.Costs != nil {
			costs = *o.Costs
		}
		costs.LaunchDist, costs.ReduceLaunchDist = reseeded(costs.LaunchDist, seed), reseeded(costs.ReduceLaunchDist, seed)
		costs.FirstAtPeriod = o.FirstHeartbeat.firstAtPeriod(o.clusterStart)
		m = ModelOf(cfg, costs)
	}
	sp := simPlan{pol: pol, cfg: cfg, conf: conf, model: m}
	if err := o.simulateDraws(&sp, w); err != nil {
		return simPlan{}, err
	}
	return sp, nil
}

// simulateDraws simulates w under sp's model into sp.res: once, or, when
// the model draws launches and o.LaunchDraws > 1, that many times with
// the launch seeds DrawSeed(seed, k), sp.res being their MedianOfDraws
// and sp.drawMissed each draw's missed deadlines.
func (o CompareOptions) simulateDraws(sp *simPlan, w *sim.Workload) error {
	d := sp.model.Overheads.LaunchDist
	n := o.LaunchDraws
	if d == nil || n < 2 {
		r, err := Simulate(w, sp.pol, sp.conf, o.Trackers, o.MapSlots, o.ReduceSlots, sp.cfg.Float(keySlowstart), sp.model)
		sp.res = r
		return err
	}
	var rs []*sim.Result
	sp.drawMissed, sp.draws, sp.drawErrs = nil, nil, nil
	for k := 0; k < n; k++ {
		m := sp.model
		m.Overheads.LaunchDist = reseeded(d, DrawSeed(d.Seed, k))
		m.Overheads.ReduceLaunchDist = reseeded(m.Overheads.ReduceLaunchDist, DrawSeed(d.Seed, k))
		r, err := Simulate(w, sp.pol, sp.conf, o.Trackers, o.MapSlots, o.ReduceSlots, sp.cfg.Float(keySlowstart), m)
		if err != nil {
			return fmt.Errorf("launch draw %d: %w", k, err)
		}
		rs = append(rs, r)
		sp.draws = append(sp.draws, r.Summary)
		if r.Summary.Deadline != nil {
			sp.drawMissed = append(sp.drawMissed, r.Summary.Deadline.MissedJobs)
		}
	}
	sp.res = MedianOfDraws(rs)
	sp.drawErrs = DrawErrors(rs, sp.res)
	return nil
}

// DrawErrors are the job errors (JobErrors) of each simulator draw rs[k]
// against med, their MedianOfDraws: how far from the simulator's expected
// schedule its own draws land. A real run whose error against med is
// within their spread is as close to the model as the model's own draws
// are: what is left is the noise of launches and heartbeat phases, which
// no simulator run once can predict job by job.
func DrawErrors(rs []*sim.Result, med *sim.Result) [][]float64 {
	out := make([][]float64, len(rs))
	for k, r := range rs {
		out[k] = JobErrors(r, med)
	}
	return out
}

// reseeded is a copy of d drawing with seed; nil for nil.
func reseeded(d *sim.LaunchDist, seed uint64) *sim.LaunchDist {
	if d == nil {
		return nil
	}
	c := *d
	c.Seed = seed
	return &c
}

// simulateRecorded simulates the recorded workload rw of a run (Recorded)
// under the heartbeats of sp's model (RecordedModel): once, with the
// trackers' heartbeats spread evenly, or, when o.LaunchDraws > 1 and the
// model has heartbeats, that many times with each tracker's first
// heartbeat drawn in the period (Overheads.DrawPhases, seeds
// DrawSeed(seed, k), through a launch distribution of zero cost), and the
// per-job MedianOfDraws: the phase of the trackers' heartbeats that a job
// meets is the runtime's luck, which the recorded durations do not hold
// and one fixed phase would charge every job the same way.
func (o CompareOptions) simulateRecorded(sp simPlan, rw *sim.Workload, seed uint64) (*sim.Result, error) {
	m := RecordedModel(sp.model)
	slowstart := sp.cfg.Float(keySlowstart)
	if o.LaunchDraws < 2 || m.Heartbeat == 0 {
		return Simulate(rw, sp.pol, sp.conf, o.Trackers, o.MapSlots, o.ReduceSlots, slowstart, m)
	}
	var rs []*sim.Result
	for k := 0; k < o.LaunchDraws; k++ {
		mk := m
		mk.Overheads.LaunchDist = &sim.LaunchDist{Quantiles: []time.Duration{0, 0}, Seed: DrawSeed(seed, k)}
		mk.Overheads.DrawPhases = true
		r, err := Simulate(rw, sp.pol, sp.conf, o.Trackers, o.MapSlots, o.ReduceSlots, slowstart, mk)
		if err != nil {
			return nil, fmt.Errorf("heartbeat phase draw %d: %w", k, err)
		}
		rs = append(rs, r)
	}
	return MedianOfDraws(rs), nil
}

// DrawSeed is the launch seed of draw k of a run whose seed is seed: the
// seed itself for the first draw, so that one draw is the single
// simulation.
func DrawSeed(seed uint64, k int) uint64 { return seed + uint64(k)*1_000_003 }

// MedianOfDraws is the first of several simulations of the same workload
// (launch draws) with each job's start and finish the median over all of
// them, summarised again: the simulator's expected schedule rather than
// one draw of its costs. Utilisation and kills are the first draw's.
func MedianOfDraws(rs []*sim.Result) *sim.Result {
	r := *rs[0]
	r.Jobs = slices.Clone(rs[0].Jobs)
	byID := make([]map[string]sim.JobRecord, len(rs))
	for i, x := range rs {
		byID[i] = map[string]sim.JobRecord{}
		for _, j := range x.Jobs {
			byID[i][j.ID] = j
		}
	}
	for i := range r.Jobs {
		j := &r.Jobs[i]
		var starts, finishes []float64
		for _, m := range byID {
			if x, ok := m[j.ID]; ok {
				starts, finishes = append(starts, x.Start), append(finishes, x.Finish)
			}
		}
		slices.Sort(starts)
		slices.Sort(finishes)
		j.Start, j.Finish = median(starts), median(finishes)
		j.Response = j.Finish - j.Submit
	}
	r.Summarize()
	return &r
}

// median of sorted xs (the mean of the middle two for an even count).
func median(xs []float64) float64 {
	n := len(xs)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}

// comparison is an empty comparison of o's trace.
func (o CompareOptions) comparison(w *sim.Workload) *Comparison {
	ts := o.TimeScale
	if ts == 0 {
		ts = 1
	}
	rr := o.RankResolve
	if rr == 0 {
		rr = DefaultRankResolve
	}
	return &Comparison{Trace: o.Trace, Description: w.Description, TimeScale: ts, Trackers: o.Trackers, MapSlots: o.MapSlots, ReduceSlots: o.ReduceSlots, ClusterStart: o.clusterStart, rankResolve: rr}
}

// policyRun puts a real run, made under the machine load load (start,
// end), beside its simulation.
func (o CompareOptions) policyRun(pol string, seed uint64, run *Run, sp simPlan, load [2]float64) (PolicyRun, error) {
	real, err := ResultOf(run, pol, o.Trackers, o.Trackers*o.MapSlots, o.Trackers*o.ReduceSlots, sp.cfg.Float(keySlowstart))
	if err != nil {
		return PolicyRun{}, err
	}
	costs := MeasureOverheads(run)
	if o.LaunchFromRun && !o.Ideal {
		if d := costs.LaunchDist(seed); d != nil {
			sp.model.Overheads.LaunchDist = d
			if err := o.simulateDraws(&sp, run.Workload); err != nil {
				return PolicyRun{}, fmt.Errorf("simulating with the run's launch distribution: %w", err)
			}
		}
	}
	var launchLoad float64
	if l := RunLoad(load); o.LaunchLoad != nil && !o.Ideal && !o.LaunchFromRun && l > 0 {
		if d := o.LaunchLoad.Dist(l, seed); d != nil {
			sp.model.Overheads.LaunchDist, launchLoad = d, l
			if o.ReduceLaunchLoad != nil {
				sp.model.Overheads.ReduceLaunchDist = o.ReduceLaunchLoad.Dist(l, seed)
			}
			if err := o.simulateDraws(&sp, run.Workload); err != nil {
				return PolicyRun{}, fmt.Errorf("simulating with the launch distribution of load %.1f: %w", l, err)
			}
		}
	}
	rw, err := Recorded(run)
	if err != nil {
		return PolicyRun{}, err
	}
	rec, err := o.simulateRecorded(sp, rw, seed)
	if err != nil {
		return PolicyRun{}, fmt.Errorf("simulating the recorded durations: %w", err)
	}
	return PolicyRun{Policy: pol, Seed: seed, Real: real, Sim: sp.res, Run: run, JobErrors: JobErrors(real, sp.res), Conf: simulatedConf(sp.conf), DrawMissed: sp.drawMissed, Draws: sp.draws, DrawErrors: sp.drawErrs,
		Model: sp.model, Costs: costs, Recorded: rec, RecordedErrors: JobErrors(real, rec), Load: load, LaunchLoad: launchLoad}, nil
}

// simulatedConf are the settings of a run that its simulation reads: the
// policy's (scheduler.*), the heartbeats' and the reduce slow-start. The
// JSON report keeps them so that Resimulate simulates a run as it was
// configured, whatever the defaults are by then.
func simulatedConf(all map[string]string) map[string]string {
	m := map[string]string{}
	for k, v := range all {
		if strings.HasPrefix(k, "scheduler.") || k == keyHeartbeat || k == keyOutOfBand || k == keySlowstart {
			m[k] = v
		}
	}
	return m
}

// keySlowstart is the reduce slow-start key, read for the simulation.
const keySlowstart = "mapreduce.job.reduce.slowstart.completedmaps"

// replayOnFreshCluster starts an embedded cluster, replays w on it and
// stops it.
func replayOnFreshCluster(ctx context.Context, cfg *conf.Config, w *sim.Workload, o CompareOptions) (*Run, error) {
	newLog := o.NewLog
	if newLog == nil {
		newLog = func(*conf.Config) *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
	}
	logw := o.Log
	if logw == nil {
		logw = io.Discard
	}
	cl, err := StartCluster(ctx, cfg, o.Trackers, o.Keep, newLog, logw)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	return Replay(ctx, cl.Client, w, o.Replay)
}

// metricRow is one row of the comparison table.
type metricRow struct {
	name string
	get  func(r *sim.Result) float64
	// deadline rows are shown when a job has a deadline.
	deadline bool
}

var metricRows = []metricRow{
	{name: "slowdown mean", get: func(r *sim.Result) float64 { return r.Summary.Slowdown.Mean }},
	{name: "slowdown median", get: func(r *sim.Result) float64 { return r.Summary.Slowdown.Median }},
	{name: "slowdown p95", get: func(r *sim.Result) float64 { return r.Summary.Slowdown.P95 }},
	{name: "slowdown p99", get: func(r *sim.Result) float64 { return r.Summary.Slowdown.P99 }},
	{name: "response mean [s]", get: func(r *sim.Result) float64 { return r.Summary.Response.Mean }},
	{name: "response median [s]", get: func(r *sim.Result) float64 { return r.Summary.Response.Median }},
	{name: "response p95 [s]", get: func(r *sim.Result) float64 { return r.Summary.Response.P95 }},
	{name: "makespan [s]", get: func(r *sim.Result) float64 { return r.Summary.MakespanS }},
	{name: "utilization map", get: func(r *sim.Result) float64 { return r.Summary.UtilMap }},
	{name: "utilization reduce", get: func(r *sim.Result) float64 { return r.Summary.UtilReduce }},
	{name: "missed deadlines [%]", deadline: true, get: func(r *sim.Result) float64 { return deadline(r).MissedPct }},
	{name: "relative deadline exceeded [%]", deadline: true, get: func(r *sim.Result) float64 { return deadline(r).RelativeExceededPct }},
	{name: "killed map tasks", get: func(r *sim.Result) float64 { return float64(r.KilledMapTasks) }},
	{name: "killed reduce tasks", get: func(r *sim.Result) float64 { return float64(r.KilledReduceTasks) }},
}

func deadline(r *sim.Result) *sim.DeadlineStats {
	if r.Summary.Deadline == nil {
		return &sim.DeadlineStats{}
	}
	return r.Summary.Deadline
}

func (c *Comparison) hasDeadlines() bool {
	for _, r := range c.Runs {
		if r.Real.Summary.Deadline != nil || r.Sim.Summary.Deadline != nil {
			return true
		}
	}
	return false
}

func (c *Comparison) rows() []metricRow {
	var rows []metricRow
	d := c.hasDeadlines()
	for _, r := range metricRows {
		if !r.deadline || d {
			rows = append(rows, r)
		}
	}
	return rows
}

// seeds returns the comparison's seeds in order.
func (c *Comparison) seeds() []uint64 {
	var out []uint64
	seen := map[uint64]bool{}
	for _, r := range c.Runs {
		if !seen[r.Seed] {
			seen[r.Seed] = true
			out = append(out, r.Seed)
		}
	}
	return out
}

func (c *Comparison) runsOf(seed uint64) []PolicyRun {
	var out []PolicyRun
	for _, r := range c.Runs {
		if r.Seed == seed {
			out = append(out, r)
		}
	}
	return out
}

// WriteTable prints, per seed, one column per policy with each real
// figure and beside it, in parentheses, the simulator's; then the ranking
// of the policies by mean slowdown, real and simulated, and the median
// and P90 relative error of per-job response times.
func (c *Comparison) WriteTable(w io.Writer) error {
	fmt.Fprintln(w, c.Description)
	for _, seed := range c.seeds() {
		runs := c.runsOf(seed)
		fmt.Fprintf(w, "\ntrace %s, seed %d, %d trackers × (%d map + %d reduce) slots; each cell: real (simulated)\n",
			c.Trace, seed, c.Trackers, c.MapSlots, c.ReduceSlots)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		row := func(cells ...string) { fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t") }
		head := []string{"policy"}
		jobs := []string{"jobs"}
		for _, r := range runs {
			head = append(head, r.Policy)
			jobs = append(jobs, fmt.Sprintf("%d (%d)", r.Real.Summary.Jobs, r.Sim.Summary.Jobs))
		}
		row(head...)
		row(jobs...)
		for _, m := range c.rows() {
			cells := []string{m.name}
			for _, r := range runs {
				cells = append(cells, fmt.Sprintf("%.2f (%.2f)", m.get(r.Real), m.get(r.Sim)))
			}
			row(cells...)
		}
		errRow := []string{"job response rel. error median/p90"}
		for _, r := range runs {
			errRow = append(errRow, fmt.Sprintf("%.3f/%.3f", sim.Percentile(r.JobErrors, 50), sim.Percentile(r.JobErrors, 90)))
		}
		row(errRow...)
		if len(runs) > 0 && len(runs[0].DrawErrors) > 1 {
			drawRow := []string{fmt.Sprintf("same, %d sim draws against their median: p90 median [max]", len(runs[0].DrawErrors))}
			for _, r := range runs {
				drawRow = append(drawRow, drawErrSpread(r.DrawErrors))
			}
			row(drawRow...)
		}
		recRow := []string{"same, simulating the recorded durations"}
		for _, r := range runs {
			recRow = append(recRow, fmt.Sprintf("%.3f/%.3f", sim.Percentile(r.RecordedErrors, 50), sim.Percentile(r.RecordedErrors, 90)))
		}
		row(recRow...)
		costRow := []string{"real costs median [ms] map/reduce/events/start/reduce launch"}
		for _, r := range runs {
			c := r.Costs
			costRow = append(costRow, fmt.Sprintf("%.0f/%.0f/%.0f/%.0f/%.0f", 1000*c.MapExcess.Median, 1000*c.ReduceReport.Median, 1000*c.MapEvents.Median, 1000*c.StartLag.Median, 1000*c.ReduceLaunch.Median))
		}
		row(costRow...)
		loadRow := []string{"load average at start/end"}
		for _, r := range runs {
			loadRow = append(loadRow, fmt.Sprintf("%.1f/%.1f", r.Load[0], r.Load[1]))
		}
		row(loadRow...)
		if len(runs) > 0 && runs[0].Model.Overheads.LaunchDist != nil {
			launchRow := []string{"sim launch median/p90 [ms] (load matched to)"}
			for _, r := range runs {
				d := r.Model.Overheads.LaunchDist
				cell := fmt.Sprintf("%.0f/%.0f", float64(d.At(0.5))/float64(time.Millisecond), float64(d.At(0.9))/float64(time.Millisecond))
				if r.LaunchLoad > 0 {
					cell += fmt.Sprintf(" (%.1f)", r.LaunchLoad)
				}
				launchRow = append(launchRow, cell)
			}
			row(launchRow...)
		}
		if len(runs) > 0 && len(runs[0].DrawMissed) > 0 {
			drawRow := []string{fmt.Sprintf("missed deadlines, %d sim draws: mean [min-max]", len(runs[0].DrawMissed))}
			for _, r := range runs {
				drawRow = append(drawRow, drawSpread(r.DrawMissed))
			}
			row(drawRow...)
		}
		if err := tw.Flush(); err != nil {
			return fmt.Errorf("write table: %w", err)
		}
		for _, rk := range c.rankingsOf(seed) {
			agree := "agree"
			if !rk.Agree {
				agree = "DISAGREE"
			}
			fmt.Fprintf(w, "ranking by %s (best first): real %s; simulated %s: %s\n", rk.Metric, rk.Real, rk.Sim, agree)
			if rk.Resolve > 0 {
				ag, con, un := rk.Agreed, rk.Contradict, rk.Unresolved
				fmt.Fprintf(w, "  real pairs resolved by %.0f%% of the %d sim draws: %d of %d, %d agree", 100*rk.Resolve, len(runs[0].Draws), len(ag)+len(con), len(ag)+len(con)+len(un), len(ag))
				if len(con) > 0 {
					fmt.Fprintf(w, ", CONTRADICTED: %s", pairsString(con))
				}
				if len(un) > 0 {
					fmt.Fprintf(w, "; unresolved: %s", pairsString(un))
				}
				fmt.Fprintln(w)
			}
		}
		if len(runs) > 0 {
			fmt.Fprintf(w, "simulator: %s\n", runs[0].Model)
		}
	}
	return nil
}

// DrawP90s are the P90 job errors of a run's draws against their median
// (PolicyRun.DrawErrors), sorted.
func DrawP90s(errs [][]float64) []float64 {
	var p []float64
	for _, e := range errs {
		p = append(p, sim.Percentile(e, 90))
	}
	sort.Float64s(p)
	return p
}

// drawErrSpread is "median [max]" of the draws' P90 job errors against
// their median.
func drawErrSpread(errs [][]float64) string {
	p := DrawP90s(errs)
	if len(p) == 0 {
		return "-"
	}
	return fmt.Sprintf("%.3f [%.3f]", sim.Percentile(p, 50), p[len(p)-1])
}

// drawSpread is "mean [min-max]" of the draws' counts.
func drawSpread(xs []int) string {
	if len(xs) == 0 {
		return "-"
	}
	sum := 0
	for _, x := range xs {
		sum += x
	}
	return fmt.Sprintf("%.1f [%d-%d]", float64(sum)/float64(len(xs)), slices.Min(xs), slices.Max(xs))
}

// String describes the model in one line.
func (m SimModel) String() string {
	if m == (SimModel{}) {
		return "ideal cluster (slots offered as they free, no task costs)"
	}
	o := m.Overheads
	s := fmt.Sprintf("heartbeat %v", m.Heartbeat)
	if o.OutOfBand {
		s += " with out-of-band heartbeats"
	}
	switch {
	case o.AfterLaunch > 0 && o.AfterEveryLaunch:
		s += fmt.Sprintf(", again %v after every launch", o.AfterLaunch)
	case o.AfterLaunch > 0:
		s += fmt.Sprintf(", again %v after a launch that left a slot of its type free", o.AfterLaunch)
	}
	launch := o.Launch.String()
	if d := o.LaunchDist; d != nil {
		q := d.Quantiles
		launch = fmt.Sprintf("drawn per attempt (seed %d) from %d quantiles: min %v, median %v, p90 %v, max %v",
			d.Seed, len(q), q[0], d.At(0.5), d.At(0.9), q[len(q)-1])
	}
	if d := o.ReduceLaunchDist; d != nil {
		q := d.Quantiles
		launch += fmt.Sprintf("; reduce launch (to the reduce phase) drawn from %d quantiles: min %v, median %v, p90 %v, max %v",
			len(q), q[0], d.At(0.5), d.At(0.9), q[len(q)-1])
	}
	return s + fmt.Sprintf("; task launch %s, end report %v, map events %v", launch, o.Report, o.MapEvents)
}

// jsonModel is a SimModel in the JSON report, in milliseconds.
type jsonModel struct {
	HeartbeatMs   float64 `json:"heartbeat_ms"`
	OutOfBand     bool    `json:"out_of_band"`
	AfterLaunchMs float64 `json:"after_launch_ms"`
	// AfterEveryLaunch: the follow-up heartbeat after every launch, not
	// only one that left a slot of its type free (sim.Overheads).
	AfterEveryLaunch bool `json:"after_every_launch,omitempty"`
	// FirstAtPeriod: every tracker's first heartbeat one period after the
	// start (sim.Overheads).
	FirstAtPeriod bool    `json:"first_heartbeat_at_period,omitempty"`
	LaunchMs      float64 `json:"launch_ms"`
	ReportMs      float64 `json:"report_ms"`
	MapEventsMs   float64 `json:"map_events_ms"`
	// LaunchQuantilesMs is the launch distribution's quantiles when the
	// model draws each launch (sim.LaunchDist); LaunchMs is unused then.
	LaunchQuantilesMs []float64 `json:"launch_quantiles_ms,omitempty"`
	LaunchSeed        uint64    `json:"launch_seed,omitempty"`
	// ReduceLaunchQuantilesMs is the reduce launch distribution's
	// quantiles when the model draws reduces from their own
	// (sim.Overheads.ReduceLaunchDist).
	ReduceLaunchQuantilesMs []float64 `json:"reduce_launch_quantiles_ms,omitempty"`
}

func (m SimModel) json() jsonModel {
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	o := m.Overheads
	j := jsonModel{HeartbeatMs: ms(m.Heartbeat), OutOfBand: o.OutOfBand, AfterLaunchMs: ms(o.AfterLaunch), AfterEveryLaunch: o.AfterEveryLaunch, FirstAtPeriod: o.FirstAtPeriod, LaunchMs: ms(o.Launch),
		ReportMs: ms(o.Report), MapEventsMs: ms(o.MapEvents)}
	if d := o.LaunchDist; d != nil {
		j.LaunchSeed = d.Seed
		for _, q := range d.Quantiles {
			j.LaunchQuantilesMs = append(j.LaunchQuantilesMs, ms(q))
		}
	}
	if d := o.ReduceLaunchDist; d != nil {
		for _, q := range d.Quantiles {
			j.ReduceLaunchQuantilesMs = append(j.ReduceLaunchQuantilesMs, ms(q))
		}
	}
	return j
}

// rankings are the metrics the policies are ranked by: mean and P95
// slowdown, and missed deadlines when jobs have deadlines.
func (c *Comparison) rankings() []metricRow {
	rs := []metricRow{metricRows[0], metricRows[2]}
	if c.hasDeadlines() {
		for _, m := range metricRows {
			if m.name == "missed deadlines [%]" {
				rs = append(rs, m)
			}
		}
	}
	return rs
}

// Ranking orders the runs' policies by mean slowdown (RankingBy).
func Ranking(runs []PolicyRun, res func(PolicyRun) *sim.Result) [][]string {
	return RankingBy(runs, res, metricRows[0].get)
}

// RankingBy orders the runs' policies by a metric, lowest first, as
// groups of policies whose figures are equal to 0.1% (ties), each group
// sorted by name.
func RankingBy(runs []PolicyRun, res func(PolicyRun) *sim.Result, get func(*sim.Result) float64) [][]string {
	rs := append([]PolicyRun(nil), runs...)
	mean := func(r PolicyRun) float64 { return get(res(r)) }
	sort.SliceStable(rs, func(a, b int) bool {
		if x, y := mean(rs[a]), mean(rs[b]); x != y {
			return x < y
		}
		return rs[a].Policy < rs[b].Policy
	})
	var out [][]string
	for i, r := range rs {
		if i > 0 && math.Abs(mean(r)-mean(rs[i-1])) <= 1e-3*math.Max(math.Abs(mean(r)), 1e-9) {
			out[len(out)-1] = append(out[len(out)-1], r.Policy)
			continue
		}
		out = append(out, []string{r.Policy})
	}
	return out
}

// RankingsAgree tells whether two rankings order every pair of policies
// the same way; a tie in either agrees with any order.
func RankingsAgree(a, b [][]string) bool {
	pos := func(r [][]string) map[string]int {
		m := map[string]int{}
		for i, g := range r {
			for _, p := range g {
				m[p] = i
			}
		}
		return m
	}
	pa, pb := pos(a), pos(b)
	for p, x := range pa {
		for q, y := range pa {
			if x < y && pb[p] > pb[q] {
				return false
			}
		}
	}
	return true
}

// PairOrder is the order of two policies, Better and Worse, in a real
// run by a metric (lowest first), and the share of the simulator's draws
// that order them alike (ties count half).
type PairOrder struct {
	Better string  `json:"better"`
	Worse  string  `json:"worse"`
	Share  float64 `json:"share"`
}

// PairsResolved compares the real order of every pair of policies by a
// metric with the simulator's draws (PolicyRun.Draws, draw k of each
// policy with the same launch seed). A pair whose real figures tie (to
// 0.1%, as RankingBy) is left out. Of the others, the simulator resolves
// a pair when at least share of its draws order it one way: agree are
// those it orders as the real run did, contradict those it orders the
// other way, unresolved the rest (the order is within the noise of the
// launch costs and heartbeat phases, which the runtime has as well, so a
// single real run's order of such a pair is a draw of that noise). With
// fewer than two draws for any run, ok is false.
func PairsResolved(runs []PolicyRun, get func(*sim.Result) float64, share float64) (agree, contradict, unresolved []PairOrder, ok bool) {
	n := 0
	for i, r := range runs {
		if i == 0 {
			n = len(r.Draws)
		}
		if len(r.Draws) < 2 || len(r.Draws) != n {
			return nil, nil, nil, false
		}
	}
	tie := func(x, y float64) bool {
		return math.Abs(x-y) <= 1e-3*math.Max(math.Max(math.Abs(x), math.Abs(y)), 1e-9)
	}
	for i := range runs {
		for j := i + 1; j < len(runs); j++ {
			a, b := runs[i], runs[j]
			ra, rb := get(a.Real), get(b.Real)
			if tie(ra, rb) {
				continue
			}
			if rb < ra {
				a, b = b, a
			}
			var alike float64
			for k := 0; k < n; k++ {
				x, y := get(&sim.Result{Summary: a.Draws[k]}), get(&sim.Result{Summary: b.Draws[k]})
				switch {
				case tie(x, y):
					alike += 0.5
				case x < y:
					alike++
				}
			}
			po := PairOrder{Better: a.Policy, Worse: b.Policy, Share: alike / float64(n)}
			switch {
			case po.Share >= share:
				agree = append(agree, po)
			case po.Share <= 1-share:
				contradict = append(contradict, po)
			default:
				unresolved = append(unresolved, po)
			}
		}
	}
	return agree, contradict, unresolved, true
}

// pairsString is "a < b (94%), c < d (50%)": each pair in its real order
// and the share of the simulator's draws that order it so.
func pairsString(ps []PairOrder) string {
	var out []string
	for _, p := range ps {
		out = append(out, fmt.Sprintf("%s < %s (%.0f%%)", p.Better, p.Worse, 100*p.Share))
	}
	return strings.Join(out, ", ")
}

func rankString(r [][]string) string {
	var gs []string
	for _, g := range r {
		gs = append(gs, strings.Join(g, " = "))
	}
	return strings.Join(gs, " < ")
}

// WriteCSV writes one line per seed, policy, source (real or sim) and
// metric.
func (c *Comparison) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	_ = cw.Write([]string{"trace", "seed", "policy", "metric", "real", "sim"})
	for _, r := range c.Runs {
		for _, m := range c.rows() {
			_ = cw.Write([]string{c.Trace, strconv.FormatUint(r.Seed, 10), r.Policy, m.name, fmtFloat(m.get(r.Real)), fmtFloat(m.get(r.Sim))})
		}
		_ = cw.Write([]string{c.Trace, strconv.FormatUint(r.Seed, 10), r.Policy, "job response rel. error median", fmtFloat(sim.Percentile(r.JobErrors, 50)), ""})
		_ = cw.Write([]string{c.Trace, strconv.FormatUint(r.Seed, 10), r.Policy, "job response rel. error p90", fmtFloat(sim.Percentile(r.JobErrors, 90)), ""})
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("write csv: %w", err)
	}
	return nil
}

func fmtFloat(x float64) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return ""
	}
	return strconv.FormatFloat(x, 'f', 4, 64)
}

// jsonRun is one PolicyRun in the JSON report.
type jsonRun struct {
	Policy    string          `json:"policy"`
	Seed      uint64          `json:"seed"`
	Real      sim.Summary     `json:"real"`
	Sim       sim.Summary     `json:"sim"`
	RealJobs  []sim.JobRecord `json:"real_jobs"`
	SimJobs   []sim.JobRecord `json:"sim_jobs"`
	JobErrMed float64         `json:"job_response_rel_error_median"`
	JobErrP90 float64         `json:"job_response_rel_error_p90"`
	Killed    [2]int64        `json:"real_killed_map_reduce"`
	// Model is the simulator's model of the cluster, Costs the costs the
	// real run's history shows.
	Model jsonModel         `json:"sim_model"`
	Costs MeasuredOverheads `json:"real_costs"`
	// The simulation of the recorded durations (Recorded).
	Recorded          sim.Summary     `json:"recorded_sim"`
	RecordedJobs      []sim.JobRecord `json:"recorded_sim_jobs"`
	RecordedJobErrMed float64         `json:"recorded_job_response_rel_error_median"`
	RecordedJobErrP90 float64         `json:"recorded_job_response_rel_error_p90"`
	// Conf are the run's settings its simulation reads (simulatedConf).
	Conf map[string]string `json:"conf,omitempty"`
	// SimDrawErrP90 are the P90 job errors of each launch draw against
	// the draws' median (DrawP90s), sorted.
	SimDrawErrP90 []float64 `json:"sim_draw_job_error_p90,omitempty"`
	// SimDrawMissed are the missed deadlines of each launch draw.
	SimDrawMissed []int `json:"sim_draw_missed,omitempty"`
	// Load is the 1-minute load average at the real run's start and end.
	Load [2]float64 `json:"load_average"`
	// SimLaunchLoad is the load the simulation's launch distribution was
	// matched to (--sim-launch-dist load), absent when it was not.
	SimLaunchLoad float64 `json:"sim_launch_load,omitempty"`
}

// WriteJSON writes the comparison as one JSON object: per run, both
// summaries and both sets of per-job records.
func (c *Comparison) WriteJSON(w io.Writer) error {
	rep := struct {
		Trace        string        `json:"trace"`
		Description  string        `json:"description"`
		TimeScale    float64       `json:"time_scale"`
		Trackers     int           `json:"trackers"`
		MapSlots     int           `json:"map_slots_per_tracker"`
		ReduceSlots  int           `json:"reduce_slots_per_tracker"`
		ClusterStart string        `json:"cluster_start,omitempty"`
		Runs         []jsonRun     `json:"runs"`
		Rankings     []jsonRanking `json:"rankings"`
	}{c.Trace, c.Description, c.TimeScale, c.Trackers, c.MapSlots, c.ReduceSlots, c.ClusterStart, nil, c.jsonRankings()}
	for _, r := range c.Runs {
		rep.Runs = append(rep.Runs, jsonRun{Policy: r.Policy, Seed: r.Seed, Real: r.Real.Summary, Sim: r.Sim.Summary,
			RealJobs: r.Real.Jobs, SimJobs: r.Sim.Jobs, JobErrMed: sim.Percentile(r.JobErrors, 50), JobErrP90: sim.Percentile(r.JobErrors, 90),
			Killed: [2]int64{r.Real.KilledMapTasks, r.Real.KilledReduceTasks}, Model: r.Model.json(), Costs: r.Costs,
			Recorded: r.Recorded.Summary, RecordedJobs: r.Recorded.Jobs,
			RecordedJobErrMed: sim.Percentile(r.RecordedErrors, 50), RecordedJobErrP90: sim.Percentile(r.RecordedErrors, 90), Conf: r.Conf, SimDrawMissed: r.DrawMissed, SimDrawErrP90: DrawP90s(r.DrawErrors), Load: r.Load, SimLaunchLoad: r.LaunchLoad})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(rep); err != nil {
		return fmt.Errorf("write json: %w", err)
	}
	return nil
}

// jsonRanking is one ranking of one seed's policies in the JSON report:
// real and simulated (RankingBy), whether they agree (RankingsAgree), and
// the real pairs the simulator's draws resolve (PairsResolved; absent
// without draws).
type jsonRanking struct {
	Seed       uint64      `json:"seed"`
	Metric     string      `json:"metric"`
	Real       string      `json:"real"`
	Sim        string      `json:"sim"`
	Agree      bool        `json:"agree"`
	Resolve    float64     `json:"resolve_share,omitempty"`
	Agreed     []PairOrder `json:"resolved_agree,omitempty"`
	Contradict []PairOrder `json:"resolved_contradict,omitempty"`
	Unresolved []PairOrder `json:"unresolved,omitempty"`
}

// jsonRankings are the rankings of every seed (rankingsOf).
func (c *Comparison) jsonRankings() []jsonRanking {
	var out []jsonRanking
	for _, seed := range c.seeds() {
		out = append(out, c.rankingsOf(seed)...)
	}
	return out
}

// rankingsOf ranks seed's policies by each ranking metric (rankings),
// real and simulated, with the pairs the simulator's draws resolve.
func (c *Comparison) rankingsOf(seed uint64) []jsonRanking {
	var out []jsonRanking
	runs := c.runsOf(seed)
	for _, by := range c.rankings() {
		realRank := RankingBy(runs, func(r PolicyRun) *sim.Result { return r.Real }, by.get)
		simRank := RankingBy(runs, func(r PolicyRun) *sim.Result { return r.Sim }, by.get)
		jr := jsonRanking{Seed: seed, Metric: by.name, Real: rankString(realRank), Sim: rankString(simRank), Agree: RankingsAgree(realRank, simRank)}
		if ag, con, un, ok := PairsResolved(runs, by.get, c.rankResolve); ok {
			jr.Resolve, jr.Agreed, jr.Contradict, jr.Unresolved = c.rankResolve, ag, con, un
		}
		out = append(out, jr)
	}
	return out
}

// WriteDir writes the comparison into dir (created if need be): the table
// (table.txt), the metrics (metrics.csv), the report (report.json), each
// run's job history (history-<policy>-seed<N>.jsonl) and the plots.
func (c *Comparison) WriteDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("output directory: %w", err)
	}
	files := []struct {
		name  string
		write func(io.Writer) error
	}{{"table.txt", c.WriteTable}, {"metrics.csv", c.WriteCSV}, {"report.json", c.WriteJSON}}
	for _, f := range files {
		if err := writeFile(filepath.Join(dir, f.name), f.write); err != nil {
			return err
		}
	}
	for _, r := range c.Runs {
		name := filepath.Join(dir, fmt.Sprintf("history-%s-seed%d.jsonl", r.Policy, r.Seed))
		if err := os.WriteFile(name, r.Run.HistoryJSONL, 0o644); err != nil {
			return fmt.Errorf("write %s: %w", name, err)
		}
	}
	return c.WritePlots(dir)
}

func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	if err := write(f); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", path, err)
	}
	return nil
}

// Resimulate rebuilds the comparison written into dir by WriteDir from
// its real runs (report.json and the job histories), simulating each
// again under o's model (ModelOf, or the ideal cluster with o.Ideal): the
// simulator's side of a comparison is redone without running the trace
// again. The trace, seeds, policies, time scale and cluster shape are
// the report's; o.Config gives each run's configuration, as in Compare,
// over which the settings the report recorded for the run (simulatedConf)
// are applied: a run is simulated as it was configured even if a default
// has changed since. (Reports written before the settings were recorded
// are simulated under o.Config alone.)
func Resimulate(dir string, o CompareOptions) (*Comparison, error) {
	path := filepath.Join(dir, "report.json")
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("resimulate: %w", err)
	}
	var rep struct {
		Trace       string  `json:"trace"`
		TimeScale   float64 `json:"time_scale"`
		Trackers    int     `json:"trackers"`
		MapSlots    int     `json:"map_slots_per_tracker"`
		ReduceSlots int     `json:"reduce_slots_per_tracker"`
		// ClusterStart is absent from reports written before it was.
		ClusterStart string `json:"cluster_start"`
		Runs         []struct {
			Policy   string            `json:"policy"`
			Seed     uint64            `json:"seed"`
			RealJobs []sim.JobRecord   `json:"real_jobs"`
			Conf     map[string]string `json:"conf"`
			Load     [2]float64        `json:"load_average"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(data, &rep); err != nil {
		return nil, fmt.Errorf("resimulate: %s: %w", path, err)
	}
	if rep.Trace == "" || len(rep.Runs) == 0 || rep.Trackers < 1 || rep.MapSlots < 1 {
		return nil, fmt.Errorf("resimulate: %s: not a comparison report (no trace, runs or cluster)", path)
	}
	o.Trace, o.Trackers, o.MapSlots, o.ReduceSlots = rep.Trace, rep.Trackers, rep.MapSlots, rep.ReduceSlots
	o.TimeScale = rep.TimeScale
	o.clusterStart = rep.ClusterStart
	var c *Comparison
	for _, r := range rep.Runs {
		w, err := o.load(r.Seed)
		if err != nil {
			return nil, fmt.Errorf("resimulate: %w", err)
		}
		if c == nil {
			c = o.comparison(w)
		}
		run, err := loadRun(dir, r.Policy, r.Seed, w, r.RealJobs)
		if err != nil {
			return nil, fmt.Errorf("resimulate: %w", err)
		}
		ro := o
		if len(r.Conf) > 0 {
			ro.Config = func(policy string, w *sim.Workload) (*conf.Config, error) {
				cfg, err := o.Config(policy, w)
				if err != nil {
					return nil, err
				}
				return cfg.With(r.Conf, path)
			}
		}
		sp, err := ro.simulate(r.Policy, w, r.Seed)
		if err != nil {
			return nil, fmt.Errorf("resimulate: %w", err)
		}
		pr, err := o.policyRun(r.Policy, r.Seed, run, sp, r.Load)
		if err != nil {
			return nil, fmt.Errorf("resimulate: policy %s, seed %d: %w", r.Policy, r.Seed, err)
		}
		c.Runs = append(c.Runs, pr)
	}
	return c, nil
}

// loadRun reads back a real run written by WriteDir: its job histories,
// in trace order, and its start, which the report's submission times (from
// the start) and the histories' (clock times) give.
func loadRun(dir, policy string, seed uint64, w *sim.Workload, real []sim.JobRecord) (*Run, error) {
	name := filepath.Join(dir, fmt.Sprintf("history-%s-seed%d.jsonl", policy, seed))
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, err
	}
	recs, err := jobhistory.ParseAll(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(recs) != len(w.Jobs) || len(real) != len(w.Jobs) {
		return nil, fmt.Errorf("%s: %d job histories and %d report records for a trace of %d jobs", name, len(recs), len(real), len(w.Jobs))
	}
	run := &Run{Workload: w, Jobs: make([]JobRun, len(w.Jobs)), HistoryJSONL: data}
	for i := range w.Jobs {
		if recs[i].Job.Name != w.Jobs[i].Name || real[i].ID != w.Jobs[i].ID {
			return nil, fmt.Errorf("%s: job %d is %q (report: %s), the trace's is %q (%s): not this trace's run", name, i+1, recs[i].Job.Name, real[i].ID, w.Jobs[i].Name, w.Jobs[i].ID)
		}
		run.Jobs[i] = JobRun{Trace: &w.Jobs[i], ID: recs[i].Job.JobID, State: recs[i].Job.State, Error: recs[i].Job.Error,
			Submitted: recs[i].Job.Submit, History: &recs[i]}
	}
	run.Start = recs[0].Job.Submit.Add(-time.Duration(real[0].Submit * float64(time.Second)))
	return run, nil
}
