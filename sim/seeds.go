package sim

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
)

// ParseSeeds reads a seed list: comma-separated seeds and inclusive
// ranges, "1-20", "1,3,5", "1-10,15". The seeds come back in the order
// given, without duplicates.
func ParseSeeds(s string) ([]uint64, error) {
	var out []uint64
	seen := map[uint64]bool{}
	add := func(x uint64) {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.ParseUint(strings.TrimSpace(lo), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("seeds %q: %q is not a seed or a range a-b", s, part)
		}
		if !isRange {
			add(a)
			continue
		}
		b, err := strconv.ParseUint(strings.TrimSpace(hi), 10, 64)
		if err != nil || b < a {
			return nil, fmt.Errorf("seeds %q: %q is not a range a-b with a <= b", s, part)
		}
		if b-a >= 100000 {
			return nil, fmt.Errorf("seeds %q: range %q has more than 100000 seeds", s, part)
		}
		for x := a; ; x++ {
			add(x)
			if x == b {
				break
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("seeds %q: no seed", s)
	}
	return out, nil
}

// FormatSeeds writes seeds back in ParseSeeds' form, runs as ranges.
func FormatSeeds(seeds []uint64) string {
	var parts []string
	for i := 0; i < len(seeds); {
		j := i
		for j+1 < len(seeds) && seeds[j+1] == seeds[j]+1 {
			j++
		}
		if j > i {
			parts = append(parts, fmt.Sprintf("%d-%d", seeds[i], seeds[j]))
		} else {
			parts = append(parts, strconv.FormatUint(seeds[i], 10))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}

// tQuantile975 is the 0.975 quantile of Student's t distribution with df
// degrees of freedom: the factor of a two-sided 95% confidence interval of
// a mean. Exact table values to df 30, then the Cornish-Fisher expansion
// around the normal quantile (error below 1e-4 there).
func tQuantile975(df int) float64 {
	table := [...]float64{12.7062, 4.3027, 3.1824, 2.7764, 2.5706, 2.4469, 2.3646, 2.3060, 2.2622, 2.2281,
		2.2010, 2.1788, 2.1604, 2.1448, 2.1314, 2.1199, 2.1098, 2.1009, 2.0930, 2.0860,
		2.0796, 2.0739, 2.0687, 2.0639, 2.0595, 2.0555, 2.0518, 2.0484, 2.0452, 2.0423}
	if df < 1 {
		return math.NaN()
	}
	if df <= len(table) {
		return table[df-1]
	}
	z, v := 1.959964, float64(df)
	return z + (z*z*z+z)/(4*v) + (5*math.Pow(z, 5)+16*z*z*z+3*z)/(96*v*v) +
		(3*math.Pow(z, 7)+19*math.Pow(z, 5)+17*z*z*z-15*z)/(384*v*v*v)
}

// MetricAgg is one metric over the seeds of a multi-seed run: the mean,
// the half-width of its 95% confidence interval (Student t, n−1 degrees
// of freedom; 0 for one seed), and the value of each seed in seed order.
type MetricAgg struct {
	Name   string    `json:"name"`
	N      int       `json:"n"`
	Mean   float64   `json:"mean"`
	CI95   float64   `json:"ci95"`
	Min    float64   `json:"min"`
	Max    float64   `json:"max"`
	Values []float64 `json:"values"`
}

// Aggregate summarises one metric's values over seeds.
func Aggregate(name string, xs []float64) MetricAgg {
	a := MetricAgg{Name: name, N: len(xs), Values: append([]float64(nil), xs...)}
	if len(xs) == 0 {
		return a
	}
	a.Min, a.Max = math.Inf(1), math.Inf(-1)
	sum := 0.0
	for _, x := range xs {
		sum += x
		a.Min, a.Max = math.Min(a.Min, x), math.Max(a.Max, x)
	}
	a.Mean = sum / float64(len(xs))
	if len(xs) > 1 {
		ss := 0.0
		for _, x := range xs {
			ss += (x - a.Mean) * (x - a.Mean)
		}
		sd := math.Sqrt(ss / float64(len(xs)-1))
		a.CI95 = tQuantile975(len(xs)-1) * sd / math.Sqrt(float64(len(xs)))
	}
	return a
}

// Metrics flattens a run's summary into named numbers, the names
// `mr sim --seeds` prints and the claims of `mr sim --check` use.
// Queue metrics are named by partition (q1 is P1); deadline metrics are
// present only for runs with deadlines, timer metrics only for policies
// that compute timers.
func Metrics(r *Result) map[string]float64 {
	s := r.Summary
	m := map[string]float64{
		"slowdown.mean": s.Slowdown.Mean, "slowdown.median": s.Slowdown.Median, "slowdown.p95": s.Slowdown.P95,
		"slowdown.p99": s.Slowdown.P99, "slowdown.max": s.Slowdown.Max, "v95": s.V95,
		"response.mean": s.Response.Mean, "response.median": s.Response.Median, "response.p95": s.Response.P95,
		"makespan": s.MakespanS, "drain": s.DrainS, "util.map": s.UtilMap, "util.reduce": s.UtilReduce,
		"idle.map_pending": s.IdleMapPendingS,
	}
	for q := range s.QueueWork {
		m[fmt.Sprintf("queue.q%d.work", q+1)] = s.QueueWork[q]
		m[fmt.Sprintf("queue.q%d.finished", q+1)] = s.QueueFinished[q]
	}
	if t := s.Timers; t != nil {
		m["timer.p5"], m["timer.median"], m["timer.p95"] = t.P5, t.Median, t.P95
	}
	if d := s.Deadline; d != nil {
		m["deadline.relative_exceeded_pct"] = d.RelativeExceededPct
		m["deadline.relative_exceeded_trim1_pct"] = d.RelativeExceededTrim1Pct
		m["deadline.overrun_median_pct"] = d.OverrunMedianPct
		m["deadline.missed_pct"] = d.MissedPct
		m["deadline.mean_overrun_pct"] = d.MeanOverrunPct
		m["deadline.extra_maps"] = float64(d.ExtraMapTasks)
		m["deadline.killed_maps"] = float64(d.KilledMapTasks)
		m["deadline.kill_ratio_pct"] = d.KillRatioPct
		m["deadline.killed_spare_maps"] = float64(d.KilledSpareMapTasks)
		m["deadline.spare_kill_ratio_pct"] = d.SpareKillRatioPct
		m["deadline.completion_mean"] = s.Response.Mean
	}
	return m
}

// SeedExperiment is a multi-seed run: each policy on the workload
// generated with each seed.
type SeedExperiment struct {
	// Workload is a built-in workload name or a trace file (the same
	// jobs for every seed then).
	Workload string
	// Gen are the generator options; Seed is set per run.
	Gen GenOptions
	// Policies are simulated on every seed.
	Policies []string
	// Options are the simulation options; Policy is set per run.
	Options Options
	// Seeds to run.
	Seeds []uint64
	// Parallel bounds the simulations running at once (<= 0: GOMAXPROCS).
	Parallel int
}

// SeedReport is the result of a SeedExperiment: per policy, every metric
// over the seeds.
type SeedReport struct {
	Workload string `json:"workload"`
	// Description is the workload's, generated with the first seed.
	Description string            `json:"description"`
	Seeds       string            `json:"seeds"`
	Policies    []PolicySeedStats `json:"policies"`
}

// PolicySeedStats are one policy's metrics over the seeds, sorted by name.
type PolicySeedStats struct {
	Policy  string      `json:"policy"`
	Metrics []MetricAgg `json:"metrics"`
}

// Metric returns the named metric, and whether the policy has it.
func (p PolicySeedStats) Metric(name string) (MetricAgg, bool) {
	for _, m := range p.Metrics {
		if m.Name == name {
			return m, true
		}
	}
	return MetricAgg{}, false
}

// Policy returns the named policy's statistics.
func (rep *SeedReport) Policy(name string) (PolicySeedStats, bool) {
	for _, p := range rep.Policies {
		if p.Policy == name {
			return p, true
		}
	}
	return PolicySeedStats{}, false
}

// RunSeeds runs the experiment, the simulations in parallel goroutines
// (each generates its own workload: the simulator shares nothing between
// runs), and aggregates the metrics per policy. A metric missing from some
// seeds' runs is aggregated over the seeds that have it.
func RunSeeds(ctx context.Context, exp SeedExperiment) (*SeedReport, error) {
	if len(exp.Policies) == 0 || len(exp.Seeds) == 0 {
		return nil, fmt.Errorf("seeds: need at least one policy and one seed")
	}
	par := exp.Parallel
	if par <= 0 {
		par = runtime.GOMAXPROCS(0)
	}
	type unit struct{ p, s int }
	results := make([][]map[string]float64, len(exp.Policies))
	for p := range results {
		results[p] = make([]map[string]float64, len(exp.Seeds))
	}
	var (
		mu       sync.Mutex
		firstErr error
		desc     string
		wg       sync.WaitGroup
	)
	units := make(chan unit)
	for i := 0; i < par; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for u := range units {
				gen := exp.Gen
				gen.Seed = exp.Seeds[u.s]
				r, d, err := runOne(ctx, exp.Workload, gen, exp.Policies[u.p], exp.Options)
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = fmt.Errorf("seed %d, %s: %w", gen.Seed, exp.Policies[u.p], err)
				}
				if err == nil {
					results[u.p][u.s] = Metrics(r)
					if u.s == 0 {
						desc = d
					}
				}
				mu.Unlock()
			}
		}()
	}
feed:
	for s := range exp.Seeds {
		for p := range exp.Policies {
			mu.Lock()
			stop := firstErr != nil
			mu.Unlock()
			if stop || ctx.Err() != nil {
				break feed
			}
			units <- unit{p, s}
		}
	}
	close(units)
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("seeds: %w", err)
	}
	rep := &SeedReport{Workload: exp.Workload, Description: desc, Seeds: FormatSeeds(exp.Seeds)}
	for p, name := range exp.Policies {
		names := map[string]bool{}
		for _, m := range results[p] {
			for k := range m {
				names[k] = true
			}
		}
		ps := PolicySeedStats{Policy: name}
		for k := range names {
			var xs []float64
			for _, m := range results[p] {
				if v, ok := m[k]; ok {
					xs = append(xs, v)
				}
			}
			ps.Metrics = append(ps.Metrics, Aggregate(k, xs))
		}
		sort.Slice(ps.Metrics, func(a, b int) bool { return ps.Metrics[a].Name < ps.Metrics[b].Name })
		rep.Policies = append(rep.Policies, ps)
	}
	return rep, nil
}

