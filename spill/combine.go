package spill

import (
	"bytes"
	"context"
	"fmt"

	"gomr/mr"
)

// CombineTo runs combiner over the key groups of the sorted records of it (the
// records whose keys compare equal under cmp, nil meaning bytes.Compare),
// writing what it emits to sw, and returns the records it read from it and
// the records it wrote. Every key the combiner emits must sort like its
// group's key, so that sw's segment stays sorted; a key that does not, a
// combiner's error or panic, an error of it and ctx's end stop it with an
// error naming the cause. The reduce side's merges use it to combine the
// records they write to disk, as Hadoop's MergeManager runs the job's
// combiner when it merges in-memory map outputs to disk.
func CombineTo(ctx context.Context, tc mr.TaskContext, combiner mr.Reducer, it Iterator, cmp mr.Comparator, sw *SegmentWriter) (in, out int64, err error) {
	if cmp == nil {
		cmp = bytes.Compare
	}
	counted := &countingIterator{Iterator: it}
	g := NewGrouper(counted, cmp)
	ce := &combineEmitter{sw: sw, cmp: cmp}
	for n := 0; g.NextKey(); n++ {
		if n&1023 == 0 && ctx.Err() != nil {
			return counted.n, ce.n, fmt.Errorf("combine: %w", ctx.Err())
		}
		ce.setKey(g.Key())
		if err := callCombiner(combiner, tc, g.Key(), g.Values(), ce); err != nil {
			return counted.n, ce.n, fmt.Errorf("combiner: %w", err)
		}
	}
	if err := g.Err(); err != nil {
		return counted.n, ce.n, err
	}
	return counted.n, ce.n, nil
}

// countingIterator counts the records an Iterator gives.
type countingIterator struct {
	Iterator
	n int64
}

func (c *countingIterator) Next() bool {
	if c.Iterator.Next() {
		c.n++
		return true
	}
	return false
}
