package jobtracker

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"unicode/utf8"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"gomr/mrpb"
	"gomr/partitions"
)

// TestEncodedMapEvents: the reply encoded by hand is, byte for byte, the
// marshaled reply built as messages, and decodes to it, for events of
// every kind, with and without a segment, with fields at zero, negative
// and at their largest; and the field numbers are the messages'.
func TestEncodedMapEvents(t *testing.T) {
	fields := []struct {
		msg  proto.Message
		name protoreflect.Name
		num  int
	}{
		{&mrpb.MapEventsResponse{}, "events", fieldResponseEvents},
		{&mrpb.MapEvent{}, "kind", fieldEventKind},
		{&mrpb.MapEvent{}, "map_task", fieldEventMapTask},
		{&mrpb.MapEvent{}, "spill", fieldEventSpill},
		{&mrpb.MapEvent{}, "final", fieldEventFinal},
		{&mrpb.MapEvent{}, "attempt_id", fieldEventAttemptID},
		{&mrpb.MapEvent{}, "shuffle_address", fieldEventShuffleAddress},
		{&mrpb.MapEvent{}, "segment", fieldEventSegment},
		{&mrpb.MapEvent{}, "attempt", fieldEventAttempt},
		{&mrpb.MapEvent{}, "address", fieldEventAddress},
		{&mrpb.MapEventsResponse{}, "addresses", fieldResponseAddresses},
		{&mrpb.Segment{}, "offset", fieldSegmentOffset},
		{&mrpb.Segment{}, "length", fieldSegmentLength},
		{&mrpb.Segment{}, "raw_length", fieldSegmentRawLength},
		{&mrpb.Segment{}, "records", fieldSegmentRecords},
		{&mrpb.Segment{}, "crc", fieldSegmentCRC},
	}
	for _, f := range fields {
		fd := f.msg.ProtoReflect().Descriptor().Fields().ByName(f.name)
		if fd == nil || int(fd.Number()) != f.num {
			t.Errorf("%s.%s: the encoder writes field %d, the message has %v", f.msg.ProtoReflect().Descriptor().Name(), f.name, f.num, fd)
		}
	}

	spill := packSpill([]spillSegment{
		{Offset: 0, Length: 825, RawLength: 1000, Records: 8, CRC: 0xdeadbeef},
		{}, // every field zero: still a segment
		{Offset: 1 << 40, Length: math.MaxInt64, RawLength: math.MaxInt64 - 1, Records: 1 << 33, CRC: math.MaxUint32},
	})
	ev := func(kind string, task, spill int32, final bool, attempt, addr string) *mrpb.MapEvent {
		return &mrpb.MapEvent{Kind: kind, MapTask: task, Spill: spill, Final: final, AttemptId: attempt, ShuffleAddress: addr,
			// A segment in the log's own event is not the reduce's: the
			// reply leaves it out.
			Segment: &mrpb.Segment{Length: 99}}
	}
	tests := []struct {
		name string
		evs  []*mrpb.MapEvent
		segs []packedSpill
	}{
		{"none", nil, nil},
		{"spills ready", []*mrpb.MapEvent{
			ev("SPILL_READY", 0, 0, false, "attempt_202611271200_0001_m_000000_0", "10.0.0.1:50060"),
			ev("SPILL_READY", 7, 3, true, "attempt_202611271200_0001_m_000007_1", "host-7:50060"),
		}, []packedSpill{spill, spill}},
		{"obsolete and added, without segments", []*mrpb.MapEvent{
			ev("MAP_OBSOLETE", 5, 0, false, "attempt_202611271200_0001_m_000005_0", ""),
			ev("MAPS_ADDED", 100000, 0, false, "", ""),
		}, []packedSpill{{}, {}}},
		{"attempts not by number, and addresses again", []*mrpb.MapEvent{
			ev("SPILL_READY", 7, 0, false, "attempt_202611271200_0001_m_000007_01", "host-7:50060"),
			ev("SPILL_READY", 7, 1, false, "attempt_202611271200_0002_m_000007_1", "10.0.0.1:50060"),
			ev("SPILL_READY", 8, 0, true, "attempt_202611271200_0001_m_000007_1", "host-7:50060"),
			ev("MAP_OBSOLETE", 7, 0, false, "", ""),
			ev("SPILL_READY", 1234567, 2, true, "attempt_202611271200_0001_m_1234567_1000", "host-7:50060"),
		}, []packedSpill{spill, {}, spill, {}, spill}},
		{"negative and largest numbers", []*mrpb.MapEvent{
			ev("SPILL_READY", -1, math.MinInt32, true, "a", "b"),
			ev("SPILL_READY", math.MaxInt32, math.MaxInt32, false, "", ""),
			ev("", 0, 0, false, "", ""),
		}, []packedSpill{spill, {}, spill}},
	}
	for _, tc := range tests {
		for reduce := range 3 {
			t.Run(fmt.Sprintf("%s/reduce %d", tc.name, reduce), func(t *testing.T) {
				checkEncodedMapEvents(t, tc.evs, tc.segs, reduce)
			})
		}
	}
}

