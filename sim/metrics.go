package sim

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

// JobRecord is one simulated job. Times are seconds from the start of the
// workload.
type JobRecord struct {
	ID       string  `json:"id"`
	Name     string  `json:"name"`
	Submit   float64 `json:"submit_s"`
	Start    float64 `json:"start_s"`
	Finish   float64 `json:"finish_s"`
	Response float64 `json:"response_s"`
	// Ref is the job's runtime alone in the empty cluster, the slowdown's
	// denominator.
	Ref      float64 `json:"ref_s"`
	Slowdown float64 `json:"slowdown"`
	// Size is the job's total task time (slot-seconds).
	Size     float64 `json:"size_s"`
	Deadline float64 `json:"deadline_s,omitempty"`
	Missed   bool    `json:"missed,omitempty"`
	Maps     int     `json:"maps"`
	Reduces  int     `json:"reduces"`
	// Queue is the partition or queue of the job's last launched task.
	Queue int `json:"queue"`
	// SpecFresh and SpecClones count the job's speculative attempts
	// launched, SpecWins those that finished their task first.
	SpecFresh  int `json:"spec_fresh,omitempty"`
	SpecClones int `json:"spec_clones,omitempty"`
	SpecWins   int `json:"spec_wins,omitempty"`
}

// Stats are summary statistics; percentiles are nearest-rank.
type Stats struct {
	Mean   float64 `json:"mean"`
	Median float64 `json:"median"`
	P95    float64 `json:"p95"`
	P99    float64 `json:"p99"`
	Max    float64 `json:"max"`
}

// ClassStat is the mean slowdown of one job size class.
type ClassStat struct {
	Name         string  `json:"name"`
	Jobs         int     `json:"jobs"`
	MeanSlowdown float64 `json:"mean_slowdown"`
}

// DeadlineStats are the deadline paper's metrics.
type DeadlineStats struct {
	Jobs int `json:"jobs"`
	// RelativeExceededPct is Σ over missed jobs of (response − D)/D, ×100:
	// a sum, as in the paper.
	RelativeExceededPct float64 `json:"relative_exceeded_pct"`
	MissedPct           float64 `json:"missed_pct"`
	MissedJobs          int     `json:"missed_jobs"`
	MeanOverrunPct      float64 `json:"mean_overrun_pct"`
	// The robust forms beside the paper's sum, which a single job can
	// dominate: RelativeExceededTrim1Pct is the sum without the largest 1%
	// (rounded up) of the jobs' overruns; OverrunMedianPct the median
	// overrun of a missed job.
	RelativeExceededTrim1Pct float64 `json:"relative_exceeded_trim1_pct"`
	OverrunMedianPct         float64 `json:"overrun_median_pct"`
	// KillRatioPct is killed map tasks over extra (spare) map tasks, ×100.
	KillRatioPct      float64 `json:"kill_ratio_pct"`
	ExtraMapTasks     int64   `json:"extra_map_tasks"`
	ExtraReduceTasks  int64   `json:"extra_reduce_tasks"`
	KilledMapTasks    int64   `json:"killed_map_tasks"`
	WastedSlotSeconds float64 `json:"wasted_slot_s"`
	// KilledSpareMapTasks counts the killed map attempts that were
	// launched on a spare slot: the paper's "extra slots allocated and then
	// cancelled" (§IV.A, metric 5). A kill may also hit an attempt launched
	// within its job's quota that a later, smaller quota made spare.
	// SpareKillRatioPct is KilledSpareMapTasks over ExtraMapTasks, ×100.
	KilledSpareMapTasks int64   `json:"killed_spare_map_tasks"`
	SpareKillRatioPct   float64 `json:"spare_kill_ratio_pct"`
}

// TimerStats summarise the dynamic timers a policy computed.
type TimerStats struct {
	Count  int     `json:"count"`
	Min    float64 `json:"min_s"`
	P5     float64 `json:"p5_s"`
	Median float64 `json:"median_s"`
	P95    float64 `json:"p95_s"`
	Max    float64 `json:"max_s"`
}

