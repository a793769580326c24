package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	_ "gomr/apps" // the job definitions the client checks a spec against
	"gomr/conf"
	"gomr/jobtracker"
	"gomr/jobtracker/jobhistory"
	"gomr/mr"
	"gomr/preempt"
	"gomr/sim"
	"gomr/speculator"
)

// preemptionArg selects the preemption benchmark (make bench-preemption):
//
//	mrbench preemption -bin bin/mr [-experiments timeline,priority,contention] [-mechanisms wait,kill,checkpoint,adaptive] [-schedule calibrated|fixed]
//
// Experiments of the sources, scaled to one machine, each on a real
// cluster (a JobTracker and TaskTracker processes on loopback, every task a
// child process) started afresh for every run:
//
//   - timeline, the spec's §2.2 scenario (seed 002 Figs. 12 and 15): one map
//     slot, a low-priority job of one map, a high-priority job of the same
//     shape arriving when the first is about half done; the response times
//     of each mechanism in the order the spec's table derives.
//   - priority, seed 002's YARN experiment (§3.4.3): low-priority jobs keep
//     every map slot busy; high-priority jobs arrive every few seconds (by
//     default at times in units of a high-priority job's length, timed
//     alone on the run's cluster first: priorityArrivals); FIFO with
//     priority preemption takes slots back with the mechanism of the run
//     (wait: no preemption). Measured from the job histories: mean
//     response time of each class, wasted work (run time of killed map
//     attempts plus checkpoint dump and restore time), checkpoints made.
//   - contention, seed 004's contention experiment (§4.2): a long job and
//     periodic jobs of a pool entitled to 80% of the map slots (FAIR, a
//     minimum share with a 1 s timeout); the long job's completion time with
//     kill against split.
//
// Tasks are word counts slowed by the straggler injector (every attempt by
// the same factor, in proportion to its own work, so that a checkpointed
// or split task's remaining work is what it had left). Every job's output
// is checked against an independent count.
const preemptionArg = "preemption"

// preemptRun is one run of an experiment under one mechanism.
type preemptRun struct {
	Experiment string `json:"experiment"`
	Mechanism  string `json:"mechanism"`
	Run        int    `json:"run"` // 1.. (-runs)
	// Response times in seconds, by class (low, high; long, periodic).
	Response map[string][]float64 `json:"response_s"`
	// WastedSeconds: run time of killed or failed map attempts plus
	// checkpoint dump and restore time; KilledMaps (NUM_KILLED_MAPS, which
	// counts the re-run of a map whose output was lost too), Checkpoints,
	// Splits count them.
	WastedSeconds float64 `json:"wasted_s"`
	KilledMaps    int64   `json:"killed_maps"`
	Checkpoints   int64   `json:"checkpoints"`
	Splits        int64   `json:"splits"`
	// DumpMillis and ImageBytes are the checkpoints' totals.
	DumpMillis    int64   `json:"dump_ms"`
	RestoreMillis int64   `json:"restore_ms"`
	ImageBytes    int64   `json:"image_bytes"`
	Makespan      float64 `json:"makespan_s"`
	Check         string  `json:"check"`
	// Where a checkpoint's time went, one entry per checkpoint made, from
	// the daemons' logs (ms): ReclaimMs from the order (the planner's
	// decision) to the slot free at the JobTracker; the tracker's part of
	// it, QuiesceMs (the child to its quiet point), QueuedMs (the wait for
	// the tracker's checkpoint/restore queue), CriuDumpMs (CRIU's dump);
	// RestorableMs from the image kept to the restore launched;
	// CheckpointsFailed counts orders that ended in a kill.
	ReclaimMs         []float64 `json:"reclaim_ms,omitempty"`
	QuiesceMs         []float64 `json:"quiesce_ms,omitempty"`
	QueuedMs          []float64 `json:"queued_ms,omitempty"`
	CriuDumpMs        []float64 `json:"criu_dump_ms,omitempty"`
	CriuFrozenMs      []float64 `json:"criu_frozen_ms,omitempty"` // of CriuDumpMs, the task frozen (CRIU's stats)
	RestorableMs      []float64 `json:"restorable_ms,omitempty"`
	CheckpointsFailed int       `json:"checkpoints_failed,omitempty"`
	// Where a high-priority job's response time goes (seconds, one entry
	// per job, from its history): HighSlotWaitS from its submission to
	// the launch of its last map (the wait for the slots its maps take
	// back), HighMapRunS its maps' mean run time, HighTailS from its last
	// map's end to the job's end (its reduce).
	HighSlotWaitS []float64 `json:"high_slot_wait_s,omitempty"`
	HighMapRunS   []float64 `json:"high_map_run_s,omitempty"`
	HighTailS     []float64 `json:"high_tail_s,omitempty"`
	// The priority experiment's schedule (calibrated or fixed, see
	// priorityArrivals) and whether the run kept the experiment's
	// proportions: CalibrationS is H, the response time of the
	// calibration job (a high-priority job's shape, alone, before the
	// workload; calibrated only); ArrivalsS the high-priority jobs'
	// submissions from the workload's start as scheduled; HighGapS, per
	// pair of consecutive high-priority jobs, the time from one's end to
	// the next's submission (what the low-priority maps had between
	// them); LowMapWorkS, per low-priority map, the run time of its
	// checkpointed and successful attempts (see mapWork): its length
	// alone, plus its dumps and restores if it was checkpointed.
	Schedule     string    `json:"schedule,omitempty"`
	CalibrationS float64   `json:"calibration_s,omitempty"`
	ArrivalsS    []float64 `json:"arrivals_s,omitempty"`
	HighGapS     []float64 `json:"high_gap_s,omitempty"`
	LowMapWorkS  []float64 `json:"low_map_work_s,omitempty"`
	// MapSlots is the cluster's map slots; WastedShare is WastedSeconds
	// over MapSlots × Makespan (seed 002's wastage as a share of the
	// capacity; 28% under kill there).
	MapSlots    int     `json:"map_slots,omitempty"`
	WastedShare float64 `json:"wasted_share,omitempty"`
	// Load is the machine's 1-minute load average at the run's start and end.
	Load [2]float64 `json:"load"`
	// Defines are the -D settings the bench gave every daemon.
	Defines []string `json:"defines,omitempty"`
}