// testEventsJob is the job of the events of the map event log's tests.
const testEventsJob = "job_202611271200_0001"

// checkEncodedMapEvents fails t unless, for every run of the events kept
// in a map event log, encodedMapEvents marshals to the bytes of the reply
// built from the events' messages (each with reduce's segment of its
// spill and no other), and decodes to it, and mapEventsReply is that
// reply; and the compact reply (encodedCompactMapEvents) decodes to it
// once expanded (mrpb.MapEventsResponse.Expand), in fewer bytes when it
// holds an event. The compact form has no empty kind (it stands for
// SPILL_READY; the JobTracker logs none): runs with one are not checked
// compact.
func checkEncodedMapEvents(t *testing.T, evs []*mrpb.MapEvent, segs []packedSpill, reduce int) {
	t.Helper()
	var log mapEventLog
	for i, ev := range evs {
		log.append(testEventsJob, ev, segs[i])
	}
	for from := range len(evs) + 1 {
		for to := from; to <= len(evs); to++ {
			want := &mrpb.MapEventsResponse{}
			for i := from; i < to; i++ {
				ev := evs[i]
				out := &mrpb.MapEvent{Kind: ev.Kind, MapTask: ev.MapTask, Spill: ev.Spill, Final: ev.Final, AttemptId: ev.AttemptId, ShuffleAddress: ev.ShuffleAddress}
				if segs[i] != (packedSpill{}) {
					s := segs[i].At(reduce)
					out.Segment = &mrpb.Segment{Offset: s.Offset, Length: s.Length, RawLength: s.RawLength, Records: s.Records, Crc: s.CRC}
				}
				want.Events = append(want.Events, out)
			}
			wantBytes, err := proto.MarshalOptions{Deterministic: true}.Marshal(want)
			if err != nil {
				t.Fatal(err)
			}
			gotBytes, err := proto.Marshal(encodedMapEvents(log.slice(from, to), reduce))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(gotBytes, wantBytes) {
				t.Fatalf("events %d to %d encoded by hand:\n%x\nas messages:\n%x", from, to, gotBytes, wantBytes)
			}
			var got mrpb.MapEventsResponse
			if err := proto.Unmarshal(gotBytes, &got); err != nil {
				t.Fatal(err)
			}
			if !proto.Equal(&got, want) {
				t.Fatalf("events %d to %d decoded as %v, want %v", from, to, &got, want)
			}
			if msgs := mapEventsReply(log.slice(from, to), reduce); !proto.Equal(msgs, want) {
				t.Fatalf("events %d to %d as messages: %v, want %v", from, to, msgs, want)
			}
			if slices.ContainsFunc(evs[from:to], func(ev *mrpb.MapEvent) bool { return ev.Kind == "" }) {
				continue
			}
			checkJobAddresses(t, &log, from, to, reduce, want)
			compactBytes, err := proto.Marshal(encodedCompactMapEvents(log.slice(from, to), reduce, addressAsk{}))
			if err != nil {
				t.Fatal(err)
			}
			var compact mrpb.MapEventsResponse
			if err := proto.Unmarshal(compactBytes, &compact); err != nil {
				t.Fatal(err)
			}
			if err := compact.Expand(testEventsJob); err != nil {
				t.Fatalf("events %d to %d: %v", from, to, err)
			}
			if !proto.Equal(&compact, want) {
				t.Fatalf("events %d to %d compact, expanded: %v, want %v", from, to, &compact, want)
			}
			if to > from && len(compactBytes) >= len(wantBytes) && !slices.ContainsFunc(evs[from:to], func(ev *mrpb.MapEvent) bool { return ev.AttemptId == "" || ev.Kind != "SPILL_READY" }) {
				t.Errorf("events %d to %d: %d bytes compact, %d whole", from, to, len(compactBytes), len(wantBytes))
			}
		}
	}
}

