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
	"encoding/binary"
	"encoding/json"
	"fmt"
	"iter"

	"gomr/mrpb"
)

// spillSegment is one partition's segment of an announced spill: where it
// lies in the spill's data file and what it holds. The event log records
// it with these field names (recovery.go).
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
	next, stop := iter.Pull2(b.All())
	defer stop()
	for _, x := range a.All() {
		_, y, _ := next()
		if x.Length != y.Length || x.RawLength != y.RawLength || x.Records != y.Records || x.CRC != y.CRC {
			return false
		}
	}
	return true
}

// packedIndexEvery is how many partitions' segments a packed spill's index
// entry covers: reading one segment decodes at most this many.
const packedIndexEvery = 8

// packedSpill is all partitions' segments of one spill, immutable, in one
// string that holds no pointer:
//
//	uvarint n                        the number of partitions
//	uint32 LE × (ceil(n/16) - 1)     where segments 16, 32, ... begin,
//	                                 from the first segment's start
//	n segments, each:
//	  varint  offset - previous end  (the previous segment's offset +
//	                                 length; 0 for segments 0, 16, 32, ...;
//	                                 in two's complement, wrapping)
//	  uvarint length, raw length, records
//	  uint32 LE crc
//
// A spill's segments usually follow one another in its file, so the
// offset costs a byte; small segments take about 11 bytes in all, against
// 40 as spillSegment structs. The zero value is "no spill"; a spill of no
// partitions is not zero.
type packedSpill struct{ b string }

// packSpill packs segs.
func packSpill(segs []spillSegment) packedSpill {
	n := len(segs)
	idx := max(0, (n+packedIndexEvery-1)/packedIndexEvery-1)
	b := make([]byte, 0, binary.MaxVarintLen64+4*idx+12*n)
	b = binary.AppendUvarint(b, uint64(n))
	head := len(b)
	b = append(b, make([]byte, 4*idx)...)
	body := len(b)
	var end int64
	for i, s := range segs {
		if i%packedIndexEvery == 0 {
			end = 0
			if i > 0 {
				binary.LittleEndian.PutUint32(b[head+4*(i/packedIndexEvery-1):], uint32(len(b)-body))
			}
		}
		b = binary.AppendVarint(b, int64(uint64(s.Offset)-uint64(end)))
		b = binary.AppendUvarint(b, uint64(s.Length))
		b = binary.AppendUvarint(b, uint64(s.RawLength))
		b = binary.AppendUvarint(b, uint64(s.Records))
		b = binary.LittleEndian.AppendUint32(b, s.CRC)
		end = int64(uint64(s.Offset) + uint64(s.Length))
	}
	return packedSpill{string(b)}
}

// Len is the number of partitions.
func (p packedSpill) Len() int {
	n, _ := p.header()
	return n
}

// header is the number of partitions and where the index begins.
func (p packedSpill) header() (n, head int) {
	if p.b == "" {
		return 0, 0
	}
	v, k := uvarintString(p.b)
	return int(v), k
}

// At is partition i's segment; i must be below Len.
func (p packedSpill) At(i int) spillSegment {
	n, head := p.header()
	if i < 0 || i >= n {
		panic(fmt.Sprintf("packedSpill.At(%d) of %d partitions", i, n))
	}
	idx := max(0, (n+packedIndexEvery-1)/packedIndexEvery-1)
	pos := head + 4*idx
	if a := i / packedIndexEvery; a > 0 {
		j := head + 4*(a-1)
		pos += int(le32(p.b[j:]))
	}
	var end int64
	for range i % packedIndexEvery {
		end, pos = skipSegment(p.b, pos, end)
	}
	s, _ := decodeSegment(p.b, pos, end)
	return s
}

