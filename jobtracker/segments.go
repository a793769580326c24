package jobtracker

// A map attempt's announced spills are kept until its job retires: the
// winning attempt's, to answer reduces' map events (one segment each), and
// any attempt's, to compare a re-run or a later attempt's announcement with
// (sameSegments). A job of M maps, S spills and R reduces keeps M*S*R
// segments. As protobuf messages behind pointers they took 88 bytes each,
// all of it for the collector to scan; spillSegment takes 40 and has no
// pointer.

import (
	"fmt"

	"gomr/mrpb"
)

// spillSegment is one partition's segment of an announced spill: where it
// lies in the spill's data file and what it holds. The event log records
// it as it is (recovery.go).
type spillSegment struct {
	Offset, Length, RawLength, Records int64
	CRC                                uint32
}

// proto is the segment as a map event carries it.
func (s spillSegment) proto() *mrpb.Segment {
	return &mrpb.Segment{Offset: s.Offset, Length: s.Length, RawLength: s.RawLength, Records: s.Records, Crc: s.CRC}
}

// segmentsOfAnnouncement is an announcement's segments, or an error
// naming the first that cannot be one (a negative offset, length or
// count).
func segmentsOfAnnouncement(segs []*mrpb.Segment) ([]spillSegment, error) {
	out := make([]spillSegment, len(segs))
	for i, sg := range segs {
		if sg == nil {
			return nil, fmt.Errorf("partition %d has no segment", i)
		}
		if sg.Offset < 0 || sg.Length < 0 || sg.RawLength < 0 || sg.Records < 0 {
			return nil, fmt.Errorf("partition %d's segment has offset %d, length %d, raw length %d, %d records: none may be negative",
				i, sg.Offset, sg.Length, sg.RawLength, sg.Records)
		}
		out[i] = spillSegment{Offset: sg.Offset, Length: sg.Length, RawLength: sg.RawLength, Records: sg.Records, CRC: sg.Crc}
	}
	return out, nil
}

// sameSegments tells whether two announcements of a spill hold the same
// output: the same records, lengths and checksum in every partition (the
// offsets may differ: they do not change what a reduce reads).
func sameSegments(a, b []spillSegment) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.Length != y.Length || x.RawLength != y.RawLength || x.Records != y.Records || x.CRC != y.CRC {
			return false
		}
	}
	return true
}
