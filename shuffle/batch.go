package shuffle

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"

	"gomr/spill"
)

// The batched shuffle protocol: one request fetches many segments of one
// reduce (many map attempts' spills) from one shuffle server, as Hadoop's
// ShuffleHandler serves several maps per request.
//
// Request: POST BatchPath with the body EncodeBatchRequest gives, all
// integers unsigned varints except the time (a signed varint):
//
//	"GMSB" | version | len(job) job | reduce | at (Unix ms) | n |
//	versions 1 and 3: n × (len(attempt) attempt | spill)
//	version 2:        n × (len(attempt) attempt | spill | offset | length)
//
// and HashHeader set to BatchRequestHash(secret, body): the HMAC covers the
// whole list (with version 2 every segment's byte range), the reduce and
// the signed time.
//
// Reply: 200 with ReplyHashHeader set to ReplyHash(secret, hash) and a body
// of one frame per requested segment, in the request's order, under the
// request's version:
//
//	"GMSR" | version |
//	version 1: n × (status byte | ok: length, raw length, records, crc uint32 LE, length bytes
//	                            | otherwise: len(message) message)
//	version 2: n × (status byte | ok: the requested length bytes
//	                            | otherwise: len(message) message)
//	version 3: n × (status byte | ok: offset, length, raw length, records, crc uint32 LE
//	                            | otherwise: len(message) message)
//
// so that each segment fails on its own: a segment the server does not have
// is a not-found frame, the others are served. With version 1 the server
// reads the spill's index and sends each segment's entry, which the fetcher
// checks against its announcement. With version 2 (BatchVersion, since
// 2026-11-26) the fetcher names each segment's place in the data file, from
// the announcement (spill.SegmentInfo's offset and length, relayed by the
// JobTracker), and the server serves that byte range of the attempt's data
// file after checking it lies inside the file, reading no index; the
// fetcher checks the bytes' CRC32C against the announcement, which covers
// what the index entry did: the file is the attempt's own (its directory
// is named after the attempt, and a spill is written once under a
// temporary name then renamed), a truncated file fails the range check,
// and different bytes (another attempt's output, a damaged file) fail the
// CRC. A server of version 1 answers a version 2 request with 400: the
// fetcher then asks that host with version 1 (Fetcher.FetchBatch).
// A server that cannot finish a segment it started breaks the connection;
// the fetcher keeps the segments before it.
//
// Version 3 (batchVersionEntries, since 2026-11-27) fetches no data: it
// asks for the index entries of this reduce's segments of the named
// spills, offset included, for a reduce whose JobTracker announces spills
// without their segments (Hadoop's way: one event per map output, the
// index read by the tracker that serves it, so that the JobTracker keeps
// nothing per reduce). The fetcher then fetches the segments by their
// byte range with version 2 and checks their bytes against the entries. A
// server that does not know version 3 answers it with 400.
const (
	// BatchPath is the URL path of the batched shuffle endpoint.
	BatchPath = "/mapOutputs"

	batchRequestMagic = "GMSB"
	batchReplyMagic   = "GMSR"

	// BatchVersion is the version of the batch formats a fetcher sends
	// first: segments named by their byte range. batchVersionIndexed is
	// the first version (segments named by attempt and spill, each served
	// with its index entry), which servers still answer and fetchers fall
	// back to.
	BatchVersion        = 2
	batchVersionIndexed = 1
	// batchVersionEntries asks for index entries only (resolve.go).
	batchVersionEntries = 3

	// maxSegmentBytes bounds a segment's length in a batch (the spill
	// writer's segments are far smaller), maxSegmentOffset its offset.
	maxSegmentBytes  = 1 << 31
	maxSegmentOffset = 1 << 50

	// MaxBatchSegments is the most segments one batched request may ask
	// for; the server refuses longer lists.
	MaxBatchSegments = 4096
	// maxBatchRequestBytes bounds a batched request's body.
	maxBatchRequestBytes = 1 << 20
	// maxIDLength bounds a job or attempt identifier in the batch formats.
	maxIDLength = 256
	// maxFrameMessage bounds a failed frame's message.
	maxFrameMessage = 1024
)

