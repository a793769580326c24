// Package spill holds the map side of the data path: the map output buffer
// (a sort buffer with a size limit and a spill threshold), the sort by
// (partition, key), the combiner run on each spill, the spill file format
// (snappy-compressed blocks, one segment per reduce partition, an index
// with checksums), and the k-way merge and key grouping of sorted runs that
// the reduce side uses.
//
// Spill boundaries are a pure function of the record sequence and the
// options, never of timing, and the same records produce byte-identical
// spill files, so that reducers may fetch spill k of a task from one attempt
// and spill k+1 from another attempt of the same task.
//
// A segment (one partition's records in a spill data file) is a sequence of
// blocks. A block is a header (uvarint compressed length, uvarint raw
// length) followed by the snappy encoding (github.com/golang/snappy, block
// format) of the raw records; a raw record is (uvarint key length, uvarint
// value length, key, value). An empty segment has zero bytes.
package spill

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"

	"github.com/golang/snappy"
)

// ErrCorrupt is wrapped by every error that reports spill data or an index
// that does not match its description or checksum.
var ErrCorrupt = errors.New("spill: corrupt data")

// DefaultBlockSize is the target uncompressed size of a snappy block when a
// block size of 0 is asked for.
const DefaultBlockSize = 64 << 10

// maxSnappyRatio bounds the raw length a block may claim against its
// compressed length: the best snappy element (a 3-byte copy) expands to 64
// bytes, so no valid block decodes to more than 22 times its size.
const maxSnappyRatio = 22

// castagnoli is the CRC32C table used for segment and index checksums.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// SegmentInfo describes one partition's segment in a spill data file.
type SegmentInfo struct {
	Offset    int64  `json:"offset"`     // byte offset in the data file
	Length    int64  `json:"length"`     // bytes on disk (framed, compressed)
	RawLength int64  `json:"raw_length"` // bytes of the serialized records before compression
	Records   int64  `json:"records"`
	CRC       uint32 `json:"crc"` // CRC32C (Castagnoli) of the Length bytes on disk
}

// SegmentWriter writes one segment: it frames records into raw blocks of
// about the block size, compresses each with snappy and writes it, keeping
// the segment's length, raw length, record count and CRC32C.
type SegmentWriter struct {
	w         io.Writer
	blockSize int
	raw       []byte
	enc       []byte
	info      SegmentInfo
	err       error
	closed    bool
}

// NewSegmentWriter returns a writer of one segment to w. blockSize is the
// target uncompressed size of a block; 0 or less means DefaultBlockSize.
// A record larger than the block size gets a block of its own.
func NewSegmentWriter(w io.Writer, blockSize int) *SegmentWriter {
	sw := &SegmentWriter{}
	sw.reset(w, blockSize)
	return sw
}

// reset makes sw write a new segment to w, keeping its buffers.
func (sw *SegmentWriter) reset(w io.Writer, blockSize int) {
	if blockSize <= 0 {
		blockSize = DefaultBlockSize
	}
	sw.w = w
	sw.blockSize = blockSize
	// Drop a buffer that a huge record blew up, so one giant record does
	// not pin its memory for the writer's lifetime.
	if cap(sw.raw) > 4*blockSize+(1<<20) {
		sw.raw = nil
		sw.enc = nil
	}
	sw.raw = sw.raw[:0]
	sw.info = SegmentInfo{}
	sw.err = nil
	sw.closed = false
}

// Write appends one record to the segment.
func (sw *SegmentWriter) Write(key, value []byte) error {
	if sw.err != nil {
		return sw.err
	}
	if sw.closed {
		return errors.New("spill: write to a closed segment writer")
	}
	sw.raw = binary.AppendUvarint(sw.raw, uint64(len(key)))
	sw.raw = binary.AppendUvarint(sw.raw, uint64(len(value)))
	sw.raw = append(sw.raw, key...)
	sw.raw = append(sw.raw, value...)
	sw.info.Records++
	if len(sw.raw) >= sw.blockSize {
		return sw.flush()
	}
	return nil
}

// flush compresses and writes the pending raw block, if any.
func (sw *SegmentWriter) flush() error {
	if len(sw.raw) == 0 {
		return nil
	}
	maxLen := snappy.MaxEncodedLen(len(sw.raw))
	if maxLen < 0 {
		sw.err = fmt.Errorf("spill: block of %d raw bytes is too large for snappy", len(sw.raw))
		return sw.err
	}
	if cap(sw.enc) < maxLen {
		sw.enc = make([]byte, maxLen)
	}
	enc := snappy.Encode(sw.enc[:cap(sw.enc)], sw.raw)
	var hdr [2 * binary.MaxVarintLen64]byte
	n := binary.PutUvarint(hdr[:], uint64(len(enc)))
	n += binary.PutUvarint(hdr[n:], uint64(len(sw.raw)))
	if _, err := sw.w.Write(hdr[:n]); err != nil {
		sw.err = fmt.Errorf("spill: write block header: %w", err)
		return sw.err
	}
	if _, err := sw.w.Write(enc); err != nil {
		sw.err = fmt.Errorf("spill: write block of %d bytes: %w", len(enc), err)
		return sw.err
	}
	sw.info.CRC = crc32.Update(sw.info.CRC, castagnoli, hdr[:n])
	sw.info.CRC = crc32.Update(sw.info.CRC, castagnoli, enc)
	sw.info.Length += int64(n + len(enc))
	sw.info.RawLength += int64(len(sw.raw))
	sw.raw = sw.raw[:0]
	return nil
}

