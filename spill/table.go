package spill

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"unsafe"

	"gomr/mr"
)

// The combining table is how a Buffer with a combiner and the default key
// order holds its current batch: instead of keeping every emitted record
// for the spill's sort, it keeps one entry per distinct key, holding the
// key's partition (the partitioner is asked once per key and batch: it must
// be a function of the key, as reduces need anyway) and the key's values in
// emit order. When a key's values no longer fit in its entry (and there are
// at least preCombineAt of them), the combiner runs on them at once and its
// output replaces them (Hadoop's combiner
// contract: it may run zero or more times on any subset of a key's values).
// When the batch is cut, the combiner runs once more on each key's values,
// key by key in order of first emission, and only its output, one record
// per key for a summing combiner, is sorted by (partition, key): that is
// the spill. Records reach the table a few dozen late (see advance), in
// emit order.
//
// A combiner that declares itself a uvarint sum (mr.UvarintSumCombiner,
// WordCount's) is not run per value at all: each entry keeps the running
// sum of its key's values, and the combiner runs at the cut on that one
// value (or on a value that is not a uvarint, for its error).
//
// Nothing here depends on timing or on where keys land in the hash table:
// a key is pre-combined when its own values overflow its entry, and the
// spill is in key order. The same records therefore always give the same
// spill bytes; and for a combiner that may be applied to consecutive runs
// of a key's values in any grouping (a sum, an in-order concatenation) the
// same bytes as sorting every record and combining each key once.
//
// Memory. Accounting stays by emitted records (len(key)+len(value)+
// RecordOverhead each), so spill boundaries do not change. The table holds
// an entry of 64 bytes per distinct key, a slot array of 4 bytes a slot (at
// most half of them used), the keys once, and the values that do not fit
// in their entry as nodes in a log. A pre-combine's output is kept only if
// it is at most half of its input, in records and in bytes (otherwise it
// is dropped and the key is not pre-combined again in this batch), so the
// log holds at most twice the raw values. The table plus the output of the
// batch being spilled never pass BufferBytes by more than one record: were
// they to (keys that do not repeat, say), the batch falls back to keeping
// each record as a Buffer without a table does (toRaw), converted key by
// key in order of first emission, and is sorted and combined at the cut.
// For word counts the table takes a fraction of the accounted bytes: in the
// WordCount benchmark a 100 MiB buffer holds about 1.5 million records (80
// MiB accounted) in some 200,000 keys, about 15 MiB of table.
// See tableUsable for when a Buffer uses a table.

const (
	// noPreCombine, set in tentry.n, marks a key whose combiner output did
	// not shrink its values: it is combined only when the batch is cut.
	noPreCombine = 1 << 31
	// logBase is the offset of the first value node: offset 0 means "no
	// node".
	logBase = 4
	// maxTableBufferBytes and minTableOverhead bound the configurations
	// that use a table: with a record overhead of at least 9 bytes, a value
	// node (4-byte link, uvarint length, value) costs no more than its
	// record is charged, a batch is charged less than 2*BufferBytes, and
	// the log (at most twice its raw nodes) stays below 2^32 bytes, so that
	// its offsets fit in 32 bits.
	maxTableBufferBytes = 1 << 30
	minTableOverhead    = 9
	// Records are staged in groups of stageSize before they go into the
	// table, so that the memory their keys will touch is loaded for a whole
	// group at once (see combTable.advance); a record of more than
	// stageMaxBytes is not staged.
	stageSize     = 16
	stageMaxBytes = 1 << 10
	// initialSlots is the size of an empty table's slot array.
	initialSlots = 1 << 8
	// inlineBytes is the room for values in an entry.
	inlineBytes = 23
	// preCombineAt is the fewest values a key must have for a value that
	// does not fit in its entry to set off a pre-combine: fewer would make
	// the combiner run for about every record of a key whose values are
	// too large to be inline, and leave as many dead nodes in the log.
	preCombineAt = 8
	// A slot holds the top 8 bits of its key's hash (slotTagMask) and its
	// entry's index + 1 (slotIndexMask); 0 is an empty slot. A table holds
	// at most maxTableEntries keys; a batch with more falls back to raw
	// records (their entries alone would pass the 1 GiB buffer limit).
	slotTagMask     = 0xff000000
	slotIndexMask   = 0x00ffffff
	maxTableEntries = slotIndexMask - 1
)

