package replay

import (
	"fmt"
	"io"
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
}

// MeasureOverheads reads the run's job histories against its trace.
func MeasureOverheads(run *Run) MeasuredOverheads {
	var mapEx, redRep, mapEv, startLag, endLag []float64
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
		}
		if !first.IsZero() {
			startLag = append(startLag, first.Sub(h.Job.Submit).Seconds())
			endLag = append(endLag, h.Job.Finish.Sub(last).Seconds())
		}
	}
	return MeasuredOverheads{MapExcess: spreadOf(mapEx), ReduceReport: spreadOf(redRep), MapEvents: spreadOf(mapEv),
		StartLag: spreadOf(startLag), EndLag: spreadOf(endLag)}
}

// Write prints the measured costs, one line each, in milliseconds.
func (m MeasuredOverheads) Write(w io.Writer) {
	for _, x := range []struct {
		name string
		s    Spread
	}{{"map excess (launch + report)", m.MapExcess}, {"reduce report", m.ReduceReport}, {"map events to reduce phase", m.MapEvents},
		{"job start lag", m.StartLag}, {"job end lag", m.EndLag}} {
		fmt.Fprintf(w, "  %-30s n=%-4d p10 %6.0f  median %6.0f  p90 %6.0f  max %6.0f ms\n", x.name, x.s.N,
			1000*x.s.P10, 1000*x.s.Median, 1000*x.s.P90, 1000*x.s.Max)
	}
}
