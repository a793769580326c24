// Package replay replays a workload trace on a real cluster and compares
// the run with the simulator (docs/comparison.md): each trace entry
// becomes one job of the synthetic `replay` job (package apps) submitted
// at its (scaled) submit time with its name, pool, priority and deadline;
// the run's job history is turned into the simulator's per-job records and
// metrics (sim.Result), beside sim.Run of the same trace, policy and
// cluster shape. It is the code of `mr workload replay` and `mr workload
// compare`; the traces are read by the simulator's reader (sim.ReadTrace),
// so they are checked exactly as `mr sim` checks them.
package replay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"gomr/apps"
	"gomr/conf"
	"gomr/jobtracker"
	"gomr/jobtracker/jobhistory"
	"gomr/mr"
	"gomr/sim"
)

// Mix is a built-in small mix: a simulator workload generated with few
// jobs and scaled down to run in a few minutes on the embedded cluster of
// a small machine (docs/comparison.md, "Small mixes").
type Mix struct {
	// Name addresses the mix (e.g. hvw-small); Source is the simulator
	// workload it is drawn from.
	Name, Source string
	// Jobs is the number of jobs drawn.
	Jobs int
	// Span is when the last job arrives, after scaling; Load the offered
	// load (task slot-time over the cluster's slot-time during Span).
	Span time.Duration
	Load float64
	// MaxMaps and MaxReduces cap a job's tasks: a job with more is
	// replayed with that many tasks of the same total slot-time, or, with
	// Truncate, with its first MaxMaps maps and MaxReduces reduces (the
	// durations of its tasks kept, its size cut).
	MaxMaps, MaxReduces int
	Truncate            bool
}

// The embedded cluster the small mixes are scaled for: DefaultTrackers
// TaskTrackers of DefaultMapSlots map and DefaultReduceSlots reduce slots.
const (
	DefaultTrackers    = 2
	DefaultMapSlots    = 2
	DefaultReduceSlots = 1
	// MinTask is the shortest task of a scaled mix: shorter ones are
	// lengthened to it, so that a task's launch (a process start, a
	// heartbeat) stays a small part of it.
	MinTask = 300 * time.Millisecond
)

// Mixes are the built-in small mixes.
var Mixes = []Mix{
	{Name: "hvw-small", Source: "tyrex-hvw", Jobs: 20, Span: 120 * time.Second, Load: 0.7, MaxMaps: 12, MaxReduces: 3},
	{Name: "mvw-small", Source: "tyrex-mvw", Jobs: 20, Span: 120 * time.Second, Load: 0.7, MaxMaps: 12, MaxReduces: 3},
	{Name: "lvw-small", Source: "tyrex-lvw", Jobs: 16, Span: 120 * time.Second, Load: 0.7, MaxMaps: 12, MaxReduces: 3},
	{Name: "deadline-fb-small", Source: "deadline-fb", Jobs: 24, Span: 120 * time.Second, Load: 0.6, MaxMaps: 12, MaxReduces: 3, Truncate: true},
}

// MixNames lists the built-in small mixes.
func MixNames() []string {
	var names []string
	for _, m := range Mixes {
		names = append(names, m.Name)
	}
	return names
}

// Load returns the workload a --trace names: a built-in small mix
// (generated with seed), a simulator built-in workload, or a trace or
// history file, read and checked by the simulator's reader.
func Load(name string, seed uint64) (*sim.Workload, error) {
	for _, m := range Mixes {
		if m.Name == name {
			return m.Generate(seed)
		}
	}
	if _, err := os.Stat(name); err != nil && !isSimBuiltin(name) {
		return nil, fmt.Errorf("trace %q is neither a built-in mix (%s), a simulator workload (%s) nor a readable file: %w",
			name, strings.Join(MixNames(), ", "), strings.Join(sim.WorkloadNames(), ", "), err)
	}
	w, err := sim.LoadWorkload(name, sim.GenOptions{Seed: seed})
	if err != nil {
		return nil, err
	}
	if err := CheckApps(w, name); err != nil {
		return nil, err
	}
	return w, nil
}

