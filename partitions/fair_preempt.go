package partitions

import (
	"sort"
	"time"

	"gomr/conf"
)

// Preemption in the fair policy, as Hadoop 1's Fair Scheduler has it
// (mapred.fairscheduler.preemption, MAPREDUCE-551): a pool that has been
// below its minimum share for its min-share preemption timeout, or below
// half its fair share for the fair-share preemption timeout, takes back
// what brings it up to that share (capped by its demand), by killing the
// youngest running tasks of the pools that are over their fair share,
// never taking a pool below its fair share. Preemption is checked at most
// once every preemption interval, so that the slots freed by one round
// reach the starved pools before the next round counts them as starved.

// fairPreemptKeys are the fair policy's preemption keys.
var fairPreemptKeys = []conf.Key{
	{Name: "scheduler.fair.preemption", Type: conf.Bool, Default: "false", Description: "fair: kill tasks of pools over their fair share for pools starved past their preemption timeouts (Hadoop's mapred.fairscheduler.preemption, off by default there too)"},
	{Name: "scheduler.fair.min-share-preemption-timeout", Type: conf.Duration, Default: "0s", Description: "fair: how long a pool may stay below its minimum share before it preempts (Hadoop's defaultMinSharePreemptionTimeout; a pool's own in scheduler.fair.pools); 0 = never", Valid: "a duration >= 0"},
	{Name: "scheduler.fair.fair-share-preemption-timeout", Type: conf.Duration, Default: "0s", Description: "fair: how long a pool may stay below half its fair share before it preempts up to its fair share (Hadoop's fairSharePreemptionTimeout); 0 = never", Valid: "a duration >= 0"},
	{Name: "scheduler.fair.preemption-interval", Type: conf.Duration, Default: "15s", Description: "fair: at most one preemption round per interval (Hadoop's mapred.fairscheduler.preemption.interval)", Valid: "a duration >= 0"},
}

func init() { registerKeys(fairPreemptKeys...) }

// fairPreemption is the fair policy's preemption state.
type fairPreemption struct {
	on          bool
	minTimeout  time.Duration // default per pool; 0: never
	fairTimeout time.Duration // 0: never
	interval    time.Duration
	lastCheck   time.Time
	// atMin and atHalfFair are, per pool and task type, the last time
	// the pool had its minimum share and half its fair share (or wanted
	// no more); a pool is first seen satisfied.
	atMin, atHalfFair map[string]*[2]time.Time
	// running are the running attempts with their start times; killed
	// counts the attempts preempted, by type.
	running map[attemptKey]time.Time
	killed  [2]int
	// wake is, per task type, when a pool's timeout next expires or the
	// interval next allows a preemption that the last offer wanted (zero:
	// nothing pending).
	wake [2]time.Time
}

func newFairPreemption(r *conf.Reader) fairPreemption {
	return fairPreemption{
		on:          r.Bool("scheduler.fair.preemption"),
		minTimeout:  r.Duration("scheduler.fair.min-share-preemption-timeout"),
		fairTimeout: r.Duration("scheduler.fair.fair-share-preemption-timeout"),
		interval:    r.Duration("scheduler.fair.preemption-interval"),
		atMin:       map[string]*[2]time.Time{},
		atHalfFair:  map[string]*[2]time.Time{},
		running:     map[attemptKey]time.Time{},
	}
}

// observe keeps the running attempts' start times, and starts the clock
// of a pool that had no job: it was satisfied until this arrival.
func (p *fairPreemption) observe(ev Event, pool string, poolIdle bool) {
	if !p.on {
		return
	}
	switch ev.Kind {
	case JobSubmitted:
		if pool != "" && (poolIdle || p.atMin[pool] == nil) {
			p.atMin[pool] = &[2]time.Time{ev.Time, ev.Time}
			p.atHalfFair[pool] = &[2]time.Time{ev.Time, ev.Time}
		}
	case TaskStarted:
		p.running[keyOf(ev)] = ev.Time
	case TaskFinished, TaskFailed:
		delete(p.running, keyOf(ev))
	case JobFinished:
		for k := range p.running {
			if k.job == ev.JobID {
				delete(p.running, k)
			}
		}
	}
}

// poolState is one pool's figures for a task type during an Offer.
type poolState struct {
	name                      string
	running                   int
	demand, minShare, fairShr float64
}

