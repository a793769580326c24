package tasktracker

import (
	"fmt"
	"time"
)

// KeyHeartbeatPacing names from when a TaskTracker counts the interval to
// its next heartbeat: "send" (PaceFromSend, the default) or "reply"
// (PaceFromReply).
const KeyHeartbeatPacing = "mapreduce.tasktracker.heartbeat.pacing"

// HeartbeatPacing says from when a TaskTracker counts the interval to its
// next heartbeat (mapreduce.tasktracker.heartbeat.pacing).
//
// Hadoop 1's TaskTracker counts it from when the reply arrived. A tracker
// whose reply was late then sends every later heartbeat as late, so a
// stall of the JobTracker (a collection, a burst of work) moves every
// tracker that waited on it to just after the stall, for good: the
// heartbeats that were spread over the interval arrive as a wave once an
// interval, which the JobTracker answers one after the other, with a
// quiet gap before it. Counted from the send, a tracker keeps its place in
// the interval whatever its replies' latency, so a stall delays the
// replies it overlaps and leaves no trace in the next round
// (docs/scaling.md, "heartbeats counted from their send").
type HeartbeatPacing int

const (
	// PaceFromSend counts the interval from when the heartbeat was sent,
	// and waits at least half an interval after the reply: a JobTracker
	// slower than half an interval sees each tracker's heartbeats spaced
	// by its latency plus half an interval, so it still sheds load as it
	// slows, by less than with PaceFromReply.
	PaceFromSend HeartbeatPacing = iota
	// PaceFromReply counts the interval from when the reply arrived, as
	// Hadoop 1's TaskTracker does.
	PaceFromReply
)

// heartbeatPacingNames are the values of
// mapreduce.tasktracker.heartbeat.pacing, by HeartbeatPacing.
var heartbeatPacingNames = [...]string{PaceFromSend: "send", PaceFromReply: "reply"}

// ParseHeartbeatPacing reads a value of
// mapreduce.tasktracker.heartbeat.pacing.
func ParseHeartbeatPacing(s string) (HeartbeatPacing, error) {
	for p, name := range heartbeatPacingNames {
		if s == name {
			return HeartbeatPacing(p), nil
		}
	}
	return 0, fmt.Errorf("heartbeat pacing %q: want %q or %q", s, heartbeatPacingNames[PaceFromSend], heartbeatPacingNames[PaceFromReply])
}

// String is the pacing's configuration value.
func (p HeartbeatPacing) String() string {
	if p < 0 || int(p) >= len(heartbeatPacingNames) {
		return fmt.Sprintf("HeartbeatPacing(%d)", int(p))
	}
	return heartbeatPacingNames[p]
}

// Wait is how long a tracker whose last heartbeat was sent at sent waits,
// from now (its reply received and acted on), before the next one, for a
// heartbeat interval of interval.
func (p HeartbeatPacing) Wait(interval time.Duration, sent, now time.Time) time.Duration {
	if p == PaceFromReply {
		return interval
	}
	return max(interval-now.Sub(sent), interval/2)
}
