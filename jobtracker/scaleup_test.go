package jobtracker

import (
	"context"
	"testing"
	"time"

	"gomr/mr"
	"gomr/mrpb"
	"gomr/partitions"
)

// A scale-up split cuts a map's remainder into pieces that tile it: the
// map keeps the first (its split ends where the second starts), the others
// are new pending maps, and reducers are told the job's new map count.
func TestScaleUpPieces(t *testing.T) {
	dir := t.TempDir()
	jt, _ := newTestJTWith(t, dir, 0, nil, nil)
	id := submitSplitJob(t, jt, dir, 1, map[string]string{mr.KeySplitSafe: "true"})
	jt.mu.Lock()
	var added []int
	jt.driver.OnEvent(func(ev partitions.Event) {
		if ev.Kind == partitions.TasksAdded && ev.JobID == id && ev.Type == partitions.Map {
			added = append(added, ev.Count)
		}
	})
	j := jt.jobs[id]
	m := j.maps[0]
	// The split is 1000 bytes; pretend it is 1 MB from offset 0.
	j.splits[0].Length = 1 << 20
	for _, tc := range []struct {
		name   string
		cut    int64
		k      int
		pieces int
	}{
		{"four pieces", 1 << 18, 4, 4},
		// The map's split now ends at 458752 (the first case's first piece).
		{"a remainder too small for more than two", 458752 - 2*scaleUpMinPieceBytes - 100, 4, 2},
	} {
		before := len(j.maps)
		end := j.splits[0].Start + j.splits[0].Length
		jt.scaleUpPiecesLocked(m, mapCut{off: tc.cut, spill: 1, records: 10}, tc.k, time.Now())
		added := len(j.maps) - before
		if added != tc.pieces-1 {
			t.Errorf("%s: %d maps added, want %d", tc.name, added, tc.pieces-1)
			continue
		}
		// The pieces tile [cut, end): the map's first, then the new ones.
		at := j.splits[0].Start + j.splits[0].Length
		if at <= tc.cut {
			t.Errorf("%s: the map's split ends at %d, not after the cut %d", tc.name, at, tc.cut)
		}
		for _, nt := range j.maps[before:] {
			s := j.splits[nt.index]
			if s.Start != at || s.ExactStart || nt.state != taskPending || nt.typ != partitions.Map {
				t.Errorf("%s: piece %d is %+v (%s), want a pending map starting at %d", tc.name, nt.index, s, nt.state, at)
			}
			at = s.Start + s.Length
		}
		if at != end {
			t.Errorf("%s: the pieces end at %d, want %d", tc.name, at, end)
		}
		if j.pending[partitions.Map] != len(j.maps) {
			t.Errorf("%s: %d maps pending, want all %d (none launched here)", tc.name, j.pending[partitions.Map], len(j.maps))
		}
	}
	jt.driver.OnEvent(nil)
	jt.mu.Unlock()
	// The policy is told of the added maps (the deadline policies size a
	// job by them).
	if len(added) != 2 || added[0] != 3 || added[1] != 1 {
		t.Errorf("TasksAdded events %v, want [3 1]", added)
	}
	ev, err := jt.GetMapEvents(context.Background(), &mrpb.MapEventsRequest{JobId: id, Reduce: 0})
	if err != nil {
		t.Fatal(err)
	}
	var counts []int32
	for _, e := range ev.Events {
		if e.Kind == "MAPS_ADDED" {
			counts = append(counts, e.MapTask)
		}
	}
	if len(counts) != 2 || counts[0] != 4 || counts[1] != 5 {
		t.Errorf("MAPS_ADDED events %v, want [4 5]", counts)
	}
}

// A restarted JobTracker rebuilds the maps scale-up splits added (the
// "pieces" lines of the job's event log): the same splits, the pieces
// pending and numbered past the restart, the map they were cut from as
// short as the split left it.
func TestRecoveryKeepsScaleUpPieces(t *testing.T) {
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := func() time.Time { return clock }
	dir := t.TempDir()
	jt1, _ := newTestJTWith(t, dir, 0, now, nil)
	id := submitSplitJob(t, jt1, dir, 1, map[string]string{mr.KeySplitSafe: "true"})
	jt1.mu.Lock()
	j := jt1.jobs[id]
	j.splits[0].Length = 1 << 20
	jt1.scaleUpPiecesLocked(j.maps[0], mapCut{off: 1 << 18, spill: 1, records: 10}, 4, clock)
	jt1.scaleUpPiecesLocked(j.maps[2], mapCut{off: j.splits[2].Start + 1000, spill: 1, records: 10}, 2, clock)
	want := append([]mr.Split(nil), j.splits...)
	jt1.unlock()
	clock = clock.Add(5 * time.Second)
	jt2, _ := newTestJTWith(t, dir, 0, now, nil)
	jt2.mu.Lock()
	defer jt2.mu.Unlock()
	j2 := jt2.jobs[id]
	if j2 == nil {
		t.Fatal("job not recovered")
	}
	if len(j2.maps) != len(want) {
		t.Fatalf("%d maps after the restart, want %d", len(j2.maps), len(want))
	}
	for i, s := range want {
		if g := j2.splits[i]; g.Path != s.Path || g.Start != s.Start || g.Length != s.Length || g.ExactStart != s.ExactStart {
			t.Errorf("map %d: split %+v after the restart, want %+v", i, j2.splits[i], s)
		}
		if m := j2.maps[i]; m.state != taskPending || m.nextAttempt != 1000 {
			t.Errorf("map %d is %s with next attempt %d, want pending with 1000", i, m.state, m.nextAttempt)
		}
	}
	if j2.pending[partitions.Map] != len(want) {
		t.Errorf("%d maps pending, want %d", j2.pending[partitions.Map], len(want))
	}
	if got := j2.counters.Get(mr.SplitGroup, mr.ScaleUpMaps); got != int64(len(want)-1) {
		t.Errorf("SCALE_UP_MAPS = %d after the restart, want %d", got, len(want)-1)
	}
}