// mean of one class's response times.
func (r *preemptRun) mean(class string) float64 {
	v := r.Response[class]
	if len(v) == 0 {
		return math.NaN()
	}
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

// preemptJob is a job of an experiment's workload.
type preemptJob struct {
	name, class, pool string
	priority          int
	at                time.Duration // submission, from the start
	maps              int
	mapBytes          int
	splitSafe         bool
	// sort: the job sorts its lines (apps' sort, no combiner: the map
	// holds its output in its sort buffer of sortMB MiB) instead of
	// counting words. slow overrides the bench's straggler location.
	sort   bool
	sortMB int
	slow   float64
	// afterProgress > 0: submitted once the map progress of the job
	// before it reaches this (instead of at at).
	afterProgress float32
}

// preemptBench holds a run's settings.
type preemptBench struct {
	bin, work, criu string
	slow            float64 // straggler location: every attempt slowed by e^slow
	heartbeat       int
	// schedule is the priority experiment's: calibrated or fixed.
	schedule string
	// defines are the -D key=value settings given to every daemon of
	// every run (a tracker key such as
	// mapreduce.tasktracker.checkpoint.max-concurrent=2).
	defines []string
}

// defineFlags collects repeated -D key=value flags.
type defineFlags []string

func (d *defineFlags) String() string { return strings.Join(*d, ",") }

func (d *defineFlags) Set(v string) error {
	if _, _, err := conf.ParseDefine(v); err != nil {
		return err
	}
	*d = append(*d, v)
	return nil
}

func preemptionMain(args []string) int {
	fl := flag.NewFlagSet("mrbench preemption", flag.ContinueOnError)
	bin := fl.String("bin", "bin/mr", "the mr binary")
	work := fl.String("work", "", "work directory (default: a temporary one, removed afterwards)")
	keep := fl.Bool("keep", false, "keep the work directory")
	exps := fl.String("experiments", "timeline,priority,contention,reclaim", "experiments to run: timeline, priority, contention, reclaim")
	mechs := fl.String("mechanisms", "wait,kill,checkpoint,adaptive", "mechanisms of the timeline and priority experiments (wait: no preemption; MECH@frozen, MECH@quiesced: with preemption.checkpoint.release-slot=frozen or quiesced)")
	criu := fl.String("criu", "/opt/gomr/criu/criu.sh", "the CRIU wrapper the trackers use (make criu); checkpoint and adaptive need it")
	slow := fl.Float64("slow", 3.9, "straggler location: every attempt's work is stretched by e^slow (3.9: about 49 times)")
	jsonOut := fl.String("json", "", "write the runs as JSON to this file")
	repeat := fl.Int("runs", 1, "run every experiment and mechanism this many times (means with 95% intervals over them)")
	schedule := fl.String("schedule", scheduleCalibrated, "the priority experiment's arrivals: calibrated (at 0.9 H, then every 2.2 H, H being the response time of a high-priority job alone on the run's cluster, timed before the workload) or fixed (at 4 s, then every 10 s)")
	merge := fl.String("merge", "", "run nothing: read the runs of these JSON files (comma-separated, from -json), number each experiment and mechanism's runs in order, print them and their means (and write them with -json)")
	var defines defineFlags
	fl.Var(&defines, "D", "key=value given to every daemon (JobTracker and TaskTrackers) of every run; repeatable")
	if err := fl.Parse(args); err != nil {
		return 2
	}
	if *schedule != scheduleCalibrated && *schedule != scheduleFixed {
		fmt.Fprintf(os.Stderr, "mrbench preemption: -schedule %q: want %s or %s\n", *schedule, scheduleCalibrated, scheduleFixed)
		return 2
	}
	if *merge != "" {
		runs, err := readPreemptRuns(strings.Split(*merge, ","))
		if err != nil {
			fmt.Fprintln(os.Stderr, "mrbench preemption:", err)
			return 1
		}
		return writePreemption(runs, *jsonOut)
	}
	b := &preemptBench{bin: *bin, criu: *criu, slow: *slow, heartbeat: 100, schedule: *schedule, defines: defines}
	if *work == "" {
		dir, err := os.MkdirTemp("", "mrbench-preemption-")
		if err != nil {
			fmt.Fprintln(os.Stderr, "mrbench preemption:", err)
			return 1
		}
		b.work = dir
		if !*keep {
			defer os.RemoveAll(dir)
		}
	} else {
		b.work = *work
	}
	var runs []*preemptRun
	for rep := 1; rep <= *repeat; rep++ {
		for _, e := range strings.Split(*exps, ",") {
			var mechanisms []string
			switch e {
			case "priority", "timeline":
				mechanisms = strings.Split(*mechs, ",")
			case "contention":
				mechanisms = []string{"kill", "split"}
			case "reclaim":
				mechanisms = []string{"checkpoint"}
			default:
				fmt.Fprintf(os.Stderr, "mrbench preemption: unknown experiment %q (want timeline, priority, contention, reclaim)\n", e)
				return 2
			}
			for _, m := range mechanisms {
				progress("preemption: run %d of %d: %s with %s (load %.1f)", rep, *repeat, e, m, loadAverage())
				r, err := b.run(e, m, rep)
				if err != nil {
					fmt.Fprintf(os.Stderr, "mrbench preemption: %s with %s: %v\n", e, m, err)
					return 1
				}
				runs = append(runs, r)
			}
		}
	}
	return writePreemption(runs, *jsonOut)
}

// writePreemption prints runs and writes them as JSON to jsonOut (if not
// empty); the exit code.
func writePreemption(runs []*preemptRun, jsonOut string) int {
	printPreemption(os.Stdout, runs)
	if jsonOut != "" {
		data, _ := json.MarshalIndent(runs, "", "  ")
		if err := os.WriteFile(jsonOut, data, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "mrbench preemption:", err)
			return 1
		}
	}
	return 0
}

