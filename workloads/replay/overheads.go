package replay

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"time"

	"gomr/jobtracker"
	"gomr/sim"
)

// Spread is the distribution of one measured cost, in seconds.
type Spread struct {
	N      int     `json:"n"`
	P10    float64 `json:"p10"`
	Median float64 `json:"median"`
	P90    float64 `json:"p90"`
	Max    float64 `json:"max"`
}

func spreadOf(xs []float64) Spread {
	s := slices.Clone(xs)
	slices.Sort(s)
	sp := Spread{N: len(s)}
	if len(s) == 0 {
		return sp
	}
	sp.P10, sp.Median, sp.P90, sp.Max = sim.Percentile(s, 10), sim.Percentile(s, 50), sim.Percentile(s, 90), s[len(s)-1]
	return sp
}

// MeasuredOverheads are the runtime's costs as a replayed run's job
// history shows them, against the trace's durations: what the
// simulator's overhead model (sim.Overheads) stands for.
type MeasuredOverheads struct {
	// MapExcess is a successful map attempt's recorded duration minus its
	// trace duration: Launch + Report in the model.
	MapExcess Spread `json:"map_excess"`
	// ReduceReport is a successful reduce attempt's end minus the start of
	// its reduce phase (the history's sort end) minus its trace reduce
	// duration: Report in the model.
	ReduceReport Spread `json:"reduce_report"`
	// MapEvents is, for a reduce that waited for its job's maps (its trace
	// shuffle ended before them), the start of its reduce phase minus the
	// recorded end of the job's last map: MapEvents in the model.
	MapEvents Spread `json:"map_events"`
	// StartLag is a job's first attempt start minus its submission (job
	// initialisation, then a heartbeat with a free slot, when one is free).
	StartLag Spread `json:"start_lag"`
	// EndLag is a job's recorded finish minus its last attempt's end (job
	// commit).
	EndLag Spread `json:"end_lag"`
	// Launch is each successful map's excess minus the run's median
	// reduce report (ReduceReport; the model's Report when no reduce
	// reported), at least 0: the model's Launch, attempt by attempt.
	Launch Spread `json:"launch"`
	// LaunchQuantiles are Launch's sim.LaunchQuantiles quantiles (0, 5%,
	// ..., 100%), in seconds: the distribution the model can draw each
	// attempt's launch from (LaunchDist).
	LaunchQuantiles []float64 `json:"launch_quantiles,omitempty"`
	// FirstLaunch is the launch of each tracker's first map attempt of the
	// run (the first child processes of a fresh cluster), Launch the same
	// for the others.
	FirstLaunch Spread `json:"first_launch"`
	// ReduceLaunch is, for each successful reduce that started after its
	// job's last map was recorded as ended, the start of its reduce phase
	// (the history's sort end) minus its start and its trace shuffle: its
	// launch, the fetch of its maps' output and the merge, the model's
	// reduce launch (sim.Overheads.ReduceLaunchDist).
	ReduceLaunch Spread `json:"reduce_launch"`
	// ReduceLaunchQuantiles are ReduceLaunch's sim.LaunchQuantiles
	// quantiles, in seconds.
	ReduceLaunchQuantiles []float64 `json:"reduce_launch_quantiles,omitempty"`
}

