package jobtracker

import (
	"context"
	"testing"
	"time"

	"gomr/mrpb"
)

// TestMapEventPollsBatched: while a job's maps run, a poll that finds a
// few new events waits for more, up to the job's window (its reduces over
// mapreduce.jobtracker.mapevents.polls.in.second), and then answers with
// every event that came meanwhile; with the key at 0, or once every map
// has finished, a poll answers at once, and a poll sleeping through its
// window wakes when the last map finishes.
func TestMapEventPollsBatched(t *testing.T) {
	tests := []struct {
		name         string
		polls        string
		maps         int
		finishAll    bool // the map finishes before the poll
		finishDuring bool // the second spill is the last map's final one
		wantEvents   int
		atLeast      time.Duration
		under        time.Duration
	}{
		// One reduce at 4 polls a second: a window of 250 ms, in which a
		// second spill comes.
		{"batched while maps run", "4", 3, false, false, 2, 240 * time.Millisecond, 900 * time.Millisecond},
		{"at once with the key at 0", "0", 3, false, false, 1, 0, 150 * time.Millisecond},
		{"at once when every map has finished", "4", 1, true, false, 1, 0, 150 * time.Millisecond},
		// A window of 1 s, cut short when the only map finishes at 100 ms.
		{"woken when the last map finishes", "1", 1, false, true, 2, 90 * time.Millisecond, 600 * time.Millisecond},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			jt, id := newTestJTWith(t, t.TempDir(), tc.maps, nil, map[string]string{KeyMapEventPollsInSecond: tc.polls})
			a := launches(heartbeat(t, jt, &mrpb.HeartbeatRequest{InitialContact: true, FreeMapSlots: 1}))[0].AttemptId
			// announce announces spill k of the map attempt, its final one
			// with the attempt succeeded.
			announce := func(k int32, final bool) {
				state := StateRunning
				if final {
					state = StateSucceeded
				}
				heartbeat(t, jt, &mrpb.HeartbeatRequest{
					Spills:   []*mrpb.SpillAnnouncement{{AttemptId: a, Spill: k, Final: final, Segments: []*mrpb.Segment{{Length: 10, RawLength: 20, Records: 1, Crc: 7}}}},
					Attempts: []*mrpb.AttemptStatus{{AttemptId: a, State: state}},
				})
			}
			announce(0, tc.finishAll)
			type reply struct {
				evs  int
				took time.Duration
				err  error
			}
			done := make(chan reply, 1)
			start := time.Now()
			go func() {
				resp, err := jt.GetMapEvents(context.Background(), &mrpb.MapEventsRequest{JobId: id, Reduce: 0, WaitMs: 1000})
				r := reply{took: time.Since(start), err: err}
				if resp != nil {
					r.evs = len(resp.Events)
				}
				done <- r
			}()
			if !tc.finishAll {
				time.Sleep(100 * time.Millisecond)
				announce(1, tc.finishDuring)
			}
			r := <-done
			if r.err != nil {
				t.Fatal(r.err)
			}
			if r.evs != tc.wantEvents || r.took < tc.atLeast || r.took >= tc.under {
				t.Errorf("%d events after %v, want %d after at least %v and under %v", r.evs, r.took, tc.wantEvents, tc.atLeast, tc.under)
			}
		})
	}
}

// TestMapEventsWindow: the window is the job's reduces over the polls a
// second, at most the poll's wait, and 0 with the key at 0.
func TestMapEventsWindow(t *testing.T) {
	for _, tc := range []struct {
		reduces, polls int
		wait, want     time.Duration
	}{
		{1000, 1000, time.Second, time.Second},
		{10, 1000, time.Second, 10 * time.Millisecond},
		{5000, 1000, time.Second, time.Second},
		{250, 1000, 100 * time.Millisecond, 100 * time.Millisecond},
		{100, 0, time.Second, 0},
		{0, 1000, time.Second, 0},
	} {
		if got := mapEventsWindow(tc.reduces, tc.polls, tc.wait); got != tc.want {
			t.Errorf("mapEventsWindow(%d reduces, %d polls, wait %v) = %v, want %v", tc.reduces, tc.polls, tc.wait, got, tc.want)
		}
	}
}
