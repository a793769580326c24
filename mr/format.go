package mr

import (
	"context"

	"gomr/mr/fs"
)

// Split is one map task's share of the input: a byte range of a file for
// file-based formats, or a range of generated rows for generators such as
// TeraGen (Path empty, Start and Length in rows).
type Split struct {
	Path   string   `json:"path,omitempty"`
	Start  int64    `json:"start"`
	Length int64    `json:"length"`
	Hosts  []string `json:"hosts,omitempty"`
	// ExactStart says Start is the exact start of a record (a split map's
	// remainder, see From): a line reader does not skip to the next line.
	ExactStart bool `json:"exact_start,omitempty"`
}

// SplitContext is what an InputFormat needs to compute splits: the job's
// inputs and parameters, the split size limit, and the filesystems.
type SplitContext struct {
	Ctx context.Context
	// Inputs are the job's input paths or URIs.
	Inputs []string
	// Params are the job's parameters (JobSpec.Params).
	Params map[string]string
	// MaxSplitSize is mapreduce.input.fileinputformat.split.maxsize.
	MaxSplitSize int64
	// MinSplitSize is mapreduce.input.fileinputformat.split.minsize.
	MinSplitSize int64
}

// InputFormat turns a job's input into splits and a split into records.
type InputFormat interface {
	// Splits computes the job's input splits. A missing input path is an
	// error that names the path.
	Splits(sc SplitContext) ([]Split, error)
	// Open returns a reader of the records of one split.
	Open(ctx context.Context, split Split, params map[string]string) (RecordReader, error)
}

// RecordReader yields the records of one split.
type RecordReader interface {
	// Next advances to the next record; it returns false at the end of the
	// split or on error (see Err).
	Next() bool
	// Key and Value are valid until the next call to Next.
	Key() []byte
	Value() []byte
	// Err returns the first error met, if any.
	Err() error
	// Progress is the fraction of the split consumed, in [0, 1].
	Progress() float64
	// BytesRead is the number of bytes read from storage so far.
	BytesRead() int64
	Close() error
}

// OutputFormat writes a task's output file.
type OutputFormat interface {
	// Create opens a writer on path, a file in the task attempt's temporary
	// output directory, through fsys. Extension is appended to "part-r-NNNNN"
	// style names by the runtime and may be empty.
	Create(fsys fs.FS, path string) (RecordWriter, error)
}

// RecordWriter writes records to one output file.
type RecordWriter interface {
	Write(key, value []byte) error
	// BytesWritten is the number of bytes written to storage so far.
	BytesWritten() int64
	Close() error
}

// Flusher is implemented by record writers that can push their buffered
// records to storage without closing. A task being cloned flushes its
// output at its quiet point, so that the file on disk holds exactly what
// the process has written; a task whose writer is not a Flusher cannot be
// cloned while its output is open.
type Flusher interface {
	Flush() error
}
