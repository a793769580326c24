package mr

import (
	"fmt"

	"gomr/conf"
)

// Amoeba-style map splitting (docs/split.md): a running map stops after a
// record, commits the spills it has made, and a new attempt of the same
// map task resumes at the next record. What the input formats and the job
// declaration must provide lives here; the runtime's side is in
// tasktracker/child and jobtracker/split.go.

// KeySplitSafe is the job's declaration that its map (and combiner) keep
// no state across records, and its reduce none across key groups, so that
// a map may be stopped after any record (a reduce after any key group) and
// resumed in a new attempt without changing the job's output. The runtime
// cannot check it; it splits only the tasks of jobs that declare it.
const KeySplitSafe = "mapreduce.job.split.safe"

func init() {
	conf.Register(conf.Key{Name: KeySplitSafe, Type: conf.Bool, Default: "false",
		Description: "the job's map and combiner keep no state across records, and its reduce none across key groups, so a running map (reduce) may be split at its next record (key group) and its remainder run as a new attempt (docs/split.md)",
		Job:         true})
}

// PositionReader is a RecordReader that knows where its next record
// starts in the split's file.
type PositionReader interface {
	RecordReader
	// NextOffset is the byte offset in the split's file of the first
	// record not yet returned: after Next has returned true, the record
	// after the current one. A reader opened on Split.From(NextOffset())
	// returns exactly the records this one has not returned yet.
	NextOffset() int64
}

// ResumableInput is implemented by input formats whose splits can be
// resumed at any record: their readers are PositionReaders, and a reader
// opened on Split.From(off), off an offset one of them gave, starts with
// the record at off.
type ResumableInput interface {
	InputFormat
	// Resumable tells whether split can be resumed at a record (false,
	// say, for a compressed or otherwise unseekable file).
	Resumable(split Split) bool
}

// From is the rest of split s from byte offset off, the exact start of a
// record inside it: the same end, and ExactStart set so that the reader
// does not skip the partial line a split that starts mid-file begins with.
// off must be in [Start, Start+Length]: a line split owns the line that
// starts at its end, so End itself may start a remainder (of one line);
// past the end no record is left, and there is nothing to resume.
func (s Split) From(off int64) (Split, error) {
	end := s.Start + s.Length
	if off < s.Start || off > end {
		return Split{}, fmt.Errorf("resume offset %d is outside split %s@%d+%d", off, s.Path, s.Start, s.Length)
	}
	r := s
	r.Start = off
	r.Length = end - off
	r.ExactStart = true
	return r, nil
}

// Split counters (group SplitGroup), Hadoop-style: the runtime's own,
// printed under GroupDisplayName(SplitGroup).
const (
	// SplitGroup holds the map-split counters.
	SplitGroup = "gomr.Split"
	// MapSplits counts map attempts that were split (stopped early, their
	// remainder handed to a new attempt).
	MapSplits = "MAP_SPLITS"
	// SplitFragments counts the spills committed by split attempts.
	SplitFragments = "SPLIT_FRAGMENTS"
	// RemainderBytes is the input bytes handed to remainders (the split's
	// end minus the resume offset, summed over the splits).
	RemainderBytes = "REMAINDER_BYTES"
	// RemainderRecords is the input records read by attempts that resumed
	// a split map.
	RemainderRecords = "REMAINDER_RECORDS"
	// ReduceSplits counts reduce attempts that were split (stopped at a
	// key group, their output so far committed as a fragment).
	ReduceSplits = "REDUCE_SPLITS"
	// OutputFragments counts the output fragments committed by split
	// reduce attempts.
	OutputFragments = "OUTPUT_FRAGMENTS"
	// ScaleUpSplits counts the map splits whose remainder was cut into
	// several maps for idle slots (scale-up), and ScaleUpMaps the maps
	// they added.
	ScaleUpSplits = "SCALE_UP_SPLITS"
	ScaleUpMaps   = "SCALE_UP_MAPS"
	// ScaleUpReduceSplits counts the reduce splits whose rest was cut into
	// key ranges run by several reduces for idle slots, and
	// ScaleUpReduces the reduces they added (docs/split.md).
	ScaleUpReduceSplits = "SCALE_UP_REDUCE_SPLITS"
	ScaleUpReduces      = "SCALE_UP_REDUCES"
)
