package spill

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"strings"
	"testing"

	"github.com/golang/snappy"
)

// encodeSegment writes kvs as one segment and returns its bytes and info.
func encodeSegment(t testing.TB, kvs [][2][]byte, blockSize int) ([]byte, SegmentInfo) {
	t.Helper()
	var buf bytes.Buffer
	w := NewSegmentWriter(&buf, blockSize)
	for _, kv := range kvs {
		if err := w.Write(kv[0], kv[1]); err != nil {
			t.Fatalf("Write: %v", err)
		}
	}
	info, err := w.Close()
	if err != nil {
		t.Fatalf("Close: %v", err)
	}
	return buf.Bytes(), info
}

// readSegment drains a SegmentReader over data.
func readSegment(data []byte, seg SegmentInfo) ([][2][]byte, error) {
	r := NewSegmentReader(bytes.NewReader(data), seg)
	defer r.Close()
	var out [][2][]byte
	for r.Next() {
		out = append(out, [2][]byte{bytes.Clone(r.Key()), bytes.Clone(r.Value())})
	}
	return out, r.Err()
}

func rawLen(kvs [][2][]byte) int64 {
	var n int64
	for _, kv := range kvs {
		n += int64(len(binary.AppendUvarint(nil, uint64(len(kv[0])))))
		n += int64(len(binary.AppendUvarint(nil, uint64(len(kv[1])))))
		n += int64(len(kv[0]) + len(kv[1]))
	}
	return n
}

func genKVs(n, keyLen, valLen int, seed uint32) [][2][]byte {
	kvs := make([][2][]byte, n)
	x := seed
	next := func() byte { x = x*1664525 + 1013904223; return byte(x >> 24) }
	for i := range kvs {
		k := make([]byte, keyLen)
		v := make([]byte, valLen)
		for j := range k {
			k[j] = 'a' + next()%8
		}
		for j := range v {
			v[j] = next()
		}
		kvs[i] = [2][]byte{k, v}
	}
	return kvs
}

func equalKVs(a, b [][2][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i][0], b[i][0]) || !bytes.Equal(a[i][1], b[i][1]) {
			return false
		}
	}
	return true
}

func TestSegmentRoundTrip(t *testing.T) {
	big := bytes.Repeat([]byte("xyz"), 50000)
	tests := []struct {
		name      string
		kvs       [][2][]byte
		blockSize int
		blocks    int
	}{
		{"empty", nil, 0, 0},
		{"one record", [][2][]byte{{[]byte("k"), []byte("v")}}, 0, 1},
		{"empty key and value", [][2][]byte{{nil, nil}, {[]byte{}, []byte("v")}, {[]byte("k"), nil}}, 0, 1},
		{"many small blocks", genKVs(1000, 10, 20, 1), 256, -1},
		{"default block size", genKVs(5000, 12, 40, 2), 0, -1},
		{"repetitive values over many blocks", repeatKVs(3000), 4096, -1},
		{"record bigger than block", [][2][]byte{{[]byte("a"), []byte("1")}, {[]byte("b"), big}, {[]byte("c"), []byte("3")}}, 1024, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			data, info := encodeSegment(t, tc.kvs, tc.blockSize)
			if info.Offset != 0 || info.Length != int64(len(data)) || info.Records != int64(len(tc.kvs)) || info.RawLength != rawLen(tc.kvs) {
				t.Fatalf("info = %+v, want offset 0, length %d, records %d, raw length %d", info, len(data), len(tc.kvs), rawLen(tc.kvs))
			}
			if got := crc32.Checksum(data, castagnoli); got != info.CRC {
				t.Fatalf("CRC = %08x, want %08x", info.CRC, got)
			}
			// Every block decodes with github.com/golang/snappy's decoder:
			// the blocks are snappy's format, whichever encoder wrote them.
			if got := countBlocks(t, data); tc.blocks >= 0 && got != tc.blocks {
				t.Fatalf("blocks = %d, want %d", got, tc.blocks)
			}
			if err := VerifySegment(data, info); err != nil {
				t.Fatalf("VerifySegment: %v", err)
			}
			got, err := readSegment(data, info)
			if err != nil {
				t.Fatalf("read: %v", err)
			}
			if !equalKVs(got, tc.kvs) {
				t.Fatalf("read %d records, not equal to the %d written", len(got), len(tc.kvs))
			}
		})
	}
}

// repeatKVs returns n records whose values repeat within and across
// records, as TeraSort's do, so that the encoder emits copies as well as
// literals.
func repeatKVs(n int) [][2][]byte {
	kvs := make([][2][]byte, n)
	for i := range kvs {
		kvs[i] = [2][]byte{[]byte(fmt.Sprintf("key%06d", i)), bytes.Repeat([]byte{byte('A' + i%26)}, 4+i%90)}
	}
	return kvs
}

