package jobtracker

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"gomr/mrpb"
)

// TestSpillsOnlyLimit: a job announces its spills without their segments
// when its maps × reduces is over mapreduce.jobtracker.map-events.
// max-segments; -1 never.
func TestSpillsOnlyLimit(t *testing.T) {
	for _, tc := range []struct {
		limit          int64
		maps, reduces  int
		wantSpillsOnly bool
	}{
		{-1, 100000, 10000, false},
		{0, 1, 1, true},
		{0, 5, 0, false}, // map-only: no segment to announce
		{100, 10, 10, false},
		{100, 11, 10, true},
		{1 << 40, 1 << 20, 1 << 20, false}, // 2^40: no overflow
		{1<<40 - 1, 1 << 20, 1 << 20, true},
	} {
		jt, _ := newTestJTWith(t, t.TempDir(), 0, nil, map[string]string{"mapreduce.jobtracker.map-events.max-segments": strconv.FormatInt(tc.limit, 10)})
		if got := jt.spillsOnly(tc.maps, tc.reduces); got != tc.wantSpillsOnly {
			t.Errorf("limit %d, %d maps × %d reduces: spills only %v, want %v", tc.limit, tc.maps, tc.reduces, got, tc.wantSpillsOnly)
		}
	}
}

// TestSpillsOnlyEvents: with max-segments 0, a spill's event names the
// spill, its attempt and tracker and its final mark, and carries no
// segment, as a message and as the gRPC server encodes it; the JobTracker
// still compares the announcements of attempts.
func TestSpillsOnlyEvents(t *testing.T) {
	jt, id := newTestJTWith(t, t.TempDir(), 1, nil, map[string]string{"mapreduce.jobtracker.map-events.max-segments": "0"})
	jt.mu.Lock()
	j := jt.jobs[id]
	jt.mu.Unlock()
	if !j.spillsOnly {
		t.Fatal("a job of 1 map × 1 reduce does not announce spills only under max-segments 0")
	}
	heartbeat(t, jt, &mrpb.HeartbeatRequest{InitialContact: true, FreeMapSlots: 1, ShuffleAddress: "tt1:50060"})
	att := j.maps[0].attempts[0].id
	seg := mkSeg(0, 10, 20, 3, 7)
	heartbeat(t, jt, &mrpb.HeartbeatRequest{
		ShuffleAddress: "tt1:50060",
		Spills:         []*mrpb.SpillAnnouncement{{AttemptId: att, Spill: 0, Final: true, PackedSegments: mrpb.AppendPackedSegments(nil, []spillSegment{seg})}},
		Attempts:       []*mrpb.AttemptStatus{{AttemptId: att, State: StateSucceeded}},
	})
	want := &mrpb.MapEvent{Kind: "SPILL_READY", MapTask: 0, Spill: 0, Final: true, AttemptId: att, ShuffleAddress: "tt1:50060"}
	ev, err := jt.GetMapEvents(context.Background(), &mrpb.MapEventsRequest{JobId: id, Reduce: 0})
	if err != nil {
		t.Fatal(err)
	}
	if len(ev.Events) != 1 || !proto.Equal(ev.Events[0], want) {
		t.Fatalf("events %v, want [%v]", ev.Events, want)
	}
	wire, err := wireServer{jt}.GetMapEvents(context.Background(), &mrpb.MapEventsRequest{JobId: id, Reduce: 0})
	if err != nil {
		t.Fatal(err)
	}
	b, err := proto.Marshal(wire)
	if err != nil {
		t.Fatal(err)
	}
	var got mrpb.MapEventsResponse
	if err := proto.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Events) != 1 || !proto.Equal(got.Events[0], want) {
		t.Fatalf("encoded events %v, want [%v]", got.Events, want)
	}
	// The attempt's spill is kept as its digest alone, to compare a
	// re-run's with (TestRerunComparedWithWithdrawnSpills).
	jt.mu.Lock()
	kept := j.maps[0].attempts[0].spills[0]
	jt.mu.Unlock()
	if want := packSpill([]spillSegment{seg}).digested(); kept != want || kept.Len() != 0 {
		t.Errorf("kept %+v, want the digest alone %+v", kept, want)
	}
}