// checkJobAddresses fails t unless the compact reply of events [from, to)
// of log numbering addresses in the job's table decodes to want once
// expanded by a reduce's mrpb.JobAddresses holding none of the table,
// the table's addresses the events before from named (it read them), or
// some of another table (the log's from before a restart); and unless
// the addresses the reduce then holds are the first of the log's, among
// them every one the run names.
func checkJobAddresses(t *testing.T, log *mapEventLog, from, to, reduce int, want *mrpb.MapEventsResponse) {
	t.Helper()
	if slices.ContainsFunc(want.Events, func(ev *mrpb.MapEvent) bool { return ev.Kind == "" }) {
		return
	}
	read := func(ja *mrpb.JobAddresses, from, to int) *mrpb.MapEventsResponse {
		t.Helper()
		req := &mrpb.MapEventsRequest{}
		ja.Ask(req)
		if !req.Compact || !req.JobAddresses || req.AddressTable != ja.Table || int(req.KnownAddresses) != len(ja.Names) {
			t.Fatalf("JobAddresses.Ask: %v", req)
		}
		b, err := proto.Marshal(encodedCompactMapEvents(log.slice(from, to), reduce, askedAddresses(req)))
		if err != nil {
			t.Fatal(err)
		}
		var got mrpb.MapEventsResponse
		if err := proto.Unmarshal(b, &got); err != nil {
			t.Fatal(err)
		}
		if err := ja.Expand(&got, testEventsJob); err != nil {
			t.Fatalf("events %d to %d: %v", from, to, err)
		}
		return &got
	}
	for _, held := range []string{"none", "the earlier events'", "another table's"} {
		var ja mrpb.JobAddresses
		switch held {
		case "the earlier events'":
			read(&ja, 0, from)
		case "another table's":
			ja = mrpb.JobAddresses{Table: log.addrTable + 2, Names: []string{"stale:1", "stale:2"}}
		}
		if got := read(&ja, from, to); !proto.Equal(got, want) {
			t.Fatalf("events %d to %d, holding %s addresses: %v, want %v", from, to, held, got, want)
		}
		if to == from {
			continue // an empty reply leaves what the reduce holds as it was
		}
		if ja.Table != log.addrTable || len(ja.Names) > len(log.addrNames) || !slices.Equal(ja.Names, log.addrNames[:len(ja.Names)]) {
			t.Fatalf("events %d to %d, holding %s addresses: holds table %d %q, want %d and a prefix of %q", from, to, held, ja.Table, ja.Names, log.addrTable, log.addrNames)
		}
		for _, ev := range want.Events {
			if ev.ShuffleAddress != "" && !slices.Contains(ja.Names, ev.ShuffleAddress) {
				t.Fatalf("events %d to %d, holding %s addresses: %q not held (%q)", from, to, held, ev.ShuffleAddress, ja.Names)
			}
		}
	}
}

// FuzzEncodedMapEvents: for any one event and segment, the reply encoded
// by hand is the reply built as messages (make fuzz).
func FuzzEncodedMapEvents(f *testing.F) {
	f.Add("SPILL_READY", int32(3), int32(1), true, "attempt_x_m_000003_0", "host:50060", int64(100), int64(825), int64(900), int64(8), uint32(7), true)
	f.Add("MAP_OBSOLETE", int32(-1), int32(0), false, "", "", int64(0), int64(0), int64(0), int64(0), uint32(0), false)
	f.Fuzz(func(t *testing.T, kind string, task, spillIndex int32, final bool, attempt, addr string,
		offset, length, raw, records int64, crc uint32, hasSegment bool) {
		if offset < 0 || length < 0 || raw < 0 || records < 0 {
			t.Skip("a packed spill's fields are not negative (segmentsOfAnnouncement refuses them)")
		}
		if !utf8.ValidString(kind) || !utf8.ValidString(attempt) || !utf8.ValidString(addr) {
			t.Skip("an event's strings are UTF-8: ids the JobTracker makes, and addresses gRPC decoded as proto3 strings")
		}
		var spill packedSpill
		if hasSegment {
			spill = packSpill([]spillSegment{{}, {Offset: offset, Length: length, RawLength: raw, Records: records, CRC: crc}})
		}
		evs := []*mrpb.MapEvent{{Kind: kind, MapTask: task, Spill: spillIndex, Final: final, AttemptId: attempt, ShuffleAddress: addr}}
		for reduce := range 2 {
			checkEncodedMapEvents(t, evs, []packedSpill{spill}, reduce)
		}
	})
}