// tableUsable tells whether a Buffer with these (checked) options keeps
// its batches in a combining table.
func tableUsable(opts Options, defaultCmp bool) bool {
	return opts.RecordOverhead >= minTableOverhead && CombinesInTable(opts.Combiner != nil, defaultCmp, opts.BufferBytes)
}

// CombinesInTable tells whether a Buffer of bufferBytes with the default
// record overhead, with a combiner or not, and with the default key order
// (Options.Compare nil) or not, keeps its batches in a combining table:
// with one, its memory follows the table's model (see combTable and
// Options.TablePercent) rather than that of a buffer that keeps every
// record.
func CombinesInTable(combiner, defaultOrder bool, bufferBytes int64) bool {
	return combiner && defaultOrder && bufferBytes <= maxTableBufferBytes
}

// tentry is a distinct key of the table, its partition and its values,
// the first ones inline (each as a one-byte length and its bytes), the
// others, once a value did not fit, on a chain of nodes in the log.
type tentry struct {
	prefix  uint64 // keyPrefix of the key
	prefix2 uint64 // keyPrefix of the key's bytes 8..16
	hash    uint32 // hashKey of the key
	klen    uint32
	part    uint32
	koff    uint32 // the key is keys[koff:koff+klen]
	tail    uint32 // log offset of the chain's last node; 0: no chain
	n       uint32 // values of the key (inline, then chain), with noPreCombine
	ilen    uint8  // bytes used in inline
	inline  [inlineBytes]byte
}

const tentrySize = int64(unsafe.Sizeof(tentry{}))

// combTable holds the current batch of a Buffer in combining mode. It is
// used only by the goroutine that calls Emit and Close, which is why every
// combiner call of such a Buffer happens there.
type combTable struct {
	// sum: the combiner is an mr.UvarintSumCombiner, and each entry holds
	// the running sum of its key's values (little-endian in inline[:8])
	// instead of the values; it is not pre-combined, and the combiner
	// runs at the cut on the one value uvarint(sum).
	sum     bool
	sumBuf  [1 + binary.MaxVarintLen64]byte // scratch: the sum as an inline value
	slots   []uint32                        // open addressing, linear probing; see slotTagMask
	entries []tentry                        // in order of first emission
	keys    []byte                          // the keys, back to back
	// log holds value nodes: a 4-byte little-endian link to the key's
	// previous node (0: none), the value's length as a uvarint, the value.
	log   []byte
	parts []int // keys per partition

	offs []uint32 // scratch: node offsets of one chain, last node first
	kbuf [16]byte // scratch: a key of up to 16 bytes, rebuilt from its prefixes
	vals tableValues
	pre  preEmitter
	out  outEmitter

	// Records on their way into the table (see advance): groups[fill] is
	// being filled, and groups[(fill+1)%3], groups[(fill+2)%3] and the
	// filled part of groups[fill] hold the staged records in emit order.
	groups [3]stageGroup
	fill   int

	// Pre-combine input and output records not yet added to the counters.
	combIn, combOut int64

	// For tests: pre-combines run, pre-combine outputs dropped, batches
	// that fell back to plain records, and the most memory the table and
	// the spilling batch's output held after storing a record.
	preCombines, dropped, rawBatches int
	peak                             int64
	// keyPeak is the largest keyMemory of a batch at its cut (for tests).
	keyPeak int64
}

func newCombTable(partitions int, sum bool) *combTable {
	return &combTable{
		sum:   sum,
		slots: make([]uint32, initialSlots),
		log:   make([]byte, logBase, 4<<10),
		parts: make([]int, partitions),
	}
}

// memory returns the bytes the table holds (not counting spare capacity).
func (t *combTable) memory() int64 {
	return int64(len(t.slots))*4 + int64(len(t.entries))*tentrySize + int64(len(t.keys)) + int64(len(t.log)) + int64(len(t.pre.buf))
}

// slotBytesPerKey is the most slot array a key takes: the array doubles
// when it is half full, so it holds at most 4 slots of 4 bytes per key (past
// the initial 256 slots).
const slotBytesPerKey = 16

