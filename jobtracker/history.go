package jobtracker

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"

	"gomr/jobtracker/jobhistory"
	"gomr/partitions"
	"gomr/security"
)

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

// Write stores a record, atomically: written to a temporary file line by
// line, then renamed. (A job of 37,500 attempts has about 50 MB of
// history; built in memory first, it was a burst of allocation that set
// the JobTracker's collector going while heartbeats were being answered.)
func (h *History) Write(rec jobhistory.Record) error {
	p, err := h.path(rec.Job.JobID)
	if err != nil {
		return err
	}
	tmp := p + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("writing history: %w", err)
	}
	w := bufio.NewWriterSize(f, 256<<10)
	enc := json.NewEncoder(w)
	err = enc.Encode(rec.Job)
	for i := 0; err == nil && i < len(rec.Attempts); i++ {
		err = enc.Encode(rec.Attempts[i])
	}
	if err == nil {
		err = w.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
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

// Record reads and parses a job's history file.
func (h *History) Record(jobID string) (*jobhistory.Record, error) {
	data, err := h.Read(jobID)
	if err != nil {
		return nil, err
	}
	rec, err := jobhistory.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("history of job %s: %w", jobID, err)
	}
	if rec.Job.JobID != jobID {
		return nil, fmt.Errorf("history file of job %s holds job %s", jobID, rec.Job.JobID)
	}
	return rec, nil
}

// historyJobLocked is the job line of an ended job's history record.
func (jt *JobTracker) historyJobLocked(j *job) jobhistory.Job {
	line := jobhistory.Job{
		Type: "job", JobID: j.id, Name: j.spec.Name, User: j.spec.User, Pool: j.spec.Pool,
		State: j.state.String(), Error: j.err, Submit: j.submit, Start: j.start, Finish: j.finish,
		Maps: len(j.maps), Reduces: len(j.reduces), Deadline: j.spec.DeadlineSeconds,
		Counters: jt.jobCountersLocked(j), Output: j.spec.Output, Priority: j.priority, Queue: j.spec.Pool,
	}
	if j.conf != nil {
		line.ViewACL, line.ModifyACL = j.conf.String(security.KeyJobViewACL), j.conf.String(security.KeyJobModifyACL)
	}
	if line.Queue == "" && j.conf != nil {
		line.Queue = j.conf.String("mapreduce.job.queuename")
	}
	ms, rs := j.summary(partitions.Map), j.summary(partitions.Reduce)
	line.SucceededMaps, line.FailedMaps, line.KilledMaps = int(ms.Succeeded), int(ms.Failed), int(ms.Killed)
	line.SucceededReduces, line.FailedReduces, line.KilledReduces = int(rs.Succeeded), int(rs.Failed), int(rs.Killed)
	for _, s := range j.splits {
		if s.Path != "" {
			line.InputBytes += s.Length
		}
	}
	return line
}

// historyAttempts are the attempt lines of an ended job's history record:
// every attempt of its maps, then of its reduces, by task index and in
// launch order. It needs no lock: once a job has ended, every attempt of
// it is final (endJobLocked killed the live ones) and nothing changes its
// tasks' attempts or their fields (a final attempt ignores reports,
// attemptStatusLocked; a done job gets no launch, split or scale-up), so
// the job's end builds these after the lock is released (O(attempts)).
func historyAttempts(j *job) []jobhistory.Attempt {
	n := 0
	for _, ts := range [][]*task{j.maps, j.reduces} {
		for _, t := range ts {
			n += len(t.attempts)
		}
	}
	out := make([]jobhistory.Attempt, 0, n)
	for _, ts := range [][]*task{j.maps, j.reduces} {
		for _, t := range ts {
			for _, a := range t.attempts {
				ha := jobhistory.Attempt{
					Type: "attempt", AttemptID: a.id, TaskType: typeLetter(t.typ), Task: t.index,
					Tracker: a.tracker, State: a.state.String(), Error: a.diag, Start: a.start, Finish: a.finish,
					Counters: a.counters, Speculative: a.speculative, Cloned: a.cloned,
				}
				if !a.shuffleFinish.IsZero() {
					sf := a.shuffleFinish
					ha.ShuffleFinish = &sf
				}
				if !a.sortFinish.IsZero() {
					sf := a.sortFinish
					ha.SortFinish = &sf
				}
				out = append(out, ha)
			}
		}
	}
	return out
}
