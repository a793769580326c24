package mr

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

	"gomr/mr/fs"
)

// SplitSlop is FileInputFormat's SPLIT_SLOP: a file is cut into splits of
// the split size while the remainder is more than SplitSlop split sizes, so
// the last split of a file may be up to 1.1 times the split size.
const SplitSlop = 1.1

// readBufferSize is the size of the buffers the record readers read
// storage through.
const readBufferSize = 256 << 10

// InputPathError reports a job input path that does not exist, or a glob
// pattern that matches nothing. Its message is "input path does not
// exist: <path>", or "input pattern <pattern> matches no files"; it
// unwraps to the filesystem's error, so errors.Is(err, fs.ErrNotExist)
// holds.
type InputPathError struct {
	Path string
	// Pattern says Path is a glob pattern that matched no (visible) path.
	Pattern bool
	Err     error
}

func (e *InputPathError) Error() string {
	if e.Pattern {
		return "input pattern " + e.Path + " matches no files"
	}
	return "input path does not exist: " + e.Path
}

// Unwrap returns the underlying filesystem error.
func (e *InputPathError) Unwrap() error { return e.Err }

// listInputFiles expands a job's input paths into the files to read, in
// order: a file path is itself; a directory contributes its files (not
// recursively: subdirectories are skipped, as are entries whose names
// start with "_" or ".", such as _SUCCESS, _logs and .crc files). A file
// named explicitly is read whatever its name. A missing path is an
// *InputPathError. Files of size zero are kept; the callers drop them.
// An input path, or a directory entry that is not skipped, that is neither
// a regular file nor a directory (a FIFO, a device, a socket; symbolic
// links count as what they point to) is an error wrapping an
// *fs.NotRegularError: "input <path> is a named pipe (FIFO), not a regular
// file or directory". Its size, zero, would otherwise have it dropped as
// empty and the job succeed without reading it.
func listInputFiles(sc SplitContext) ([]fs.FileInfo, error) {
	ctx := sc.Ctx
	if ctx == nil {
		ctx = context.Background()
	}
	var files []fs.FileInfo
	inputs, err := expandInputGlobs(sc.Inputs)
	if err != nil {
		return nil, err
	}
	for _, in := range inputs {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("listing input %s: %w", in, err)
		}
		fsys, err := fs.Resolve(in)
		if err != nil {
			return nil, fmt.Errorf("input path %s: %w", in, err)
		}
		entries, err := fsys.List(in)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil, &InputPathError{Path: in, Err: err}
			}
			return nil, fmt.Errorf("listing input path %s: %w", in, err)
		}
		single := len(entries) == 1 && entries[0].Path == in && !entries[0].IsDir
		for _, e := range entries {
			if e.IsDir {
				continue
			}
			if !single && hiddenName(e.Path) {
				continue
			}
			if err := e.CheckRegular(); err != nil {
				if single {
					return nil, fmt.Errorf("input %w", err)
				}
				return nil, fmt.Errorf("input %w (in input directory %s)", err, in)
			}
			files = append(files, e)
		}
	}
	return files, nil
}

// expandInputGlobs replaces each input path with glob metacharacters
// (/in/*.txt, hdfs://nn:8020/logs/*/part-*) by the paths it matches,
// sorted, leaving out hidden ones (names starting with "_" or "."), as
// Hadoop's FileInputFormat does; each match is then read as if named
// (a directory contributes its files). A pattern that matches nothing is
// an *InputPathError: "input pattern /in/*.txt matches no files".
func expandInputGlobs(inputs []string) ([]string, error) {
	var out []string
	for _, in := range inputs {
		if !fs.HasMeta(in) {
			out = append(out, in)
			continue
		}
		matches, err := fs.Glob(in)
		if err != nil {
			return nil, err
		}
		n := len(out)
		for _, m := range matches {
			if !hiddenName(m) {
				out = append(out, m)
			}
		}
		if len(out) == n {
			return nil, &InputPathError{Path: in, Pattern: true, Err: fs.ErrNotExist}
		}
	}
	return out, nil
}

// hiddenName tells whether the last element of p starts with "_" or ".".
func hiddenName(p string) bool {
	p = strings.TrimRight(p, "/")
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		p = p[i+1:]
	}
	return strings.HasPrefix(p, "_") || strings.HasPrefix(p, ".")
}