// keyMemory is the memory the table's keys and values hold: memory but
// with the slot array counted at slotBytesPerKey a key rather than at its
// length, which an emptied table keeps from its largest batch, and without
// the pre-combine's scratch (one key's values, also kept). It is what
// Options.TablePercent bounds, so that where a batch is cut depends on the
// batch's records alone, not on the batches before it.
func (t *combTable) keyMemory() int64 {
	return int64(len(t.entries))*(tentrySize+slotBytesPerKey) + int64(len(t.keys)) + int64(len(t.log))
}

// reset empties the table, keeping its allocations for the next batch.
func (t *combTable) reset() {
	clear(t.slots)
	t.entries = t.entries[:0]
	t.keys = t.keys[:0]
	t.log = t.log[:logBase]
	clear(t.parts)
}

// full tells whether the table cannot take another key.
func (t *combTable) full() bool { return len(t.entries) >= maxTableEntries }

// hashKey hashes a key whose keyPrefix is prefix and whose bytes 8..16
// have the keyPrefix prefix2.
func hashKey(prefix, prefix2 uint64, key []byte) uint32 {
	const m = 0x9e3779b97f4a7c15
	h := prefix ^ uint64(len(key))*m
	if len(key) > 8 {
		h = (h ^ prefix2) * m
		h ^= h >> 29
	}
	for i := 16; i < len(key); i += 8 {
		var c uint64
		if len(key)-i >= 8 {
			c = binary.LittleEndian.Uint64(key[i:])
		} else {
			c = keyPrefix(key[i:])
		}
		h = (h ^ c) * m
		h ^= h >> 29
	}
	// The finalizer of MurmurHash3 (fmix64).
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return uint32(h)
}

// keyPrefixInCap is keyPrefix(key). A key shorter than 8 bytes whose
// capacity holds 8 (a mapper's key is mostly a slice of its input line, a
// word of a few bytes) is read as one word and masked to its length,
// instead of byte by byte. The bytes past its length are read but not
// used: they are the caller's, unchanged while Emit runs.
func keyPrefixInCap(key []byte) uint64 {
	if len(key) < 8 && cap(key) >= 8 {
		return binary.BigEndian.Uint64(key[:8]) &^ (math.MaxUint64 >> (8 * uint(len(key))))
	}
	return keyPrefix(key)
}

// stagedRec is a record waiting in a stageGroup.
type stagedRec struct {
	prefix, prefix2 uint64 // keyPrefix of the key and of its bytes 8..16
	hash            uint32
	off, klen, vlen uint32 // key and value at the group's buf[off:]
}

// stageGroup is stageSize staged records and their bytes.
type stageGroup struct {
	recs [stageSize]stagedRec
	n    int
	buf  []byte
}

// put takes a record of the current batch bt. Records go through three
// stage groups on their way into the table (see advance).
func (t *combTable) put(b *Buffer, bt *batch, key, value []byte) error {
	prefix := keyPrefixInCap(key)
	var prefix2 uint64
	if len(key) > 8 {
		prefix2 = keyPrefixInCap(key[8:])
	}
	h := hashKey(prefix, prefix2, key)
	if len(key)+len(value) > stageMaxBytes {
		if err := t.flush(b, bt); err != nil {
			return err
		}
		return t.store(b, bt, prefix, prefix2, h, key, value)
	}
	g := &t.groups[t.fill]
	g.recs[g.n] = stagedRec{prefix: prefix, prefix2: prefix2, hash: h, off: uint32(len(g.buf)), klen: uint32(len(key)), vlen: uint32(len(value))}
	g.buf = append(g.buf, key...)
	g.buf = append(g.buf, value...)
	g.n++
	if g.n == stageSize {
		return t.advance(b, bt)
	}
	return nil
}

// advance moves the stage on by a group once the group being filled (F) is
// full. The group before it (L) had the slots its probes start at loaded
// by the previous advance, and the one before that (P) the entries those
// slots point to. advance loads F's slots and L's entries, which do not
// depend on each other or on anything still in flight, so that the
// processor overlaps their cache misses, and then stores P's records,
// whose memory is now at hand; P, empty, is filled next. Storing records
// one by one instead would pay two or three cache misses in a row for a
// key not seen lately. The records are stored in emit order all the same.
func (t *combTable) advance(b *Buffer, bt *batch) error {
	f := &t.groups[t.fill]
	l := &t.groups[(t.fill+2)%3]
	p := &t.groups[(t.fill+1)%3]
	mask := uint32(len(t.slots) - 1)
	for i := range f.n {
		prefetch((*byte)(unsafe.Pointer(&t.slots[f.recs[i].hash&mask])))
	}
	for i := range l.n {
		if s := t.slots[l.recs[i].hash&mask]; s != 0 {
			prefetch((*byte)(unsafe.Pointer(&t.entries[s&slotIndexMask-1])))
		}
	}
	t.fill = (t.fill + 1) % 3
	return t.storeGroup(b, bt, p)
}

