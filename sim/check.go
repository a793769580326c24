package sim

import (
	"bufio"
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"
)

// DefaultCheckSeeds are the seeds `mr sim --check` runs unless told: seeds
// 11-30, which no default was tuned on (the sweeps behind the defaults
// used seeds 1-10; docs/policies.md).
const DefaultCheckSeeds = "11-30"

//go:embed testdata/claims.tsv
var builtinClaims []byte

// Claim is one reference number or statement of a source, as a comparison
// of a simulated metric's mean over seeds:
//
//	Policy's Metric  Op  RHS   (within Tolerance)
//
// RHS is a number, another policy's mean of the same metric ("fifo"),
// optionally scaled ("fifo*0.5"), or for Op "in" a range "lo..hi". Policy
// may name alternatives "a|b": the claim is about the better of them (the
// lower mean for < and <=, the higher for > and >=). Tolerance is relative
// slack on the RHS: 0.1 lets the mean miss the bound by 10% of it and
// still count as reproduced.
//
// Ops "paired>" and "paired<" compare seed by seed instead of the means:
// the ratio Policy's Metric / RHS's Metric on each seed (the same jobs and
// arrivals), and the claim is reproduced when the 95% confidence interval
// of their geometric mean lies wholly above (below) 1, or the RHS's factor
// ("minedf*1.2"): the direction is resolved by the seeds, not only
// suggested by a point estimate. RHS must name one policy and Policy one
// policy. This is the typical run's comparison, which a few seeds with
// values orders of magnitude above the others cannot turn, as they can
// turn the means of a heavy-tailed metric (docs/policies.md, the deadline
// paper's relative deadline exceeded). Seeds on which either value is not
// positive have no ratio and are left out.
type Claim struct {
	ID        string  `json:"id"`
	Source    string  `json:"source"`
	Workload  string  `json:"workload"`
	Flags     string  `json:"flags,omitempty"`
	Policy    string  `json:"policy"`
	Metric    string  `json:"metric"`
	Op        string  `json:"op"`
	RHS       string  `json:"rhs"`
	Tolerance float64 `json:"tolerance"`
	Says      string  `json:"says"`
}

// LoadClaims reads a claims file (tab-separated, a header line, columns
// id, source, workload, flags, policy, metric, op, rhs, tolerance, says;
// lines starting with # are comments); an empty path reads the built-in
// sim/testdata/claims.tsv.
func LoadClaims(path string) ([]Claim, error) {
	data := builtinClaims
	if path != "" {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("claims: %w", err)
		}
		data = b
	}
	return ParseClaims(bytes.NewReader(data))
}

// ParseClaims reads claims in LoadClaims' format.
func ParseClaims(r io.Reader) ([]Claim, error) {
	sc := bufio.NewScanner(r)
	var out []Claim
	header := true
	ids := map[string]bool{}
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if header {
			header = false
			continue
		}
		f := strings.Split(line, "\t")
		if len(f) != 10 {
			return nil, fmt.Errorf("claims line %d: %d tab-separated fields, want 10", n, len(f))
		}
		for i := range f {
			f[i] = strings.TrimSpace(f[i])
		}
		c := Claim{ID: f[0], Source: f[1], Workload: f[2], Flags: f[3], Policy: f[4], Metric: f[5], Op: f[6], RHS: f[7], Says: f[9]}
		if f[8] != "" {
			t, err := strconv.ParseFloat(f[8], 64)
			if err != nil || t < 0 {
				return nil, fmt.Errorf("claims line %d (%s): tolerance %q: want a number >= 0", n, c.ID, f[8])
			}
			c.Tolerance = t
		}
		if ids[c.ID] {
			return nil, fmt.Errorf("claims line %d: id %q twice", n, c.ID)
		}
		ids[c.ID] = true
		if err := c.validate(); err != nil {
			return nil, fmt.Errorf("claims line %d (%s): %w", n, c.ID, err)
		}
		out = append(out, c)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("claims: %w", err)
	}
	return out, nil
}