// Status of one segment in a batched reply.
const (
	frameOK         byte = 0
	frameNotFound   byte = 1
	frameBadRequest byte = 2
	frameError      byte = 3
)

// BatchItem names one segment of a batched request: partition
// BatchRequest.Reduce of spill Spill of attempt Attempt; with version 2,
// the Length bytes at Offset of the spill's data file (the segment's
// place as announced).
type BatchItem struct {
	Attempt string
	Spill   int
	Offset  int64
	Length  int64
}

// BatchRequest is a decoded batched request.
type BatchRequest struct {
	// Version is the format's version: BatchVersion or 1; 0 means
	// BatchVersion.
	Version int
	Job     string
	Reduce  int
	// At is the time the request was signed, Unix milliseconds.
	At    int64
	Items []BatchItem
}

// ErrBadBatch: a batched request or reply does not follow the format.
var ErrBadBatch = errors.New("shuffle: malformed batch")

// EncodeBatchRequest returns the body of a batched request. It fails on
// what DecodeBatchRequest would refuse (bad identifiers, negative numbers,
// an empty or too long list).
func EncodeBatchRequest(req BatchRequest) ([]byte, error) {
	return encodeBatchRequest(req.Version, req.Job, req.Reduce, req.At, len(req.Items), func(i int) BatchItem { return req.Items[i] })
}

// encodeBatchRequest is EncodeBatchRequest of n items, item(i) the i-th:
// the fetcher encodes its own list without building a []BatchItem first.
// An attempt is checked once per run of items that name it (a request's
// segments come in runs of one map attempt's spills).
func encodeBatchRequest(version int, job string, reduce int, at int64, n int, item func(i int) BatchItem) ([]byte, error) {
	if err := checkBatchID("job", job); err != nil {
		return nil, err
	}
	if reduce < 0 {
		return nil, fmt.Errorf("%w: reduce %d is negative", ErrBadBatch, reduce)
	}
	if n == 0 || n > MaxBatchSegments {
		return nil, fmt.Errorf("%w: %d segments, want 1 to %d", ErrBadBatch, n, MaxBatchSegments)
	}
	if version == 0 {
		version = BatchVersion
	}
	if version != BatchVersion && version != batchVersionIndexed && version != batchVersionEntries {
		return nil, fmt.Errorf("%w: version %d", ErrBadBatch, version)
	}
	first := item(0)
	b := make([]byte, 0, 32+len(job)+n*(len(first.Attempt)+12))
	b = append(b, batchRequestMagic...)
	b = append(b, byte(version))
	b = appendString(b, job)
	b = binary.AppendUvarint(b, uint64(reduce))
	b = binary.AppendVarint(b, at)
	b = binary.AppendUvarint(b, uint64(n))
	checked := ""
	for i := range n {
		it := first
		if i > 0 {
			it = item(i)
		}
		if i == 0 || it.Attempt != checked {
			if err := checkBatchID("attempt", it.Attempt); err != nil {
				return nil, err
			}
			checked = it.Attempt
		}
		if it.Spill < 0 {
			return nil, fmt.Errorf("%w: spill %d of attempt %s is negative", ErrBadBatch, it.Spill, it.Attempt)
		}
		b = appendString(b, it.Attempt)
		b = binary.AppendUvarint(b, uint64(it.Spill))
		if !namesRanges(version) {
			continue
		}
		if err := checkRange(it.Offset, it.Length); err != nil {
			return nil, fmt.Errorf("%w (spill %d of attempt %s)", err, it.Spill, it.Attempt)
		}
		b = binary.AppendUvarint(b, uint64(it.Offset))
		b = binary.AppendUvarint(b, uint64(it.Length))
	}
	if len(b) > maxBatchRequestBytes {
		return nil, fmt.Errorf("%w: request of %d bytes, more than %d", ErrBadBatch, len(b), maxBatchRequestBytes)
	}
	return b, nil
}

