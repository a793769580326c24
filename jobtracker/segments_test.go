package jobtracker

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"math"
	"reflect"
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
			[]spillSegment{mkSeg(0, 10, 20, 3, 7), mkSeg(10, 1<<40, 1<<41, 1<<33, 0xffffffff)}, ""},
		{"empty partition", []*mrpb.Segment{{}}, []spillSegment{{}}, ""},
		{"nil segment", []*mrpb.Segment{{Length: 1}, nil}, nil, "partition 1 has no segment"},
		{"negative length", []*mrpb.Segment{{Length: -1}}, nil, "partition 0's segment has offset 0, length -1, raw length 0, 0 records: none may be negative"},
		{"negative offset", []*mrpb.Segment{{}, {}, {Offset: -5}}, nil, "partition 2's segment has offset -5"},
		{"negative records", []*mrpb.Segment{{Records: -2}}, nil, "-2 records"},
	} {
		packed, err := segmentsOfAnnouncement(&mrpb.SpillAnnouncement{Segments: tc.in})
		got := segmentsOf(packed)
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
			p := got[i].Proto()
			if back := mkSeg(p.Offset, p.Length, p.RawLength, p.Records, p.Crc); back != got[i] {
				t.Errorf("%s: segment %d through proto() = %+v", tc.name, i, back)
			}
		}
	}

	// Packed: kept as sent; refused when they do not parse, carry a
	// negative value, or come with messages too.
	good := []spillSegment{mkSeg(0, 10, 20, 3, 7), mkSeg(10, 1<<40, 1<<41, 1<<33, 0xffffffff)}
	for _, tc := range []struct {
		name    string
		ann     *mrpb.SpillAnnouncement
		wantErr string
	}{
		{"packed", &mrpb.SpillAnnouncement{PackedSegments: []byte(mrpb.PackSegments(good).Encoded())}, ""},
		{"packed, truncated", &mrpb.SpillAnnouncement{PackedSegments: []byte(mrpb.PackSegments(good).Encoded()[:20])}, "2 partitions of"},
		{"packed, negative", &mrpb.SpillAnnouncement{PackedSegments: []byte(mrpb.PackSegments([]spillSegment{{}, {Records: -1}}).Encoded())},
			"partition 1's segment has offset 0, length 0, raw length 0, -1 records: none may be negative"},
		{"both", &mrpb.SpillAnnouncement{PackedSegments: []byte(mrpb.PackSegments(good).Encoded()), Segments: []*mrpb.Segment{{}, {}}},
			"2 segments both packed and as messages (2)"},
	} {
		packed, err := segmentsOfAnnouncement(tc.ann)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.wantErr)
			}
			continue
		}
		if err != nil || packed.Encoded() != string(tc.ann.PackedSegments) || !reflect.DeepEqual(segmentsOf(packed), good) {
			t.Errorf("%s: %+v (%v), want %+v kept as sent", tc.name, segmentsOf(packed), err, good)
		}
	}

	a := []spillSegment{mkSeg(0, 10, 20, 3, 7), mkSeg(10, 5, 9, 1, 8)}
	for _, tc := range []struct {
		name string
		b    []spillSegment
		same bool
	}{
		{"equal", []spillSegment{mkSeg(0, 10, 20, 3, 7), mkSeg(10, 5, 9, 1, 8)}, true},
		{"offsets differ", []spillSegment{mkSeg(100, 10, 20, 3, 7), mkSeg(110, 5, 9, 1, 8)}, true},
		{"crc differs", []spillSegment{mkSeg(0, 10, 20, 3, 7), mkSeg(10, 5, 9, 1, 9)}, false},
		{"records differ", []spillSegment{mkSeg(0, 10, 20, 4, 7), mkSeg(10, 5, 9, 1, 8)}, false},
		{"raw length differs", []spillSegment{mkSeg(0, 10, 21, 3, 7), mkSeg(10, 5, 9, 1, 8)}, false},
		{"length differs", []spillSegment{mkSeg(0, 11, 20, 3, 7), mkSeg(10, 5, 9, 1, 8)}, false},
		{"fewer partitions", a[:1], false},
	} {
		if got := sameSegments(packSpill(a), packSpill(tc.b)); got != tc.same {
			t.Errorf("sameSegments %s: %v, want %v", tc.name, got, tc.same)
		}
	}
}