func (c Claim) validate() error {
	switch c.Op {
	case "<", "<=", ">", ">=", "in", "paired>", "paired<":
	default:
		return fmt.Errorf("op %q: want <, <=, >, >=, in, paired> or paired<", c.Op)
	}
	if c.ID == "" || c.Workload == "" || c.Policy == "" || c.Metric == "" || c.RHS == "" {
		return fmt.Errorf("id, workload, policy, metric and rhs must be given")
	}
	if c.paired() {
		if _, _, ok := c.rhsPolicy(); !ok || strings.Contains(c.Policy, "|") {
			return fmt.Errorf("op %s wants one policy and a policy rhs (\"minedf\", \"minedf*1.2\")", c.Op)
		}
	}
	if _, _, err := parseClaimFlags(c.Flags); err != nil {
		return err
	}
	if c.Op == "in" {
		_, _, err := c.rangeRHS()
		return err
	}
	return nil
}

// paired reports whether the claim compares seed by seed (ops paired>
// and paired<).
func (c Claim) paired() bool { return strings.HasPrefix(c.Op, "paired") }

func (c Claim) rangeRHS() (lo, hi float64, err error) {
	a, b, ok := strings.Cut(c.RHS, "..")
	if ok {
		lo, err = strconv.ParseFloat(a, 64)
		if err == nil {
			hi, err = strconv.ParseFloat(b, 64)
		}
	}
	if !ok || err != nil || lo > hi {
		return 0, 0, fmt.Errorf("rhs %q: op in wants lo..hi", c.RHS)
	}
	return lo, hi, nil
}

// rhsPolicy returns the policy and factor of a policy RHS ("fifo*0.5"),
// or ok false for a number.
func (c Claim) rhsPolicy() (policy string, factor float64, ok bool) {
	if c.Op == "in" {
		return "", 0, false
	}
	if _, err := strconv.ParseFloat(c.RHS, 64); err == nil {
		return "", 0, false
	}
	p, fs, scaled := strings.Cut(c.RHS, "*")
	factor = 1
	if scaled {
		f, err := strconv.ParseFloat(fs, 64)
		if err != nil {
			return "", 0, false
		}
		factor = f
	}
	return p, factor, true
}

// policies are every policy the claim needs simulated.
func (c Claim) policies() []string {
	ps := strings.Split(c.Policy, "|")
	if p, _, ok := c.rhsPolicy(); ok {
		ps = append(ps, p)
	}
	return ps
}

// parseClaimFlags reads a claim's run flags, a subset of mr sim's:
// --hadoop1, --load, --interarrival, --jobs, --slowstart, --heartbeat and
// --set key=value.
func parseClaimFlags(s string) (GenOptions, Options, error) {
	fs := pflag.NewFlagSet("claim", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	hadoop1 := fs.Bool("hadoop1", false, "")
	load := fs.Float64("load", 0, "")
	ia := fs.Duration("interarrival", 0, "")
	jobs := fs.Int("jobs", 0, "")
	slowstart := fs.Float64("slowstart", -1, "")
	hb := fs.Duration("heartbeat", 0, "")
	sets := fs.StringArray("set", nil, "")
	if err := fs.Parse(strings.Fields(s)); err != nil {
		return GenOptions{}, Options{}, fmt.Errorf("flags %q: %w", s, err)
	}
	if fs.NArg() > 0 {
		return GenOptions{}, Options{}, fmt.Errorf("flags %q: unexpected %q", s, fs.Args())
	}
	opt := Options{Slowstart: *slowstart, Heartbeat: *hb, Conf: map[string]string{}}
	if *hadoop1 {
		if !fs.Lookup("heartbeat").Changed {
			opt.Heartbeat = Hadoop1Overheads["heartbeat"]
		}
		opt.SetupTask, opt.CleanupTask = Hadoop1Overheads["job-setup"], Hadoop1Overheads["job-cleanup"]
	}
	for _, kv := range *sets {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return GenOptions{}, Options{}, fmt.Errorf("flags %q: --set %q: want key=value", s, kv)
		}
		opt.Conf[k] = v
	}
	return GenOptions{Load: *load, InterArrival: *ia, Jobs: *jobs}, opt, nil
}