// BenchmarkMapEventsReply: a reply of MaxMapEventsPerCall events of a job
// of 1,000 reduces, built and marshaled as messages, encoded by hand, and
// encoded compact; with the bytes an event takes on the wire.
func BenchmarkMapEventsReply(b *testing.B) {
	segs := make([]spillSegment, 1000)
	for i := range segs {
		segs[i] = spillSegment{Offset: int64(i) << 20, Length: 1 << 20, RawLength: 2 << 20, Records: 10000, CRC: uint32(i * 7919)}
	}
	var log mapEventLog
	for i := range MaxMapEventsPerCall {
		log.append(testEventsJob, &mrpb.MapEvent{Kind: "SPILL_READY", MapTask: int32(i), Final: true,
			AttemptId: fmt.Sprintf("attempt_202611271200_0001_m_%06d_0", i), ShuffleAddress: "lg-host-00042:50060"}, packSpill(segs))
	}
	evs := log.slice(0, log.Len())
	for _, bc := range []struct {
		name  string
		reply func() *mrpb.MapEventsResponse
	}{
		{"messages", func() *mrpb.MapEventsResponse { return mapEventsReply(evs, 500) }},
		{"encoded", func() *mrpb.MapEventsResponse { return encodedMapEvents(evs, 500) }},
		{"compact", func() *mrpb.MapEventsResponse { return encodedCompactMapEvents(evs, 500, addressAsk{}) }},
		{"compact, the job's addresses held", func() *mrpb.MapEventsResponse {
			return encodedCompactMapEvents(evs, 500, addressAsk{job: true, table: evs.addrTable, known: len(evs.addrNames)})
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			var n int
			for b.Loop() {
				out, err := proto.Marshal(bc.reply())
				if err != nil {
					b.Fatal(err)
				}
				n = len(out)
			}
			b.ReportMetric(float64(n)/MaxMapEventsPerCall, "bytes/event")
		})
	}
}

// BenchmarkMapEventsPaging: a reduce reading the events of a job of
// 100,000 maps announced by spills (no segments) from 10,000 trackers, page
// by page, with the addresses listed in each page or kept from the job's
// table (mrpb.JobAddresses); the pages are the log's shared ones, as a
// thousand reduces get them. The bytes a reduce is sent for all of them.
func BenchmarkMapEventsPaging(b *testing.B) {
	const maps, trackers = 100_000, 10_000
	var log mapEventLog
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range maps {
		log.append(testEventsJob, &mrpb.MapEvent{Kind: "SPILL_READY", MapTask: int32(i), Final: true,
			AttemptId: mrpb.MapAttemptID(testEventsJob, i, 0), ShuffleAddress: fmt.Sprintf("lg-host-%05d:50060", rng.IntN(trackers))}, packedSpill{})
	}
	for _, job := range []bool{false, true} {
		b.Run(fmt.Sprintf("job_table=%v", job), func(b *testing.B) {
			b.ReportAllocs()
			var n int
			for b.Loop() {
				n = 0
				var ja mrpb.JobAddresses
				for from := 0; from < maps; from += MaxMapEventsPerCall {
					req := &mrpb.MapEventsRequest{Compact: true}
					if job {
						ja.Ask(req)
					}
					resp := encodedCompactMapEvents(log.slice(from, min(from+MaxMapEventsPerCall, maps)), 0, askedAddresses(req))
					out, err := proto.Marshal(resp)
					if err != nil {
						b.Fatal(err)
					}
					n += len(out)
					if job {
						// What the reduce holds afterwards, without decoding
						// the reply: the addresses up to its last.
						ja.Table, ja.Names = resp.AddressTable, log.addrNames[:max(len(ja.Names), int(resp.FirstAddress)+len(resp.Addresses))]
					}
				}
			}
			b.ReportMetric(float64(n), "bytes/reduce")
		})
	}
}

