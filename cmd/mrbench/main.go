// Command mrbench measures the runtime against plain tools doing the same
// work on the same data, as `make bench` runs it:
//
//	go run ./cmd/mrbench -size 1g -bin bin/mr
//
// From one run of each, it prints the wall time of
//
//   - terasort (TeraGen's records, mr local terasort) against GNU sort
//     (LC_ALL=C sort --parallel=2 -S 100M) of the same records in a line
//     form in the spirit of gensort -a;
//   - wordcount against a hand-written Go word count using two goroutines;
//   - grep against a hand-written single-threaded Go regexp match count;
//
// each job's output checked against its baseline's, the peak memory of
// every run, and the latency of an empty job (one map, no input, no
// reduce) on an embedded cluster and on a cluster already running.
//
// Flags: -size (data size, decimal units: 100m, 1g), -bin (the mr binary),
// -work (work directory; default a temporary one, removed afterwards),
// -keep (keep the work directory), -trackers (TaskTrackers of each
// cluster), -reduces (reduces of terasort and wordcount), -only (a comma
// list of terasort, wordcount, grep, empty), -regex (grep's regular
// expression), -runs (empty-job repetitions), -D key=value (configuration
// for every mr command, repeatable), -variant NAME:key=value,... (run the
// terasort and wordcount jobs once more under these settings, on the same
// data and against the same baseline run; repeatable), -json (print the results as JSON
// instead of tables), -strict (exit status 3 when a target is missed).
//
// A failed command or a job output that differs from its baseline's is an
// error: exit status 1.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

func main() {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case baselineArg:
			os.Exit(baselineMain(os.Args[2:]))
		case measureArg:
			os.Exit(measureMain(os.Args[2:]))
		case speculationArg:
			os.Exit(speculationMain(os.Args[2:]))
		case preemptionArg:
			os.Exit(preemptionMain(os.Args[2:]))
		case shuffleArg:
			os.Exit(shuffleMain(os.Args[2:]))
		case shuffleServeArg:
			os.Exit(shuffleServeMain(os.Args[2:]))
		}
	}
	os.Exit(benchMain(os.Args[1:]))
}

// benchmarks returns the names -only accepts, in the order they run.
func benchmarks() []string { return []string{"terasort", "wordcount", "grep", "empty"} }

// bench holds the settings of a run.
type bench struct {
	ctx      context.Context
	bin      string // absolute path of mr
	self     string // absolute path of this binary, for the baselines
	work     string
	size     int64
	trackers int
	reduces  int
	regex    string
	runs     int
	// nextTracker numbers the TaskTrackers the bench starts.
	nextTracker int
	// defines are -D settings given to every mr command.
	defines []string
	// variants are the configurations terasort's and wordcount's jobs run
	// under (-variant); none: one run with defines.
	variants []variant
	// commands are the commands the bench ran, as shell lines, for the
	// record.
	commands []string
}

