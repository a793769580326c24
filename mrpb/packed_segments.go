package mrpb

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"iter"
	"math/bits"
	"slices"
	"unsafe"
)

// SpillSegment is one partition's segment of a spill: where it lies in the
// spill's data file and what it holds (the fields of Segment, without a
// message around them).
type SpillSegment struct {
	Offset, Length, RawLength, Records int64
	CRC                                uint32
}

// Proto is the segment as a message.
func (s SpillSegment) Proto() *Segment {
	return &Segment{Offset: s.Offset, Length: s.Length, RawLength: s.RawLength, Records: s.Records, Crc: s.CRC}
}

// PackedSegments is all partitions' segments of one spill, immutable, in
// one string that holds no pointer: each field in as few bytes as the
// spill's largest value of it needs, so that every segment takes the same
// bytes and one partition's is read without decoding the others. It is
// what SpillAnnouncement.packed_segments carries and what the JobTracker
// keeps of every announced spill (GetMapEvents reads one segment of every
// spill for each reduce):
//
//	uvarint n                      the number of partitions
//	byte    wOffset | wLength<<4   the fields' widths in bytes, 0-8
//	byte    wRaw | wRecords<<4
//	n segments, each: offset, length, raw length, records, little-endian
//	        in their widths, then the crc in 4 bytes
//
// A spill of a few MiB cut in 200 segments of a few KiB takes 3 + 2 + 2 +
// 2 + 4 = 13 bytes a segment, where 200 Segment messages take about 14
// bytes each on the wire and, decoded, 88 bytes each behind a pointer. The
// zero value is "no spill"; a spill of no partitions is not zero.
type PackedSegments struct{ b string }

// PackSegments packs segs.
func PackSegments(segs []SpillSegment) PackedSegments {
	return PackedSegments{string(AppendPackedSegments(nil, segs))}
}

// AppendPackedSegments appends segs, packed, to dst.
func AppendPackedSegments(dst []byte, segs []SpillSegment) []byte {
	var w [4]int
	for _, s := range segs {
		for f, v := range [4]int64{s.Offset, s.Length, s.RawLength, s.Records} {
			w[f] = max(w[f], (bits.Len64(uint64(v))+7)/8)
		}
	}
	size := w[0] + w[1] + w[2] + w[3] + 4
	dst = slices.Grow(dst, binary.MaxVarintLen64+2+len(segs)*size)
	dst = binary.AppendUvarint(dst, uint64(len(segs)))
	dst = append(dst, byte(w[0]|w[1]<<4), byte(w[2]|w[3]<<4))
	for _, s := range segs {
		for f, v := range [4]int64{s.Offset, s.Length, s.RawLength, s.Records} {
			for k := range w[f] {
				dst = append(dst, byte(uint64(v)>>(8*k)))
			}
		}
		dst = binary.LittleEndian.AppendUint32(dst, s.CRC)
	}
	return dst
}

// ParsePackedSegments is b as packed segments, or an error saying why it
// is not (a count that does not parse, a field wider than 8 bytes, a
// length that is not the count's segments exactly); "" is no spill. With
// nonNegative, a value that does not fit in an int64 is refused too, as
// what a sender announces must be (an event log's values were checked
// before they were written).
func ParsePackedSegments(b string, nonNegative bool) (PackedSegments, error) {
	if b == "" {
		return PackedSegments{}, nil
	}
	n, k := binary.Uvarint([]byte(b[:min(len(b), binary.MaxVarintLen64)]))
	if k <= 0 || len(b) < k+2 {
		return PackedSegments{}, fmt.Errorf("packed segments of %d bytes: no partition count and widths", len(b))
	}
	p := PackedSegments{b}
	_, w, size, first := p.layout()
	if max(w[0], w[1], w[2], w[3]) > 8 {
		return PackedSegments{}, fmt.Errorf("packed segments: field widths %v, none may exceed 8 bytes", w)
	}
	if n > uint64(len(b)) || uint64(len(b)-first) != n*uint64(size) {
		return PackedSegments{}, fmt.Errorf("packed segments of %d bytes: %d partitions of %d bytes need %d after the header",
			len(b), n, size, n*uint64(size))
	}
	if nonNegative && max(w[0], w[1], w[2], w[3]) == 8 {
		for i, s := range p.All() {
			if s.Offset < 0 || s.Length < 0 || s.RawLength < 0 || s.Records < 0 {
				return PackedSegments{}, fmt.Errorf("partition %d's segment has offset %d, length %d, raw length %d, %d records: none may be negative",
					i, s.Offset, s.Length, s.RawLength, s.Records)
			}
		}
	}
	return p, nil
}

// Encoded is the packed bytes ("" for no spill).
func (p PackedSegments) Encoded() string { return p.b }

// DigestBytes is the length of a spill's digest (Digest).
const DigestBytes = 16