// TestMapAttemptIDsByNumber: the JobTracker's map attempt ids are the ones
// mrpb.MapAttemptID gives, so that compact replies name them by number.
func TestMapAttemptIDsByNumber(t *testing.T) {
	j := &job{id: testEventsJob}
	for _, c := range []struct{ index, n int }{{0, 0}, {7, 1}, {123456, 1002}, {1234567, 3}} {
		tk := &task{job: j, typ: partitions.Map, index: c.index}
		id := attemptID(tk, c.n)
		if want := mrpb.MapAttemptID(j.id, c.index, c.n); id != want {
			t.Errorf("attempt %d of map %d: %q, mrpb.MapAttemptID gives %q", c.n, c.index, id, want)
		}
		if n, ok := attemptNumber(j.id, &mrpb.MapEvent{MapTask: int32(c.index), AttemptId: id}); !ok || n != c.n {
			t.Errorf("attemptNumber of %q: %d, %v", id, n, ok)
		}
	}
}

// TestCompactPagesShared: a full page of events without segments is
// encoded once and its bytes shared by every reduce's reply; a page that
// is not full, or whose spills carry segments (each reduce its own), is
// encoded for each reply; every reply expands to the events.
func TestCompactPagesShared(t *testing.T) {
	spill := packSpill([]spillSegment{{Length: 10, Records: 1, CRC: 7}, {Length: 20, Records: 2, CRC: 8}})
	for _, tc := range []struct {
		name       string
		events     int
		segs       bool
		wantShared bool
	}{
		{"full page, spills only", MaxMapEventsPerCall + 5, false, true},
		{"full page with segments", MaxMapEventsPerCall, true, false},
		{"short page", MaxMapEventsPerCall - 1, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var log mapEventLog
			var evs []*mrpb.MapEvent
			for i := range tc.events {
				ev := &mrpb.MapEvent{Kind: "SPILL_READY", MapTask: int32(i), Final: true,
					AttemptId: mrpb.MapAttemptID(testEventsJob, i, i%3), ShuffleAddress: fmt.Sprintf("h%d:50060", i%7)}
				var segs packedSpill
				if tc.segs {
					segs = spill
				}
				log.append(testEventsJob, ev, segs)
				evs = append(evs, ev)
			}
			to := min(tc.events, MaxMapEventsPerCall)
			for _, job := range []bool{false, true} {
				var raws [][]byte
				// Two reduces, and the second asks again holding the job's
				// addresses: all share the page, each with the addresses it
				// lacks (in the job's form).
				jas := []*mrpb.JobAddresses{{}, {}, {}}
				for k, reduce := range []int{0, 1, 1} {
					req := &mrpb.MapEventsRequest{Compact: true}
					if job {
						jas[k] = jas[reduce]
						jas[k].Ask(req)
					}
					resp := encodedCompactMapEvents(log.slice(0, to), reduce, askedAddresses(req))
					raws = append(raws, resp.ProtoReflect().GetUnknown())
					if job && k == 2 && len(resp.Addresses) != 0 {
						t.Errorf("a reduce holding the job's addresses was sent %d again", len(resp.Addresses))
					}
					b, err := proto.Marshal(resp)
					if err != nil {
						t.Fatal(err)
					}
					var got mrpb.MapEventsResponse
					if err := proto.Unmarshal(b, &got); err != nil || jas[k].Expand(&got, testEventsJob) != nil || len(got.Events) != to {
						t.Fatalf("reduce %d: %d events, %v", reduce, len(got.Events), err)
					}
					for i, ev := range got.Events {
						if ev.AttemptId != evs[i].AttemptId || ev.ShuffleAddress != evs[i].ShuffleAddress || (ev.Segment != nil) != tc.segs {
							t.Fatalf("reduce %d, event %d: %v, want %v", reduce, i, ev, evs[i])
						}
						if tc.segs && ev.Segment.Length != spill.At(reduce).Length {
							t.Fatalf("reduce %d, event %d: segment %v", reduce, i, ev.Segment)
						}
					}
				}
				if shared := &raws[0][0] == &raws[1][0] && &raws[1][0] == &raws[2][0]; shared != tc.wantShared {
					t.Errorf("job's addresses %v: the replies share their bytes: %v, want %v", job, shared, tc.wantShared)
				}
			}
		})
	}
}