func isSimBuiltin(name string) bool {
	for _, n := range sim.WorkloadNames() {
		if n == name {
			return true
		}
	}
	return false
}

// Generate draws the mix's jobs from its source workload and scales them
// for the default embedded cluster: tasks are merged down to MaxMaps and
// MaxReduces per job (same slot-time), every duration is multiplied by
// one factor so that the mix's task slot-time is Load of the cluster's
// slot-time over Span, tasks shorter than MinTask are lengthened to it,
// arrivals are stretched or shrunk so that the last comes at Span, and
// deadlines keep their ratio to the job's runtime alone (now on the small
// cluster). Duration-valued policy settings of the source (TAGS timers)
// are scaled by the same factor.
func (m Mix) Generate(seed uint64) (*sim.Workload, error) {
	src, err := sim.Generate(m.Source, sim.GenOptions{Seed: seed, Jobs: m.Jobs})
	if err != nil {
		return nil, fmt.Errorf("mix %s: %w", m.Name, err)
	}
	w := *src
	w.Name = m.Name
	w.Jobs = make([]sim.Job, len(src.Jobs))
	srcMS, srcRS := src.Trackers*src.MapSlots, src.Trackers*src.ReduceSlots
	ms, rs := DefaultTrackers*DefaultMapSlots, DefaultTrackers*DefaultReduceSlots
	total := 0.0
	for i, j := range src.Jobs {
		if m.Truncate {
			j.Maps = truncate(j.Maps, m.MaxMaps)
			j.Reduces = truncate(j.Reduces, m.MaxReduces)
			j.Shuffles = truncate(j.Shuffles, m.MaxReduces)
		} else {
			j.Maps = merge(j.Maps, m.MaxMaps)
			j.Reduces = merge(j.Reduces, m.MaxReduces)
			j.Shuffles = merge(j.Shuffles, m.MaxReduces)
		}
		total += j.Size().Seconds()
		w.Jobs[i] = j
	}
	f := m.Load * float64(ms+rs) * m.Span.Seconds() / total
	last := src.Jobs[len(src.Jobs)-1].Submit
	for i := range w.Jobs {
		j := &w.Jobs[i]
		ratio := 0.0
		if src.Jobs[i].Deadline > 0 {
			// The deadline's ratio to the runtime alone of the job as
			// drawn (before its tasks were cut) on the source cluster.
			ratio = src.Jobs[i].Deadline.Seconds() / sim.AloneRuntime(&src.Jobs[i], srcMS, srcRS, 1).Seconds()
		}
		for _, ds := range [][]time.Duration{j.Maps, j.Reduces} {
			for k := range ds {
				ds[k] = max(scaleDur(ds[k], f), MinTask)
			}
		}
		for k := range j.Shuffles {
			j.Shuffles[k] = scaleDur(j.Shuffles[k], f)
		}
		if last > 0 {
			j.Submit = time.Duration(float64(j.Submit) * float64(m.Span) / float64(last)).Round(time.Millisecond)
		}
		if ratio > 0 {
			j.Deadline = time.Duration(ratio * float64(sim.AloneRuntime(j, ms, rs, 1))).Round(time.Millisecond)
		}
	}
	w.Trackers, w.MapSlots, w.ReduceSlots = DefaultTrackers, DefaultMapSlots, DefaultReduceSlots
	w.Conf = map[string]string{}
	for k, v := range src.Conf {
		w.Conf[k] = v
	}
	if t, ok := w.Conf["scheduler.tyrex.timers"]; ok {
		w.Conf["scheduler.tyrex.timers"] = scaleDurationList(t, f)
	}
	how := "merged"
	if m.Truncate {
		how = "cut"
	}
	w.Description = fmt.Sprintf("%s: %d jobs of %s (seed %d), tasks %s to at most %d maps and %d reduces a job, durations ×%.4f (at least %v), arrivals over %v, load %.2f of %d trackers × (%d map + %d reduce) slots",
		m.Name, len(w.Jobs), m.Source, seed, how, m.MaxMaps, m.MaxReduces, f, MinTask, m.Span, m.Load, DefaultTrackers, DefaultMapSlots, DefaultReduceSlots)
	return &w, nil
}