// TestMalformedSpillFailsTheAttempt: an announcement with a negative length
// fails its attempt with a diagnostic that names the spill and the
// partition, and reducers are not told of it; a good announcement's event
// carries its reduce's segment, every field. Segments as messages and
// packed.
func TestMalformedSpillFailsTheAttempt(t *testing.T) {
	bad := spillSegment{Offset: 4, Length: -10, RawLength: 20, Records: 3, CRC: 1}
	good := spillSegment{Offset: 4, Length: 10, RawLength: 20, Records: 3, CRC: 1}
	for _, form := range []struct {
		name string
		ann  func(attempt string, seg spillSegment) *mrpb.SpillAnnouncement
	}{
		{"messages", func(attempt string, seg spillSegment) *mrpb.SpillAnnouncement {
			return &mrpb.SpillAnnouncement{AttemptId: attempt, Segments: []*mrpb.Segment{seg.Proto()}}
		}},
		{"packed", func(attempt string, seg spillSegment) *mrpb.SpillAnnouncement {
			return &mrpb.SpillAnnouncement{AttemptId: attempt, PackedSegments: mrpb.AppendPackedSegments(nil, []spillSegment{seg})}
		}},
	} {
		t.Run(form.name, func(t *testing.T) {
			jt, id := newTestJT(t, 1)
			first := launches(heartbeat(t, jt, &mrpb.HeartbeatRequest{InitialContact: true, FreeMapSlots: 1}))[0].AttemptId
			resp := heartbeat(t, jt, &mrpb.HeartbeatRequest{
				Spills:   []*mrpb.SpillAnnouncement{form.ann(first, bad)},
				Attempts: []*mrpb.AttemptStatus{{AttemptId: first, State: StateRunning}},
			})
			if !resp.ReadsPackedSegments {
				t.Errorf("the reply does not say the JobTracker reads packed segments")
			}
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
			ann := form.ann(second, good)
			ann.Final = true
			heartbeat(t, jt, &mrpb.HeartbeatRequest{
				Spills:   []*mrpb.SpillAnnouncement{ann},
				Attempts: []*mrpb.AttemptStatus{{AttemptId: second, State: StateSucceeded}},
			})
			ev, _ := jt.GetMapEvents(context.Background(), &mrpb.MapEventsRequest{JobId: id, Reduce: 0})
			if len(ev.Events) != 1 {
				t.Fatalf("map events %v, want one", ev.Events)
			}
			if s := ev.Events[0].Segment; s.Offset != 4 || s.Length != 10 || s.RawLength != 20 || s.Records != 3 || s.Crc != 1 {
				t.Fatalf("event's segment %v, want offset 4, length 10, raw 20, 3 records, crc 1", s)
			}
		})
	}
}

