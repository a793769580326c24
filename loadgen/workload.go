package loadgen

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"gomr/sim"
)

// Job is one job the generator submits: when, under which name and pool,
// and how long each of its tasks runs on the simulated trackers.
type Job struct {
	Name     string
	Pool     string
	Priority int
	// Submit is the submission time from the start of the run.
	Submit time.Duration
	// Maps are the map task durations; Reduces the reduce-phase
	// durations and Shuffles (empty, or one per reduce) the shuffle
	// durations of the reduce tasks, as in a trace (docs/trace-format.md).
	Maps     []time.Duration
	Reduces  []time.Duration
	Shuffles []time.Duration
	// InputBytes is the job's input size, spread over its synthetic
	// splits.
	InputBytes int64
	// Deadline is relative to Submit; 0 means none.
	Deadline time.Duration
}

func (j *Job) shuffle(i int) time.Duration {
	if i < len(j.Shuffles) {
		return j.Shuffles[i]
	}
	return 0
}

// FromWorkload turns a simulator workload (a trace file or a built-in
// generator, sim.LoadWorkload) into the generator's jobs, durations as the
// trace gives them.
func FromWorkload(w *sim.Workload) []Job {
	jobs := make([]Job, 0, len(w.Jobs))
	for _, j := range w.Jobs {
		name := j.Name
		if name == "" {
			name = j.ID
		}
		jobs = append(jobs, Job{Name: name, Pool: j.Pool, Priority: j.Priority, Submit: j.Submit,
			Maps: j.Maps, Reduces: j.Reduces, Shuffles: j.Shuffles, InputBytes: j.InputBytes, Deadline: j.Deadline})
	}
	return jobs
}

// Fixed describes a synthetic workload of identical jobs with task
// durations drawn uniformly within Jitter (a fraction) of MapTime and
// ReduceTime.
type Fixed struct {
	Jobs    int
	Maps    int
	Reduces int
	// Pools spreads the jobs round-robin over this many pools (pool-0,
	// pool-1, ...); 0 or 1 puts them all in the default pool.
	Pools      int
	MapTime    time.Duration
	ReduceTime time.Duration
	Jitter     float64
	// Every spaces the submissions; 0 submits every job at the start.
	Every time.Duration
	// Deadline is every job's deadline, relative to its submission; 0
	// means none. The deadline policies (edf, minedf, minedf-wc) order
	// the jobs by it, and minedf and minedf-wc size each job's quota to
	// it from the job's profile (Config.Profiles).
	Deadline time.Duration
	Seed     uint64
}

// BusyMaps is the number of maps per job that keeps mapSlots slots busy
// for the whole of run with jobs jobs of maps lasting mapTime each (a wave
// more than the run needs, and a half more for the jitter and the
// registration time): the map-only load of make bench-scale.
func BusyMaps(slots, jobs int, run, mapTime time.Duration) int {
	if jobs < 1 {
		jobs = 1
	}
	waves := run.Seconds()/mapTime.Seconds() + 1
	return int(math.Ceil(float64(slots) * waves * 1.5 / float64(jobs)))
}

// Generate builds the fixed workload.
func (f Fixed) Generate() ([]Job, error) {
	if f.Jobs < 1 || f.Maps < 0 || f.Reduces < 0 || f.Maps+f.Reduces == 0 {
		return nil, fmt.Errorf("fixed workload of %d jobs of %d maps and %d reduces: want at least one job of at least one task", f.Jobs, f.Maps, f.Reduces)
	}
	if f.MapTime <= 0 || (f.Reduces > 0 && f.ReduceTime <= 0) {
		return nil, fmt.Errorf("fixed workload: task times must be positive (map %v, reduce %v)", f.MapTime, f.ReduceTime)
	}
	if f.Jitter < 0 || f.Jitter >= 1 {
		return nil, fmt.Errorf("fixed workload: jitter %g must be in [0, 1)", f.Jitter)
	}
	if f.Deadline < 0 {
		return nil, fmt.Errorf("fixed workload: deadline %v must be 0 (none) or positive", f.Deadline)
	}
	rng := rand.New(rand.NewPCG(f.Seed, 0x6c6f616467656e))
	draw := func(d time.Duration) time.Duration {
		return time.Duration(float64(d) * (1 + f.Jitter*(2*rng.Float64()-1)))
	}
	jobs := make([]Job, f.Jobs)
	for i := range jobs {
		j := Job{Name: fmt.Sprintf("loadgen-%d", i), Submit: time.Duration(i) * f.Every, InputBytes: int64(f.Maps) << 27, Deadline: f.Deadline}
		if f.Pools > 1 {
			j.Pool = fmt.Sprintf("pool-%d", i%f.Pools)
		}
		for range f.Maps {
			j.Maps = append(j.Maps, draw(f.MapTime))
		}
		for range f.Reduces {
			j.Reduces = append(j.Reduces, draw(f.ReduceTime))
		}
		jobs[i] = j
	}
	return jobs, nil
}

// Speed divides every time of the jobs (submission, task durations,
// deadline) by factor: a trace of hours replayed in minutes. The load on
// the JobTracker per task is the same, the tasks per second factor times
// more.
func Speed(jobs []Job, factor float64) error {
	if factor <= 0 || math.IsInf(factor, 0) || math.IsNaN(factor) {
		return fmt.Errorf("speed-up %g: want a positive factor", factor)
	}
	div := func(d time.Duration) time.Duration { return time.Duration(float64(d) / factor) }
	for i := range jobs {
		j := &jobs[i]
		j.Submit, j.Deadline = div(j.Submit), div(j.Deadline)
		for _, ds := range [][]time.Duration{j.Maps, j.Reduces, j.Shuffles} {
			for k := range ds {
				ds[k] = div(ds[k])
			}
		}
	}
	return nil
}
