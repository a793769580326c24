package jobhistory

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"gomr/partitions"
)

// Run is one finished job as its history records it, flattened to what
// replaying it and profiling it need: the job's times and every task
// attempt with its shuffle end. It is also a JSON-lines trace record of
// its own (the simulator's sim.HistoryJob, docs/trace-format.md).
type Run struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	User     string `json:"user,omitempty"`
	Pool     string `json:"pool,omitempty"`
	Priority int    `json:"priority,omitempty"`
	// State is SUCCEEDED, FAILED or KILLED.
	State  string    `json:"state"`
	Submit time.Time `json:"submit"`
	Start  time.Time `json:"start"`
	Finish time.Time `json:"finish"`
	// DeadlineSeconds is the relative deadline the job was submitted with;
	// 0 means none.
	DeadlineSeconds float64 `json:"deadline_s,omitempty"`
	InputBytes      int64   `json:"input_bytes,omitempty"`
	Maps            int     `json:"maps"`
	Reduces         int     `json:"reduces"`
	// Tasks are all attempts of the job's tasks.
	Tasks []RunTask `json:"tasks"`
}

// RunTask is one task attempt in a Run.
type RunTask struct {
	// Type is "map" or "reduce".
	Type    string `json:"type"`
	Index   int    `json:"index"`
	Attempt int    `json:"attempt"`
	// State is SUCCEEDED, FAILED or KILLED.
	State   string    `json:"state"`
	Tracker string    `json:"tracker,omitempty"`
	Start   time.Time `json:"start"`
	Finish  time.Time `json:"finish"`
	// ShuffleFinish is when a reduce attempt's shuffle and sort ended (its
	// reduce phase began); zero for maps or when unknown.
	ShuffleFinish time.Time `json:"shuffle_finish,omitzero"`
}

// stateSucceeded is the state of a job or attempt that succeeded, as the
// JobTracker writes it.
const stateSucceeded = "SUCCEEDED"

