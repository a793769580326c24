package jobtracker

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"gomr/jobtracker/jobhistory"
	"gomr/mr"
	"gomr/security"
)

// Staging is the JobTracker's system directory
// (mapreduce.jobtracker.system.dir): one file per job it accepted and has
// not finished, <job id>.json, written before the submission is answered
// and removed once the job's history is written. After a restart it tells
// which jobs were lost, and which job numbers are taken.
type Staging struct {
	dir string
	// events is the jobs' event logs' writer (recovery.go).
	events eventLog
}

// stagedJob is what the JobTracker keeps of a job it has not finished.
type stagedJob struct {
	ID     string     `json:"id"`
	Spec   mr.JobSpec `json:"spec"`
	Splits []mr.Split `json:"splits"`
	Secret []byte     `json:"secret"`
	Submit time.Time  `json:"submit"`
	// Restarts counts the JobTracker restarts the job was recovered from.
	Restarts int `json:"restarts,omitempty"`
}

// OpenStaging creates the system directory if needed, readable by its
// owner only (it holds the jobs' shuffle secrets).
func OpenStaging(dir string) (*Staging, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("system directory (mapreduce.jobtracker.system.dir) %s: %w", dir, err)
	}
	return &Staging{dir: dir}, nil
}

func (s *Staging) path(id string) (string, error) {
	if !jobIDPattern.MatchString(id) {
		return "", fmt.Errorf("not a job id: %q", id)
	}
	return filepath.Join(s.dir, id+".json"), nil
}

// Write stores a job, atomically and durably.
func (s *Staging) Write(j *stagedJob) error {
	p, err := s.path(j.ID)
	if err != nil {
		return err
	}
	data, err := json.Marshal(j)
	if err != nil {
		return err
	}
	tmp := p + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("staging job %s: %w", j.ID, err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("staging job %s: %w", j.ID, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("staging job %s: %w", j.ID, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("staging job %s: %w", j.ID, err)
	}
	return os.Rename(tmp, p)
}

// Remove forgets a finished job (and its event log).
func (s *Staging) Remove(id string) error {
	p, err := s.path(id)
	if err != nil {
		return err
	}
	// Events queued for the job are written first (into the file about
	// to go), and none is written after.
	s.events.forget(id)
	ev, _ := s.eventsPath(id)
	for _, f := range []string{ev, p} {
		if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return nil
}

// List reads every staged job. A file that cannot be read is an error
// naming it: a job must not disappear silently.
func (s *Staging) List() ([]*stagedJob, error) {
	ents, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, fmt.Errorf("system directory %s: %w", s.dir, err)
	}
	var out []*stagedJob
	for _, e := range ents {
		id, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || !jobIDPattern.MatchString(id) {
			continue
		}
		data, err := os.ReadFile(filepath.Join(s.dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("staged job %s: %w", id, err)
		}
		var j stagedJob
		if err := json.Unmarshal(data, &j); err != nil {
			return nil, fmt.Errorf("staged job %s in %s: %w", id, s.dir, err)
		}
		if j.ID != id {
			return nil, fmt.Errorf("staged job file %s holds job %q", e.Name(), j.ID)
		}
		out = append(out, &j)
	}
	return out, nil
}

// lastJobNumber is the highest n of the job ids job_<ident>_<n> named by
// the files in dirs (staged jobs and history records): a JobTracker
// restarted within the minute of its ident goes on from there, so that no
// job id is given twice.
func lastJobNumber(ident string, dirs ...string) (int, error) {
	prefix := "job_" + ident + "_"
	last := 0
	for _, dir := range dirs {
		ents, err := os.ReadDir(dir)
		if err != nil {
			return 0, fmt.Errorf("reading job ids in %s: %w", dir, err)
		}
		for _, e := range ents {
			rest, ok := strings.CutPrefix(e.Name(), prefix)
			if !ok {
				continue
			}
			digits := rest
			if i := strings.IndexByte(rest, '.'); i >= 0 {
				digits = rest[:i]
			}
			if n, err := strconv.Atoi(digits); err == nil && n > last {
				last = n
			}
		}
	}
	return last, nil
}

// failLostJobs ends the jobs a previous JobTracker process accepted and did
// not finish: each is recorded in the history as FAILED with the reason,
// its output's temporary files are removed, and it leaves the system
// directory. (Hadoop 1 without restart recovery drops them silently.) A job
// whose output was committed before the restart (_SUCCESS is there) was
// not lost: it is rebuilt from its event log and recorded as succeeded.
func (jt *JobTracker) failLostJobs() error {
	lost, err := jt.staging.List()
	if err != nil {
		return err
	}
	now := jt.now()
	for _, j := range lost {
		if c, err := mr.NewCommitter(j.Spec.Output); err == nil {
			committed, err := c.JobCommitted()
			if err != nil {
				jt.log.Warn("cannot tell whether a lost job's output was committed; recording it lost", "job", j.ID, "error", err)
			}
			if committed {
				jt.lock(holderRecovery)
				err := jt.recoverJob(j, now)
				jt.unlock()
				if err == nil {
					continue
				}
				// recoverJob fails before it adds the job: record it
				// lost, as before, rather than not start.
				jt.log.Error("cannot rebuild a committed job; recording it lost", "job", j.ID, "error", err)
			}
		}
		why := "lost: the JobTracker restarted while the job ran (submitted " + j.Submit.Format(time.RFC3339) + ")"
		rec := jobhistory.Record{Job: jobhistory.Job{
			Type: "job", JobID: j.ID, Name: j.Spec.Name, User: j.Spec.User, Pool: j.Spec.Pool,
			State: StateFailed, Error: why, Submit: j.Submit, Start: j.Submit, Finish: now,
			Maps: len(j.Splits), Reduces: j.Spec.NumReduces, Deadline: j.Spec.DeadlineSeconds,
			Counters: mr.CounterSet{},
			ViewACL:  j.Spec.Conf[security.KeyJobViewACL], ModifyACL: j.Spec.Conf[security.KeyJobModifyACL],
		}}
		for _, s := range j.Splits {
			if s.Path != "" {
				rec.Job.InputBytes += s.Length
			}
		}
		if err := jt.history.Write(rec); err != nil {
			return fmt.Errorf("recording lost job %s: %w", j.ID, err)
		}
		if c, err := mr.NewCommitter(j.Spec.Output); err == nil {
			if err := c.AbortJob(); err != nil {
				jt.log.Warn("abort lost job's output", "job", j.ID, "error", err)
			}
		}
		// Its attempts may still run on trackers that have not yet
		// registered with this process: aborted again as each of them
		// registers listing the job (abort.go).
		jt.lock(holderRecovery)
		jt.awaitPurgeLocked(j.ID, j.Spec.Output, nil)
		jt.unlock()
		if err := jt.staging.Remove(j.ID); err != nil {
			return fmt.Errorf("removing lost job %s from the system directory: %w", j.ID, err)
		}
		jt.log.Warn("job lost in a JobTracker restart", "job", j.ID, "name", j.Spec.Name, "output", j.Spec.Output)
	}
	return nil
}
