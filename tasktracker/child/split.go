package child

import (
	"bytes"
	"context"
	"fmt"

	"gomr/mr"
	"gomr/mr/fs"
	"gomr/mrpb"
	"gomr/spill"
)

// Map splitting on the child's side (docs/split.md): a map attempt of a
// task that was split starts where its launch's MapResume says and cuts a
// spill at every recorded split point after it, so that its spills are
// byte for byte those of the attempts that ran before; and a running map
// ordered split stops after its current record, spills what it holds as
// its last, non-final spill, announcing where the remainder starts, and
// reports done with split set.

// mapCutter follows a map attempt's recorded split points: after each
// record it is told where the next record starts and how many records the
// task has read, and says whether a recorded cut falls there.
type mapCutter struct {
	cuts []*mrpb.MapCut // the recorded cuts after the attempt's start, by offset
	next int            // the first cut not reached yet
}

// newMapCutter checks the launch's cut list: offsets increasing, after
// the resume point, spills increasing from the first spill.
func newMapCutter(r *mrpb.MapResume) (*mapCutter, error) {
	if r == nil {
		return &mapCutter{}, nil
	}
	off, sp := r.Offset, r.FirstSpill
	for _, c := range r.Cuts {
		if c.Offset <= off || c.Spill <= sp {
			return nil, fmt.Errorf("split points out of order: cut at offset %d (spill %d) after offset %d (spill %d)", c.Offset, c.Spill, off, sp)
		}
		off, sp = c.Offset, c.Spill
	}
	return &mapCutter{cuts: r.Cuts}, nil
}

// pending tells whether recorded cuts are still ahead.
func (m *mapCutter) pending() bool { return m.next < len(m.cuts) }

// after is told, after a record, the offset of the next record and the
// records read so far (those before the attempt's start included); it
// returns the cut recorded there, if any. A record that runs past a cut,
// or a cut reached after another number of records than recorded, means
// the input is not what the split attempt read: an error.
func (m *mapCutter) after(off, records int64) (*mrpb.MapCut, error) {
	if !m.pending() {
		return nil, nil
	}
	c := m.cuts[m.next]
	switch {
	case off < c.Offset:
		return nil, nil
	case off > c.Offset:
		return nil, fmt.Errorf("the record before offset %d runs past the recorded split point at offset %d: the input changed since the task was split", off, c.Offset)
	case records != c.Records:
		return nil, fmt.Errorf("reached the split point at offset %d after %d records, but the split attempt read %d: the input changed since the task was split", off, records, c.Records)
	}
	m.next++
	return c, nil
}

// resumeSplit is the part of split the attempt reads: all of it (no
// resume point, or one at the split's start: first spill 0), or what
// follows the resume point, from the exact start of its record.
func resumeSplit(split mr.Split, r *mrpb.MapResume) (mr.Split, error) {
	if r == nil || r.FirstSpill == 0 {
		return split, nil
	}
	s, err := split.From(r.Offset)
	if err != nil {
		return mr.Split{}, fmt.Errorf("resuming the split map: %w", err)
	}
	return s, nil
}

// splitAt ends a map that was ordered split after a record: what the
// buffer holds becomes its last spill, not final, whose announcement says
// the remainder starts at offset off after records records with the next
// spill index; the attempt then reports done with split set.
func (t *task) splitAt(buf *spill.Buffer, off, records int64) error {
	t.splitCut = &mrpb.MapCut{Offset: off, Spill: int32(buf.NextIndex() + 1), Records: records}
	if err := buf.CloseSplit(); err != nil {
		return fmt.Errorf("last spill before the split: %w", err)
	}
	t.split.Store(true)
	t.log.Info("map split", "next_offset", off, "records", records, "next_spill", t.splitCut.Spill)
	return nil
}

// Reduce splitting (docs/split.md, spec §5.9.4): a reduce ordered split
// stops between two reduce() calls, at a key-group boundary, commits its
// output so far as the next fragment of its partition and reports the
// last key it reduced; the attempt that takes the rest skips the groups
// up to that key (skip-replay: it fetches the partition's segments whole)
// and writes the next fragment.

// skipGroupsThrough advances groups past every key group whose key is at
// most after under cmp (nil: bytes.Compare), starting with the current
// one (have: there is a current group). It returns whether a group is
// left, positioned on it.
func skipGroupsThrough(ctx context.Context, groups *spill.Grouper, cmp mr.Comparator, after []byte) (bool, error) {
	if cmp == nil {
		cmp = bytes.Compare
	}
	for n := 1; ; n++ {
		if cmp(groups.Key(), after) > 0 {
			return true, nil
		}
		if !groups.NextKey() {
			if err := groups.Err(); err != nil {
				return false, fmt.Errorf("reading merged map output: %w", err)
			}
			return false, nil
		}
		if n&1023 == 0 {
			if err := ctx.Err(); err != nil {
				return false, err
			}
		}
	}
}

// reduceSplitAt makes the closed output file at path (in the attempt's
// directory) fragment frag of partition index, and records where the
// attempt stopped; the attempt then commits it as any output and reports
// done with split set.
func (t *task) reduceSplitAt(c *mr.Committer, path string, index, frag int, lastKey []byte) error {
	want := fs.Join(c.AttemptDir(t.launch.AttemptId), mr.FragmentName(index, frag))
	if path != want {
		if err := c.FS.Rename(path, want); err != nil {
			return fmt.Errorf("making the output so far fragment %d: %w", frag, err)
		}
	}
	t.reduceCut = &mrpb.ReduceCut{LastKey: bytes.Clone(lastKey), Fragment: int32(frag)}
	t.split.Store(true)
	t.log.Info("reduce split", "fragment", frag, "last_key_bytes", len(lastKey))
	return nil
}
