package jobtracker

import (
	"context"
	"slices"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"

	"gomr/mrpb"
)

// wireServer is the JobTracker as its gRPC server registers it: every call
// is the JobTracker's own but GetMapEvents, whose reply it encodes by hand.
//
// Every shuffling reduce reads every spill event of its job, each with its
// own segment of the spill, so a job of M maps and R reduces has M x R
// events delivered: 20 million for 20,000 maps and 1,000 reduces. Built as
// messages, each delivery allocated a MapEvent and a Segment and went
// through protobuf's reflective marshaling, about a third of the
// JobTracker's CPU in such a job (docs/scaling.md, "map events encoded by
// hand"). The reply's bytes are the same: the events are appended with
// protowire, field by field in field-number order as the marshaler writes
// them, and handed to the marshaler as the reply's unknown fields, which it
// writes as they are. A client decodes them as the events field.
type wireServer struct{ *JobTracker }

// GetMapEvents is JobTracker.GetMapEvents with the reply encoded by hand
// (encodedMapEvents). Its Events field is empty: the events are in its
// unknown fields until the message is marshaled and decoded again.
func (s wireServer) GetMapEvents(ctx context.Context, req *mrpb.MapEventsRequest) (*mrpb.MapEventsResponse, error) {
	evs, err := s.mapEventsFrom(ctx, req)
	if err != nil {
		return nil, err
	}
	if req.Compact {
		return encodedCompactMapEvents(evs, int(req.Reduce), askedAddresses(req)), nil
	}
	return encodedMapEvents(evs, int(req.Reduce)), nil
}

// Field numbers of mrpb.MapEventsResponse, mrpb.MapEvent and mrpb.Segment
// (mrpb/mr.proto); TestEncodedMapEvents checks them against the messages'
// descriptors.
const (
	fieldResponseEvents = 1

	fieldEventKind           = 1
	fieldEventMapTask        = 2
	fieldEventSpill          = 3
	fieldEventFinal          = 4
	fieldEventAttemptID      = 5
	fieldEventShuffleAddress = 6
	fieldEventSegment        = 7
	fieldEventAttempt        = 8
	fieldEventAddress        = 9

	fieldResponseAddresses = 2

	fieldSegmentOffset    = 1
	fieldSegmentLength    = 2
	fieldSegmentRawLength = 3
	fieldSegmentRecords   = 4
	fieldSegmentCRC       = 5
)

// encodedMapEvents is the reply mapEventsReply makes of evs for reduce,
// already encoded, as the reply's unknown fields: proto.Marshal of it
// gives the bytes proto.Marshal of mapEventsReply's gives. Each event is
// its own fields as the log keeps them encoded, then, when its spill is
// not zero, reduce's segment of it (written even when all its fields are
// zero, as a set message field is).
func encodedMapEvents(evs mapEventSlice, reduce int) *mrpb.MapEventsResponse {
	resp := &mrpb.MapEventsResponse{}
	n := evs.Len()
	if n == 0 {
		return resp
	}
	b := make([]byte, 0, len(evs.wire)-evs.start+n*40)
	for i := range n {
		fields := evs.fields(i)
		spill := evs.segs[i]
		if spill == (mrpb.PackedSegments{}) {
			b = protowire.AppendTag(b, fieldResponseEvents, protowire.BytesType)
			b = protowire.AppendBytes(b, fields)
			continue
		}
		seg := spill.At(reduce)
		segSize := segmentSize(seg)
		b = protowire.AppendTag(b, fieldResponseEvents, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(len(fields)+protowire.SizeTag(fieldEventSegment)+protowire.SizeBytes(segSize)))
		b = append(b, fields...)
		b = appendSegment(b, seg, segSize)
	}
	resp.ProtoReflect().SetUnknown(protoreflect.RawFields(b))
	return resp
}

// addressAsk is what a compact request says of the job's shuffle
// addresses it holds (MapEventsRequest.job_addresses).
type addressAsk struct {
	job   bool   // number addresses in the job's table
	table uint64 // the table the asker holds part of
	known int    // how many of its addresses
}

// askedAddresses is req's addressAsk.
func askedAddresses(req *mrpb.MapEventsRequest) addressAsk {
	return addressAsk{job: req.JobAddresses, table: req.AddressTable, known: max(int(req.KnownAddresses), 0)}
}