func benchMain(args []string) int {
	fl := flag.NewFlagSet("mrbench", flag.ContinueOnError)
	sizeArg := fl.String("size", "1g", "data size of each benchmark, decimal units k, m, g, t (TeraSort: size/100 records)")
	bin := fl.String("bin", "bin/mr", "the mr binary")
	work := fl.String("work", "", "work directory (default: a temporary directory, removed afterwards)")
	keep := fl.Bool("keep", false, "keep the work directory")
	trackers := fl.Int("trackers", 2, "TaskTrackers of each cluster")
	reduces := fl.Int("reduces", 2, "reduce tasks of terasort and wordcount (mapreduce.job.reduces)")
	only := fl.String("only", strings.Join(benchmarks(), ","), "comma-separated benchmarks to run: "+strings.Join(benchmarks(), ", "))
	regex := fl.String("regex", `qu[a-z]*`, "grep's regular expression")
	runs := fl.Int("runs", 5, "runs of the empty job (the median is reported)")
	asJSON := fl.Bool("json", false, "print the results as JSON on stdout instead of tables")
	strict := fl.Bool("strict", false, "exit with status 3 when a target is missed (errors always exit 1)")
	var defines []string
	fl.Func("D", "configuration key=value for every mr command the bench runs (repeatable)", func(v string) error {
		if k, _, ok := strings.Cut(v, "="); !ok || k == "" {
			return fmt.Errorf("want key=value, got %q", v)
		}
		defines = append(defines, v)
		return nil
	})
	var variants []variant
	fl.Func("variant", "NAME:key=value[,key=value...]: run the terasort and wordcount jobs once under these settings (added to -D's) on the same data, beside the other variants; repeatable (default: one run with -D's only)", func(v string) error {
		name, kvs, ok := strings.Cut(v, ":")
		if !ok || name == "" || strings.ContainsAny(name, "/ ") {
			return fmt.Errorf("want NAME:key=value[,key=value...], got %q", v)
		}
		vr := variant{name: name}
		for _, kv := range strings.Split(kvs, ",") {
			if kv == "" {
				continue
			}
			if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
				return fmt.Errorf("variant %s: want key=value, got %q", name, kv)
			}
			vr.defines = append(vr.defines, kv)
		}
		variants = append(variants, vr)
		return nil
	})
	if err := fl.Parse(args); err != nil {
		return 2
	}
	fail := func(format string, a ...any) int {
		fmt.Fprintf(os.Stderr, "mrbench: "+format+"\n", a...)
		return 2
	}
	if fl.NArg() > 0 {
		return fail("unexpected argument %q", fl.Arg(0))
	}
	size, err := parseSize(*sizeArg)
	if err != nil {
		return fail("-size: %v", err)
	}
	if size < 10_000 {
		return fail("-size %s: want at least 10k", *sizeArg)
	}
	if *trackers < 1 || *reduces < 1 || *runs < 1 {
		return fail("-trackers %d, -reduces %d and -runs %d must be at least 1", *trackers, *reduces, *runs)
	}
	selected := map[string]bool{}
	for _, name := range strings.Split(*only, ",") {
		name = strings.TrimSpace(name)
		if !slices.Contains(benchmarks(), name) {
			return fail("-only: unknown benchmark %q (want some of %s)", name, strings.Join(benchmarks(), ","))
		}
		selected[name] = true
	}
	b := &bench{size: size, trackers: *trackers, reduces: *reduces, regex: *regex, runs: *runs, defines: defines, variants: variants}
	if b.bin, err = filepath.Abs(*bin); err != nil {
		return fail("-bin %s: %v", *bin, err)
	}
	if st, err := os.Stat(b.bin); err != nil || st.IsDir() {
		return fail("-bin %s: not a file (make build first): %v", b.bin, err)
	}
	if b.self, err = os.Executable(); err != nil {
		return fail("finding this program's binary for the baselines: %v", err)
	}
	if selected["terasort"] {
		if _, err := exec.LookPath("sort"); err != nil {
			return fail("terasort's baseline needs GNU sort: %v", err)
		}
	}
	if *work == "" {
		if b.work, err = os.MkdirTemp("", "mrbench-"); err != nil {
			return fail("creating a work directory: %v", err)
		}
		if !*keep {
			defer os.RemoveAll(b.work)
		}
	} else {
		if b.work, err = filepath.Abs(*work); err != nil {
			return fail("-work %s: %v", *work, err)
		}
		if err := os.MkdirAll(b.work, 0o755); err != nil {
			return fail("-work: %v", err)
		}
	}
	if *keep {
		fmt.Fprintln(os.Stderr, "mrbench: work directory", b.work)
	}
	ctx, cancel := signalContext()
	defer cancel()
	b.ctx = ctx

	variantSettings := map[string][]string{}
	for _, v := range variants {
		variantSettings[v.name] = v.defines
	}
	rep := &report{Size: size, SizeArg: *sizeArg, Machine: describeMachine(), Settings: map[string]any{
		"trackers": b.trackers, "reduces": b.reduces, "regex": b.regex, "empty_job_runs": b.runs,
		"defines": defines, "variants": variantSettings,
	}}
	progress("%s; data size %s", rep.Machine.Summary(), humanBytes(size))
	start := time.Now()
	failed := false
	record := func(r *result, err error) {
		if err != nil {
			failed = true
			progress("FAILED: %v", err)
			if r == nil {
				return
			}
			r.Error = err.Error()
		}
		rep.Results = append(rep.Results, r)
	}
	// want tells whether to run a benchmark: selected, and not
	// interrupted.
	want := func(names ...string) bool {
		if ctx.Err() != nil {
			return false
		}
		for _, n := range names {
			if selected[n] {
				return true
			}
		}
		return false
	}
	// recordAll records the results of the variants of one benchmark, the
	// error with the last.
	recordAll := func(name string, rs []*result, err error) {
		if len(rs) == 0 {
			record(&result{Name: name}, err)
			return
		}
		for i, r := range rs {
			if i < len(rs)-1 {
				record(r, nil)
			} else {
				record(r, err)
			}
		}
	}
	if want("terasort") {
		rs, err := b.teraSort()
		recordAll("terasort", rs, err)
	}
	if want("wordcount", "grep") {
		text, err := b.makeText()
		if err != nil {
			record(&result{Name: "text input"}, err)
		} else {
			if want("wordcount") {
				rs, err := b.wordCount(text)
				recordAll("wordcount", rs, err)
			}
			if want("grep") {
				record(b.grep(text))
			}
			os.RemoveAll(filepath.Dir(text))
		}
	}
	if want("empty") {
		rs, err := b.emptyJobs()
		for _, r := range rs {
			rep.Results = append(rep.Results, r)
		}
		if err != nil {
			record(&result{Name: "empty job"}, err)
		}
	}
	if ctx.Err() != nil {
		progress("interrupted")
		failed = true
	}
	rep.Commands = b.commands
	rep.Seconds = time.Since(start).Seconds()
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return fail("writing JSON: %v", err)
		}
	} else {
		rep.print(os.Stdout)
	}
	missed := false
	for _, r := range rep.Results {
		if r.Error != "" {
			failed = true
		}
		missed = missed || !r.Pass
	}
	switch {
	case failed:
		return 1
	case missed && *strict:
		return 3
	}
	return 0
}

// progress reports what the bench is doing on stderr.
func progress(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "mrbench %s: %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, a...))
}
