package jobtracker

import (
	"fmt"
	"strings"
	"time"

	"gomr/jobtracker/jobhistory"
	"gomr/mr"
	"gomr/mrpb"
	"gomr/partitions"
)

// The end of a job: commit, final state, history.

// checkJobDoneLocked starts the output commit of a job whose tasks all
// succeeded; the job ends when the commit does.
func (jt *JobTracker) checkJobDoneLocked(j *job) {
	if j.done() || j.committing {
		return
	}
	if j.finishedMaps < len(j.maps) || j.finishedReduces < len(j.reduces) {
		return
	}
	j.committing = true
	joins, jerr := jt.fragmentJoinsLocked(j)
	go func() {
		c, err := mr.NewCommitter(j.spec.Output)
		if err == nil {
			err = jerr
		}
		// Split reduces' fragments become their part files (split.md).
		for index, runs := range joins {
			if err == nil {
				err = c.JoinFragmentRuns(index, runs)
			}
		}
		if err == nil {
			err = c.CommitJob()
		}
		jt.lock(holderJobEnd)
		defer jt.unlock()
		j.committing = false
		if err != nil {
			jt.endJobLocked(j, jobFailed, "job commit: "+err.Error())
			return
		}
		jt.endJobLocked(j, jobSucceeded, "")
	}()
}

// endJobLocked moves a job to a final state: live attempts are killed, the
// trackers told to purge the job, history written. A job already ended is
// left as it is (a commit and a kill may race to end it).
func (jt *JobTracker) endJobLocked(j *job, state jobState, why string) {
	if j.done() {
		return
	}
	// The job is final before its attempts are killed, so that no end of
	// an attempt can end it again (attemptFailedLocked stops at a job
	// that is done).
	if err := j.to(state); err != nil {
		jt.illegalLocked(err)
		return
	}
	j.err, j.finish = why, jt.now()
	jt.observeJobLocked(j)
	for _, ts := range [][]*task{j.maps, j.reduces} {
		for _, t := range ts {
			for _, a := range t.running() {
				jt.killAttemptLocked(a, "job "+strings.ToLower(state.String()))
			}
			if t.state == taskPending || t.state == taskRunning {
				jt.taskToLocked(t, taskKilled)
			}
		}
	}
	close(j.notify)
	j.notify = make(chan struct{})
	// One purge order for all the job's trackers (up to every tracker of
	// the cluster): actions are only read once queued, so they can share
	// it.
	purge := &mrpb.TaskAction{Action: &mrpb.TaskAction_PurgeJob{PurgeJob: j.id}}
	for name := range j.trackers {
		if tr := jt.trackers[name]; tr != nil {
			tr.actions = append(tr.actions, purge)
		}
	}
	if state != jobSucceeded {
		// The committer is made off the lock too: for an hdfs:// output
		// it may connect to the namenode.
		go func() {
			c, err := mr.NewCommitter(j.spec.Output)
			if err == nil {
				err = c.AbortJob()
			}
			if err != nil {
				jt.log.Warn("abort job output", "job", j.id, "error", err)
			}
		}()
	}
	if state == jobSucceeded {
		jt.recordFaultsLocked(j, j.finish)
	}
	jt.driver.Finished(j.finish, j.id)
	// The history file is written once the lock is released (file I/O
	// never holds up heartbeats), before the call that ended the job
	// returns when that is a client's call (a kill); until then the job
	// is historyWriting, GetJobHistory waits for it and the retirement
	// pass keeps it. When that call is a heartbeat, the file is written
	// off the replies' path (afterRepliesLocked, then a goroutine that
	// Serve waits for): a job of 37,500 tasks has megabytes of history,
	// and no heartbeat, the one that ended the job included, waits for
	// it. Until the file is written the job stays in the system
	// directory, as when its write fails. Only the job line is taken
	// under the lock; the attempt lines, O(attempts), are built with the
	// file (historyAttempts: the ended job's attempts no longer change).
	line := jt.historyJobLocked(j)
	j.history, j.historyDone = historyWriting, make(chan struct{})
	jt.afterRepliesLocked(func() {
		jt.writeHistory(j, jobhistory.Record{Job: line, Attempts: historyAttempts(j)}, false)
	})
	jt.log.Info("job ended", "job", j.id, "state", state, "error", why, "seconds", j.finish.Sub(j.submit).Seconds())
	jt.jobEndedLocked(j) // to be retired (retire.go)
}