// DecodeBatchRequest parses a batched request's body. Every identifier must
// pass the same checks as the single-segment request's, the list must hold
// 1 to MaxBatchSegments items, and nothing may follow it.
func DecodeBatchRequest(b []byte) (BatchRequest, error) {
	return decodeBatchRequest(b, nil)
}

// decodeBatchRequest is DecodeBatchRequest with the items appended to
// items[:0] (grown if it is too short): the server recycles them (a
// request of 1,024 segments has some 50 KB of items, half the bytes the
// server allocated in BenchmarkBatchHandlerSmall).
func decodeBatchRequest(b []byte, items []BatchItem) (BatchRequest, error) {
	var req BatchRequest
	if len(b) > maxBatchRequestBytes {
		return req, fmt.Errorf("%w: request of %d bytes, more than %d", ErrBadBatch, len(b), maxBatchRequestBytes)
	}
	d := decoder{b: b}
	if string(d.bytes(len(batchRequestMagic))) != batchRequestMagic {
		return req, fmt.Errorf("%w: not a batch request (magic)", ErrBadBatch)
	}
	switch v := d.byte(); v {
	case BatchVersion, batchVersionIndexed, batchVersionEntries:
		req.Version = int(v)
	default:
		return req, fmt.Errorf("%w: batch request of version %d, this server knows %d to %d", ErrBadBatch, v, batchVersionIndexed, batchVersionEntries)
	}
	req.Job = d.string()
	reduce := d.uvarint()
	req.At = d.varint()
	n := d.uvarint()
	if d.err != nil {
		return req, d.err
	}
	if err := checkBatchID("job", req.Job); err != nil {
		return req, err
	}
	if reduce > 1<<31-1 {
		return req, fmt.Errorf("%w: reduce %d out of range", ErrBadBatch, reduce)
	}
	req.Reduce = int(reduce)
	if n == 0 || n > MaxBatchSegments {
		return req, fmt.Errorf("%w: %d segments, want 1 to %d", ErrBadBatch, n, MaxBatchSegments)
	}
	if uint64(cap(items)) < n {
		items = make([]BatchItem, 0, n)
	}
	req.Items = items[:0]
	prev := ""
	for range n {
		// Consecutive segments are mostly of one attempt: one string.
		attempt := d.stringAgain(prev)
		k := d.uvarint()
		if d.err != nil {
			return req, d.err
		}
		if attempt != prev || len(req.Items) == 0 {
			if err := checkBatchID("attempt", attempt); err != nil {
				return req, err
			}
		}
		prev = attempt
		if k > 1<<31-1 {
			return req, fmt.Errorf("%w: spill %d out of range", ErrBadBatch, k)
		}
		it := BatchItem{Attempt: attempt, Spill: int(k)}
		if namesRanges(req.Version) {
			off, n := d.uvarint(), d.uvarint()
			if d.err != nil {
				return req, d.err
			}
			if off > maxSegmentOffset || n > maxSegmentBytes {
				return req, fmt.Errorf("%w: segment of %d bytes at offset %d out of range", ErrBadBatch, n, off)
			}
			it.Offset, it.Length = int64(off), int64(n)
		}
		req.Items = append(req.Items, it)
	}
	if len(d.b) != 0 {
		return req, fmt.Errorf("%w: %d bytes after the last segment", ErrBadBatch, len(d.b))
	}
	return req, nil
}

// namesRanges tells whether a request of the version names each
// segment's byte range (version 2), or only its attempt and spill.
func namesRanges(version int) bool { return version == BatchVersion }

// checkRange checks a version 2 item's byte range.
func checkRange(offset, length int64) error {
	if offset < 0 || offset > maxSegmentOffset || length < 0 || length > maxSegmentBytes {
		return fmt.Errorf("%w: segment of %d bytes at offset %d out of range", ErrBadBatch, length, offset)
	}
	return nil
}

func checkBatchID(name, v string) error {
	if len(v) > maxIDLength {
		return fmt.Errorf("%w: %s of %d bytes, more than %d", ErrBadBatch, name, len(v), maxIDLength)
	}
	if err := checkID(name, v); err != nil {
		return fmt.Errorf("%w: %w", ErrBadBatch, err)
	}
	return nil
}

