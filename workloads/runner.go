package workloads

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"gomr/jobtracker"
	"gomr/mr"
	"gomr/mr/fs"
	"gomr/mrpb"
)

// Client is what the runner needs of a JobTracker client: run jobs, list
// the TaskTrackers, fetch a job's history, and direct the progress lines
// and counters it prints. *jobtracker.Client is one, through
// ProgressClient.
type Client interface {
	mr.JobClient
	Trackers(ctx context.Context) ([]*mrpb.TrackerStatus, error)
	History(ctx context.Context, jobID string) ([]byte, error)
	// SetOut directs the progress lines and counters of the jobs run
	// from now on.
	SetOut(w io.Writer)
}

// ProgressClient makes a *jobtracker.Client a Client.
type ProgressClient struct{ *jobtracker.Client }

// SetOut sets the client's Out.
func (c ProgressClient) SetOut(w io.Writer) { c.Out = w }

// Cluster is what the runner runs jobs on.
type Cluster struct {
	// Client is connected to the JobTracker.
	Client Client
	// Embedded tells that the JobTracker and TaskTrackers run in this
	// process (their task children are its children); otherwise the
	// monitor samples the TaskTracker processes it finds on this machine.
	Embedded bool
}

// Runner prepares and runs workloads and writes their reports.
type Runner struct {
	Config  *Config
	Cluster Cluster
	// Out receives progress and check lines (and the log of each run).
	Out io.Writer
	// Defines are the runtime configuration overrides (-D key=value)
	// given to the command, recorded with each run's configuration.
	Defines []string
	// DaemonLog, if set, is where the embedded cluster's daemons log: each
	// run's log takes in their lines while it lasts.
	DaemonLog *Tee
}

// Tee writes to W and, while set, to a second writer: the embedded
// daemons' log, copied into the log of the run under way.
type Tee struct {
	W     io.Writer
	mu    sync.Mutex
	extra io.Writer
}

// Write writes p to W and to the second writer, if set.
func (t *Tee) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.extra != nil {
		t.extra.Write(p) // the run's log; W's result is the one that counts
	}
	return t.W.Write(p)
}

// set sets the second writer (nil: none).
func (t *Tee) set(w io.Writer) {
	if t == nil {
		return
	}
	t.mu.Lock()
	t.extra = w
	t.mu.Unlock()
}

// Measurement is one line of the report.
type Measurement struct {
	Type     string // HadoopWordcount, HadoopDfsioe-read...
	Bytes    int64
	Duration time.Duration
	End      time.Time
	Trackers int
}

// Env is a workload's view of one prepare or run.
type Env struct {
	w      *Workload
	r      *Runner
	client *recordingClient
	log    io.Writer
	// In and Out are the workload's input and output folders:
	// <data dir>/<Title>/Input and Output, as HiBench lays them out.
	In, Out string
	meas    []Measurement
}

// Str returns the value of the workload's parameter (for the profile) or
// setting called param.
func (e *Env) Str(param string) string { return e.r.Config.Value(e.w.Name, param) }

// Int returns the integer value of the workload's parameter param.
func (e *Env) Int(param string) int64 { return e.r.Config.Int(e.w.Name, param) }

// Logf writes a line to the run's log.
func (e *Env) Logf(format string, args ...any) {
	fmt.Fprintf(e.log, "[%s] %s: %s\n", time.Now().Format("15:04:05.000"), e.w.Name, fmt.Sprintf(format, args...))
}

// Jobs returns the results of the jobs run so far.
func (e *Env) Jobs() []*mr.JobResult { return e.client.results() }

// App runs a registered app with args on the cluster.
func (e *Env) App(ctx context.Context, name string, args ...string) error {
	app, err := mr.LookupApp(name)
	if err != nil {
		return &MissingAppError{Workload: e.w.Name, Apps: []string{name}}
	}
	e.Logf("mr %s %s", name, strings.Join(args, " "))
	if err := app.Run(ctx, e.client, args); err != nil {
		return fmt.Errorf("workload %s: app %s: %w", e.w.Name, name, err)
	}
	return nil
}