// Summary is a run's summary metrics.
type Summary struct {
	Jobs     int   `json:"jobs"`
	Slowdown Stats `json:"slowdown"`
	// V95 is P95 over median slowdown, the thesis' variability.
	V95      float64 `json:"v95"`
	Response Stats   `json:"response_s"`
	// MakespanS is from the first arrival to the last completion; DrainS
	// from the last arrival to the last completion.
	MakespanS  float64 `json:"makespan_s"`
	DrainS     float64 `json:"drain_s"`
	UtilMap    float64 `json:"util_map"`
	UtilReduce float64 `json:"util_reduce"`
	// IdleMapPendingS is the map slot time (slot-seconds) left free while
	// jobs had maps pending: 0 for a policy that never leaves a map slot
	// idle with work waiting (EDF, FIFO without a heartbeat), positive for
	// one that does by design (MinEDF's quotas) and, with a heartbeat, the
	// slots waiting for their tracker's next one.
	IdleMapPendingS float64        `json:"idle_map_pending_slot_s"`
	Classes         []ClassStat    `json:"size_classes"`
	Deadline        *DeadlineStats `json:"deadline,omitempty"`
	// QueueWork is the share of busy slot time spent under each queue;
	// QueueFinished the share of jobs whose last task ran under it.
	QueueWork     []float64   `json:"queue_work,omitempty"`
	QueueFinished []float64   `json:"queue_finished,omitempty"`
	Timers        *TimerStats `json:"timers,omitempty"`
}

// Result is the outcome of simulating one policy.
type Result struct {
	Policy      string      `json:"policy"`
	Workload    string      `json:"workload"`
	Trackers    int         `json:"trackers"`
	MapSlots    int         `json:"map_slots"`
	ReduceSlots int         `json:"reduce_slots"`
	Jobs        []JobRecord `json:"jobs"`
	Summary     Summary     `json:"summary"`
	// Offers counts the policy's Offer calls.
	Offers           int64 `json:"offers"`
	ExtraMapTasks    int64 `json:"extra_map_tasks"`
	ExtraReduceTasks int64 `json:"extra_reduce_tasks"`
	KilledMapTasks   int64 `json:"killed_map_tasks"`
	// KilledSpareMapTasks are the killed map attempts launched as spare.
	KilledSpareMapTasks int64   `json:"killed_spare_map_tasks"`
	KilledReduceTasks   int64   `json:"killed_reduce_tasks"`
	WastedSlotSeconds   float64 `json:"wasted_slot_s"`
	// Speculation counts speculative attempts; nil when the mode is none.
	Speculation *SpecStats `json:"speculation,omitempty"`
	// Preemption counts what the preemption planner did.
	Preemption *PreemptStats `json:"preemption,omitempty"`
	// ScaleUp counts scale-up splits; nil when preemption.split.scale-up
	// is off.
	ScaleUp *ScaleUpStats `json:"scale_up,omitempty"`

	busy       [2]float64
	queueBusy  []float64
	timerTrace []float64
	// idleMapPending accumulates Summary.IdleMapPendingS.
	idleMapPending float64
}

// Mode is the run's speculation mode.
func (r *Result) Mode() string {
	if r.Speculation == nil {
		return SpecNone
	}
	return r.Speculation.Mode
}

// Label names the run in tables and plots: the policy, and the
// speculation mode when the results compare modes.
func (r *Result) Label(withMode bool) string {
	if withMode {
		return r.Policy + "/" + r.Mode()
	}
	return r.Policy
}

// mixedModes tells whether results differ in speculation mode or use one.
func mixedModes(results []*Result) bool {
	for _, r := range results {
		if r.Speculation != nil {
			return true
		}
	}
	return false
}

func (r *Result) addQueueBusy(q int, s float64) {
	for len(r.queueBusy) <= q {
		r.queueBusy = append(r.queueBusy, 0)
	}
	r.queueBusy[q] += s
}