// TestSpillDigest: a digested spill compares equal to its segments and to
// another attempt's identical ones, not to one that differs in a
// partition's CRC, records or length, nor in its number of partitions; it
// reads back from the event log's JSON, and a malformed digest is refused
// by name.
func TestSpillDigest(t *testing.T) {
	segs := []spillSegment{mkSeg(0, 10, 20, 3, 7), mkSeg(10, 0, 0, 0, 0), mkSeg(10, 5, 9, 1, 8)}
	full := packSpill(segs)
	d := full.digested()
	if d.Len() != 0 || d.digest.partitions != 3 {
		t.Fatalf("digested spill %+v: want no segments and 3 partitions", d)
	}
	if !sameSegments(d, full) || !sameSegments(full, d) || !sameSegments(d, packSpill(slices.Clone(segs)).digested()) {
		t.Error("a digest differs from its own segments")
	}
	for name, change := range map[string]func(s []spillSegment){
		"crc":     func(s []spillSegment) { s[2].CRC++ },
		"records": func(s []spillSegment) { s[0].Records++ },
		"length":  func(s []spillSegment) { s[2].Length++ },
	} {
		other := slices.Clone(segs)
		change(other)
		if sameSegments(d, packSpill(other)) || sameSegments(d, packSpill(other).digested()) {
			t.Errorf("a spill whose %s differs has the same digest", name)
		}
	}
	if sameSegments(d, packSpill(segs[:2]).digested()) {
		t.Error("a spill of fewer partitions has the same digest")
	}
	b, err := json.Marshal(map[int]packedSpill{0: d, 1: full})
	if err != nil {
		t.Fatal(err)
	}
	var back map[int]packedSpill
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	if back[0] != d || back[1].Encoded() != full.Encoded() {
		t.Errorf("read back %+v from %s, want %+v and %+v", back, b, d, full)
	}
	for _, bad := range []string{`"digest:AAAA"`, `"digest:!!"`} {
		var p packedSpill
		if err := json.Unmarshal([]byte(bad), &p); err == nil || !strings.Contains(err.Error(), "spill digest") {
			t.Errorf("%s: error %v, want one naming the spill digest", bad, err)
		}
	}
}

// TestDigestAnnouncements: a map of a job that announces spills only is
// launched to announce digests, and its digest announcement is kept as
// the digest the JobTracker would compute from the segments; a digest of
// the wrong length, of no partitions or beside segments is refused by
// name, and a digest of as many partitions as the job has reduces makes a
// segment-less event whatever the job announces.
func TestDigestAnnouncements(t *testing.T) {
	segs := []spillSegment{mkSeg(0, 10, 20, 3, 7), mkSeg(10, 5, 9, 1, 8)}
	full := packSpill(segs)
	sum := full.Digest()
	for _, tc := range []struct {
		name    string
		ann     *mrpb.SpillAnnouncement
		wantErr string
	}{
		{"digest", &mrpb.SpillAnnouncement{Partitions: 2, SegmentsDigest: sum[:]}, ""},
		{"short digest", &mrpb.SpillAnnouncement{Partitions: 2, SegmentsDigest: sum[:15]}, "a segments' digest of 15 bytes, want 16"},
		{"no digest", &mrpb.SpillAnnouncement{Partitions: 2}, "a segments' digest of 0 bytes, want 16"},
		{"no partitions", &mrpb.SpillAnnouncement{SegmentsDigest: sum[:]}, "a segments' digest of 0 partitions"},
		{"negative partitions", &mrpb.SpillAnnouncement{Partitions: -1, SegmentsDigest: sum[:]}, "a segments' digest of -1 partitions"},
		{"digest and packed", &mrpb.SpillAnnouncement{Partitions: 2, SegmentsDigest: sum[:], PackedSegments: []byte(full.Encoded())}, "a digest of 2 partitions and segments"},
		{"digest and messages", &mrpb.SpillAnnouncement{Partitions: 2, SegmentsDigest: sum[:], Segments: full.Messages()}, "a digest of 2 partitions and segments (0 packed bytes, 2 messages)"},
	} {
		got, err := segmentsOfAnnouncement(tc.ann)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != full.digested() || got.partitions() != 2 || !sameSegments(got, full) {
			t.Errorf("%s: %+v, %v; want the digest of %v", tc.name, got, err, segs)
		}
	}

	for _, mode := range keptSpillModes {
		t.Run(mode.name, func(t *testing.T) {
			jt, id := newTestJTWith(t, t.TempDir(), 1, nil, mode.overrides)
			l := launches(heartbeat(t, jt, &mrpb.HeartbeatRequest{InitialContact: true, FreeMapSlots: 1, ShuffleAddress: "tt1:50060"}))[0]
			if l.SpillDigests != (mode.overrides != nil) {
				t.Errorf("launch asks for digests: %v, want %v", l.SpillDigests, mode.overrides != nil)
			}
			one := []spillSegment{mkSeg(0, 10, 20, 3, 7)}
			d := packSpill(one).Digest()
			heartbeat(t, jt, &mrpb.HeartbeatRequest{ShuffleAddress: "tt1:50060",
				Spills:   []*mrpb.SpillAnnouncement{{AttemptId: l.AttemptId, Spill: 0, Final: true, Partitions: 1, SegmentsDigest: d[:]}},
				Attempts: []*mrpb.AttemptStatus{{AttemptId: l.AttemptId, State: StateSucceeded}}})
			ev, err := jt.GetMapEvents(context.Background(), &mrpb.MapEventsRequest{JobId: id, Reduce: 0})
			if err != nil {
				t.Fatal(err)
			}
			if len(ev.Events) != 1 || ev.Events[0].Kind != "SPILL_READY" || ev.Events[0].Segment != nil {
				t.Fatalf("events %v, want one SPILL_READY without a segment", ev.Events)
			}
			st, err := jt.GetJobStatus(context.Background(), &mrpb.JobStatusRequest{JobId: id})
			if err != nil || st.Maps.Succeeded != 1 {
				t.Errorf("status %v, %v: want the map succeeded", st, err)
			}
		})
	}
}