// flush stores every staged record, in order.
func (t *combTable) flush(b *Buffer, bt *batch) error {
	for k := 1; k <= 3; k++ {
		if err := t.storeGroup(b, bt, &t.groups[(t.fill+k)%3]); err != nil {
			return err
		}
	}
	return nil
}

// storeGroup stores the records of g, in order, and empties it.
func (t *combTable) storeGroup(b *Buffer, bt *batch, g *stageGroup) error {
	n := g.n
	g.n = 0
	for i := range n {
		sr := &g.recs[i]
		k := sr.off + sr.klen
		e := k + sr.vlen
		if err := t.store(b, bt, sr.prefix, sr.prefix2, sr.hash, g.buf[sr.off:k:k], g.buf[k:e:e]); err != nil {
			g.buf = g.buf[:0]
			return err
		}
	}
	g.buf = g.buf[:0]
	return nil
}

// store puts a record into the table, or into bt as a plain record once
// the batch has fallen back to those (see combTable).
func (t *combTable) store(b *Buffer, bt *batch, prefix, prefix2 uint64, h uint32, key, value []byte) error {
	if !bt.raw && t.full() {
		t.toRaw(b, bt)
	}
	if bt.raw {
		p, err := b.partition(key)
		if err != nil {
			return err
		}
		b.appendRecord(bt, p, key, value)
		return nil
	}
	err := t.add(b, prefix, prefix2, h, key, value)
	if err == errTableFull {
		t.toRaw(b, bt)
		return t.store(b, bt, prefix, prefix2, h, key, value)
	}
	if err != nil {
		return err
	}
	m := t.memory() + b.prevOut
	t.peak = max(t.peak, m)
	if m > b.opts.BufferBytes {
		t.toRaw(b, bt)
	}
	return nil
}

// errTableFull is add's answer when the table would have to grow past the
// memory allowed (see combTable).
var errTableFull = errors.New("spill: combining table full")

// add stores a record in the table; prefix, prefix2 and h are as in
// stagedRec. It asks the partitioner for the partition of a key new to the
// table, and runs the combiner on the key's values when they overflow its
// entry.
func (t *combTable) add(b *Buffer, prefix, prefix2 uint64, h uint32, key, value []byte) error {
	klen := uint32(len(key))
	tag := h & slotTagMask
	mask := uint32(len(t.slots) - 1)
	i := h & mask
	for {
		s := t.slots[i]
		if s == 0 {
			break
		}
		if s&slotTagMask == tag {
			e := &t.entries[s&slotIndexMask-1]
			if e.hash == h && e.prefix == prefix && e.prefix2 == prefix2 && e.klen == klen &&
				(klen <= 16 || bytes.Equal(t.keys[e.koff+16:e.koff+klen], key[16:])) {
				return t.addValue(b, e, value)
			}
		}
		i = (i + 1) & mask
	}
	// A new key (the caller checked full).
	if 2*(len(t.entries)+1) > len(t.slots) {
		if t.memory()+int64(len(t.slots))*4+b.prevOut > b.opts.BufferBytes {
			return errTableFull
		}
		t.grow()
		mask = uint32(len(t.slots) - 1)
		i = h & mask
		for t.slots[i] != 0 {
			i = (i + 1) & mask
		}
	}
	p, err := b.partition(key)
	if err != nil {
		return err
	}
	t.entries = append(t.entries, tentry{prefix: prefix, prefix2: prefix2, hash: h, klen: klen, part: uint32(p), koff: uint32(len(t.keys))})
	t.slots[i] = tag | uint32(len(t.entries))
	t.keys = append(t.keys, key...)
	t.parts[p]++
	return t.addValue(b, &t.entries[len(t.entries)-1], value)
}

