package jobtracker

import (
	"fmt"
	"testing"
	"time"

	"gomr/mrpb"
)

func TestHeartbeatInterval(t *testing.T) {
	const ms = time.Millisecond
	tests := []struct {
		trackers, perSecond int
		scaling             float64
		minimum, expiry     time.Duration
		want                time.Duration
	}{
		// Hadoop's defaults (100 a second) with a 300 ms minimum.
		{0, 100, 1, 300 * ms, 10 * time.Minute, 300 * ms},
		{2, 100, 1, 300 * ms, 10 * time.Minute, 300 * ms},
		{30, 100, 1, 300 * ms, 10 * time.Minute, 300 * ms},
		{31, 100, 1, 300 * ms, 10 * time.Minute, 310 * ms},
		{100, 100, 1, 300 * ms, 10 * time.Minute, time.Second},
		{1000, 100, 1, 300 * ms, 10 * time.Minute, 10 * time.Second},
		{3000, 100, 1, 300 * ms, 10 * time.Minute, 30 * time.Second},
		{4000, 100, 1, 3 * time.Second, 10 * time.Minute, 40 * time.Second}, // Hadoop 1's 4,000-node clusters
		{10000, 100, 1, 300 * ms, 10 * time.Minute, 100 * time.Second},
		// A 3 s minimum holds until 300 trackers.
		{200, 100, 1, 3 * time.Second, 10 * time.Minute, 3 * time.Second},
		{301, 100, 1, 3 * time.Second, 10 * time.Minute, 3010 * ms},
		// The rate and the scaling factor.
		{10000, 1000, 1, 300 * ms, 10 * time.Minute, 10 * time.Second},
		{10000, 3333, 1, 3 * time.Second, 10 * time.Minute, 3 * time.Second},
		{10000, 3000, 1, 300 * ms, 10 * time.Minute, 3333 * ms},
		{1000, 100, 0.5, 300 * ms, 10 * time.Minute, 5 * time.Second},
		{1000, 100, 2, 300 * ms, 10 * time.Minute, 20 * time.Second},
		// Capped at a third of the expiry, but never under the minimum.
		{100000, 100, 1, 300 * ms, 10 * time.Minute, 200 * time.Second},
		{100000, 100, 1, 300 * ms, 600 * ms, 300 * ms},
		{100000, 100, 1, 300 * ms, 0, 1000 * time.Second},
	}
	for _, tc := range tests {
		name := fmt.Sprintf("%d trackers, %d/s, x%g, min %v, expiry %v", tc.trackers, tc.perSecond, tc.scaling, tc.minimum, tc.expiry)
		if got := HeartbeatInterval(tc.trackers, tc.perSecond, tc.scaling, tc.minimum, tc.expiry); got != tc.want {
			t.Errorf("%s: %v, want %v", name, got, tc.want)
		}
	}
}

// TestHeartbeatReplyInterval: the interval a reply carries grows with the
// trackers registered (3 a second, 300 ms minimum: 1 s from the fourth on).
func TestHeartbeatReplyInterval(t *testing.T) {
	jt, _ := newTestJTWith(t, t.TempDir(), 0, nil, map[string]string{KeyHeartbeatsInSecond: "3", "mapreduce.tasktracker.heartbeat.interval": "300"})
	want := []int32{300, 333, 667, 1000, 1333}
	for i, w := range want {
		resp := rawHeartbeat(t, jt, &mrpb.HeartbeatRequest{Tracker: fmt.Sprint("t", i), InitialContact: true, FreeMapSlots: 2})
		if resp.HeartbeatIntervalMs != w {
			t.Errorf("reply to tracker %d's registration: interval %d ms, want %d", i+1, resp.HeartbeatIntervalMs, w)
		}
	}
}
