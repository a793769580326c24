package sim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"gomr/conf"
	"gomr/partitions"
	"gomr/preempt"
	"gomr/speculator"
)

// Usage is the synopsis of `mr sim`, and Short its one-line description.
const (
	Usage = "mr sim --policy P [--compare P1,P2,...] --workload W [--seed S | --seeds 1-20] [--check [--only ID,...] [--strict]] [--speculation none|fresh|clone | --compare-speculation] [--preemption M] [--scale-up] [--json] [--svg FILE] [flags]"
	Short = "Run scheduling policies on a simulated cluster (the same policy code the JobTracker runs)"
)

// Command is the `mr sim` subcommand: it simulates one policy, or several
// side by side, on a built-in workload or a trace file, and prints a table
// or (--json) one JSON object.
func Command(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := pflag.NewFlagSet("sim", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	// -h and --help print the description, the usage and every flag on
	// stdout, as cobra's help does, and succeed.
	fs.Usage = func() {
		fmt.Fprintf(stdout, "%s\n\nUsage:\n  %s\n\nFlags:\n%s", Short, Usage, fs.FlagUsages())
	}
	policy := fs.String("policy", "", "scheduling policy to simulate (one of "+strings.Join(partitions.Names(), ", ")+")")
	compare := fs.String("compare", "", "comma-separated policies to simulate side by side (with --policy, that one first)")
	workload := fs.String("workload", "", "built-in workload ("+strings.Join(WorkloadNames(), ", ")+") or a trace/history file path")
	seed := fs.Uint64("seed", 1, "random seed of the workload generator")
	asJSON := fs.Bool("json", false, "print one JSON object instead of a table")
	trackers := fs.Int("trackers", 0, "number of trackers (default: the workload's)")
	mapSlots := fs.Int("map-slots", 0, "map slots per tracker (default: the workload's)")
	reduceSlots := fs.Int("reduce-slots", 0, "reduce slots per tracker (default: the workload's)")
	svg := fs.String("svg", "", "write a CDF of job slowdown per policy to this SVG file")
	plots := fs.String("plots", "", "write plots (slowdown CDF, slowdown vs job size; SVG and PNG) into this directory")
	jobs := fs.Int("jobs", 0, "number of jobs of a generated workload (default: the source's)")
	load := fs.Float64("load", 0, "offered load of a generated workload (default: the source's)")
	interArrival := fs.Duration("interarrival", 0, "mean inter-arrival time of a generated workload (overrides --load)")
	heartbeat := fs.Duration("heartbeat", 0, "tracker heartbeat interval; 0 offers slots as soon as they free")
	slowstart := fs.Float64("slowstart", -1, "fraction of maps done before reduces start (default: the workload's)")
	hbMaps := fs.Int("heartbeat-maps", 0, "at most this many maps launched per tracker heartbeat (0: as many as free slots; needs --heartbeat)")
	hbReds := fs.Int("heartbeat-reduces", 0, "at most this many reduces launched per tracker heartbeat (0: as many as free slots; needs --heartbeat)")
	setupTask := fs.Duration("job-setup", 0, "Hadoop 1 job setup task: a slot held this long before a job's tasks may start (0: none)")
	cleanupTask := fs.Duration("job-cleanup", 0, "Hadoop 1 job cleanup task: a slot held this long after a job's last task, before it completes (0: none)")
	hadoop1 := fs.Bool("hadoop1", false, "the thesis' Hadoop 1.0.0 cluster overheads: --heartbeat 3s --job-setup 3.5s --job-cleanup 3.5s unless given (docs/policies.md, chapter 4)")
	splitSafe := fs.Bool("split-safe", true, "jobs may be split at a safe point, as if each set mapreduce.job.split.safe=true (only the split and auto preemption mechanisms split)")
	scaleUp := fs.Bool("scale-up", false, "scale-up splits: split a long map (reduce) of a split-safe job when map (reduce) slots stay idle, its remainder run as several maps (reduces) (key preemption.split.scale-up; its fanout: --set preemption.split.scale-up-fanout=N)")
	preemption := fs.String("preemption", "", "preemption mechanism (key preemption.mechanism: kill, checkpoint, adaptive, split, auto; its costs: --set preemption.*)")
	sets := fs.StringArray("set", nil, "policy, speculator or straggler-injector configuration key=value (repeatable; speculator keys: mapreduce.job.speculative.*, speculation.*, straggler.*)")
	specMode := fs.String("speculation", SpecNone, "speculative execution: none, fresh (fresh attempts only, Hadoop's speculator) or clone (a fresh attempt or a CRIU clone, whichever the speculator expects to end first)")
	compareSpec := fs.Bool("compare-speculation", false, "simulate each policy with speculation none, fresh and clone side by side (same workload and stragglers)")
	stragFlags := []struct{ flag, key string }{
		{"straggler-fraction", speculator.KeyStragglerFraction},
		{"straggler-shape", speculator.KeyStragglerShape},
		{"straggler-location", speculator.KeyStragglerLocation},
		{"straggler-max-factor", speculator.KeyStragglerMaxFactor},
		{"straggler-seed", speculator.KeyStragglerSeed},
		{"straggler-scope", speculator.KeyStragglerScope},
	}
	for _, sf := range stragFlags {
		k := speculatorKey(sf.key)
		fs.String(sf.flag, k.Default, k.Description+" (key "+sf.key+")")
	}
	imageMap := fs.Float64("clone-image-mb-map", float64(DefaultCloneImageMap)/1e6, "CRIU image size of a map attempt in MB (10^6 bytes): the clone cost's image/B term")
	imageRed := fs.Float64("clone-image-mb-reduce", float64(DefaultCloneImageReduce)/1e6, "CRIU image size of a reduce attempt in MB")
	fileMap := fs.Float64("clone-fileset-mb-map", 0, "file set copied with a map's clone in MB: the clone cost's file set/B_copy term")
	fileRed := fs.Float64("clone-fileset-mb-reduce", 0, "file set copied with a reduce's clone in MB")
	defEst := speculator.DefaultParams().Estimator
	cloneTVM := fs.Duration("clone-tvm", defEst.TVM, "true fixed cost t_vm of a clone (the speculator's prior is "+speculator.KeyTVM+")")
	cloneB := fs.Float64("clone-image-bandwidth", defEst.ImageBps, "true image throughput B of dump plus restore, bytes/s (prior: "+speculator.KeyImageBandwidth+")")
	cloneBCopy := fs.Float64("clone-copy-bandwidth", defEst.CopyBps, "true file-set copy throughput B_copy, bytes/s (prior: "+speculator.KeyCopyBandwidth+")")
	dumpShare := fs.Float64("clone-dump-share", DefaultDumpShare, "share of t_vm + image/B spent dumping, while the original is frozen, in (0, 1]")
	jobsOut := fs.String("jobs-out", "", "write per-job records (JSON lines, one per job and policy) to this file")
	traceOut := fs.String("write-trace", "", "write the workload as a trace file (JSON lines) to this path")
	knowledge := fs.String("knowledge", "", "what policies are told of a job at submission: history (the profile of earlier runs of jobs with its name, as the JobTracker builds it from its history, and the size it predicts), oracle (the job's own true profile and size) or none (default: the workload's; the deadline workloads: oracle, others: history)")
	details := fs.String("details", "", "write every metric of every policy as JSON to this file")
	seedList := fs.String("seeds", "", "run every policy on each of these seeds (ranges and lists: 1-20, 1,3,5) and print each metric's mean and 95% confidence interval (with --json: per seed too)")
	parallel := fs.Int("parallel", 0, "simulations run at once with --seeds or --check (0: GOMAXPROCS)")
	check := fs.Bool("check", false, "compare the simulator with the sources' reference numbers (--claims) on --seeds (default "+DefaultCheckSeeds+") and print per claim reproduced or not, with the margin")
	claimsFile := fs.String("claims", "", "claims file for --check (default: the built-in sim/testdata/claims.tsv)")
	claimsOnly := fs.String("only", "", "with --check: only the claims whose id starts with one of these comma-separated prefixes")
	strict := fs.Bool("strict", false, "with --check: exit non-zero when a claim is not reproduced")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return nil
		}
		return fmt.Errorf("sim: %w", err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("sim: unexpected arguments %q", fs.Args())
	}
	if *hadoop1 {
		for name, v := range map[string]*time.Duration{"heartbeat": heartbeat, "job-setup": setupTask, "job-cleanup": cleanupTask} {
			if !fs.Lookup(name).Changed {
				*v = Hadoop1Overheads[name]
			}
		}
	}
	var policies []string
	if *policy != "" {
		policies = append(policies, *policy)
	}
	for _, p := range strings.Split(*compare, ",") {
		if p = strings.TrimSpace(p); p != "" && !contains(policies, p) {
			policies = append(policies, p)
		}
	}
	if *check {
		seeds := DefaultCheckSeeds
		if *seedList != "" {
			seeds = *seedList
		}
		ss, err := ParseSeeds(seeds)
		if err != nil {
			return fmt.Errorf("sim: --seeds: %w", err)
		}
		claims, err := LoadClaims(*claimsFile)
		if err != nil {
			return fmt.Errorf("sim: --check: %w", err)
		}
		claims = FilterClaims(claims, *claimsOnly)
		if len(claims) == 0 {
			return fmt.Errorf("sim: --check: no claim matches --only %q", *claimsOnly)
		}
		outcomes, err := CheckClaims(ctx, claims, ss, *parallel, stderr)
		if err != nil {
			return fmt.Errorf("sim: --check: %w", err)
		}
		if *asJSON {
			err = WriteCheckJSON(stdout, ss, outcomes)
		} else {
			err = WriteCheckTable(stdout, ss, outcomes)
		}
		if err != nil {
			return fmt.Errorf("sim: %w", err)
		}
		if n := notReproduced(outcomes); n > 0 && *strict {
			return fmt.Errorf("sim: --check: %d of %d claims not reproduced", n, len(outcomes))
		}
		return nil
	}
	if len(policies) == 0 {
		return errors.New("sim: name a policy with --policy or several with --compare")
	}
	if *workload == "" {
		return errors.New("sim: name a workload with --workload")
	}
	conf := map[string]string{}
	for _, s := range *sets {
		k, v, ok := strings.Cut(s, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return fmt.Errorf("sim: --set %q: want key=value", s)
		}
		conf[strings.TrimSpace(k)] = v
	}
	if *preemption != "" {
		conf["preemption.mechanism"] = *preemption
	}
	if fs.Changed("scale-up") {
		conf[preempt.KeyScaleUp] = strconv.FormatBool(*scaleUp)
	}
	if *knowledge != KnowOracle {
		for _, k := range []string{"scheduler.sita.predictor", "scheduler.comp.predictor"} {
			if conf[k] == "oracle" {
				fmt.Fprintf(stderr, "sim: note: %s=oracle predicts a job's size from what the job is told at submission (--knowledge); "+
					"with history knowledge a job whose name ran before gets its profile's estimate, and any other gets none "+
					"(size 0, the first partition), as on the runtime; --knowledge oracle gives every job its true size\n", k)
			}
		}
	}
	for _, sf := range stragFlags {
		if f := fs.Lookup(sf.flag); f.Changed {
			conf[sf.key] = f.Value.String()
		}
	}
	for name, mb := range map[string]float64{"clone-image-mb-map": *imageMap, "clone-image-mb-reduce": *imageRed,
		"clone-fileset-mb-map": *fileMap, "clone-fileset-mb-reduce": *fileRed} {
		if !(mb >= 0) || math.IsInf(mb, 0) || (mb == 0 && strings.Contains(name, "image")) {
			return fmt.Errorf("sim: --%s %v: want a finite size in MB, > 0 for an image, >= 0 for a file set", name, mb)
		}
	}
	clone := CloneModel{
		ImageBytes:   [2]int64{int64(math.Round(*imageMap * 1e6)), int64(math.Round(*imageRed * 1e6))},
		FileSetBytes: [2]int64{int64(math.Round(*fileMap * 1e6)), int64(math.Round(*fileRed * 1e6))},
		TVM:          *cloneTVM, ImageBps: *cloneB, CopyBps: *cloneBCopy, DumpShare: *dumpShare,
	}
	if *cloneTVM < 0 || !(*cloneB > 0) || !(*cloneBCopy > 0) || !(*dumpShare > 0 && *dumpShare <= 1) {
		return fmt.Errorf("sim: clone cost --clone-tvm %v, --clone-image-bandwidth %g, --clone-copy-bandwidth %g, --clone-dump-share %g: want t_vm >= 0, bandwidths > 0 and a share in (0, 1]",
			*cloneTVM, *cloneB, *cloneBCopy, *dumpShare)
	}
	modes := []string{*specMode}
	if *compareSpec {
		modes = SpeculationModes()
	} else if !contains(SpeculationModes(), *specMode) {
		return fmt.Errorf("sim: --speculation %q: want %s", *specMode, strings.Join(SpeculationModes(), ", "))
	}
	gen := GenOptions{Seed: *seed, Jobs: *jobs, Load: *load, InterArrival: *interArrival}
	if *seedList != "" {
		ss, err := ParseSeeds(*seedList)
		if err != nil {
			return fmt.Errorf("sim: --seeds: %w", err)
		}
		if len(modes) > 1 || *svg != "" || *plots != "" || *jobsOut != "" || *details != "" || *traceOut != "" {
			return errors.New("sim: --seeds prints aggregates only: --compare-speculation, --svg, --plots, --jobs-out, --details and --write-trace take one --seed")
		}
		start := time.Now()
		rep, err := RunSeeds(ctx, SeedExperiment{Workload: *workload, Gen: gen, Policies: policies, Seeds: ss, Parallel: *parallel,
			Options: Options{Conf: conf, Trackers: *trackers, MapSlots: *mapSlots, ReduceSlots: *reduceSlots,
				Heartbeat: *heartbeat, HeartbeatMaps: *hbMaps, HeartbeatReduces: *hbReds, SetupTask: *setupTask, CleanupTask: *cleanupTask,
				Slowstart: *slowstart, Knowledge: *knowledge, Preemption: PreemptionModel{Splittable: *splitSafe}, Speculation: Speculation{Mode: *specMode, Clone: clone}}})
		if err != nil {
			return fmt.Errorf("sim: %w", err)
		}
		fmt.Fprintf(stderr, "sim: %d policies × %d seeds on %s in %v\n", len(policies), len(ss), *workload, time.Since(start).Round(time.Millisecond))
		if *asJSON {
			return rep.WriteJSON(stdout)
		}
		return rep.WriteTable(stdout)
	}
	w, err := LoadWorkload(*workload, gen)
	if err != nil {
		return fmt.Errorf("sim: %w", err)
	}
	if *traceOut != "" {
		if err := writeFile(*traceOut, func(f io.Writer) error { return WriteTrace(f, w) }); err != nil {
			return fmt.Errorf("sim: %w", err)
		}
	}
	var results []*Result
	for _, p := range policies {
		for _, mode := range modes {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("sim: %w", err)
			}
			start := time.Now()
			r, err := Run(w, Options{Policy: p, Conf: conf, Trackers: *trackers, MapSlots: *mapSlots, ReduceSlots: *reduceSlots,
				Heartbeat: *heartbeat, HeartbeatMaps: *hbMaps, HeartbeatReduces: *hbReds, SetupTask: *setupTask, CleanupTask: *cleanupTask,
				Slowstart: *slowstart, Knowledge: *knowledge, Preemption: PreemptionModel{Splittable: *splitSafe}, Speculation: Speculation{Mode: mode, Clone: clone}})
			if err != nil {
				return fmt.Errorf("sim: %w", err)
			}
			fmt.Fprintf(stderr, "sim: %s on %s: %d jobs in %v\n", r.Label(len(modes) > 1 || mode != SpecNone), w.Name, len(r.Jobs), time.Since(start).Round(time.Millisecond))
			results = append(results, r)
		}
	}
	if *svg != "" {
		title := fmt.Sprintf("Job slowdown CDF, %s (seed %d)", w.Name, *seed)
		if err := writeFile(*svg, func(f io.Writer) error { return WriteSlowdownCDF(f, title, results) }); err != nil {
			return fmt.Errorf("sim: %w", err)
		}
	}
	if *plots != "" {
		if err := os.MkdirAll(*plots, 0o755); err != nil {
			return fmt.Errorf("sim: --plots: %w", err)
		}
		if err := WritePlots(*plots, fmt.Sprintf("%s (seed %d)", w.Name, *seed), results); err != nil {
			return fmt.Errorf("sim: %w", err)
		}
	}
	if *jobsOut != "" {
		err := writeFile(*jobsOut, func(f io.Writer) error {
			enc := json.NewEncoder(f)
			for _, r := range results {
				for _, j := range r.Jobs {
					spec := ""
					if r.Speculation != nil {
						spec = r.Speculation.Mode
					}
					rec := struct {
						Policy      string `json:"policy"`
						Speculation string `json:"speculation,omitempty"`
						JobRecord
					}{r.Policy, spec, j}
					if err := enc.Encode(rec); err != nil {
						return err
					}
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("sim: %w", err)
		}
	}
	if *details != "" {
		err := writeFile(*details, func(f io.Writer) error {
			type detail struct {
				Policy      string     `json:"policy"`
				Speculation *SpecStats `json:"speculation,omitempty"`
				Summary     Summary    `json:"summary"`
			}
			var ds []detail
			for _, r := range results {
				ds = append(ds, detail{r.Policy, r.Speculation, r.Summary})
			}
			enc := json.NewEncoder(f)
			enc.SetIndent("", "  ")
			return enc.Encode(map[string]any{"workload": w.Name, "seed": *seed, "description": w.Description, "policies": ds})
		})
		if err != nil {
			return fmt.Errorf("sim: %w", err)
		}
	}
	if *asJSON {
		return NewReport(w.Name, *seed, results).WriteJSON(stdout)
	}
	fmt.Fprintln(stdout, w.Description)
	if w.Deadlines != "" {
		fmt.Fprintln(stdout, "deadlines: "+w.Deadlines)
	}
	return WriteTable(stdout, w.Name, *seed, results)
}

// Hadoop1Overheads are the settings of --hadoop1: Hadoop 1.0.0's 3 s
// minimum heartbeat interval (a 20-node cluster heartbeats at the minimum;
// no out-of-band heartbeat), and job setup and cleanup tasks that together
// cost the 7-10 s per job by which the thesis' real Hadoop 1.0.0 runs
// exceeded its simulator (thesis §5.4.2, Table 5.2).
var Hadoop1Overheads = map[string]time.Duration{"heartbeat": 3 * time.Second, "job-setup": 3500 * time.Millisecond, "job-cleanup": 3500 * time.Millisecond}

// LoadWorkload generates a built-in workload or reads a trace file.
func LoadWorkload(name string, opt GenOptions) (*Workload, error) {
	if contains(WorkloadNames(), name) {
		return Generate(name, opt)
	}
	if _, err := os.Stat(name); err != nil {
		return nil, fmt.Errorf("workload %q is neither built-in (%s) nor a readable trace file: %w", name, strings.Join(WorkloadNames(), ", "), err)
	}
	return ReadTraceFile(name)
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
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

// speculatorKey is the speculator's description of a configuration key.
func speculatorKey(name string) conf.Key {
	for _, k := range speculator.Keys() {
		if k.Name == name {
			return k
		}
	}
	return conf.Key{Name: name}
}