// FilterClaims keeps the claims whose id starts with one of the
// comma-separated prefixes; an empty filter keeps all.
func FilterClaims(claims []Claim, prefixes string) []Claim {
	if strings.TrimSpace(prefixes) == "" {
		return claims
	}
	var out []Claim
	for _, c := range claims {
		for _, p := range strings.Split(prefixes, ",") {
			if p = strings.TrimSpace(p); p != "" && strings.HasPrefix(c.ID, p) {
				out = append(out, c)
				break
			}
		}
	}
	return out
}

// Outcome is a claim checked on seeds: the means compared, the margin by
// which the comparison holds (positive) or fails (negative), relative to
// the bound, and on how many seeds it holds on its own.
type Outcome struct {
	Claim      Claim   `json:"claim"`
	Policy     string  `json:"policy"` // the policy compared (the better one of alternatives)
	Mean       float64 `json:"mean"`
	CI95       float64 `json:"ci95"`
	Bound      float64 `json:"bound"`  // the RHS's mean (scaled), or for "in" the violated or nearer end
	Margin     float64 `json:"margin"` // relative to |Bound|; > 0 holds
	Reproduced bool    `json:"reproduced"`
	SeedsHeld  int     `json:"seeds_held"`
	Seeds      int     `json:"seeds"`
	// RatioLo and RatioHi are, for the paired ops, the 95% confidence
	// interval of the geometric mean ratio (Mean); CI95 is then half its
	// width.
	RatioLo float64 `json:"ratio_lo,omitempty"`
	RatioHi float64 `json:"ratio_hi,omitempty"`
}

// CheckClaims runs what the claims need on the seeds, each (workload,
// flags) group once with every policy its claims name, and evaluates each
// claim. Progress goes to log (may be nil).
func CheckClaims(ctx context.Context, claims []Claim, seeds []uint64, parallel int, log io.Writer) ([]Outcome, error) {
	type group struct {
		workload, flags string
		policies        []string
	}
	var groups []*group
	byKey := map[string]*group{}
	for _, c := range claims {
		key := c.Workload + "\x00" + c.Flags
		g := byKey[key]
		if g == nil {
			g = &group{workload: c.Workload, flags: c.Flags}
			byKey[key] = g
			groups = append(groups, g)
		}
		for _, p := range c.policies() {
			if !contains(g.policies, p) {
				g.policies = append(g.policies, p)
			}
		}
	}
	reports := map[string]*SeedReport{}
	for _, g := range groups {
		gen, opt, err := parseClaimFlags(g.flags)
		if err != nil {
			return nil, err
		}
		start := time.Now()
		rep, err := RunSeeds(ctx, SeedExperiment{Workload: g.workload, Gen: gen, Policies: g.policies, Options: opt, Seeds: seeds, Parallel: parallel})
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", g.workload, g.flags, err)
		}
		if log != nil {
			fmt.Fprintf(log, "check: %s %s: %s × %d seeds in %v\n", g.workload, g.flags, strings.Join(g.policies, ","), len(seeds), time.Since(start).Round(time.Millisecond))
		}
		reports[g.workload+"\x00"+g.flags] = rep
	}
	var out []Outcome
	for _, c := range claims {
		o, err := evaluate(c, reports[c.Workload+"\x00"+c.Flags])
		if err != nil {
			return nil, fmt.Errorf("claim %s: %w", c.ID, err)
		}
		out = append(out, o)
	}
	return out, nil
}

