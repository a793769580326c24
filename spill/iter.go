package spill

import (
	"bytes"
	"fmt"

	"gomr/mr"
)

// Iterator walks sorted key-value records.
type Iterator interface {
	// Next advances to the next record; it returns false at the end or on
	// error (see Err).
	Next() bool
	// Key returns the current key, valid until the next Next.
	Key() []byte
	// Value returns the current value, valid until the next Next.
	Value() []byte
	// Err returns the first error met, if any.
	Err() error
}

// sliceIterator walks an in-memory slice of records.
type sliceIterator struct {
	kvs [][2][]byte
	i   int
}

// NewSliceIterator returns an iterator over kvs, in slice order. It does not
// copy or sort them.
func NewSliceIterator(kvs [][2][]byte) Iterator { return &sliceIterator{kvs: kvs, i: -1} }

func (s *sliceIterator) Next() bool {
	if s.i < len(s.kvs) {
		s.i++
	}
	return s.i < len(s.kvs)
}

func (s *sliceIterator) Key() []byte {
	if s.i < 0 || s.i >= len(s.kvs) {
		return nil
	}
	return s.kvs[s.i][0]
}

func (s *sliceIterator) Value() []byte {
	if s.i < 0 || s.i >= len(s.kvs) {
		return nil
	}
	return s.kvs[s.i][1]
}

func (s *sliceIterator) Err() error { return nil }

// mergeEntry is one input of a merge with its current key cached.
type mergeEntry struct {
	idx int
	key []byte
}

// mergeIterator is a k-way merge: a binary min-heap of inputs ordered by
// (current key, input index).
type mergeIterator struct {
	cmp     mr.Comparator
	its     []Iterator
	heap    []mergeEntry
	started bool
	err     error
}

// Merge returns a k-way merge (a heap) of sorted iterators. Equal keys come
// out in input order (iterator 0's first), so the merge is deterministic. A
// nil cmp means bytes.Compare. The first error of any input stops the merge
// and is returned by Err.
func Merge(cmp mr.Comparator, its []Iterator) Iterator {
	if cmp == nil {
		cmp = bytes.Compare
	}
	return &mergeIterator{cmp: cmp, its: its, heap: make([]mergeEntry, 0, len(its))}
}

func (m *mergeIterator) less(a, b mergeEntry) bool {
	if c := m.cmp(a.key, b.key); c != 0 {
		return c < 0
	}
	return a.idx < b.idx
}

func (m *mergeIterator) siftDown(i int) {
	h := m.heap
	n := len(h)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		j := l
		if r := l + 1; r < n && m.less(h[r], h[l]) {
			j = r
		}
		if !m.less(h[j], h[i]) {
			return
		}
		h[i], h[j] = h[j], h[i]
		i = j
	}
}

func (m *mergeIterator) inputErr(i int) bool {
	if err := m.its[i].Err(); err != nil {
		m.err = fmt.Errorf("spill: merge input %d: %w", i, err)
		m.heap = m.heap[:0]
		return true
	}
	return false
}

func (m *mergeIterator) Next() bool {
	if m.err != nil {
		return false
	}
	if !m.started {
		m.started = true
		for i, it := range m.its {
			if it.Next() {
				m.heap = append(m.heap, mergeEntry{idx: i, key: it.Key()})
			} else if m.inputErr(i) {
				return false
			}
		}
		for i := len(m.heap)/2 - 1; i >= 0; i-- {
			m.siftDown(i)
		}
		return len(m.heap) > 0
	}
	if len(m.heap) == 0 {
		return false
	}
	top := &m.heap[0]
	it := m.its[top.idx]
	if it.Next() {
		top.key = it.Key()
	} else {
		if m.inputErr(top.idx) {
			return false
		}
		last := len(m.heap) - 1
		m.heap[0] = m.heap[last]
		m.heap = m.heap[:last]
	}
	m.siftDown(0)
	return len(m.heap) > 0
}

func (m *mergeIterator) Key() []byte {
	if len(m.heap) == 0 {
		return nil
	}
	return m.heap[0].key
}

func (m *mergeIterator) Value() []byte {
	if len(m.heap) == 0 {
		return nil
	}
	return m.its[m.heap[0].idx].Value()
}

func (m *mergeIterator) Err() error { return m.err }

// Grouper walks a sorted iterator key group by key group: the records whose
// keys compare equal under cmp form one group. It serves reducers and
// combiners.
type Grouper struct {
	it      Iterator
	cmp     mr.Comparator
	key     []byte
	pending bool // it is positioned on a record not yet given to any group
	eof     bool
	vals    groupValues
}

// groupValues is the mr.ValueIterator of the current group.
type groupValues struct {
	g       *Grouper
	first   bool // the group's first record has not been returned yet
	done    bool // the group is exhausted
	started bool // Next has returned true at least once in this group
}

// NewGrouper returns a Grouper over it; a nil cmp means bytes.Compare.
func NewGrouper(it Iterator, cmp mr.Comparator) *Grouper {
	if cmp == nil {
		cmp = bytes.Compare
	}
	g := &Grouper{it: it, cmp: cmp}
	g.vals.g = g
	g.vals.done = true
	return g
}

// NextKey advances to the next key group, skipping the values of the
// current group that were not read. It returns false at the end of the
// input or on error (see Err).
func (g *Grouper) NextKey() bool {
	if g.eof {
		return false
	}
	// Skip the rest of the current group.
	for g.vals.Next() {
	}
	if g.eof {
		return false
	}
	if !g.pending {
		if !g.it.Next() {
			g.eof = true
			return false
		}
	}
	g.key = append(g.key[:0], g.it.Key()...)
	g.pending = true
	g.vals.first = true
	g.vals.done = false
	g.vals.started = false
	return true
}

// Key returns the current group's key (a copy of its first record's key),
// valid until the next NextKey.
func (g *Grouper) Key() []byte { return g.key }

// Values returns the values of the current group. Reading them all is
// optional: NextKey skips what is left.
func (g *Grouper) Values() mr.ValueIterator { return &g.vals }

// Err returns the first error of the underlying iterator, if any.
func (g *Grouper) Err() error { return g.it.Err() }

// Next advances to the group's next value.
func (v *groupValues) Next() bool {
	if v.done {
		return false
	}
	g := v.g
	if v.first {
		v.first = false
		g.pending = false
		v.started = true
		return true
	}
	if !g.it.Next() {
		g.eof = true
		v.done = true
		return false
	}
	if g.cmp(g.it.Key(), g.key) != 0 {
		g.pending = true
		v.done = true
		return false
	}
	return true
}

// Value returns the current value, valid until the next Next.
func (v *groupValues) Value() []byte {
	if v.done || !v.started {
		return nil
	}
	return v.g.it.Value()
}
