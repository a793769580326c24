package jobtracker

// Running totals: a job's progress and counters are the sums over its
// tasks, and a running task's part of them is its most advanced live
// attempt's (progress, counters and, for a split map, the counters of the
// split attempts it continues). Those sums used to be taken by walking
// the job's running tasks on every status call, page and sample, under
// the lock (4.5 ms for a job running 20,000 tasks). Now each task keeps
// the part it contributes (task.run) and the job the sums (job.runProgress,
// job.runCounters), brought up to date by refreshRunning whenever a
// task's state, one of its attempts' states, or an attempt's reported
// progress or counters change: a status call copies the sums, O(counter
// names) instead of O(running tasks).

import "gomr/mr"

// runningShare is what a running task contributes to its job's running
// totals, as last added.
type runningShare struct {
	progress float64
	// best is the live attempt whose counters are counted, and
	// countersVer the version of its counters then (attempt.countersVer).
	best        *attempt
	countersVer uint64
	// counted and countedPrefix are the attempt's counters and split
	// prefix added to job.runCounters (subtracted again when they
	// change).
	counted       mr.PackedCounters
	countedPrefix mr.CounterSet
}

// refreshRunning brings the task's part of the job's running totals up
// to date. With force, the counters are taken again even if the counted
// attempt and its counters did not change (a state change may have
// changed its split prefix).
func (j *job) refreshRunning(t *task, force bool) {
	if j == nil || j.active == nil {
		return
	}
	var best *attempt
	if j.active[t] {
		for _, a := range t.attempts {
			if a.live() && (best == nil || a.progress > best.progress) {
				best = a
			}
		}
	}
	p := 0.0
	if best != nil {
		p = max(float64(best.progress), 0)
	}
	j.runProgress[t.typ] += p - t.run.progress
	t.run.progress = p
	if j.byState[t.typ][taskRunning] == 0 {
		// No running task of the type left: the sum is 0 exactly, not
		// what rounding left of it.
		j.runProgress[t.typ] = 0
	}
	var ver uint64
	if best != nil {
		ver = best.countersVer
	}
	if !force && best == t.run.best && ver == t.run.countersVer {
		return
	}
	if j.runCounters == nil {
		j.runCounters = mr.CounterSet{}
	}
	t.run.counted.SubtractFrom(j.runCounters)
	j.runCounters.Subtract(t.run.countedPrefix)
	t.run.counted, t.run.countedPrefix = mr.PackedCounters{}, nil
	if best != nil {
		best.counters.AddTo(j.runCounters)
		t.run.counted = best.counters
		if prefix := t.splitPrefixOf(best); prefix != nil {
			j.runCounters.Merge(prefix)
			t.run.countedPrefix = prefix
		}
	}
	t.run.best, t.run.countersVer = best, ver
}

// runningTotalsByWalk is the running totals as the walk over the running
// tasks gives them: what refreshRunning keeps (tests check they agree).
func (j *job) runningTotalsByWalk() ([2]float64, mr.CounterSet) {
	var sum [2]float64
	counters := mr.CounterSet{}
	for t := range j.active {
		sum[t.typ] += t.progress()
		var best *attempt
		for _, a := range t.attempts {
			if a.live() && (best == nil || a.progress > best.progress) {
				best = a
			}
		}
		if best != nil {
			best.counters.AddTo(counters)
			counters.Merge(t.splitPrefixOf(best))
		}
	}
	return sum, counters
}