// encodedCompactMapEvents is encodedMapEvents in the compact form
// (MapEventsRequest.compact, mapEventLog): each event's compact fields,
// its shuffle address as an index plus one, and reduce's segment of its
// spill. The index is into the reply's addresses, which list each address
// the reply's events name once; or, when the asker keeps the job's
// addresses (ask.job), into the job's table, of which the reply sends
// those the asker lacks (mrpb.JobAddresses). MapEventsResponse.Expand, or
// JobAddresses.Expand, of it gives mapEventsReply's events.
func encodedCompactMapEvents(evs mapEventSlice, reduce int, ask addressAsk) *mrpb.MapEventsResponse {
	resp := &mrpb.MapEventsResponse{}
	n := evs.Len()
	if n == 0 {
		return resp
	}
	// A full page without segments is every reduce's: encoded once
	// (compactPages). The reply's unknown fields share its bytes, which
	// nothing changes.
	shared := evs.pages != nil && n == MaxMapEventsPerCall && !slices.ContainsFunc(evs.segs, func(p mrpb.PackedSegments) bool { return p != (mrpb.PackedSegments{}) })
	if shared {
		if pg, ok := evs.pages.get(evs.from, ask.job); ok {
			resp.ProtoReflect().SetUnknown(protoreflect.RawFields(pg.b))
			addJobAddresses(resp, evs, ask, pg.names)
			return resp
		}
	}
	// local[a] is the job's address a's index in the reply's table, plus
	// one (0: not in it yet).
	var local []int32
	if !ask.job {
		local = make([]int32, len(evs.addrNames))
	}
	var names []int32
	named := 0 // with ask.job: the job's addresses up to the last one named
	b := make([]byte, 0, len(evs.compact)-evs.compactStart+n*24)
	for i := range n {
		fields := evs.compactFields(i)
		var addr int32
		if a := evs.addrs[i]; a >= 0 {
			switch {
			case ask.job:
				addr = a + 1
				named = max(named, int(addr))
			case local[a] == 0:
				names = append(names, a)
				local[a] = int32(len(names))
				addr = local[a]
			default:
				addr = local[a]
			}
		}
		size := len(fields) + intSize(fieldEventAddress, int64(addr))
		var seg spillSegment
		segSize := -1
		if spill := evs.segs[i]; spill != (mrpb.PackedSegments{}) {
			seg = spill.At(reduce)
			segSize = segmentSize(seg)
			size += protowire.SizeTag(fieldEventSegment) + protowire.SizeBytes(segSize)
		}
		b = protowire.AppendTag(b, fieldResponseEvents, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(size))
		b = append(b, fields...)
		b = appendInt(b, fieldEventAddress, int64(addr))
		if segSize >= 0 {
			b = appendSegment(b, seg, segSize)
		}
	}
	for _, a := range names {
		b = protowire.AppendTag(b, fieldResponseAddresses, protowire.BytesType)
		b = protowire.AppendString(b, evs.addrNames[a])
	}
	if shared {
		b = b[:len(b):len(b)]
		evs.pages.put(evs.from, ask.job, compactPage{b: b, names: named})
	}
	resp.ProtoReflect().SetUnknown(protoreflect.RawFields(b))
	if ask.job {
		addJobAddresses(resp, evs, ask, named)
	}
	return resp
}

// addJobAddresses adds to resp, a reply numbering addresses in the job's
// table whose events name its first named addresses, the table's number
// and those of them the asker lacks (the log's own strings).
func addJobAddresses(resp *mrpb.MapEventsResponse, evs mapEventSlice, ask addressAsk, named int) {
	if !ask.job {
		return
	}
	known := ask.known
	if ask.table != evs.addrTable {
		known = 0
	}
	known = min(known, len(evs.addrNames))
	resp.AddressTable, resp.FirstAddress = evs.addrTable, int32(known)
	if named > known {
		resp.Addresses = evs.addrNames[known:named:named]
	}
}

// appendSegment appends seg as an event's segment field, of size its
// encoding's length (segmentSize).
func appendSegment(b []byte, seg spillSegment, size int) []byte {
	b = protowire.AppendTag(b, fieldEventSegment, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(size))
	b = appendInt(b, fieldSegmentOffset, seg.Offset)
	b = appendInt(b, fieldSegmentLength, seg.Length)
	b = appendInt(b, fieldSegmentRawLength, seg.RawLength)
	b = appendInt(b, fieldSegmentRecords, seg.Records)
	return appendInt(b, fieldSegmentCRC, int64(seg.CRC))
}

// segmentSize is the length of seg's encoding as a Segment message.
func segmentSize(seg spillSegment) int {
	return intSize(fieldSegmentOffset, seg.Offset) + intSize(fieldSegmentLength, seg.Length) +
		intSize(fieldSegmentRawLength, seg.RawLength) + intSize(fieldSegmentRecords, seg.Records) +
		intSize(fieldSegmentCRC, int64(seg.CRC))
}

// appendString appends field num of a string, unless it is empty.
func appendString(b []byte, num protowire.Number, v string) []byte {
	if v == "" {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendString(b, v)
}

// appendInt appends field num of an integer (int32, int64 or uint32: a
// negative int32 or int64 as its ten-byte two's complement, as protobuf
// encodes them), unless it is 0.
func appendInt(b []byte, num protowire.Number, v int64) []byte {
	if v == 0 {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.VarintType)
	return protowire.AppendVarint(b, uint64(v))
}

// intSize is the length appendInt gives field num of v.
func intSize(num protowire.Number, v int64) int {
	if v == 0 {
		return 0
	}
	return protowire.SizeTag(num) + protowire.SizeVarint(uint64(v))
}