// BatchRequestHash returns the base64 HMAC-SHA256, keyed with the job's
// secret, of a batched request's body. The body starts with a magic that
// is neither a decimal length (RequestHash's messages) nor base64 text
// (ReplyHash's), so no two kinds of message share a signature.
func BatchRequestHash(secret, body []byte) string {
	return sign(secret, body)
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// decoder reads the batch formats from a byte slice; its first error
// sticks and every later read returns zero values.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: truncated or bad %s", ErrBadBatch, what)
	}
	d.b = nil
}

func (d *decoder) bytes(n int) []byte {
	if d.err != nil || n < 0 || n > len(d.b) {
		d.fail("field")
		return nil
	}
	v := d.b[:n]
	d.b = d.b[n:]
	return v
}

func (d *decoder) byte() byte {
	v := d.bytes(1)
	if v == nil {
		return 0
	}
	return v[0]
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail("integer")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail("integer")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) string() string {
	return d.stringAgain("")
}

// stringAgain is string, returning prev itself, not a copy, if the string
// read equals it.
func (d *decoder) stringAgain(prev string) string {
	n := d.uvarint()
	if n > maxIDLength {
		d.fail("identifier length")
		return ""
	}
	b := d.bytes(int(n))
	if string(b) == prev {
		return prev
	}
	return string(b)
}

// appendFrameHeader appends the header of a served segment's frame.
func appendFrameHeader(b []byte, seg spill.SegmentInfo) []byte {
	b = append(b, frameOK)
	b = binary.AppendUvarint(b, uint64(seg.Length))
	b = binary.AppendUvarint(b, uint64(seg.RawLength))
	b = binary.AppendUvarint(b, uint64(seg.Records))
	return binary.LittleEndian.AppendUint32(b, seg.CRC)
}

// appendFrameFailure appends the frame of a segment that is not served.
func appendFrameFailure(b []byte, status byte, msg string) []byte {
	if len(msg) > maxFrameMessage {
		msg = msg[:maxFrameMessage]
	}
	b = append(b, status)
	return appendString(b, msg)
}

// frame is one segment's frame of a batched reply as the reader sees it:
// a served segment's index entry (Offset is not sent), or a failure.
type frame struct {
	status byte
	seg    spill.SegmentInfo
	msg    string
}

// frameReader reads a batched reply's frames.
type frameReader struct {
	r       *bufio.Reader
	version byte // the reply's format (readMagic checks it)
}

// frameBuffers recycles the frame readers' buffers: large enough for the
// headers and a few small segments, while larger segments are read past
// them.
var frameBuffers = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 16<<10) }}

// newFrameReader reads the frames of a reply of the given version.
func newFrameReader(r io.Reader, version int) *frameReader {
	br := frameBuffers.Get().(*bufio.Reader)
	br.Reset(r)
	return &frameReader{r: br, version: byte(version)}
}

// release gives the reader's buffer back; the reader is not used after.
func (fr *frameReader) release() {
	fr.r.Reset(nil)
	frameBuffers.Put(fr.r)
	fr.r = nil
}

// readMagic checks the reply's magic and version.
func (fr *frameReader) readMagic() error {
	var m [len(batchReplyMagic) + 1]byte
	if _, err := io.ReadFull(fr.r, m[:]); err != nil {
		return fmt.Errorf("read batch reply header: %w", err)
	}
	if string(m[:len(batchReplyMagic)]) != batchReplyMagic || m[len(batchReplyMagic)] != fr.version {
		return fmt.Errorf("%w: not a batch reply (magic or version)", ErrBadBatch)
	}
	return nil
}

