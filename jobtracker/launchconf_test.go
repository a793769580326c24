package jobtracker

import (
	"maps"
	"testing"

	"gomr/conf"
	"gomr/mrpb"
)

// TestLaunchConfFollowsTrackerDefaults: a tracker that registers with the
// JobTracker's defaults digest gets launches carrying only the keys that
// differ from the defaults; one with another digest (another build), or
// none, gets every key. Both rebuild the job's configuration exactly.
func TestLaunchConfFollowsTrackerDefaults(t *testing.T) {
	jt, _ := newTestJT(t, 6)
	want := conf.Default().Map()
	for _, tc := range []struct {
		tracker, digest string
		full            bool
	}{
		{"same", conf.DefaultsDigest(), false},
		{"other", "0123456789abcdef0123456789abcdef", true},
		{"silent", "", true},
	} {
		t.Run(tc.tracker, func(t *testing.T) {
			// rawHeartbeat: the test helper would fill in the digest.
			rawHeartbeat(t, jt, &mrpb.HeartbeatRequest{Tracker: tc.tracker, InitialContact: true, Instance: tc.tracker, ConfDefaultsDigest: tc.digest})
			ls := launches(heartbeat(t, jt, &mrpb.HeartbeatRequest{Tracker: tc.tracker, FreeMapSlots: 1}))
			if len(ls) != 1 {
				t.Fatalf("%d launches, want 1", len(ls))
			}
			got := ls[0].Conf
			if tc.full {
				if len(got) != len(want) {
					t.Errorf("launch carries %d keys, want all %d", len(got), len(want))
				}
			} else {
				if len(got) == 0 || len(got) >= len(want)/2 {
					t.Errorf("launch carries %d of %d keys, want only the non-default ones", len(got), len(want))
				}
				for k, v := range got {
					if want[k] == v {
						t.Errorf("launch carries %s=%s, its default", k, v)
					}
				}
			}
			c, err := conf.FromMap(got)
			if err != nil {
				t.Fatal(err)
			}
			jt.mu.Lock()
			j := jt.jobs[ls[0].JobId]
			jt.unlock()
			if !maps.Equal(c.Map(), j.conf.Map()) {
				t.Errorf("the tracker rebuilds another configuration than the job's")
			}
		})
	}
}
