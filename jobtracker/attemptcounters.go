package jobtracker

// An attempt's counters, kept in a form the garbage collector does not
// have to walk. The JobTracker keeps every attempt's last counters until
// its job retires (for the job's counters, the task pages, the history
// file and the event log): with 20-odd counters a report, as a real task
// sends, a counter set of maps took about 1.2 KB an attempt, all of it
// pointers the collector marks on every cycle, and at 10,000 trackers
// those sets were most of a 300-450 MB live heap whose mark phases made
// the heartbeat tail (docs/scaling.md). Here the values are one
// pointer-free slice, and the names one string shared by every report
// that carries the same names, interned with package unique: about
// 8 bytes a counter, and a set of names no report holds any more is freed
// with the last one.

import (
	"cmp"
	"encoding/binary"
	"iter"
	"slices"
	"unique"

	"gomr/mr"
	"gomr/mrpb"
)

// attemptCounters is an attempt's counters as its last report carried
// them. It is immutable once made, so a reader that copied it under the
// lock may read it without. The zero value is "no counters reported".
type attemptCounters struct {
	// names encodes the counters' groups and names in (group, name)
	// order (encodeCounterNames); values[i] is the i-th counter's value.
	names  unique.Handle[string]
	values []int64
}

// counterKey names one counter.
type counterKey struct{ group, name string }

// reported says whether the set was reported at all (an empty report
// is reported).
func (c attemptCounters) reported() bool { return c.names != unique.Handle[string]{} }

// len is the number of counters.
func (c attemptCounters) len() int { return len(c.values) }

// all yields the counters in (group, name) order.
func (c attemptCounters) all() iter.Seq2[counterKey, int64] {
	return func(yield func(counterKey, int64) bool) {
		if !c.reported() {
			return
		}
		s := c.names.Value()
		i := 0
		for pos := 0; pos < len(s); {
			var group string
			var n uint64
			group, pos = readCounterString(s, pos)
			n, pos = readCounterUvarint(s, pos)
			for ; n > 0; n-- {
				var name string
				name, pos = readCounterString(s, pos)
				if !yield(counterKey{group, name}, c.values[i]) {
					return
				}
				i++
			}
		}
	}
}

// get returns the value of (group, name), zero if absent.
func (c attemptCounters) get(group, name string) int64 {
	for k, v := range c.all() {
		if k.group == group && k.name == name {
			return v
		}
	}
	return 0
}

// set returns the counters as a counter set of their own (nil when none
// were reported).
func (c attemptCounters) set() mr.CounterSet {
	if !c.reported() {
		return nil
	}
	out := mr.CounterSet{}
	c.addTo(out)
	return out
}

// addTo adds the counters into s.
func (c attemptCounters) addTo(s mr.CounterSet) {
	for k, v := range c.all() {
		s.Add(k.group, k.name, v)
	}
}

// subtractFrom takes the counters out of s (the inverse of addTo, as
// mr.CounterSet.Subtract is of Merge).
func (c attemptCounters) subtractFrom(s mr.CounterSet) {
	for k, v := range c.all() {
		s.Sub(k.group, k.name, v)
	}
}

// countersOfStatus packs a status's counters. A counter named twice is
// summed, as countersFromProto does.
func countersOfStatus(cs []*mrpb.Counter) attemptCounters {
	keys := make([]counterKey, len(cs))
	values := make([]int64, len(cs))
	for i, c := range cs {
		keys[i], values[i] = counterKey{c.Group, c.Name}, c.Value
	}
	return packCounters(keys, values)
}

// countersOfSet packs a counter set (one read back from the event log).
func countersOfSet(s mr.CounterSet) attemptCounters {
	if s == nil {
		return attemptCounters{}
	}
	var keys []counterKey
	var values []int64
	for g, m := range s {
		for n, v := range m {
			keys = append(keys, counterKey{g, n})
			values = append(values, v)
		}
	}
	return packCounters(keys, values)
}

// packCounters packs counters given as parallel slices, which it may
// reorder.
func packCounters(keys []counterKey, values []int64) attemptCounters {
	order := func(a, b counterKey) int {
		if c := cmp.Compare(a.group, b.group); c != 0 {
			return c
		}
		return cmp.Compare(a.name, b.name)
	}
	if !slices.IsSortedFunc(keys, order) {
		idx := make([]int, len(keys))
		for i := range idx {
			idx[i] = i
		}
		slices.SortStableFunc(idx, func(a, b int) int { return order(keys[a], keys[b]) })
		k2, v2 := make([]counterKey, len(keys)), make([]int64, len(keys))
		for i, j := range idx {
			k2[i], v2[i] = keys[j], values[j]
		}
		keys, values = k2, v2
	}
	// Sum the counters named twice (adjacent once sorted).
	n := 0
	for i := range keys {
		if n > 0 && keys[i] == keys[n-1] {
			values[n-1] += values[i]
			continue
		}
		keys[n], values[n] = keys[i], values[i]
		n++
	}
	keys, values = keys[:n], values[:n]
	return attemptCounters{names: unique.Make(encodeCounterNames(keys)), values: slices.Clip(values)}
}

// encodeCounterNames encodes sorted counter keys: for each group, its
// name and number of counters, then the counters' names; every string is
// length-prefixed (uvarint), so a name may hold any bytes.
func encodeCounterNames(keys []counterKey) string {
	size := 0
	for _, k := range keys {
		size += len(k.group) + len(k.name) + 2*binary.MaxVarintLen64
	}
	b := make([]byte, 0, size)
	for i := 0; i < len(keys); {
		j := i + 1
		for j < len(keys) && keys[j].group == keys[i].group {
			j++
		}
		b = binary.AppendUvarint(b, uint64(len(keys[i].group)))
		b = append(b, keys[i].group...)
		b = binary.AppendUvarint(b, uint64(j-i))
		for _, k := range keys[i:j] {
			b = binary.AppendUvarint(b, uint64(len(k.name)))
			b = append(b, k.name...)
		}
		i = j
	}
	return string(b)
}

// readCounterUvarint reads a uvarint of an encoding made by
// encodeCounterNames at pos.
func readCounterUvarint(s string, pos int) (uint64, int) {
	var x uint64
	var shift uint
	for {
		b := s[pos]
		pos++
		x |= uint64(b&0x7f) << shift
		if b < 0x80 {
			return x, pos
		}
		shift += 7
	}
}

// readCounterString reads a length-prefixed string at pos (a substring:
// no copy).
func readCounterString(s string, pos int) (string, int) {
	n, pos := readCounterUvarint(s, pos)
	end := pos + int(n)
	return s[pos:end], end
}