// Measure times fn and records a report line of type Hadoop<Title><suffix>
// whose input size is that of the data under input ("" for none).
func (e *Env) Measure(ctx context.Context, suffix, input string, fn func() error) error {
	var size int64
	if input != "" {
		var err error
		if size, err = DirSize(input); err != nil {
			return fmt.Errorf("workload %s: sizing the input: %w", e.w.Name, err)
		}
	}
	return e.MeasureBytes(ctx, suffix, size, fn)
}

// MeasureBytes is Measure with the input size given.
func (e *Env) MeasureBytes(ctx context.Context, suffix string, size int64, fn func() error) error {
	start := time.Now()
	if err := fn(); err != nil {
		return err
	}
	end := time.Now()
	trackers := 1
	if ts, err := e.r.Cluster.Client.Trackers(ctx); err == nil && len(ts) > 0 {
		trackers = len(ts)
	}
	m := Measurement{Type: "Hadoop" + e.w.Title() + suffix, Bytes: size, Duration: end.Sub(start), End: end, Trackers: trackers}
	e.meas = append(e.meas, m)
	e.Logf("%s: %d bytes in %s s", m.Type, m.Bytes, seconds(m.Duration))
	return nil
}

// recordingClient passes jobs to the cluster's client and keeps their
// results: the run's job ids and counters.
type recordingClient struct {
	mr.JobClient
	mu   sync.Mutex
	jobs []*mr.JobResult
}

// RunJob runs the job and records its result.
func (c *recordingClient) RunJob(ctx context.Context, spec *mr.JobSpec) (*mr.JobResult, error) {
	res, err := c.JobClient.RunJob(ctx, spec)
	if res != nil {
		c.mu.Lock()
		c.jobs = append(c.jobs, res)
		c.mu.Unlock()
	}
	return res, err
}

func (c *recordingClient) results() []*mr.JobResult {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*mr.JobResult(nil), c.jobs...)
}

// env builds the Env of workload name, checking that its apps are built
// in.
func (r *Runner) env(name string, log io.Writer) (*Env, error) {
	w := Lookup(name)
	if w == nil {
		return nil, fmt.Errorf("unknown workload %q (workloads: %s)", name, strings.Join(Names(), ", "))
	}
	if !r.Config.Has(name) {
		return nil, fmt.Errorf("workload %s has no conf file %s", name, filepath.Join(r.Config.Dir, name+".conf"))
	}
	if err := w.CheckApps(); err != nil {
		return nil, err
	}
	data, err := absData(r.Config.Global.DataDir)
	if err != nil {
		return nil, err
	}
	base := fs.Join(data, w.Title())
	return &Env{w: w, r: r, client: &recordingClient{JobClient: r.Cluster.Client}, log: log,
		In: fs.Join(base, "Input"), Out: fs.Join(base, "Output")}, nil
}

// absData makes a plain data path absolute: the tasks run elsewhere.
func absData(p string) (string, error) {
	if strings.Contains(p, "://") {
		return p, nil
	}
	return filepath.Abs(p)
}

// Prepare writes the input of workload name, replacing any.
func (r *Runner) Prepare(ctx context.Context, name string) error {
	e, err := r.env(name, r.Out)
	if err != nil {
		return err
	}
	r.Cluster.Client.SetOut(r.Out)
	if e.w.NoInput {
		e.Logf("prepare: nothing to prepare")
		return nil
	}
	if err := removeAll(e.In); err != nil {
		return err
	}
	start := time.Now()
	e.Logf("prepare (profile %s) into %s", r.Config.Global.Profile, e.In)
	if err := e.w.Prepare(ctx, e); err != nil {
		return err
	}
	size, err := DirSize(e.In)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	e.Logf("prepared %d bytes in %s s", size, seconds(time.Since(start)))
	return nil
}

