package jobtracker

// A map attempt's announced spills are kept until its job retires: the
// winning attempt's, to answer reduces' map events (one segment each), and
// any attempt's, to compare a re-run or a later attempt's announcement with
// (sameSegments). A job of M maps, S spills and R reduces keeps M*S*R
// segments. As protobuf messages behind pointers they took 88 bytes each,
// all of it for the collector to scan; as spillSegment structs, 40 bytes
// without a pointer. A spill's segments are now kept packed (packedSpill):
// varints, about 11 bytes a segment for small segments, with an index for
// a reduce's own segment.

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"iter"
	"math/bits"

	"gomr/mrpb"
)

// spillSegment is one partition's segment of an announced spill: where it
// lies in the spill's data file and what it holds. Event logs written
// before 2026-11-27 hold segments as JSON objects with these field names
// (packedSpill.UnmarshalJSON reads them).
type spillSegment struct {
	Offset, Length, RawLength, Records int64
	CRC                                uint32
}

// proto is the segment as a map event carries it.
func (s spillSegment) proto() *mrpb.Segment {
	return &mrpb.Segment{Offset: s.Offset, Length: s.Length, RawLength: s.RawLength, Records: s.Records, Crc: s.CRC}
}

// segmentsOfAnnouncement is an announcement's segments, packed, or an
// error naming the first that cannot be one (a negative offset, length or
// count, or none).
func segmentsOfAnnouncement(segs []*mrpb.Segment) (packedSpill, error) {
	out := make([]spillSegment, len(segs))
	for i, sg := range segs {
		if sg == nil {
			return packedSpill{}, fmt.Errorf("partition %d has no segment", i)
		}
		if sg.Offset < 0 || sg.Length < 0 || sg.RawLength < 0 || sg.Records < 0 {
			return packedSpill{}, fmt.Errorf("partition %d's segment has offset %d, length %d, raw length %d, %d records: none may be negative",
				i, sg.Offset, sg.Length, sg.RawLength, sg.Records)
		}
		out[i] = spillSegment{Offset: sg.Offset, Length: sg.Length, RawLength: sg.RawLength, Records: sg.Records, CRC: sg.Crc}
	}
	return packSpill(out), nil
}

// sameSegments tells whether two announcements of a spill hold the same
// output: the same records, lengths and checksum in every partition (the
// offsets may differ: they do not change what a reduce reads).
func sameSegments(a, b packedSpill) bool {
	if a.Len() != b.Len() {
		return false
	}
	if a.b == b.b {
		return true
	}
	for i, x := range a.All() {
		y := b.At(i)
		if x.Length != y.Length || x.RawLength != y.RawLength || x.Records != y.Records || x.CRC != y.CRC {
			return false
		}
	}
	return true
}

// packedSpill is all partitions' segments of one spill, immutable, in one
// string that holds no pointer: each field in as few bytes as the spill's
// largest value of it needs, so that every segment takes the same bytes
// and a reduce's own is read without decoding the others (GetMapEvents
// reads one segment of every spill for each reduce):
//
//	uvarint n                      the number of partitions
//	byte    wOffset | wLength<<4   the fields' widths in bytes, 0-8
//	byte    wRaw | wRecords<<4
//	n segments, each: offset, length, raw length, records, little-endian
//	        in their widths, then the crc in 4 bytes
//
// A spill of a few MiB cut in 200 segments of a few KiB takes 3 + 2 + 2 +
// 2 + 4 = 13 bytes a segment, against 40 as spillSegment structs. The zero
// value is "no spill"; a spill of no partitions is not zero.
type packedSpill struct{ b string }

// packSpill packs segs.
func packSpill(segs []spillSegment) packedSpill {
	var w [4]int
	for _, s := range segs {
		for f, v := range [4]int64{s.Offset, s.Length, s.RawLength, s.Records} {
			w[f] = max(w[f], (bits.Len64(uint64(v))+7)/8)
		}
	}
	size := w[0] + w[1] + w[2] + w[3] + 4
	b := make([]byte, 0, binary.MaxVarintLen64+2+len(segs)*size)
	b = binary.AppendUvarint(b, uint64(len(segs)))
	b = append(b, byte(w[0]|w[1]<<4), byte(w[2]|w[3]<<4))
	for _, s := range segs {
		for f, v := range [4]int64{s.Offset, s.Length, s.RawLength, s.Records} {
			for k := range w[f] {
				b = append(b, byte(uint64(v)>>(8*k)))
			}
		}
		b = binary.LittleEndian.AppendUint32(b, s.CRC)
	}
	return packedSpill{string(b)}
}