// countBlocks parses the block framing by hand, checking the format.
func countBlocks(t *testing.T, data []byte) int {
	t.Helper()
	n := 0
	for len(data) > 0 {
		c, k1 := binary.Uvarint(data)
		r, k2 := binary.Uvarint(data[k1:])
		if k1 <= 0 || k2 <= 0 {
			t.Fatalf("bad block header")
		}
		body := data[k1+k2 : k1+k2+int(c)]
		raw, err := snappy.Decode(nil, body)
		if err != nil || len(raw) != int(r) {
			t.Fatalf("block %d: decode %v, raw %d want %d", n, err, len(raw), r)
		}
		data = data[k1+k2+int(c):]
		n++
	}
	return n
}

func TestSegmentWriterExactBytes(t *testing.T) {
	data, info := encodeSegment(t, [][2][]byte{{[]byte("ab"), []byte("c")}}, 0)
	raw := []byte{2, 1, 'a', 'b', 'c'}
	enc := snappy.Encode(nil, raw)
	want := append([]byte{byte(len(enc)), byte(len(raw))}, enc...)
	if !bytes.Equal(data, want) {
		t.Fatalf("segment bytes = %x, want %x", data, want)
	}
	if info.RawLength != 5 || info.Records != 1 {
		t.Fatalf("info = %+v", info)
	}
}

func TestSegmentWriterAfterClose(t *testing.T) {
	w := NewSegmentWriter(io.Discard, 0)
	if _, err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Write([]byte("k"), nil); err == nil {
		t.Fatal("Write after Close succeeded")
	}
	if _, err := w.Close(); err == nil {
		t.Fatal("second Close succeeded")
	}
}

func TestSegmentFlippedByteDetected(t *testing.T) {
	kvs := genKVs(300, 8, 16, 7)
	data, info := encodeSegment(t, kvs, 512)
	for i := range data {
		for _, bit := range []byte{0x01, 0x80} {
			bad := bytes.Clone(data)
			bad[i] ^= bit
			if err := VerifySegment(bad, info); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("byte %d bit %02x: VerifySegment error = %v, want ErrCorrupt", i, bit, err)
			}
			if _, err := readSegment(bad, info); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("byte %d bit %02x: reader error = %v, want ErrCorrupt", i, bit, err)
			}
		}
	}
}

func TestSegmentInfoMismatch(t *testing.T) {
	kvs := genKVs(100, 8, 16, 3)
	data, info := encodeSegment(t, kvs, 256)
	tests := []struct {
		name   string
		data   []byte
		mutate func(*SegmentInfo)
		want   string
	}{
		{"wrong crc", data, func(s *SegmentInfo) { s.CRC++ }, "CRC32C mismatch"},
		{"fewer records", data, func(s *SegmentInfo) { s.Records-- }, "more records than the 99 expected"},
		{"more records", data, func(s *SegmentInfo) { s.Records++ }, "record count mismatch: expected 101, got 100"},
		{"raw length too small", data, func(s *SegmentInfo) { s.RawLength -= 1 }, "raw"},
		{"raw length too big", data, func(s *SegmentInfo) { s.RawLength += 1 }, fmt.Sprintf("raw length mismatch: expected %d, got %d", info.RawLength+1, info.RawLength)},
		{"length too big", data, func(s *SegmentInfo) { s.Length += 3 }, "truncated"},
		{"truncated", data[:len(data)-5], func(s *SegmentInfo) {}, "truncated"},
		{"negative", data, func(s *SegmentInfo) { s.Records = -1 }, "negative"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			seg := info
			tc.mutate(&seg)
			_, err := readSegment(tc.data, seg)
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("reader error = %v, want ErrCorrupt containing %q", err, tc.want)
			}
			if err := VerifySegment(tc.data, seg); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("VerifySegment error = %v, want ErrCorrupt", err)
			}
		})
	}
}

type failingReader struct {
	data []byte
	err  error
}

func (f *failingReader) Read(p []byte) (int, error) {
	if len(f.data) == 0 {
		return 0, f.err
	}
	n := copy(p, f.data)
	f.data = f.data[n:]
	return n, nil
}

func TestSegmentReaderPassesReadErrors(t *testing.T) {
	data, info := encodeSegment(t, genKVs(100, 8, 16, 3), 256)
	boom := errors.New("connection reset")
	r := NewSegmentReader(&failingReader{data: data[:len(data)/2], err: boom}, info)
	for r.Next() {
	}
	if err := r.Err(); !errors.Is(err, boom) || errors.Is(err, ErrCorrupt) {
		t.Fatalf("Err = %v, want the read error and not ErrCorrupt", err)
	}
}

func TestSegmentReaderClose(t *testing.T) {
	data, info := encodeSegment(t, genKVs(10, 8, 16, 3), 0)
	r := NewSegmentReader(bytes.NewReader(data), info)
	if !r.Next() {
		t.Fatal("no first record")
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if r.Next() || r.Key() != nil {
		t.Fatal("Next after Close returned a record")
	}
}