// writeHistory writes an ended job's history file and takes the job out
// of the system directory; it runs without the lock. retry says it is the
// retirement pass's write of a job whose first write failed (retire.go):
// the job's profile was merged then.
func (jt *JobTracker) writeHistory(j *job, rec jobhistory.Record, retry bool) {
	err := jt.history.Write(rec)
	if err != nil {
		// The job stays in the system directory: the next JobTracker
		// process records it as lost rather than not at all, and the
		// retirement pass tries again.
		jt.log.Error("writing job history", "job", j.id, "error", err)
	} else {
		if retry {
			jt.log.Info("job history written on retry", "job", j.id)
		}
		if err := jt.staging.Remove(j.id); err != nil {
			jt.log.Error("removing the job from the system directory", "job", j.id, "error", err)
		}
	}
	// The profile is computed from the record before the lock is taken
	// (O(attempts): 0.1 s of a 37,500-map job at load 15), and merged
	// under it.
	name, profile, succeeded := jobProfile(&rec)
	jt.lock(holderHistoryWritten)
	defer jt.unlock()
	j.history = historyWritten
	if err != nil {
		j.history = historyUnwritten
	}
	if succeeded && !retry {
		jt.addProfileLocked(name, profile)
	}
	close(j.historyDone)
}

// schedulingInfoLocked describes, in one line, how the policy sees a job:
// its partition and timer (multi-queue policies), pool and fair share
// (fair), deadline and slot quota (deadline policies).
func (jt *JobTracker) schedulingInfoLocked(jobID string) string {
	return schedulingInfo(jt.describeLocked(), jobID)
}

// describeLocked is the policy's own view now (nil for a policy without
// one). Policies are pure code driven under jt.mu; Describe returns a
// copy, O(jobs).
func (jt *JobTracker) describeLocked() *partitions.PolicyStatus {
	d, ok := jt.policy.(partitions.Describer)
	if !ok {
		return nil
	}
	ps := d.Describe(jt.now())
	return &ps
}

// schedulingInfo is schedulingInfoLocked from the policy's view ps.
func schedulingInfo(ps *partitions.PolicyStatus, jobID string) string {
	if ps == nil {
		return ""
	}
	for _, js := range ps.Jobs {
		if js.ID != jobID {
			continue
		}
		var parts []string
		if len(ps.Partitions) > 0 && js.Queue >= 0 && js.Queue < len(ps.Partitions) {
			p := ps.Partitions[js.Queue]
			s := fmt.Sprintf("partition %d of %d, partial size %s", js.Queue+1, len(ps.Partitions), js.PartialSize.Round(time.Millisecond))
			if p.Timer > 0 {
				s += ", timer " + p.Timer.Round(time.Millisecond).String()
			}
			parts = append(parts, s)
		}
		if js.Pool != "" {
			parts = append(parts, fmt.Sprintf("pool %s, fair share %.1f maps %.1f reduces", js.Pool, js.FairShareMaps, js.FairShareReduces))
		}
		if !js.Deadline.IsZero() {
			s := fmt.Sprintf("deadline %s, quota %d maps %d reduces", js.Deadline.Format(time.RFC3339), js.MinMaps, js.MinReduces)
			if !js.Feasible {
				s += " (no allocation meets it, or no profile)"
			}
			parts = append(parts, s)
		}
		return strings.Join(parts, "; ")
	}
	return ""
}