// Successful returns the successful attempt of each task of a type ("map"
// or "reduce"), in task order; of two successful attempts of a task, the
// first listed.
func (r *Run) Successful(typ string) []RunTask {
	byIndex := map[int]RunTask{}
	for _, t := range r.Tasks {
		if t.Type == typ && strings.EqualFold(t.State, stateSucceeded) {
			if _, dup := byIndex[t.Index]; !dup {
				byIndex[t.Index] = t
			}
		}
	}
	idx := make([]int, 0, len(byIndex))
	for i := range byIndex {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	out := make([]RunTask, 0, len(idx))
	for _, i := range idx {
		out = append(out, byIndex[i])
	}
	return out
}

// RunOf converts a job's history record into a Run.
func RunOf(rec *Record) (Run, error) {
	j := rec.Job
	r := Run{ID: j.JobID, Name: j.Name, User: j.User, Pool: j.Pool, State: j.State,
		Submit: j.Submit, Start: j.Start, Finish: j.Finish, DeadlineSeconds: j.Deadline,
		InputBytes: j.InputBytes, Maps: j.Maps, Reduces: j.Reduces}
	for _, a := range rec.Attempts {
		t := RunTask{Index: a.Task, State: a.State, Tracker: a.Tracker, Start: a.Start, Finish: a.Finish}
		switch a.TaskType {
		case "m":
			t.Type = "map"
		case "r":
			t.Type = "reduce"
		default:
			return r, fmt.Errorf("history attempt %s: unknown task type %q", a.AttemptID, a.TaskType)
		}
		if i := strings.LastIndexByte(a.AttemptID, '_'); i >= 0 {
			n, err := strconv.Atoi(a.AttemptID[i+1:])
			if err != nil {
				return r, fmt.Errorf("history attempt id %q: %w", a.AttemptID, err)
			}
			t.Attempt = n
		}
		// The reduce phase starts when the merge (sort) ends.
		if a.SortFinish != nil {
			t.ShuffleFinish = *a.SortFinish
		} else if a.ShuffleFinish != nil {
			t.ShuffleFinish = *a.ShuffleFinish
		}
		r.Tasks = append(r.Tasks, t)
	}
	return r, nil
}

// ParseRuns decodes history files (one or more concatenated) into Runs,
// failed and killed jobs included.
func ParseRuns(data []byte) ([]Run, error) {
	recs, err := ParseAll(data)
	if err != nil {
		return nil, err
	}
	out := make([]Run, 0, len(recs))
	for i := range recs {
		r, err := RunOf(&recs[i])
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// Profile computes the ARIA profile of a completed job from its run: map
// durations; for reduces, a first-wave attempt (launched before any reduce
// of the job completed) counts only the shuffle after the last map
// finished. The JobTracker keeps these per job name, merged with
// partitions.MergeProfiles (AddProfile); the simulator computes the same
// from a replayed history.
func Profile(r *Run) partitions.Profile {
	var maps []time.Duration
	var lastMap time.Time
	for _, t := range r.Successful("map") {
		maps = append(maps, max(t.Finish.Sub(t.Start), 0))
		if t.Finish.After(lastMap) {
			lastMap = t.Finish
		}
	}
	reds := r.Successful("reduce")
	var firstDone time.Time
	for _, t := range reds {
		if firstDone.IsZero() || t.Finish.Before(firstDone) {
			firstDone = t.Finish
		}
	}
	var rs []partitions.ReduceSample
	for _, t := range reds {
		sf := t.ShuffleFinish
		if sf.IsZero() {
			sf = t.Start
		}
		first := t.Start.Before(firstDone)
		from := t.Start
		if first && lastMap.After(from) {
			from = lastMap
		}
		rs = append(rs, partitions.ReduceSample{Shuffle: max(sf.Sub(from), 0), Reduce: max(t.Finish.Sub(sf), 0), FirstWave: first})
	}
	return partitions.NewProfile(maps, rs)
}

// LoadProfiles reads every history file (job_*.jsonl) in dir and returns
// the merged profiles of its successful jobs by job name. Files that do
// not parse are skipped (a history file is advisory); a directory or file
// that cannot be read is an error.
func LoadProfiles(dir string) (map[string]partitions.Profile, error) {
	profiles := map[string]partitions.Profile{}
	files, err := filepath.Glob(filepath.Join(dir, "job_*.jsonl"))
	if err != nil {
		return nil, fmt.Errorf("list history files in %s: %w", dir, err)
	}
	sort.Strings(files)
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("read history file: %w", err)
		}
		AddProfiles(profiles, data)
	}
	return profiles, nil
}

// AddProfiles merges the profiles of the successful jobs of a history file
// into profiles; a file that does not parse is skipped.
func AddProfiles(profiles map[string]partitions.Profile, data []byte) {
	recs, err := ParseAll(data)
	if err != nil {
		return
	}
	for i := range recs {
		AddProfile(profiles, &recs[i])
	}
}

// AddProfile merges one job's profile into profiles, by job name, if the
// job succeeded.
func AddProfile(profiles map[string]partitions.Profile, rec *Record) {
	if name, p, ok := ProfileOf(rec); ok {
		MergeProfile(profiles, name, p)
	}
}

// ProfileOf is the profile of one job and its name, if the job succeeded
// (ok false otherwise): the O(attempts) part of AddProfile, which needs
// nothing but the record.
func ProfileOf(rec *Record) (name string, p partitions.Profile, ok bool) {
	if rec.Job.State != stateSucceeded {
		return "", partitions.Profile{}, false
	}
	r, err := RunOf(rec)
	if err != nil {
		return "", partitions.Profile{}, false
	}
	return r.Name, Profile(&r), true
}

// MergeProfile merges profile p of a run of the job named name into
// profiles.
func MergeProfile(profiles map[string]partitions.Profile, name string, p partitions.Profile) {
	profiles[name] = partitions.MergeProfiles(profiles[name], p)
}
