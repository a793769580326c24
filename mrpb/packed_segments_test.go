package mrpb

import (
	"crypto/sha256"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
)

// contiguous is n segments one after another, of a few hundred bytes.
func contiguous(n int) []SpillSegment {
	segs := make([]SpillSegment, n)
	var end int64
	for i := range segs {
		segs[i] = SpillSegment{Offset: end, Length: int64(100 + i%50), RawLength: int64(300 + i), Records: int64(i % 7), CRC: uint32(i) * 2654435761}
		end += segs[i].Length
	}
	return segs
}

// unpacked is every segment of p, by All, checked against At.
func unpacked(t *testing.T, p PackedSegments) []SpillSegment {
	t.Helper()
	out := []SpillSegment{}
	for i, s := range p.All() {
		if s != p.At(i) {
			t.Fatalf("At(%d) = %+v, All gave %+v", i, p.At(i), s)
		}
		out = append(out, s)
	}
	if len(out) != p.Len() {
		t.Fatalf("All gave %d segments, Len is %d", len(out), p.Len())
	}
	return out
}

// TestPackedSegments: segments read back from their packed form, by
// index, in order and as messages, parsed back whole, for spills of no,
// one and many partitions (around 128, where the count takes a second
// byte) and extreme values; appended after other bytes; and 1,000 small
// segments take at most 12 bytes each.
func TestPackedSegments(t *testing.T) {
	for _, tc := range []struct {
		name string
		segs []SpillSegment
	}{
		{"no partitions", []SpillSegment{}},
		{"one", contiguous(1)},
		{"127", contiguous(127)},
		{"128", contiguous(128)},
		{"1000", contiguous(1000)},
		{"extremes", []SpillSegment{
			{Offset: math.MaxInt64, Length: math.MaxInt64, RawLength: math.MaxInt64, Records: math.MaxInt64, CRC: math.MaxUint32},
			{},
			{Offset: 1, Length: math.MaxInt64},
		}},
	} {
		p := PackSegments(tc.segs)
		if p == (PackedSegments{}) {
			t.Fatalf("%s: packed as no spill", tc.name)
		}
		if got := unpacked(t, p); !reflect.DeepEqual(got, tc.segs) {
			t.Fatalf("%s: read back %+v, want %+v", tc.name, got, tc.segs)
		}
		msgs := p.Messages()
		if len(msgs) != len(tc.segs) {
			t.Fatalf("%s: %d messages, want %d", tc.name, len(msgs), len(tc.segs))
		}
		for i, m := range msgs {
			if back := (SpillSegment{m.Offset, m.Length, m.RawLength, m.Records, m.Crc}); back != tc.segs[i] {
				t.Fatalf("%s: message %d is %+v, want %+v", tc.name, i, back, tc.segs[i])
			}
		}
		parsed, err := ParsePackedSegments(p.Encoded(), true)
		if err != nil || parsed != p {
			t.Fatalf("%s: parsed back as %q (%v)", tc.name, parsed.Encoded(), err)
		}
		appended := AppendPackedSegments([]byte("head"), tc.segs)
		if string(appended) != "head"+p.Encoded() {
			t.Fatalf("%s: appended after other bytes as %q", tc.name, appended)
		}
	}
	if none := (PackedSegments{}); none.Len() != 0 || len(unpacked(t, none)) != 0 {
		t.Errorf("no spill has %d partitions", none.Len())
	}
	if per := float64(len(PackSegments(contiguous(1000)).Encoded())) / 1000; per > 12 {
		t.Errorf("1000 small contiguous segments packed in %.1f bytes a segment; want at most 12", per)
	}
}