// grow doubles the slot array.
func (t *combTable) grow() {
	t.slots = make([]uint32, 2*len(t.slots))
	mask := uint32(len(t.slots) - 1)
	for j := range t.entries {
		h := t.entries[j].hash
		i := h & mask
		for t.slots[i] != 0 {
			i = (i + 1) & mask
		}
		t.slots[i] = h&slotTagMask | uint32(j+1)
	}
}

// addValue appends a value to e's values: inline while it has room and no
// chain, otherwise on the chain, and then pre-combines the key if it has
// preCombineAt values or more.
func (t *combTable) addValue(b *Buffer, e *tentry, value []byte) error {
	if t.sum {
		v, k := uint64(0), 0
		if len(value) == 1 && value[0] < 0x80 {
			v, k = uint64(value[0]), 1
		} else {
			v, k = binary.Uvarint(value)
		}
		if k <= 0 || k != len(value) {
			return t.sumError(b, e, value)
		}
		binary.LittleEndian.PutUint64(e.inline[:8], binary.LittleEndian.Uint64(e.inline[:8])+v)
		e.n++
		return nil
	}
	vl := len(value)
	pos := int(e.ilen)
	if e.tail == 0 && vl < 0x80 && pos+1+vl <= inlineBytes {
		e.inline[pos] = byte(vl)
		copy(e.inline[pos+1:], value)
		e.ilen = uint8(pos + 1 + vl)
		e.n++
		return nil
	}
	e.tail = t.appendNode(e.tail, value)
	e.n++
	if e.n < preCombineAt || e.n&noPreCombine != 0 {
		return nil
	}
	return t.preCombine(b, e)
}

// sumError is the error of a value that is not a uvarint in a table that
// keeps sums: the combiner's own error for that value, run on it alone.
func (t *combTable) sumError(b *Buffer, e *tentry, value []byte) error {
	err := notSumError(b.opts.Combiner, b.opts.TaskContext, t.key(e), value)
	return fmt.Errorf("spill: combiner on spill %d, partition %d: %w", b.next, e.part, err)
}

// notSumError is the error of a value that is not one uvarint given to a
// combiner that declares itself a uvarint sum: the combiner's own error
// for that value, run on it alone, or, if it accepts it, one saying so.
func notSumError(c mr.Reducer, tc mr.TaskContext, key, value []byte) error {
	err := callCombiner(c, tc, key, &oneValue{v: value}, discardEmitter{})
	if err == nil {
		err = fmt.Errorf("the combiner declares it sums uvarints (mr.UvarintSumCombiner) but accepted the value %x of key %q", value, keyForError(key))
	}
	return err
}

// oneValue iterates over one value.
type oneValue struct {
	v    []byte
	done bool
}

func (o *oneValue) Next() bool {
	ok := !o.done
	o.done = true
	return ok
}

func (o *oneValue) Value() []byte { return o.v }

// discardEmitter drops what it is given.
type discardEmitter struct{}

func (discardEmitter) Emit(key, value []byte) error { return nil }

// isUvarintSum tells whether a combiner declares itself a uvarint sum.
func isUvarintSum(c mr.Reducer) bool {
	_, ok := c.(mr.UvarintSumCombiner)
	return ok
}

// appendNode appends a node holding value, linked to prev, to the log and
// returns its offset.
func (t *combTable) appendNode(prev uint32, value []byte) uint32 {
	off := uint32(len(t.log))
	t.log = binary.LittleEndian.AppendUint32(t.log, prev)
	t.log = binary.AppendUvarint(t.log, uint64(len(value)))
	t.log = append(t.log, value...)
	return off
}

// chain returns the node offsets of the chain ending at tail, last node
// first, and the bytes of their encoded values (uvarint length and value).
func (t *combTable) chain(tail uint32) ([]uint32, int) {
	offs := t.offs[:0]
	size := 0
	for off := tail; off != 0; off = binary.LittleEndian.Uint32(t.log[off:]) {
		offs = append(offs, off)
		v, _ := nodeValue(t.log, off)
		size += uvarintLen(len(v)) + len(v)
	}
	t.offs = offs
	return offs, size
}

// nodeValue returns the value of the node at off and the node's size.
func nodeValue(log []byte, off uint32) ([]byte, int) {
	p := int(off) + 4
	l := uint64(log[p])
	n := 1
	if l >= 0x80 {
		l, n = binary.Uvarint(log[p:])
	}
	s := p + n
	e := s + int(l)
	return log[s:e:e], e - int(off)
}

