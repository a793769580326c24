package replay

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"gomr/jobtracker"
	"gomr/jobtracker/jobhistory"
	"gomr/mr"
	"gomr/sim"
)

// A trace entry that names an app (sim.Job.App, docs/trace-format.md) is
// replayed by running that app for real, through the app's own driver, on
// an input of the entry's input_bytes made before the replay starts (with
// the runtime's generator apps: randomtext for wordcount, grep and sort,
// teragen for terasort; sleep has none). Its jobs carry the entry's name
// (the second and later jobs of a multi-job app, such as grep's sort
// stage, "<name>/2"...), pool, priority and deadline. Its record in the
// run is its jobs together: submitted with the first, finished with the
// last, with all their attempts.

// appGenerators are the generator apps that make an app's input, and
// their first argument from the input's size in bytes.
var appGenerators = map[string]struct {
	app  string
	size func(bytes int64) string
}{
	"wordcount": {"randomtext", func(b int64) string { return strconv.FormatInt(b, 10) }},
	"grep":      {"randomtext", func(b int64) string { return strconv.FormatInt(b, 10) }},
	"sort":      {"randomtext", func(b int64) string { return strconv.FormatInt(b, 10) }},
	"terasort":  {"teragen", func(b int64) string { return strconv.FormatInt((b+99)/100, 10) }},
}

// appArgs is the argument list of an app entry's run: its input and output
// then the entry's app_args, or the app_args alone for sleep.
func appArgs(j *sim.Job, in, out string) []string {
	if _, ok := appGenerators[j.App]; !ok {
		return append([]string(nil), j.AppArgs...)
	}
	return append([]string{in, out}, j.AppArgs...)
}

// CheckApps checks every app entry of w as its run will be made: the app
// and its generator are built into this binary, and the app accepts the
// arguments. name is the trace's, for the errors.
func CheckApps(w *sim.Workload, name string) error {
	for i := range w.Jobs {
		j := &w.Jobs[i]
		if j.App == "" {
			continue
		}
		app, err := mr.LookupApp(j.App)
		if err != nil {
			return fmt.Errorf("trace %s: job %s: field app: %w", name, j.ID, err)
		}
		if g, ok := appGenerators[j.App]; ok {
			if _, err := mr.LookupApp(g.app); err != nil {
				return fmt.Errorf("trace %s: job %s: field app: %s needs its input generator: %w", name, j.ID, j.App, err)
			}
		}
		if err := app.CheckArgs(appArgs(j, "in", "out")); err != nil {
			return fmt.Errorf("trace %s: job %s: field app_args: %w", name, j.ID, err)
		}
	}
	return nil
}

// prepareApps makes the input of every app entry of w under dir, before
// the replay starts; it returns the inputs by job index.
func prepareApps(ctx context.Context, client *jobtracker.Client, w *sim.Workload, dir string) (map[int]string, error) {
	inputs := map[int]string{}
	for i := range w.Jobs {
		j := &w.Jobs[i]
		g, ok := appGenerators[j.App]
		if j.App == "" || !ok {
			continue
		}
		app, err := mr.LookupApp(g.app)
		if err != nil {
			return nil, fmt.Errorf("trace job %s: %w", j.ID, err)
		}
		in := filepath.Join(dir, fmt.Sprintf("input-%s-%d", safeName(j.ID), i))
		jc := &appClient{client: client}
		if err := app.Run(ctx, jc, []string{g.size(j.InputBytes), in}); err != nil {
			return nil, fmt.Errorf("trace job %s: preparing the input of %s with %s: %w", j.ID, j.App, g.app, err)
		}
		inputs[i] = in
	}
	return inputs, nil
}

// appClient is the JobClient an app runs with in a replay: it submits
// each job with the trace entry's name, pool, priority and deadline (job
// nil: as the app made it), waits for it without printing, and records
// the job ids.
type appClient struct {
	client *jobtracker.Client
	job    *sim.Job
	// onSubmit is called with every job id as it is submitted.
	onSubmit func(id string)
	mu       sync.Mutex
	ids      []string
}

func (c *appClient) Conf(key string) string { return c.client.Conf(key) }