// Digest is what a spill's segments are compared by when they are not
// kept (a job that announces spills only): the first DigestBytes bytes of
// the SHA-256 of the packed bytes. Offsets are included: they follow from
// the lengths, as a spill's partitions lie back to back, and every writer
// packs alike (AppendPackedSegments), so that two attempts' identical
// spills have one digest. About 10 µs for 1,000 partitions.
func (p PackedSegments) Digest() [DigestBytes]byte {
	sum := sha256.Sum256(unsafe.Slice(unsafe.StringData(p.b), len(p.b)))
	return [DigestBytes]byte(sum[:DigestBytes])
}

// header is the number of partitions, the fields' widths and where the
// first segment begins.
func (p PackedSegments) header() (n int, w [4]int, first int) {
	if p.b == "" {
		return 0, w, 0
	}
	v, k := uint64(p.b[0]), 1
	if v >= 0x80 { // 128 partitions or more
		v, k = binary.Uvarint([]byte(p.b[:min(len(p.b), binary.MaxVarintLen64)]))
	}
	w = [4]int{int(p.b[k] & 15), int(p.b[k] >> 4), int(p.b[k+1] & 15), int(p.b[k+1] >> 4)}
	return int(v), w, k + 2
}

// layout is header's, with the size of a segment.
func (p PackedSegments) layout() (n int, w [4]int, size, first int) {
	n, w, first = p.header()
	if p.b == "" {
		return 0, w, 0, 0
	}
	return n, w, w[0] + w[1] + w[2] + w[3] + 4, first
}

// Len is the number of partitions.
func (p PackedSegments) Len() int {
	n, _, _ := p.header()
	return n
}

// widthMasks[w] keeps the low w bytes of a little-endian word.
var widthMasks = [16]uint64{0, 1<<8 - 1, 1<<16 - 1, 1<<24 - 1, 1<<32 - 1, 1<<40 - 1, 1<<48 - 1, 1<<56 - 1, 1<<64 - 1}

// At is partition i's segment; i must be below Len. It is what a reduce's
// map events read, one segment of each spill: the fields are read as
// whole words and masked to their widths, unless the segment is too near
// the end of the bytes for that.
func (p PackedSegments) At(i int) SpillSegment {
	b := p.b
	if len(b) < 3 {
		panic(fmt.Sprintf("PackedSegments.At(%d) of no spill", i))
	}
	n, k := uint64(b[0]), 1
	if n >= 0x80 {
		if b[1] < 0x80 { // 128 to 16,383 partitions
			n, k = n&0x7f|uint64(b[1])<<7, 2
		} else {
			n, k = binary.Uvarint([]byte(b[:min(len(b), binary.MaxVarintLen64)]))
		}
	}
	w0, w1, w2, w3 := uint(b[k]&15), uint(b[k]>>4), uint(b[k+1]&15), uint(b[k+1]>>4)
	size := int(w0 + w1 + w2 + w3 + 4)
	if i < 0 || uint64(i) >= n {
		panic(fmt.Sprintf("PackedSegments.At(%d) of %d partitions", i, n))
	}
	pos := k + 2 + i*size
	if pos+size+4 > len(b) {
		return p.segment([4]int{int(w0), int(w1), int(w2), int(w3)}, pos)
	}
	// Each field's word ends within the bytes: the last field's ends 4
	// bytes past the crc. A read-only view of the string's bytes.
	s := unsafe.Slice(unsafe.StringData(b), len(b))[pos : pos+size+4]
	o1 := w0
	o2 := o1 + w1
	o3 := o2 + w2
	return SpillSegment{
		Offset:    int64(binary.LittleEndian.Uint64(s) & widthMasks[w0]),
		Length:    int64(binary.LittleEndian.Uint64(s[o1:]) & widthMasks[w1]),
		RawLength: int64(binary.LittleEndian.Uint64(s[o2:]) & widthMasks[w2]),
		Records:   int64(binary.LittleEndian.Uint64(s[o3:]) & widthMasks[w3]),
		CRC:       binary.LittleEndian.Uint32(s[size-4:]),
	}
}

// segment decodes the segment at p.b[pos:], whose fields have widths w,
// byte by byte.
func (p PackedSegments) segment(w [4]int, pos int) SpillSegment {
	var v [4]uint64
	for f := range v {
		for k := range w[f] {
			v[f] |= uint64(p.b[pos+k]) << (8 * k)
		}
		pos += w[f]
	}
	crc := uint32(p.b[pos]) | uint32(p.b[pos+1])<<8 | uint32(p.b[pos+2])<<16 | uint32(p.b[pos+3])<<24
	return SpillSegment{Offset: int64(v[0]), Length: int64(v[1]), RawLength: int64(v[2]), Records: int64(v[3]), CRC: crc}
}

// All yields every partition's segment in order.
func (p PackedSegments) All() iter.Seq2[int, SpillSegment] {
	return func(yield func(int, SpillSegment) bool) {
		n, w, size, first := p.layout()
		for i := range n {
			if !yield(i, p.segment(w, first+i*size)) {
				return
			}
		}
	}
}

// Messages is every partition's segment as a message, for a receiver that
// reads only SpillAnnouncement.segments (a JobTracker from before
// packed_segments).
func (p PackedSegments) Messages() []*Segment {
	out := make([]*Segment, 0, p.Len())
	for _, s := range p.All() {
		out = append(out, s.Proto())
	}
	return out
}
