package speculator

import (
	"fmt"
	"math"
	"time"
)

// Status says why a task is or is not a speculation candidate (Hadoop's
// speculationValue sentinels, spec §1.2).
type Status int

// Statuses of a task in a scan.
const (
	// Candidate: a speculative attempt is expected to end before the
	// running one; Evaluation.Score is the gain.
	Candidate Status = iota
	// OnSchedule: too few tasks of the type have finished to judge.
	OnSchedule
	// AlreadySpeculating: the task already has its one extra attempt.
	AlreadySpeculating
	// TooNew: the attempt's start lies after the scan time.
	TooNew
	// ProgressIsGood: the attempt is expected to end by now, or has no
	// usable progress report yet.
	ProgressIsGood
	// NotRunning: the task has no live attempt.
	NotRunning
	// TooLate: no speculative attempt would end before the running one.
	TooLate
	// BelowThreshold: the estimated runtime is within mean + threshold ×
	// std (only when the slow-task threshold is applied).
	BelowThreshold
	// NowhereToRun: no speculative attempt could run: a fresh one has no
	// tracker but the original's to run on (AttemptView.NoOtherTracker)
	// and the original cannot be cloned now. The task is judged again at
	// the next scan, when the attempt may have reached a phase it can be
	// cloned in, or another tracker joined.
	NowhereToRun
)

var statusNames = [...]string{"candidate", "on-schedule", "already-speculating", "too-new", "progress-is-good", "not-running", "too-late", "below-threshold", "nowhere-to-run"}

// String returns the status's name.
func (s Status) String() string {
	if s >= 0 && int(s) < len(statusNames) {
		return statusNames[s]
	}
	return fmt.Sprintf("status(%d)", int(s))
}

// Explanation is the estimate behind a decision, as `mr job -status`
// shows it per speculated task. Times are absolute; durations relative to
// Now.
type Explanation struct {
	Kind Kind
	Now  time.Time
	// Attempt and Tracker name the running attempt that was judged.
	Attempt, Tracker string
	// Progress is the attempt's progress p.
	Progress float64
	// EstimatedEnd is when the running attempt is expected to end.
	EstimatedEnd time.Time
	// MeanRuntime is the mean duration of finished tasks of the type, the
	// expected runtime of a fresh attempt.
	MeanRuntime time.Duration
	// FreshEnd = Now + MeanRuntime.
	FreshEnd time.Time
	// FreshNote, when set, says why a fresh attempt was not an option
	// (no other tracker to run it on); FreshEnd is then for information.
	FreshNote string
	// CloneConsidered is false when a clone was ruled out before costing;
	// CloneNote then says why. The clone fields below are set only when
	// it is true.
	CloneConsidered bool
	CloneNote       string
	// Cost is the damped clone cost and its inputs.
	Cost CloneCost
	// Remaining = (1 - Progress) × MeanRuntime.
	Remaining time.Duration
	// CloneEnd = Now + Cost.Total + Remaining.
	CloneEnd time.Time
	// Score is EstimatedEnd minus the earlier of FreshEnd and CloneEnd.
	Score time.Duration
}

// String renders the explanation on one line, times relative to Now.
func (x Explanation) String() string {
	s := fmt.Sprintf("%s of %s on %s at p=%.3f: original ends in %v; fresh in %v (mean runtime)",
		x.Kind, x.Attempt, x.Tracker, x.Progress, x.EstimatedEnd.Sub(x.Now), x.FreshEnd.Sub(x.Now))
	if x.FreshNote != "" {
		s += ", but " + x.FreshNote
	}
	if !x.CloneConsidered {
		return s + "; no clone: " + x.CloneNote
	}
	c := x.Cost
	return s + fmt.Sprintf("; clone in %v = cost %v (beta %.2f × (t_vm %v + image %d B / %.3g B/s + file set %d B / %.3g B/s)) + remaining %v",
		x.CloneEnd.Sub(x.Now), c.Total, c.Beta, c.TVM, c.ImageBytes, c.ImageBps, c.FileSetBytes, c.CopyBps, x.Remaining)
}

