// Package preempt is the reclaim planner: given the running attempts a
// scheduling policy wants slots back from, it chooses the victims and, for
// each, a mechanism (wait, split, checkpoint, incremental checkpoint or
// kill) by the cost model of the checkpoint-based preemption thesis (seed
// 002, Alg. 1 and 2) and Amoeba's safe-point split (seed 004), as
// shared/spec/preemption-elasticity.md §5.4-5.5 design it.
//
// It is pure code, as the policies are: no I/O, no clock (the time is an
// argument), no goroutines; the policy driver (package sched) runs it for
// the JobTracker and the simulator alike.
package preempt

import (
	"fmt"
	"math"
	"time"
)

// MiB is 2^20 bytes.
const MiB = 1 << 20

// Mechanism is how a victim gives its slot back.
type Mechanism uint8

// Mechanisms, in the spec's order (§5.5): on a tie of penalties the later
// one wins, so that a tie between checkpoint and kill is a kill (Alg. 1).
const (
	// MechWait: the task finishes soon anyway (natural vacancy).
	MechWait Mechanism = iota
	// MechSplit: Amoeba; the task stops at a safe point, commits what it
	// did and the rest becomes a new task.
	MechSplit
	// MechCkpt: a full CRIU dump; the task resumes later from it.
	MechCkpt
	// MechCkptInc: a CRIU dump against the task's earlier image of the
	// same process (only the pages written since).
	MechCkptInc
	// MechKill: the attempt is killed and its task runs again from the
	// start.
	MechKill
	numMechanisms
)

// NumMechanisms is the number of mechanisms, for arrays indexed by them.
const NumMechanisms = int(numMechanisms)

var mechNames = [...]string{"wait", "split", "checkpoint", "checkpoint-incremental", "kill"}

// String returns the mechanism's name: "wait", "split", "checkpoint",
// "checkpoint-incremental" or "kill".
func (m Mechanism) String() string {
	if int(m) < len(mechNames) {
		return mechNames[m]
	}
	return fmt.Sprintf("mechanism(%d)", m)
}

// Releases tells whether the mechanism gives the slot back only later
// (the host reports the attempt's end when it has): everything but a kill.
func (m Mechanism) Releases() bool { return m != MechKill }

// Candidate is what the planner knows of one running attempt that may be
// preempted.
type Candidate struct {
	// Node is the tracker the attempt runs on.
	Node string
	// RSSBytes is the resident memory of the attempt's process tree
	// (0: unknown).
	RSSBytes int64
	// DirtyBytes is what an incremental dump would write (0: unknown, then
	// RSSBytes).
	DirtyBytes int64
	// Progressed is the useful run time since launch or since the last
	// image: what a kill loses.
	Progressed time.Duration
	// Remaining is the estimated time to finish; < 0 unknown.
	Remaining time.Duration
	// HasImage: an image of the same process exists, so an incremental
	// dump is possible.
	HasImage bool
	// Splittable: the job allows a split at a safe point and the host can
	// split it.
	Splittable bool
	// CanCheckpoint: the host can checkpoint it (CRIU works on its
	// tracker).
	CanCheckpoint bool
	// Duplicate: another live attempt of the same task exists, so this
	// one is the cheapest victim.
	Duplicate bool
}

// dumpBytes is what a dump of the candidate writes, and the mechanism
// that writes it: incremental when it has an image.
func (c Candidate) dumpBytes() (int64, Mechanism) {
	if c.HasImage {
		if c.DirtyBytes > 0 {
			return c.DirtyBytes, MechCkptInc
		}
		return c.RSSBytes, MechCkptInc
	}
	return c.RSSBytes, MechCkpt
}

// Model is a node's checkpoint medium: how fast images are written, read
// and sent to another node, in bytes per second. Dump and restore times
// grow linearly with the image, with no fixed cost (spec §1.6: the
// two-point fit of [002 Table 7] gives c0 ≈ 0).
type Model struct {
	BWWrite, BWRead, BWNet float64
}

func byteTime(bytes int64, bps float64) time.Duration {
	if bytes <= 0 {
		return 0
	}
	if bps <= 0 || math.IsInf(bps, 0) || math.IsNaN(bps) {
		return time.Duration(math.MaxInt64)
	}
	s := float64(bytes) / bps
	if s >= float64(math.MaxInt64)/float64(time.Second) {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(math.Round(s * float64(time.Second)))
}

// Dump is the time to write an image of bytes: bytes / BWWrite.
func (m Model) Dump(bytes int64) time.Duration { return byteTime(bytes, m.BWWrite) }

// Restore is the time to read an image of bytes back: bytes / BWRead.
func (m Model) Restore(bytes int64) time.Duration { return byteTime(bytes, m.BWRead) }

// Transfer is the time to send an image of bytes to another node:
// bytes / BWNet.
func (m Model) Transfer(bytes int64) time.Duration { return byteTime(bytes, m.BWNet) }

// Media are the default bandwidths of the spec's media (§1.6, fitted to
// [002 Table 7]), in MiB/s, by the names preemption.medium accepts.
var Media = map[string]float64{"hdd": 30, "ssd": 117, "nvm": 1750}

// Overhead is Alg. 1's checkpoint overhead of a candidate: the dump (of
// the dirty bytes when it has an image), the restore of the whole image,
// and the wait in its node's checkpoint queue.
func Overhead(c Candidate, m Model, queue time.Duration) time.Duration {
	b, _ := c.dumpBytes()
	return sat(sat(m.Dump(b), m.Restore(c.RSSBytes)), queue)
}

// sat adds durations, saturating at the largest one.
func sat(a, b time.Duration) time.Duration {
	if s := a + b; s >= a && s >= b {
		return s
	}
	return time.Duration(math.MaxInt64)
}

// Adaptive is [002] Alg. 1 for one candidate: checkpoint it (incremental
// when it already has an image) iff its progress strictly exceeds the
// checkpoint overhead (dump + restore + queue wait); otherwise, a tie
// included, kill it. A candidate the host cannot checkpoint is killed.
func Adaptive(c Candidate, m Model, queue time.Duration) Mechanism {
	if !c.CanCheckpoint || c.Progressed <= Overhead(c, m, queue) {
		return MechKill
	}
	_, mech := c.dumpBytes()
	return mech
}

// Where is where a checkpointed task resumes.
type Where uint8

// Resume places.
const (
	// Restart: no image; the task runs again from the start.
	Restart Where = iota
	// Local: restore on the node that holds the image.
	Local
	// Remote: send the image to another node and restore there.
	Remote
)

// String returns "restart", "local" or "remote".
func (w Where) String() string {
	switch w {
	case Restart:
		return "restart"
	case Local:
		return "local"
	case Remote:
		return "remote"
	}
	return fmt.Sprintf("where(%d)", w)
}

// Resume is [002] Alg. 2: a task with no image restarts; one with an image
// resumes locally iff size/bwRead + qLocal <= size/bwNet + size/bwRead +
// qRemote (a tie is local), remotely otherwise.
func Resume(imageBytes int64, hasImage bool, m Model, qLocal, qRemote time.Duration) Where {
	if !hasImage {
		return Restart
	}
	local := sat(m.Restore(imageBytes), qLocal)
	remote := sat(sat(m.Transfer(imageBytes), m.Restore(imageBytes)), qRemote)
	if local <= remote {
		return Local
	}
	return Remote
}