func evaluate(c Claim, rep *SeedReport) (Outcome, error) {
	metric := func(p string) (MetricAgg, error) {
		ps, ok := rep.Policy(p)
		if !ok {
			return MetricAgg{}, fmt.Errorf("policy %s not run", p)
		}
		m, ok := ps.Metric(c.Metric)
		if !ok {
			return MetricAgg{}, fmt.Errorf("policy %s has no metric %q", p, c.Metric)
		}
		return m, nil
	}
	if c.paired() {
		return evaluatePaired(c, metric)
	}
	var best MetricAgg
	o := Outcome{Claim: c}
	for i, p := range strings.Split(c.Policy, "|") {
		m, err := metric(p)
		if err != nil {
			return o, err
		}
		better := m.Mean < best.Mean
		if c.Op == ">" || c.Op == ">=" {
			better = m.Mean > best.Mean
		}
		if i == 0 || better {
			best, o.Policy = m, p
		}
	}
	o.Mean, o.CI95, o.Seeds = best.Mean, best.CI95, best.N
	// per-seed bounds, for the count of seeds on which the claim holds
	bounds := make([]float64, best.N)
	var lo, hi float64
	switch rp, factor, isPolicy := c.rhsPolicy(); {
	case c.Op == "in":
		lo, hi, _ = c.rangeRHS()
	case isPolicy:
		m, err := metric(rp)
		if err != nil {
			return o, err
		}
		o.Bound = m.Mean * factor
		for i := range bounds {
			if i < len(m.Values) {
				bounds[i] = m.Values[i] * factor
			}
		}
	default:
		v, err := strconv.ParseFloat(c.RHS, 64)
		if err != nil {
			return o, fmt.Errorf("rhs %q: not a number, a policy or policy*factor", c.RHS)
		}
		o.Bound = v
		for i := range bounds {
			bounds[i] = v
		}
	}
	holds := func(x, b float64) (bool, float64) {
		slack := c.Tolerance * math.Abs(b)
		switch c.Op {
		case "<":
			return x < b+slack, b - x
		case "<=":
			return x <= b+slack, b - x
		case ">":
			return x > b-slack, x - b
		case ">=":
			return x >= b-slack, x - b
		}
		// in: the distance to the nearer end, negative outside
		d := math.Min(x-lo, hi-x)
		slackLo, slackHi := c.Tolerance*math.Abs(lo), c.Tolerance*math.Abs(hi)
		return x >= lo-slackLo && x <= hi+slackHi, d
	}
	var diff float64
	o.Reproduced, diff = holds(o.Mean, o.Bound)
	ref := math.Abs(o.Bound)
	if c.Op == "in" {
		if o.Mean-lo < hi-o.Mean {
			o.Bound = lo
		} else {
			o.Bound = hi
		}
		ref = math.Abs(o.Bound)
	}
	if ref > 0 {
		o.Margin = diff / ref
	} else {
		o.Margin = diff
	}
	for i, x := range best.Values {
		if ok, _ := holds(x, bounds[i]); ok {
			o.SeedsHeld++
		}
	}
	return o, nil
}

