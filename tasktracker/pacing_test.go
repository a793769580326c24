package tasktracker

import (
	"slices"
	"testing"
	"time"

	"gomr/mrpb"
)

// TestHeartbeatPacingWait: from the send, the wait is what is left of
// the interval, but at least half of it; from the reply, the interval.
func TestHeartbeatPacingWait(t *testing.T) {
	sent := time.Date(2026, 11, 27, 6, 0, 0, 0, time.UTC)
	const iv = 3 * time.Second
	for _, c := range []struct {
		pacing  HeartbeatPacing
		latency time.Duration // from the send to now
		want    time.Duration
	}{
		{PaceFromSend, 0, iv},
		{PaceFromSend, 2 * time.Millisecond, iv - 2*time.Millisecond},
		{PaceFromSend, 1 * time.Second, 2 * time.Second},
		{PaceFromSend, 1500 * time.Millisecond, 1500 * time.Millisecond},
		{PaceFromSend, 2 * time.Second, 1500 * time.Millisecond},
		{PaceFromSend, 10 * time.Second, 1500 * time.Millisecond},
		{PaceFromReply, 0, iv},
		{PaceFromReply, 1 * time.Second, iv},
		{PaceFromReply, 10 * time.Second, iv},
	} {
		if got := c.pacing.Wait(iv, sent, sent.Add(c.latency)); got != c.want {
			t.Errorf("%s, reply %v after the send: wait %v, want %v", c.pacing, c.latency, got, c.want)
		}
	}
}

// TestParseHeartbeatPacing: the two values, and an error that names a
// bad one and the good ones.
func TestParseHeartbeatPacing(t *testing.T) {
	for _, c := range []struct {
		in      string
		want    HeartbeatPacing
		wantErr string
	}{
		{"send", PaceFromSend, ""},
		{"reply", PaceFromReply, ""},
		{"Send", 0, `heartbeat pacing "Send": want "send" or "reply"`},
		{"", 0, `heartbeat pacing "": want "send" or "reply"`},
	} {
		got, err := ParseHeartbeatPacing(c.in)
		if c.wantErr != "" {
			if err == nil || err.Error() != c.wantErr {
				t.Errorf("ParseHeartbeatPacing(%q): %v, want the error %q", c.in, err, c.wantErr)
			}
			continue
		}
		if err != nil || got != c.want || got.String() != c.in {
			t.Errorf("ParseHeartbeatPacing(%q) = %v (%q), %v; want %v", c.in, got, got.String(), err, c.want)
		}
	}
}

// TestHeartbeatPacedFromSend: a real TaskTracker whose JobTracker answers
// each heartbeat 450 ms late, at a 600 ms interval. Paced from the send
// (the default) its heartbeats arrive every 750 ms (the latency, then half
// an interval), from the reply every 1,050 ms (the latency, then the
// interval). The bounds leave 150 ms a heartbeat for a loaded machine.
func TestHeartbeatPacedFromSend(t *testing.T) {
	const (
		interval = 600 * time.Millisecond
		delay    = 450 * time.Millisecond
		periods  = 5
	)
	for _, c := range []struct {
		pacing   string
		min, max time.Duration // of the median period
	}{
		{"send", 740 * time.Millisecond, 900 * time.Millisecond},
		{"reply", 1040 * time.Millisecond, 1300 * time.Millisecond},
	} {
		t.Run(c.pacing, func(t *testing.T) {
			t.Parallel()
			tr := startTracker(t, trackerOpts{maps: 1, reduces: 1, intervalMs: int32(interval / time.Millisecond),
				conf: map[string]string{KeyHeartbeatPacing: c.pacing}})
			tr.jt.setReplyDelay(delay)
			// The heartbeat after the next: every reply before it
			// set the interval, and the ones from it were delayed.
			from := tr.jt.next() + 2
			tr.jt.waitBeat(t, from+periods, "the last measured", func(*mrpb.HeartbeatRequest) bool { return true })
			at := tr.jt.arrivals(from)[:periods+1]
			var gaps []time.Duration
			for i := 1; i < len(at); i++ {
				gaps = append(gaps, at[i].Sub(at[i-1]))
			}
			slices.Sort(gaps)
			if med := gaps[len(gaps)/2]; med < c.min || med > c.max {
				t.Errorf("paced from the %s: median period %v between heartbeats (all: %v), want %v to %v",
					c.pacing, med.Round(time.Millisecond), gaps, c.min, c.max)
			}
		})
	}
}