// readPreemptRuns reads the runs of JSON files written by -json, in
// order, and numbers each experiment and mechanism's runs 1.. in that
// order (series run in pieces of -runs 1 all say run 1).
func readPreemptRuns(paths []string) ([]*preemptRun, error) {
	var all []*preemptRun
	n := map[[2]string]int{}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		var runs []*preemptRun
		if err := json.Unmarshal(data, &runs); err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		for _, r := range runs {
			k := [2]string{r.Experiment, r.Mechanism}
			n[k]++
			r.Run = n[k]
		}
		all = append(all, runs...)
	}
	return all, nil
}

// workload returns an experiment's jobs and the cluster's settings.
func (b *preemptBench) workload(exp, mech string) (jobs []preemptJob, trackers, mapSlots int, defines []string) {
	// A mechanism "checkpoint@frozen" (or "adaptive@frozen") is that
	// mechanism with the victims' slots freed at the dump's freeze
	// (preemption.checkpoint.release-slot=frozen).
	if base, release, ok := strings.Cut(mech, "@"); ok {
		jobs, trackers, mapSlots, defines = b.workload(exp, base)
		return jobs, trackers, mapSlots, append(defines, preempt.KeyReleaseSlot+"="+release)
	}
	switch exp {
	case "timeline":
		// The spec's §2.2 timeline, scaled: one map slot; a low-priority
		// job of one map (seconds of work) starts; a high-priority job of
		// the same shape arrives 3 s later.
		jobs = []preemptJob{
			{name: "low", class: "low", maps: 1, mapBytes: 3 << 20},
			{name: "high", class: "high", priority: 1, at: 3 * time.Second, maps: 1, mapBytes: 3 << 20},
		}
		defines = []string{"scheduler.policy=fifo", "scheduler.fifo.preemption=" + strconv.FormatBool(mech != "wait")}
		if mech != "wait" {
			defines = append(defines, "preemption.mechanism="+mech)
		}
		return jobs, 1, 1, defines
	case "priority":
		// Seed 002's YARN experiment in small, with its conditions: the
		// high-priority jobs take every slot when they come (there, "a
		// production job larger than the cluster preempts all
		// non-production jobs"; Facebook's cluster killed all low-priority
		// maps every 500 s), and a low-priority map is longer than the
		// gap between two of them, so that kill makes it start over at
		// every arrival until the arrivals stop, while a checkpoint keeps
		// what each gap gave it. Two trackers of 2 map slots; two
		// low-priority jobs of 4 maps of 5 MB (11-14 s each at load
		// 10-30); four high-priority jobs of 4 maps of 1 MB (3-4.5 s
		// there), submitted at the times of the run's schedule, which run
		// sets (priorityArrivals: calibrated, at 0.9 H then every 2.2 H;
		// fixed, at 4 s then every 10 s).
		for i := range 2 {
			jobs = append(jobs, preemptJob{name: fmt.Sprintf("low%d", i), class: "low", at: time.Duration(i) * 200 * time.Millisecond,
				maps: 4, mapBytes: 5 << 20})
		}
		for i := range 4 {
			jobs = append(jobs, preemptJob{name: fmt.Sprintf("high%d", i), class: "high", priority: 1,
				maps: 4, mapBytes: 1 << 20})
		}
		defines = []string{"scheduler.policy=fifo", "scheduler.fifo.preemption=" + strconv.FormatBool(mech != "wait")}
		if mech != "wait" {
			defines = append(defines, "preemption.mechanism="+mech)
		}
		return jobs, 2, 2, defines
	case "reclaim":
		// The reclaim target: one map slot; a sort map of 80 MB
		// of text, whose sort buffer (128 MiB, spilling at 95%) holds its
		// output until its record loop ends, slowed 8 times; when it has
		// read 45% of its input (progress 0.3) a high-priority job
		// arrives and FIFO takes the slot back by checkpoint. The map's
		// process then holds about 100 MB (36 MB of records in the
		// buffer, their slices and the heap's slack: the image is 2.9
		// times the records buffered). Later in the map, the final sort
		// (which has no quiet point, and is most of a sort map's work)
		// would be under way by the time the order arrives, and the map
		// killed.
		jobs = []preemptJob{
			{name: "big", class: "low", maps: 1, mapBytes: 80 << 20, sort: true, sortMB: 128, slow: math.Log(8)},
			{name: "high", class: "high", priority: 1, maps: 1, mapBytes: 1 << 20, afterProgress: 0.3},
		}
		return jobs, 1, 1, []string{"scheduler.policy=fifo", "scheduler.fifo.preemption=true", "preemption.mechanism=" + mech}
	default: // contention
		// One tracker of 10 map slots. A long split-safe job of 20 maps;
		// every 12 s a periodic job of 8 short maps in a pool entitled to
		// 8 slots (80%), with a 1 s minimum-share timeout.
		jobs = append(jobs, preemptJob{name: "long", class: "long", pool: "long", maps: 20, mapBytes: 4 << 20, splitSafe: true})
		for i := range 4 {
			jobs = append(jobs, preemptJob{name: fmt.Sprintf("periodic%d", i), class: "periodic", pool: "periodic",
				at: 3*time.Second + time.Duration(i)*12*time.Second, maps: 8, mapBytes: 1 << 20, splitSafe: true})
		}
		defines = []string{"scheduler.policy=fair", "scheduler.fair.preemption=true",
			"scheduler.fair.pools=long:1,periodic:4:8:0:1s", "scheduler.fair.preemption-interval=0s",
			"preemption.mechanism=" + mech, "preemption.split.min-task-age=0s", "preemption.split.min-remaining=0s"}
		return jobs, 1, 10, defines
	}
}