// evaluatePaired evaluates a paired> or paired< claim: the geometric mean
// over the seeds of the per-seed ratio of the two policies' values and its
// 95% interval (of the mean of the log ratios, Student t), whose near end
// must be beyond the RHS's factor; the margin is that end's distance from
// the factor, relative to it.
func evaluatePaired(c Claim, metric func(string) (MetricAgg, error)) (Outcome, error) {
	o := Outcome{Claim: c, Policy: c.Policy}
	rp, factor, _ := c.rhsPolicy()
	a, err := metric(c.Policy)
	if err != nil {
		return o, err
	}
	b, err := metric(rp)
	if err != nil {
		return o, err
	}
	if len(a.Values) != len(b.Values) {
		return o, fmt.Errorf("%s has %d seeds, %s %d", c.Policy, len(a.Values), rp, len(b.Values))
	}
	o.Bound = factor
	above := c.Op == "paired>"
	var logs []float64
	for i := range a.Values {
		if a.Values[i] <= 0 || b.Values[i] <= 0 {
			continue
		}
		r := a.Values[i] / b.Values[i]
		logs = append(logs, math.Log(r))
		if (above && r > factor) || (!above && r < factor) {
			o.SeedsHeld++
		}
	}
	o.Seeds = len(logs)
	if len(logs) == 0 {
		return o, nil
	}
	agg := Aggregate("log ratio", logs)
	o.Mean = math.Exp(agg.Mean)
	o.RatioLo, o.RatioHi = math.Exp(agg.Mean-agg.CI95), math.Exp(agg.Mean+agg.CI95)
	o.CI95 = (o.RatioHi - o.RatioLo) / 2
	slack := c.Tolerance * factor
	if above {
		o.Reproduced = o.RatioLo > factor-slack
		o.Margin = (o.RatioLo - factor) / factor
	} else {
		o.Reproduced = o.RatioHi < factor+slack
		o.Margin = (factor - o.RatioHi) / factor
	}
	return o, nil
}

func notReproduced(os []Outcome) int {
	n := 0
	for _, o := range os {
		if !o.Reproduced {
			n++
		}
	}
	return n
}

// WriteCheckTable prints one line per claim: reproduced or not, the mean
// and its confidence interval against the bound, the margin and the seeds
// on which the claim holds alone.
func WriteCheckTable(w io.Writer, seeds []uint64, outcomes []Outcome) error {
	fmt.Fprintf(w, "mr sim --check on seeds %s (%d): means over the seeds ± 95%% CI half-width; margin > 0: the claim holds by that fraction of the bound\n",
		FormatSeeds(seeds), len(seeds))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "claim\tsource\tresult\twe get\tbound\tmargin\tseeds\tthe source says")
	for _, o := range outcomes {
		res := "reproduced"
		if !o.Reproduced {
			res = "NOT reproduced"
		}
		c := o.Claim
		lhs := fmt.Sprintf("%s %s = %s ± %s", o.Policy, c.Metric, num(o.Mean), num(o.CI95))
		bound := c.Op + " " + c.RHS
		if p, _, ok := c.rhsPolicy(); ok && c.paired() {
			lhs = fmt.Sprintf("%s / %s %s, geometric mean of the seeds' ratios = %s [%s, %s]", o.Policy, p, c.Metric, num(o.Mean), num(o.RatioLo), num(o.RatioHi))
			bound = fmt.Sprintf("%s %s", strings.TrimPrefix(c.Op, "paired"), num(o.Bound))
		} else if ok {
			bound = fmt.Sprintf("%s %s (%s)", c.Op, num(o.Bound), strings.Replace(c.RHS, p, p+"'s", 1))
		}
		if c.Tolerance > 0 {
			bound += fmt.Sprintf(" ±%g%%", c.Tolerance*100)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%+.0f%%\t%d/%d\t%s\n", c.ID, c.Source, res, lhs, bound, o.Margin*100, o.SeedsHeld, o.Seeds, c.Says)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write check: %w", err)
	}
	n := notReproduced(outcomes)
	fmt.Fprintf(w, "%d of %d claims reproduced\n", len(outcomes)-n, len(outcomes))
	return nil
}

// WriteCheckJSON writes the outcomes as one JSON object.
func WriteCheckJSON(w io.Writer, seeds []uint64, outcomes []Outcome) error {
	sorted := append([]Outcome(nil), outcomes...)
	sort.SliceStable(sorted, func(a, b int) bool { return sorted[a].Claim.ID < sorted[b].Claim.ID })
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	err := enc.Encode(map[string]any{"seeds": FormatSeeds(seeds), "reproduced": len(outcomes) - notReproduced(outcomes),
		"claims": len(outcomes), "outcomes": sorted})
	if err != nil {
		return fmt.Errorf("write check: %w", err)
	}
	return nil
}
