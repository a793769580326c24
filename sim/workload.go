// Package sim is a discrete-event simulator of the MapReduce cluster: a
// virtual clock, N trackers with map and reduce slots, jobs whose tasks
// last what a trace or a generator says, and the real scheduling policies
// of package partitions driven through the same interface the JobTracker
// uses. It is deterministic for a given workload, seed and options.
//
// Workloads come from generators for the sources' workloads (Generate),
// from a JSON-lines trace (ReadTrace, docs/trace-format.md) or from the
// JobTracker's job history (ReadHistory). Run simulates one policy and
// returns per-job records and summary metrics; Command is the `mr sim`
// subcommand.
package sim

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"gomr/jobtracker/jobhistory"
	"gomr/partitions"
)

// Job is one job of a workload: when it arrives and how long each of its
// tasks runs.
type Job struct {
	ID       string
	Name     string
	Pool     string
	Priority int
	// Submit is the arrival time, from the start of the workload.
	Submit time.Duration
	// Maps are the map task durations.
	Maps []time.Duration
	// Reduces are the reduce-phase durations of the reduce tasks, and
	// Shuffles (empty, or one per reduce) their shuffle durations. A reduce
	// launched at s finishes at max(s+shuffle, end of the job's map stage)
	// + reduce: it holds its slot until the maps are done.
	Reduces  []time.Duration
	Shuffles []time.Duration
	// InputBytes is the job's input size (SITA and COMP predict from it).
	InputBytes int64
	// Deadline is relative to Submit; 0 means none.
	Deadline time.Duration
	// Memory is the resident memory of each of its attempts, what a
	// checkpoint dumps; 0 means the run's (PreemptionModel.TaskMemory).
	Memory int64
	// App, when set, names a real app (TraceApps) that a replay on the
	// runtime runs, with AppArgs, in place of the synthetic replay job;
	// the simulator simulates the durations above all the same.
	App     string
	AppArgs []string
}

// TraceApps are the apps a trace entry may name (field app): a replay runs
// them for real on an input of input_bytes (none for sleep).
var TraceApps = []string{"grep", "sleep", "sort", "terasort", "wordcount"}

// Size is the job's total task time (slot-time), map and reduce tasks.
func (j *Job) Size() time.Duration {
	var s time.Duration
	for _, d := range j.Maps {
		s += d
	}
	for i, d := range j.Reduces {
		s += d + j.shuffle(i)
	}
	return s
}

func (j *Job) shuffle(i int) time.Duration {
	if i < len(j.Shuffles) {
		return j.Shuffles[i]
	}
	return 0
}

// Profile returns the oracle profile of the job: the statistics of the
// very durations the simulator replays. Reduces are launched after the
// map stage under the deadline policies, so first-wave and typical
// shuffles are the same figures.
func (j *Job) Profile() partitions.Profile {
	var rs []partitions.ReduceSample
	for i, d := range j.Reduces {
		rs = append(rs, partitions.ReduceSample{Shuffle: j.shuffle(i), Reduce: d, FirstWave: true})
	}
	p := partitions.NewProfile(j.Maps, rs)
	return p
}

// Workload is a list of jobs and the cluster and settings of its source.
type Workload struct {
	Name        string
	Description string
	Jobs        []Job
	// Trackers, MapSlots and ReduceSlots (per tracker) describe the
	// source's cluster.
	Trackers, MapSlots, ReduceSlots int
	// Slowstart is the fraction of a job's maps that must finish before its
	// reduces may start.
	Slowstart float64
	// Conf holds policy configuration the source used (for example TAGS'
	// limit on the Facebook workload); options override it.
	Conf map[string]string
	// Deadlines says how the deadlines were drawn, for reports.
	Deadlines string
	// Knowledge is what the source's policies knew of a job at its
	// submission (Knowledge*; empty: KnowHistory, what the JobTracker
	// knows). Options.Knowledge overrides it.
	Knowledge string
}

// TraceRecord is one line of a trace file (docs/trace-format.md).
type TraceRecord struct {
	ID         string    `json:"id"`
	Name       string    `json:"name,omitempty"`
	Pool       string    `json:"pool,omitempty"`
	Priority   int       `json:"priority,omitempty"`
	SubmitS    float64   `json:"submit_s"`
	MapsS      []float64 `json:"maps_s"`
	ReducesS   []float64 `json:"reduces_s,omitempty"`
	ShufflesS  []float64 `json:"shuffles_s,omitempty"`
	InputBytes int64     `json:"input_bytes,omitempty"`
	DeadlineS  float64   `json:"deadline_s,omitempty"`
	App        string    `json:"app,omitempty"`
	AppArgs    []string  `json:"app_args,omitempty"`
}

func dur(s float64) time.Duration { return time.Duration(math.Round(s * float64(time.Second))) }