// merge returns ds with at most n entries of the same total: consecutive
// entries are added together.
func merge(ds []time.Duration, n int) []time.Duration {
	if len(ds) <= n || n <= 0 {
		return append([]time.Duration(nil), ds...)
	}
	out := make([]time.Duration, n)
	for i, d := range ds {
		out[i*n/len(ds)] += d
	}
	return out
}

// truncate returns the first n entries of ds (all when n <= 0).
func truncate(ds []time.Duration, n int) []time.Duration {
	if n > 0 && len(ds) > n {
		ds = ds[:n]
	}
	return append([]time.Duration(nil), ds...)
}

func scaleDur(d time.Duration, f float64) time.Duration {
	return time.Duration(float64(d) * f).Round(time.Millisecond)
}

// scaleDurationList scales a comma-separated list of durations; a value
// that is not one is kept.
func scaleDurationList(s string, f float64) string {
	parts := strings.Split(s, ",")
	for i, p := range parts {
		if d, err := time.ParseDuration(strings.TrimSpace(p)); err == nil {
			parts[i] = scaleDur(d, f).String()
		}
	}
	return strings.Join(parts, ",")
}

// Scale returns a copy of w with every time (submissions, task durations,
// deadlines and duration-valued policy settings) multiplied by x.
func Scale(w *sim.Workload, x float64) (*sim.Workload, error) {
	if !(x > 0) || math.IsInf(x, 0) {
		return nil, fmt.Errorf("time scale %v: want a finite factor > 0", x)
	}
	c := *w
	c.Jobs = make([]sim.Job, len(w.Jobs))
	for i, j := range w.Jobs {
		j.Submit = scaleDur(j.Submit, x)
		j.Deadline = scaleDur(j.Deadline, x)
		for _, p := range []*[]time.Duration{&j.Maps, &j.Reduces, &j.Shuffles} {
			ds := make([]time.Duration, len(*p))
			for k, d := range *p {
				ds[k] = scaleDur(d, x)
			}
			if len(ds) == 0 {
				ds = nil
			}
			*p = ds
		}
		c.Jobs[i] = j
	}
	c.Conf = map[string]string{}
	for k, v := range w.Conf {
		c.Conf[k] = v
	}
	if t, ok := c.Conf["scheduler.tyrex.timers"]; ok && x != 1 {
		c.Conf["scheduler.tyrex.timers"] = scaleDurationList(t, x)
	}
	return &c, nil
}

// Options say how to replay a workload.
type Options struct {
	// ShuffleRatio is the map output (the bytes shuffled) per input byte;
	// ByteScale scales the bytes moved down (or up). A job moves
	// input_bytes × ShuffleRatio × ByteScale bytes.
	ShuffleRatio, ByteScale float64
	// OutputDir holds the jobs' (empty) output directories; it must be
	// reachable by the cluster's TaskTrackers. Empty: a temporary one.
	OutputDir string
	// Progress receives live progress; nil: none. Bar draws a bar,
	// redrawn in place (for a terminal); otherwise a line is printed when
	// the counts change.
	Progress io.Writer
	Bar      bool
	// Poll is how often job statuses are asked (default 250 ms).
	Poll time.Duration
}

// DefaultShuffleRatio and DefaultByteScale are the defaults of Options.
const (
	DefaultShuffleRatio = 1.0
	DefaultByteScale    = 1.0 / 1024
)

// JobRun is one trace job as it ran.
type JobRun struct {
	// Trace is the trace's job.
	Trace *sim.Job
	// ID is the JobTracker's job id; State its final state.
	ID, State, Error string
	// Submitted is when it was submitted.
	Submitted time.Time
	// History is its job history; Counters its final counters.
	History  *jobhistory.Record
	Counters mr.CounterSet
	// AppJobs are the ids of the jobs of an entry that names an app (ID
	// is the first); History is then theirs together (apps.go).
	AppJobs []string
}