// Evaluation is the judgement of one task in a scan.
type Evaluation struct {
	Status Status
	// Score is the expected gain of speculating, positive for a Candidate.
	Score time.Duration
	// Explanation is filled for Candidate, TooLate, BelowThreshold and
	// NowhereToRun.
	Explanation Explanation
}

// Decision asks the JobTracker to start one speculative attempt.
type Decision struct {
	JobID  string
	Type   TaskType
	TaskID string
	Kind   Kind
	// Source is the running attempt that was judged (and for a clone, the
	// one to clone).
	Source string
	// AvoidTracker is the tracker Source runs on; the speculative attempt
	// must not be placed there.
	AvoidTracker string
	Explanation  Explanation
}

// Speculator is the pure speculation core. It holds its parameters and
// the clone-cost estimator; job state stays with the caller, who passes a
// JobView per scan. Not safe for concurrent use.
type Speculator struct {
	p   Params
	est *Estimator
}

// New returns a speculator with parameters p (see FromConfig).
func New(p Params) *Speculator {
	return &Speculator{p: p, est: NewEstimator(p.Estimator)}
}

// NewShared returns a speculator with parameters p that uses est as its
// clone-cost estimator, so that speculators of several jobs learn from the
// same measured clones. p.Estimator is not used.
func NewShared(p Params, est *Estimator) *Speculator {
	return &Speculator{p: p, est: est}
}

// Params returns the speculator's parameters.
func (s *Speculator) Params() Params { return s.p }

// Estimator returns the clone-cost estimator.
func (s *Speculator) Estimator() *Estimator { return s.est }

// RecordClone feeds a measured clone to the clone-cost estimator.
func (s *Speculator) RecordClone(m CloneMeasurement) error {
	if err := s.est.Observe(m); err != nil {
		return fmt.Errorf("speculator: %w", err)
	}
	return nil
}

// NextScanAfter is how long to wait before the next scan, given whether
// this one launched a speculation and how long it took (Hadoop: 15 s after
// a speculation, 1 s otherwise, never less than the scan itself).
func (s *Speculator) NextScanAfter(launched bool, scanDuration time.Duration) time.Duration {
	d := s.p.RetryNoSpec
	if launched {
		d = s.p.RetryAfterSpec
	}
	return max(d, scanDuration)
}

// stats is Hadoop's DataStatistics over finished durations.
type stats struct {
	n         int
	mean, std float64 // seconds
}

func statsOf(ds []time.Duration) stats {
	st := stats{n: len(ds)}
	if st.n == 0 {
		return st
	}
	var sum, sq float64
	for _, d := range ds {
		x := d.Seconds()
		sum += x
		sq += x * x
	}
	st.mean = sum / float64(st.n)
	if v := sq/float64(st.n) - st.mean*st.mean; v > 0 && st.n > 1 {
		st.std = math.Sqrt(v)
	}
	return st
}

// gated is Hadoop's +∞ threshold: too few tasks of the type finished.
func (s *Speculator) gated(tv *TypeView, st stats) bool {
	if st.n < s.p.MinDoneCount {
		return true
	}
	return tv.Total > 0 && float64(st.n)/float64(tv.Total) < s.p.MinDoneFraction
}

// Evaluate judges one task of type t of job at time now, as a scan does.
func (s *Speculator) Evaluate(now time.Time, job *JobView, t TaskType, task *TaskView) Evaluation {
	tv := job.Type(t)
	return s.evaluate(now, tv, statsOf(tv.Finished), task)
}

