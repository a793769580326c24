package main

import (
	"crypto/sha256"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// speculationArg selects the speculation benchmark (make bench-speculation):
//
//	mrbench speculation -size 1g -bin bin/mr [-apps terasort,wordcount] [-shapes 1,2,10] [-seeds 1,2,3]
//
// For each app, straggler shape and straggler seed it runs the same job on
// the same input three times on an embedded cluster: without speculation,
// with fresh speculative attempts only, and with the choice between fresh
// attempts and CRIU clones. The straggler injector slows every task by a
// factor k drawn per task (scope "task", so that the three runs of a shape
// and seed meet the same stragglers) from LogNormal(location, shape), at
// most -max-factor; speculative attempts are not slowed. A job of a few
// tasks meets one or two serious stragglers, so one seed decides a run by
// a single draw: the verdicts compare the sums over the seeds.
const speculationArg = "speculation"

// specMode is one of the three systems compared.
type specMode struct {
	name    string
	defines []string
}

var specModes = []specMode{
	{"none", []string{"mapreduce.map.speculative=false", "mapreduce.reduce.speculative=false"}},
	{"fresh", []string{"mapreduce.map.speculative=true", "mapreduce.reduce.speculative=true", "speculation.clone.enabled=false"}},
	{"clone", []string{"mapreduce.map.speculative=true", "mapreduce.reduce.speculative=true", "speculation.clone.enabled=true"}},
}

// specRun is one job run of the benchmark.
type specRun struct {
	App      string           `json:"app"`
	Shape    float64          `json:"shape"`
	Seed     int              `json:"seed"`
	Mode     string           `json:"mode"`
	Seconds  float64          `json:"seconds"`
	Command  string           `json:"command"`
	Counters map[string]int64 `json:"counters"`
	Check    string           `json:"check"`
}

// specReport is what the benchmark measured.
type specReport struct {
	Size     int64          `json:"size_bytes"`
	Machine  machine        `json:"machine"`
	Settings map[string]any `json:"settings"`
	Runs     []*specRun     `json:"runs"`
	Commands []string       `json:"commands"`
}

func speculationMain(args []string) int {
	fl := flag.NewFlagSet("mrbench speculation", flag.ContinueOnError)
	sizeArg := fl.String("size", "1g", "input size of each app")
	bin := fl.String("bin", "bin/mr", "the mr binary")
	work := fl.String("work", "", "work directory (default: a temporary one, removed afterwards)")
	keep := fl.Bool("keep", false, "keep the work directory")
	apps := fl.String("apps", "terasort,wordcount", "apps to run: terasort, wordcount")
	shapesArg := fl.String("shapes", "1,2,10", "straggler shapes (sigma of the log-normal factor)")
	location := fl.Float64("location", -1, "straggler location (mu of the log-normal factor)")
	maxFactor := fl.Float64("max-factor", 10, "largest straggler factor k")
	fraction := fl.Float64("fraction", 1, "fraction of tasks slowed")
	seedsArg := fl.String("seeds", "1,2,3", "straggler seeds: each shape runs once per seed, and the verdicts compare sums over them")
	maps := fl.Int("maps", 8, "map tasks per job (the split size is the input size over this)")
	reduces := fl.Int("reduces", 2, "reduce tasks per job")
	trackers := fl.Int("trackers", 2, "TaskTrackers")
	asJSON := fl.Bool("json", false, "print JSON instead of tables")
	var retryAfter time.Duration
	fl.DurationVar(&retryAfter, "retry-after-speculate", 1*time.Second, "mapreduce.job.speculative.retry-after-speculate of the runs (Hadoop's 15s suits minute-long tasks)")
	estimator := fl.String("estimator", "smoothed", "speculation.estimator of every run: legacy (Hadoop's default) or smoothed (Hadoop's exponentially smoothed estimator, which sees a reduce crawling late)")
	var lambda time.Duration
	fl.DurationVar(&lambda, "smooth-lambda", 4*time.Second, "speculation.smooth-lambda of every run (Hadoop's 60s scaled as retry-after-speculate is, 15s to 1s)")
	var defines []string
	fl.Func("D", "configuration key=value for every mr command (repeatable)", func(v string) error {
		defines = append(defines, v)
		return nil
	})
	if err := fl.Parse(args); err != nil {
		return 2
	}
	fail := func(format string, a ...any) int {
		fmt.Fprintf(os.Stderr, "mrbench speculation: "+format+"\n", a...)
		return 2
	}
	size, err := parseSize(*sizeArg)
	if err != nil {
		return fail("-size: %v", err)
	}
	var shapes []float64
	for _, s := range strings.Split(*shapesArg, ",") {
		f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil || f < 0 {
			return fail("-shapes: bad shape %q", s)
		}
		shapes = append(shapes, f)
	}
	var seeds []int
	for _, s := range strings.Split(*seedsArg, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			return fail("-seeds: bad seed %q", s)
		}
		seeds = append(seeds, n)
	}
	appList := strings.Split(*apps, ",")
	for _, a := range appList {
		if a != "terasort" && a != "wordcount" {
			return fail("-apps: unknown app %q (want terasort, wordcount)", a)
		}
	}
	if *maps < 1 || *reduces < 1 || *trackers < 1 {
		return fail("-maps, -reduces and -trackers must be at least 1")
	}
	b := &bench{size: size, trackers: *trackers, reduces: *reduces}
	if b.bin, err = filepath.Abs(*bin); err != nil {
		return fail("-bin: %v", err)
	}
	if _, err := os.Stat(b.bin); err != nil {
		return fail("-bin %s: %v (make build first)", b.bin, err)
	}
	if b.self, err = os.Executable(); err != nil {
		return fail("finding this program's binary (it measures the runs): %v", err)
	}
	if *work == "" {
		if b.work, err = os.MkdirTemp("", "mrbench-spec-"); err != nil {
			return fail("%v", err)
		}
		if !*keep {
			defer os.RemoveAll(b.work)
		}
	} else {
		if b.work, err = filepath.Abs(*work); err != nil {
			return fail("-work: %v", err)
		}
		if err := os.MkdirAll(b.work, 0o755); err != nil {
			return fail("-work: %v", err)
		}
	}
	ctx, cancel := signalContext()
	defer cancel()
	b.ctx = ctx
	split := max(size/int64(*maps), 1<<20)
	b.defines = append([]string{
		"mapreduce.input.fileinputformat.split.maxsize=" + strconv.FormatInt(split, 10),
		"mapreduce.job.reduces=" + strconv.Itoa(*reduces),
		"straggler.fraction=" + strconv.FormatFloat(*fraction, 'g', -1, 64),
		"straggler.scope=task",
		"straggler.location=" + strconv.FormatFloat(*location, 'g', -1, 64),
		"straggler.max-factor=" + strconv.FormatFloat(*maxFactor, 'g', -1, 64),
		// Tasks here last seconds, not Hadoop's minutes: scan again after
		// a speculation sooner than its 15 s.
		"mapreduce.job.speculative.retry-after-speculate=" + retryAfter.String(),
		"speculation.estimator=" + *estimator,
		"speculation.smooth-lambda=" + lambda.String(),
	}, defines...)
	rep := &specReport{Size: size, Machine: describeMachine(), Settings: map[string]any{
		"apps": appList, "shapes": shapes, "location": *location, "max_factor": *maxFactor, "fraction": *fraction,
		"seeds": seeds, "maps": *maps, "reduces": *reduces, "trackers": *trackers, "defines": b.defines,
	}}
	progress("%s; input %s per app", rep.Machine.Summary(), humanBytes(size))
	failed := false
	for _, app := range appList {
		if ctx.Err() != nil {
			break
		}
		runs, err := b.speculationApp(app, shapes, seeds)
		rep.Runs = append(rep.Runs, runs...)
		if err != nil {
			progress("FAILED: %v", err)
			failed = true
		}
	}
	rep.Commands = b.commands
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(rep)
	} else {
		rep.print(os.Stdout)
	}
	if failed || ctx.Err() != nil {
		return 1
	}
	return 0
}

