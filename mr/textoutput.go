package mr

import (
	"bufio"
	"errors"
	"fmt"
	"io"

	"gomr/mr/fs"
)

// writeBufferSize is the size of the output writers' buffers.
const writeBufferSize = 256 << 10

// TextOutput is Hadoop's TextOutputFormat: each record is written as the
// key, a tab, the value and a newline. A record with an empty value is
// written as the key and a newline alone, as Hadoop writes a record whose
// value is a NullWritable. (An empty key with a non-empty value is written
// as a tab, the value and a newline, as Hadoop writes an empty Text key.)
type TextOutput struct{}

// Create opens a text writer on path.
func (TextOutput) Create(fsys fs.FS, path string) (RecordWriter, error) {
	w, err := newBufWriter(fsys, path)
	if err != nil {
		return nil, err
	}
	return &textWriter{w}, nil
}

type textWriter struct{ *bufWriter }

// Write writes "key\tvalue\n", or "key\n" when the value is empty.
func (w *textWriter) Write(key, value []byte) error {
	if err := w.usable(); err != nil {
		return err
	}
	w.bw.Write(key)
	if len(value) > 0 {
		w.bw.WriteByte('\t')
		w.bw.Write(value)
	}
	return w.check(w.bw.WriteByte('\n'))
}

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// bufWriter is the buffered, counted file writer the output formats share.
// A bufio.Writer's errors are sticky, so the formats write a record's
// pieces and check the error of the last one.
type bufWriter struct {
	path   string
	wc     io.WriteCloser
	cw     countingWriter
	bw     *bufio.Writer
	closed bool
}

func newBufWriter(fsys fs.FS, path string) (*bufWriter, error) {
	if fsys == nil {
		return nil, fmt.Errorf("creating output file %s: no filesystem given", path)
	}
	wc, err := fsys.Create(path)
	if err != nil {
		return nil, fmt.Errorf("creating output file: %w", err)
	}
	return wrapBufWriter(wc, path), nil
}

// wrapBufWriter buffers and counts writes to wc, the file at path.
func wrapBufWriter(wc io.WriteCloser, path string) *bufWriter {
	w := &bufWriter{path: path, wc: wc}
	w.cw = countingWriter{w: wc}
	w.bw = bufio.NewWriterSize(&w.cw, writeBufferSize)
	return w
}

// usable returns an error if the writer is closed.
func (w *bufWriter) usable() error {
	if w.closed {
		return fmt.Errorf("writing %s: writer is closed", w.path)
	}
	return nil
}

// check wraps a write error with the file's name.
func (w *bufWriter) check(err error) error {
	if err != nil {
		return fmt.Errorf("writing %s: %w", w.path, err)
	}
	return nil
}

// BytesWritten is the number of bytes written to the file so far (buffered
// bytes count once they are flushed).
func (w *bufWriter) BytesWritten() int64 { return w.cw.n }

// Flush writes the buffered bytes to the file.
func (w *bufWriter) Flush() error {
	if err := w.usable(); err != nil {
		return err
	}
	return w.check(w.bw.Flush())
}

// Close flushes the buffer and closes the file; closing twice is a no-op.
func (w *bufWriter) Close() error {
	if w.closed {
		return nil
	}
	w.closed = true
	ferr := w.bw.Flush()
	cerr := w.wc.Close()
	if err := errors.Join(ferr, cerr); err != nil {
		return fmt.Errorf("closing %s: %w", w.path, err)
	}
	return nil
}
