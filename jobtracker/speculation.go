package jobtracker

import (
	"context"
	"fmt"
	"time"

	"gomr/conf"
	"gomr/mr"
	"gomr/mrpb"
	"gomr/partitions"
	"gomr/speculator"
)

// speculation is one speculative attempt the speculator asked for. It is
// launched through the scheduler like any task (the job's pending count
// includes it, so the policy decides whose slot it takes), on a tracker
// other than the one its source runs on.
type speculation struct {
	task    *task
	kind    speculator.Kind
	source  *attempt
	attempt *attempt // nil until launched
	decided time.Time
	explain string
	// note says why a clone became a fresh attempt.
	note string
	// dropped says why it was never launched (the task ended first).
	dropped string
}

// outcome is what became of the speculation, for `mr job -status`.
func (s *speculation) outcome() string {
	switch {
	case s.dropped != "":
		return "DROPPED"
	case s.attempt == nil:
		return StatePending
	case s.attempt.live():
		return StateRunning
	case s.attempt.state == StateSucceeded:
		return "WON"
	case s.attempt.state == StateKilled && s.task.successful != nil && s.task.successful != s.attempt:
		return "LOST"
	}
	return s.attempt.state
}

func (s *speculation) proto() *mrpb.Speculation {
	p := &mrpb.Speculation{
		TaskId: s.task.id(), Kind: s.kind.String(), SourceAttempt: s.source.id,
		DecidedMs: s.decided.UnixMilli(), Explanation: s.explain, Outcome: s.outcome(), Note: s.note,
	}
	if s.attempt != nil {
		p.AttemptId = s.attempt.id
	}
	if s.dropped != "" {
		p.Note = s.dropped
	}
	return p
}

// newJobSpeculator builds a job's speculator from its configuration; the
// clone-cost estimator is the JobTracker's, shared by all jobs.
func (jt *JobTracker) newJobSpeculator(jcfg *conf.Config) (*speculator.Speculator, error) {
	p, err := speculator.FromConfig(jcfg)
	if err != nil {
		return nil, err
	}
	return speculator.NewShared(p, jt.cloneCost), nil
}

// speculationLoop scans the running jobs for stragglers: after a scan that
// asked for a speculative attempt it waits
// mapreduce.job.speculative.retry-after-speculate, otherwise
// retry-after-no-speculate, as Hadoop's DefaultSpeculator does.
func (jt *JobTracker) speculationLoop(ctx context.Context) {
	timer := time.NewTimer(jt.specParams.RetryNoSpec)
	defer timer.Stop()
	scanner := speculator.New(jt.specParams)
	for {
		select {
		case <-ctx.Done():
			return
		case <-jt.stop:
			return
		case <-timer.C:
		}
		began := time.Now()
		jt.mu.Lock()
		launched := jt.speculateLocked(jt.now())
		jt.mu.Unlock()
		timer.Reset(scanner.NextScanAfter(launched, time.Since(began)))
	}
}

// speculateLocked runs one scan of every running job and records the
// speculative attempts asked for; it reports whether there was any.
func (jt *JobTracker) speculateLocked(now time.Time) bool {
	any := false
	for _, j := range jt.order {
		if j.done() || j.committing || j.speculator == nil {
			continue
		}
		view, byID := jt.speculatorViewLocked(j, now)
		for _, d := range j.speculator.Scan(now, view, "") {
			tk := byID[d.TaskID]
			if tk == nil || tk.specPending != nil {
				continue
			}
			var src *attempt
			for _, a := range tk.running() {
				if a.id == d.Source {
					src = a
				}
			}
			if src == nil {
				continue
			}
			s := &speculation{task: tk, kind: d.Kind, source: src, decided: now, explain: d.Explanation.String()}
			tk.specPending = s
			tk.speculated = true
			j.speculations = append(j.speculations, s)
			any = true
			jt.log.Info("speculating", "task", tk.id(), "kind", d.Kind, "source", src.id, "why", s.explain)
		}
	}
	return any
}

