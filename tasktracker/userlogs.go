package tasktracker

import (
	"context"
	"errors"
	"fmt"
	"gomr/mrpb"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

// Task logs, as Hadoop's userlogs: each attempt's stdout and stderr (the
// child's own log goes to its stderr) are written in its directory while
// it runs; when its job ends and the job's directory is removed, they are
// moved to <local dir>/userlogs/<job>/<attempt>/ and kept for
// mapreduce.job.userlog.retain.hours, across restarts of the tracker.
// The tracker's HTTP server serves them at mrpb.TaskLogPath to the JobTracker
// (which checks the job's ACL and passes them to `mr job -logs` and its
// web UI) and, without TLS, to anyone (Hadoop 1's tasklog servlet).

// TaskLogs are the logs kept of each attempt.
var TaskLogs = []string{"stdout", "stderr"}

func (tt *TaskTracker) userlogsDir() string { return filepath.Join(tt.localDir, "userlogs") }

// keepLogs moves the logs of a job's attempts out of its directory, which
// is about to be removed, into userlogs.
func (tt *TaskTracker) keepLogs(jobID string) {
	entries, err := os.ReadDir(tt.jobDir(jobID))
	if err != nil {
		return
	}
	for _, e := range entries {
		if !e.IsDir() || !validID(e.Name()) {
			continue
		}
		dst := filepath.Join(tt.userlogsDir(), jobID, e.Name())
		for _, name := range TaskLogs {
			src := filepath.Join(tt.jobDir(jobID), e.Name(), name)
			if _, err := os.Stat(src); err != nil {
				continue
			}
			if err := os.MkdirAll(dst, 0o755); err != nil {
				tt.log.Warn("keeping task logs", "attempt", e.Name(), "error", err)
				break
			}
			if err := os.Rename(src, filepath.Join(dst, name)); err != nil {
				tt.log.Warn("keeping task logs", "attempt", e.Name(), "file", name, "error", err)
			}
		}
	}
	// The job's folder's time is when its logs were kept: retention
	// counts from there.
	now := time.Now()
	_ = os.Chtimes(filepath.Join(tt.userlogsDir(), jobID), now, now)
}

// taskLogFile is where attempt's log name is: its directory while its job
// runs, userlogs after.
func (tt *TaskTracker) taskLogFile(attemptID, name string) (string, error) {
	job, ok := mrpb.JobOfAttempt(attemptID)
	ok = ok && validID(attemptID)
	if !ok {
		return "", fmt.Errorf("%q is not a task attempt id", attemptID)
	}
	for _, p := range []string{filepath.Join(tt.jobDir(job), attemptID, name), filepath.Join(tt.userlogsDir(), job, attemptID, name)} {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("no %s log of attempt %s on tracker %s (never run here, or its logs were removed after mapreduce.job.userlog.retain.hours)", name, attemptID, tt.name)
}

// serveTaskLog answers GET mrpb.TaskLogPath?attemptid=A&filter=stdout|stderr
// with the log as plain text.
func (tt *TaskTracker) serveTaskLog(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		http.Error(w, "GET only", http.StatusMethodNotAllowed)
		return
	}
	attempt, name := r.URL.Query().Get("attemptid"), r.URL.Query().Get("filter")
	if name == "" {
		name = "stderr"
	}
	if name != "stdout" && name != "stderr" {
		http.Error(w, fmt.Sprintf("filter %q: want stdout or stderr", name), http.StatusBadRequest)
		return
	}
	path, err := tt.taskLogFile(attempt, name)
	if err != nil {
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	f, err := os.Open(path)
	if err != nil {
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	defer f.Close()
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = io.Copy(w, f)
}

// cleanUserlogs removes the logs of jobs that ended more than retain ago,
// at start and then every retain/4 (at most every hour, at least every
// second), until ctx ends.
func (tt *TaskTracker) cleanUserlogs(ctx context.Context, retain time.Duration) {
	every := min(max(retain/4, time.Second), time.Hour)
	for {
		tt.removeOldUserlogs(time.Now().Add(-retain))
		select {
		case <-ctx.Done():
			return
		case <-time.After(every):
		}
	}
}

// removeOldUserlogs removes the userlogs of jobs whose folder is older
// than before, except those of jobs the tracker still runs.
func (tt *TaskTracker) removeOldUserlogs(before time.Time) {
	entries, err := os.ReadDir(tt.userlogsDir())
	if err != nil {
		return
	}
	for _, e := range entries {
		info, err := e.Info()
		if err != nil || !e.IsDir() || !info.ModTime().Before(before) {
			continue
		}
		tt.mu.Lock()
		_, live := tt.jobs[e.Name()]
		tt.mu.Unlock()
		if live {
			continue
		}
		if err := os.RemoveAll(filepath.Join(tt.userlogsDir(), e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
			tt.log.Warn("removing old task logs", "job", e.Name(), "error", err)
		} else {
			tt.log.Info("task logs removed after their retention", "job", e.Name())
		}
	}
}