// Run is a replayed workload: the trace, when it started (the trace's
// time 0) and each job.
type Run struct {
	Workload *sim.Workload
	Start    time.Time
	Jobs     []JobRun
	// HistoryJSONL is the jobs' history files, concatenated.
	HistoryJSONL []byte
}

// Spec returns the replay job spec of a trace job.
func Spec(j *sim.Job, output string, o Options) (*mr.JobSpec, error) {
	bytes := int64(math.Round(float64(j.InputBytes) * o.ShuffleRatio * o.ByteScale))
	spec, err := apps.ReplayTask{Maps: j.Maps, Reduces: j.Reduces, Shuffles: j.Shuffles,
		InputBytes: j.InputBytes, OutputBytes: bytes}.Spec(j.Name, output)
	if err != nil {
		return nil, fmt.Errorf("trace job %s: %w", j.ID, err)
	}
	spec.Pool, spec.Priority, spec.DeadlineSeconds = j.Pool, j.Priority, j.Deadline.Seconds()
	return spec, nil
}

// Replay submits each job of w at its submit time (from now) through
// client, shows progress, waits for every job to end and collects their
// job histories. A job that fails does not stop the others; its error is
// in its JobRun, and Replay returns an error naming the failed jobs along
// with the run.
func Replay(ctx context.Context, client *jobtracker.Client, w *sim.Workload, o Options) (*Run, error) {
	if o.ShuffleRatio < 0 || o.ByteScale < 0 || math.IsNaN(o.ShuffleRatio) || math.IsNaN(o.ByteScale) {
		return nil, fmt.Errorf("replay: shuffle ratio %v and byte scale %v must be >= 0", o.ShuffleRatio, o.ByteScale)
	}
	if o.Poll <= 0 {
		o.Poll = 250 * time.Millisecond
	}
	out := o.OutputDir
	if out == "" {
		tmp, err := os.MkdirTemp("", "gomr-replay-out-")
		if err != nil {
			return nil, fmt.Errorf("replay: %w", err)
		}
		defer os.RemoveAll(tmp)
		out = tmp
	}
	if err := CheckApps(w, w.Name); err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	stamp := time.Now().Format("20060102-150405.000")
	specs := make([]*mr.JobSpec, len(w.Jobs))
	outputs := make([]string, len(w.Jobs))
	for i := range w.Jobs {
		outputs[i] = filepath.Join(out, fmt.Sprintf("%s-%s-%d", stamp, safeName(w.Jobs[i].ID), i))
		if w.Jobs[i].App != "" {
			continue
		}
		spec, err := Spec(&w.Jobs[i], outputs[i], o)
		if err != nil {
			return nil, fmt.Errorf("replay: %w", err)
		}
		specs[i] = spec
	}
	// The inputs of the entries that run an app are made first; the
	// replay's clock starts after.
	inputs, err := prepareApps(ctx, client, w, out)
	if err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	run := &Run{Workload: w, Start: time.Now(), Jobs: make([]JobRun, len(w.Jobs))}
	for i := range w.Jobs {
		run.Jobs[i].Trace = &w.Jobs[i]
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var mu sync.Mutex
	submitted := make(chan int, len(w.Jobs))
	var wg sync.WaitGroup
	var appsRunning atomic.Int32
	for i := range w.Jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t := time.NewTimer(time.Until(run.Start.Add(w.Jobs[i].Submit)))
			defer t.Stop()
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			now := time.Now()
			if j := &w.Jobs[i]; j.App != "" {
				// An app runs its jobs itself; the entry is done when it
				// returns.
				appsRunning.Add(1)
				defer appsRunning.Add(-1)
				mu.Lock()
				run.Jobs[i].Submitted = now
				mu.Unlock()
				jc := &appClient{client: client, job: j, onSubmit: func(id string) {
					mu.Lock()
					if run.Jobs[i].ID == "" {
						run.Jobs[i].ID = id
					}
					mu.Unlock()
				}}
				app, err := mr.LookupApp(j.App)
				if err == nil {
					err = app.Run(ctx, jc, appArgs(j, inputs[i], outputs[i]))
				}
				mu.Lock()
				jr := &run.Jobs[i]
				jr.AppJobs, jr.State = jc.jobIDs(), jobtracker.StateSucceeded
				if err != nil {
					jr.State, jr.Error = jobtracker.StateFailed, fmt.Sprintf("app %s: %v", j.App, err)
				}
				mu.Unlock()
				submitted <- i
				return
			}
			id, err := client.Submit(ctx, specs[i])
			mu.Lock()
			jr := &run.Jobs[i]
			jr.Submitted, jr.ID = now, id
			if err != nil {
				jr.State, jr.Error = jobtracker.StateFailed, "submission: "+err.Error()
			}
			mu.Unlock()
			submitted <- i
		}()
	}
	go func() { wg.Wait(); close(submitted) }()

	prog := &progress{w: o.Progress, bar: o.Bar, total: len(w.Jobs), start: run.Start}
	tick := time.NewTicker(o.Poll)
	defer tick.Stop()
	live := map[int]bool{}
	done := 0
	for done < len(w.Jobs) {
		select {
		case <-ctx.Done():
			return run, fmt.Errorf("replay: %w", ctx.Err())
		case i, ok := <-submitted:
			if !ok {
				submitted = nil
				continue
			}
			mu.Lock()
			failed := run.Jobs[i].State != ""
			mu.Unlock()
			if failed {
				done++
			} else {
				live[i] = true
			}
			continue
		case <-tick.C:
		}
		running := 0
		for i := range live {
			st, err := client.Status(ctx, run.Jobs[i].ID)
			if err != nil {
				return run, fmt.Errorf("replay: job %s (%s): %w", run.Jobs[i].ID, w.Jobs[i].ID, err)
			}
			switch st.State {
			case jobtracker.StateSucceeded, jobtracker.StateFailed, jobtracker.StateKilled:
				mu.Lock()
				run.Jobs[i].State, run.Jobs[i].Error = st.State, st.Error
				run.Jobs[i].Counters = jobtracker.CountersOf(st)
				mu.Unlock()
				delete(live, i)
				done++
			default:
				if started(st.Maps) || started(st.Reduces) {
					running++
				}
			}
		}
		mu.Lock()
		failed := failedCount(run)
		mu.Unlock()
		apps := int(appsRunning.Load())
		prog.show(len(live)+done+apps, running+apps, done, failed)
	}
	wg.Wait() // every submitter has finished: run.Jobs is ours alone
	prog.finish(len(w.Jobs), done, failedCount(run))
	var failed []string
	for i := range run.Jobs {
		jr := &run.Jobs[i]
		if jr.ID == "" {
			failed = append(failed, fmt.Sprintf("%s (%s)", jr.Trace.ID, jr.Error))
			continue
		}
		if len(jr.AppJobs) > 0 {
			if err := appHistory(ctx, client, run, jr); err != nil {
				return run, fmt.Errorf("replay: %w", err)
			}
			if jr.State != jobtracker.StateSucceeded {
				failed = append(failed, fmt.Sprintf("%s = %s %s (%s)", jr.Trace.ID, jr.ID, jr.State, jr.Error))
			}
			continue
		}
		data, err := client.History(ctx, jr.ID)
		if err != nil {
			return run, fmt.Errorf("replay: history of job %s (%s): %w", jr.ID, jr.Trace.ID, err)
		}
		rec, err := jobhistory.Parse(data)
		if err != nil {
			return run, fmt.Errorf("replay: history of job %s (%s): %w", jr.ID, jr.Trace.ID, err)
		}
		jr.History = rec
		run.HistoryJSONL = append(run.HistoryJSONL, data...)
		if jr.State != jobtracker.StateSucceeded {
			failed = append(failed, fmt.Sprintf("%s = %s %s (%s)", jr.Trace.ID, jr.ID, jr.State, jr.Error))
		}
	}
	if len(failed) > 0 {
		return run, fmt.Errorf("replay: %d of %d jobs did not succeed: %s", len(failed), len(run.Jobs), strings.Join(failed, "; "))
	}
	return run, nil
}

