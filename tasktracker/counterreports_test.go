package tasktracker

import (
	"testing"
	"time"

	"gomr/mrpb"
)

// TestCounterReports: which heartbeats carry the counters of running
// attempts. Each step builds a heartbeat at a time (seconds after t0),
// which is answered or lost.
func TestCounterReports(t *testing.T) {
	type step struct {
		at       float64 // seconds after t0
		answered bool
		reset    bool // the tracker registers afresh before this heartbeat
		want     bool
	}
	for _, tc := range []struct {
		name     string
		interval time.Duration
		steps    []step
	}{
		{"every heartbeat at 0", 0, []step{{0, true, false, true}, {3, true, false, true}, {6, true, false, true}}},
		{"first, then each interval", time.Minute, []step{
			{0, true, false, true}, {3, true, false, false}, {59, true, false, false},
			{60, true, false, true}, {63, true, false, false}, {120, true, false, true}}},
		{"a lost reply: the next carries them", time.Minute, []step{
			{0, false, false, true}, {3, true, false, true}, {6, true, false, false},
			{63, false, false, true}, {66, true, false, true}, {69, true, false, false}}},
		{"registering afresh", time.Minute, []step{
			{0, true, false, true}, {3, true, false, false}, {6, true, true, true}, {9, true, false, false}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewCounterReports(tc.interval)
			t0 := time.Unix(1_700_000_000, 0)
			for i, s := range tc.steps {
				if s.reset {
					c.Reset()
				}
				now := t0.Add(time.Duration(s.at * float64(time.Second)))
				got := c.Due(now)
				if got != s.want {
					t.Fatalf("step %d (%gs): Due %t, want %t", i, s.at, got, s.want)
				}
				if got && s.answered {
					c.Delivered(now)
				}
			}
		})
	}
	var nilReports *CounterReports
	if !nilReports.Due(time.Now()) {
		t.Error("a nil CounterReports must send the counters with every heartbeat")
	}
	nilReports.Delivered(time.Now())
	nilReports.Reset()
}

// TestHeartbeatCarriesRunningCountersAtTheInterval: a TaskTracker's
// heartbeats carry a running attempt's counters in the first heartbeat,
// then only once the interval has passed since the last answered one;
// an attempt that ended always carries its own; a heartbeat whose reply
// was lost is followed by one that carries them all.
func TestHeartbeatCarriesRunningCountersAtTheInterval(t *testing.T) {
	tt := &TaskTracker{name: testTrackerName, mapSlots: 4, reduceSlots: 4, attempts: map[string]*taskAttempt{}, cr: newCRQueue(1),
		counterReports: NewCounterReports(time.Hour)}
	counters := []*mrpb.Counter{{Group: "g", Name: "n", Value: 7}}
	running := &taskAttempt{tt: tt, launch: &mrpb.LaunchTask{AttemptId: "attempt_x_0001_m_000000_0", Type: "m"}, state: "RUNNING",
		counters: counters, exited: make(chan struct{})}
	tt.attempts[running.launch.AttemptId] = running
	carried := func(req *mrpb.HeartbeatRequest) map[string]bool {
		out := map[string]bool{}
		for _, st := range req.Attempts {
			out[st.AttemptId] = len(st.Counters) > 0
		}
		return out
	}

	req, sent := tt.buildHeartbeat(registration{initial: true})
	if got := carried(req); !got[running.launch.AttemptId] {
		t.Fatalf("initial heartbeat: counters carried %v, want the running attempt's", got)
	}
	tt.heartbeatDone(sent)
	req, sent = tt.buildHeartbeat(registration{})
	if got := carried(req); got[running.launch.AttemptId] {
		t.Fatalf("the next heartbeat within the interval: counters carried %v, want none", got)
	}
	tt.heartbeatDone(sent)

	ended := &taskAttempt{tt: tt, launch: &mrpb.LaunchTask{AttemptId: "attempt_x_0001_m_000001_0", Type: "m"}, state: "SUCCEEDED",
		counters: counters, exited: make(chan struct{})}
	tt.attempts[ended.launch.AttemptId] = ended
	req, sent = tt.buildHeartbeat(registration{})
	if got := carried(req); got[running.launch.AttemptId] || !got[ended.launch.AttemptId] {
		t.Fatalf("with an attempt that ended: counters carried %v, want the ended attempt's only", got)
	}
	tt.heartbeatDone(sent)

	// The reply to a heartbeat with the counters is lost: the next one
	// carries them again.
	tt.counterReports.Reset()
	req, sent = tt.buildHeartbeat(registration{})
	if got := carried(req); !got[running.launch.AttemptId] {
		t.Fatalf("after registering afresh: counters carried %v, want the running attempt's", got)
	}
	tt.requeue(sent) // lost
	req, sent = tt.buildHeartbeat(registration{})
	if got := carried(req); !got[running.launch.AttemptId] {
		t.Fatalf("after a lost reply: counters carried %v, want the running attempt's", got)
	}
	tt.heartbeatDone(sent)
	req, _ = tt.buildHeartbeat(registration{})
	if got := carried(req); got[running.launch.AttemptId] {
		t.Fatalf("once answered: counters carried %v, want none", got)
	}
}
