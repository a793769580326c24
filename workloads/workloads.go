package workloads

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"gomr/mr"
)

// Workload is one benchmark of the suite.
type Workload struct {
	// Name is the workload's name: its conf file, its scripts' folder and
	// the middle of its conf keys (hibench.<name>.<profile>.<param>).
	Name string
	// NoInput tells that the workload reads no prepared input (sleep).
	NoInput bool
	// Apps are the apps its prepare and run need, looked up in the
	// registry before anything runs.
	Apps []string
	// Params are its per-profile sizes; Settings its profile-independent
	// values.
	Params, Settings map[string]Param
	// Prepare writes the input into e.In.
	Prepare func(ctx context.Context, e *Env) error
	// Run runs the measured jobs (through e.Measure) and checks their
	// output.
	Run func(ctx context.Context, e *Env) error
}

// Title is the workload's capitalized name, as HiBench names its data
// folders (Wordcount) and, after "Hadoop", its report lines.
func (w *Workload) Title() string { return strings.ToUpper(w.Name[:1]) + w.Name[1:] }

// keyNames lists the keys a conf file of w may hold, with <profile> for
// the profile.
func (w *Workload) keyNames() []string {
	var out []string
	for _, p := range sortedKeys(w.Params) {
		out = append(out, "hibench."+w.Name+".<profile>."+p)
	}
	for _, s := range sortedKeys(w.Settings) {
		out = append(out, "hibench."+w.Name+"."+s)
	}
	return out
}

// MissingApps returns the apps w needs that are not built into this
// binary.
func (w *Workload) MissingApps() []string {
	var out []string
	for _, a := range w.Apps {
		if _, err := mr.LookupApp(a); err != nil {
			out = append(out, a)
		}
	}
	return out
}

// CheckApps returns an error naming the apps w needs that this binary
// lacks.
func (w *Workload) CheckApps() error {
	if m := w.MissingApps(); len(m) > 0 {
		return &MissingAppError{Workload: w.Name, Apps: m}
	}
	return nil
}

// MissingAppError reports a workload whose apps are not built into this mr.
type MissingAppError struct {
	Workload string
	Apps     []string
}

func (e *MissingAppError) Error() string {
	verb := "is"
	if len(e.Apps) > 1 {
		verb = "are"
	}
	return fmt.Sprintf("workload %s: app %s %s not built into this mr (mr apps lists those that are)",
		e.Workload, strings.Join(e.Apps, ", app "), verb)
}

var registry = map[string]*Workload{}

func register(w *Workload) { registry[w.Name] = w }

// Lookup returns the workload called name, or nil.
func Lookup(name string) *Workload { return registry[name] }

