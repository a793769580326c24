// Package jobhistory is the format of the JobTracker's job history: one
// JSON-lines file per finished job, a "job" line followed by one "attempt"
// line per task attempt. The JobTracker writes it, `mr job -history`
// prints it, the JobTracker rebuilds job profiles from it (profile.go:
// Run, Profile, LoadProfiles), and the simulator replays it.
package jobhistory

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"gomr/mr"
)

// Job is the first line of a job's history file.
type Job struct {
	Type       string        `json:"type"` // "job"
	JobID      string        `json:"job_id"`
	Name       string        `json:"name"`
	User       string        `json:"user,omitempty"`
	Pool       string        `json:"pool,omitempty"`
	State      string        `json:"state"`
	Error      string        `json:"error,omitempty"`
	Submit     time.Time     `json:"submit"`
	Start      time.Time     `json:"start"`
	Finish     time.Time     `json:"finish"`
	Maps       int           `json:"maps"`
	Reduces    int           `json:"reduces"`
	Deadline   float64       `json:"deadline_seconds,omitempty"`
	InputBytes int64         `json:"input_bytes"`
	Counters   mr.CounterSet `json:"counters"`
	// ViewACL and ModifyACL are the job's mapreduce.job.acl-view-job and
	// mapreduce.job.acl-modify-job, which the JobTracker still enforces
	// on the job's history.
	ViewACL   string `json:"acl_view_job,omitempty"`
	ModifyACL string `json:"acl_modify_job,omitempty"`
	// Output and Priority are the job's output path and priority (from
	// -2, VERY_LOW, to 2, VERY_HIGH); Queue is the pool the policy saw
	// (Pool, or mapreduce.job.queuename when the job names none).
	Output   string `json:"output,omitempty"`
	Priority int    `json:"priority,omitempty"`
	Queue    string `json:"queue,omitempty"`
	// How the job's tasks ended, by type (Hadoop's history records
	// finished and failed maps and reduces the same way): a task that did
	// not succeed failed when it ran out of attempts, and was killed when
	// the job ended first. Files written before these fields existed lack
	// them; TaskOutcomes then infers the counts from the attempt lines.
	SucceededMaps    int `json:"succeeded_maps,omitempty"`
	FailedMaps       int `json:"failed_maps,omitempty"`
	KilledMaps       int `json:"killed_maps,omitempty"`
	SucceededReduces int `json:"succeeded_reduces,omitempty"`
	FailedReduces    int `json:"failed_reduces,omitempty"`
	KilledReduces    int `json:"killed_reduces,omitempty"`
}

// Attempt is one line per task attempt, after the job line.
type Attempt struct {
	Type          string            `json:"type"` // "attempt"
	AttemptID     string            `json:"attempt_id"`
	TaskType      string            `json:"task_type"` // "m" or "r"
	Task          int               `json:"task"`
	Tracker       string            `json:"tracker"`
	State         string            `json:"state"`
	Error         string            `json:"error,omitempty"`
	Start         time.Time         `json:"start"`
	Finish        time.Time         `json:"finish"`
	ShuffleFinish *time.Time        `json:"shuffle_finish,omitempty"`
	SortFinish    *time.Time        `json:"sort_finish,omitempty"`
	Counters      mr.PackedCounters `json:"counters,omitzero"`
	// Speculative marks an attempt the speculator launched beside a
	// running one; Cloned one that it made by cloning a running attempt
	// with CRIU (a cloned attempt is speculative too).
	Speculative bool `json:"speculative,omitempty"`
	Cloned      bool `json:"cloned,omitempty"`
}

// Record is a whole job's history.
type Record struct {
	Job      Job
	Attempts []Attempt
}

// TaskOutcome counts a finished job's tasks of one type by how they ended.
type TaskOutcome struct {
	Succeeded, Failed, Killed int
}

// TaskOutcomes returns how the job's maps and reduces ended: the job
// line's counts, or for a file that has none, counts inferred from its
// attempt lines (a task succeeded if an attempt of it did, failed if its
// last attempt failed, and was killed otherwise, never-run tasks
// included).
func (r *Record) TaskOutcomes() (maps, reduces TaskOutcome) {
	j := &r.Job
	maps = TaskOutcome{j.SucceededMaps, j.FailedMaps, j.KilledMaps}
	reduces = TaskOutcome{j.SucceededReduces, j.FailedReduces, j.KilledReduces}
	if maps != (TaskOutcome{}) || reduces != (TaskOutcome{}) || j.Maps+j.Reduces == 0 {
		return maps, reduces
	}
	type taskKey struct {
		typ   string
		index int
	}
	succeeded := map[taskKey]bool{}
	last := map[taskKey]string{}
	for _, a := range r.Attempts {
		k := taskKey{a.TaskType, a.Task}
		if a.State == "SUCCEEDED" {
			succeeded[k] = true
		}
		last[k] = a.State
	}
	count := func(typ string, total int) TaskOutcome {
		var o TaskOutcome
		for k, st := range last {
			if k.typ != typ || k.index < 0 || k.index >= total {
				continue
			}
			switch {
			case succeeded[k]:
				o.Succeeded++
			case st == "FAILED":
				o.Failed++
			}
		}
		o.Killed = max(total-o.Succeeded-o.Failed, 0)
		return o
	}
	return count("m", j.Maps), count("r", j.Reduces)
}

// Parse decodes one job's history file.
func Parse(data []byte) (*Record, error) {
	recs, err := ParseAll(data)
	if err != nil {
		return nil, err
	}
	if len(recs) != 1 {
		return nil, fmt.Errorf("history holds %d jobs, want 1", len(recs))
	}
	return &recs[0], nil
}

// ParseAll decodes history files, one or several concatenated: each job
// line is followed by the lines of its attempts.
func ParseAll(data []byte) ([]Record, error) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	var recs []Record
	line := 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		var probe struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal(b, &probe); err != nil {
			return nil, fmt.Errorf("history line %d: %w", line, err)
		}
		switch probe.Type {
		case "job":
			var j Job
			if err := json.Unmarshal(b, &j); err != nil {
				return nil, fmt.Errorf("history line %d: %w", line, err)
			}
			recs = append(recs, Record{Job: j})
		case "attempt":
			if len(recs) == 0 {
				return nil, fmt.Errorf("history line %d: attempt before any job line", line)
			}
			var a Attempt
			if err := json.Unmarshal(b, &a); err != nil {
				return nil, fmt.Errorf("history line %d: %w", line, err)
			}
			recs[len(recs)-1].Attempts = append(recs[len(recs)-1].Attempts, a)
		default:
			return nil, fmt.Errorf("history line %d: unknown record type %q", line, probe.Type)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(recs) == 0 {
		return nil, fmt.Errorf("empty history")
	}
	return recs, nil
}
