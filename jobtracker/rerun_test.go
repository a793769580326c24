package jobtracker

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"gomr/mr"
	"gomr/mrpb"
)

// TestRerunComparedWithWithdrawnSpills: when a map's output is withdrawn
// (its tracker lost) the re-run's spills are published whatever they are,
// and compared with the withdrawn ones that reducers were told of: a
// re-run that cuts other spills is counted once in
// NONDETERMINISTIC_MAP_RERUNS. The same whether the JobTracker keeps the
// spills' segments or, for a job that announces spills only, their
// digests.
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
	for _, mode := range keptSpillModes {
		for _, tc := range tests {
			t.Run(mode.name+"/"+tc.name, func(t *testing.T) {
				jt, id := newTestJTWith(t, t.TempDir(), 1, nil, mode.overrides)
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
				if got := jobCounters(t, jt, id).Get(mr.JobCounterGroup, mr.NondeterministicMapReruns); got != tc.want {
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
}

// keptSpillModes are the two ways the JobTracker keeps a spill: every
// partition's segment, or (a job that announces spills only) its digest.
var keptSpillModes = []struct {
	name      string
	overrides map[string]string
}{
	{"segments", nil},
	{"digests", map[string]string{"mapreduce.jobtracker.map-events.max-segments": "0"}},
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
	cs := jobCounters(t, jt, id)
	if got := cs.Get(mr.JobCounterGroup, mr.NondeterministicMapReruns); got != 1 {
		t.Fatalf("%s = %d, want 1", mr.NondeterministicMapReruns, got)
	}
	if k, f := cs.Get(mr.JobCounterGroup, mr.NumKilledReduces), cs.Get(mr.JobCounterGroup, mr.NumFailedReduces); k != 1 || f != 0 {
		t.Fatalf("after the first stop: %d killed, %d failed reduces; want 1 and 0", k, f)
	}
	stop(reduceLaunch())
	cs = jobCounters(t, jt, id)
	if k, f := cs.Get(mr.JobCounterGroup, mr.NumKilledReduces), cs.Get(mr.JobCounterGroup, mr.NumFailedReduces); k != 1 || f != 1 {
		t.Fatalf("after a second stop with one differing re-run: %d killed, %d failed reduces; want 1 and 1", k, f)
	}
}

// TestRerunAfterRestartComparedWithWithdrawnSpills: the JobTracker
// restarts between the withdrawal of a map's spills (its tracker lost
// after the map succeeded and a reduce started) and its re-run's
// announcements. The withdrawn spills are in the recovery log ("withdrawn"
// line), so the re-run is compared with them as without the restart: a
// difference is counted in NONDETERMINISTIC_MAP_RERUNS and excuses a
// reduce stopped by it. A log without that line (an earlier version's)
// and a line of an unknown kind (a later version's) still recover, the
// first missing the difference as before.
func TestRerunAfterRestartComparedWithWithdrawnSpills(t *testing.T) {
	tests := []struct {
		name string
		// rerunCRC is the CRC of the re-run's spill 1 (the first
		// attempt's is 2).
		rerunCRC uint32
		// edit changes the event log before the restart.
		edit func(lines []string) []string
		want int64
	}{
		{name: "identical", rerunCRC: 2, want: 0},
		{name: "different", rerunCRC: 9, want: 1},
		{name: "different, a log without the withdrawal", rerunCRC: 9, want: 0, edit: func(lines []string) []string {
			return slices.DeleteFunc(lines, func(l string) bool { return strings.Contains(l, `"kind":"withdrawn"`) })
		}},
		{name: "different, a line of an unknown kind", rerunCRC: 9, want: 1, edit: func(lines []string) []string {
			return append(lines, `{"kind":"from-a-later-version","type":"m","task":0}`)
		}},
	}
	for _, mode := range keptSpillModes {
		for _, tc := range tests {
			t.Run(mode.name+"/"+tc.name, func(t *testing.T) {
				clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
				now := func() time.Time { return clock }
				dir := t.TempDir()
				jt1, id := newTestJTWith(t, dir, 1, now, mode.overrides)
				a := launches(heartbeat(t, jt1, &mrpb.HeartbeatRequest{Tracker: "t1", InitialContact: true, Instance: "t1", FreeMapSlots: 1}))[0].AttemptId
				heartbeat(t, jt1, &mrpb.HeartbeatRequest{Tracker: "t1", Spills: []*mrpb.SpillAnnouncement{
					{AttemptId: a, Spill: 0, Segments: seg(1)}, {AttemptId: a, Spill: 1, Final: true, Segments: seg(2)}},
					Attempts: []*mrpb.AttemptStatus{{AttemptId: a, State: StateSucceeded, Progress: 1}}})
				heartbeat(t, jt1, &mrpb.HeartbeatRequest{Tracker: "t2", InitialContact: true, Instance: "t2"})
				if ls := launches(heartbeat(t, jt1, &mrpb.HeartbeatRequest{Tracker: "t2", FreeReduceSlots: 1})); len(ls) != 1 || ls[0].Type != "r" {
					t.Fatalf("launches on t2: %v, want the reduce", attemptIDs(ls))
				}
				loseTracker(jt1, "t1")

				events := filepath.Join(dir, "system", id+".events")
				data, err := os.ReadFile(events)
				if err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(string(data), `"kind":"withdrawn"`) {
					t.Fatalf("no withdrawn line in the event log:\n%s", data)
				}
				if got, want := strings.Contains(string(data), `"`+digestPrefix), mode.overrides != nil; got != want {
					t.Fatalf("the event log holds digests: %v, want %v:\n%s", got, want, data)
				}
				if tc.edit != nil {
					lines := tc.edit(strings.Split(strings.TrimSpace(string(data)), "\n"))
					if err := os.WriteFile(events, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
						t.Fatal(err)
					}
				}
				clock = clock.Add(5 * time.Second)
				jt2, _ := newTestJTWith(t, dir, 0, now, mode.overrides)
				ls := launches(heartbeat(t, jt2, &mrpb.HeartbeatRequest{Tracker: "t2", InitialContact: true, Instance: "t2", FreeMapSlots: 1}))
				if len(ls) != 1 || ls[0].Type != "m" {
					t.Fatalf("launches on t2 after the restart: %v, want the map's re-run", attemptIDs(ls))
				}
				b := ls[0].AttemptId
				heartbeat(t, jt2, &mrpb.HeartbeatRequest{Tracker: "t2", Spills: []*mrpb.SpillAnnouncement{
					{AttemptId: b, Spill: 0, Segments: seg(1)}, {AttemptId: b, Spill: 1, Final: true, Segments: seg(tc.rerunCRC)}},
					Attempts: []*mrpb.AttemptStatus{{AttemptId: b, State: StateSucceeded, Progress: 1}}})
				if got := jobCounters(t, jt2, id).Get(mr.JobCounterGroup, mr.NondeterministicMapReruns); got != tc.want {
					t.Fatalf("%s = %d after the restart, want %d", mr.NondeterministicMapReruns, got, tc.want)
				}
				// A reduce stopped by the difference is excused once per
				// differing re-run the JobTracker counted.
				var r string
				for _, l := range launches(heartbeat(t, jt2, &mrpb.HeartbeatRequest{Tracker: "t2", FreeReduceSlots: 1})) {
					if l.Type == "r" {
						r = l.AttemptId
					}
				}
				if r == "" {
					t.Fatal("no reduce launched on t2 after the restart")
				}
				heartbeat(t, jt2, &mrpb.HeartbeatRequest{Tracker: "t2", Attempts: []*mrpb.AttemptStatus{{AttemptId: r, State: StateKilled,
					NotOwnFault: true, Diagnostic: "shuffle: map 0: spill 1 of attempt " + b + " differs from the one fetched from attempt " + a}}})
				cs := jobCounters(t, jt2, id)
				killed, failed := cs.Get(mr.JobCounterGroup, mr.NumKilledReduces), cs.Get(mr.JobCounterGroup, mr.NumFailedReduces)
				if wantKilled := tc.want; killed != wantKilled || failed != 1-wantKilled {
					t.Fatalf("the stopped reduce: %d killed, %d failed; want %d and %d", killed, failed, wantKilled, 1-wantKilled)
				}
			})
		}
	}
}

// rerunSpill is a spill a map attempt announces in the re-run tests: its
// index, its final mark and its segment's CRC.
type rerunSpill struct {
	k     int32
	final bool
	crc   uint32
}

// announce is the announcements of spills of attempt a from spill from on.
func announce(a string, spills []rerunSpill, from int32) []*mrpb.SpillAnnouncement {
	var out []*mrpb.SpillAnnouncement
	for _, s := range spills {
		if s.k >= from {
			out = append(out, &mrpb.SpillAnnouncement{AttemptId: a, Spill: s.k, Final: s.final, Segments: seg(s.crc)})
		}
	}
	return out
}

// runSplitMap submits a split-safe job of one map and one reduce to jt,
// on trackers t1, t2 and t3, and runs its map split once: its first
// attempt, on t1, announces spills 0 and 1 of spills and stops at offset
// 400 (spill 2), and its remainder, on tracker remainderOn, announces
// the rest and succeeds. It returns the job.
func runSplitMap(t *testing.T, jt *JobTracker, dir string, spills []rerunSpill, remainderOn string) string {
	t.Helper()
	id := submitSplitJob(t, jt, dir, 1, map[string]string{mr.KeySplitSafe: "true"})
	a0 := launches(heartbeat(t, jt, &mrpb.HeartbeatRequest{Tracker: "t1", InitialContact: true, Instance: "t1", FreeMapSlots: 1}))[0].AttemptId
	for _, tr := range []string{"t2", "t3"} {
		heartbeat(t, jt, &mrpb.HeartbeatRequest{Tracker: tr, InitialContact: true, Instance: tr})
	}
	if _, err := jt.SplitTaskAttempt(context.Background(), &mrpb.SplitTaskAttemptRequest{AttemptId: a0}); err != nil {
		t.Fatal(err)
	}
	heartbeat(t, jt, &mrpb.HeartbeatRequest{Tracker: "t1"})
	first := announce(a0, spills[:2], 0)
	first[1].SplitAt = &mrpb.MapCut{Offset: 400, Spill: 2, Records: 50}
	heartbeat(t, jt, &mrpb.HeartbeatRequest{Tracker: "t1", Spills: first,
		Attempts: []*mrpb.AttemptStatus{{AttemptId: a0, State: StateSplit, Counters: inputRecords(50)}}})
	ls := launches(heartbeat(t, jt, &mrpb.HeartbeatRequest{Tracker: remainderOn, FreeMapSlots: 1}))
	if len(ls) != 1 || ls[0].Resume.GetFirstSpill() != 2 {
		t.Fatalf("remainder launches %v, want one from spill 2", ls)
	}
	a1 := ls[0].AttemptId
	heartbeat(t, jt, &mrpb.HeartbeatRequest{Tracker: remainderOn, Spills: announce(a1, spills, 2),
		Attempts: []*mrpb.AttemptStatus{{AttemptId: a1, State: StateSucceeded, Progress: 1}}})
	return id
}

// TestSplitMapRerunComparedWithWithdrawnSpills: the map of a split-safe
// job is split once (its first attempt cuts spills 0 and 1 and stops at
// offset 400, its remainder cuts spills 2 and 3), then the output of one
// part or of both is lost with its tracker, and the map runs again. The
// re-run starts at the first part whose spills are gone, cutting at the
// split point, and is compared with the withdrawn spills as a plain map's:
// a difference from them counts once in NONDETERMINISTIC_MAP_RERUNS; a
// spill that differs from one still published (the part not lost) fails
// the re-run as non-deterministic, as any attempt's does.
func TestSplitMapRerunComparedWithWithdrawnSpills(t *testing.T) {
	first := []rerunSpill{{0, false, 1}, {1, false, 2}, {2, false, 3}, {3, true, 4}}
	reruns := []struct {
		name   string
		spills []rerunSpill
	}{
		{"identical", first},
		{"a different spill before the split point", []rerunSpill{{0, false, 1}, {1, false, 9}, {2, false, 3}, {3, true, 4}}},
		{"a different spill after it", []rerunSpill{{0, false, 1}, {1, false, 2}, {2, false, 3}, {3, true, 9}}},
		{"fewer spills after it", []rerunSpill{{0, false, 1}, {1, false, 2}, {2, true, 3}}},
		{"more spills after it", []rerunSpill{{0, false, 1}, {1, false, 2}, {2, false, 3}, {3, false, 4}, {4, true, 5}}},
	}
	type outcome struct {
		counted int64
		failed  bool
	}
	tests := []struct {
		name string
		// remainderOn is the tracker the remainder runs on (t1 runs the
		// first attempt); lose is the tracker lost.
		remainderOn, lose string
		// from is the spill the re-run starts at.
		from int32
		want map[string]outcome
	}{
		{"the remainder's output lost", "t2", "t2", 2, map[string]outcome{
			"identical": {0, false}, "a different spill before the split point": {0, false},
			"a different spill after it": {1, false}, "fewer spills after it": {1, false}, "more spills after it": {1, false},
		}},
		{"the first part's output lost", "t2", "t1", 0, map[string]outcome{
			"identical": {0, false}, "a different spill before the split point": {1, false},
			"a different spill after it": {0, true}, "fewer spills after it": {0, true}, "more spills after it": {0, true},
		}},
		{"both parts' output lost", "t1", "t1", 0, map[string]outcome{
			"identical": {0, false}, "a different spill before the split point": {1, false},
			"a different spill after it": {1, false}, "fewer spills after it": {1, false}, "more spills after it": {1, false},
		}},
	}
	for _, tc := range tests {
		for _, rr := range reruns {
			t.Run(tc.name+"/"+rr.name, func(t *testing.T) {
				dir := t.TempDir()
				jt, _ := newTestJTWith(t, dir, 0, nil, nil)
				id := runSplitMap(t, jt, dir, first, tc.remainderOn)
				loseTracker(jt, tc.lose)

				ls := freshMapLaunches(t, jt, "t3")
				if len(ls) != 1 || ls[0].Resume.GetFirstSpill() != tc.from {
					t.Fatalf("re-run launches %v, want one from spill %d", ls, tc.from)
				}
				if tc.from == 0 && (len(ls[0].Resume.GetCuts()) != 1 || ls[0].Resume.Cuts[0].Offset != 400) {
					t.Fatalf("re-run from the start launched with cuts %v, want the split point at 400", ls[0].Resume.GetCuts())
				}
				b := ls[0].AttemptId
				heartbeat(t, jt, &mrpb.HeartbeatRequest{Tracker: "t3", Spills: announce(b, rr.spills, tc.from),
					Attempts: []*mrpb.AttemptStatus{{AttemptId: b, State: StateRunning}}})
				got := outcome{counted: jobCounters(t, jt, id).Get(mr.JobCounterGroup, mr.NondeterministicMapReruns)}
				state, diag := attemptStateOf(jt, b)
				got.failed = state == StateFailed
				if want := tc.want[rr.name]; got != want {
					t.Fatalf("%s = %d, re-run %s (%s); want %d, failed %v", mr.NondeterministicMapReruns, got.counted, state, diag, want.counted, want.failed)
				}
			})
		}
	}
}

// TestScaleUpMapRerunComparedWithWithdrawnSpills: a scale-up split cuts
// the remainder of a map into two pieces, the map's own (its remainder
// attempt cuts spills 2 and 3) and a new map (spills 0 and 1); the output
// of one of them is lost with its tracker, and it runs again. The re-run
// is compared with the withdrawn spills as a plain map's: identical, it
// is not counted; with a different spill or fewer spills, it is counted
// once in NONDETERMINISTIC_MAP_RERUNS.
func TestScaleUpMapRerunComparedWithWithdrawnSpills(t *testing.T) {
	remainder := []rerunSpill{{2, false, 3}, {3, true, 4}}
	piece := []rerunSpill{{0, false, 5}, {1, true, 6}}
	tests := []struct {
		name string
		// lose is the tracker lost: t2 ran the map's remainder, t3 the
		// new map.
		lose  string
		task  int32
		from  int32
		rerun []rerunSpill
		want  int64
	}{
		{"the remainder, identical", "t2", 0, 2, remainder, 0},
		{"the remainder, a different spill", "t2", 0, 2, []rerunSpill{{2, false, 3}, {3, true, 9}}, 1},
		{"the remainder, fewer spills", "t2", 0, 2, []rerunSpill{{2, true, 3}}, 1},
		{"the new map, identical", "t3", 1, 0, piece, 0},
		{"the new map, a different spill", "t3", 1, 0, []rerunSpill{{0, false, 9}, {1, true, 6}}, 1},
		{"the new map, more spills", "t3", 1, 0, []rerunSpill{{0, false, 5}, {1, false, 6}, {2, true, 7}}, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			jt, _ := newTestJTWith(t, dir, 0, nil, nil)
			id := submitSplitJob(t, jt, dir, 1, map[string]string{mr.KeySplitSafe: "true"})
			jt.mu.Lock()
			jt.jobs[id].splits[0].Length = 1 << 20 // room for two pieces
			jt.unlock()
			a0 := launches(heartbeat(t, jt, &mrpb.HeartbeatRequest{Tracker: "t1", InitialContact: true, Instance: "t1", FreeMapSlots: 1}))[0].AttemptId
			for _, tr := range []string{"t2", "t3", "t4"} {
				heartbeat(t, jt, &mrpb.HeartbeatRequest{Tracker: tr, InitialContact: true, Instance: tr})
			}
			jt.mu.Lock()
			_, a := jt.findAttempt(a0)
			err := jt.orderSplitLocked(a, 2)
			jt.unlock()
			if err != nil {
				t.Fatal(err)
			}
			heartbeat(t, jt, &mrpb.HeartbeatRequest{Tracker: "t1"})
			spills := announce(a0, []rerunSpill{{0, false, 1}, {1, false, 2}}, 0)
			spills[1].SplitAt = &mrpb.MapCut{Offset: 1 << 18, Spill: 2, Records: 50}
			heartbeat(t, jt, &mrpb.HeartbeatRequest{Tracker: "t1", Spills: spills,
				Attempts: []*mrpb.AttemptStatus{{AttemptId: a0, State: StateSplit, Counters: inputRecords(50)}}})
			run := func(tracker string, wantTask int32, spills []rerunSpill) {
				t.Helper()
				ls := launches(heartbeat(t, jt, &mrpb.HeartbeatRequest{Tracker: tracker, FreeMapSlots: 1}))
				if len(ls) != 1 || ls[0].Index != wantTask {
					t.Fatalf("launches on %s: %v, want map %d", tracker, ls, wantTask)
				}
				heartbeat(t, jt, &mrpb.HeartbeatRequest{Tracker: tracker, Spills: announce(ls[0].AttemptId, spills, 0),
					Attempts: []*mrpb.AttemptStatus{{AttemptId: ls[0].AttemptId, State: StateSucceeded, Progress: 1}}})
			}
			run("t2", 0, remainder)
			run("t3", 1, piece)
			loseTracker(jt, tc.lose)

			ls := freshMapLaunches(t, jt, "t4")
			if len(ls) != 1 || ls[0].Index != tc.task || ls[0].Resume.GetFirstSpill() != tc.from {
				t.Fatalf("re-run launches %v, want map %d from spill %d", ls, tc.task, tc.from)
			}
			b := ls[0].AttemptId
			heartbeat(t, jt, &mrpb.HeartbeatRequest{Tracker: "t4", Spills: announce(b, tc.rerun, 0),
				Attempts: []*mrpb.AttemptStatus{{AttemptId: b, State: StateRunning}}})
			if state, diag := attemptStateOf(jt, b); state != StateRunning {
				t.Fatalf("re-run %s (%s), want it running", state, diag)
			}
			if got := jobCounters(t, jt, id).Get(mr.JobCounterGroup, mr.NondeterministicMapReruns); got != tc.want {
				t.Fatalf("%s = %d, want %d", mr.NondeterministicMapReruns, got, tc.want)
			}
		})
	}
}

// TestFinalMarkComparedWithPublishedSpills: a map attempt whose spills
// carry other final marks than the spills another attempt of its map
// published (a failed attempt's stay published) is failed as
// non-deterministic, as one whose segments differ is; identical marks
// pass.
func TestFinalMarkComparedWithPublishedSpills(t *testing.T) {
	published := []rerunSpill{{0, false, 1}, {1, false, 2}, {2, true, 3}}
	tests := []struct {
		name string
		// publishedUpTo is how many of published the first attempt
		// announced before it failed.
		publishedUpTo int
		retry         []rerunSpill
		want          string // "" : the retry runs on
	}{
		{"identical", 3, published, ""},
		{"final earlier", 3, []rerunSpill{{0, false, 1}, {1, true, 2}}, "spill 1 is announced final, but"},
		{"not final where it was", 3, []rerunSpill{{0, false, 1}, {1, false, 2}, {2, false, 3}}, "spill 2 is announced not final, but"},
		{"a spill after the final one", 3, []rerunSpill{{0, false, 1}, {1, false, 2}, {2, false, 3}, {3, true, 4}}, "spill 2 is announced not final"},
		{"final where the first went on", 2, []rerunSpill{{0, true, 1}}, "spill 0 is announced final, but"},
		{"final after what was published", 2, []rerunSpill{{0, false, 1}, {1, false, 2}, {2, true, 3}}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			jt, _ := newTestJT(t, 1)
			first := launches(heartbeat(t, jt, &mrpb.HeartbeatRequest{InitialContact: true, FreeMapSlots: 1}))[0].AttemptId
			heartbeat(t, jt, &mrpb.HeartbeatRequest{Spills: announce(first, published[:tc.publishedUpTo], 0),
				Attempts: []*mrpb.AttemptStatus{{AttemptId: first, State: StateFailed, Diagnostic: "boom"}}})
			retry := launches(heartbeat(t, jt, &mrpb.HeartbeatRequest{FreeMapSlots: 1}))[0].AttemptId
			heartbeat(t, jt, &mrpb.HeartbeatRequest{Spills: announce(retry, tc.retry, 0),
				Attempts: []*mrpb.AttemptStatus{{AttemptId: retry, State: StateRunning}}})
			state, diag := attemptStateOf(jt, retry)
			if tc.want == "" {
				if state != StateRunning {
					t.Fatalf("retry %s (%s), want it running", state, diag)
				}
				return
			}
			if state != StateFailed || !strings.Contains(diag, "non-deterministic map output: "+tc.want) {
				t.Fatalf("retry %s (%s), want it failed saying %q", state, diag, tc.want)
			}
		})
	}
}

// TestRecoveredMapOutputGoneIsComparedWithItsRerun: a map succeeded
// before a JobTracker restart, and its output does not come back with its
// tracker (the tracker comes back as a new process, or not in time): its
// re-run is compared with the spills the JobTracker before the restart
// published, which a reduce that succeeded then may have read, as with a
// withdrawal; and a second restart still knows them.
func TestRecoveredMapOutputGoneIsComparedWithItsRerun(t *testing.T) {
	for _, how := range []string{"tracker restarted", "tracker never back"} {
		for _, tc := range []struct {
			name string
			crc  uint32 // of partition 0 of the re-run's spill 0 (map 0's was 7)
			want int64
		}{{"identical", 7, 0}, {"different", 9, 1}} {
			t.Run(how+"/"+tc.name, func(t *testing.T) {
				clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
				overrides := map[string]string{"mapreduce.jobtracker.restart.tracker-wait": "10000"}
				jt, id, m0, m1 := recoveryScenario(t, &clock, overrides)
				if how == "tracker restarted" {
					heartbeat(t, jt, &mrpb.HeartbeatRequest{InitialContact: true, Instance: "p2", ShuffleAddress: "127.0.0.1:7002",
						HeldJobs: []string{id}, HeldAttempts: []string{m0, m1}})
				} else {
					clock = clock.Add(11 * time.Second)
					jt.mu.Lock()
					jt.expireRecoveredLocked(clock)
					jt.unlock()
				}
				// A second restart before the re-run runs.
				jt.mu.Lock()
				dir := filepath.Dir(jt.staging.dir)
				jt.unlock()
				clock = clock.Add(time.Second)
				jt, _ = newTestJTWith(t, dir, 0, func() time.Time { return clock }, overrides)
				var b string
				for _, l := range launches(heartbeat(t, jt, &mrpb.HeartbeatRequest{Tracker: "t2", InitialContact: true, Instance: "q1",
					ShuffleAddress: "127.0.0.1:7003", FreeMapSlots: 2})) {
					if l.Index == 0 {
						b = l.AttemptId
					}
				}
				if b == "" {
					t.Fatal("map 0 did not run again")
				}
				heartbeat(t, jt, &mrpb.HeartbeatRequest{Tracker: "t2", ShuffleAddress: "127.0.0.1:7003",
					Spills: []*mrpb.SpillAnnouncement{{AttemptId: b, Spill: 0, Final: true,
						Segments: []*mrpb.Segment{{Length: 10, RawLength: 20, Records: 3, Crc: tc.crc}, {Length: 11, RawLength: 21, Records: 4, Crc: 8}}}},
					Attempts: []*mrpb.AttemptStatus{{AttemptId: b, State: StateRunning}}})
				if got := jobCounters(t, jt, id).Get(mr.JobCounterGroup, mr.NondeterministicMapReruns); got != tc.want {
					t.Fatalf("%s = %d, want %d", mr.NondeterministicMapReruns, got, tc.want)
				}
			})
		}
	}
}

// TestRecoveredSplitMapIsComparedWithItsRerun: a split map that succeeded
// before a JobTracker restart runs again from its start (its remainder's
// attempt holds only the spills after the split point, recovery.go); the
// re-run's spills after the split point are compared with those the
// remainder published, which a reduce that succeeded before the restart
// may have read.
func TestRecoveredSplitMapIsComparedWithItsRerun(t *testing.T) {
	first := []rerunSpill{{0, false, 1}, {1, false, 2}, {2, false, 3}, {3, true, 4}}
	for _, tc := range []struct {
		name  string
		rerun []rerunSpill
		want  int64
	}{
		{"identical", first, 0},
		{"a different spill after the split point", []rerunSpill{{0, false, 1}, {1, false, 2}, {2, false, 3}, {3, true, 9}}, 1},
		{"fewer spills", []rerunSpill{{0, false, 1}, {1, false, 2}, {2, true, 3}}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			jt1, _ := newTestJTWith(t, dir, 0, nil, nil)
			id := runSplitMap(t, jt1, dir, first, "t2")
			jt, _ := newTestJTWith(t, dir, 0, nil, nil)
			ls := launches(heartbeat(t, jt, &mrpb.HeartbeatRequest{Tracker: "t3", InitialContact: true, Instance: "t3", FreeMapSlots: 1}))
			if len(ls) != 1 || ls[0].Type != "m" || ls[0].Resume.GetFirstSpill() != 0 || len(ls[0].Resume.GetCuts()) != 1 {
				t.Fatalf("launches after the restart: %v, want the map from its start with the split point", ls)
			}
			b := ls[0].AttemptId
			heartbeat(t, jt, &mrpb.HeartbeatRequest{Tracker: "t3", Spills: announce(b, tc.rerun, 0),
				Attempts: []*mrpb.AttemptStatus{{AttemptId: b, State: StateRunning}}})
			if got := jobCounters(t, jt, id).Get(mr.JobCounterGroup, mr.NondeterministicMapReruns); got != tc.want {
				t.Fatalf("%s = %d, want %d", mr.NondeterministicMapReruns, got, tc.want)
			}
		})
	}
}

// jobCounters is job id's counters as GetJobStatus gives them.
func jobCounters(t *testing.T, jt *JobTracker, id string) mr.CounterSet {
	t.Helper()
	st, err := jt.GetJobStatus(context.Background(), &mrpb.JobStatusRequest{JobId: id})
	if err != nil {
		t.Fatal(err)
	}
	return countersFromProto(st.Counters)
}