// TestPackedSpill: a spill's segments read back from their packed form,
// each by index and all in order, for spills of no, one and many
// partitions (around 128, where the count takes a second byte), with
// offsets that follow one another, that jump back, and extreme values; the
// event log's JSON (a string) reads back, as does the old log's array of
// segments; and 1,000 small segments of a spill take at most 12 bytes each.
func TestPackedSpill(t *testing.T) {
	mk := func(n int, gen func(i int, prevEnd int64) spillSegment) []spillSegment {
		segs := make([]spillSegment, n)
		var end int64
		for i := range segs {
			segs[i] = gen(i, end)
			end = segs[i].Offset + segs[i].Length
		}
		return segs
	}
	contiguous := func(i int, end int64) spillSegment {
		return mkSeg(end, int64(100+i%50), int64(300+i), int64(i%7), uint32(i)*2654435761)
	}
	cases := []struct {
		name string
		segs []spillSegment
	}{
		{"no partitions", []spillSegment{}},
		{"one", mk(1, contiguous)},
		{"127", mk(127, contiguous)},
		{"128", mk(128, contiguous)},
		{"1000 contiguous", mk(1000, contiguous)},
		{"backwards and gaps", mk(40, func(i int, end int64) spillSegment {
			return spillSegment{Offset: int64(1000 - 20*i), Length: 3, RawLength: 9, Records: 1, CRC: 1}
		})},
		{"extremes", []spillSegment{
			mkSeg(math.MaxInt64, math.MaxInt64, math.MaxInt64, math.MaxInt64, math.MaxUint32),
			mkSeg(0, 0, 0, 0, 0),
			mkSeg(math.MaxInt64, 1, 0, 0, 0),
			mkSeg(1, math.MaxInt64, 0, 0, 0),
		}},
	}
	for _, tc := range cases {
		p := packSpill(tc.segs)
		if p == (packedSpill{}) || p.Len() != len(tc.segs) {
			t.Fatalf("%s: packed %q, Len %d, want %d", tc.name, p.Encoded(), p.Len(), len(tc.segs))
		}
		for i, want := range tc.segs {
			if got := p.At(i); got != want {
				t.Fatalf("%s: At(%d) = %+v, want %+v", tc.name, i, got, want)
			}
		}
		if got := segmentsOf(p); !reflect.DeepEqual(got, tc.segs) {
			t.Fatalf("%s: Segments() = %+v, want %+v", tc.name, got, tc.segs)
		}
		js, err := json.Marshal(map[int]packedSpill{3: p})
		if err != nil || !strings.HasPrefix(string(js), `{"3":"`) {
			t.Fatalf("%s: logged as %s (%v), want a string", tc.name, js, err)
		}
		var read map[int]packedSpill
		if err := json.Unmarshal(js, &read); err != nil {
			t.Fatalf("%s: %s read back: %v", tc.name, js, err)
		}
		back := read[3]
		if back != p {
			t.Fatalf("%s: read back from the log as %q, want %q", tc.name, back.Encoded(), p.Encoded())
		}
		// A log written before 2026-11-27 holds the segments as objects.
		old, _ := json.Marshal(map[int][]spillSegment{3: tc.segs})
		read = nil
		if err := json.Unmarshal(old, &read); err != nil || read[3] != p {
			t.Fatalf("%s: the old log form %s read as %q (%v), want %q", tc.name, old, read[3].Encoded(), err, p.Encoded())
		}
		if !sameSegments(p, back) {
			t.Errorf("%s: not the same segments as itself", tc.name)
		}
	}
	var none packedSpill
	if none.Len() != 0 || segmentsOf(none) != nil {
		t.Errorf("zero packedSpill: Len %d, Segments %v", none.Len(), segmentsOf(none))
	}
	if err := json.Unmarshal([]byte(`null`), &none); err != nil || none != (packedSpill{}) {
		t.Errorf("null read as %q (%v), want no spill", none.Encoded(), err)
	}
	p := packSpill(mk(1000, contiguous))
	if per := float64(len(p.Encoded())) / 1000; per > 12 {
		t.Errorf("1000 small contiguous segments packed in %d bytes, %.1f a segment; want at most 12", len(p.Encoded()), per)
	}
}

// TestPackedSpillFromLog: a packed spill read from the event log that is
// not one is refused with an error naming what is wrong, never read (At
// would index out of it). The packed format's own refusals are tested in
// mrpb (TestParsePackedSegments).
func TestPackedSpillFromLog(t *testing.T) {
	good := packSpill([]spillSegment{mkSeg(0, 10, 20, 3, 7), mkSeg(10, 300, 900, 40, 8)}).Encoded()
	b64 := func(s string) string { return `"` + base64.StdEncoding.EncodeToString([]byte(s)) + `"` }
	for _, tc := range []struct {
		name, json, err string
	}{
		{"good", b64(good), ""},
		{"empty", `""`, ""},
		{"not base64", `"%%%"`, "illegal base64"},
		{"a number", `12`, "packed spill"},
		{"bad segment array", `[{"Offset":"x"}]`, "spill segments"},
		{"truncated", b64(good[:len(good)-1]), "packed spill: packed segments of 22 bytes: 2 partitions of"},
		{"too wide", b64("\x01\x09\x00" + strings.Repeat("x", 13)), "none may exceed 8 bytes"},
	} {
		var p packedSpill
		err := json.Unmarshal([]byte(tc.json), &p)
		if tc.err == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.err)
		}
	}
}

// mkSeg is a segment: offset, length, raw length, records and crc.
func mkSeg(off, length, raw, records int64, crc uint32) spillSegment {
	return spillSegment{Offset: off, Length: length, RawLength: raw, Records: records, CRC: crc}
}

// segmentsOf is every partition's segment of p, unpacked; nil for the
// zero value.
func segmentsOf(p packedSpill) []spillSegment {
	if p.Encoded() == "" {
		return nil
	}
	out := make([]spillSegment, 0, p.Len())
	for _, s := range p.All() {
		out = append(out, s)
	}
	return out
}
