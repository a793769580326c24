package sim

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"time"

	"gomr/partitions"
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
	// the period), when the launch left a slot free of a type it launched,
	// or the offer preempted tasks (their slots are reported soon): the
	// TaskTracker's reportSoonAfter. A heartbeat whose launches filled the
	// slots of their types waits for the period or a task's end. Every
	// heartbeat, periodic or out of band, restarts the tracker's period,
	// as the TaskTracker's timer does.
	AfterLaunch time.Duration
	// AfterEveryLaunch makes AfterLaunch follow every heartbeat that
	// launched a task, full slots or not: the TaskTracker before
	// 2026-11-26 (commit 2b72c9c), for runs made with it.
	AfterEveryLaunch bool
	// LaunchDist, when set, is the spread of the launch cost: each attempt
	// is charged its own draw from it (LaunchDist.Draw) in place of Launch.
	// A pointer, so that Overheads stay comparable.
	LaunchDist *LaunchDist
	// ReduceLaunchDist, when set, is the spread of a reduce's own start to
	// its reduce phase when its job's maps have ended: its launch, the
	// fetch of the maps' output and the merge, which under load take
	// longer than a map's launch. Each reduce attempt is charged its draw
	// from it in place of LaunchDist's or Launch (with the same uniform
	// number as LaunchDist's draw for that attempt: common random numbers).
	ReduceLaunchDist *LaunchDist
	// DrawPhases draws each tracker's first heartbeat uniformly in the
	// heartbeat period, with LaunchDist's seed, instead of spreading the
	// trackers evenly over it: on the runtime the trackers' timers are
	// wherever their start left them. Without a LaunchDist (no seed) the
	// phases stay even.
	DrawPhases bool
	// FirstAtPeriod starts every tracker's heartbeats together, one period
	// after the start, instead of spreading their first heartbeats over
	// the period: the runtime's embedded cluster since replay.StartCluster
	// waits for every TaskTracker's registration before the trace's clock
	// starts (2026-11-26), so the trackers, registered within a few
	// milliseconds of each other, next heartbeat a period later, together.
	// Which of them comes first at that instant is drawn with DrawPhases
	// (an offset under a millisecond), else it is the index order.
	FirstAtPeriod bool
}

// firstAtPeriodSpread is the span of the trackers' first heartbeats
// under FirstAtPeriod with DrawPhases: they registered within it.
const firstAtPeriodSpread = time.Millisecond

// LaunchDist is an empirical distribution of the launch cost (Overheads),
// given by its quantiles, from which each attempt draws its own cost: on
// the runtime a launch is an exec of a child process and the wait for its
// first report, which on a shared machine takes from tens of milliseconds
// to more than a second, not a constant. The draws are deterministic: an
// attempt's cost depends on Seed and the attempt's identity (job, task
// type, task, attempt number) only, not on when it is drawn, so that two
// policies simulated with the same seed charge the same task the same cost.
type LaunchDist struct {
	// Quantiles are the costs at the evenly spaced probabilities 0,
	// 1/(n−1), ..., 1 (at least two, non-decreasing, not negative);
	// between them the inverse distribution is linear.
	Quantiles []time.Duration
	// Seed picks the draws.
	Seed uint64
}

// LaunchQuantiles is the number of quantiles replay measures a launch
// distribution by (every 5%).
const LaunchQuantiles = 21

// check refuses quantiles the draw cannot use.
func (d *LaunchDist) check() error {
	if len(d.Quantiles) < 2 {
		return fmt.Errorf("launch distribution: %d quantiles, want at least 2", len(d.Quantiles))
	}
	if d.Quantiles[0] < 0 || !slices.IsSorted(d.Quantiles) {
		return fmt.Errorf("launch distribution: quantiles %v must be non-decreasing and not negative", d.Quantiles)
	}
	return nil
}

// At is the cost at probability u in [0, 1] (clamped): the inverse of the
// distribution, linear between its quantiles.
func (d *LaunchDist) At(u float64) time.Duration {
	q := d.Quantiles
	n := len(q)
	switch {
	case n == 0:
		return 0
	case n == 1 || u <= 0 || math.IsNaN(u):
		return q[0]
	case u >= 1:
		return q[n-1]
	}
	x := u * float64(n-1)
	i := int(x)
	f := x - float64(i)
	return q[i] + time.Duration(math.Round(f*float64(q[i+1]-q[i])))
}

// Draw is the launch cost of attempt num of task task of type typ of job
// job: At of a uniform number hashed from Seed and that identity.
func (d *LaunchDist) Draw(job string, typ partitions.TaskType, task, num int) time.Duration {
	return d.At(uniformOf(d.Seed, job, int(typ), task, num))
}

