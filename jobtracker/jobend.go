package jobtracker

import (
	"fmt"
	"strings"
	"time"

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
	go func() {
		c, err := mr.NewCommitter(j.spec.Output)
		if err == nil {
			err = c.CommitJob()
		}
		jt.mu.Lock()
		defer jt.mu.Unlock()
		j.committing = false
		if err != nil {
			jt.endJobLocked(j, StateFailed, "job commit: "+err.Error())
			return
		}
		jt.endJobLocked(j, StateSucceeded, "")
	}()
}

// endJobLocked moves a job to a final state: live attempts are killed, the
// trackers told to purge the job, history written.
func (jt *JobTracker) endJobLocked(j *job, state, why string) {
	if j.done() {
		return
	}
	for _, ts := range [][]*task{j.maps, j.reduces} {
		for _, t := range ts {
			for _, a := range t.running() {
				jt.killAttemptLocked(a, "job "+strings.ToLower(state))
			}
			if t.state != StateSucceeded && t.state != StateFailed {
				t.state = StateKilled
			}
		}
	}
	j.state, j.err, j.finish = state, why, jt.now()
	close(j.notify)
	j.notify = make(chan struct{})
	for name := range j.trackers {
		if tr := jt.trackers[name]; tr != nil {
			tr.actions = append(tr.actions, &mrpb.TaskAction{Action: &mrpb.TaskAction_PurgeJob{PurgeJob: j.id}})
		}
	}
	if state != StateSucceeded {
		if c, err := mr.NewCommitter(j.spec.Output); err == nil {
			go func() {
				if err := c.AbortJob(); err != nil {
					jt.log.Warn("abort job output", "job", j.id, "error", err)
				}
			}()
		}
	}
	if state == StateSucceeded {
		jt.recordFaultsLocked(j, j.finish)
	}
	jt.driver.Finished(j.finish, j.id)
	rec := jt.historyRecordLocked(j)
	err := jt.history.Write(rec)
	if err != nil {
		// The job stays in the system directory: the next JobTracker
		// process records it as lost rather than not at all.
		jt.log.Error("writing job history", "job", j.id, "error", err)
	} else if err := jt.staging.Remove(j.id); err != nil {
		jt.log.Error("removing the job from the system directory", "job", j.id, "error", err)
	}
	addProfile(jt.profiles, &rec)
	jt.log.Info("job ended", "job", j.id, "state", state, "error", why, "seconds", j.finish.Sub(j.submit).Seconds())
	jt.jobEndedLocked(j, err == nil) // to be retired (retire.go)
}

// schedulingInfoLocked describes, in one line, how the policy sees a job:
// its partition and timer (multi-queue policies), pool and fair share
// (fair), deadline and slot quota (deadline policies).
func (jt *JobTracker) schedulingInfoLocked(jobID string) string {
	d, ok := jt.policy.(partitions.Describer)
	if !ok {
		return ""
	}
	ps := d.Describe(jt.now())
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
