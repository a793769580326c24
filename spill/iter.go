package spill

import (
	"bytes"
	"fmt"
	"math"
	"reflect"

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

// mergeIterator is a k-way merge over a loser tree (a tournament tree
// that keeps the loser of each match): a record costs about log2(k) key
// comparisons, half of a binary heap's. Inputs are ordered by (current
// key, input index), so equal keys come out in input order. With the
// default key order the first 8 bytes of each current key are cached as
// an integer (keyPrefix), and keys are compared byte by byte only when
// those are equal.
type mergeIterator struct {
	cmp  mr.Comparator
	fast bool // cmp is bytes.Compare
	its  []Iterator
	// in[i] is input i's current record; in[len(its)] is a virtual input
	// that comes before every other, used to build the tree.
	in []mergeInput
	// tree[0] is the index of the current winner; tree[1:k] hold the loser
	// of the match at each inner node. The leaves (inputs) are at k..2k-1.
	tree    []int
	started bool
	err     error
}

// mergeInput is the current record of a merge input.
type mergeInput struct {
	prefix uint64 // keyPrefix(key) (fast only); MaxUint64 once done
	key    []byte
	done   bool // the input is exhausted
}

// Merge returns a k-way merge (a loser tree) of sorted iterators. Equal
// keys come out in input order (iterator 0's first), so the merge is
// deterministic. A nil cmp means bytes.Compare. The first error of any
// input stops the merge and is returned by Err.
func Merge(cmp mr.Comparator, its []Iterator) Iterator {
	k := len(its)
	m := &mergeIterator{cmp: cmp, fast: isBytesCompare(cmp), its: its, in: make([]mergeInput, k+1), tree: make([]int, max(k, 1))}
	if m.cmp == nil {
		m.cmp = bytes.Compare
	}
	return m
}

// isBytesCompare tells whether cmp is nil or bytes.Compare itself.
func isBytesCompare(cmp mr.Comparator) bool {
	return cmp == nil || reflect.ValueOf(cmp).Pointer() == reflect.ValueOf(bytes.Compare).Pointer()
}

// beats tells whether input a's record comes before input b's. The virtual
// input comes before every other and exhausted inputs after every other.
func (m *mergeIterator) beats(a, b int) bool {
	ia, ib := &m.in[a], &m.in[b]
	if m.fast && ia.prefix != ib.prefix {
		// Also right for the virtual input (prefix 0) and exhausted ones
		// (MaxUint64) whenever the other prefix differs.
		return ia.prefix < ib.prefix
	}
	k := len(m.its)
	switch {
	case a == k:
		return true
	case b == k:
		return false
	case ia.done || ib.done:
		if ia.done && ib.done {
			return a < b
		}
		return ib.done
	}
	if m.fast {
		// Equal prefixes: keys of at most 8 bytes are equal if their
		// lengths are, and otherwise the shorter comes first.
		if la, lb := len(ia.key), len(ib.key); la <= 8 && lb <= 8 {
			if la != lb {
				return la < lb
			}
			return a < b
		}
	}
	if c := m.cmp(ia.key, ib.key); c != 0 {
		return c < 0
	}
	return a < b
}

// advance moves input i to its next record. It returns false on an input
// error (then m.err is set).
func (m *mergeIterator) advance(i int) bool {
	it := m.its[i]
	in := &m.in[i]
	if it.Next() {
		in.key = it.Key()
		if m.fast {
			in.prefix = keyPrefix(in.key)
		}
		return true
	}
	in.done, in.key, in.prefix = true, nil, math.MaxUint64
	if err := it.Err(); err != nil {
		m.err = fmt.Errorf("spill: merge input %d: %w", i, err)
		return false
	}
	return true
}

// replay plays input s's new record up from its leaf to the root.
func (m *mergeIterator) replay(s int) {
	k := len(m.its)
	for t := (s + k) / 2; t > 0; t /= 2 {
		if m.beats(m.tree[t], s) {
			m.tree[t], s = s, m.tree[t]
		}
	}
	m.tree[0] = s
}

func (m *mergeIterator) Next() bool {
	if m.err != nil {
		return false
	}
	k := len(m.its)
	if k == 0 {
		return false
	}
	if !m.started {
		m.started = true
		for i := range m.its {
			if !m.advance(i) {
				return false
			}
		}
		for t := range m.tree {
			m.tree[t] = k // the virtual first input, which every leaf replaces
		}
		for i := k - 1; i >= 0; i-- {
			m.replay(i)
		}
		return !m.in[m.tree[0]].done
	}
	w := m.tree[0]
	if m.in[w].done {
		return false
	}
	if !m.advance(w) {
		return false
	}
	m.replay(w)
	return !m.in[m.tree[0]].done
}

func (m *mergeIterator) Key() []byte {
	if m.err != nil || len(m.its) == 0 || !m.started {
		return nil
	}
	return m.in[m.tree[0]].key
}

func (m *mergeIterator) Value() []byte {
	if m.err != nil || len(m.its) == 0 || !m.started || m.in[m.tree[0]].done {
		return nil
	}
	return m.its[m.tree[0]].Value()
}

func (m *mergeIterator) Err() error { return m.err }

// Grouper walks a sorted iterator key group by key group: the records whose
// keys compare equal under cmp form one group. It serves reducers and
// combiners.
type Grouper struct {
	it      Iterator
	cmp     mr.Comparator
	equal   bool // cmp is bytes.Compare: a group is the keys equal to its first
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
	g := &Grouper{it: it, cmp: cmp, equal: isBytesCompare(cmp)}
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
	if k := g.it.Key(); g.equal && !bytes.Equal(k, g.key) || !g.equal && g.cmp(k, g.key) != 0 {
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