func started(s interface{ GetRunning() int32 }) bool { return s != nil && s.GetRunning() > 0 }

func failedCount(r *Run) int {
	n := 0
	for _, j := range r.Jobs {
		if j.State != "" && j.State != jobtracker.StateSucceeded {
			n++
		}
	}
	return n
}

// safeName keeps letters, digits, '-', '_' and '.' of a name for a path.
func safeName(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			return r
		}
		return '_'
	}, s)
}

// progress shows a replay's progress: submitted, running and done jobs.
type progress struct {
	w     io.Writer
	bar   bool
	total int
	start time.Time
	last  string
}

func (p *progress) line(submitted, running, done, failed int) string {
	s := fmt.Sprintf("%d/%d submitted, %d running, %d done", submitted, p.total, running, done)
	if failed > 0 {
		s += fmt.Sprintf(" (%d failed)", failed)
	}
	return s
}

func (p *progress) show(submitted, running, done, failed int) {
	if p.w == nil {
		return
	}
	s := p.line(submitted, running, done, failed)
	if p.bar {
		const width = 30
		n := width * done / max(p.total, 1)
		fmt.Fprintf(p.w, "\r[%s%s] %s, %s   ", strings.Repeat("#", n), strings.Repeat(".", width-n), s, time.Since(p.start).Round(time.Second))
		return
	}
	if s != p.last {
		fmt.Fprintf(p.w, "replay %6.1fs: %s\n", time.Since(p.start).Seconds(), s)
		p.last = s
	}
}