// Percentile is the nearest-rank q-th percentile of sorted xs.
func Percentile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	k := int(math.Ceil(q/100*float64(len(sorted)) - 1e-9))
	k = min(max(k, 1), len(sorted))
	return sorted[k-1]
}

func stats(xs []float64) Stats {
	if len(xs) == 0 {
		return Stats{}
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	sum := 0.0
	for _, x := range s {
		sum += x
	}
	return Stats{Mean: sum / float64(len(s)), Median: Percentile(s, 50), P95: Percentile(s, 95), P99: Percentile(s, 99), Max: s[len(s)-1]}
}

// sizeClasses are the thesis' chapter 4 classes of job size.
var sizeClasses = []struct {
	name string
	max  float64
}{{"tiny (<1 min)", 60}, {"short (1-10 min)", 600}, {"medium (10-100 min)", 6000}, {"large (>100 min)", math.Inf(1)}}

func (r *Result) finish(e *engine) {
	specs := map[string]*Job{}
	for i := range e.w.Jobs {
		specs[e.w.Jobs[i].ID] = &e.w.Jobs[i]
	}
	for i := range r.Jobs {
		r.Jobs[i].Ref = e.refRuntime(specs[r.Jobs[i].ID]).Seconds()
	}
	r.Summarize()
}

// SetBusy sets the slot-seconds the run's map and reduce attempts held,
// from which Summarize computes utilization: for a Result built from a
// run measured elsewhere (a real cluster's job history).
func (r *Result) SetBusy(mapSlotSeconds, reduceSlotSeconds float64) {
	r.busy = [2]float64{mapSlotSeconds, reduceSlotSeconds}
}

// Summarize orders the jobs by submission, sets each job's slowdown
// (Response / Ref) and deadline miss, and computes the Summary, as at the
// end of a simulation. A Result built from a real run (the jobs' times,
// Ref, Size and Deadline, the kill counts and SetBusy) is summarized with
// it so that its metrics are the simulator's.
func (r *Result) Summarize() {
	sort.SliceStable(r.Jobs, func(a, b int) bool {
		if r.Jobs[a].Submit != r.Jobs[b].Submit {
			return r.Jobs[a].Submit < r.Jobs[b].Submit
		}
		return r.Jobs[a].ID < r.Jobs[b].ID
	})
	anyDeadline := false
	for i := range r.Jobs {
		j := &r.Jobs[i]
		if j.Ref > 0 {
			j.Slowdown = j.Response / j.Ref
		}
		if j.Deadline > 0 {
			anyDeadline = true
			j.Missed = j.Response > j.Deadline+1e-9
		}
	}
	r.Summary = summarize(r, anyDeadline)
}

func summarize(r *Result, anyDeadline bool) Summary {
	s := Summary{Jobs: len(r.Jobs)}
	var sd, resp []float64
	first, lastArr, lastFin := math.Inf(1), 0.0, 0.0
	classSum := make([]float64, len(sizeClasses))
	classN := make([]int, len(sizeClasses))
	for _, j := range r.Jobs {
		sd = append(sd, j.Slowdown)
		resp = append(resp, j.Response)
		first = math.Min(first, j.Submit)
		lastArr = math.Max(lastArr, j.Submit)
		lastFin = math.Max(lastFin, j.Finish)
		for c, cl := range sizeClasses {
			if j.Size < cl.max {
				classSum[c] += j.Slowdown
				classN[c]++
				break
			}
		}
	}
	if len(r.Jobs) == 0 {
		return s
	}
	s.Slowdown, s.Response = stats(sd), stats(resp)
	if s.Slowdown.Median > 0 {
		s.V95 = s.Slowdown.P95 / s.Slowdown.Median
	}
	s.MakespanS = lastFin - first
	s.DrainS = lastFin - lastArr
	s.IdleMapPendingS = r.idleMapPending
	if s.MakespanS > 0 {
		s.UtilMap = r.busy[0] / (float64(r.MapSlots) * s.MakespanS)
		if r.ReduceSlots > 0 {
			s.UtilReduce = r.busy[1] / (float64(r.ReduceSlots) * s.MakespanS)
		}
	}
	for c, cl := range sizeClasses {
		cs := ClassStat{Name: cl.name, Jobs: classN[c]}
		if classN[c] > 0 {
			cs.MeanSlowdown = classSum[c] / float64(classN[c])
		}
		s.Classes = append(s.Classes, cs)
	}
	if len(r.queueBusy) > 1 {
		total := 0.0
		for _, b := range r.queueBusy {
			total += b
		}
		fin := make([]float64, len(r.queueBusy))
		for _, j := range r.Jobs {
			if j.Queue < len(fin) {
				fin[j.Queue]++
			}
		}
		for q := range r.queueBusy {
			s.QueueWork = append(s.QueueWork, r.queueBusy[q]/total)
			s.QueueFinished = append(s.QueueFinished, fin[q]/float64(len(r.Jobs)))
		}
	}
	if len(r.timerTrace) > 0 {
		t := append([]float64(nil), r.timerTrace...)
		sort.Float64s(t)
		s.Timers = &TimerStats{Count: len(t), Min: t[0], P5: Percentile(t, 5), Median: Percentile(t, 50), P95: Percentile(t, 95), Max: t[len(t)-1]}
	}
	if anyDeadline {
		d := &DeadlineStats{ExtraMapTasks: r.ExtraMapTasks, ExtraReduceTasks: r.ExtraReduceTasks,
			KilledMapTasks: r.KilledMapTasks, WastedSlotSeconds: r.WastedSlotSeconds, KilledSpareMapTasks: r.KilledSpareMapTasks}
		var overruns []float64
		for _, j := range r.Jobs {
			if j.Deadline <= 0 {
				continue
			}
			d.Jobs++
			if j.Missed {
				d.MissedJobs++
				o := (j.Response - j.Deadline) / j.Deadline * 100
				d.RelativeExceededPct += o
				overruns = append(overruns, o)
			}
		}
		if d.Jobs > 0 {
			d.MissedPct = float64(d.MissedJobs) / float64(d.Jobs) * 100
		}
		if d.MissedJobs > 0 {
			d.MeanOverrunPct = d.RelativeExceededPct / float64(d.MissedJobs)
			sort.Float64s(overruns)
			d.OverrunMedianPct = Percentile(overruns, 50)
			drop := int(math.Ceil(float64(d.Jobs) / 100))
			for _, o := range overruns[:max(len(overruns)-drop, 0)] {
				d.RelativeExceededTrim1Pct += o
			}
		}
		if d.ExtraMapTasks > 0 {
			d.KillRatioPct = float64(d.KilledMapTasks) / float64(d.ExtraMapTasks) * 100
			d.SpareKillRatioPct = float64(d.KilledSpareMapTasks) / float64(d.ExtraMapTasks) * 100
		}
		s.Deadline = d
	}
	return s
}

// Report is the `mr sim --json` output: one workload, one seed, the
// policies side by side, in the shape.
type Report struct {
	Workload string         `json:"workload"`
	Seed     uint64         `json:"seed"`
	Policies []PolicyReport `json:"policies"`
}

// PolicyReport is one policy's entry of a Report.
type PolicyReport struct {
	Policy    string        `json:"policy"`
	Jobs      int           `json:"jobs"`
	Slowdown  SlowdownJSON  `json:"slowdown"`
	ResponseS ResponseJSON  `json:"response_s"`
	Deadline  *DeadlineJSON `json:"deadline,omitempty"`
	MakespanS float64       `json:"makespan_s"`
	// Speculation is set when speculation was on.
	Speculation *SpecStats `json:"speculation,omitempty"`
}

// SlowdownJSON is the slowdown object of a PolicyReport.
type SlowdownJSON struct {
	Mean   float64 `json:"mean"`
	Median float64 `json:"median"`
	P95    float64 `json:"p95"`
	P99    float64 `json:"p99"`
}

// ResponseJSON is the response-time object of a PolicyReport (seconds).
type ResponseJSON struct {
	Mean   float64 `json:"mean"`
	Median float64 `json:"median"`
	P95    float64 `json:"p95"`
}

// DeadlineJSON is the deadline object of a PolicyReport.
type DeadlineJSON struct {
	RelativeExceededPct float64 `json:"relative_exceeded_pct"`
	MissedPct           float64 `json:"missed_pct"`
	ExtraMapTasks       int64   `json:"extra_map_tasks"`
	KilledMapTasks      int64   `json:"killed_map_tasks"`
}

func round(x float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(x*p) / p
}

// NewReport builds the JSON report of results of the same workload.
func NewReport(workload string, seed uint64, results []*Result) Report {
	rep := Report{Workload: workload, Seed: seed, Policies: []PolicyReport{}}
	for _, r := range results {
		s := r.Summary
		pr := PolicyReport{Policy: r.Policy, Jobs: s.Jobs,
			Slowdown:  SlowdownJSON{round(s.Slowdown.Mean, 4), round(s.Slowdown.Median, 4), round(s.Slowdown.P95, 4), round(s.Slowdown.P99, 4)},
			ResponseS: ResponseJSON{round(s.Response.Mean, 3), round(s.Response.Median, 3), round(s.Response.P95, 3)},
			MakespanS: round(s.MakespanS, 3), Speculation: r.Speculation}
		if d := s.Deadline; d != nil {
			pr.Deadline = &DeadlineJSON{RelativeExceededPct: round(d.RelativeExceededPct, 3), MissedPct: round(d.MissedPct, 3),
				ExtraMapTasks: d.ExtraMapTasks, KilledMapTasks: d.KilledMapTasks}
		}
		rep.Policies = append(rep.Policies, pr)
	}
	return rep
}

// WriteJSON writes the report as one JSON object.
func (rep Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(rep); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	return nil
}

// WriteTable prints the results side by side, one column per policy.
func WriteTable(w io.Writer, workload string, seed uint64, results []*Result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	f := func(x float64) string { return fmt.Sprintf("%.2f", x) }
	row := func(name string, cell func(r *Result) string) {
		cells := []string{name}
		for _, r := range results {
			cells = append(cells, cell(r))
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t")
	}
	fmt.Fprintf(w, "workload %s, seed %d", workload, seed)
	if len(results) > 0 {
		fmt.Fprintf(w, ", %d trackers, %d map + %d reduce slots", results[0].Trackers, results[0].MapSlots, results[0].ReduceSlots)
	}
	fmt.Fprintln(w)
	row("policy", func(r *Result) string { return r.Policy })
	row("jobs", func(r *Result) string { return fmt.Sprint(r.Summary.Jobs) })
	row("slowdown mean", func(r *Result) string { return f(r.Summary.Slowdown.Mean) })
	row("slowdown median", func(r *Result) string { return f(r.Summary.Slowdown.Median) })
	row("slowdown p95", func(r *Result) string { return f(r.Summary.Slowdown.P95) })
	row("slowdown p99", func(r *Result) string { return f(r.Summary.Slowdown.P99) })
	row("slowdown max", func(r *Result) string { return f(r.Summary.Slowdown.Max) })
	row("V(95) = p95/median", func(r *Result) string { return f(r.Summary.V95) })
	row("response mean [s]", func(r *Result) string { return f(r.Summary.Response.Mean) })
	row("response median [s]", func(r *Result) string { return f(r.Summary.Response.Median) })
	row("response p95 [s]", func(r *Result) string { return f(r.Summary.Response.P95) })
	row("makespan [s]", func(r *Result) string { return f(r.Summary.MakespanS) })
	row("drain after last arrival [s]", func(r *Result) string { return f(r.Summary.DrainS) })
	row("utilization map", func(r *Result) string { return f(r.Summary.UtilMap) })
	row("map slot-s idle with maps pending", func(r *Result) string { return f(r.Summary.IdleMapPendingS) })
	row("utilization reduce", func(r *Result) string { return f(r.Summary.UtilReduce) })
	for c := range sizeClasses {
		row("slowdown "+sizeClasses[c].name, func(r *Result) string {
			cs := r.Summary.Classes[c]
			if cs.Jobs == 0 {
				return "-"
			}
			return fmt.Sprintf("%.2f (%d)", cs.MeanSlowdown, cs.Jobs)
		})
	}
	hasQ, hasT, hasD := false, false, false
	for _, r := range results {
		hasQ = hasQ || len(r.Summary.QueueWork) > 0
		hasT = hasT || r.Summary.Timers != nil
		hasD = hasD || r.Summary.Deadline != nil
	}
	if hasQ {
		row("work share per queue", func(r *Result) string { return fracs(r.Summary.QueueWork) })
		row("jobs finished per queue", func(r *Result) string { return fracs(r.Summary.QueueFinished) })
	}
	if hasT {
		row("dynamic timer p5/median/p95 [s]", func(r *Result) string {
			t := r.Summary.Timers
			if t == nil {
				return "-"
			}
			return fmt.Sprintf("%.0f/%.0f/%.0f", t.P5, t.Median, t.P95)
		})
	}
	if mixedModes(results) {
		specRows(row, results)
	}
	if preemptedAny(results) {
		row("preemption mechanism", func(r *Result) string { return r.Preemption.Mechanism })
		row("preempted: kill/checkpoint/split/wait", func(r *Result) string {
			s := r.Preemption
			return fmt.Sprintf("%d/%d/%d/%d", s.Kills, s.Checkpoints, s.Splits, s.Waits)
		})
		row("wasted slot-s (kills' work, C/R, start-ups)", func(r *Result) string { return f(r.WastedSlotSeconds) })
		row("work saved by checkpoint/split [slot-s]", func(r *Result) string { return f(r.Preemption.WorkSavedSeconds) })
	}
	if scaledUpAny(results) {
		row("scale-up splits / maps added", func(r *Result) string {
			if r.ScaleUp == nil {
				return "-"
			}
			return fmt.Sprintf("%d/%d", r.ScaleUp.Splits, r.ScaleUp.MapsAdded)
		})
		if scaledUpReduces(results) {
			row("reduce scale-up splits / reduces added", func(r *Result) string {
				if r.ScaleUp == nil {
					return "-"
				}
				return fmt.Sprintf("%d/%d", r.ScaleUp.ReduceSplits, r.ScaleUp.ReducesAdded)
			})
		}
	}
	if hasD {
		d := func(r *Result) *DeadlineStats {
			if r.Summary.Deadline == nil {
				return &DeadlineStats{}
			}
			return r.Summary.Deadline
		}
		row("relative deadline exceeded [%]", func(r *Result) string { return f(d(r).RelativeExceededPct) })
		row("missed deadlines [%]", func(r *Result) string { return f(d(r).MissedPct) })
		row("relative exceeded without the top 1% of jobs [%]", func(r *Result) string { return f(d(r).RelativeExceededTrim1Pct) })
		row("mean overrun of a missed job [%]", func(r *Result) string { return f(d(r).MeanOverrunPct) })
		row("median overrun of a missed job [%]", func(r *Result) string { return f(d(r).OverrunMedianPct) })
		row("extra map tasks", func(r *Result) string { return fmt.Sprint(d(r).ExtraMapTasks) })
		row("extra reduce tasks", func(r *Result) string { return fmt.Sprint(d(r).ExtraReduceTasks) })
		row("killed map tasks", func(r *Result) string { return fmt.Sprint(d(r).KilledMapTasks) })
		row("kill ratio (killed / extra maps) [%]", func(r *Result) string { return f(d(r).KillRatioPct) })
		row("killed maps launched as spare", func(r *Result) string { return fmt.Sprint(d(r).KilledSpareMapTasks) })
		row("spare kill ratio (of those / extra maps) [%]", func(r *Result) string { return f(d(r).SpareKillRatioPct) })
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write table: %w", err)
	}
	return nil
}

func fracs(xs []float64) string {
	if len(xs) == 0 {
		return "-"
	}
	var p []string
	for _, x := range xs {
		p = append(p, fmt.Sprintf("%.2f", x))
	}
	return strings.Join(p, "/")
}

// specRows adds the speculation rows of a table: the mode, the mean
// response relative to the same policy without speculation (when that
// run is in the table), and the speculative attempts.
func specRows(row func(string, func(*Result) string), results []*Result) {
	none := map[string]*Result{}
	for _, r := range results {
		if r.Speculation == nil && none[r.Policy] == nil {
			none[r.Policy] = r
		}
	}
	n := func(r *Result, f func(*SpecStats) int64) string {
		if r.Speculation == nil {
			return "-"
		}
		return fmt.Sprint(f(r.Speculation))
	}
	row("speculation", func(r *Result) string { return r.Mode() })
	if len(none) > 0 {
		row("response mean / none's", func(r *Result) string {
			b := none[r.Policy]
			if b == nil || b.Summary.Response.Mean == 0 {
				return "-"
			}
			return fmt.Sprintf("%.3f", r.Summary.Response.Mean/b.Summary.Response.Mean)
		})
	}
	row("fresh speculative attempts", func(r *Result) string { return n(r, func(s *SpecStats) int64 { return s.FreshAttempts }) })
	row("clones", func(r *Result) string { return n(r, func(s *SpecStats) int64 { return s.Clones }) })
	row("speculative wins", func(r *Result) string { return n(r, func(s *SpecStats) int64 { return s.Wins }) })
	row("clone wins", func(r *Result) string { return n(r, func(s *SpecStats) int64 { return s.CloneWins }) })
	row("dropped waiting for a slot (fresh/clone)", func(r *Result) string {
		if r.Speculation == nil {
			return "-"
		}
		return fmt.Sprintf("%d/%d", r.Speculation.FreshDropped, r.Speculation.CloneDropped)
	})
	row("mean wait for a slot, fresh/clone [s]", func(r *Result) string {
		s := r.Speculation
		if s == nil {
			return "-"
		}
		mean := func(d time.Duration, n int64) string {
			if n == 0 {
				return "-"
			}
			return fmt.Sprintf("%.1f", d.Seconds()/float64(n))
		}
		return mean(s.FreshWait, s.FreshAttempts) + "/" + mean(s.CloneWait, s.Clones)
	})
	row("attempts killed by a faster sibling", func(r *Result) string { return n(r, func(s *SpecStats) int64 { return s.Killed }) })
	row("clone cost estimate t_vm, B [GB/s]", func(r *Result) string {
		s := r.Speculation
		if s == nil || s.Mode != SpecClone {
			return "-"
		}
		return fmt.Sprintf("%v, %.3f (%d samples)", s.EstTVM.Round(time.Millisecond), s.EstImageBps/1e9, s.EstSamples)
	})
}

// scaledUpAny tells whether a run had scale-up splits on.
func scaledUpAny(results []*Result) bool {
	for _, r := range results {
		if r.ScaleUp != nil {
			return true
		}
	}
	return false
}

// scaledUpReduces tells whether a run split reduces for idle slots (the
// table's row for them is shown then only).
func scaledUpReduces(results []*Result) bool {
	for _, r := range results {
		if r.ScaleUp != nil && r.ScaleUp.ReduceSplits > 0 {
			return true
		}
	}
	return false
}

// preemptedAny tells whether a run preempted by another mechanism than a
// kill, or preempted at all: then the table shows the preemption rows.
func preemptedAny(results []*Result) bool {
	for _, r := range results {
		if s := r.Preemption; s == nil {
			return false
		}
	}
	for _, r := range results {
		s := r.Preemption
		if s.Mechanism != "kill" || s.Kills+s.Checkpoints+s.Splits+s.Waits > 0 {
			return true
		}
	}
	return false
}