// splitSize is the split size FileInputFormat computes when there is no
// block size: max(minSize, maxSize), where an unset (non-positive)
// MaxSplitSize means unlimited and MinSplitSize is at least one byte.
func splitSize(sc SplitContext) int64 {
	maxSize := sc.MaxSplitSize
	if maxSize <= 0 {
		maxSize = math.MaxInt64
	}
	return max(sc.MinSplitSize, maxSize, 1)
}

// fileSplits cuts a file of the given size into splits of splitSize bytes,
// the last one taking the remainder of up to SplitSlop split sizes.
func fileSplits(path string, size, splitSize int64) []Split {
	var out []Split
	remaining := size
	for float64(remaining)/float64(splitSize) > SplitSlop {
		out = append(out, Split{Path: path, Start: size - remaining, Length: splitSize})
		remaining -= splitSize
	}
	if remaining != 0 {
		out = append(out, Split{Path: path, Start: size - remaining, Length: remaining})
	}
	return out
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// openAt opens the file of a split and seeks to off.
func openAt(path string, off int64) (fs.File, error) {
	fsys, err := fs.Resolve(path)
	if err != nil {
		return nil, fmt.Errorf("opening split of %s: %w", path, err)
	}
	f, err := fsys.Open(path)
	if err != nil {
		return nil, fmt.Errorf("opening split: %w", err)
	}
	if off != 0 {
		if _, err := f.Seek(off, io.SeekStart); err != nil {
			f.Close()
			return nil, fmt.Errorf("seeking %s to offset %d: %w", path, off, err)
		}
	}
	return f, nil
}

// progress is (pos-start)/(end-start), clamped to [0, 1], or 1 once the
// reader is done.
func progress(pos, start, end int64, done bool) float64 {
	if done {
		return 1
	}
	if end <= start {
		return 0
	}
	p := float64(pos-start) / float64(end-start)
	return min(max(p, 0), 1)
}

// TextInput is Hadoop's TextInputFormat: records are the lines of text
// files, keyed by the byte offset of the line's start as 8 bytes
// big-endian, valued by the line without its '\n' and any '\r' before it.
//
// Each input path is a file or a directory whose files are read (not
// recursively; names starting with "_" or "." are skipped). Files are cut
// into splits of max(MinSplitSize, MaxSplitSize) bytes, the last up to
// SplitSlop times that; empty files give no split. A split owns every line
// that starts at an offset in (Start, Start+Length], plus the line at
// offset 0 for the first split: a split that starts past 0 skips the
// partial or whole line it begins in, which the previous split reads.
type TextInput struct{}

// Splits computes the splits of the job's input files.
func (TextInput) Splits(sc SplitContext) ([]Split, error) {
	files, err := listInputFiles(sc)
	if err != nil {
		return nil, err
	}
	size := splitSize(sc)
	var out []Split
	for _, f := range files {
		out = append(out, fileSplits(f.Path, f.Size, size)...)
	}
	return out, nil
}

// Open returns a reader of the lines of split.
func (TextInput) Open(ctx context.Context, split Split, params map[string]string) (RecordReader, error) {
	if split.Start < 0 || split.Length < 0 {
		return nil, fmt.Errorf("text split of %s has negative start %d or length %d", split.Path, split.Start, split.Length)
	}
	f, err := openAt(split.Path, split.Start)
	if err != nil {
		return nil, err
	}
	lr := newLineReader(ctx, f, split.Path, split.Start, split.Start+split.Length, readBufferSize)
	lr.exact = split.ExactStart
	return lr, nil
}

// Resumable tells that every text split can be resumed at a line: the
// files are read uncompressed, and a reader knows where its next line
// starts (NextOffset).
func (TextInput) Resumable(Split) bool { return true }

// lineReader implements LineRecordReader over a file positioned at start.
// It scans an internal buffer in place; a line longer than the buffer grows
// it, so there is no allocation per line.
type lineReader struct {
	ctx  context.Context
	f    fs.File
	path string
	src  countingReader

	buf  []byte
	r, w int // unread data is buf[r:w]
	eof  bool

	start, end int64
	pos        int64 // file offset of buf[r]

	// exact: start is a line's start (Split.ExactStart), not skipped.
	exact                 bool
	started, done, closed bool
	err                   error
	key                   [8]byte
	value                 []byte
}

func newLineReader(ctx context.Context, f fs.File, path string, start, end int64, bufSize int) *lineReader {
	if ctx == nil {
		ctx = context.Background()
	}
	return &lineReader{
		ctx: ctx, f: f, path: path, src: countingReader{r: f},
		buf:   make([]byte, bufSize),
		start: start, end: end, pos: start,
	}
}

// fill reads more data into the buffer, compacting or growing it when it
// is full. It sets eof at the end of the file.
func (lr *lineReader) fill() error {
	if err := lr.ctx.Err(); err != nil {
		return fmt.Errorf("reading %s: %w", lr.path, err)
	}
	if lr.r == lr.w {
		lr.r, lr.w = 0, 0
	}
	if lr.w == len(lr.buf) {
		if lr.r > 0 {
			lr.w = copy(lr.buf, lr.buf[lr.r:lr.w])
			lr.r = 0
		} else {
			grown := make([]byte, 2*len(lr.buf))
			copy(grown, lr.buf[:lr.w])
			lr.buf = grown
		}
	}
	for range 100 {
		n, err := lr.src.Read(lr.buf[lr.w:])
		lr.w += n
		if errors.Is(err, io.EOF) {
			lr.eof = true
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading %s at offset %d: %w", lr.path, lr.pos+int64(lr.w-lr.r)-int64(n), err)
		}
		if n > 0 {
			return nil
		}
	}
	return fmt.Errorf("reading %s: %w", lr.path, io.ErrNoProgress)
}

// skipFirstLine discards everything up to and including the first '\n'
// at or after the split's start.
func (lr *lineReader) skipFirstLine() error {
	for {
		if i := bytes.IndexByte(lr.buf[lr.r:lr.w], '\n'); i >= 0 {
			lr.r += i + 1
			lr.pos += int64(i + 1)
			return nil
		}
		lr.pos += int64(lr.w - lr.r)
		lr.r = lr.w
		if lr.eof {
			return nil
		}
		if err := lr.fill(); err != nil {
			return err
		}
	}
}

// Next reads the next line that starts at or before the split's end.
func (lr *lineReader) Next() bool {
	if lr.done || lr.err != nil || lr.closed {
		return false
	}
	if !lr.started {
		lr.started = true
		if lr.start > 0 && !lr.exact {
			if err := lr.skipFirstLine(); err != nil {
				lr.err = err
				return false
			}
		}
	}
	if lr.pos > lr.end {
		lr.done = true
		return false
	}
	scanned := 0 // bytes of buf[r:w] known to hold no '\n'
	var n, consumed int
	for {
		if i := bytes.IndexByte(lr.buf[lr.r+scanned:lr.w], '\n'); i >= 0 {
			n = scanned + i
			consumed = n + 1
			break
		}
		scanned = lr.w - lr.r
		if lr.eof {
			if scanned == 0 {
				lr.done = true
				return false
			}
			n, consumed = scanned, scanned
			break
		}
		if err := lr.fill(); err != nil {
			lr.err = err
			return false
		}
	}
	line := lr.buf[lr.r : lr.r+n]
	if n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	binary.BigEndian.PutUint64(lr.key[:], uint64(lr.pos))
	lr.value = line
	lr.r += consumed
	lr.pos += int64(consumed)
	return true
}

// NextOffset is the file offset of the line after the current one.
func (lr *lineReader) NextOffset() int64 { return lr.pos }

// Key returns the line's byte offset in the file, 8 bytes big-endian.
func (lr *lineReader) Key() []byte { return lr.key[:] }

// Value returns the line without its terminator.
func (lr *lineReader) Value() []byte { return lr.value }

// Err returns the first error met.
func (lr *lineReader) Err() error { return lr.err }

// Progress is the fraction of the split's bytes consumed.
func (lr *lineReader) Progress() float64 { return progress(lr.pos, lr.start, lr.end, lr.done) }

// BytesRead is the number of bytes read from the file.
func (lr *lineReader) BytesRead() int64 { return lr.src.n }

// Close closes the file.
func (lr *lineReader) Close() error {
	if lr.closed {
		return nil
	}
	lr.closed = true
	if err := lr.f.Close(); err != nil {
		return fmt.Errorf("closing %s: %w", lr.path, err)
	}
	return nil
}
