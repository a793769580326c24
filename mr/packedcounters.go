package mr

// PackedCounters: a counter set in a form the garbage collector does not
// have to walk. The JobTracker keeps every attempt's last counters until
// its job retires (for the job's counters, the task pages, the history
// file and the event log): with 20-odd counters a report, as a real task
// sends, a CounterSet took about 1.5 KB an attempt, all of it pointers the
// collector marks on every cycle, and at 10,000 trackers those sets were
// most of a 300-450 MB live heap whose mark phases made the heartbeat tail
// (docs/scaling.md). Here the values are one pointer-free slice, and the
// names one string shared by every set that has the same names, interned
// with package unique: about 8 bytes a counter, and a set of names no set
// holds any more is freed with the last one.

import (
	"cmp"
	"encoding/binary"
	"encoding/json"
	"iter"
	"slices"
	"strconv"
	"unique"
)

// PackedCounters is an immutable set of counters, safe to share and to
// read from any goroutine. The zero value is "no counters" (Reported
// false), as a nil CounterSet is.
type PackedCounters struct {
	// names encodes the counters' groups and names in (group, name)
	// order (encodeCounterNames); values[i] is the i-th counter's value.
	names  unique.Handle[string]
	values []int64
}

// CounterKey names one counter.
type CounterKey struct{ Group, Name string }

// Reported says whether the set is one at all: false for the zero value,
// true for a set made by PackCounters, even of no counters.
func (c PackedCounters) Reported() bool { return c.names != unique.Handle[string]{} }

// Len is the number of counters.
func (c PackedCounters) Len() int { return len(c.values) }

// IsZero says whether the set has no counters (encoding/json's omitzero
// leaves it out then, as omitempty leaves out an empty CounterSet).
func (c PackedCounters) IsZero() bool { return len(c.values) == 0 }

// All yields the counters in (group, name) order.
func (c PackedCounters) All() iter.Seq2[CounterKey, int64] {
	return func(yield func(CounterKey, int64) bool) {
		if !c.Reported() {
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
				if !yield(CounterKey{group, name}, c.values[i]) {
					return
				}
				i++
			}
		}
	}
}

// Get returns the value of (group, name), zero if absent.
func (c PackedCounters) Get(group, name string) int64 {
	for k, v := range c.All() {
		if k.Group == group && k.Name == name {
			return v
		}
	}
	return 0
}

// Set returns the counters as a CounterSet of their own (nil when the set
// is not Reported).
func (c PackedCounters) Set() CounterSet {
	if !c.Reported() {
		return nil
	}
	out := CounterSet{}
	c.AddTo(out)
	return out
}

// AddTo adds the counters into s.
func (c PackedCounters) AddTo(s CounterSet) {
	for k, v := range c.All() {
		s.Add(k.Group, k.Name, v)
	}
}

// SubtractFrom takes the counters out of s, the inverse of AddTo, as
// CounterSet.Subtract is of Merge.
func (c PackedCounters) SubtractFrom(s CounterSet) {
	for k, v := range c.All() {
		s.Sub(k.Group, k.Name, v)
	}
}

// PackSet packs a CounterSet (nil: the zero PackedCounters).
func PackSet(s CounterSet) PackedCounters {
	if s == nil {
		return PackedCounters{}
	}
	var keys []CounterKey
	var values []int64
	for g, m := range s {
		for n, v := range m {
			keys = append(keys, CounterKey{g, n})
			values = append(values, v)
		}
	}
	return PackCounters(keys, values)
}

// PackCounters packs counters given as parallel slices, in any order; a
// counter named twice is summed. It leaves both slices as they are.
func PackCounters(keys []CounterKey, values []int64) PackedCounters {
	if countersInOrder(keys) {
		// As a task's child reports them (by group, then name, each
		// once): nothing to sort or sum.
		return PackedCounters{names: unique.Make(encodeCounterNames(keys)), values: slices.Clip(slices.Clone(values))}
	}
	type counter struct {
		key   CounterKey
		value int64
	}
	cs := make([]counter, len(keys))
	for i := range keys {
		cs[i] = counter{keys[i], values[i]}
	}
	slices.SortStableFunc(cs, func(a, b counter) int {
		if c := cmp.Compare(a.key.Group, b.key.Group); c != 0 {
			return c
		}
		return cmp.Compare(a.key.Name, b.key.Name)
	})
	// Sum the counters named twice (adjacent once sorted).
	sorted := make([]CounterKey, 0, len(cs))
	vals := make([]int64, 0, len(cs))
	for _, c := range cs {
		if n := len(sorted); n > 0 && sorted[n-1] == c.key {
			vals[n-1] += c.value
			continue
		}
		sorted, vals = append(sorted, c.key), append(vals, c.value)
	}
	return PackedCounters{names: unique.Make(encodeCounterNames(sorted)), values: slices.Clip(vals)}
}

// countersInOrder tells whether keys are in (group, name) order, each
// named once.
func countersInOrder(keys []CounterKey) bool {
	for i := 1; i < len(keys); i++ {
		a, b := keys[i-1], keys[i]
		if a.Group > b.Group || a.Group == b.Group && a.Name >= b.Name {
			return false
		}
	}
	return true
}

// MarshalJSON encodes the set as CounterSet.MarshalJSON encodes the same
// counters (null when not Reported), without making the set.
func (c PackedCounters) MarshalJSON() ([]byte, error) {
	if !c.Reported() {
		return []byte("null"), nil
	}
	buf := make([]byte, 0, 2+len(c.names.Value())+24*len(c.values))
	buf = append(buf, '{')
	group := ""
	for k, v := range c.All() {
		switch {
		case len(buf) == 1:
			buf = appendJSONString(buf, k.Group)
			buf = append(buf, ":{"...)
		case k.Group != group:
			buf = append(buf, "},"...)
			buf = appendJSONString(buf, k.Group)
			buf = append(buf, ":{"...)
		default:
			buf = append(buf, ',')
		}
		group = k.Group
		buf = appendJSONString(buf, k.Name)
		buf = append(buf, ':')
		buf = strconv.AppendInt(buf, v, 10)
	}
	if len(buf) > 1 {
		buf = append(buf, '}')
	}
	return append(buf, '}'), nil
}

// UnmarshalJSON decodes what MarshalJSON (or CounterSet's) encodes.
func (c *PackedCounters) UnmarshalJSON(data []byte) error {
	var s CounterSet
	if err := json.Unmarshal(data, &s); err != nil {
		return err
	}
	*c = PackSet(s)
	return nil
}

// encodeCounterNames encodes sorted counter keys: for each group, its
// name and number of counters, then the counters' names; every string is
// length-prefixed (uvarint), so a name may hold any bytes.
func encodeCounterNames(keys []CounterKey) string {
	size := 0
	for _, k := range keys {
		size += len(k.Group) + len(k.Name) + 2*binary.MaxVarintLen64
	}
	b := make([]byte, 0, size)
	for i := 0; i < len(keys); {
		j := i + 1
		for j < len(keys) && keys[j].Group == keys[i].Group {
			j++
		}
		b = binary.AppendUvarint(b, uint64(len(keys[i].Group)))
		b = append(b, keys[i].Group...)
		b = binary.AppendUvarint(b, uint64(j-i))
		for _, k := range keys[i:j] {
			b = binary.AppendUvarint(b, uint64(len(k.Name)))
			b = append(b, k.Name...)
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