// speculationApp generates the app's input once and runs the job for each
// shape, seed and mode, checking every output against the first run's.
func (b *bench) speculationApp(app string, shapes []float64, seeds []int) ([]*specRun, error) {
	dir := filepath.Join(b.work, app)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	in := filepath.Join(dir, "in")
	switch app {
	case "terasort":
		rows := b.size / teraRecLen
		progress("%s: teragen %d rows", app, rows)
		if _, err := b.exec(false, b.mrLocal("teragen", []string{"straggler.fraction=0"}, "teragen", strconv.FormatInt(rows, 10), in)); err != nil {
			return nil, fmt.Errorf("%s: generating the input: %w", app, err)
		}
	case "wordcount":
		if err := os.MkdirAll(in, 0o755); err != nil {
			return nil, err
		}
		progress("%s: writing %s of text", app, humanBytes(b.size))
		if _, err := writeText(filepath.Join(in, "input.txt"), b.size); err != nil {
			return nil, err
		}
	}
	var runs []*specRun
	reference := ""
	for _, shape := range shapes {
		for _, seed := range seeds {
			for _, m := range specModes {
				if b.ctx.Err() != nil {
					return runs, b.ctx.Err()
				}
				out := filepath.Join(dir, fmt.Sprintf("out-%g-%d-%s", shape, seed, m.name))
				name := fmt.Sprintf("%s-shape%g-seed%d-%s", app, shape, seed, m.name)
				progress("%s: shape %g, seed %d, %s", app, shape, seed, m.name)
				defs := append([]string{"straggler.shape=" + strconv.FormatFloat(shape, 'g', -1, 64),
					"straggler.seed=" + strconv.Itoa(seed)}, m.defines...)
				c := b.mrLocal(name, defs, app, in, out)
				st, err := b.exec(true, c)
				if err != nil {
					return runs, fmt.Errorf("%s: %w", name, err)
				}
				r := &specRun{App: app, Shape: shape, Seed: seed, Mode: m.name, Seconds: st.Wall.Seconds(), Command: c.String()}
				if r.Counters, err = jobCounters(c.log); err != nil {
					return runs, fmt.Errorf("%s: %w", name, err)
				}
				sum, err := outputDigest(out)
				if err != nil {
					return runs, fmt.Errorf("%s: %w", name, err)
				}
				if reference == "" {
					reference = sum
				} else if sum != reference {
					return runs, fmt.Errorf("%s: output differs from the first run's (%s vs %s)", name, sum, reference)
				}
				r.Check = "output identical to the first run's: " + sum
				runs = append(runs, r)
				os.RemoveAll(out)
			}
		}
	}
	return runs, nil
}

