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

// checkCutSpill checks, once a map attempt cut a spill at recorded split
// point c, that its next spill is the one recorded there. An attempt that
// cut another number of spills before the point (its map is not
// deterministic) would number its spills after it as no other attempt of
// the task does, and the spills of its parts could no longer be matched
// with theirs: it fails instead.
func checkCutSpill(c *mrpb.MapCut, next int) error {
	if next != int(c.Spill) {
		return fmt.Errorf("non-deterministic map output: at the split point at offset %d the next spill is %d, but it was %d in the attempt that was split there", c.Offset, next, c.Spill)
	}
	return nil
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
// directory) fragment frag of reduce task index for partition partition,
// and records where the attempt stopped (and, for a split for idle
// slots, the bounds of the pieces of the rest); the attempt then commits
// it as any output and reports done with split set.
func (t *task) reduceSplitAt(c *mr.Committer, path string, partition, index, frag int, lastKey []byte, bounds [][]byte) error {
	want := fs.Join(c.AttemptDir(t.launch.AttemptId), mr.PieceFragmentName(partition, index, frag))
	if path != want {
		if err := c.FS.Rename(path, want); err != nil {
			return fmt.Errorf("making the output so far fragment %d: %w", frag, err)
		}
	}
	t.reduceCut = &mrpb.ReduceCut{LastKey: bytes.Clone(lastKey), Fragment: int32(frag), Bounds: bounds}
	t.split.Store(true)
	t.log.Info("reduce split", "fragment", frag, "last_key_bytes", len(lastKey))
	return nil
}

// Scale-up splits of reduces (docs/split.md): a reduce ordered split for
// idle slots (a fanout k > 1) stops at a key group as any split reduce,
// then reads the rest of its key range once, without reducing it, to find
// the keys that cut it into k pieces of about equal records; it reports
// them with its cut, and the JobTracker runs each piece as a reduce task
// of the partition.

// boundCandidates is about how many group ends a boundPicker keeps: the
// pieces' records are equal to within about 2/boundCandidates of the
// remainder (and of one key group, which is never cut).
const boundCandidates = 512

// boundPicker picks the keys that cut a sequence of key groups into
// pieces of about equal records. It is told, group by group in key order,
// each group's key and the records through it (from the first group's);
// it keeps a group's key when at least step records came since the last
// one kept, and when it holds twice boundCandidates keys it drops every
// other and doubles step, so that it holds few keys however many groups
// there are.
type boundPicker struct {
	cands []boundCand
	step  int64
	mark  int64
	total int64
}

// boundCand is a kept group end: the group's key, and the records from
// the first group through it.
type boundCand struct {
	key     []byte
	through int64
}

// add is told the next group: its key (copied when kept) and the records
// through it, more than through the group before.
func (b *boundPicker) add(key []byte, through int64) {
	if b.step == 0 {
		b.step = 1
	}
	b.total = through
	if through < b.mark {
		return
	}
	b.cands = append(b.cands, boundCand{key: bytes.Clone(key), through: through})
	b.mark = through + b.step
	if len(b.cands) >= 2*boundCandidates {
		kept := b.cands[:0]
		for i := 1; i < len(b.cands); i += 2 {
			kept = append(kept, b.cands[i])
		}
		b.cands = kept
		b.step *= 2
		b.mark = b.cands[len(b.cands)-1].through + b.step
	}
}

// bounds returns up to k-1 keys, increasing, that cut the groups seen
// into k pieces: piece i holds the groups after bounds[i-1] (the first,
// all from the first group) through bounds[i], the last piece those after
// the last bound. Each bound is the kept group end nearest to i/k of the
// records; a piece is never empty (a group larger than a piece leaves
// fewer pieces), and the last group is never a bound. No bounds for k < 2
// or fewer than two groups.
func (b *boundPicker) bounds(k int) [][]byte {
	if k < 2 {
		return nil
	}
	var out [][]byte
	prev := -1 // the last candidate taken
	for i := 1; i < k; i++ {
		target := (b.total*int64(i) + int64(k)/2) / int64(k)
		best := -1
		for j := prev + 1; j < len(b.cands) && b.cands[j].through < b.total; j++ {
			if best < 0 || absInt64(b.cands[j].through-target) < absInt64(b.cands[best].through-target) {
				best = j
			}
			if b.cands[j].through >= target {
				break
			}
		}
		if best < 0 {
			break
		}
		out = append(out, b.cands[best].key)
		prev = best
	}
	return out
}

func absInt64(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

// scanBounds reads the key groups from groups' current one (have: there
// is one) up to the task's end (through upper when bounded, under cmp),
// without reducing them, and returns up to k-1 keys that cut them into k
// pieces of about equal records (boundPicker). read is the records the
// merge has given so far, the current group's first included.
func scanBounds(ctx context.Context, groups *spill.Grouper, read func() int64, cmp mr.Comparator, upper []byte, bounded bool, k int) ([][]byte, error) {
	if cmp == nil {
		cmp = bytes.Compare
	}
	var p boundPicker
	base := read() - 1 // the records before the current group
	var key []byte
	for n := 1; ; n++ {
		if bounded && cmp(groups.Key(), upper) > 0 {
			break
		}
		key = append(key[:0], groups.Key()...)
		more := groups.NextKey()
		through := read() - base
		if more {
			through-- // the next group's first record
		}
		p.add(key, through)
		if !more {
			if err := groups.Err(); err != nil {
				return nil, fmt.Errorf("reading merged map output for the scale-up bounds: %w", err)
			}
			break
		}
		if n&1023 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
	}
	return p.bounds(k), nil
}

// reduceRange is the map-output partition a reduce launch reduces (its
// task index, or a scale-up piece's partition) and whether its key groups
// start after ReduceResume.AfterKey (a remainder after a fragment, or a
// piece after its lower bound).
func reduceRange(l *mrpb.LaunchTask) (partition int, lowered bool) {
	r := l.GetReduceResume()
	if r.GetPiece() {
		return int(r.GetPartition()), true
	}
	return int(l.GetIndex()), r.GetFragment() > 0
}

// keyCompare is cmp, or bytes.Compare when the job has none.
func keyCompare(cmp mr.Comparator) mr.Comparator {
	if cmp == nil {
		return bytes.Compare
	}
	return cmp
}
