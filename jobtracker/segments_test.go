package jobtracker

import (
	"context"
	"strings"
	"testing"

	"gomr/mrpb"
)

func TestSegmentsOfAnnouncement(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      []*mrpb.Segment
		want    []spillSegment
		wantErr string
	}{
		{"none", nil, []spillSegment{}, ""},
		{"every field", []*mrpb.Segment{{Offset: 0, Length: 10, RawLength: 20, Records: 3, Crc: 7}, {Offset: 10, Length: 1 << 40, RawLength: 1 << 41, Records: 1 << 33, Crc: 0xffffffff}},
			[]spillSegment{{0, 10, 20, 3, 7}, {10, 1 << 40, 1 << 41, 1 << 33, 0xffffffff}}, ""},
		{"empty partition", []*mrpb.Segment{{}}, []spillSegment{{}}, ""},
		{"nil segment", []*mrpb.Segment{{Length: 1}, nil}, nil, "partition 1 has no segment"},
		{"negative length", []*mrpb.Segment{{Length: -1}}, nil, "partition 0's segment has offset 0, length -1, raw length 0, 0 records: none may be negative"},
		{"negative offset", []*mrpb.Segment{{}, {}, {Offset: -5}}, nil, "partition 2's segment has offset -5"},
		{"negative records", []*mrpb.Segment{{Records: -2}}, nil, "-2 records"},
	} {
		got, err := segmentsOfAnnouncement(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if len(got) != len(tc.want) {
			t.Errorf("%s: %d segments, want %d", tc.name, len(got), len(tc.want))
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("%s: segment %d = %+v, want %+v", tc.name, i, got[i], tc.want[i])
			}
			p := got[i].proto()
			if back := (spillSegment{p.Offset, p.Length, p.RawLength, p.Records, p.Crc}); back != got[i] {
				t.Errorf("%s: segment %d through proto() = %+v", tc.name, i, back)
			}
		}
	}

	a := []spillSegment{{0, 10, 20, 3, 7}, {10, 5, 9, 1, 8}}
	for _, tc := range []struct {
		name string
		b    []spillSegment
		same bool
	}{
		{"equal", []spillSegment{{0, 10, 20, 3, 7}, {10, 5, 9, 1, 8}}, true},
		{"offsets differ", []spillSegment{{100, 10, 20, 3, 7}, {110, 5, 9, 1, 8}}, true},
		{"crc differs", []spillSegment{{0, 10, 20, 3, 7}, {10, 5, 9, 1, 9}}, false},
		{"records differ", []spillSegment{{0, 10, 20, 4, 7}, {10, 5, 9, 1, 8}}, false},
		{"raw length differs", []spillSegment{{0, 10, 21, 3, 7}, {10, 5, 9, 1, 8}}, false},
		{"length differs", []spillSegment{{0, 11, 20, 3, 7}, {10, 5, 9, 1, 8}}, false},
		{"fewer partitions", a[:1], false},
	} {
		if got := sameSegments(a, tc.b); got != tc.same {
			t.Errorf("sameSegments %s: %v, want %v", tc.name, got, tc.same)
		}
	}
}

// TestMalformedSpillFailsTheAttempt: an announcement with a negative length
// fails its attempt with a diagnostic that names the spill and the
// partition, and reducers are not told of it; a good announcement's event
// carries its reduce's segment, every field.
func TestMalformedSpillFailsTheAttempt(t *testing.T) {
	jt, id := newTestJT(t, 1)
	first := launches(heartbeat(t, jt, &mrpb.HeartbeatRequest{InitialContact: true, FreeMapSlots: 1}))[0].AttemptId
	resp := heartbeat(t, jt, &mrpb.HeartbeatRequest{
		Spills:   []*mrpb.SpillAnnouncement{{AttemptId: first, Spill: 0, Segments: []*mrpb.Segment{{Offset: 4, Length: -10, RawLength: 20, Records: 3, Crc: 1}}}},
		Attempts: []*mrpb.AttemptStatus{{AttemptId: first, State: StateRunning}},
	})
	if k := kills(resp); len(k) != 1 || k[0] != first {
		t.Fatalf("kill orders %v, want [%s]", k, first)
	}
	at, err := jt.ListTaskAttempts(context.Background(), &mrpb.TaskAttemptsRequest{JobId: id})
	if err != nil {
		t.Fatal(err)
	}
	want := "spill 0: partition 0's segment has offset 4, length -10, raw length 20, 3 records: none may be negative"
	if len(at.Attempts) != 1 || at.Attempts[0].State != StateFailed || at.Attempts[0].Diagnostic != want {
		t.Fatalf("attempts %v, want one FAILED with diagnostic %q", at.Attempts, want)
	}
	if ev, _ := jt.GetMapEvents(context.Background(), &mrpb.MapEventsRequest{JobId: id, Reduce: 0}); len(ev.Events) != 0 {
		t.Fatalf("reducers were told of a malformed spill: %v", ev.Events)
	}

	second := launches(heartbeat(t, jt, &mrpb.HeartbeatRequest{FreeMapSlots: 1}))[0].AttemptId
	heartbeat(t, jt, &mrpb.HeartbeatRequest{
		Spills:   []*mrpb.SpillAnnouncement{{AttemptId: second, Spill: 0, Final: true, Segments: []*mrpb.Segment{{Offset: 4, Length: 10, RawLength: 20, Records: 3, Crc: 1}}}},
		Attempts: []*mrpb.AttemptStatus{{AttemptId: second, State: StateSucceeded}},
	})
	ev, _ := jt.GetMapEvents(context.Background(), &mrpb.MapEventsRequest{JobId: id, Reduce: 0})
	if len(ev.Events) != 1 {
		t.Fatalf("map events %v, want one", ev.Events)
	}
	if s := ev.Events[0].Segment; s.Offset != 4 || s.Length != 10 || s.RawLength != 20 || s.Records != 3 || s.Crc != 1 {
		t.Fatalf("event's segment %v, want offset 4, length 10, raw 20, 3 records, crc 1", s)
	}
}
