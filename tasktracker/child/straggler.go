package child

import (
	"context"
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
	k     float64
	scale float64 // the work ticked stands for scale times as much (0: 1)
	last  time.Time
	owed  time.Duration
	slept time.Duration // delay injected so far
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
	return &slowdown{k: k}, nil
}

// start marks the beginning of the work that is slowed down.
func (s *slowdown) start() { s.last = time.Now() }

// tick owes k times the work done since the previous tick and sleeps it
// off once it is worth a sleep.
func (s *slowdown) tick(ctx context.Context) {
	if s.k <= 0 {
		return
	}
	now := time.Now()
	s.owed += time.Duration(s.k * max(s.scale, 1) * float64(now.Sub(s.last)))
	s.last = now
	if s.owed < minSleep {
		return
	}
	timer := time.NewTimer(s.owed)
	select {
	case <-ctx.Done():
	case <-timer.C:
	}
	timer.Stop()
	s.slept += s.owed
	s.owed = 0
	s.last = time.Now()
}

// phase owes k times a phase of work that had no records to spread the
// delay over (a map's final spill, a reduce's merge), and sleeps it off
// right away in steps, moving the progress from where it is to the
// phase's end (progress gets the fraction of the sleep done).
func (s *slowdown) phase(ctx context.Context, work time.Duration, progress func(frac float64)) {
	if s.k <= 0 {
		return
	}
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
		t.log.Info("straggler injector: delay injected", "k", s.k, "delay", s.slept.Round(time.Millisecond))
	}
}