var counterLine = regexp.MustCompile(`^\s+([A-Z_]+)=(-?\d+)$`)

// jobCounters reads the counters mr local printed at the end of its log.
func jobCounters(log string) (map[string]int64, error) {
	data, err := os.ReadFile(log)
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for _, l := range strings.Split(string(data), "\n") {
		if m := counterLine.FindStringSubmatch(l); m != nil {
			n, _ := strconv.ParseInt(m[2], 10, 64)
			out[m[1]] = n
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no counters in %s", log)
	}
	return out, nil
}

// outputDigest is a digest of a job's part files in name order.
func outputDigest(dir string) (string, error) {
	files, err := partFiles(dir)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	var n int64
	for _, p := range files {
		f, err := os.Open(p)
		if err != nil {
			return "", err
		}
		m, err := io.Copy(h, f)
		f.Close()
		if err != nil {
			return "", err
		}
		n += m
	}
	return fmt.Sprintf("%d bytes, sha256 %x", n, h.Sum(nil)[:8]), nil
}

// modeSum is what the runs of one mode of an (app, shape) add up to over
// the seeds.
type modeSum struct {
	seconds   float64
	perSeed   []string
	spec      int64
	clones    int64
	cloneCost []int64 // bytes, dump, transfer, restore ms
}

func (rep *specReport) print(w io.Writer) {
	fmt.Fprintf(w, "Speculation benchmark: %s, input %s per app\n", rep.Machine.Summary(), humanBytes(rep.Size))
	fmt.Fprintf(w, "settings: %v\n\n", rep.Settings)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "app\tshape\tnone s\tfresh s\tclone s\tfresh/none\tclone/none\tclone/fresh\tspec (fresh runs)\tspec, clones (clone runs)\ttarget")
	type key struct {
		app   string
		shape float64
	}
	sums := map[key]map[string]*modeSum{}
	var keys []key
	for _, r := range rep.Runs {
		k := key{r.App, r.Shape}
		if sums[k] == nil {
			sums[k] = map[string]*modeSum{}
			keys = append(keys, k)
		}
		m := sums[k][r.Mode]
		if m == nil {
			m = &modeSum{cloneCost: make([]int64, 4)}
			sums[k][r.Mode] = m
		}
		m.seconds += r.Seconds
		m.perSeed = append(m.perSeed, fmt.Sprintf("%.1f", r.Seconds))
		m.spec += r.Counters["SPECULATIVE_MAPS"] + r.Counters["SPECULATIVE_REDUCES"]
		m.clones += r.Counters["CLONES_LAUNCHED"]
		for i, c := range []string{"CLONE_BYTES", "CLONE_DUMP_MILLIS", "CLONE_TRANSFER_MILLIS", "CLONE_RESTORE_MILLIS"} {
			m.cloneCost[i] += r.Counters[c]
		}
	}
	var costs, seedLines []string
	for _, k := range keys {
		m := sums[k]
		none, fresh, clone := m["none"], m["fresh"], m["clone"]
		if none == nil || fresh == nil || clone == nil || len(none.perSeed) != len(fresh.perSeed) || len(none.perSeed) != len(clone.perSeed) {
			continue
		}
		target, ok := "", false
		if k.shape == 2 {
			ok = clone.seconds <= 0.8*none.seconds && clone.seconds < fresh.seconds
			target = "clone ≤ 0.8 none and < fresh"
		} else {
			ok = clone.seconds <= fresh.seconds
			target = "clone ≤ fresh"
		}
		verdict := "missed"
		switch {
		case ok:
			verdict = "met"
		case clone.clones == 0 && k.shape != 2:
			// No clone was made: the clone runs ran the same system as
			// the fresh runs, and their difference is run-to-run noise.
			verdict = "met (no clone made: the same system as fresh)"
		}
		fmt.Fprintf(tw, "%s\t%g\t%.1f\t%.1f\t%.1f\t%.2f\t%.2f\t%.2f\t%d\t%d, %d\t%s: %s\n", k.app, k.shape,
			none.seconds, fresh.seconds, clone.seconds, fresh.seconds/none.seconds, clone.seconds/none.seconds,
			clone.seconds/fresh.seconds, fresh.spec, clone.spec, clone.clones, target, verdict)
		seedLines = append(seedLines, fmt.Sprintf("%s shape %g: none %s; fresh %s; clone %s", k.app, k.shape,
			strings.Join(none.perSeed, " "), strings.Join(fresh.perSeed, " "), strings.Join(clone.perSeed, " ")))
		if n := clone.clones; n > 0 {
			c := clone.cloneCost
			costs = append(costs, fmt.Sprintf("%s shape %g: %d clones, per clone %.0f MB, dump %d ms, copy %d ms, restore %d ms",
				k.app, k.shape, n, float64(c[0])/float64(n)/1e6, c[1]/n, c[2]/n, c[3]/n))
		}
	}
	tw.Flush()
	fmt.Fprintln(w, "\nTimes are sums over the seeds; each seed's run (s), in seed order:")
	for _, l := range seedLines {
		fmt.Fprintln(w, "  "+l)
	}
	if len(costs) > 0 {
		fmt.Fprintln(w, "\nClone costs (means, from the job counters; dump includes waiting for the quiet point):")
		for _, c := range costs {
			fmt.Fprintln(w, "  "+c)
		}
	}
	fmt.Fprintln(w, "\nCommands (* timed):")
	for _, c := range slices.Compact(rep.Commands) {
		fmt.Fprintln(w, c)
	}
}