func (p *progress) finish(total, done, failed int) {
	if p.w == nil {
		return
	}
	if p.bar {
		fmt.Fprintln(p.w)
	}
	fmt.Fprintf(p.w, "replay: %d jobs done in %s (%d failed)\n", done, time.Since(p.start).Round(100*time.Millisecond), failed)
}

// ResultOf turns a replayed run into the simulator's record of a run, so
// that the simulator's metrics (sim.Result.Summarize) apply to it: per
// job, submission, first task start and end relative to the run's start;
// the slowdown reference is the trace job's runtime alone on the cluster's
// mapSlots and reduceSlots (sim.AloneRuntime, the simulator's reference
// without heartbeats); busy slot time, kills, re-runs and wasted slot
// time come from the attempts. mapSlots and reduceSlots are the
// cluster's totals, as in sim.Result.
func ResultOf(run *Run, policy string, trackers, mapSlots, reduceSlots int, slowstart float64) (*sim.Result, error) {
	r := &sim.Result{Policy: policy, Workload: run.Workload.Name, Trackers: trackers, MapSlots: mapSlots, ReduceSlots: reduceSlots}
	var busy [2]float64
	for _, jr := range run.Jobs {
		if jr.History == nil {
			return nil, fmt.Errorf("job %s has no history (it was not run)", jr.Trace.ID)
		}
		h := jr.History
		rec := sim.JobRecord{ID: jr.Trace.ID, Name: jr.Trace.Name, Maps: len(jr.Trace.Maps), Reduces: len(jr.Trace.Reduces),
			Submit:   h.Job.Submit.Sub(run.Start).Seconds(),
			Finish:   h.Job.Finish.Sub(run.Start).Seconds(),
			Size:     jr.Trace.Size().Seconds(),
			Deadline: jr.Trace.Deadline.Seconds(),
			Ref:      sim.AloneRuntime(jr.Trace, mapSlots, reduceSlots, slowstart).Seconds(),
		}
		rec.Response = rec.Finish - rec.Submit
		first := time.Time{}
		var attempts [2]int
		for _, a := range h.Attempts {
			t := 0
			if a.TaskType == "r" {
				t = 1
			}
			attempts[t]++
			d := max(a.Finish.Sub(a.Start).Seconds(), 0)
			busy[t] += d
			if first.IsZero() || a.Start.Before(first) {
				first = a.Start
			}
			if a.State != jobtracker.StateSucceeded {
				r.WastedSlotSeconds += d
				if a.State == jobtracker.StateKilled {
					if t == 0 {
						r.KilledMapTasks++
					} else {
						r.KilledReduceTasks++
					}
				}
			}
		}
		r.ExtraMapTasks += int64(max(attempts[0]-h.Job.Maps, 0))
		r.ExtraReduceTasks += int64(max(attempts[1]-h.Job.Reduces, 0))
		if !first.IsZero() {
			rec.Start = first.Sub(run.Start).Seconds()
		}
		r.Jobs = append(r.Jobs, rec)
	}
	r.SetBusy(busy[0], busy[1])
	r.Summarize()
	return r, nil
}

