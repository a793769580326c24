package sim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"gomr/partitions"
)

// Command is the `mr sim` subcommand: it simulates one policy, or several
// side by side, on a built-in workload or a trace file, and prints a table
// or (--json) one JSON object.
func Command(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := pflag.NewFlagSet("sim", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	policy := fs.String("policy", "", "scheduling policy to simulate (one of "+strings.Join(partitions.Names(), ", ")+")")
	compare := fs.String("compare", "", "comma-separated policies to simulate side by side (with --policy, that one first)")
	workload := fs.String("workload", "", "built-in workload ("+strings.Join(WorkloadNames(), ", ")+") or a trace/history file path")
	seed := fs.Uint64("seed", 1, "random seed of the workload generator")
	asJSON := fs.Bool("json", false, "print one JSON object instead of a table")
	trackers := fs.Int("trackers", 0, "number of trackers (default: the workload's)")
	mapSlots := fs.Int("map-slots", 0, "map slots per tracker (default: the workload's)")
	reduceSlots := fs.Int("reduce-slots", 0, "reduce slots per tracker (default: the workload's)")
	svg := fs.String("svg", "", "write a CDF of job slowdown per policy to this SVG file")
	jobs := fs.Int("jobs", 0, "number of jobs of a generated workload (default: the source's)")
	load := fs.Float64("load", 0, "offered load of a generated workload (default: the source's)")
	interArrival := fs.Duration("interarrival", 0, "mean inter-arrival time of a generated workload (overrides --load)")
	heartbeat := fs.Duration("heartbeat", 0, "tracker heartbeat interval; 0 offers slots as soon as they free")
	slowstart := fs.Float64("slowstart", -1, "fraction of maps done before reduces start (default: the workload's)")
	sets := fs.StringArray("set", nil, "policy configuration key=value (repeatable)")
	jobsOut := fs.String("jobs-out", "", "write per-job records (JSON lines, one per job and policy) to this file")
	traceOut := fs.String("write-trace", "", "write the workload as a trace file (JSON lines) to this path")
	details := fs.String("details", "", "write every metric of every policy as JSON to this file")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("sim: %w", err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("sim: unexpected arguments %q", fs.Args())
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
	w, err := LoadWorkload(*workload, GenOptions{Seed: *seed, Jobs: *jobs, Load: *load, InterArrival: *interArrival})
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
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("sim: %w", err)
		}
		start := time.Now()
		r, err := Run(w, Options{Policy: p, Conf: conf, Trackers: *trackers, MapSlots: *mapSlots, ReduceSlots: *reduceSlots,
			Heartbeat: *heartbeat, Slowstart: *slowstart})
		if err != nil {
			return fmt.Errorf("sim: %w", err)
		}
		fmt.Fprintf(stderr, "sim: %s on %s: %d jobs in %v\n", p, w.Name, len(r.Jobs), time.Since(start).Round(time.Millisecond))
		results = append(results, r)
	}
	if *svg != "" {
		title := fmt.Sprintf("Job slowdown CDF, %s (seed %d)", w.Name, *seed)
		if err := writeFile(*svg, func(f io.Writer) error { return WriteSlowdownCDF(f, title, results) }); err != nil {
			return fmt.Errorf("sim: %w", err)
		}
	}
	if *jobsOut != "" {
		err := writeFile(*jobsOut, func(f io.Writer) error {
			enc := json.NewEncoder(f)
			for _, r := range results {
				for _, j := range r.Jobs {
					rec := struct {
						Policy string `json:"policy"`
						JobRecord
					}{r.Policy, j}
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
				Policy  string  `json:"policy"`
				Summary Summary `json:"summary"`
			}
			var ds []detail
			for _, r := range results {
				ds = append(ds, detail{r.Policy, r.Summary})
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
