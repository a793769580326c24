package main

import (
	"fmt"
	"time"

	"gomr/jobtracker"
	"gomr/jobtracker/jobhistory"
)

// The priority experiment's arrival schedule, and the figures that tell
// whether a run kept the experiment's designed proportions.
//
// The experiment was designed (docs/preemption.md, "What was scaled in the
// priority experiment, and why") around a high-priority job of about 4.5 s
// alone: the first one arrives at 4 s, then one every 10 s, so that from
// one high-priority job's end to the next arrival the low-priority maps get
// about 5.5 s, less than a low-priority map's length (11-14 s), and kill
// makes every low map start over at every arrival. Those are absolute
// seconds, but every task's length is k times its own CPU time (the
// straggler injector, straggler.work=cpu), which differs from machine to
// machine and with the machine's load: on a quiet machine the same high
// maps took 6-8 s, and the gap shrank to 2-4 s.
//
// The calibrated schedule keeps the design's proportions instead of its
// seconds. Rule (fixed from the design before any calibrated run was
// measured; the constants are the design's ratios rounded to one decimal,
// not tuned to any result): H is the response time of a job shaped like a
// high-priority job, run alone on the run's fresh cluster before the
// workload starts; the first high-priority job arrives at 0.9 H (4 s for
// 4.5 s) and one more every 2.2 H (10 s for 4.5 s), so the gap from one
// high-priority job's end to the next arrival is 1.2 H (5.5 s for 4.5 s).
// The fixed schedule is the design's seconds as they were.
const (
	scheduleCalibrated = "calibrated"
	scheduleFixed      = "fixed"

	// calibratedFirst and calibratedPeriod are the calibrated schedule's
	// first arrival and period in units of H.
	calibratedFirst  = 0.9
	calibratedPeriod = 2.2

	// fixedFirst and fixedPeriod are the fixed schedule's.
	fixedFirst  = 4 * time.Second
	fixedPeriod = 10 * time.Second
)

// priorityArrivals returns the submission times, from the workload's
// start, of the priority experiment's n high-priority jobs under schedule
// (calibrated or fixed), h being the calibration job's response time
// (used by calibrated only), rounded to the millisecond.
func priorityArrivals(schedule string, h time.Duration, n int) ([]time.Duration, error) {
	var first, period time.Duration
	switch schedule {
	case scheduleFixed:
		first, period = fixedFirst, fixedPeriod
	case scheduleCalibrated:
		if h <= 0 {
			return nil, fmt.Errorf("calibrated schedule: the calibration job's response time is %v, want > 0", h)
		}
		first = time.Duration(calibratedFirst * float64(h))
		period = time.Duration(calibratedPeriod * float64(h))
	default:
		return nil, fmt.Errorf("unknown schedule %q (want %s or %s)", schedule, scheduleCalibrated, scheduleFixed)
	}
	if n < 0 {
		return nil, fmt.Errorf("%d arrivals, want >= 0", n)
	}
	at := make([]time.Duration, n)
	for i := range at {
		at[i] = (first + time.Duration(i)*period).Round(time.Millisecond)
	}
	return at, nil
}

// mapWork returns, for every map task of a job's history, the run time
// (seconds) of the attempts whose work counted: its checkpointed attempts
// and its successful one. For a map never preempted that is its length;
// for a checkpointed one, its length plus its dumps and restores. Killed
// and failed attempts, whose work was redone, are left out. Tasks in task
// order.
func mapWork(rec *jobhistory.Record) []float64 {
	work := map[int]float64{}
	maxTask := -1
	for _, a := range rec.Attempts {
		if a.TaskType != "m" || (a.State != "SUCCEEDED" && a.State != jobtracker.StateCheckpointed) {
			continue
		}
		work[a.Task] += a.Finish.Sub(a.Start).Seconds()
		maxTask = max(maxTask, a.Task)
	}
	var out []float64
	for t := 0; t <= maxTask; t++ {
		if w, ok := work[t]; ok {
			out = append(out, w)
		}
	}
	return out
}

// gaps returns the time (seconds) from each job's end to the next job's
// submission, jobs given as (submission, end) in submission order: the
// time the low-priority maps had between two high-priority jobs. A
// negative gap is a job submitted before the one before it ended.
func gaps(submit, end []time.Time) []float64 {
	var out []float64
	for i := 1; i < len(submit) && i < len(end); i++ {
		out = append(out, submit[i].Sub(end[i-1]).Seconds())
	}
	return out
}

// wastedShare is wasted slot-seconds over the capacity of the run, slots
// map slots during makespan seconds (seed 002's "wastage as % of
// capacity"); 0 when there is no capacity.
func wastedShare(wasted float64, slots int, makespan float64) float64 {
	if slots <= 0 || makespan <= 0 {
		return 0
	}
	return wasted / (float64(slots) * makespan)
}