// SimModel is how the simulator models the real cluster: its heartbeat
// period and the runtime's costs (sim.Overheads). The zero value is the
// ideal cluster: slots offered the instant they free, tasks that cost
// nothing beyond their durations.
type SimModel struct {
	Heartbeat time.Duration
	Overheads sim.Overheads
}

// Configuration keys the model reads; the tasktracker package declares
// them (conf/keys.go).
const (
	keyHeartbeat = "mapreduce.tasktracker.heartbeat.interval"
	keyOutOfBand = "mapreduce.tasktracker.outofband.heartbeat"
)

// ModelOf is the simulator's model of a cluster run with cfg: its
// heartbeat period and out-of-band heartbeat setting, the TaskTracker's
// follow-up heartbeat (after every launch when costs.AfterEveryLaunch,
// for runs made before the TaskTracker's rule changed), and the task costs
// of costs (Launch and its spreads, Report, MapEvents; sim.MeasuredOverheads are those
// measured on the runtime).
func ModelOf(cfg *conf.Config, costs sim.Overheads) SimModel {
	o := sim.MeasuredOverheads
	o.Launch, o.Report, o.MapEvents, o.LaunchDist, o.ReduceLaunchDist, o.DrawPhases = costs.Launch, costs.Report, costs.MapEvents, costs.LaunchDist, costs.ReduceLaunchDist, costs.DrawPhases
	o.AfterEveryLaunch, o.FirstAtPeriod = costs.AfterEveryLaunch, costs.FirstAtPeriod
	o.OutOfBand = cfg.Bool(keyOutOfBand)
	return SimModel{Heartbeat: cfg.Duration(keyHeartbeat), Overheads: o}
}

// Simulate runs the simulator on the same workload, policy and cluster
// shape as a real run: the cluster's reduce slow-start, the model of its
// heartbeats and costs, and what the JobTracker knows of a job (the
// history of earlier jobs of its name in the run). Only scheduler.* keys
// of conf reach the policy.
func Simulate(w *sim.Workload, policy string, conf map[string]string, trackers, mapSlots, reduceSlots int, slowstart float64, m SimModel) (*sim.Result, error) {
	pc := map[string]string{}
	for k, v := range conf {
		if strings.HasPrefix(k, "scheduler.") && k != "scheduler.policy" {
			pc[k] = v
		}
	}
	r, err := sim.Run(w, sim.Options{Policy: policy, Conf: pc, Trackers: trackers, MapSlots: mapSlots, ReduceSlots: reduceSlots,
		Slowstart: slowstart, Knowledge: sim.KnowHistory, Heartbeat: m.Heartbeat, Overheads: m.Overheads})
	if err != nil {
		return nil, err
	}
	return r, nil
}

// JobErrors are the relative errors of per-job completion (response) time
// of a real run against the simulator's: |real − sim| / sim, by trace job
// id, sorted.
func JobErrors(real, simulated *sim.Result) []float64 {
	byID := map[string]float64{}
	for _, j := range simulated.Jobs {
		byID[j.ID] = j.Response
	}
	var errs []float64
	for _, j := range real.Jobs {
		s, ok := byID[j.ID]
		if !ok || s <= 0 {
			continue
		}
		errs = append(errs, math.Abs(j.Response-s)/s)
	}
	sort.Float64s(errs)
	return errs
}

// errNoPolicies is returned when a comparison names no policy.
var errNoPolicies = errors.New("name at least one policy")
