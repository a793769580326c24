package apps

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/bits"

	"gomr/mr"
	"gomr/mr/fs"
)

// RowRangeInput is an input format that reads no storage: it generates the
// row ids 0 .. rows-1, divided into contiguous ranges, one per map, as
// Hadoop's TeraGen.RangeInputFormat does.
//
// Splits reads the job parameters "rows" (required, >= 0) and "maps"
// (optional, default 1, >= 1). Map i gets the rows from
// ceil(rows*i/maps) up to ceil(rows*(i+1)/maps); there are never more maps
// than rows, and zero rows make one empty split. A split's Start is its
// first row and Length its row count; Path is empty.
//
// The reader yields key = the row id as 8 bytes big-endian and an empty
// value. Progress is the fraction of the split's rows read; BytesRead is 0.
type RowRangeInput struct{}

// Splits divides the rows among the maps.
func (RowRangeInput) Splits(sc mr.SplitContext) ([]mr.Split, error) {
	param := func(name string) string { return sc.Params[name] }
	rows, err := paramInt(param, "rows")
	if err != nil {
		return nil, fmt.Errorf("row range input: %w", err)
	}
	if rows < 0 {
		return nil, fmt.Errorf("row range input: job parameter rows=%d is negative", rows)
	}
	maps := int64(1)
	if sc.Params["maps"] != "" {
		if maps, err = paramInt(param, "maps"); err != nil {
			return nil, fmt.Errorf("row range input: %w", err)
		}
		if maps < 1 {
			return nil, fmt.Errorf("row range input: job parameter maps=%d must be at least 1", maps)
		}
	}
	return rowRanges(rows, maps), nil
}

// rowRanges cuts [0, rows) into at most maps contiguous ranges, the way
// Hadoop's TeraGen does: range i ends at ceil(rows*(i+1)/maps).
func rowRanges(rows, maps int64) []mr.Split {
	if rows == 0 {
		return []mr.Split{{Start: 0, Length: 0}}
	}
	if maps > rows {
		maps = rows
	}
	splits := make([]mr.Split, 0, maps)
	var cur int64
	for i := int64(0); i < maps; i++ {
		// ceil(rows*(i+1)/maps) in 128-bit arithmetic; the quotient is at
		// most rows, so it fits in 64 bits.
		hi, lo := bits.Mul64(uint64(rows), uint64(i+1))
		lo, carry := bits.Add64(lo, uint64(maps-1), 0)
		hi += carry
		goal, _ := bits.Div64(hi, lo, uint64(maps))
		splits = append(splits, mr.Split{Start: cur, Length: int64(goal) - cur})
		cur = int64(goal)
	}
	return splits
}

// Open returns a reader of the split's rows.
func (RowRangeInput) Open(_ context.Context, split mr.Split, _ map[string]string) (mr.RecordReader, error) {
	if split.Start < 0 || split.Length < 0 {
		return nil, fmt.Errorf("row range input: bad split (start %d, length %d)", split.Start, split.Length)
	}
	return &rowRangeReader{start: split.Start, total: split.Length}, nil
}

type rowRangeReader struct {
	start, total, done int64
	key                [8]byte
}

func (r *rowRangeReader) Next() bool {
	if r.done >= r.total {
		return false
	}
	binary.BigEndian.PutUint64(r.key[:], uint64(r.start+r.done))
	r.done++
	return true
}

func (r *rowRangeReader) Key() []byte   { return r.key[:] }
func (r *rowRangeReader) Value() []byte { return nil }
func (r *rowRangeReader) Err() error    { return nil }
func (r *rowRangeReader) BytesRead() int64 {
	return 0
}
func (r *rowRangeReader) Close() error { return nil }

func (r *rowRangeReader) Progress() float64 {
	if r.total == 0 {
		return 1
	}
	return float64(r.done) / float64(r.total)
}

// NullOutput is an output format that discards every record and creates no
// file, as Hadoop's NullOutputFormat; the runtime still creates and commits
// the (empty) output directory.
type NullOutput struct{}

// Create returns a writer that discards its records; it touches no file.
func (NullOutput) Create(fs.FS, string) (mr.RecordWriter, error) { return nullWriter{}, nil }

type nullWriter struct{}

func (nullWriter) Write(_, _ []byte) error { return nil }
func (nullWriter) BytesWritten() int64     { return 0 }
func (nullWriter) Close() error            { return nil }
func (nullWriter) Flush() error            { return nil }
