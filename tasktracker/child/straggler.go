package child

import (
	"context"
	"syscall"
	"time"

	"gomr/speculator"
)

// slowdown is the straggler injector inside a task (configuration keys
// straggler.*, off by default): an attempt drawn as a straggler with factor
// k sleeps k times as long as it has worked, spread over its records, so
// that it takes (1+k) times as long and its progress reports stay
// proportional to its work (spec/speculation.md §5.3). The factor is drawn
// from the attempt id (or tracker), so a clone, which runs under a new
// attempt id, is not slowed by its original's draw.
type slowdown struct {
	k       float64
	last    time.Time
	lastCPU time.Duration // the process's CPU time at the last tick
	owed    time.Duration
	slept   time.Duration // delay injected so far
	worked  time.Duration // work the delay was owed for so far
	// wake cuts a sleep short (task.wakeWork); what is not slept stays
	// owed. nil: sleeps run to their end.
	wake <-chan struct{}
	// cpuOnly counts the process's CPU time alone as work
	// (straggler.work=cpu).
	cpuOnly bool
}

// minSleep is the smallest sleep taken: owed delay below it is carried
// over to the next tick, so that fine-grained ticks cost little.
const minSleep = 10 * time.Millisecond

func (t *task) newSlowdown() (*slowdown, error) {
	st, err := speculator.StragglersFromConfig(t.conf)
	if err != nil {
		return nil, err
	}
	k := st.Factor(t.launch.AttemptId, t.launch.Tracker, t.launch.Speculative)
	if k > 0 {
		t.log.Info("straggler injector: this attempt is slowed", "k", k)
	}
	return &slowdown{k: k, wake: t.wake, cpuOnly: st.CPUWork}, nil
}

// start marks the beginning of the work that is slowed down.
func (s *slowdown) start() { s.last, s.lastCPU = time.Now(), processCPU() }

// workSince is the work done since the last tick: the wall time outside
// the delays, or the process's CPU time if more, which counts the work
// of background goroutines (a map's spills sort while its record loop
// sleeps) that the delays would otherwise leave out.
func (s *slowdown) workSince(now time.Time) time.Duration {
	work := now.Sub(s.last)
	if s.lastCPU > 0 {
		cpu := processCPU()
		if s.cpuOnly {
			work = cpu - s.lastCPU
		} else {
			work = max(work, cpu-s.lastCPU)
		}
		s.lastCPU = cpu
	}
	return work
}

// processCPU is the user and system CPU time of this process so far (0
// when it cannot be read).
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// pause leaves out of the work the wall time d that the attempt spent
// stopped at a quiet point while the tracker dumped it for a clone: a
// straggler is slowed in proportion to its own work, not to the time it
// was frozen (its CPU time meanwhile, a spill settling, still counts).
func (s *slowdown) pause(d time.Duration) {
	if s != nil && !s.last.IsZero() {
		s.last = s.last.Add(d)
	}
}

// tick owes k times the work done since the previous tick and sleeps it
// off once it is worth a sleep.
func (s *slowdown) tick(ctx context.Context) {
	if s.k <= 0 {
		return
	}
	now := time.Now()
	work := s.workSince(now)
	s.worked += work
	s.owed += time.Duration(s.k * float64(work))
	s.last = now
	if s.owed < minSleep {
		return
	}
	timer := time.NewTimer(s.owed)
	select {
	case <-ctx.Done():
	case <-timer.C:
	case <-s.wake:
		// An order waits at the work loop's next check: go to it, and
		// sleep the rest later (or in the restored copy).
		timer.Stop()
		slept := min(time.Since(now), s.owed)
		s.slept += slept
		s.owed -= slept
		s.last = time.Now()
		return
	}
	timer.Stop()
	s.slept += s.owed
	s.owed = 0
	s.last = time.Now()
}

// phase owes k times a phase of work that had no records to spread the
// delay over (a map's final sort and spill, a reduce's merge): the wall
// time given, or the CPU time since the last tick if more and the
// slowdown has started; and sleeps it off right away in steps, moving the
// progress from where it is to the phase's end (progress gets the
// fraction of the sleep done).
func (s *slowdown) phase(ctx context.Context, work time.Duration, progress func(frac float64)) {
	if s.k <= 0 {
		return
	}
	if s.lastCPU > 0 {
		cpu := processCPU()
		if s.cpuOnly {
			work = cpu - s.lastCPU
		} else {
			work = max(work, cpu-s.lastCPU)
		}
		s.lastCPU = cpu
	}
	s.worked += work
	d := time.Duration(s.k * float64(work))
	const step = 100 * time.Millisecond
	began := time.Now()
	defer func() { s.slept += time.Since(began) }()
	for elapsed := time.Duration(0); elapsed < d; elapsed = time.Since(began) {
		progress(float64(elapsed) / float64(d))
		timer := time.NewTimer(min(step, d-elapsed))
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-timer.C:
		}
	}
	s.last = time.Now()
}

// report logs the delay injected, if any.
func (s *slowdown) report(t *task) {
	if s.k > 0 {
		t.log.Info("straggler injector: delay injected", "k", s.k, "delay", s.slept.Round(time.Millisecond),
			"work", s.worked.Round(time.Millisecond))
	}
}
