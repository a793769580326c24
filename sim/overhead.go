package sim

import (
	"fmt"
	"time"
)

// Overheads are the costs the real runtime adds to a trace's task
// durations, as the JobTracker's job history records them, so that the
// simulator predicts each job's completion on the runtime rather than on
// an ideal cluster (Options.Overheads; docs/comparison.md says how the
// defaults were measured). The zero value adds nothing.
//
// The model, per attempt, from its start as the JobTracker records it
// (its assignment in a heartbeat reply):
//
//	map:    end = start + Launch + work + Report
//	reduce: end = max(start + Launch + shuffle, maps end + MapEvents) + reduce + Report
//
// where "maps end" is when the JobTracker recorded the end of the job's
// last map. With Options.Heartbeat > 0 slots are offered at the trackers'
// heartbeats only; OutOfBand and AfterLaunch say when a tracker heartbeats
// besides its period.
type Overheads struct {
	// Launch is from the JobTracker's assignment of an attempt to its task
	// code starting: the reply reaching the tracker, the exec of the child
	// process and its fetching of its task.
	Launch time.Duration
	// Report is from the task code's end to the JobTracker recording the
	// attempt's end: the child's commit, report and exit, and the
	// tracker's heartbeat that carries it.
	Report time.Duration
	// MapEvents is from the JobTracker recording the job's last map end to
	// a reduce that waited for it starting its reduce phase: the map
	// event reaching the reduce (a long poll), the fetch of that map's
	// output and the final merge. It may be negative down to -Report:
	// a map announces its final spill before its end is reported.
	MapEvents time.Duration
	// OutOfBand makes a tracker heartbeat as soon as a task on it ends
	// (mapreduce.tasktracker.outofband.heartbeat), so that the slot is
	// offered at once; the slots of other trackers, and a job that
	// arrives, wait for a heartbeat. It needs Options.Heartbeat > 0.
	OutOfBand bool
	// AfterLaunch, when > 0, is how soon a tracker heartbeats again after
	// a heartbeat that launched a task (the TaskTracker's 50 ms, at most
	// the period). Every heartbeat, periodic or out of band, restarts the
	// tracker's period, as the TaskTracker's timer does.
	AfterLaunch time.Duration
}

// TaskTrackerAfterLaunch is the TaskTracker's follow-up heartbeat after a
// heartbeat whose reply launched tasks (tasktracker.heartbeatLoop).
const TaskTrackerAfterLaunch = 50 * time.Millisecond

// MeasuredOverheads are the costs measured on the embedded cluster of a
// 2-core machine (docs/comparison.md, "The simulator's overhead model"),
// with the out-of-band heartbeat and the TaskTracker's follow-up
// heartbeat. The heartbeat period itself is Options.Heartbeat, the
// cluster's mapreduce.tasktracker.heartbeat.interval.
var MeasuredOverheads = Overheads{
	Launch:      55 * time.Millisecond,
	Report:      8 * time.Millisecond,
	MapEvents:   -4 * time.Millisecond,
	OutOfBand:   true,
	AfterLaunch: TaskTrackerAfterLaunch,
}

// IsZero reports whether o adds nothing.
func (o Overheads) IsZero() bool { return o == Overheads{} }

// check refuses values the model cannot use; heartbeat is the trackers'
// period (Options.Heartbeat).
func (o Overheads) check(heartbeat time.Duration) error {
	switch {
	case o.Launch < 0 || o.Report < 0 || o.AfterLaunch < 0:
		return fmt.Errorf("overheads: launch %v, report %v and after-launch heartbeat %v must not be negative", o.Launch, o.Report, o.AfterLaunch)
	case o.MapEvents < -o.Report:
		return fmt.Errorf("overheads: map events delay %v is earlier than the last map's code ends (report %v)", o.MapEvents, o.Report)
	case (o.OutOfBand || o.AfterLaunch > 0) && heartbeat == 0:
		return fmt.Errorf("overheads: out-of-band and after-launch heartbeats need a heartbeat interval")
	}
	return nil
}

// mapEnd is when the JobTracker records the end of a map attempt started
// at start whose code runs for work.
func (o Overheads) mapEnd(start, work time.Duration) time.Duration {
	return start + o.Launch + work + o.Report
}

// reduceEnd is when the JobTracker records the end of a reduce attempt
// started at start whose shuffle lasts at least shuffle and whose reduce
// phase lasts reduce, in a job whose map stage was recorded as ended at
// mapsEnd; phase is when its reduce phase starts.
func (o Overheads) reduceEnd(start, shuffle, mapsEnd, reduce time.Duration) (phase, end time.Duration) {
	phase = max(start+o.Launch+shuffle, mapsEnd+o.MapEvents)
	return phase, phase + reduce + o.Report
}

// nextHeartbeat is when a tracker heartbeats next after one at now that
// launched tasks or not, with period hb.
func (o Overheads) nextHeartbeat(now, hb time.Duration, launched bool) time.Duration {
	if launched && o.AfterLaunch > 0 {
		return now + min(o.AfterLaunch, hb)
	}
	return now + hb
}