// run runs one experiment under one mechanism on a fresh cluster.
func (b *preemptBench) run(exp, mech string, rep int) (*preemptRun, error) {
	jobs, trackers, mapSlots, defines := b.workload(exp, mech)
	dir := filepath.Join(b.work, fmt.Sprintf("%s-%s-%d", exp, mech, rep))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	c, err := b.startCluster(dir, trackers, mapSlots, defines)
	if err != nil {
		return nil, err
	}
	defer c.stop()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()

	var subs []*benchJob
	for _, j := range jobs {
		s, err := prepareJob(dir, j)
		if err != nil {
			return nil, err
		}
		subs = append(subs, s)
	}
	// The calibrated priority experiment times a job of a high-priority
	// job's shape alone first (its own input and output).
	calibrated := exp == "priority" && b.schedule == scheduleCalibrated
	var calib *benchJob
	if calibrated {
		for _, j := range jobs {
			if j.class == "high" {
				j.name, j.class, j.at = "calibration", "calibration", 0
				if calib, err = prepareJob(dir, j); err != nil {
					return nil, err
				}
				break
			}
		}
	}
	r := &preemptRun{Experiment: exp, Mechanism: mech, Run: rep, Response: map[string][]float64{}, Defines: b.defines,
		MapSlots: trackers * mapSlots}
	r.Load[0] = loadAverage()
	if exp == "priority" {
		r.Schedule = b.schedule
		var h time.Duration
		if calib != nil {
			if calib.id, err = c.client.Submit(ctx, b.jobSpec(dir, calib)); err != nil {
				return nil, fmt.Errorf("submitting the calibration job: %w", err)
			}
			rec, _, err := c.finish(ctx, calib)
			if err != nil {
				return nil, err
			}
			h = rec.Job.Finish.Sub(rec.Job.Submit)
			r.CalibrationS = h.Seconds()
			progress("preemption: calibration job (a high-priority job alone) took H = %.2f s", h.Seconds())
		}
		var highs []*benchJob
		for _, s := range subs {
			if s.job.class == "high" {
				highs = append(highs, s)
			}
		}
		at, err := priorityArrivals(b.schedule, h, len(highs))
		if err != nil {
			return nil, err
		}
		for i, s := range highs {
			s.job.at = at[i]
			r.ArrivalsS = append(r.ArrivalsS, at[i].Seconds())
		}
	}
	start := time.Now() // the inputs are written: the workload's clock starts
	for i, s := range subs {
		j := s.job
		if j.afterProgress > 0 && i > 0 {
			if err := c.waitMapProgress(ctx, subs[i-1].id, j.afterProgress); err != nil {
				return nil, err
			}
		} else if d := time.Until(start.Add(j.at)); d > 0 {
			time.Sleep(d)
		}
		if s.id, err = c.client.Submit(ctx, b.jobSpec(dir, s)); err != nil {
			return nil, fmt.Errorf("submitting %s: %w", j.name, err)
		}
	}
	var first, last time.Time
	var highSubmit, highEnd []time.Time
	for _, s := range subs {
		rec, res, err := c.finish(ctx, s)
		if err != nil {
			return nil, err
		}
		r.Response[s.job.class] = append(r.Response[s.job.class], rec.Job.Finish.Sub(rec.Job.Submit).Seconds())
		switch s.job.class {
		case "high":
			r.highParts(rec)
			highSubmit, highEnd = append(highSubmit, rec.Job.Submit), append(highEnd, rec.Job.Finish)
		case "low":
			if exp == "priority" {
				r.LowMapWorkS = append(r.LowMapWorkS, mapWork(rec)...)
			}
		}
		if first.IsZero() || rec.Job.Submit.Before(first) {
			first = rec.Job.Submit
		}
		if rec.Job.Finish.After(last) {
			last = rec.Job.Finish
		}
		for _, a := range rec.Attempts {
			if a.TaskType == "m" && (a.State == "KILLED" || a.State == "FAILED") {
				// Its work is thrown away: killed, or failed (a lost
				// output, a restore that failed).
				r.WastedSeconds += a.Finish.Sub(a.Start).Seconds()
			}
		}
		g := mr.JobCounterGroup
		r.KilledMaps += res.Counters.Get(g, mr.NumKilledMaps)
		r.Checkpoints += res.Counters.Get(g, mr.Checkpoints)
		r.DumpMillis += res.Counters.Get(g, mr.CheckpointDumpMillis)
		r.RestoreMillis += res.Counters.Get(g, mr.CheckpointRestoreMillis)
		r.ImageBytes += res.Counters.Get(g, mr.CheckpointBytes)
		r.Splits += res.Counters.Get(mr.SplitGroup, mr.MapSplits)
	}
	if exp == "priority" {
		r.HighGapS = gaps(highSubmit, highEnd)
	}
	r.WastedSeconds += float64(r.DumpMillis+r.RestoreMillis) / 1000
	r.Makespan = last.Sub(first).Seconds()
	r.WastedShare = wastedShare(r.WastedSeconds, r.MapSlots, r.Makespan)
	r.Check = fmt.Sprintf("%d jobs, every output equal to an independent word count or sort", len(subs))
	if calib != nil {
		r.Check += " (and the calibration job's)"
	}
	if err := r.readTimings(dir); err != nil {
		return nil, err
	}
	r.Load[1] = loadAverage()
	return r, nil
}