func durs(xs []float64) []time.Duration {
	if len(xs) == 0 {
		return nil
	}
	out := make([]time.Duration, len(xs))
	for i, x := range xs {
		out[i] = dur(x)
	}
	return out
}

func secsOf(ds []time.Duration) []float64 {
	if len(ds) == 0 {
		return nil
	}
	out := make([]float64, len(ds))
	for i, d := range ds {
		out[i] = d.Seconds()
	}
	return out
}

// Record returns the trace record of a job.
func (j *Job) Record() TraceRecord {
	return TraceRecord{ID: j.ID, Name: j.Name, Pool: j.Pool, Priority: j.Priority, SubmitS: j.Submit.Seconds(),
		MapsS: secsOf(j.Maps), ReducesS: secsOf(j.Reduces), ShufflesS: secsOf(j.Shuffles),
		InputBytes: j.InputBytes, DeadlineS: j.Deadline.Seconds(), App: j.App, AppArgs: j.AppArgs}
}

// job validates a record and converts it.
func (r *TraceRecord) job() (Job, error) {
	if r.ID == "" {
		return Job{}, errors.New("missing field id")
	}
	if r.SubmitS < 0 || math.IsNaN(r.SubmitS) || math.IsInf(r.SubmitS, 0) {
		return Job{}, fmt.Errorf("job %s: submit_s %v must be a finite time >= 0", r.ID, r.SubmitS)
	}
	if len(r.MapsS) == 0 {
		return Job{}, fmt.Errorf("job %s: missing field maps_s (at least one map duration)", r.ID)
	}
	if len(r.ShufflesS) != 0 && len(r.ShufflesS) != len(r.ReducesS) {
		return Job{}, fmt.Errorf("job %s: %d shuffles_s for %d reduces_s", r.ID, len(r.ShufflesS), len(r.ReducesS))
	}
	for _, f := range []struct {
		name string
		xs   []float64
	}{{"maps_s", r.MapsS}, {"reduces_s", r.ReducesS}, {"shuffles_s", r.ShufflesS}} {
		for i, x := range f.xs {
			if x < 0 || math.IsNaN(x) || math.IsInf(x, 0) {
				return Job{}, fmt.Errorf("job %s: %s[%d] = %v: a task duration must be finite and >= 0", r.ID, f.name, i, x)
			}
		}
	}
	if r.DeadlineS < 0 || math.IsNaN(r.DeadlineS) || math.IsInf(r.DeadlineS, 0) {
		return Job{}, fmt.Errorf("job %s: deadline_s %v must be finite and >= 0", r.ID, r.DeadlineS)
	}
	if r.InputBytes < 0 {
		return Job{}, fmt.Errorf("job %s: input_bytes %d must be >= 0", r.ID, r.InputBytes)
	}
	switch {
	case r.App == "" && len(r.AppArgs) > 0:
		return Job{}, fmt.Errorf("job %s: app_args without app", r.ID)
	case r.App != "" && !slices.Contains(TraceApps, r.App):
		return Job{}, fmt.Errorf("job %s: app %q: not an app a trace may name (%s)", r.ID, r.App, strings.Join(TraceApps, ", "))
	case r.App != "" && r.App != "sleep" && r.InputBytes == 0:
		return Job{}, fmt.Errorf("job %s: app %s needs input_bytes, the size of the input it runs on", r.ID, r.App)
	}
	name := r.Name
	if name == "" {
		name = r.ID
	}
	return Job{ID: r.ID, Name: name, Pool: r.Pool, Priority: r.Priority, Submit: dur(r.SubmitS), Maps: durs(r.MapsS),
		Reduces: durs(r.ReducesS), Shuffles: durs(r.ShufflesS), InputBytes: r.InputBytes, Deadline: dur(r.DeadlineS),
		App: r.App, AppArgs: r.AppArgs}, nil
}

// HistoryJob is one completed job as the JobTracker's job history records
// it, one JSON object a line (jobhistory.Run). The simulator replays it:
// arrival at Submit, each task lasting what its successful attempt took.
type HistoryJob = jobhistory.Run

// HistoryTask is one task attempt in a HistoryJob.
type HistoryTask = jobhistory.RunTask

