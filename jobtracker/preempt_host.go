package jobtracker

import (
	"fmt"
	"time"

	"gomr/preempt"
	"gomr/sched"
)

// The host side of preemption by checkpoint for the policy driver: the
// trackerHost methods of package sched's optional interfaces
// sched.Checkpointer and sched.Describer.

// Checkpoint orders a live attempt the driver chose as a victim
// checkpointed (incremental: against a same-process parent image when its
// tracker has one). The order goes out in the tracker's next heartbeat
// reply; the slot is freed, and the attempt's end told to the driver, when
// the tracker reports the outcome (CHECKPOINTED, or KILLED when the dump
// failed).
func (h *trackerHost) Checkpoint(k sched.Attempt, incremental bool) error {
	a := h.jt.attemptOfLocked(k)
	if a == nil || !a.live() {
		return fmt.Errorf("attempt %s is not running", k)
	}
	// The driver has recorded the victim with its request's reason
	// (Planner.Begin) before it asks for the checkpoint.
	reason, _ := h.jt.driver.Planner().Reason(k.String())
	return h.jt.checkpointAttemptLocked(a, incremental, false, reason)
}

// Describe tells the planner what it needs of a live attempt. HasImage
// stays false: a preemption dump ends its process, so no attempt ever has
// a same-process parent image to dump incrementally against (spec §5.8).
// Progressed is the attempt's own run time (less its restore): a restored
// attempt that is killed resumes from the image it was restored from,
// which its task keeps, so a kill loses only the work since that image.
func (h *trackerHost) Describe(k sched.Attempt) preempt.Candidate {
	jt := h.jt
	a := jt.attemptOfLocked(k)
	if a == nil {
		return preempt.Candidate{Remaining: -1}
	}
	c := preempt.Candidate{
		Node:      a.tracker,
		RSSBytes:  a.rssBytes,
		Remaining: -1,
		Duplicate: len(a.task.running()) > 1,
	}
	if a.live() {
		c.Progressed = max(h.now.Sub(a.start)-a.cloneCost, 0)
		// The speculator's smoothed progress rate (per second).
		if a.rate > 0 && a.progress < 1 {
			c.Remaining = time.Duration((1 - float64(a.progress)) / a.rate * float64(time.Second))
		}
	}
	if t := jt.trackers[a.tracker]; t != nil {
		c.CanCheckpoint = t.criu && a.cloneable && a.state == attemptRunning
	}
	c.Splittable = jt.splittableLocked(a)
	return c
}

// The policy driver finds these by type assertion: a change of signature
// must not silently turn checkpoint preemption into kills.
var (
	_ sched.Describer    = (*trackerHost)(nil)
	_ sched.Checkpointer = (*trackerHost)(nil)
)