// benchJob is a job of a run: its workload entry, its output and what the
// output must hold, and its ID once submitted.
type benchJob struct {
	job   preemptJob
	id    string
	out   string
	want  map[string]*int64
	lines lineSum // a sort job's input lines
}

// prepareJob writes job j's input in dir (in-NAME) and counts what its
// output (out-NAME) must hold.
func prepareJob(dir string, j preemptJob) (*benchJob, error) {
	in := filepath.Join(dir, "in-"+j.name)
	if err := os.MkdirAll(in, 0o755); err != nil {
		return nil, err
	}
	if _, err := writeText(filepath.Join(in, "part.txt"), int64(j.maps*j.mapBytes)); err != nil {
		return nil, err
	}
	s := &benchJob{job: j, out: filepath.Join(dir, "out-"+j.name)}
	f, err := os.Open(filepath.Join(in, "part.txt"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if j.sort {
		s.lines, err = sumLines(f)
	} else {
		s.want, err = countWords(f)
	}
	if err != nil {
		return nil, fmt.Errorf("counting the input of %s: %w", j.name, err)
	}
	return s, nil
}

// jobSpec is the submission of s, whose input prepareJob wrote in dir.
func (b *preemptBench) jobSpec(dir string, s *benchJob) *mr.JobSpec {
	j := s.job
	def, sortMB, slow := "wordcount", 4, b.slow
	if j.sort {
		def, sortMB = "sort", j.sortMB
	}
	if j.slow != 0 {
		slow = j.slow
	}
	spec := &mr.JobSpec{Name: j.name, Def: def, Inputs: []string{filepath.Join(dir, "in-"+j.name)}, Output: s.out,
		NumReduces: 1, Pool: j.pool, Priority: j.priority, Conf: map[string]string{
			"mapreduce.input.fileinputformat.split.maxsize": strconv.Itoa(j.mapBytes),
			"mapreduce.task.io.sort.mb":                     strconv.Itoa(sortMB),
			"mapreduce.job.reduce.slowstart.completedmaps":  "1",
			"mapreduce.task.progress.report.interval":       "100",
			speculator.KeyStragglerFraction:                 "1",
			speculator.KeyStragglerScope:                    "attempt",
			speculator.KeyStragglerShape:                    "0",
			speculator.KeyStragglerLocation:                 strconv.FormatFloat(slow, 'f', -1, 64),
			speculator.KeyStragglerMaxFactor:                "50",
			speculator.KeyStragglerTaskTypes:                "map", // the experiments are about map slots
			// Delays owed for CPU time: on a loaded machine a task's
			// wall time outside its delays grows with the load, and k
			// times that would make the load, not the mechanism, decide.
			speculator.KeyStragglerWork: "cpu",
			mr.KeySplitSafe:             strconv.FormatBool(j.splitSafe),
		}}
	if j.sort {
		// The sort buffer holds the map's output until the record
		// loop ends.
		spec.Conf["mapreduce.map.sort.spill.percent"] = "0.95"
	}
	return spec
}

// finish waits for submitted job s to end, checks that it succeeded and
// that its output holds what it must, and returns its history and result.
func (c *benchCluster) finish(ctx context.Context, s *benchJob) (*jobhistory.Record, *mr.JobResult, error) {
	res, err := c.client.Wait(ctx, s.id)
	if err != nil {
		return nil, nil, fmt.Errorf("job %s: %w", s.job.name, err)
	}
	if res.State != "SUCCEEDED" {
		return nil, nil, fmt.Errorf("job %s (%s) %s: %s", s.job.name, s.id, res.State, res.Error)
	}
	check := func() error { return checkWordCountOutput(s.out, s.want) }
	if s.job.sort {
		check = func() error { return checkSortOutput(s.out, s.lines) }
	}
	if err := check(); err != nil {
		return nil, nil, fmt.Errorf("job %s: %w", s.job.name, err)
	}
	rec, err := c.history(ctx, s.id)
	if err != nil {
		return nil, nil, err
	}
	return rec, res, nil
}

// highParts splits a high-priority job's response time (highSlotWaitS,
// HighMapRunS, HighTailS) from its history.
func (r *preemptRun) highParts(rec *jobhistory.Record) {
	var lastLaunch, lastEnd time.Time
	var run float64
	n := 0
	for _, a := range rec.Attempts {
		if a.TaskType != "m" || a.State != "SUCCEEDED" {
			continue
		}
		if a.Start.After(lastLaunch) {
			lastLaunch = a.Start
		}
		if a.Finish.After(lastEnd) {
			lastEnd = a.Finish
		}
		run += a.Finish.Sub(a.Start).Seconds()
		n++
	}
	if n == 0 {
		return
	}
	r.HighSlotWaitS = append(r.HighSlotWaitS, lastLaunch.Sub(rec.Job.Submit).Seconds())
	r.HighMapRunS = append(r.HighMapRunS, run/float64(n))
	r.HighTailS = append(r.HighTailS, rec.Job.Finish.Sub(lastEnd).Seconds())
}

// waitMapProgress waits until job id's maps are at least at progress p.
func (c *benchCluster) waitMapProgress(ctx context.Context, id string, p float32) error {
	for {
		st, err := c.client.Status(ctx, id)
		if err != nil {
			return err
		}
		if st.MapProgress >= p {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for job %s to reach map progress %.2f: %w", id, p, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// checkWordCountOutput compares a word count's part files with want.
func checkWordCountOutput(out string, want map[string]*int64) error {
	parts, _ := filepath.Glob(filepath.Join(out, "part-r-*"))
	if len(parts) == 0 {
		return fmt.Errorf("no part files in %s", out)
	}
	got := map[string]int64{}
	for _, p := range parts {
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
			if line == "" {
				continue
			}
			k, v, ok := strings.Cut(line, "\t")
			n, err := strconv.ParseInt(v, 10, 64)
			if !ok || err != nil {
				return fmt.Errorf("%s: bad line %q", p, line)
			}
			got[k] += n
		}
	}
	if len(got) != len(want) {
		return fmt.Errorf("%d words counted, want %d", len(got), len(want))
	}
	for k, n := range want {
		if got[k] != *n {
			return fmt.Errorf("word %q counted %d times, want %d", k, got[k], *n)
		}
	}
	return nil
}

// benchCluster is a JobTracker and TaskTracker processes of one run.
type benchCluster struct {
	procs      []*exec.Cmd
	client     *jobtracker.Client
	historyDir string
}

// startCluster starts the JobTracker and the trackers with the run's
// configuration, logs in dir.
func (b *preemptBench) startCluster(dir string, trackers, mapSlots int, defines []string) (*benchCluster, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := l.Addr().String()
	l.Close()
	c := &benchCluster{historyDir: filepath.Join(dir, "history")}
	all := append([]string{
		"mapreduce.jobtracker.address=" + addr,
		"mapreduce.jobtracker.http.address=127.0.0.1:0",
		"mapreduce.jobtracker.jobhistory.location=" + c.historyDir,
		"mapreduce.cluster.local.dir=" + filepath.Join(dir, "local"),
		"mapreduce.tasktracker.heartbeat.interval=" + strconv.Itoa(b.heartbeat),
		"mapreduce.tasktracker.host.name=localhost",
		"mapreduce.tasktracker.http.address=127.0.0.1:0",
		"mapreduce.map.speculative=false",
		"mapreduce.reduce.speculative=false",
		"log.level=info",
	}, defines...)
	if _, err := os.Stat(b.criu); err == nil && os.Geteuid() == 0 {
		all = append(all, "mapreduce.tasktracker.criu.path="+b.criu)
	}
	start := func(name string, args ...string) error {
		// The bench's own -D go to the daemons only: this client need not
		// know their keys (a tracker's).
		for _, d := range append(all, b.defines...) {
			args = append(args, "-D", d)
		}
		cmd := exec.Command(b.bin, args...)
		logf, err := os.Create(filepath.Join(dir, name+".log"))
		if err != nil {
			return err
		}
		defer logf.Close()
		cmd.Stdout, cmd.Stderr = logf, logf
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			return fmt.Errorf("starting %s: %w", name, err)
		}
		c.procs = append(c.procs, cmd)
		return nil
	}
	if err := start("jobtracker", "jobtracker"); err != nil {
		return nil, err
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			conn.Close()
			break
		}
		if time.Now().After(deadline) {
			c.stop()
			return nil, fmt.Errorf("the JobTracker did not listen on %s (log in %s)", addr, dir)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for i := range trackers {
		if err := start(fmt.Sprintf("tt%d", i), "tasktracker", "--name", fmt.Sprintf("tt%d", i),
			"-D", fmt.Sprintf("mapreduce.tasktracker.map.tasks.maximum=%d", mapSlots),
			"-D", "mapreduce.tasktracker.reduce.tasks.maximum=2"); err != nil {
			c.stop()
			return nil, err
		}
	}
	over := map[string]string{}
	for _, d := range all {
		k, v, _ := conf.ParseDefine(d)
		over[k] = v
	}
	cfg, err := conf.Load(conf.LoadOptions{Overrides: over})
	if err != nil {
		c.stop()
		return nil, err
	}
	if c.client, err = jobtracker.Dial(addr, cfg); err != nil {
		c.stop()
		return nil, err
	}
	// Every tracker registered before the first job.
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		trs, err := c.client.Trackers(ctx)
		cancel()
		if err == nil && len(trs) == trackers {
			return c, nil
		}
		if time.Now().After(deadline) {
			c.stop()
			return nil, fmt.Errorf("%d of %d trackers joined (logs in %s): %v", len(trs), trackers, dir, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// history reads a job's history once the JobTracker has written it.
func (c *benchCluster) history(ctx context.Context, id string) (*jobhistory.Record, error) {
	path := filepath.Join(c.historyDir, id+".jsonl")
	for {
		data, err := os.ReadFile(path)
		if err == nil {
			return jobhistory.Parse(data)
		}
		if !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("history of %s: %w", id, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// stop kills the daemons (task children die with their tracker).
func (c *benchCluster) stop() {
	if c.client != nil {
		c.client.Close()
	}
	for i := len(c.procs) - 1; i >= 0; i-- {
		_ = c.procs[i].Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func(p *exec.Cmd) { _ = p.Wait(); close(done) }(c.procs[i])
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = c.procs[i].Process.Kill()
			<-done
		}
	}
}

// printPreemption prints the runs, where their checkpoints' time went,
// and the targets on the means over the runs.
func printPreemption(w io.Writer, runs []*preemptRun) {
	classes := func(r *preemptRun) (string, string) {
		if r.Experiment == "contention" {
			return "long", "periodic"
		}
		return "low", "high"
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "experiment\tmechanism\trun\tresponse low/long [s]\tresponse high/periodic [s]\twasted [s]\twasted share %\tkilled maps\tcheckpoints\tfailed\tsplits\timage MB\treclaim ms\tquiesce ms\tqueued ms\tcriu dump ms\tfrozen ms\trestorable s\thigh: slot wait s\tmap run s\ttail s\tload\t")
	for _, r := range runs {
		a, b := classes(r)
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.2f\t%.2f\t%.2f\t%.1f\t%d\t%d\t%d\t%d\t%.1f\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%.1f-%.1f\t\n", r.Experiment, r.Mechanism, r.Run,
			r.mean(a), r.mean(b), r.WastedSeconds, 100*r.WastedShare, r.KilledMaps, r.Checkpoints, r.CheckpointsFailed, r.Splits, float64(r.ImageBytes)/1e6,
			meanMax(r.ReclaimMs, 1, 0), meanMax(r.QuiesceMs, 1, 0), meanMax(r.QueuedMs, 1, 0), meanMax(r.CriuDumpMs, 1, 0), meanMax(r.CriuFrozenMs, 1, 0), meanMax(r.RestorableMs, 1000, 1),
			meanMax(r.HighSlotWaitS, 1, 2), meanMax(r.HighMapRunS, 1, 2), meanMax(r.HighTailS, 1, 2),
			r.Load[0], r.Load[1])
	}
	tw.Flush()
	fmt.Fprintln(w, "(reclaim, quiesce, queued, criu dump, frozen, restorable: mean/max over the run's checkpoints; high: over its high-priority jobs, slot wait = submission to the last map's launch, tail = last map's end to the job's end; wasted share = wasted / (map slots × makespan))")
	fmt.Fprintln(w)
	printSchedules(w, runs)

	// Means over the runs, with the half-width of their 95% interval.
	type key struct{ exp, mech string }
	var order []key
	by := map[key][]*preemptRun{}
	for _, r := range runs {
		k := key{r.Experiment, r.Mechanism}
		if by[k] == nil {
			order = append(order, k)
		}
		by[k] = append(by[k], r)
	}
	over := func(k key, f func(*preemptRun) float64) sim.MetricAgg {
		var xs []float64
		for _, r := range by[k] {
			xs = append(xs, f(r))
		}
		return sim.Aggregate("", xs)
	}
	ms := func(a sim.MetricAgg) string {
		return fmt.Sprintf("%.2f ± %.2f (%.2f-%.2f)", a.Mean, a.CI95, a.Min, a.Max)
	}
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "experiment\tmechanism\truns\tresponse low/long [s]\tresponse high/periodic [s]\twasted [s]\twasted share %\t")
	for _, k := range order {
		a, b := classes(by[k][0])
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\t\n", k.exp, k.mech, len(by[k]),
			ms(over(k, func(r *preemptRun) float64 { return r.mean(a) })),
			ms(over(k, func(r *preemptRun) float64 { return r.mean(b) })),
			ms(over(k, func(r *preemptRun) float64 { return r.WastedSeconds })),
			ms(over(k, func(r *preemptRun) float64 { return 100 * r.WastedShare })))
	}
	tw.Flush()
	fmt.Fprintln(w, "(mean ± half-width of the 95% interval over the runs (Student t), range)")
	fmt.Fprintln(w)

	verdict := func(ok bool) string {
		if ok {
			return "met"
		}
		return "MISSED"
	}
	mean := func(k key, f func(*preemptRun) float64) float64 { return over(k, f).Mean }
	low := func(r *preemptRun) float64 { return r.mean("low") }
	high := func(r *preemptRun) float64 { return r.mean("high") }
	wasted := func(r *preemptRun) float64 { return r.WastedSeconds }
	var lines []string
	if k := (key{"priority", "kill"}); by[k] != nil {
		for _, m := range []string{"checkpoint", "adaptive", "checkpoint@frozen", "adaptive@frozen", "checkpoint@quiesced", "adaptive@quiesced"} {
			c := key{"priority", m}
			if by[c] == nil {
				continue
			}
			waste := 1 - mean(c, wasted)/mean(k, wasted)
			lo := 1 - mean(c, low)/mean(k, low)
			hi := mean(c, high)/mean(k, high) - 1
			lines = append(lines,
				fmt.Sprintf("priority, %s against kill (means of %d and %d runs): wasted work %.0f%% lower (target >= 60%%: %s); low-priority response %.0f%% better (target >= 30%%: %s); high-priority response %+.1f%% (target within 5%%: %s)",
					m, len(by[c]), len(by[k]), 100*waste, verdict(waste >= 0.6), 100*lo, verdict(lo >= 0.3), 100*hi, verdict(hi <= 0.05)))
		}
	}
	if k := (key{"priority", "kill"}); by[k] != nil {
		share := over(k, func(r *preemptRun) float64 { return 100 * r.WastedShare })
		lines = append(lines, fmt.Sprintf("priority, kill's wasted work: %.1f ± %.1f%% of the map slots' capacity over %d runs (seed 002's YARN experiment: about 28%%)",
			share.Mean, share.CI95, share.N))
	}
	if w, k, c := by[key{"timeline", "wait"}], by[key{"timeline", "kill"}], by[key{"timeline", "checkpoint"}]; w != nil && k != nil && c != nil {
		hk, hc, hw := mean(key{"timeline", "kill"}, high), mean(key{"timeline", "checkpoint"}, high), mean(key{"timeline", "wait"}, high)
		lw, lc, lk := mean(key{"timeline", "wait"}, low), mean(key{"timeline", "checkpoint"}, low), mean(key{"timeline", "kill"}, low)
		lines = append(lines, fmt.Sprintf("timeline (spec §2.2): high priority kill %.1f s <= checkpoint %.1f s < wait %.1f s: %s; low priority wait %.1f s < checkpoint %.1f s < kill %.1f s: %s",
			hk, hc, hw, verdict(hk <= hc && hc < hw), lw, lc, lk, verdict(lw < lc && lc < lk)))
	}
	if k, s := (key{"contention", "kill"}), (key{"contention", "split"}); by[k] != nil && by[s] != nil {
		long := func(r *preemptRun) float64 { return r.mean("long") }
		gain := 1 - mean(s, long)/mean(k, long)
		lines = append(lines, fmt.Sprintf("contention: the long job %.0f%% faster with split than with kill (target >= 25%%: %s)", 100*gain, verdict(gain >= 0.25)))
	}
	if k := (key{"reclaim", "checkpoint"}); by[k] != nil {
		var all []float64
		var mb float64
		for _, r := range by[k] {
			all = append(all, r.ReclaimMs...)
			mb += float64(r.ImageBytes) / 1e6 / float64(len(by[k]))
		}
		a := sim.Aggregate("", all)
		lines = append(lines, fmt.Sprintf("reclaim: order to slot free %.0f ± %.0f ms (%.0f-%.0f, %d checkpoints) for images of %.0f MB on average (target < 1 s at 100 MB: %s)",
			a.Mean, a.CI95, a.Min, a.Max, a.N, mb, verdict(a.N > 0 && a.Max < 1000)))
	}
	sort.Strings(lines)
	for _, l := range lines {
		fmt.Fprintln(w, l)
	}
}

// meanMax prints the mean and the largest of xs divided by unit, with
// digits decimals; "-" for none.
func meanMax(xs []float64, unit float64, digits int) string {
	if len(xs) == 0 {
		return "-"
	}
	s, m := 0.0, math.Inf(-1)
	for _, x := range xs {
		s += x
		m = math.Max(m, x)
	}
	return fmt.Sprintf("%.*f/%.*f", digits, s/float64(len(xs))/unit, digits, m/unit)
}

// printSchedules prints, for each priority run, its schedule and whether
// it kept the experiment's proportions: H (the calibration job), the
// arrivals, the time the low-priority maps had between two high-priority
// jobs (scheduled: period less H, calibrated only; measured: from one
// job's end to the next's submission), and the low-priority maps' length.
func printSchedules(w io.Writer, runs []*preemptRun) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	header := false
	for _, r := range runs {
		if r.Experiment != "priority" || r.Schedule == "" {
			continue
		}
		if !header {
			fmt.Fprintln(tw, "priority\tmechanism\trun\tschedule\tH [s]\tarrivals [s]\tgap designed [s]\tgap measured [s]\tlow map work [s]\tlow map work / gap\t")
			header = true
		}
		arr := make([]string, len(r.ArrivalsS))
		for i, a := range r.ArrivalsS {
			arr[i] = strconv.FormatFloat(a, 'f', 1, 64)
		}
		designed := "-"
		if r.CalibrationS > 0 && len(r.ArrivalsS) > 1 {
			designed = fmt.Sprintf("%.2f", r.ArrivalsS[1]-r.ArrivalsS[0]-r.CalibrationS)
		}
		work := sim.Aggregate("", r.LowMapWorkS)
		gap := sim.Aggregate("", r.HighGapS)
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%.2f\t%s\t%s\t%.2f (%.2f-%.2f)\t%.2f (%.2f-%.2f)\t%.1f\t\n", "", r.Mechanism, r.Run, r.Schedule, r.CalibrationS,
			strings.Join(arr, " "), designed, gap.Mean, gap.Min, gap.Max, work.Mean, work.Min, work.Max, work.Mean/gap.Mean)
	}
	if header {
		tw.Flush()
		fmt.Fprintln(w, "(H: the calibration job's response, a high-priority job alone; gap: from a high-priority job's end to the next's submission, designed = period - H; low map work: per low map, its checkpointed and successful attempts' run time, mean (range))")
		fmt.Fprintln(w)
	}
}