// skipSegment passes over the segment at b[pos:], as decodeSegment, and
// returns only where it ended in the spill's file and where the next
// begins.
func skipSegment(b string, pos int, end int64) (int64, int) {
	d, k := varintString(b[pos:])
	pos += k
	length, k := uvarintString(b[pos:])
	pos += k
	for range 2 { // raw length, records
		for b[pos] >= 0x80 {
			pos++
		}
		pos++
	}
	return int64(uint64(end) + uint64(d) + length), pos + 4
}

// All yields every partition's segment in order.
func (p packedSpill) All() iter.Seq2[int, spillSegment] {
	return func(yield func(int, spillSegment) bool) {
		n, head := p.header()
		pos := head + 4*max(0, (n+packedIndexEvery-1)/packedIndexEvery-1)
		var end int64
		for i := range n {
			if i%packedIndexEvery == 0 {
				end = 0
			}
			var s spillSegment
			s, pos = decodeSegment(p.b, pos, end)
			end = int64(uint64(s.Offset) + uint64(s.Length))
			if !yield(i, s) {
				return
			}
		}
	}
}

// Segments is every partition's segment, unpacked; nil for the zero value.
func (p packedSpill) Segments() []spillSegment {
	if p.b == "" {
		return nil
	}
	out := make([]spillSegment, 0, p.Len())
	for _, s := range p.All() {
		out = append(out, s)
	}
	return out
}

// MarshalJSON encodes the spill as the JSON array of its segments, as the
// event log has always recorded them.
func (p packedSpill) MarshalJSON() ([]byte, error) {
	segs := p.Segments()
	if segs == nil {
		return []byte("null"), nil
	}
	return json.Marshal(segs)
}

// UnmarshalJSON reads what MarshalJSON wrote.
func (p *packedSpill) UnmarshalJSON(b []byte) error {
	var segs []spillSegment
	if err := json.Unmarshal(b, &segs); err != nil {
		return err
	}
	*p = packedSpill{}
	if segs != nil {
		*p = packSpill(segs)
	}
	return nil
}

// decodeSegment decodes the segment at b[pos:], whose predecessor in its
// run of packedIndexEvery ended at end, and returns where the next begins.
// b was written by packSpill: a malformed b panics.
func decodeSegment(b string, pos int, end int64) (spillSegment, int) {
	d, k := varintString(b[pos:])
	pos += k
	var v [3]uint64
	for f := range v {
		v[f], k = uvarintString(b[pos:])
		pos += k
	}
	s := spillSegment{Offset: int64(uint64(end) + uint64(d)), Length: int64(v[0]), RawLength: int64(v[1]), Records: int64(v[2]),
		CRC: le32(b[pos:])}
	return s, pos + 4
}

// le32 is the little-endian uint32 at the start of s.
func le32(s string) uint32 {
	_ = s[3]
	return uint32(s[0]) | uint32(s[1])<<8 | uint32(s[2])<<16 | uint32(s[3])<<24
}

// uvarintString is binary.Uvarint on a string, without copying it; it
// panics on a malformed or overlong varint (packedSpill's strings are its
// own).
func uvarintString(s string) (uint64, int) {
	if len(s) > 0 && s[0] < 0x80 {
		return uint64(s[0]), 1 // most of a packed spill's fields
	}
	var x uint64
	var shift uint
	for i := 0; i < len(s) && i < binary.MaxVarintLen64; i++ {
		c := s[i]
		if c < 0x80 {
			if i == binary.MaxVarintLen64-1 && c > 1 {
				break
			}
			return x | uint64(c)<<shift, i + 1
		}
		x |= uint64(c&0x7f) << shift
		shift += 7
	}
	panic("packedSpill: malformed varint")
}

// varintString is binary.Varint on a string (zigzag), as uvarintString.
func varintString(s string) (int64, int) {
	ux, n := uvarintString(s)
	x := int64(ux >> 1)
	if ux&1 != 0 {
		x = ^x
	}
	return x, n
}

// hasSpill tells whether map attempt a announced spill k.
func (a *attempt) hasSpill(k int) bool {
	_, ok := a.spills[k]
	return ok
}
