package mr

import "gomr/mr/fs"

// RawOutput writes each record as its key followed by its value, with
// nothing between or after them, as Hadoop's TeraOutputFormat does.
type RawOutput struct{}

// Create opens a raw writer on path.
func (RawOutput) Create(fsys fs.FS, path string) (RecordWriter, error) {
	w, err := newBufWriter(fsys, path)
	if err != nil {
		return nil, err
	}
	return &rawWriter{w}, nil
}

type rawWriter struct{ *bufWriter }

// Write writes the key then the value.
func (w *rawWriter) Write(key, value []byte) error {
	if err := w.usable(); err != nil {
		return err
	}
	w.bw.Write(key)
	_, err := w.bw.Write(value)
	return w.check(err)
}