// quantilesOf are the n quantiles of xs at evenly spaced probabilities
// 0, 1/(n−1), ..., 1, interpolated linearly between order statistics;
// nil for no xs or n < 2.
func quantilesOf(xs []float64, n int) []float64 {
	if len(xs) == 0 || n < 2 {
		return nil
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	q := make([]float64, n)
	for i := range q {
		x := float64(i) / float64(n-1) * float64(len(s)-1)
		k := int(x)
		if k >= len(s)-1 {
			q[i] = s[len(s)-1]
			continue
		}
		q[i] = s[k] + (x-float64(k))*(s[k+1]-s[k])
	}
	return q
}

// LaunchDist is the measured launch distribution (LaunchQuantiles) for
// the simulator, drawing with seed; nil when no map was measured.
func (m MeasuredOverheads) LaunchDist(seed uint64) *sim.LaunchDist {
	if len(m.LaunchQuantiles) < 2 {
		return nil
	}
	d := &sim.LaunchDist{Seed: seed}
	for _, q := range m.LaunchQuantiles {
		d.Quantiles = append(d.Quantiles, time.Duration(q*float64(time.Second)).Round(time.Microsecond))
	}
	return d
}

// MeasureOverheads reads the run's job histories against its trace.
func MeasureOverheads(run *Run) MeasuredOverheads {
	var mapEx, redRep, mapEv, startLag, endLag, redLaunch []float64
	type mapAt struct {
		start   time.Time
		tracker string
	}
	var mapsAt []mapAt // of mapEx, in order
	for _, jr := range run.Jobs {
		h, tj := jr.History, jr.Trace
		if h == nil || tj == nil {
			continue
		}
		var lastMap, first, last time.Time
		for _, a := range h.Attempts {
			if first.IsZero() || a.Start.Before(first) {
				first = a.Start
			}
			if a.Finish.After(last) {
				last = a.Finish
			}
			if a.State == jobtracker.StateSucceeded && a.TaskType == "m" {
				if a.Finish.After(lastMap) {
					lastMap = a.Finish
				}
				if a.Task < len(tj.Maps) {
					mapEx = append(mapEx, (a.Finish.Sub(a.Start) - tj.Maps[a.Task]).Seconds())
					mapsAt = append(mapsAt, mapAt{a.Start, a.Tracker})
				}
			}
		}
		for _, a := range h.Attempts {
			if a.State != jobtracker.StateSucceeded || a.TaskType != "r" || a.Task >= len(tj.Reduces) {
				continue
			}
			phase := a.SortFinish
			if phase == nil {
				phase = a.ShuffleFinish
			}
			if phase == nil {
				continue
			}
			redRep = append(redRep, (a.Finish.Sub(*phase) - tj.Reduces[a.Task]).Seconds())
			var sh time.Duration
			if a.Task < len(tj.Shuffles) {
				sh = tj.Shuffles[a.Task]
			}
			if !lastMap.IsZero() && a.Start.Add(sh).Before(lastMap) {
				mapEv = append(mapEv, phase.Sub(lastMap).Seconds())
			}
			if !lastMap.IsZero() && !a.Start.Before(lastMap) {
				redLaunch = append(redLaunch, max(phase.Sub(a.Start)-sh, 0).Seconds())
			}
		}
		if !first.IsZero() {
			startLag = append(startLag, first.Sub(h.Job.Submit).Seconds())
			endLag = append(endLag, h.Job.Finish.Sub(last).Seconds())
		}
	}
	m := MeasuredOverheads{MapExcess: spreadOf(mapEx), ReduceReport: spreadOf(redRep), MapEvents: spreadOf(mapEv),
		StartLag: spreadOf(startLag), EndLag: spreadOf(endLag),
		ReduceLaunch: spreadOf(redLaunch), ReduceLaunchQuantiles: quantilesOf(redLaunch, sim.LaunchQuantiles)}
	report := sim.MeasuredOverheads.Report.Seconds()
	if m.ReduceReport.N > 0 {
		report = max(m.ReduceReport.Median, 0)
	}
	launch := make([]float64, len(mapEx))
	first := map[string]int{} // tracker: index of its first map
	for i, x := range mapEx {
		launch[i] = max(x-report, 0)
		if k, ok := first[mapsAt[i].tracker]; !ok || mapsAt[i].start.Before(mapsAt[k].start) {
			first[mapsAt[i].tracker] = i
		}
	}
	var firsts, rest []float64
	for i, x := range launch {
		if first[mapsAt[i].tracker] == i {
			firsts = append(firsts, x)
		} else {
			rest = append(rest, x)
		}
	}
	m.Launch, m.LaunchQuantiles, m.FirstLaunch = spreadOf(rest), quantilesOf(launch, sim.LaunchQuantiles), spreadOf(firsts)
	return m
}

// Write prints the measured costs, one line each, in milliseconds.
func (m MeasuredOverheads) Write(w io.Writer) {
	for _, x := range []struct {
		name string
		s    Spread
	}{{"map excess (launch + report)", m.MapExcess}, {"reduce report", m.ReduceReport}, {"map events to reduce phase", m.MapEvents},
		{"job start lag", m.StartLag}, {"job end lag", m.EndLag}, {"launch (map excess - report)", m.Launch}, {"launch, each tracker's first", m.FirstLaunch},
		{"reduce launch (start to sort end)", m.ReduceLaunch}} {
		fmt.Fprintf(w, "  %-30s n=%-4d p10 %6.0f  median %6.0f  p90 %6.0f  max %6.0f ms\n", x.name, x.s.N,
			1000*x.s.P10, 1000*x.s.Median, 1000*x.s.P90, 1000*x.s.Max)
	}
}

// Recorded is the workload of a real run as it ran: each trace job
// (same id, name, pool, priority and deadline) submitted when it was,
// relative to the run's start, its maps lasting what their successful
// attempts were recorded to last and its reduces' reduce phases from the
// history's sort end to the attempt's end, so that the costs of the
// runtime are in the durations. A reduce's shuffle is its recorded one
// (start to sort end: its launch, fetch and merge) when its own shuffle
// outlasted the job's maps (started after the last map's recorded end,
// or its trace shuffle reaching past it), and the trace's when it waited
// for the maps: then the recorded one includes that wait, which depends
// on when the reduce started. Simulated with the cluster's heartbeats but no task
// costs (RecordedModel), it tells the scheduling apart from the task
// durations: where it agrees with the real run and the model does not,
// the model's durations are what differ.
func Recorded(run *Run) (*sim.Workload, error) {
	w := *run.Workload
	w.Name, w.Description = w.Name+" (recorded)", "the recorded durations of a run of "+w.Name
	w.Jobs = make([]sim.Job, 0, len(run.Jobs))
	for _, jr := range run.Jobs {
		h := jr.History
		if h == nil {
			return nil, fmt.Errorf("job %s has no history (it was not run)", jr.Trace.ID)
		}
		j := *jr.Trace
		j.Submit = max(h.Job.Submit.Sub(run.Start), 0)
		j.Maps, j.Reduces, j.Shuffles = nil, nil, nil
		mapDur := map[int]time.Duration{}
		type red struct{ shuffle, reduce time.Duration }
		reds := map[int]red{}
		var lastMap time.Time
		for _, a := range h.Attempts {
			if a.State == jobtracker.StateSucceeded && a.TaskType == "m" && a.Finish.After(lastMap) {
				lastMap = a.Finish
			}
		}
		for _, a := range h.Attempts {
			if a.State != jobtracker.StateSucceeded {
				continue
			}
			d := max(a.Finish.Sub(a.Start), 0)
			if a.TaskType == "m" {
				mapDur[a.Task] = d
				continue
			}
			var sh time.Duration
			if a.Task < len(jr.Trace.Shuffles) {
				sh = jr.Trace.Shuffles[a.Task]
			}
			phase := a.SortFinish
			if phase == nil {
				phase = a.ShuffleFinish
			}
			if phase == nil {
				reds[a.Task] = red{sh, d}
				continue
			}
			if !a.Start.Add(sh).Before(lastMap) {
				// Not held by the maps: launch, fetch and merge are its own.
				sh = max(phase.Sub(a.Start), sh)
			}
			reds[a.Task] = red{sh, max(a.Finish.Sub(*phase), 0)}
		}
		for _, k := range slices.Sorted(maps.Keys(mapDur)) {
			j.Maps = append(j.Maps, mapDur[k])
		}
		for _, k := range slices.Sorted(maps.Keys(reds)) {
			j.Shuffles = append(j.Shuffles, reds[k].shuffle)
			j.Reduces = append(j.Reduces, reds[k].reduce)
		}
		if len(j.Maps) == 0 {
			return nil, fmt.Errorf("job %s: no successful map attempt in its history", jr.Trace.ID)
		}
		w.Jobs = append(w.Jobs, j)
	}
	return &w, nil
}

// RecordedModel is m without the per-task costs, which recorded durations
// hold: the heartbeats alone.
func RecordedModel(m SimModel) SimModel {
	if m == (SimModel{}) {
		return m
	}
	o := m.Overheads
	return SimModel{Heartbeat: m.Heartbeat, Overheads: sim.Overheads{OutOfBand: o.OutOfBand, AfterLaunch: o.AfterLaunch, AfterEveryLaunch: o.AfterEveryLaunch, FirstAtPeriod: o.FirstAtPeriod}}
}