// Close writes the last block and returns the segment's description. Its
// Offset is 0; the caller places the segment in its file. Close does not
// close the underlying writer.
func (sw *SegmentWriter) Close() (SegmentInfo, error) {
	if sw.err != nil {
		return SegmentInfo{}, sw.err
	}
	if sw.closed {
		return SegmentInfo{}, errors.New("spill: segment writer closed twice")
	}
	if err := sw.flush(); err != nil {
		return SegmentInfo{}, err
	}
	sw.closed = true
	return sw.info, nil
}

// SegmentReader reads the records of one segment from a reader that yields
// exactly the segment's Length bytes. It implements Iterator. It checks the
// framing as it goes and, at the end of the segment, the CRC, the record
// count and the raw length against the SegmentInfo; any mismatch is an error
// wrapping ErrCorrupt. Records yielded before a mismatch is found at the end
// may be wrong, so a consumer must check Err before trusting what it read
// (or check the bytes first with VerifySegment).
type SegmentReader struct {
	r        io.Reader
	seg      SegmentInfo
	consumed int64 // on-disk bytes read so far
	rawSeen  int64 // raw bytes of the blocks decoded so far
	records  int64
	crc      uint32
	comp     []byte
	raw      []byte // the current decoded block
	pos      int
	key      []byte
	value    []byte
	err      error
	done     bool
	one      [1]byte
}

// NewSegmentReader returns a reader of the segment seg whose bytes r yields.
func NewSegmentReader(r io.Reader, seg SegmentInfo) *SegmentReader {
	sr := &SegmentReader{r: r, seg: seg}
	if seg.Length < 0 || seg.RawLength < 0 || seg.Records < 0 {
		sr.err = fmt.Errorf("%w: segment with negative length %d, raw length %d or record count %d",
			ErrCorrupt, seg.Length, seg.RawLength, seg.Records)
	}
	return sr
}

// Next advances to the next record.
func (sr *SegmentReader) Next() bool {
	for sr.pos >= len(sr.raw) {
		if sr.err != nil || sr.done {
			return false
		}
		if sr.consumed == sr.seg.Length {
			sr.finish()
			return false
		}
		if !sr.readBlock() {
			return false
		}
	}
	b := sr.raw[sr.pos:]
	var klen, vlen uint64
	var k int
	if len(b) >= 2 && b[0] < 0x80 && b[1] < 0x80 {
		klen, vlen, k = uint64(b[0]), uint64(b[1]), 2 // both lengths below 128
	} else {
		var n1, n2 int
		klen, n1 = binary.Uvarint(b)
		if n1 <= 0 {
			return sr.fail("%w: bad key length varint at raw offset %d of block", ErrCorrupt, sr.pos)
		}
		vlen, n2 = binary.Uvarint(b[n1:])
		if n2 <= 0 {
			return sr.fail("%w: bad value length varint at raw offset %d of block", ErrCorrupt, sr.pos)
		}
		k = n1 + n2
	}
	rest := uint64(len(b) - k)
	if klen > rest || vlen > rest-klen {
		return sr.fail("%w: record of key length %d and value length %d overruns its block (%d bytes left)",
			ErrCorrupt, klen, vlen, rest)
	}
	kEnd := k + int(klen)
	vEnd := kEnd + int(vlen)
	sr.key = b[k:kEnd:kEnd]
	sr.value = b[kEnd:vEnd:vEnd]
	sr.pos += vEnd
	sr.records++
	if sr.records > sr.seg.Records {
		return sr.fail("%w: segment holds more records than the %d expected", ErrCorrupt, sr.seg.Records)
	}
	return true
}

// fail records an error and returns false.
func (sr *SegmentReader) fail(format string, args ...any) bool {
	sr.err = fmt.Errorf(format, args...)
	sr.key, sr.value = nil, nil
	return false
}

// readFull reads exactly len(p) bytes of the segment, updating the CRC.
func (sr *SegmentReader) readFull(p []byte, what string) bool {
	if _, err := io.ReadFull(sr.r, p); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return sr.fail("%w: segment truncated while reading %s at byte %d of %d",
				ErrCorrupt, what, sr.consumed, sr.seg.Length)
		}
		return sr.fail("spill: read %s at byte %d of segment: %w", what, sr.consumed, err)
	}
	sr.crc = crc32.Update(sr.crc, castagnoli, p)
	sr.consumed += int64(len(p))
	return true
}

