package mr

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"

	"gomr/mr/fs"
)

// FixedLengthInput reads files of fixed-size binary records, such as
// TeraSort's 100-byte records with 10-byte keys: the key is the first
// KeyLength bytes of a record, the value the rest.
//
// Input paths are listed as by TextInput. Splits fall on record
// boundaries: the split size (as TextInput computes it) is rounded down to
// a multiple of RecordLength, and is at least one record; with
// Unsplittable each file is one split. A file whose size is not a multiple
// of RecordLength is an error.
type FixedLengthInput struct {
	RecordLength, KeyLength int
	Unsplittable            bool
}

func (in FixedLengthInput) check() error {
	if in.RecordLength <= 0 {
		return fmt.Errorf("fixed-length input: record length %d is not positive", in.RecordLength)
	}
	if in.KeyLength < 0 || in.KeyLength > in.RecordLength {
		return fmt.Errorf("fixed-length input: key length %d is outside [0, record length %d]", in.KeyLength, in.RecordLength)
	}
	return nil
}

// Splits computes record-aligned splits of the job's input files.
func (in FixedLengthInput) Splits(sc SplitContext) ([]Split, error) {
	if err := in.check(); err != nil {
		return nil, err
	}
	files, err := listInputFiles(sc)
	if err != nil {
		return nil, err
	}
	rl := int64(in.RecordLength)
	size := max(splitSize(sc)/rl*rl, rl)
	var out []Split
	for _, f := range files {
		if f.Size%rl != 0 {
			return nil, fmt.Errorf("fixed-length input file %s has size %d, not a multiple of the record length %d", f.Path, f.Size, rl)
		}
		if f.Size == 0 {
			continue
		}
		if in.Unsplittable {
			out = append(out, Split{Path: f.Path, Length: f.Size})
			continue
		}
		out = append(out, fileSplits(f.Path, f.Size, size)...)
	}
	return out, nil
}

// Resumable tells that every fixed-length split can be resumed at a
// record: records are found by arithmetic, and Open rounds a start up to
// a record boundary, which a resume offset already is.
func (in FixedLengthInput) Resumable(Split) bool { return true }

// Open returns a reader of the records of split: those that start in
// [Start, Start+Length), Start being rounded up to a record boundary.
func (in FixedLengthInput) Open(ctx context.Context, split Split, params map[string]string) (RecordReader, error) {
	if err := in.check(); err != nil {
		return nil, err
	}
	if split.Start < 0 || split.Length < 0 {
		return nil, fmt.Errorf("fixed-length split of %s has negative start %d or length %d", split.Path, split.Start, split.Length)
	}
	rl := int64(in.RecordLength)
	start := split.Start
	if r := start % rl; r != 0 {
		start += rl - r
	}
	end := split.Start + split.Length
	if start > end {
		start = end
	}
	f, err := openAt(split.Path, start)
	if err != nil {
		return nil, err
	}
	if ctx == nil {
		ctx = context.Background()
	}
	fr := &fixedReader{
		ctx: ctx, f: f, path: split.Path,
		recLen: in.RecordLength, keyLen: in.KeyLength,
		start: start, end: end, pos: start,
	}
	fr.src = countingReader{r: f}
	fr.br = bufio.NewReaderSize(&fr.src, max(readBufferSize, in.RecordLength))
	return fr, nil
}

// fixedReader reads fixed-size records, returning slices of its buffered
// reader's buffer (bufio.Reader.Peek) without copying.
type fixedReader struct {
	ctx            context.Context
	f              fs.File
	path           string
	src            countingReader
	br             *bufio.Reader
	recLen, keyLen int
	start, end     int64
	pos            int64
	rec            []byte
	n              int
	done, closed   bool
	err            error
}

// Next reads the next record.
func (fr *fixedReader) Next() bool {
	if fr.done || fr.err != nil || fr.closed {
		return false
	}
	if fr.pos >= fr.end {
		fr.done = true
		return false
	}
	if fr.n%1024 == 0 {
		if err := fr.ctx.Err(); err != nil {
			fr.err = fmt.Errorf("reading %s: %w", fr.path, err)
			return false
		}
	}
	if fr.rec != nil {
		if _, err := fr.br.Discard(fr.recLen); err != nil {
			fr.err = fmt.Errorf("reading %s at offset %d: %w", fr.path, fr.pos, err)
			return false
		}
		fr.pos += int64(fr.recLen)
		fr.rec = nil
		if fr.pos >= fr.end {
			fr.done = true
			return false
		}
	}
	rec, err := fr.br.Peek(fr.recLen)
	if len(rec) < fr.recLen {
		switch {
		case len(rec) == 0 && errors.Is(err, io.EOF):
			fr.err = fmt.Errorf("fixed-length file %s ends at offset %d, before the end of its split at %d", fr.path, fr.pos, fr.end)
		case errors.Is(err, io.EOF):
			fr.err = fmt.Errorf("fixed-length file %s: truncated record at offset %d (%d of %d bytes)", fr.path, fr.pos, len(rec), fr.recLen)
		default:
			fr.err = fmt.Errorf("reading %s at offset %d: %w", fr.path, fr.pos, err)
		}
		return false
	}
	fr.rec = rec
	fr.n++
	return true
}

// NextOffset is the file offset of the record after the current one.
func (fr *fixedReader) NextOffset() int64 {
	if fr.rec != nil {
		return fr.pos + int64(fr.recLen)
	}
	return fr.pos
}

// Key returns the first KeyLength bytes of the record.
func (fr *fixedReader) Key() []byte {
	if fr.rec == nil {
		return nil
	}
	return fr.rec[:fr.keyLen:fr.keyLen]
}

// Value returns the record after its key.
func (fr *fixedReader) Value() []byte {
	if fr.rec == nil {
		return nil
	}
	return fr.rec[fr.keyLen:]
}

// Err returns the first error met.
func (fr *fixedReader) Err() error { return fr.err }

// Progress is the fraction of the split's bytes consumed.
func (fr *fixedReader) Progress() float64 {
	pos := fr.pos
	if fr.rec != nil {
		pos += int64(fr.recLen)
	}
	return progress(pos, fr.start, fr.end, fr.done)
}

// BytesRead is the number of bytes read from the file.
func (fr *fixedReader) BytesRead() int64 { return fr.src.n }

// Close closes the file.
func (fr *fixedReader) Close() error {
	if fr.closed {
		return nil
	}
	fr.closed = true
	if err := fr.f.Close(); err != nil {
		return fmt.Errorf("closing %s: %w", fr.path, err)
	}
	return nil
}