// TestParsePackedSegments: bytes that are not packed segments are refused
// with an error naming what is wrong, never read (At would index out of
// them); a negative value is refused when the sender must not send one.
func TestParsePackedSegments(t *testing.T) {
	good := PackSegments([]SpillSegment{{0, 10, 20, 3, 7}, {10, 300, 900, 40, 8}}).Encoded()
	negative := PackSegments([]SpillSegment{{}, {Offset: 5, Length: -1, RawLength: 2, Records: 1}}).Encoded()
	for _, tc := range []struct {
		name        string
		b           string
		nonNegative bool
		err         string
	}{
		{"good", good, true, ""},
		{"no spill", "", true, ""},
		{"truncated", good[:len(good)-1], false, "packed segments of 22 bytes: 2 partitions of 10 bytes need 20 after the header"},
		{"one byte more", good + "x", false, "2 partitions of"},
		{"no widths", "\x02", false, "no partition count and widths"},
		{"too wide", "\x01\x09\x00" + strings.Repeat("x", 13), false, "field widths [9 0 0 0], none may exceed 8 bytes"},
		{"count beyond the bytes", "\xff\xff\xff\xff\x0f\x00\x00", false, "partitions of 4 bytes"},
		{"count that does not parse", "\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff", false, "no partition count"},
		{"negative, from a log", negative, false, ""},
		{"negative, from a sender", negative, true, "partition 1's segment has offset 5, length -1, raw length 2, 1 records: none may be negative"},
	} {
		p, err := ParsePackedSegments(tc.b, tc.nonNegative)
		if tc.err == "" {
			if err != nil || p.Encoded() != tc.b {
				t.Errorf("%s: %q (%v), want it as it is", tc.name, p.Encoded(), err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.err)
		}
		if p != (PackedSegments{}) {
			t.Errorf("%s: refused, yet gave %q", tc.name, p.Encoded())
		}
	}
}

// FuzzPackedSegments: any segments read back from their packed form.
func FuzzPackedSegments(f *testing.F) {
	f.Add(int64(0), int64(10), int64(20), int64(3), uint32(7), 20, int64(5))
	f.Add(int64(math.MaxInt64), int64(math.MaxInt64), int64(0), int64(1), uint32(math.MaxUint32), 33, int64(-7))
	f.Fuzz(func(t *testing.T, off, length, raw, recs int64, crc uint32, n int, step int64) {
		n = int(uint(n) % 200)
		segs := make([]SpillSegment, n)
		for i := range segs {
			k := int64(i)
			segs[i] = SpillSegment{off + k*step, length ^ k, raw + k, recs - k, crc + uint32(i)}
		}
		p := PackSegments(segs)
		if got := unpacked(t, p); !reflect.DeepEqual(got, segs) {
			t.Fatalf("read back %+v, want %+v", got, segs)
		}
		q, err := ParsePackedSegments(p.Encoded(), false)
		if err != nil || q != p {
			t.Fatalf("parsed back as %q (%v)", q.Encoded(), err)
		}
	})
}

// FuzzParsePackedSegments: any bytes are refused or read whole without a
// panic, every segment of them; a sender's (nonNegative) never holds a
// negative value.
func FuzzParsePackedSegments(f *testing.F) {
	f.Add(PackSegments([]SpillSegment{{0, 10, 20, 3, 7}, {10, 300, 900, 40, 8}}).Encoded())
	f.Add(PackSegments([]SpillSegment{{Records: -1}}).Encoded())
	f.Add("\x01\x09\x00")
	f.Add("\x00\x00\x00")
	f.Fuzz(func(t *testing.T, b string) {
		for _, nonNegative := range []bool{false, true} {
			p, err := ParsePackedSegments(b, nonNegative)
			if err != nil {
				continue
			}
			for _, s := range unpacked(t, p) {
				if nonNegative && (s.Offset < 0 || s.Length < 0 || s.RawLength < 0 || s.Records < 0) {
					t.Fatalf("a sender's segments accepted with %+v", s)
				}
			}
		}
	})
}

// BenchmarkPackedSegmentsAt is the cost of a reduce's segment of one map
// event (GetMapEvents) from a spill of 1,000 partitions.
func BenchmarkPackedSegmentsAt(b *testing.B) {
	p := PackSegments(contiguous(1000))
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if p.At(i%1000).Length == 0 {
			b.Fatal("empty")
		}
		i += 7
	}
}

// BenchmarkAnnouncement is the cost of one spill announcement of 1,000
// partitions for its sender and for the JobTracker: as messages
// (marshaled, unmarshaled and packed, as the JobTracker did before packed
// segments) and packed (marshaled, unmarshaled and parsed).
func BenchmarkAnnouncement(b *testing.B) {
	segs := contiguous(1000)
	b.Run("messages", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			got := overTheWire(b, &SpillAnnouncement{AttemptId: "attempt_202611271544_0001_m_000000_0", Segments: PackSegments(segs).Messages()})
			out := make([]SpillSegment, len(got.Segments))
			for i, s := range got.Segments {
				out[i] = SpillSegment{s.Offset, s.Length, s.RawLength, s.Records, s.Crc}
			}
			if PackSegments(out).Len() != len(segs) {
				b.Fatal("lost segments")
			}
		}
	})
	b.Run("packed", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			got := overTheWire(b, &SpillAnnouncement{AttemptId: "attempt_202611271544_0001_m_000000_0", PackedSegments: AppendPackedSegments(nil, segs)})
			p, err := ParsePackedSegments(string(got.PackedSegments), true)
			if err != nil || p.Len() != len(segs) {
				b.Fatal("lost segments", err)
			}
		}
	})
}

// overTheWire is ann marshaled and unmarshaled again.
func overTheWire(b *testing.B, ann *SpillAnnouncement) *SpillAnnouncement {
	wire, err := proto.Marshal(ann)
	if err != nil {
		b.Fatal(err)
	}
	got := &SpillAnnouncement{}
	if err := proto.Unmarshal(wire, got); err != nil {
		b.Fatal(err)
	}
	return got
}

// TestDigest: a spill's digest is the first 16 bytes of the SHA-256 of its
// packed segments; identical segments packed apart have one digest, and a
// partition that differs in any field changes it.
func TestDigest(t *testing.T) {
	segs := []SpillSegment{{0, 10, 20, 3, 7}, {10, 0, 0, 0, 0}, {10, 5, 9, 1, 8}}
	p := PackSegments(segs)
	sum := sha256.Sum256([]byte(p.Encoded()))
	if d := p.Digest(); string(d[:]) != string(sum[:DigestBytes]) {
		t.Errorf("digest %x, want %x", d, sum[:DigestBytes])
	}
	again, err := ParsePackedSegments(string(AppendPackedSegments(nil, slices.Clone(segs))), true)
	if err != nil || again.Digest() != p.Digest() {
		t.Errorf("the same segments packed again: digest %x (%v), want %x", again.Digest(), err, p.Digest())
	}
	for f := range 5 {
		other := slices.Clone(segs)
		switch f {
		case 0:
			other[2].Offset++
		case 1:
			other[1].Length++
		case 2:
			other[0].RawLength++
		case 3:
			other[2].Records++
		case 4:
			other[0].CRC ^= 1
		}
		if PackSegments(other).Digest() == p.Digest() {
			t.Errorf("field %d changed: the digest did not", f)
		}
	}
	if (PackedSegments{}).Digest() == p.Digest() {
		t.Error("no spill has the digest of a spill")
	}
}