// uniformOf hashes seed and an attempt's identity to a number in [0, 1).
func uniformOf(seed uint64, job string, typ, task, num int) float64 {
	h := fnv.New64a()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], seed)
	h.Write(b[:])
	h.Write([]byte(job))
	for _, v := range []int{typ, task, num} {
		binary.LittleEndian.PutUint64(b[:], uint64(v))
		h.Write(b[:])
	}
	// splitmix64's finaliser spreads FNV's low-entropy high bits.
	z := h.Sum64()
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	z ^= z >> 31
	return float64(z>>11) / (1 << 53)
}

// forAttempt is o with the launch cost of the given attempt: a reduce's
// draw from ReduceLaunchDist when there is one, else its draw from
// LaunchDist when there is one, Launch otherwise.
func (o Overheads) forAttempt(job string, typ partitions.TaskType, task, num int) Overheads {
	switch {
	case typ == partitions.Reduce && o.ReduceLaunchDist != nil:
		o.Launch = o.ReduceLaunchDist.Draw(job, typ, task, num)
	case o.LaunchDist != nil:
		o.Launch = o.LaunchDist.Draw(job, typ, task, num)
	}
	return o
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

// measuredLaunch are the quantiles (0, 5%, ..., 100%) of the launch cost,
// in milliseconds, measured on the embedded cluster of a 2-core machine:
// each the median over the 16 seed-1 runs of docs/comparison.md of that
// run's quantile (replay.MeasuredOverheads.LaunchQuantiles).
var measuredLaunch = [LaunchQuantiles]float64{
	11.7, 15.6, 20.3, 25.2, 28.4, 31.7, 36.0, 40.5, 43.7, 48.9, 53.4,
	58.3, 62.2, 71.1, 79.6, 89.2, 106.9, 120.3, 152.4, 220.4, 467.7,
}

// MeasuredLaunchDist is the launch cost's measured spread (seed 0; a
// caller sets its own): what MeasuredOverheads' Launch is the median of.
func MeasuredLaunchDist() *LaunchDist {
	d := &LaunchDist{}
	for _, q := range measuredLaunch {
		d.Quantiles = append(d.Quantiles, time.Duration(q*float64(time.Millisecond)).Round(time.Microsecond))
	}
	return d
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
	case o.DrawPhases && heartbeat == 0:
		return fmt.Errorf("overheads: drawn heartbeat phases need a heartbeat interval")
	case o.FirstAtPeriod && heartbeat == 0:
		return fmt.Errorf("overheads: first heartbeats at the period need a heartbeat interval")
	}
	for _, d := range []*LaunchDist{o.LaunchDist, o.ReduceLaunchDist} {
		if d == nil {
			continue
		}
		if err := d.check(); err != nil {
			return fmt.Errorf("overheads: %w", err)
		}
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

// firstHeartbeat is when tracker i of n first heartbeats, with period hb:
// evenly spread over the period, or drawn in it (DrawPhases); with
// FirstAtPeriod, all at hb, in index order or within a drawn millisecond.
func (o Overheads) firstHeartbeat(i, n int, hb time.Duration) time.Duration {
	if o.FirstAtPeriod {
		if o.DrawPhases && o.LaunchDist != nil {
			return hb + time.Duration(uniformOf(o.LaunchDist.Seed, "heartbeat", 0, i, 0)*float64(firstAtPeriodSpread))
		}
		return hb + time.Duration(i)
	}
	if o.DrawPhases && o.LaunchDist != nil {
		return time.Duration(uniformOf(o.LaunchDist.Seed, "heartbeat", 0, i, 0) * float64(hb))
	}
	return time.Duration(int64(hb) * int64(i) / int64(n))
}

// soonAfter tells whether a tracker heartbeats again after AfterLaunch
// rather than its period, after a heartbeat that launched maps and
// reduces (launchedMaps, launchedReduces) and left freeMaps and
// freeReduces slots free, and preempted tasks or not (AfterLaunch).
func (o Overheads) soonAfter(launchedMaps, launchedReduces bool, freeMaps, freeReduces int, preempted bool) bool {
	if !launchedMaps && !launchedReduces {
		return preempted
	}
	return o.AfterEveryLaunch || preempted || launchedMaps && freeMaps > 0 || launchedReduces && freeReduces > 0
}

// nextHeartbeat is when a tracker heartbeats next after one at now, with
// period hb: after AfterLaunch when soon (soonAfter), else the period.
func (o Overheads) nextHeartbeat(now, hb time.Duration, soon bool) time.Duration {
	if soon && o.AfterLaunch > 0 {
		return now + min(o.AfterLaunch, hb)
	}
	return now + hb
}