// Run runs workload name on its prepared input, checks the output,
// appends its lines to the report and writes the run's folder. It returns
// the report lines.
func (r *Runner) Run(ctx context.Context, name string) ([]Measurement, error) {
	w := Lookup(name)
	if w == nil {
		return nil, fmt.Errorf("unknown workload %q (workloads: %s)", name, strings.Join(Names(), ", "))
	}
	if err := w.CheckApps(); err != nil {
		return nil, err
	}
	dir, err := r.runDir(name)
	if err != nil {
		return nil, err
	}
	logf, err := os.Create(filepath.Join(dir, "log.txt"))
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	log := io.MultiWriter(r.Out, logf)
	e, err := r.env(name, log)
	if err != nil {
		return nil, err
	}
	r.Cluster.Client.SetOut(log)
	r.DaemonLog.set(logf)
	defer func() {
		r.Cluster.Client.SetOut(r.Out)
		r.DaemonLog.set(nil)
	}()
	if _, err := os.Stat(localOf(e.In)); err != nil && !w.NoInput && !strings.Contains(e.In, "://") {
		return nil, fmt.Errorf("workload %s: no input at %s: run mr workload prepare %s first", name, e.In, name)
	}
	if err := removeAll(e.Out); err != nil {
		return nil, err
	}
	e.Logf("run (profile %s) on %s, folder %s", r.Config.Global.Profile, e.In, dir)
	targets, note := r.monitorTargets(ctx)
	if note != "" {
		e.Logf("monitor: %s", note)
	}
	mon := StartMonitor(targets, note, time.Duration(r.Config.Global.MonitorMs)*time.Millisecond)
	start := time.Now()
	runErr := w.Run(ctx, e)
	samples := mon.Stop()
	if runErr != nil {
		e.Logf("FAILED: %v", runErr)
	}
	werr := r.writeRunDir(ctx, dir, e, samples, start)
	if runErr != nil {
		return nil, runErr
	}
	if werr != nil {
		return nil, werr
	}
	if err := AppendReport(r.Config.Global.Report, e.meas); err != nil {
		return nil, err
	}
	for _, m := range e.meas {
		fmt.Fprint(r.Out, FormatReportLine(m))
	}
	return e.meas, nil
}

// localOf is the local path of p (p itself when it is not a file URI).
func localOf(p string) string {
	if lp, err := fs.LocalPath(p); err == nil {
		return lp
	}
	return p
}

// runDir makes <report dir>/<name>/<date-time>/.
func (r *Runner) runDir(name string) (string, error) {
	base := filepath.Join(filepath.Dir(r.Config.Global.Report), name, time.Now().Format("20060102-150405"))
	dir := base
	for i := 2; ; i++ {
		err := os.MkdirAll(filepath.Dir(dir), 0o755)
		if err == nil {
			err = os.Mkdir(dir, 0o755)
		}
		if err == nil {
			return dir, nil
		}
		if !os.IsExist(err) {
			return "", fmt.Errorf("making the run folder: %w", err)
		}
		dir = fmt.Sprintf("%s-%d", base, i)
	}
}

// monitorTargets says which processes the monitor samples: this process
// for the embedded cluster, otherwise the processes of this machine that
// serve the cluster's TaskTrackers; the note names those it cannot sample.
func (r *Runner) monitorTargets(ctx context.Context) ([]Target, string) {
	if r.Cluster.Embedded {
		return []Target{{Label: "mr process (embedded JobTracker and TaskTrackers) with its task children", PID: os.Getpid()}}, ""
	}
	trackers, err := r.Cluster.Client.Trackers(ctx)
	if err != nil {
		return nil, fmt.Sprintf("The TaskTrackers could not be listed (%v): nothing sampled but the network.", err)
	}
	targets, elsewhere := TrackerTargets(trackers)
	if len(elsewhere) > 0 {
		return targets, fmt.Sprintf("Not sampled, not on this machine: %s.", strings.Join(elsewhere, ", "))
	}
	return targets, ""
}