// historyJob converts a history record into a workload job, with Submit
// relative to origin.
func historyJob(h *HistoryJob, origin time.Time) (Job, error) {
	if h.ID == "" {
		return Job{}, errors.New("history record without id")
	}
	maps := h.Successful("map")
	if len(maps) == 0 {
		return Job{}, fmt.Errorf("history job %s: no successful map attempt", h.ID)
	}
	j := Job{ID: h.ID, Name: h.Name, Pool: h.Pool, Priority: h.Priority, Submit: h.Submit.Sub(origin),
		InputBytes: h.InputBytes, Deadline: dur(h.DeadlineSeconds)}
	if j.Name == "" {
		j.Name = h.ID
	}
	for _, t := range maps {
		j.Maps = append(j.Maps, max(t.Finish.Sub(t.Start), 0))
	}
	for _, t := range h.Successful("reduce") {
		sh := time.Duration(0)
		red := max(t.Finish.Sub(t.Start), 0)
		if !t.ShuffleFinish.IsZero() {
			sh = max(t.ShuffleFinish.Sub(t.Start), 0)
			red = max(t.Finish.Sub(t.ShuffleFinish), 0)
		}
		j.Shuffles = append(j.Shuffles, sh)
		j.Reduces = append(j.Reduces, red)
	}
	return j, nil
}

// ReadTrace reads a workload from JSON lines: trace records
// (docs/trace-format.md) or JobTracker history records (HistoryJob, told
// apart by their "tasks" field). Blank lines and lines starting with # are
// skipped. Only SUCCEEDED history jobs are replayed.
func ReadTrace(r io.Reader, name string) (*Workload, error) {
	w := &Workload{Name: name, Trackers: 64, MapSlots: 1, ReduceSlots: 1, Slowstart: 0.05,
		Description: "trace " + name}
	var hist []HistoryJob
	var jtLines []byte
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<30)
	line := 0
	seen := map[string]bool{}
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 || b[0] == '#' {
			continue
		}
		var probe map[string]json.RawMessage
		if err := json.Unmarshal(b, &probe); err != nil {
			return nil, fmt.Errorf("trace %s line %d: %w", name, line, err)
		}
		if _, ok := probe["type"]; ok {
			// The JobTracker's history files: a "job" line, then one
			// "attempt" line per task attempt; decoded together below.
			jtLines = append(append(jtLines, b...), '\n')
			continue
		}
		if _, ok := probe["tasks"]; ok {
			var h HistoryJob
			if err := json.Unmarshal(b, &h); err != nil {
				return nil, fmt.Errorf("trace %s line %d: history record: %w", name, line, err)
			}
			if h.State == "" || strings.EqualFold(h.State, "SUCCEEDED") {
				hist = append(hist, h)
			}
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		var rec TraceRecord
		if err := dec.Decode(&rec); err != nil {
			return nil, fmt.Errorf("trace %s line %d: %w", name, line, err)
		}
		j, err := rec.job()
		if err != nil {
			return nil, fmt.Errorf("trace %s line %d: %w", name, line, err)
		}
		if seen[j.ID] {
			return nil, fmt.Errorf("trace %s line %d: job id %s appears twice", name, line, j.ID)
		}
		seen[j.ID] = true
		w.Jobs = append(w.Jobs, j)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("trace %s: %w", name, err)
	}
	if len(jtLines) > 0 {
		jobs, err := ParseJobTrackerHistory(jtLines)
		if err != nil {
			return nil, fmt.Errorf("trace %s: %w", name, err)
		}
		hist = append(hist, jobs...)
	}
	kept := hist[:0]
	for _, h := range hist {
		if h.State == "" || strings.EqualFold(h.State, "SUCCEEDED") {
			kept = append(kept, h)
		}
	}
	hist = kept
	if len(hist) > 0 {
		origin := hist[0].Submit
		for _, h := range hist {
			if h.Submit.Before(origin) {
				origin = h.Submit
			}
		}
		for i := range hist {
			j, err := historyJob(&hist[i], origin)
			if err != nil {
				return nil, fmt.Errorf("trace %s: %w", name, err)
			}
			if seen[j.ID] {
				return nil, fmt.Errorf("trace %s: job id %s appears twice", name, j.ID)
			}
			seen[j.ID] = true
			w.Jobs = append(w.Jobs, j)
		}
	}
	if len(w.Jobs) == 0 {
		return nil, fmt.Errorf("trace %s: no jobs", name)
	}
	sort.SliceStable(w.Jobs, func(a, b int) bool { return w.Jobs[a].Submit < w.Jobs[b].Submit })
	return w, nil
}

// ReadTraceFile reads a trace or history file.
func ReadTraceFile(path string) (*Workload, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open trace: %w", err)
	}
	defer f.Close()
	return ReadTrace(f, path)
}

// WriteTrace writes the workload's jobs as trace records, one a line.
func WriteTrace(out io.Writer, w *Workload) error {
	enc := json.NewEncoder(out)
	for i := range w.Jobs {
		if err := enc.Encode(w.Jobs[i].Record()); err != nil {
			return fmt.Errorf("write trace record %s: %w", w.Jobs[i].ID, err)
		}
	}
	return nil
}

// ParseJobTrackerHistory decodes JobTracker history files (one or more
// concatenated) into HistoryJobs, failed and killed jobs included.
func ParseJobTrackerHistory(data []byte) ([]HistoryJob, error) {
	return jobhistory.ParseRuns(data)
}
