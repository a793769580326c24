package jobtracker

import (
	"fmt"
	"time"

	"gomr/sched"
)

// The host side of preemption by checkpoint for the policy driver: the
// trackerHost methods that package sched's optional interfaces
// sched.Checkpointer and sched.Describer name, and the resume rule.
//
// Placeholders: package preempt (preempt.Candidate, preempt.Model,
// preempt.Where, preempt.Resume) is being written beside this; until it is
// on main, preemptCandidate, resumeModel, resumeWhere and its Where values
// below stand in for them with the same fields and rule, so that the merge
// is a type swap (preemptCandidate -> preempt.Candidate, resumeWhere ->
// preempt.Resume).

// preemptCandidate is what the planner needs to know of a running attempt
// it may preempt (stands in for preempt.Candidate).
type preemptCandidate struct {
	// Node is the attempt's tracker.
	Node string
	// RSSBytes is the resident set of its process tree (the size of a
	// full image).
	RSSBytes int64
	// Progressed is the run time of the task's work the attempt holds (what
	// a kill loses); Remaining its expected time to finish (0: unknown).
	Progressed, Remaining time.Duration
	// HasImage: the task has a checkpoint image already.
	HasImage bool
	// CanCheckpoint: the attempt's tracker has CRIU and the attempt can
	// reach a quiet point now.
	CanCheckpoint bool
	// Duplicate: another attempt of the task runs (a kill loses no
	// unique work).
	Duplicate bool
}

// resumeModel is the cost model of a restore (stands in for
// preempt.Model): read bandwidth of the image store and network bandwidth
// between trackers, in bytes per second.
type resumeModel struct {
	BwRead, BwNet float64
}

// defaultResumeModel is spec §1.6's SSD prior (117 MiB/s) for reading
// images, and a gigabit network.
var defaultResumeModel = resumeModel{BwRead: 117 << 20, BwNet: 125e6}

// resumeWhereKind is where a preempted task resumes (stands in for
// preempt.Where).
type resumeWhereKind uint8

const (
	resumeRestart resumeWhereKind = iota // no image: run from scratch
	resumeLocal                          // restore on the image's tracker
	resumeRemote                         // fetch the image and restore elsewhere
)

// resumeWhere is seed 002's Alg. 2 (stands in for preempt.Resume): with no
// image the task restarts; otherwise it resumes locally iff
// size/bwRead + qLocal <= size/bwNet + size/bwRead + qRemote (a tie is
// local), qLocal and qRemote being the waits for the C/R queue (and, on
// the image's tracker, for a slot).
func resumeWhere(imageBytes int64, hasImage bool, m resumeModel, qLocal, qRemote time.Duration) resumeWhereKind {
	if !hasImage {
		return resumeRestart
	}
	secs := func(bytes int64, bps float64) time.Duration {
		if bps <= 0 {
			return 0
		}
		return time.Duration(float64(bytes) / bps * float64(time.Second))
	}
	read := secs(imageBytes, m.BwRead)
	if read+qLocal <= secs(imageBytes, m.BwNet)+read+qRemote {
		return resumeLocal
	}
	return resumeRemote
}

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
	return h.jt.checkpointAttemptLocked(a, incremental, false)
}

// Describe tells the planner what it needs of a live attempt.
func (h *trackerHost) Describe(k sched.Attempt) preemptCandidate {
	jt := h.jt
	a := jt.attemptOfLocked(k)
	if a == nil {
		return preemptCandidate{}
	}
	c := preemptCandidate{
		Node:      a.tracker,
		RSSBytes:  a.rssBytes,
		HasImage:  a.task.image != nil,
		Duplicate: len(a.task.running()) > 1,
	}
	if a.live() {
		c.Progressed = max(h.now.Sub(a.start)-a.cloneCost, 0)
		if a.ckpt != nil && a.ckpt.from != nil {
			c.Progressed += a.ckpt.from.useful
		}
		// The speculator's smoothed progress rate (per second).
		if a.rate > 0 && a.progress < 1 {
			c.Remaining = time.Duration((1 - float64(a.progress)) / a.rate * float64(time.Second))
		}
	}
	if t := jt.trackers[a.tracker]; t != nil {
		c.CanCheckpoint = t.criu && a.cloneable && a.state == attemptRunning
	}
	return c
}
