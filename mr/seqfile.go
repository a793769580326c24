package mr

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"gomr/mr/fs"
)

// SequenceHeader starts every sequence file.
const SequenceHeader = "GOMRSEQ1"

// MaxSequenceRecord is the largest key plus value a sequence file record
// may hold; writers refuse larger records and readers take a larger length
// as corruption, so that a damaged length never makes a reader allocate
// without bound.
const MaxSequenceRecord = 1 << 30

// SequenceInput reads our binary key-value files, which play the role of
// Hadoop's SequenceFile (but not its format): the header SequenceHeader,
// then records, each the key length and the value length as unsigned
// varints (encoding/binary), then the key and value bytes. Input paths are
// listed as by TextInput; files are not splittable, so each non-empty file
// is one split. Corrupt input is an error naming the file and the offset.
type SequenceInput struct{}

// Splits returns one split per non-empty input file.
func (SequenceInput) Splits(sc SplitContext) ([]Split, error) {
	files, err := listInputFiles(sc)
	if err != nil {
		return nil, err
	}
	var out []Split
	for _, f := range files {
		if f.Size > 0 {
			out = append(out, Split{Path: f.Path, Length: f.Size})
		}
	}
	return out, nil
}

// Open returns a reader of the records of a whole sequence file, or of
// its records from the offset of one of them (a split map's remainder:
// Split.From, ExactStart set).
func (SequenceInput) Open(ctx context.Context, split Split, params map[string]string) (RecordReader, error) {
	if split.Start != 0 && !split.ExactStart {
		return nil, fmt.Errorf("sequence file %s is not splittable, but its split starts at offset %d", split.Path, split.Start)
	}
	fsys, err := fs.Resolve(split.Path)
	if err != nil {
		return nil, fmt.Errorf("opening sequence file %s: %w", split.Path, err)
	}
	st, err := fsys.Stat(split.Path)
	if err != nil {
		return nil, fmt.Errorf("opening sequence file: %w", err)
	}
	f, err := fsys.Open(split.Path)
	if err != nil {
		return nil, fmt.Errorf("opening sequence file: %w", err)
	}
	sr := newSeqReader(ctx, f, split.Path, st.Size)
	sr.resumeAt = split.Start
	return sr, nil
}

// Resumable tells that a sequence file can be resumed at a record: the
// reader knows each record's offset, and seeks to it past the header.
func (SequenceInput) Resumable(Split) bool { return true }

// seqReader reads a sequence file of known size. Records that fit in its
// buffered reader are returned in place (bufio.Reader.Peek); larger ones
// are copied into a buffer grown to fit, bounded by the bytes left in the
// file and by MaxSequenceRecord.
type seqReader struct {
	ctx          context.Context
	f            io.Closer
	path         string
	size         int64
	src          countingReader
	br           *bufio.Reader
	pos          int64  // offset of the next unread byte
	pending      int    // bytes of the current record still in br, to discard
	limit        uint64 // MaxSequenceRecord; lowered by tests
	big          []byte
	key, value   []byte
	n            int
	started      bool
	done, closed bool
	err          error

	// resumeAt is the offset of the first record to read (0: the first
	// after the header).
	resumeAt int64
}

func newSeqReader(ctx context.Context, f fs.File, path string, size int64) *seqReader {
	if ctx == nil {
		ctx = context.Background()
	}
	sr := &seqReader{ctx: ctx, f: f, path: path, size: size, limit: MaxSequenceRecord}
	sr.src = countingReader{r: f}
	sr.br = bufio.NewReaderSize(&sr.src, readBufferSize)
	return sr
}

func (sr *seqReader) fail(format string, args ...any) bool {
	sr.err = fmt.Errorf("sequence file %s: "+format, append([]any{sr.path}, args...)...)
	sr.key, sr.value = nil, nil
	return false
}

func (sr *seqReader) readHeader() bool {
	var h [len(SequenceHeader)]byte
	n, err := io.ReadFull(sr.br, h[:])
	sr.pos += int64(n)
	if err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return sr.fail("bad header at offset 0: file holds only %d bytes", n)
		}
		return sr.fail("reading the header at offset 0: %w", err)
	}
	if string(h[:]) != SequenceHeader {
		return sr.fail("bad header %q at offset 0 (want %q)", h[:], SequenceHeader)
	}
	return true
}

// uvarint reads one length field.
func (sr *seqReader) uvarint(what string) (uint64, bool) {
	at := sr.pos
	var x uint64
	var s uint
	for i := 0; ; i++ {
		b, err := sr.br.ReadByte()
		if err != nil {
			if errors.Is(err, io.EOF) {
				sr.fail("truncated record: %s length at offset %d cut off by the end of the file", what, at)
			} else {
				sr.fail("reading %s length at offset %d: %w", what, at, err)
			}
			return 0, false
		}
		sr.pos++
		if i == binary.MaxVarintLen64 || i == binary.MaxVarintLen64-1 && b > 1 {
			sr.fail("corrupt record: %s length at offset %d overflows 64 bits", what, at)
			return 0, false
		}
		if b < 0x80 {
			return x | uint64(b)<<s, true
		}
		x |= uint64(b&0x7f) << s
		s += 7
	}
}