// runOne generates the workload of one seed and simulates one policy on it.
func runOne(ctx context.Context, workload string, gen GenOptions, policy string, opt Options) (*Result, string, error) {
	if err := ctx.Err(); err != nil {
		return nil, "", err
	}
	w, err := LoadWorkload(workload, gen)
	if err != nil {
		return nil, "", err
	}
	opt.Policy = policy
	r, err := Run(w, opt)
	if err != nil {
		return nil, "", err
	}
	return r, w.Description, nil
}

// WriteJSON writes the report as one JSON object.
func (rep *SeedReport) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(rep); err != nil {
		return fmt.Errorf("write seed report: %w", err)
	}
	return nil
}

// WriteTable prints every metric as "mean ± CI half-width", one column
// per policy.
func (rep *SeedReport) WriteTable(w io.Writer) error {
	fmt.Fprintf(w, "workload %s, seeds %s: mean ± half-width of the 95%% confidence interval (Student t)\n", rep.Workload, rep.Seeds)
	if rep.Description != "" {
		first, _, _ := strings.Cut(strings.SplitN(rep.Seeds, ",", 2)[0], "-")
		fmt.Fprintf(w, "(seed %s) %s\n", first, rep.Description)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	names := map[string]bool{}
	var order []string
	for _, p := range rep.Policies {
		for _, m := range p.Metrics {
			if !names[m.Name] {
				names[m.Name] = true
				order = append(order, m.Name)
			}
		}
	}
	sort.Strings(order)
	cells := []string{"metric"}
	for _, p := range rep.Policies {
		cells = append(cells, p.Policy)
	}
	fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t")
	for _, name := range order {
		cells = []string{name}
		for _, p := range rep.Policies {
			m, ok := p.Metric(name)
			if !ok {
				cells = append(cells, "-")
				continue
			}
			cells = append(cells, fmt.Sprintf("%s ± %s", num(m.Mean), num(m.CI95)))
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t")
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write seed table: %w", err)
	}
	return nil
}

// num prints a metric with three significant digits, in plain notation
// below 10^6.
func num(x float64) string {
	ax := math.Abs(x)
	switch {
	case ax == 0:
		return "0"
	case ax >= 1e6:
		return strconv.FormatFloat(x, 'e', 2, 64)
	case ax >= 100:
		return strconv.FormatFloat(x, 'f', 0, 64)
	case ax >= 10:
		return strconv.FormatFloat(x, 'f', 1, 64)
	case ax >= 1:
		return strconv.FormatFloat(x, 'f', 2, 64)
	default:
		return strconv.FormatFloat(x, 'g', 3, 64)
	}
}