// speculatorViewLocked is the speculator's view of a job, and its tasks by id.
func (jt *JobTracker) speculatorViewLocked(j *job, now time.Time) (*speculator.JobView, map[string]*task) {
	jv := &speculator.JobView{ID: j.id}
	byID := map[string]*task{}
	for _, typ := range []partitions.TaskType{partitions.Map, partitions.Reduce} {
		tv := jv.Type(typ)
		tasks := j.tasks(typ)
		tv.Total = len(tasks)
		for _, tk := range tasks {
			switch {
			case tk.state == StateSucceeded:
				if a := tk.successful; a != nil {
					tv.Finished = append(tv.Finished, a.finish.Sub(a.start))
				}
			case tk.state == StatePending:
				tv.Pending++
			default:
				live := tk.running()
				if len(live) == 0 {
					continue
				}
				view := speculator.TaskView{
					ID:                 tk.id(),
					SpeculativePending: tk.specPending != nil && tk.specPending.attempt == nil,
					Speculated:         tk.speculated,
				}
				for _, a := range live {
					view.Attempts = append(view.Attempts, jt.attemptViewLocked(a))
				}
				tv.Tasks = append(tv.Tasks, view)
				byID[view.ID] = tk
			}
		}
	}
	return jv, byID
}

func (jt *JobTracker) attemptViewLocked(a *attempt) speculator.AttemptView {
	v := speculator.AttemptView{
		ID: a.id, Tracker: a.tracker, Start: a.start, Progress: float64(a.progress),
		ReportAt: a.reportAt, ProgressChangedAt: a.progressChanged, StartProgress: a.startProgress,
		FileSetBytes: a.fileSetBytes, RSSBytes: a.rssBytes,
		CommitPending: a.state == StateCommitPending,
	}
	if t := jt.trackers[a.tracker]; t != nil {
		v.CRIU = t.criu && jt.cloning
	}
	return v
}

// speculativeTaskLocked picks a task of the job with a speculative attempt
// waiting for a slot that may run on tracker t (never beside its source).
func speculativeTaskLocked(j *job, typ partitions.TaskType, t *trackerState) *task {
	for _, tk := range j.tasks(typ) {
		s := tk.specPending
		if s == nil || s.attempt != nil || tk.state != StateRunning {
			continue
		}
		if s.source.tracker == t.name || tk.failedOn[t.name] {
			continue
		}
		return tk
	}
	return nil
}

// launchSpeculativeLocked starts the waiting speculative attempt of tk on
// tracker t.
func (jt *JobTracker) launchSpeculativeLocked(j *job, tk *task, t *trackerState, now time.Time) {
	s := tk.specPending
	if s.kind == speculator.Clone {
		// The clone path is not wired into the trackers yet; see
		// attemptViewLocked, which offers no clone until it is.
		s.note = "cloning is not available on this cluster; started a fresh attempt"
		s.kind = speculator.Fresh
		j.counters.Add(mr.SpeculationGroup, mr.CloneFallbacks, 1)
	}
	a := jt.launchLocked(j, tk, t, now, true)
	s.attempt = a
	name := mr.SpeculativeMaps
	if tk.typ == partitions.Reduce {
		name = mr.SpeculativeReduces
	}
	j.counters.Add(mr.SpeculationGroup, name, 1)
	jt.log.Info("speculative attempt", "attempt", a.id, "tracker", t.name, "source", s.source.id, "kind", s.kind)
}

// endSpeculationLocked settles tk's speculation when the task ends or its
// source attempt dies before the speculative one was launched.
func endSpeculationLocked(tk *task, why string) {
	s := tk.specPending
	if s == nil {
		return
	}
	if s.attempt == nil {
		s.dropped = why
	}
	tk.specPending = nil
}

func (s *speculation) String() string {
	return fmt.Sprintf("%s %s of %s", s.kind, s.task.id(), s.source.id)
}
