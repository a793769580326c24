package jobtracker

import (
	"context"
	"testing"

	"gomr/mr"
	"gomr/mrpb"
)

// TestRerunComparedWithWithdrawnSpills: when a map's output is withdrawn
// (its tracker lost) the re-run's spills are published whatever they are,
// and compared with the withdrawn ones that reducers were told of: a
// re-run that cuts other spills is counted once in
// NONDETERMINISTIC_MAP_RERUNS.
func TestRerunComparedWithWithdrawnSpills(t *testing.T) {
	type sp struct {
		k     int32
		final bool
		crc   uint32
	}
	first := []sp{{0, false, 1}, {1, false, 2}, {2, true, 3}}
	tests := []struct {
		name  string
		rerun []sp
		want  int64
	}{
		{"identical", first, 0},
		{"identical, announced so far", first[:2], 0},
		{"a different segment", []sp{{0, false, 1}, {1, false, 9}, {2, true, 3}}, 1},
		{"fewer spills", []sp{{0, false, 1}, {1, true, 2}}, 1},
		{"more spills", []sp{{0, false, 1}, {1, false, 2}, {2, false, 3}, {3, true, 4}}, 1},
		{"several differences, counted once", []sp{{0, false, 7}, {1, true, 8}}, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			jt, id := newTestJT(t, 1)
			ls := launches(heartbeat(t, jt, &mrpb.HeartbeatRequest{Tracker: "t1", InitialContact: true, Instance: "t1", FreeMapSlots: 2}))
			if len(ls) != 1 {
				t.Fatalf("launches %v, want one map", ls)
			}
			a := ls[0].AttemptId
			heartbeat(t, jt, &mrpb.HeartbeatRequest{Tracker: "t2", InitialContact: true, Instance: "t2"})
			var spills []*mrpb.SpillAnnouncement
			for _, s := range first {
				spills = append(spills, &mrpb.SpillAnnouncement{AttemptId: a, Spill: s.k, Final: s.final, Segments: seg(s.crc)})
			}
			heartbeat(t, jt, &mrpb.HeartbeatRequest{Tracker: "t1", Spills: spills,
				Attempts: []*mrpb.AttemptStatus{{AttemptId: a, State: StateSucceeded, Progress: 1}}})
			loseTracker(jt, "t1")
			ls = freshMapLaunches(t, jt, "t2")
			if len(ls) != 1 {
				t.Fatalf("re-run launches %v, want one", ls)
			}
			b := ls[0].AttemptId
			spills = nil
			for _, s := range tc.rerun {
				spills = append(spills, &mrpb.SpillAnnouncement{AttemptId: b, Spill: s.k, Final: s.final, Segments: seg(s.crc)})
			}
			resp := heartbeat(t, jt, &mrpb.HeartbeatRequest{Tracker: "t2", Spills: spills,
				Attempts: []*mrpb.AttemptStatus{{AttemptId: b, State: StateRunning}}})
			if k := kills(resp); len(k) != 0 {
				t.Fatalf("the re-run was killed: %v", k)
			}
			st, err := jt.GetJobStatus(context.Background(), &mrpb.JobStatusRequest{JobId: id})
			if err != nil {
				t.Fatal(err)
			}
			if got := countersFromProto(st.Counters).Get(mr.JobCounterGroup, mr.NondeterministicMapReruns); got != tc.want {
				t.Errorf("%s = %d, want %d", mr.NondeterministicMapReruns, got, tc.want)
			}
			// Reducers are told of the withdrawal and of every spill of
			// the re-run.
			ev, err := jt.GetMapEvents(context.Background(), &mrpb.MapEventsRequest{JobId: id, Reduce: 0})
			if err != nil {
				t.Fatal(err)
			}
			var obsolete, published int
			for _, e := range ev.Events {
				switch {
				case e.Kind == "MAP_OBSOLETE" && e.AttemptId == a:
					obsolete++
				case e.Kind == "SPILL_READY" && e.AttemptId == b:
					published++
				}
			}
			if obsolete != 1 || published != len(tc.rerun) {
				t.Errorf("events: %d MAP_OBSOLETE of %s, %d SPILL_READY of %s; want 1 and %d", obsolete, a, published, b, len(tc.rerun))
			}
		})
	}
}

