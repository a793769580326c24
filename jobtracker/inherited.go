package jobtracker

import (
	"fmt"
	"time"

	"gomr/partitions"
)

// A map attempt made by cloning a running attempt (speculation) or by
// restoring a checkpoint image (preemption) carries on from another
// attempt's process: the spills that attempt announced before the dump are
// served from its tracker, and the new attempt announces only the spills
// after them. Its task's output is then spread over two attempts, and losing
// the first one's output (its tracker lost, or too many fetch failures)
// leaves spills that nobody serves and nobody will write again: reducers
// would wait for them for ever. The functions here find such holes and run
// the map again (split maps keep their own lineage: split.go).

// spillHoleLocked returns the first spill of map m among 0..last that no
// attempt serves now, or -1.
func (j *job) spillHoleLocked(m *task, last int) int {
	for k := 0; k <= last; k++ {
		if w := j.winners[spillKey{m.index, k}]; w == nil || w.obsolete {
			return k
		}
	}
	return -1
}

// firstOwnSpill is the lowest spill index attempt a announced itself, or -1
// when it announced none.
func (a *attempt) firstOwnSpill() int {
	first := -1
	for k := range a.spills {
		if first < 0 || k < first {
			first = k
		}
	}
	return first
}

// inherits tells whether attempt a started from another attempt's process
// (a clone or a restore), so that it does not write the spills announced
// before it started.
func (a *attempt) inherits() bool {
	return a.startProgress > 0 || (a.ckpt != nil && a.ckpt.from != nil)
}

// inheritedOutputLostLocked runs after map m's output was withdrawn from
// one of its attempts. A succeeded map whose spills now have a hole runs
// again; a running attempt that carried on from the lost spills (it
// announced later ones, not those) is killed, as it can never write them.
// An inherited attempt that has announced nothing yet is left running: if
// it succeeds over a hole, inheritedSuccessLocked runs the map again.
func (jt *JobTracker) inheritedOutputLostLocked(m *task, now time.Time) {
	j := m.job
	if m.typ != partitions.Map || len(j.reduces) == 0 || j.finishedReduces >= len(j.reduces) {
		return
	}
	if m.state == taskSucceeded {
		s := m.successful
		if s == nil || s.unconfirmed || s.final < 0 || (s.split != nil && s.split.from.spill > 0) {
			return
		}
		if hole := j.spillHoleLocked(m, s.final); hole >= 0 {
			jt.log.Warn("a map's output lost a spill that its successful attempt took over from another attempt: the map runs again",
				"task", m.id(), "attempt", s.id, "spill", hole)
			jt.taskImageDoneLocked(m, "the spills before it were lost")
			jt.rerunMapLocked(m, now)
		}
		return
	}
	for _, a := range m.running() {
		if !a.inherits() || (a.split != nil && a.split.from.spill > 0) {
			continue
		}
		first := a.firstOwnSpill()
		if first <= 0 {
			continue
		}
		if hole := j.spillHoleLocked(m, first-1); hole >= 0 {
			jt.taskImageDoneLocked(m, "the spills before it were lost")
			jt.killAttemptLocked(a, fmt.Sprintf("spill %d of map %s, written before this attempt took over, was lost: the map runs again", hole, m.id()))
		}
	}
}

// inheritedSuccessLocked checks the output of a map that just succeeded by
// an attempt that carried on from another's process: when a spill it did
// not write itself is no longer served (its first attempt's output was lost
// while it ran), the map runs again.
func (jt *JobTracker) inheritedSuccessLocked(a *attempt, now time.Time) {
	m := a.task
	if !a.inherits() || m.successful != a {
		return
	}
	jt.inheritedOutputLostLocked(m, now)
}