func (s *Speculator) evaluate(now time.Time, tv *TypeView, st stats, task *TaskView) Evaluation {
	gated := s.gated(tv, st)
	if !task.Speculated && gated {
		return Evaluation{Status: OnSchedule}
	}
	if len(task.Attempts) > 1 || task.SpeculativePending {
		return Evaluation{Status: AlreadySpeculating}
	}
	if len(task.Attempts) == 0 {
		return Evaluation{Status: NotRunning}
	}
	if gated {
		return Evaluation{Status: OnSchedule}
	}
	a := &task.Attempts[0]
	if a.Start.IsZero() || a.Start.After(now) {
		return Evaluation{Status: TooNew}
	}
	est, ok := s.estRuntime(now, a)
	if !ok {
		return Evaluation{Status: ProgressIsGood}
	}
	estEnd := a.Start.Add(est)
	if estEnd.Before(now) {
		return Evaluation{Status: ProgressIsGood}
	}
	mean := seconds(st.mean)
	x := Explanation{
		Kind: Fresh, Now: now, Attempt: a.ID, Tracker: a.Tracker, Progress: a.Progress,
		EstimatedEnd: estEnd, MeanRuntime: mean, FreshEnd: now.Add(mean),
	}
	bestEnd := x.FreshEnd
	if a.NoOtherTracker {
		x.FreshNote = "no tracker other than " + a.Tracker + " could run it"
	}
	if note := s.cloneObstacle(a); note != "" {
		x.CloneNote = note
		if x.FreshNote != "" {
			return Evaluation{Status: NowhereToRun, Explanation: x}
		}
	} else {
		x.CloneConsidered = true
		x.Cost = s.est.Cost(a.RSSBytes, a.FileSetBytes)
		x.Remaining = seconds((1 - clamp01(a.Progress)) * st.mean)
		x.CloneEnd = now.Add(x.Cost.Total).Add(x.Remaining)
		// Ties go to a fresh attempt, when one can run.
		if x.CloneEnd.Before(x.FreshEnd) || x.FreshNote != "" {
			x.Kind, bestEnd = Clone, x.CloneEnd
		} else {
			x.CloneNote = "a fresh attempt ends no later"
		}
	}
	x.Score = estEnd.Sub(bestEnd)
	if s.p.ApplyThreshold && est.Seconds() <= st.mean+s.p.SlowTaskThreshold*st.std {
		return Evaluation{Status: BelowThreshold, Score: x.Score, Explanation: x}
	}
	if !bestEnd.Before(estEnd) {
		return Evaluation{Status: TooLate, Score: x.Score, Explanation: x}
	}
	return Evaluation{Status: Candidate, Score: x.Score, Explanation: x}
}

// Runtime estimators (KeyRuntimeEstimator).
const (
	// EstimatorLegacy is Hadoop's default LegacyTaskRuntimeEstimator: the
	// attempt's elapsed time over its progress.
	EstimatorLegacy = "legacy"
	// EstimatorSmoothed is Hadoop's ExponentiallySmoothedTaskRuntimeEstimator:
	// elapsed time plus the remaining progress over the smoothed recent
	// progress rate, which sees an attempt slow down late (a reduce whose
	// reduce phase crawls after a quick shuffle) sooner than the average
	// from its start does.
	EstimatorSmoothed = "smoothed"
)

// SmoothRate folds a progress report into an attempt's smoothed progress
// rate (spec §1.2, with the sign of Hadoop's exponent corrected): the rate
// read since the previous report, (p - prevP)/(t - prevT), weighted 1 - w
// against the old rate's w = exp(-(t - prevT)/lambda). The first read
// (rate 0) is taken as it is. For an attempt's first report the previous
// one is its start at its start progress. Reports that do not move time
// forward leave the rate as it is.
func SmoothRate(rate, prevP float64, prevT time.Time, p float64, t time.Time, lambda time.Duration) float64 {
	if prevT.IsZero() || !t.After(prevT) || lambda <= 0 {
		return rate
	}
	dt := t.Sub(prevT).Seconds()
	read := math.Max(p-prevP, 0) / dt
	if rate <= 0 {
		return read
	}
	w := math.Exp(-dt / lambda.Seconds())
	return rate*w + read*(1-w)
}