// TestReduceStoppedByRerunIsExcused: a reduce attempt KILLED because a
// map's re-run contradicts spills it fetched (not_own_fault) does not count
// against the reduce's attempts once for each map re-run the JobTracker saw
// differ; one more such kill counts as a failure.
func TestReduceStoppedByRerunIsExcused(t *testing.T) {
	jt, id := newTestJT(t, 1)
	ls := launches(heartbeat(t, jt, &mrpb.HeartbeatRequest{Tracker: "t1", InitialContact: true, Instance: "t1", FreeMapSlots: 2}))
	a := ls[0].AttemptId
	heartbeat(t, jt, &mrpb.HeartbeatRequest{Tracker: "t2", InitialContact: true, Instance: "t2"})
	heartbeat(t, jt, &mrpb.HeartbeatRequest{Tracker: "t1", Spills: []*mrpb.SpillAnnouncement{
		{AttemptId: a, Spill: 0, Segments: seg(1)}, {AttemptId: a, Spill: 1, Final: true, Segments: seg(2)}},
		Attempts: []*mrpb.AttemptStatus{{AttemptId: a, State: StateSucceeded, Progress: 1}}})
	reduceLaunch := func() string {
		t.Helper()
		for _, l := range launches(heartbeat(t, jt, &mrpb.HeartbeatRequest{Tracker: "t2", FreeReduceSlots: 1})) {
			if l.Type == "r" {
				return l.AttemptId
			}
		}
		t.Fatal("no reduce launched on t2")
		return ""
	}
	counters := func() mr.CounterSet {
		st, err := jt.GetJobStatus(context.Background(), &mrpb.JobStatusRequest{JobId: id})
		if err != nil {
			t.Fatal(err)
		}
		return countersFromProto(st.Counters)
	}
	r0 := reduceLaunch()
	loseTracker(jt, "t1")
	ls = freshMapLaunches(t, jt, "t2")
	if len(ls) != 1 {
		t.Fatalf("re-run launches %v, want one", ls)
	}
	b := ls[0].AttemptId
	// The re-run cuts one spill, with other records, and succeeds.
	heartbeat(t, jt, &mrpb.HeartbeatRequest{Tracker: "t2",
		Spills:   []*mrpb.SpillAnnouncement{{AttemptId: b, Spill: 0, Final: true, Segments: seg(9)}},
		Attempts: []*mrpb.AttemptStatus{{AttemptId: b, State: StateSucceeded, Progress: 1}}})
	stop := func(r string) {
		heartbeat(t, jt, &mrpb.HeartbeatRequest{Tracker: "t2",
			Attempts: []*mrpb.AttemptStatus{{AttemptId: r, State: StateKilled, NotOwnFault: true,
				Diagnostic: "shuffle: map 0: attempt " + b + " announced spill 0 as final, but spill 1 was fetched from attempt " + a}}})
	}
	stop(r0)
	cs := counters()
	if got := cs.Get(mr.JobCounterGroup, mr.NondeterministicMapReruns); got != 1 {
		t.Fatalf("%s = %d, want 1", mr.NondeterministicMapReruns, got)
	}
	if k, f := cs.Get(mr.JobCounterGroup, mr.NumKilledReduces), cs.Get(mr.JobCounterGroup, mr.NumFailedReduces); k != 1 || f != 0 {
		t.Fatalf("after the first stop: %d killed, %d failed reduces; want 1 and 0", k, f)
	}
	stop(reduceLaunch())
	cs = counters()
	if k, f := cs.Get(mr.JobCounterGroup, mr.NumKilledReduces), cs.Get(mr.JobCounterGroup, mr.NumFailedReduces); k != 1 || f != 1 {
		t.Fatalf("after a second stop with one differing re-run: %d killed, %d failed reduces; want 1 and 1", k, f)
	}
}