// readUvarint reads a uvarint of the block header without reading past the
// segment's length.
func (sr *SegmentReader) readUvarint(what string) (uint64, bool) {
	var x uint64
	var s uint
	for i := 0; i < binary.MaxVarintLen64; i++ {
		if sr.consumed >= sr.seg.Length {
			return 0, sr.fail("%w: block header (%s) runs past the segment's %d bytes", ErrCorrupt, what, sr.seg.Length)
		}
		if !sr.readFull(sr.one[:], what) {
			return 0, false
		}
		c := sr.one[0]
		if c < 0x80 {
			if i == binary.MaxVarintLen64-1 && c > 1 {
				break
			}
			return x | uint64(c)<<s, true
		}
		x |= uint64(c&0x7f) << s
		s += 7
	}
	return 0, sr.fail("%w: block header (%s) varint overflows at byte %d", ErrCorrupt, what, sr.consumed)
}

// readBlock reads and decodes the next block into sr.raw.
func (sr *SegmentReader) readBlock() bool {
	start := sr.consumed
	compLen, ok := sr.readUvarint("compressed length")
	if !ok {
		return false
	}
	rawLen, ok := sr.readUvarint("raw length")
	if !ok {
		return false
	}
	remaining := uint64(sr.seg.Length - sr.consumed)
	rawLeft := uint64(sr.seg.RawLength - sr.rawSeen)
	switch {
	case compLen == 0 || rawLen == 0:
		return sr.fail("%w: empty block (compressed length %d, raw length %d) at byte %d",
			ErrCorrupt, compLen, rawLen, start)
	case compLen > remaining:
		return sr.fail("%w: block at byte %d claims %d compressed bytes but the segment has %d left",
			ErrCorrupt, start, compLen, remaining)
	case rawLen > rawLeft:
		return sr.fail("%w: block at byte %d claims %d raw bytes but the segment's raw length leaves %d",
			ErrCorrupt, start, rawLen, rawLeft)
	case rawLen > compLen*maxSnappyRatio+64:
		return sr.fail("%w: block at byte %d claims %d raw bytes from only %d compressed bytes",
			ErrCorrupt, start, rawLen, compLen)
	}
	if uint64(cap(sr.comp)) < compLen {
		sr.comp = make([]byte, compLen)
	}
	comp := sr.comp[:compLen]
	if !sr.readFull(comp, "block") {
		return false
	}
	dlen, err := snappy.DecodedLen(comp)
	if err != nil {
		return sr.fail("%w: block at byte %d: %v", ErrCorrupt, start, err)
	}
	if uint64(dlen) != rawLen {
		return sr.fail("%w: block at byte %d: header says %d raw bytes, snappy data says %d",
			ErrCorrupt, start, rawLen, dlen)
	}
	if uint64(cap(sr.raw)) < rawLen {
		sr.raw = make([]byte, rawLen)
	}
	raw, err := snappy.Decode(sr.raw[:cap(sr.raw)], comp)
	if err != nil {
		return sr.fail("%w: block at byte %d: %v", ErrCorrupt, start, err)
	}
	sr.raw = raw
	sr.pos = 0
	sr.rawSeen += int64(len(raw))
	return true
}

// finish checks the segment's totals once all its bytes are read.
func (sr *SegmentReader) finish() {
	sr.done = true
	sr.key, sr.value = nil, nil
	switch {
	case sr.crc != sr.seg.CRC:
		sr.err = fmt.Errorf("%w: segment CRC32C mismatch: expected %08x, got %08x", ErrCorrupt, sr.seg.CRC, sr.crc)
	case sr.records != sr.seg.Records:
		sr.err = fmt.Errorf("%w: segment record count mismatch: expected %d, got %d", ErrCorrupt, sr.seg.Records, sr.records)
	case sr.rawSeen != sr.seg.RawLength:
		sr.err = fmt.Errorf("%w: segment raw length mismatch: expected %d, got %d", ErrCorrupt, sr.seg.RawLength, sr.rawSeen)
	}
}

// Key returns the current record's key, valid until the next Next.
func (sr *SegmentReader) Key() []byte { return sr.key }

// Value returns the current record's value, valid until the next Next.
func (sr *SegmentReader) Value() []byte { return sr.value }

// Err returns the first error met, if any.
func (sr *SegmentReader) Err() error { return sr.err }

// Close releases the reader's buffers; Next returns false afterwards. It
// does not close the underlying reader.
func (sr *SegmentReader) Close() error {
	sr.comp, sr.raw, sr.key, sr.value = nil, nil, nil, nil
	sr.pos = 0
	sr.done = true
	return nil
}

// VerifySegment checks the on-disk bytes of a segment against its
// description: length, CRC32C, block framing, decompression, record framing,
// record count and raw length. A mismatch is an error wrapping ErrCorrupt.
func VerifySegment(data []byte, seg SegmentInfo) error {
	if int64(len(data)) != seg.Length {
		return fmt.Errorf("%w: segment length mismatch: expected %d bytes, got %d", ErrCorrupt, seg.Length, len(data))
	}
	if got := crc32.Checksum(data, castagnoli); got != seg.CRC {
		return fmt.Errorf("%w: segment CRC32C mismatch: expected %08x, got %08x", ErrCorrupt, seg.CRC, got)
	}
	sr := NewSegmentReader(bytes.NewReader(data), seg)
	for sr.Next() {
	}
	err := sr.Err()
	sr.Close()
	return err
}