// uvarintLen is the length of n as a uvarint.
func uvarintLen(n int) int {
	s := 1
	for v := uint64(n); v >= 0x80; v >>= 7 {
		s++
	}
	return s
}

// key returns e's key: rebuilt from its prefixes when it is at most 16
// bytes long (valid until the next call), else a slice of the key arena.
func (t *combTable) key(e *tentry) []byte {
	if e.klen <= 16 {
		binary.BigEndian.PutUint64(t.kbuf[:8], e.prefix)
		binary.BigEndian.PutUint64(t.kbuf[8:], e.prefix2)
		return t.kbuf[:e.klen:e.klen]
	}
	return t.keys[e.koff : e.koff+e.klen : e.koff+e.klen]
}

// values makes t.vals iterate over e's values.
func (t *combTable) values(e *tentry) *tableValues {
	if t.sum {
		n := binary.PutUvarint(t.sumBuf[1:], binary.LittleEndian.Uint64(e.inline[:8]))
		t.sumBuf[0] = byte(n)
		t.vals.reset(t.sumBuf[:1+n], nil, nil)
		return &t.vals
	}
	var offs []uint32
	if e.tail != 0 {
		offs, _ = t.chain(e.tail)
	}
	t.vals.reset(e.inline[:e.ilen], t.log, offs)
	return &t.vals
}

// errNoShrink stops a pre-combine whose output is more than half its
// input.
var errNoShrink = errors.New("combiner output does not shrink its input")

// preCombine runs the combiner on e's values, which its output replaces
// (see combTable).
func (t *combTable) preCombine(b *Buffer, e *tentry) error {
	n := int(e.n)
	var offs []uint32
	size := int(e.ilen)
	if e.tail != 0 {
		var cs int
		offs, cs = t.chain(e.tail)
		size += cs
	}
	t.vals.reset(e.inline[:e.ilen], t.log, offs)
	key := t.key(e)
	pe := &t.pre
	pe.key, pe.maxRecs, pe.maxBytes = key, n/2, size/2
	pe.n, pe.over = 0, false
	pe.buf = pe.buf[:0]
	err := b.callCombiner(key, &t.vals, pe)
	if pe.over && (err == nil || errors.Is(err, errNoShrink)) {
		// Keep the values; the key is combined at the cut.
		e.n |= noPreCombine
		t.dropped++
		return nil
	}
	if err != nil {
		return fmt.Errorf("spill: combiner on spill %d, partition %d: %w", b.next, e.part, err)
	}
	t.combIn += int64(n)
	t.combOut += int64(pe.n)
	t.preCombines++
	e.n = uint32(pe.n)
	if len(pe.buf) <= inlineBytes {
		e.ilen = uint8(copy(e.inline[:], pe.buf))
		e.tail = 0
		return nil
	}
	e.ilen, e.tail = 0, 0
	for rest := pe.buf; len(rest) > 0; {
		l, k := binary.Uvarint(rest)
		e.tail = t.appendNode(e.tail, rest[k:k+int(l)])
		rest = rest[k+int(l):]
	}
	return nil
}

// cut runs the combiner on each key's values, key by key in order of
// first emission, writing its output to bt.out, bt.outRecs and
// bt.outCounts (Buffer.cut sorts it). It adds the pre-combine counters and
// the combine input counter of the batch, and empties the table.
func (t *combTable) cut(b *Buffer, bt *batch) error {
	t.keyPeak = max(t.keyPeak, t.keyMemory())
	out := &t.out
	combIn := t.combIn
	for j := range t.entries {
		e := &t.entries[j]
		cn := e.n &^ noPreCombine
		if cn == 0 {
			continue // a pre-combine emitted nothing
		}
		vals := t.values(e)
		out.part, out.prefix = e.part, e.prefix
		out.key = t.key(e)
		if err := b.callCombiner(out.key, vals, out); err != nil {
			return fmt.Errorf("spill: combiner on spill %d, partition %d: %w", b.next, e.part, err)
		}
		combIn += int64(cn)
	}
	b.cCombIn.Add(combIn)
	b.cCombOut.Add(t.combOut)
	t.combIn, t.combOut = 0, 0
	t.reset()
	return nil
}