// Next reads the next record.
func (sr *seqReader) Next() bool {
	if sr.done || sr.err != nil || sr.closed {
		return false
	}
	if !sr.started {
		sr.started = true
		if !sr.readHeader() {
			return false
		}
		if sr.resumeAt > 0 && !sr.seek(sr.resumeAt) {
			return false
		}
	}
	if sr.pending > 0 {
		if _, err := sr.br.Discard(sr.pending); err != nil {
			return sr.fail("reading at offset %d: %w", sr.pos, err)
		}
		sr.pos += int64(sr.pending)
		sr.pending = 0
	}
	sr.n++
	if sr.n%1024 == 0 {
		if err := sr.ctx.Err(); err != nil {
			return sr.fail("reading at offset %d: %w", sr.pos, err)
		}
	}
	at := sr.pos
	if _, err := sr.br.Peek(1); errors.Is(err, io.EOF) {
		if sr.pos != sr.size {
			return sr.fail("file ends at offset %d but its size was %d", sr.pos, sr.size)
		}
		sr.done = true
		sr.key, sr.value = nil, nil
		return false
	}
	kl, ok := sr.uvarint("key")
	if !ok {
		return false
	}
	vl, ok := sr.uvarint("value")
	if !ok {
		return false
	}
	remaining := uint64(max(sr.size-sr.pos, 0))
	if kl > remaining || vl > remaining-kl {
		return sr.fail("corrupt record at offset %d: key length %d and value length %d exceed the %d bytes left in the file", at, kl, vl, remaining)
	}
	if kl+vl > sr.limit {
		return sr.fail("corrupt record at offset %d: key length %d plus value length %d exceed the limit of %d bytes", at, kl, vl, sr.limit)
	}
	total := int(kl + vl)
	var rec []byte
	if total <= sr.br.Size() {
		b, err := sr.br.Peek(total)
		if len(b) < total {
			if errors.Is(err, io.EOF) {
				return sr.fail("truncated record at offset %d: file ends after %d of its %d data bytes", at, len(b), total)
			}
			return sr.fail("reading record at offset %d: %w", at, err)
		}
		rec = b
		sr.pending = total
	} else {
		if cap(sr.big) < total {
			sr.big = make([]byte, total)
		}
		rec = sr.big[:total]
		n, err := io.ReadFull(sr.br, rec)
		sr.pos += int64(n)
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return sr.fail("truncated record at offset %d: file ends after %d of its %d data bytes", at, n, total)
			}
			return sr.fail("reading record at offset %d: %w", at, err)
		}
	}
	sr.key = rec[:kl:kl]
	sr.value = rec[kl:total:total]
	return true
}

// seek moves the reader to offset off, a record's start after the header.
func (sr *seqReader) seek(off int64) bool {
	if off < sr.pos || off > sr.size {
		return sr.fail("resume offset %d is outside the records (%d to %d)", off, sr.pos, sr.size)
	}
	sk, ok := sr.f.(io.Seeker)
	if !ok {
		return sr.fail("cannot seek to resume at offset %d", off)
	}
	if _, err := sk.Seek(off, io.SeekStart); err != nil {
		return sr.fail("seeking to offset %d: %w", off, err)
	}
	sr.br.Reset(&sr.src)
	sr.pos = off
	return true
}

// NextOffset is the file offset of the record after the current one.
func (sr *seqReader) NextOffset() int64 { return sr.pos + int64(sr.pending) }

// Key returns the record's key.
func (sr *seqReader) Key() []byte { return sr.key }

// Value returns the record's value.
func (sr *seqReader) Value() []byte { return sr.value }

// Err returns the first error met.
func (sr *seqReader) Err() error { return sr.err }

// Progress is the fraction of the file consumed.
func (sr *seqReader) Progress() float64 {
	return progress(sr.pos+int64(sr.pending), 0, sr.size, sr.done)
}

// BytesRead is the number of bytes read from the file.
func (sr *seqReader) BytesRead() int64 { return sr.src.n }

// Close closes the file.
func (sr *seqReader) Close() error {
	if sr.closed {
		return nil
	}
	sr.closed = true
	if err := sr.f.Close(); err != nil {
		return fmt.Errorf("closing %s: %w", sr.path, err)
	}
	return nil
}

// SequenceOutput writes sequence files in the format SequenceInput reads.
type SequenceOutput struct{}

// Create opens a sequence file writer on path and writes the header.
func (SequenceOutput) Create(fsys fs.FS, path string) (RecordWriter, error) {
	w, err := newBufWriter(fsys, path)
	if err != nil {
		return nil, err
	}
	return startSeqWriter(w), nil
}

// startSeqWriter buffers the header and returns the record writer.
func startSeqWriter(w *bufWriter) *seqWriter {
	// The buffer is empty and larger than the header, so this cannot fail;
	// a later flush error is reported by Write or Close.
	w.bw.WriteString(SequenceHeader)
	return &seqWriter{bufWriter: w, limit: MaxSequenceRecord}
}

type seqWriter struct {
	*bufWriter
	limit uint64 // MaxSequenceRecord; lowered by tests
	lens  [2 * binary.MaxVarintLen64]byte
}

// Write appends one record.
func (w *seqWriter) Write(key, value []byte) error {
	if err := w.usable(); err != nil {
		return err
	}
	if uint64(len(key))+uint64(len(value)) > w.limit {
		return fmt.Errorf("writing %s: record of key length %d and value length %d exceeds the sequence file limit of %d bytes", w.path, len(key), len(value), w.limit)
	}
	n := binary.PutUvarint(w.lens[:], uint64(len(key)))
	n += binary.PutUvarint(w.lens[n:], uint64(len(value)))
	w.bw.Write(w.lens[:n])
	w.bw.Write(key)
	_, err := w.bw.Write(value)
	return w.check(err)
}