func (c *appClient) RunJob(ctx context.Context, spec *mr.JobSpec) (*mr.JobResult, error) {
	if j := c.job; j != nil {
		c.mu.Lock()
		n := len(c.ids)
		c.mu.Unlock()
		spec.Name = j.Name
		if n > 0 {
			spec.Name = fmt.Sprintf("%s/%d", j.Name, n+1)
		}
		spec.Pool, spec.Priority, spec.DeadlineSeconds = j.Pool, j.Priority, j.Deadline.Seconds()
	}
	id, err := c.client.Submit(ctx, spec)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.ids = append(c.ids, id)
	c.mu.Unlock()
	if c.onSubmit != nil {
		c.onSubmit(id)
	}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		st, err := c.client.Status(ctx, id)
		if err != nil {
			return nil, fmt.Errorf("job %s: %w", id, err)
		}
		switch st.State {
		case jobtracker.StateSucceeded, jobtracker.StateFailed, jobtracker.StateKilled:
			res := &mr.JobResult{ID: id, State: st.State, Error: st.Error, Counters: jobtracker.CountersOf(st)}
			if !res.Succeeded() {
				return res, fmt.Errorf("job %s %s: %s", id, st.State, st.Error)
			}
			return res, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-tick.C:
		}
	}
}

// jobIDs returns the ids of the jobs submitted so far.
func (c *appClient) jobIDs() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.ids...)
}

// appHistory collects the histories of an app entry's jobs into its record
// (mergeHistories) and appends it to the run's.
func appHistory(ctx context.Context, client *jobtracker.Client, run *Run, jr *JobRun) error {
	var recs []*jobhistory.Record
	for _, id := range jr.AppJobs {
		data, err := client.History(ctx, id)
		if err != nil {
			return fmt.Errorf("history of job %s (%s): %w", id, jr.Trace.ID, err)
		}
		rec, err := jobhistory.Parse(data)
		if err != nil {
			return fmt.Errorf("history of job %s (%s): %w", id, jr.Trace.ID, err)
		}
		recs = append(recs, rec)
	}
	rec, data, err := mergeHistories(jr.Trace.Name, jr.Submitted, recs)
	if err != nil {
		return fmt.Errorf("trace job %s: %w", jr.Trace.ID, err)
	}
	jr.History = rec
	run.HistoryJSONL = append(run.HistoryJSONL, data...)
	return nil
}

// mergeHistories makes one record of an app entry's jobs: the first job's
// line, named name, submitted when the app started (start: its driver's
// own work, such as terasort's sampling, counts) and finished with the last,
// its task counts the sums, its state the first that is not SUCCEEDED;
// the attempts of all. It returns the record and its JSON lines.
func mergeHistories(name string, start time.Time, recs []*jobhistory.Record) (*jobhistory.Record, []byte, error) {
	if len(recs) == 0 {
		return nil, nil, fmt.Errorf("no job history")
	}
	m := &jobhistory.Record{Job: recs[0].Job}
	m.Job.Name = name
	if !start.IsZero() && start.Before(m.Job.Submit) {
		m.Job.Submit = start
	}
	m.Job.Counters = nil
	for k, r := range recs {
		if k > 0 {
			m.Job.Maps += r.Job.Maps
			m.Job.Reduces += r.Job.Reduces
			if r.Job.Finish.After(m.Job.Finish) {
				m.Job.Finish = r.Job.Finish
			}
			if m.Job.State == jobtracker.StateSucceeded && r.Job.State != jobtracker.StateSucceeded {
				m.Job.State, m.Job.Error = r.Job.State, r.Job.Error
			}
		}
		m.Attempts = append(m.Attempts, r.Attempts...)
	}
	var out []byte
	line, err := json.Marshal(m.Job)
	if err != nil {
		return nil, nil, fmt.Errorf("history of %s: %w", name, err)
	}
	out = append(append(out, line...), '\n')
	for _, a := range m.Attempts {
		line, err := json.Marshal(a)
		if err != nil {
			return nil, nil, fmt.Errorf("history of %s: %w", name, err)
		}
		out = append(append(out, line...), '\n')
	}
	return m, out, nil
}
