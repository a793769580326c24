package jobtracker

// A map attempt's announced spills are kept until its job retires: the
// winning attempt's, to answer reduces' map events (one segment each), and
// any attempt's, to compare a re-run or a later attempt's announcement with
// (sameSegments). A job of M maps, S spills and R reduces keeps M*S*R
// segments. As protobuf messages behind pointers they took 88 bytes each,
// all of it for the collector to scan; as spillSegment structs, 40 bytes
// without a pointer. A spill's segments are now kept packed (packedSpill,
// mrpb.PackedSegments): fixed-width columns, about 13 bytes a segment for
// small segments, where a reduce's own segment is read without decoding
// the others. A tracker sends them packed in that form, which is kept as it
// came once checked; a tracker from before sends a message per segment,
// which is packed here.
//
// A job that announces its spills without their segments (spillsOnly,
// mapreduce.jobtracker.map-events.max-segments) answers no reduce with a
// segment, so it keeps only what the comparison needs: each spill's
// digest (spillDigest, 20 bytes however many reduces), as Hadoop's
// JobTracker keeps nothing per reduce.

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strings"

	"gomr/mrpb"
)

// spillSegment is one partition's segment of an announced spill: where it
// lies in the spill's data file and what it holds. Event logs written
// before 2026-11-27 hold segments as JSON objects with these field names
// (packedSpill.UnmarshalJSON reads them).
type spillSegment = mrpb.SpillSegment

// segmentsOfAnnouncement is an announcement's segments, packed: its packed
// segments checked (mrpb.ParsePackedSegments), or its segment messages
// packed. The error names what cannot be a spill's segments: packed bytes
// that do not parse, a negative offset, length or count, a partition with
// no segment, or both forms at once.
func segmentsOfAnnouncement(sp *mrpb.SpillAnnouncement) (packedSpill, error) {
	if len(sp.SegmentsDigest) > 0 || sp.Partitions != 0 {
		switch {
		case len(sp.PackedSegments) > 0 || len(sp.Segments) > 0:
			return packedSpill{}, fmt.Errorf("a digest of %d partitions and segments (%d packed bytes, %d messages) at once", sp.Partitions, len(sp.PackedSegments), len(sp.Segments))
		case len(sp.SegmentsDigest) != mrpb.DigestBytes:
			return packedSpill{}, fmt.Errorf("a segments' digest of %d bytes, want %d", len(sp.SegmentsDigest), mrpb.DigestBytes)
		case sp.Partitions <= 0:
			return packedSpill{}, fmt.Errorf("a segments' digest of %d partitions", sp.Partitions)
		}
		return packedSpill{digest: spillDigest{partitions: uint32(sp.Partitions), sum: [mrpb.DigestBytes]byte(sp.SegmentsDigest)}}, nil
	}
	if len(sp.PackedSegments) > 0 {
		if len(sp.Segments) > 0 {
			return packedSpill{}, fmt.Errorf("%d segments both packed and as messages (%d)", packedCount(sp.PackedSegments), len(sp.Segments))
		}
		p, err := mrpb.ParsePackedSegments(string(sp.PackedSegments), true)
		if err != nil {
			return packedSpill{}, err
		}
		return packedSpill{PackedSegments: p}, nil
	}
	out := make([]spillSegment, len(sp.Segments))
	for i, sg := range sp.Segments {
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

// packedCount is the partition count packed segments start with (0 if it
// does not parse), for an error.
func packedCount(b []byte) uint64 {
	n, _ := binary.Uvarint(b)
	return n
}

// sameSegments tells whether two announcements of a spill hold the same
// output: the same records, lengths and checksum in every partition (the
// offsets may differ: they do not change what a reduce reads).
func sameSegments(a, b packedSpill) bool {
	if a.digest != (spillDigest{}) || b.digest != (spillDigest{}) {
		return a.summary() == b.summary()
	}
	if a.Len() != b.Len() {
		return false
	}
	if a.Encoded() == b.Encoded() {
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

// packedSpill is all partitions' segments of one spill as the JobTracker
// keeps them (mrpb.PackedSegments: about 13 bytes a segment, against 40 as
// spillSegment structs), with the event log's form of them; or, for a job
// that announces spills only, their digest alone (digested). The zero
// value is "no spill"; a spill of no partitions is not zero.
type packedSpill struct {
	mrpb.PackedSegments
	// digest is set, and the segments are not kept, for a spill of a job
	// that announces spills only.
	digest spillDigest
}

// spillDigest stands for a spill's segments in a job that announces spills
// only: its number of partitions and mrpb.PackedSegments.Digest of them,
// as its map's child announces them (SpillAnnouncement.segments_digest),
// or as the JobTracker computes them from the segments of a child that
// sent those (decodeSpills, before the lock). sameSegments of a digested
// spill compares digests.
type spillDigest struct {
	partitions uint32
	sum        [mrpb.DigestBytes]byte
}

// packSpill packs segs.
func packSpill(segs []spillSegment) packedSpill {
	return packedSpill{PackedSegments: mrpb.PackSegments(segs)}
}

// summary is the spill's digest: kept, or computed from its segments.
func (p packedSpill) summary() spillDigest {
	if p.digest != (spillDigest{}) {
		return p.digest
	}
	return spillDigest{partitions: uint32(p.Len()), sum: p.Digest()}
}

// partitions is the spill's number of partitions, kept or in its digest.
func (p packedSpill) partitions() int {
	if p.digest != (spillDigest{}) {
		return int(p.digest.partitions)
	}
	return p.Len()
}

// digested is the spill as a job that announces spills only keeps it: its
// digest alone.
func (p packedSpill) digested() packedSpill {
	return packedSpill{digest: p.summary()}
}

// digestPrefix starts a digested spill's text in the event log: not a
// base64 character, so no packed spill's text starts with it.
const digestPrefix = "digest:"

// MarshalText is the spill as the event log records it: its packed bytes
// in standard base64 (encoding/json writes it as a JSON string, about a
// quarter of the segments' array of objects, which was most of a map's
// line in a job with many reduces); a digested spill as digestPrefix and
// the base64 of its partitions (4 bytes, little-endian) and sum.
func (p packedSpill) MarshalText() ([]byte, error) {
	if p.digest != (spillDigest{}) {
		var raw [20]byte
		binary.LittleEndian.PutUint32(raw[:], p.digest.partitions)
		copy(raw[4:], p.digest.sum[:])
		return base64.StdEncoding.AppendEncode([]byte(digestPrefix), raw[:]), nil
	}
	return base64.StdEncoding.AppendEncode(nil, []byte(p.Encoded())), nil
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
	if d, ok := strings.CutPrefix(text, digestPrefix); ok {
		raw, err := base64.StdEncoding.DecodeString(d)
		if err != nil || len(raw) != 20 {
			return fmt.Errorf("spill digest %q: want the base64 of 20 bytes", d)
		}
		*p = packedSpill{digest: spillDigest{partitions: binary.LittleEndian.Uint32(raw)}}
		copy(p.digest.sum[:], raw[4:])
		return nil
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

// packedSpillOf is b, from the event log, as a packed spill, or an error
// saying why it is not one (mrpb.ParsePackedSegments); "" is no spill.
func packedSpillOf(b string) (packedSpill, error) {
	p, err := mrpb.ParsePackedSegments(b, false)
	if err != nil {
		return packedSpill{}, fmt.Errorf("packed spill: %w", err)
	}
	return packedSpill{PackedSegments: p}, nil
}

// hasSpill tells whether map attempt a announced spill k.
func (a *attempt) hasSpill(k int) bool {
	_, ok := a.spills[k]
	return ok
}