// next reads one frame's header (not its data). A served frame's length
// must be at most maxLen, which the caller takes from the announcement, so
// that a lying server cannot make the reader allocate without bound. A
// served frame of version 2 has no header after its status: its data is
// the maxLen bytes the request asked for (f.seg.Length).
func (fr *frameReader) next(maxLen int64) (frame, error) {
	var f frame
	st, err := fr.r.ReadByte()
	if err != nil {
		return f, fmt.Errorf("read frame status: %w", err)
	}
	f.status = st
	switch st {
	case frameOK:
		if fr.version != batchVersionIndexed {
			f.seg.Length = maxLen
			return f, nil
		}
		// The header is in the buffer already (a small segment's frame
		// usually is): decode it from there, without a call per byte.
		if b, _ := fr.r.Peek(min(fr.r.Buffered(), maxFrameHeader)); len(b) > 0 {
			if seg, n, ok := decodeFrameHeader(b); ok {
				_, _ = fr.r.Discard(n)
				f.seg = seg
				if f.seg.Length > maxLen {
					return f, fmt.Errorf("%w: frame of %d bytes, more than the %d announced", ErrSegmentMismatch, f.seg.Length, maxLen)
				}
				return f, nil
			}
		}
		var vals [3]uint64
		for i := range vals {
			if vals[i], err = binary.ReadUvarint(fr.r); err != nil {
				return f, fmt.Errorf("read frame header: %w", noEOF(err))
			}
			if vals[i] > 1<<62 {
				return f, fmt.Errorf("%w: frame field %d out of range", ErrBadBatch, vals[i])
			}
		}
		var crc [4]byte
		if _, err := io.ReadFull(fr.r, crc[:]); err != nil {
			return f, fmt.Errorf("read frame header: %w", noEOF(err))
		}
		f.seg = spill.SegmentInfo{Length: int64(vals[0]), RawLength: int64(vals[1]), Records: int64(vals[2]), CRC: binary.LittleEndian.Uint32(crc[:])}
		if f.seg.Length > maxLen {
			return f, fmt.Errorf("%w: frame of %d bytes, more than the %d announced", ErrSegmentMismatch, f.seg.Length, maxLen)
		}
		return f, nil
	case frameNotFound, frameBadRequest, frameError:
		n, err := binary.ReadUvarint(fr.r)
		if err != nil {
			return f, fmt.Errorf("read frame message: %w", noEOF(err))
		}
		if n > maxFrameMessage {
			return f, fmt.Errorf("%w: frame message of %d bytes", ErrBadBatch, n)
		}
		msg := make([]byte, n)
		if _, err := io.ReadFull(fr.r, msg); err != nil {
			return f, fmt.Errorf("read frame message: %w", noEOF(err))
		}
		f.msg = string(msg)
		return f, nil
	}
	return f, fmt.Errorf("%w: frame status %d", ErrBadBatch, st)
}

// maxFrameHeader is the longest header of a served frame after its status:
// three uvarints and the CRC.
const maxFrameHeader = 3*binary.MaxVarintLen64 + 4

// decodeFrameHeader decodes a served frame's header (after its status)
// from the start of b, as next reads it: ok is false if b does not hold a
// whole, valid one (the caller then reads it field by field, which finds
// the same values or reports the error).
func decodeFrameHeader(b []byte) (seg spill.SegmentInfo, n int, ok bool) {
	var vals [3]uint64
	for i := range vals {
		v, m := binary.Uvarint(b[n:])
		if m <= 0 || v > 1<<62 {
			return seg, 0, false
		}
		vals[i] = v
		n += m
	}
	if len(b)-n < 4 {
		return seg, 0, false
	}
	crc := binary.LittleEndian.Uint32(b[n:])
	n += 4
	return spill.SegmentInfo{Length: int64(vals[0]), RawLength: int64(vals[1]), Records: int64(vals[2]), CRC: crc}, n, true
}

// data reads a served frame's bytes into buf (of the frame's length).
func (fr *frameReader) data(buf []byte) error {
	if n, err := io.ReadFull(fr.r, buf); err != nil {
		return fmt.Errorf("got %d of %d bytes: %w", n, len(buf), noEOF(err))
	}
	return nil
}

// skip discards n bytes (a frame whose data is not wanted).
func (fr *frameReader) skip(n int64) error {
	if m, err := fr.r.Discard(int(n)); err != nil {
		return fmt.Errorf("skipped %d of %d bytes: %w", m, n, noEOF(err))
	}
	return nil
}

// noEOF turns a clean EOF in the middle of a frame into ErrUnexpectedEOF.
func noEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}