// writeRunDir writes the run's folder: jobs.txt, conf.txt, counters.txt,
// history/, monitor.html and monitor.csv (log.txt is written as the run
// goes).
func (r *Runner) writeRunDir(ctx context.Context, dir string, e *Env, samples *Samples, start time.Time) error {
	var errs []error
	write := func(name string, fill func(w io.Writer)) {
		var b strings.Builder
		fill(&b)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(b.String()), 0o644); err != nil {
			errs = append(errs, err)
		}
	}
	jobs := e.client.results()
	write("jobs.txt", func(w io.Writer) {
		for _, j := range jobs {
			fmt.Fprintf(w, "%s\t%s\n", j.ID, j.State)
		}
	})
	write("conf.txt", func(w io.Writer) {
		fmt.Fprintf(w, "# workload %s, profile %s, conf directory %s\n", e.w.Name, r.Config.Global.Profile, r.Config.Dir)
		for _, file := range []string{GlobalFile, e.w.Name + ".conf"} {
			for _, en := range r.Config.Entries[file] {
				src := en.File
				if en.Line > 0 {
					src = fmt.Sprintf("%s:%d", en.File, en.Line)
				}
				fmt.Fprintf(w, "%-50s %-24s # %s\n", en.Key, en.Value, src)
			}
		}
		for _, d := range r.Defines {
			fmt.Fprintf(w, "# -D %s\n", d)
		}
	})
	write("counters.txt", func(w io.Writer) {
		for _, j := range jobs {
			fmt.Fprintf(w, "== %s %s\n", j.ID, j.State)
			jobtracker.PrintCounters(w, j.Counters)
		}
	})
	for _, j := range jobs {
		if j.ID == "" {
			continue
		}
		hctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		data, err := r.Cluster.Client.History(hctx, j.ID)
		cancel()
		if err != nil {
			errs = append(errs, fmt.Errorf("history of %s: %w", j.ID, err))
			continue
		}
		if err := os.MkdirAll(filepath.Join(dir, "history"), 0o755); err != nil {
			errs = append(errs, err)
			continue
		}
		if err := os.WriteFile(filepath.Join(dir, "history", j.ID+".jsonl"), data, 0o644); err != nil {
			errs = append(errs, err)
		}
	}
	write("monitor.csv", samples.WriteCSV)
	title := fmt.Sprintf("%s (profile %s), run of %s", e.w.Name, r.Config.Global.Profile, start.Format(time.RFC3339))
	write("monitor.html", func(w io.Writer) {
		if err := samples.WriteHTML(w, title); err != nil {
			errs = append(errs, err)
		}
	})
	write("report.txt", func(w io.Writer) {
		io.WriteString(w, ReportHeader())
		for _, m := range e.meas {
			io.WriteString(w, FormatReportLine(m))
		}
	})
	return errors.Join(errs...)
}

// Suite prepares and runs every workload of benchmarks.lst. A workload
// whose apps are not built into this binary is skipped with a line saying
// so; the others all run, and the error names those that failed.
func (r *Runner) Suite(ctx context.Context) error {
	var failed []string
	var errs []error
	for _, name := range r.Config.Benchmarks {
		if err := Lookup(name).CheckApps(); err != nil {
			fmt.Fprintf(r.Out, "skip %s: %v\n", name, err)
			continue
		}
		if err := r.Prepare(ctx, name); err != nil {
			failed, errs = append(failed, name), append(errs, err)
			continue
		}
		if _, err := r.Run(ctx, name); err != nil {
			failed, errs = append(failed, name), append(errs, err)
		}
		if ctx.Err() != nil {
			break
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("workloads failed: %s: %w", strings.Join(failed, ", "), errors.Join(errs...))
	}
	return nil
}
