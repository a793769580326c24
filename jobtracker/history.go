package jobtracker

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"time"

	"gomr/mr"
)

// HistoryJob is the first line of a job's history file.
type HistoryJob struct {
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
}

// HistoryAttempt is one line per task attempt, after the job line.
type HistoryAttempt struct {
	Type          string        `json:"type"` // "attempt"
	AttemptID     string        `json:"attempt_id"`
	TaskType      string        `json:"task_type"` // "m" or "r"
	Task          int           `json:"task"`
	Tracker       string        `json:"tracker"`
	State         string        `json:"state"`
	Error         string        `json:"error,omitempty"`
	Start         time.Time     `json:"start"`
	Finish        time.Time     `json:"finish"`
	ShuffleFinish *time.Time    `json:"shuffle_finish,omitempty"`
	SortFinish    *time.Time    `json:"sort_finish,omitempty"`
	Counters      mr.CounterSet `json:"counters,omitempty"`
}

// HistoryRecord is a whole job's history.
type HistoryRecord struct {
	Job      HistoryJob
	Attempts []HistoryAttempt
}

// History is the JobTracker's job history directory: one JSON-lines file
// per finished job, named <job id>.jsonl.
type History struct{ dir string }

// OpenHistory creates the history directory if needed.
func OpenHistory(dir string) (*History, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("job history directory %s: %w", dir, err)
	}
	return &History{dir: dir}, nil
}

var jobIDPattern = regexp.MustCompile(`^job_[0-9]+_[0-9]+$`)

func (h *History) path(jobID string) (string, error) {
	if !jobIDPattern.MatchString(jobID) {
		return "", fmt.Errorf("not a job id: %q", jobID)
	}
	return filepath.Join(h.dir, jobID+".jsonl"), nil
}

// Write stores a record, atomically.
func (h *History) Write(rec HistoryRecord) error {
	p, err := h.path(rec.Job.JobID)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	if err := enc.Encode(rec.Job); err != nil {
		return err
	}
	for _, a := range rec.Attempts {
		if err := enc.Encode(a); err != nil {
			return err
		}
	}
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("writing history %s: %w", tmp, err)
	}
	return os.Rename(tmp, p)
}

// Read returns a job's history file.
func (h *History) Read(jobID string) ([]byte, error) {
	p, err := h.path(jobID)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("no history for job %s: %w", jobID, err)
	}
	return data, nil
}

// ParseHistory decodes a history file.
func ParseHistory(data []byte) (*HistoryRecord, error) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	rec := &HistoryRecord{}
	line := 0
	for sc.Scan() {
		line++
		if line == 1 {
			if err := json.Unmarshal(sc.Bytes(), &rec.Job); err != nil || rec.Job.Type != "job" {
				return nil, fmt.Errorf("history line 1: not a job record: %v", err)
			}
			continue
		}
		var a HistoryAttempt
		if err := json.Unmarshal(sc.Bytes(), &a); err != nil {
			return nil, fmt.Errorf("history line %d: %w", line, err)
		}
		rec.Attempts = append(rec.Attempts, a)
	}
	if line == 0 {
		return nil, fmt.Errorf("empty history")
	}
	return rec, sc.Err()
}

func (jt *JobTracker) historyRecordLocked(j *job) HistoryRecord {
	rec := HistoryRecord{Job: HistoryJob{
		Type: "job", JobID: j.id, Name: j.spec.Name, User: j.spec.User, Pool: j.spec.Pool,
		State: j.state, Error: j.err, Submit: j.submit, Start: j.start, Finish: j.finish,
		Maps: len(j.maps), Reduces: len(j.reduces), Deadline: j.spec.DeadlineSeconds,
		Counters: jt.jobCountersLocked(j),
	}}
	for _, s := range j.splits {
		if s.Path != "" {
			rec.Job.InputBytes += s.Length
		}
	}
	for _, ts := range [][]*task{j.maps, j.reduces} {
		for _, t := range ts {
			for _, a := range t.attempts {
				ha := HistoryAttempt{
					Type: "attempt", AttemptID: a.id, TaskType: typeLetter(t.typ), Task: t.index,
					Tracker: a.tracker, State: a.state, Error: a.diag, Start: a.start, Finish: a.finish,
					Counters: a.counters,
				}
				if !a.shuffleFinish.IsZero() {
					sf := a.shuffleFinish
					ha.ShuffleFinish = &sf
				}
				if !a.sortFinish.IsZero() {
					sf := a.sortFinish
					ha.SortFinish = &sf
				}
				rec.Attempts = append(rec.Attempts, ha)
			}
		}
	}
	return rec
}
