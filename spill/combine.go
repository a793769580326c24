package spill

import (
	"bytes"
	"context"
	"encoding/binary"
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
	if isUvarintSum(combiner) {
		return combineSums(ctx, tc, combiner, it, cmp, sw)
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

// combineSums is CombineTo for a combiner that declares itself a uvarint
// sum (mr.UvarintSumCombiner): it sums each key group's values itself and
// runs the combiner once per group, on the sum alone (as the map side's
// combining table does), instead of walking the group's values through it.
func combineSums(ctx context.Context, tc mr.TaskContext, combiner mr.Reducer, it Iterator, cmp mr.Comparator, sw *SegmentWriter) (in, out int64, err error) {
	equal := isBytesCompare(cmp)
	ce := &combineEmitter{sw: sw, cmp: cmp}
	var key, buf []byte
	var sum uint64
	one := &oneValue{}
	flush := func() error {
		buf = binary.AppendUvarint(buf[:0], sum)
		one.v, one.done = buf, false
		ce.setKey(key)
		return callCombiner(combiner, tc, key, one, ce)
	}
	for it.Next() {
		in++
		if in&1023 == 0 && ctx.Err() != nil {
			return in, ce.n, fmt.Errorf("combine: %w", ctx.Err())
		}
		k, v := it.Key(), it.Value()
		x, n := binary.Uvarint(v)
		if n <= 0 || n != len(v) {
			return in, ce.n, fmt.Errorf("combiner: %w", notSumError(combiner, tc, k, v))
		}
		if in > 1 && (equal && bytes.Equal(k, key) || !equal && cmp(k, key) == 0) {
			sum += x
			continue
		}
		if in > 1 {
			if err := flush(); err != nil {
				return in, ce.n, fmt.Errorf("combiner: %w", err)
			}
		}
		key, sum = append(key[:0], k...), x
	}
	if err := it.Err(); err != nil {
		return in, ce.n, err
	}
	if in > 0 {
		if err := flush(); err != nil {
			return in, ce.n, fmt.Errorf("combiner: %w", err)
		}
	}
	return in, ce.n, nil
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