// toRaw moves the table's records into bt as plain records, key by key
// in order of first emission and each key's values in order, and gives the
// table's memory back: the rest of the batch is kept without a table (see
// combTable).
func (t *combTable) toRaw(b *Buffer, bt *batch) {
	for j := range t.entries {
		e := &t.entries[j]
		vals := t.values(e)
		key := t.key(e)
		for vals.Next() {
			b.appendRecord(bt, int(e.part), key, vals.Value())
		}
	}
	bt.raw = true
	t.rawBatches++
	b.cCombIn.Add(t.combIn)
	b.cCombOut.Add(t.combOut)
	t.combIn, t.combOut = 0, 0
	t.slots = make([]uint32, initialSlots)
	t.entries = nil
	t.keys = nil
	t.log = make([]byte, logBase, 4<<10)
	t.pre.buf = nil
	clear(t.parts)
}

// tableValues is the mr.ValueIterator over a key's values in the table:
// the inline ones, then the chain's.
type tableValues struct {
	inline []byte   // inline values not yet returned
	log    []byte   // the log holding the chain
	offs   []uint32 // chain nodes, last first; offs[:i] not yet returned
	i      int
	val    []byte
}

func (v *tableValues) reset(inline, log []byte, offs []uint32) {
	v.inline, v.log, v.offs, v.i, v.val = inline, log, offs, len(offs), nil
}

// Next advances to the next value.
func (v *tableValues) Next() bool {
	if len(v.inline) > 0 {
		l := int(v.inline[0]) // inline lengths are below 0x80
		v.val = v.inline[1 : 1+l : 1+l]
		v.inline = v.inline[1+l:]
		return true
	}
	if v.i == 0 {
		v.val = nil
		return false
	}
	v.i--
	v.val, _ = nodeValue(v.log, v.offs[v.i])
	return true
}

// Value returns the current value.
func (v *tableValues) Value() []byte { return v.val }

// preEmitter collects a pre-combine's output values in buf (each as a
// uvarint length and its bytes). It refuses (errNoShrink) output of more
// than maxRecs records or maxBytes bytes.
type preEmitter struct {
	key               []byte
	maxRecs, maxBytes int
	n                 int
	over              bool
	buf               []byte
}

// Emit adds value to the output.
func (pe *preEmitter) Emit(key, value []byte) error {
	if !bytes.Equal(key, pe.key) {
		return wrongKeyError(key, pe.key)
	}
	if pe.over || pe.n+1 > pe.maxRecs || len(pe.buf)+uvarintLen(len(value))+len(value) > pe.maxBytes {
		pe.over = true
		return errNoShrink
	}
	pe.buf = binary.AppendUvarint(pe.buf, uint64(len(value)))
	pe.buf = append(pe.buf, value...)
	pe.n++
	return nil
}

// outEmitter writes the combiner's output at a cut to the batch's out,
// outRecs and outCounts.
type outEmitter struct {
	bt     *batch
	index  int // the spill's index, for errors
	part   uint32
	key    []byte
	prefix uint64 // keyPrefix(key)
}

// setKey starts the group of key.
func (o *outEmitter) setKey(key []byte) { o.key, o.prefix = key, keyPrefix(key) }

// Emit appends (key, value) to the batch's output.
func (o *outEmitter) Emit(key, value []byte) error {
	if !bytes.Equal(key, o.key) {
		return wrongKeyError(key, o.key)
	}
	bt := o.bt
	if int64(len(bt.out))+int64(len(key))+int64(len(value)) > math.MaxUint32 {
		return fmt.Errorf("combiner output of spill %d passes %d bytes", o.index, int64(math.MaxUint32))
	}
	r := rec{prefix: o.prefix, off: uint32(len(bt.out)), klen: uint32(len(key)), vlen: uint32(len(value)), part: o.part}
	bt.out = append(bt.out, key...)
	bt.out = append(bt.out, value...)
	bt.outRecs = append(bt.outRecs, r)
	bt.outCounts[o.part]++
	return nil
}

// wrongKeyError is the error of a combiner that emits a key other than its
// group's.
func wrongKeyError(key, group []byte) error {
	return fmt.Errorf("combiner emitted key %q for the group of key %q; a combiner must emit keys that sort like its input key",
		keyForError(key), keyForError(group))
}

var (
	_ mr.ValueIterator = (*tableValues)(nil)
	_ mr.Emitter       = (*preEmitter)(nil)
	_ mr.Emitter       = (*outEmitter)(nil)
)