// estRuntime is the estimate of the attempt's whole runtime, by the
// configured estimator (the LegacyTaskRuntimeEstimator by default), with
// the stagnation rule and the clone correction of §3.7; false when there
// is no usable estimate.
func (s *Speculator) estRuntime(now time.Time, a *AttemptView) (time.Duration, bool) {
	ts := a.ReportAt
	changed := a.ProgressChangedAt
	if changed.IsZero() {
		changed = a.ReportAt
	}
	if changed.IsZero() {
		changed = a.Start
	}
	if !a.BeingCloned && s.p.Stagnation > 0 && now.Sub(changed) > s.p.Stagnation {
		ts = now // synthetic report: same progress, now
	}
	if ts.IsZero() || !ts.After(a.Start) {
		return 0, false
	}
	el := ts.Sub(a.Start).Seconds()
	p := clamp01(a.Progress)
	if s.p.RuntimeEstimator == EstimatorSmoothed && a.Rate > 0 {
		return seconds(el + (1-p)/a.Rate), true
	}
	var r float64
	if p0 := clamp01(a.StartProgress); p0 > 0 && p0 < 1 {
		r = el * (1 - p0) / math.Max(1e-4, p-p0)
	} else {
		r = el / math.Max(1e-4, p)
	}
	return seconds(r), true
}

// cloneObstacle says why attempt a cannot be cloned, or "" when it can.
func (s *Speculator) cloneObstacle(a *AttemptView) string {
	switch {
	case !s.p.CloneEnabled:
		return "clone speculation disabled (" + KeyCloneEnabled + ")"
	case !a.CRIU:
		return "cannot be cloned on tracker " + a.Tracker + " (no CRIU there, or no quiet point in the attempt's phase)"
	case a.BeingCloned:
		return "attempt is being cloned"
	case a.CommitPending:
		return "attempt is committing"
	case a.Progress <= 0:
		return "attempt has no progress to save"
	case a.RSSBytes <= 0:
		return "attempt's image size is unknown"
	}
	return ""
}

// Scan runs one speculation scan of job at time now, map tasks then reduce
// tasks, and returns at most one decision per type. target is the tracker
// that would host the speculative attempt if it is known ("" otherwise):
// tasks whose running attempt is on it are passed over, since a
// speculative attempt never runs beside its original.
func (s *Speculator) Scan(now time.Time, job *JobView, target string) []Decision {
	var out []Decision
	for _, t := range []TaskType{Map, Reduce} {
		if d, ok := s.scanType(now, job, t, target); ok {
			out = append(out, d)
		}
	}
	return out
}

func (s *Speculator) scanType(now time.Time, job *JobView, t TaskType, target string) (Decision, bool) {
	if (t == Map && !s.p.MapSpeculative) || (t == Reduce && !s.p.ReduceSpeculative) {
		return Decision{}, false
	}
	tv := job.Type(t)
	if tv.Pending > 0 {
		return Decision{}, false
	}
	st := statsOf(tv.Finished)
	allowed := max(s.p.MinAllowed, int(s.p.CapTotal*float64(tv.Total)))
	already, running := 0, 0
	best := -1
	var bestEv Evaluation
	for i := range tv.Tasks {
		task := &tv.Tasks[i]
		ev := s.evaluate(now, tv, st, task)
		if ev.Status == AlreadySpeculating {
			already++
		}
		if ev.Status != NotRunning {
			running++
		}
		if ev.Status != Candidate || ev.Score <= 0 {
			continue
		}
		if target != "" && task.Attempts[0].Tracker == target {
			continue
		}
		if best < 0 || ev.Score > bestEv.Score {
			best, bestEv = i, ev
		}
	}
	allowed = max(allowed, int(s.p.CapRunning*float64(running)))
	if best < 0 || allowed <= already {
		return Decision{}, false
	}
	task := &tv.Tasks[best]
	return Decision{
		JobID: job.ID, Type: t, TaskID: task.ID, Kind: bestEv.Explanation.Kind,
		Source: task.Attempts[0].ID, AvoidTracker: task.Attempts[0].Tracker,
		Explanation: bestEv.Explanation,
	}, true
}

func clamp01(p float64) float64 {
	if math.IsNaN(p) || p < 0 {
		return 0
	}
	return min(p, 1)
}