// layout is the number of partitions, the fields' widths, the size of a
// segment and where the first begins.
func (p packedSpill) layout() (n int, w [4]int, size, first int) {
	if p.b == "" {
		return 0, w, 0, 0
	}
	v, k := uint64(p.b[0]), 1
	if v >= 0x80 { // 128 partitions or more
		v, k = binary.Uvarint([]byte(p.b[:min(len(p.b), binary.MaxVarintLen64)]))
	}
	w = [4]int{int(p.b[k] & 15), int(p.b[k] >> 4), int(p.b[k+1] & 15), int(p.b[k+1] >> 4)}
	return int(v), w, w[0] + w[1] + w[2] + w[3] + 4, k + 2
}

// Len is the number of partitions.
func (p packedSpill) Len() int {
	n, _, _, _ := p.layout()
	return n
}

// At is partition i's segment; i must be below Len.
func (p packedSpill) At(i int) spillSegment {
	n, w, size, first := p.layout()
	if i < 0 || i >= n {
		panic(fmt.Sprintf("packedSpill.At(%d) of %d partitions", i, n))
	}
	return p.segment(w, first+i*size)
}

// segment decodes the segment at p.b[pos:], whose fields have widths w.
func (p packedSpill) segment(w [4]int, pos int) spillSegment {
	var v [4]uint64
	for f := range v {
		for k := range w[f] {
			v[f] |= uint64(p.b[pos+k]) << (8 * k)
		}
		pos += w[f]
	}
	crc := uint32(p.b[pos]) | uint32(p.b[pos+1])<<8 | uint32(p.b[pos+2])<<16 | uint32(p.b[pos+3])<<24
	return spillSegment{Offset: int64(v[0]), Length: int64(v[1]), RawLength: int64(v[2]), Records: int64(v[3]), CRC: crc}
}

// All yields every partition's segment in order.
func (p packedSpill) All() iter.Seq2[int, spillSegment] {
	return func(yield func(int, spillSegment) bool) {
		n, w, size, first := p.layout()
		for i := range n {
			if !yield(i, p.segment(w, first+i*size)) {
				return
			}
		}
	}
}

// MarshalText is the spill as the event log records it: its packed bytes
// in standard base64 (encoding/json writes it as a JSON string, about a
// quarter of the segments' array of objects, which was most of a map's
// line in a job with many reduces).
func (p packedSpill) MarshalText() ([]byte, error) {
	return base64.StdEncoding.AppendEncode(nil, []byte(p.b)), nil
}

// UnmarshalJSON reads a spill of the event log: a string as MarshalText
// writes it, checked (packedSpillOf), or the array of segments that logs
// written before 2026-11-27 hold; null is no spill.
func (p *packedSpill) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*p = packedSpill{}
		return nil
	}
	if len(b) > 0 && b[0] == '[' {
		var segs []spillSegment
		if err := json.Unmarshal(b, &segs); err != nil {
			return fmt.Errorf("spill segments: %w", err)
		}
		*p = packSpill(segs)
		return nil
	}
	var text string
	if err := json.Unmarshal(b, &text); err != nil {
		return fmt.Errorf("packed spill: %w", err)
	}
	raw, err := base64.StdEncoding.DecodeString(text)
	if err != nil {
		return fmt.Errorf("packed spill: %w", err)
	}
	q, err := packedSpillOf(string(raw))
	if err != nil {
		return err
	}
	*p = q
	return nil
}

// packedSpillOf is b as a packed spill, or an error saying why it is not
// one (a count that does not parse, a field wider than 8 bytes, or a
// length that is not the count's segments exactly); "" is no spill.
func packedSpillOf(b string) (packedSpill, error) {
	if b == "" {
		return packedSpill{}, nil
	}
	n, k := binary.Uvarint([]byte(b[:min(len(b), binary.MaxVarintLen64)]))
	if k <= 0 || len(b) < k+2 {
		return packedSpill{}, fmt.Errorf("packed spill of %d bytes: no partition count and widths", len(b))
	}
	p := packedSpill{b}
	_, w, size, first := p.layout()
	if max(w[0], w[1], w[2], w[3]) > 8 {
		return packedSpill{}, fmt.Errorf("packed spill: field widths %v, none may exceed 8 bytes", w)
	}
	if n > uint64(len(b)) || uint64(len(b)-first) != n*uint64(size) {
		return packedSpill{}, fmt.Errorf("packed spill of %d bytes: %d partitions of %d bytes need %d after the header",
			len(b), n, size, n*uint64(size))
	}
	return p, nil
}

// hasSpill tells whether map attempt a announced spill k.
func (a *attempt) hasSpill(k int) bool {
	_, ok := a.spills[k]
	return ok
}