// Names lists the workloads by name.
func Names() []string {
	out := make([]string, 0, len(registry))
	for n := range registry {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func intParam(doc string, min int64) Param { return Param{Doc: doc, Int: true, Min: min} }

func init() {
	register(&Workload{
		Name:     "wordcount",
		Apps:     []string{"wordcount"},
		Params:   map[string]Param{"datasize": intParam("input bytes (random text)", 1)},
		Prepare:  prepareText,
		Run:      runWordcount,
		Settings: map[string]Param{},
	})
	register(&Workload{
		Name:     "grep",
		Apps:     []string{"grep"},
		Params:   map[string]Param{"datasize": intParam("input bytes (random text)", 1)},
		Settings: map[string]Param{"regex": {Doc: "regular expression counted", Default: "pa[a-z]*"}},
		Prepare:  prepareText,
		Run:      runGrep,
	})
	register(&Workload{
		Name:     "sort",
		Apps:     []string{"randomtext", "sort"},
		Params:   map[string]Param{"datasize": intParam("input bytes (random text)", 1)},
		Settings: map[string]Param{},
		Prepare:  prepareText,
		Run:      runSort,
	})
	register(&Workload{
		Name:     "terasort",
		Apps:     []string{"teragen", "terasort", "teravalidate"},
		Params:   map[string]Param{"datasize": intParam("rows of 100 bytes", 1)},
		Settings: map[string]Param{},
		Prepare: func(ctx context.Context, e *Env) error {
			return e.App(ctx, "teragen", strconv.FormatInt(e.Int("datasize"), 10), e.In)
		},
		Run: runTerasort,
	})
	register(&Workload{
		Name:    "sleep",
		NoInput: true,
		Apps:    []string{"sleep"},
		Params: map[string]Param{
			"maps":           intParam("map tasks", 1),
			"reduces":        intParam("reduce tasks", 0),
			"map.seconds":    intParam("seconds each map sleeps", 0),
			"reduce.seconds": intParam("seconds each reduce sleeps", 0),
		},
		Settings: map[string]Param{},
		Prepare:  func(context.Context, *Env) error { return nil },
		Run:      runSleep,
	})
	register(&Workload{
		Name: "dfsioe",
		Apps: []string{"dfsio"},
		Params: map[string]Param{
			"read.number_of_files":  intParam("files read", 1),
			"read.file_size":        intParam("MB per file read", 1),
			"write.number_of_files": intParam("files written", 1),
			"write.file_size":       intParam("MB per file written", 1),
		},
		Settings: map[string]Param{},
		Prepare:  prepareDfsio,
		Run:      runDfsio,
	})
	register(&Workload{
		Name: "pagerank",
		Apps: []string{"webgraph", "pagerank"},
		Params: map[string]Param{
			"pages":          intParam("pages of the generated web graph", 1),
			"num_iterations": intParam("PageRank iterations", 1),
		},
		Settings: map[string]Param{},
		Prepare: func(ctx context.Context, e *Env) error {
			return e.App(ctx, "webgraph", e.Str("pages"), e.In)
		},
		Run: func(ctx context.Context, e *Env) error {
			return runAndCheckNonEmpty(ctx, e, "pagerank", e.In, e.Out, e.Str("num_iterations"))
		},
	})
	register(&Workload{
		Name: "kmeans",
		Apps: []string{"kmeansgen", "kmeans"},
		Params: map[string]Param{
			"num_of_clusters": intParam("clusters the generated points are drawn around", 1),
			"dimensions":      intParam("dimensions of a point", 1),
			"num_of_samples":  intParam("points generated", 1),
			"k":               intParam("clusters sought", 1),
			"max_iteration":   intParam("k-means iterations", 1),
		},
		Settings: map[string]Param{},
		Prepare: func(ctx context.Context, e *Env) error {
			return e.App(ctx, "kmeansgen", e.Str("num_of_samples"), e.Str("num_of_clusters"), e.Str("dimensions"), e.In)
		},
		Run: func(ctx context.Context, e *Env) error {
			return runAndCheckNonEmpty(ctx, e, "kmeans", e.In, e.Out, e.Str("k"), e.Str("max_iteration"))
		},
	})
}

// prepareText writes datasize bytes of random text into e.In: with the
// randomtext app when it is built in, otherwise with this process's own
// generator (WriteRandomText).
func prepareText(ctx context.Context, e *Env) error {
	size := e.Int("datasize")
	if _, err := mr.LookupApp("randomtext"); err == nil {
		return e.App(ctx, "randomtext", strconv.FormatInt(size, 10), e.In)
	}
	e.Logf("app randomtext is not built into this mr: writing %d bytes of random text from this process", size)
	words, err := WriteRandomText(e.In, size, textFiles(size), 1)
	if err != nil {
		return err
	}
	e.Logf("wrote %d words in %d files to %s", words, textFiles(size), e.In)
	return nil
}

// textFiles is the number of files of a random text input: one per 64 MiB,
// at least 2 so that the maps run in parallel.
func textFiles(size int64) int {
	n := int((size + 64<<20 - 1) / (64 << 20))
	return max(n, 2)
}

func runWordcount(ctx context.Context, e *Env) error {
	if err := e.Measure(ctx, "", e.In, func() error { return e.App(ctx, "wordcount", e.In, e.Out) }); err != nil {
		return err
	}
	want, err := CountWords(e.In)
	if err != nil {
		return err
	}
	got, err := SumOutputCounts(e.Out, 1)
	if err != nil {
		return err
	}
	if got != want {
		return fmt.Errorf("wordcount check: the output's counts add up to %d, the input %s has %d words", got, e.In, want)
	}
	e.Logf("check: the counts add up to the input's %d words", want)
	return nil
}

func runGrep(ctx context.Context, e *Env) error {
	expr := e.Str("regex")
	if err := e.Measure(ctx, "", e.In, func() error { return e.App(ctx, "grep", e.In, e.Out, expr) }); err != nil {
		return err
	}
	want, err := CountMatches(e.In, expr)
	if err != nil {
		return err
	}
	got, err := SumOutputCounts(e.Out, 0)
	if err != nil {
		return err
	}
	if got != want {
		return fmt.Errorf("grep check: the output's counts add up to %d, a direct count of %q in %s finds %d", got, expr, e.In, want)
	}
	e.Logf("check: %d matches of %q, as a direct count finds", want, expr)
	return nil
}

func runSort(ctx context.Context, e *Env) error {
	if err := e.Measure(ctx, "", e.In, func() error { return e.App(ctx, "sort", e.In, e.Out) }); err != nil {
		return err
	}
	in, err := CountLines(e.In)
	if err != nil {
		return err
	}
	out, err := CheckSorted(e.Out)
	if err != nil {
		return err
	}
	if in != out {
		return fmt.Errorf("sort check: the output %s has %d lines, the input %s %d", e.Out, out, e.In, in)
	}
	e.Logf("check: %d lines in total order", out)
	return nil
}

func runTerasort(ctx context.Context, e *Env) error {
	if err := e.Measure(ctx, "", e.In, func() error { return e.App(ctx, "terasort", e.In, e.Out) }); err != nil {
		return err
	}
	report := e.Out + "-validate"
	if err := removeAll(report); err != nil {
		return err
	}
	if err := e.App(ctx, "teravalidate", e.Out, report); err != nil {
		return fmt.Errorf("terasort check: %w", err)
	}
	e.Logf("check: teravalidate found %s sorted", e.Out)
	return nil
}

func runSleep(ctx context.Context, e *Env) error {
	args := []string{"-m", e.Str("maps"), "-r", e.Str("reduces"),
		"-mt", strconv.FormatInt(e.Int("map.seconds")*1000, 10),
		"-rt", strconv.FormatInt(e.Int("reduce.seconds")*1000, 10)}
	n := len(e.Jobs())
	if err := e.Measure(ctx, "", "", func() error { return e.App(ctx, "sleep", args...) }); err != nil {
		return err
	}
	jobs := e.Jobs()[n:]
	if len(jobs) == 0 {
		return fmt.Errorf("sleep check: the sleep app ran no job")
	}
	for _, j := range jobs {
		if !j.Succeeded() {
			return fmt.Errorf("sleep check: job %s ended %s", j.ID, j.State)
		}
	}
	e.Logf("check: job %s succeeded", jobs[len(jobs)-1].ID)
	return nil
}

// prepareDfsio writes the files the run reads, with dfsio -write; its
// result goes beside the input folder (Input-prepare-result).
func prepareDfsio(ctx context.Context, e *Env) error {
	result := e.In + "-prepare-result"
	if err := removeAll(result); err != nil {
		return err
	}
	return e.App(ctx, "dfsio", "-write", "-files", e.Str("read.number_of_files"),
		"-size", strconv.FormatInt(e.Int("read.file_size")<<20, 10), e.In, result)
}

// dfsioFields are the fields a TestDFSIO result holds (Hadoop's names).
var dfsioFields = []string{"Number of files", "Total MBytes processed", "Throughput mb/sec"}

func runDfsio(ctx context.Context, e *Env) error {
	type phase struct{ mode, files, size, dir string }
	phases := []phase{
		{"read", e.Str("read.number_of_files"), strconv.FormatInt(e.Int("read.file_size")<<20, 10), e.In},
		{"write", e.Str("write.number_of_files"), strconv.FormatInt(e.Int("write.file_size")<<20, 10), e.Out + "/write-data"},
	}
	for _, p := range phases {
		result := e.Out + "/" + p.mode + "-result"
		bytes := mustInt(p.files) * mustInt(p.size)
		err := e.MeasureBytes(ctx, "-"+p.mode, bytes, func() error {
			return e.App(ctx, "dfsio", "-"+p.mode, "-files", p.files, "-size", p.size, p.dir, result)
		})
		if err != nil {
			return err
		}
		text, err := ReadAll(result)
		if err != nil {
			return fmt.Errorf("dfsioe check: %w", err)
		}
		for _, f := range dfsioFields {
			if !strings.Contains(strings.ToLower(text), strings.ToLower(f)) {
				return fmt.Errorf("dfsioe check: the %s result %s has no field %q", p.mode, result, f)
			}
		}
		e.Logf("check: the %s result has the fields %s", p.mode, strings.Join(dfsioFields, ", "))
	}
	return nil
}

func mustInt(s string) int64 { n, _ := strconv.ParseInt(s, 10, 64); return n }

// runAndCheckNonEmpty runs app (in, out, rest...) measured on in's size and
// checks that out holds data.
func runAndCheckNonEmpty(ctx context.Context, e *Env, app, in, out string, rest ...string) error {
	args := append([]string{in, out}, rest...)
	if err := e.Measure(ctx, "", in, func() error { return e.App(ctx, app, args...) }); err != nil {
		return err
	}
	size, err := DirSize(out)
	if err != nil {
		return fmt.Errorf("%s check: %w", app, err)
	}
	if size == 0 {
		return fmt.Errorf("%s check: the output %s is empty", app, out)
	}
	e.Logf("check: the output holds %d bytes", size)
	return nil
}

// seconds formats a duration as HiBench does: seconds with 3 decimals.
func seconds(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'f', 3, 64) }