// preempt returns the preemptions for slot type t: it updates when each
// pool last had its shares, and, once per interval, preempts for the pools
// starved past their timeouts.
func (f *Fair) preempt(now time.Time, cands []fairCand, poolNames []string, poolShare []float64, t TaskType) []Preemption {
	p := &f.preemption
	pools := make([]poolState, len(poolNames))
	for i, name := range poolNames {
		pl := f.pool(name)
		pools[i] = poolState{name: name, fairShr: poolShare[i], minShare: float64(pl.MinMaps)}
		if t == Reduce {
			pools[i].minShare = float64(pl.MinReduces)
		}
	}
	for _, c := range cands {
		pools[c.pool].running += c.w.running(t)
		pools[c.pool].demand += demandOf(c.w, t)
	}
	// A pool with no job in the view wants nothing: it is satisfied.
	seen := make(map[string]bool, len(pools))
	for _, ps := range pools {
		seen[ps.name] = true
	}
	for name, at := range p.atMin {
		if !seen[name] {
			at[t], p.atHalfFair[name][t] = now, now
		}
	}
	want := 0
	belowMin := false // a pool is owed its minimum share, not only its fair share
	var wake time.Time
	for _, ps := range pools {
		atMin, atHalf := p.atMin[ps.name], p.atHalfFair[ps.name]
		if atMin == nil {
			atMin, atHalf = &[2]time.Time{now, now}, &[2]time.Time{now, now}
			p.atMin[ps.name], p.atHalfFair[ps.name] = atMin, atHalf
		}
		run := float64(ps.running)
		hasMin := run >= min(ps.minShare, ps.demand)
		hasHalf := run >= min(ps.fairShr/2, ps.demand)
		if hasMin {
			atMin[t] = now
		}
		if hasHalf {
			atHalf[t] = now
		}
		// Hadoop's tasksToPreempt; a pool short of a share whose timeout
		// has not expired sets the wake-up.
		n := 0
		if to := f.minShareTimeout(ps.name); to > 0 && !hasMin {
			if now.Sub(atMin[t]) > to {
				n = max(n, int(min(ps.minShare, ps.demand))-ps.running)
				belowMin = belowMin || n > 0
			} else {
				wake = earliest(wake, atMin[t].Add(to+time.Nanosecond))
			}
		}
		if to := p.fairTimeout; to > 0 && !hasHalf {
			if now.Sub(atHalf[t]) > to {
				n = max(n, int(min(ps.fairShr, ps.demand))-ps.running)
			} else {
				wake = earliest(wake, atHalf[t].Add(to+time.Nanosecond))
			}
		}
		want += max(n, 0)
	}
	if want > 0 && now.Sub(p.lastCheck) < p.interval {
		wake = earliest(wake, p.lastCheck.Add(p.interval))
	}
	p.wake[t] = wake
	if want == 0 || now.Sub(p.lastCheck) < p.interval {
		return nil
	}
	p.lastCheck = now
	// The running attempts of the pools over their fair share, youngest
	// first; a pool gives up tasks only down to its fair share.
	poolOf := map[string]int{}
	left := make([]int, len(pools))
	for i, ps := range pools {
		left[i] = ps.running
	}
	for _, c := range cands {
		poolOf[c.job.id] = c.pool
	}
	type victim struct {
		key   attemptKey
		start time.Time
	}
	var vs []victim
	for k, start := range p.running {
		pi, ok := poolOf[k.job]
		if ok && k.typ == t && float64(pools[pi].running) > pools[pi].fairShr {
			vs = append(vs, victim{k, start})
		}
	}
	sort.Slice(vs, func(i, j int) bool {
		if !vs[i].start.Equal(vs[j].start) {
			return vs[i].start.After(vs[j].start)
		}
		a, b := vs[i].key, vs[j].key
		if a.job != b.job {
			return a.job > b.job
		}
		if a.task != b.task {
			return a.task > b.task
		}
		return a.attempt > b.attempt
	})
	count := map[string]int{}
	var order []string
	for _, v := range vs {
		if want == 0 {
			break
		}
		pi := poolOf[v.key.job]
		if float64(left[pi]) <= pools[pi].fairShr {
			continue
		}
		left[pi]--
		want--
		if count[v.key.job] == 0 {
			order = append(order, v.key.job)
		}
		count[v.key.job]++
	}
	reason := ReclaimFairShare
	if belowMin {
		reason = ReclaimFairMinShare
	}
	var out []Preemption
	for _, id := range order {
		out = append(out, Preemption{JobID: id, Type: t, Count: count[id], Reason: reason})
		p.killed[t] += count[id]
	}
	return out
}

// minShareTimeout is a pool's min-share preemption timeout: its own, or
// the default.
func (f *Fair) minShareTimeout(pool string) time.Duration {
	if pl, ok := f.pools[pool]; ok && pl.MinShareTimeout > 0 {
		return pl.MinShareTimeout
	}
	return f.preemption.minTimeout
}

// earliest is the earlier of a and b, a zero time counting as none.
func earliest(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}

// NextWake is when a starved pool's timeout expires, or when the
// preemption interval lets through a preemption the last offer wanted
// (partitions.Waker); the zero time when preemption is off or nothing is
// pending. It is as of the last offer: a pool's starvation is measured
// at offers.
func (f *Fair) NextWake(now time.Time) time.Time {
	if !f.preemption.on {
		return time.Time{}
	}
	var w time.Time
	for _, t := range f.preemption.wake {
		if t.After(now) {
			w = earliest(w, t)
		}
	}
	return w
}
