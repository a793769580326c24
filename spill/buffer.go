package spill

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"gomr/mr"
)

// recordOverhead is the accounted metadata cost of one buffered record:
// what it really takes here, its rec in the emit-order slice and again in
// the sorted scratch slice (Hadoop's buffer charges its 16-byte kvmeta the
// same way). Charging the real cost keeps a map's memory near
// mapreduce.task.io.sort.mb; charging Hadoop's 16 bytes let a buffer of
// small records grow to several times that.
const recordOverhead = 2 * int64(unsafe.Sizeof(rec{}))

// DefaultRecordOverhead is the per-record metadata charge used when
// Options.RecordOverhead is zero.
const DefaultRecordOverhead = recordOverhead

// maxBufferBytes bounds Options.BufferBytes and maxRecordBytes bounds
// len(key)+len(value) of one record, so that arena offsets fit in 32 bits
// (Hadoop likewise caps mapreduce.task.io.sort.mb at 2047).
const (
	maxBufferBytes = 1 << 31
	maxRecordBytes = 1<<31 - 1
)

// writeAhead is how many records ahead writeSpill prefetches the bytes of
// the record it will write.
const writeAhead = 8

// counterFlushEvery is how many emitted records the buffer counts locally
// before adding them to the shared MAP_OUTPUT_* counters.
const counterFlushEvery = 4096

// SpillInfo describes one durable spill: both files are complete and
// renamed into place.
type SpillInfo struct {
	Index      int           // spill number k, from 0
	Final      bool          // the map's last spill: the map is done once it is announced
	DataPath   string        // Dir/DataFileName(k)
	IndexPath  string        // Dir/IndexFileName(k)
	Partitions []SegmentInfo // one per reduce partition, in partition order
}

var (
	_ mr.Emitter = (*Buffer)(nil)
	_ Iterator   = (*SegmentReader)(nil)
)

// Options configure a Buffer.
type Options struct {
	BufferBytes   int64          // mapreduce.task.io.sort.mb * 2^20 (required > 0)
	SpillPercent  float64        // mapreduce.map.sort.spill.percent, in (0,1]
	NumPartitions int            // >= 1
	Partitioner   mr.Partitioner // nil => mr.HashPartitioner{}
	Compare       mr.Comparator  // nil => bytes.Compare
	Combiner      mr.Reducer     // nil => no combiner
	TaskContext   mr.TaskContext // passed to the Combiner (may be nil if no combiner)
	Dir           string         // directory for spill files (exists)
	BlockSize     int            // target uncompressed bytes per snappy block; 0 => 64 KiB
	Counters      *mr.Counters   // may be nil
	// RecordOverhead is the bytes charged per record on top of its key and
	// value; 0 means DefaultRecordOverhead. Boundaries depend on it, so
	// every attempt of a task must use the same value.
	RecordOverhead int64
	// TablePercent bounds a combining table (see combTable), in (0, 1]:
	// once the table's memory reaches BufferBytes*TablePercent, the batch
	// is cut before the next record, as it is when its accounted bytes
	// reach the spill threshold. Keys that stop repeating then cut smaller
	// spills instead of growing a table, and a batch that falls back to
	// plain records, several times larger than the buffer's accounting
	// for records that do not combine. 0 means no such bound: the table
	// grows to BufferBytes and the batch then falls back to plain records.
	// Boundaries depend on it, so every attempt of a task must use the
	// same value.
	TablePercent float64
	// FirstIndex is the index of the buffer's first spill (0 for a map
	// that starts at its split's start; a map that resumes a split task
	// continues the task's numbering, see Cut).
	FirstIndex int
	// OnSpill is called, in spill order, from the goroutine that called Emit or Close,
	// after spill k is durable. An error from it fails the Emit/Close.
	OnSpill func(SpillInfo) error
}

// DataFileName is the name, inside Options.Dir, of spill k's data file.
func DataFileName(k int) string { return fileName(k, ".out") }

// IndexFileName is the name, inside Options.Dir, of spill k's index file.
func IndexFileName(k int) string { return fileName(k, ".index") }

// AppendDataFileName appends DataFileName(k) to b: the shuffle server
// builds a data file's path in a buffer of its own, without an allocation
// per segment it serves.
func AppendDataFileName(b []byte, k int) []byte { return appendFileName(b, k, ".out") }

// ParseDataFileName returns the spill k whose data file is named name
// (DataFileName(k) == name), or false if name is not one: the shuffle
// server's data cache indexes the spill data files it holds by k.
func ParseDataFileName(name string) (int, bool) {
	digits, ok := strings.CutPrefix(name, "spill")
	if !ok {
		return 0, false
	}
	if digits, ok = strings.CutSuffix(digits, ".out"); !ok || len(digits) < 5 || len(digits) > 18 {
		return 0, false
	}
	k := 0
	for _, c := range []byte(digits) {
		if c < '0' || c > '9' {
			return 0, false
		}
		k = k*10 + int(c-'0')
	}
	if len(digits) > 5 && digits[0] == '0' { // DataFileName pads to 5 digits only
		return 0, false
	}
	return k, true
}

// fileName is "spill" + k (at least 5 digits, zero-padded) + ext, as
// fmt's "spill%05d" would print it but without its cost: the shuffle
// server names two files per segment it serves.
func fileName(k int, ext string) string {
	var b [32]byte
	return string(appendFileName(b[:0], k, ext))
}

// appendFileName appends fileName(k, ext) to out.
func appendFileName(out []byte, k int, ext string) []byte {
	if k < 0 {
		return fmt.Appendf(out, "spill%05d%s", k, ext)
	}
	var b [24]byte
	n := strconv.AppendInt(b[:0], int64(k), 10)
	out = append(out, "spill"...)
	for range 5 - len(n) {
		out = append(out, '0')
	}
	out = append(out, n...)
	return append(out, ext...)
}

// rec is the metadata of one buffered record; key and value are stored back
// to back in the batch's arena at off.
type rec struct {
	prefix uint64 // first 8 key bytes, big-endian, zero-padded (default order only)
	off    uint32
	klen   uint32
	vlen   uint32
	part   uint32
}

// batch is the set of records between two spill boundaries. Without a
// combining table, data and recs hold the emitted records, and the spill
// sorts them into sorted and combines them. With one (Buffer.tab), the
// table holds the records while the batch is current (unless it fell back
// to data and recs: raw); at the cut the combiner's output is collected in
// out, outRecs and outCounts, and then sorted so that data, sorted and
// starts hold the spill, combined (see Buffer.cut).
type batch struct {
	data      []byte       // keys and values, appended
	recs      []rec        // in emit order
	sorted    []rec        // scratch: recs grouped by partition, then sorted
	counts    []int        // records of recs per partition
	starts    []int        // partition p is sorted[starts[p]:starts[p+1]]
	bytes     int64        // accounted bytes: key + value + recordOverhead per record
	n         int          // records emitted into the batch
	raw       bool         // a table's batch that fell back to data and recs
	combined  bool         // sorted holds the spill, combined: write it as it is
	out       []byte       // the combiner's output at the cut: keys and values
	outRecs   []rec        // the combiner's output at the cut, in emission order
	outCounts []int        // records of outRecs per partition
	radix     *radixCounts // the radix sort's scratch, allocated on first use
	// inRing: data is the Buffer's ring and the records lie in it from
	// virtual position startV on (see Buffer.ring); noRing: the batch left
	// the ring (or could not enter it) and keeps a private arena.
	inRing, noRing bool
	startV         int64
}

func newBatch(partitions int) *batch {
	return &batch{counts: make([]int, partitions), starts: make([]int, partitions+1), outCounts: make([]int, partitions)}
}

func (bt *batch) reset() {
	if bt.inRing {
		bt.data = nil // the ring is the Buffer's
	}
	bt.inRing, bt.noRing, bt.startV = false, false, 0
	bt.data = bt.data[:0]
	bt.recs = bt.recs[:0]
	bt.sorted = bt.sorted[:0]
	clear(bt.counts)
	bt.bytes = 0
	bt.n = 0
	bt.raw = false
	bt.combined = false
	bt.out = bt.out[:0]
	bt.outRecs = bt.outRecs[:0]
	clear(bt.outCounts)
}

// spillJob is a batch being spilled in the background.
type spillJob struct {
	index int
	batch *batch
	done  chan spillResult // buffered, receives exactly one result
}

type spillResult struct {
	info SpillInfo
	err  error
}

// Buffer is the map output buffer. Emit collects records into the current
// batch; once the batch's accounted bytes (len(key)+len(value)+recordOverhead per
// record) reach BufferBytes*SpillPercent the batch is cut and spilled in a
// background goroutine while Emit goes on collecting the next batch. A
// record whose own cost reaches that threshold is a batch of its own: the
// records before it are cut first. These rules alone decide the spill
// boundaries, so they depend on nothing but the record sequence and the
// options.
//
// Emit blocks while the spilling batch plus the current batch plus the new
// record would exceed BufferBytes. Finished spills are reported through
// OnSpill, in order, from the goroutine calling Emit, Poll or Close (at the
// first Emit or Poll after the spill completes, or when Emit or Close has to
// wait for it). A Buffer is used by one goroutine; after an error every later call
// returns that error.
//
// With a combiner and the default key order (and a record overhead of at
// least 9 bytes and a buffer of at most 1 GiB), the current batch is kept
// in a combining table that runs the combiner on a key's values as they
// come; the batch is combined a last time and sorted when it is cut, in
// the goroutine calling Emit or Close, so that the combiner is never
// called from two goroutines at once, and the spill goroutine only writes
// (see combTable). The partitioner is then asked once per distinct key of
// a batch, so it must be a function of the key (as reduces need anyway),
// and an error from the combiner or the partitioner may surface a few
// dozen records after the record that caused it. Otherwise the batch keeps
// every record, and the spill goroutine sorts them and runs the combiner,
// if any, on each key group.
type Buffer struct {
	opts  Options
	limit int64 // spill threshold: ceil(BufferBytes*SpillPercent)
	// tableLimit is the table memory that cuts a combining batch:
	// ceil(BufferBytes*TablePercent); 0: none.
	tableLimit int64
	part       mr.Partitioner
	cmp        mr.Comparator
	defaultCmp bool

	cur *batch
	tab *combTable // the current batch's records in combining mode; nil otherwise
	// prevOut is the memory of the last cut batch's combined output (in
	// combining mode): the table plus it stay within BufferBytes.
	prevOut  int64
	spare    *batch
	inflight *spillJob
	// Without a combining table, batches whose data outgrows ringEnterAt
	// keep it in one ring of at most BufferBytes (see ringSize) shared by
	// the spilling batch and the current one (Hadoop's kvbuffer is
	// likewise one circular array), instead of each batch keeping an arena
	// as large as the spill threshold. Positions are virtual (physical = virtual mod len(ring));
	// the live bytes are [tailV, headV). A record never straddles the
	// end: one that would is placed at the start. The ring changes where
	// bytes lie, never the accounting: boundaries are as without it.
	ring         []byte
	headV, tailV int64
	// maxBatchRecs is the most records a cut batch has held (see growRecs).
	maxBatchRecs int
	// sorted is the sort scratch of batches without a table: one spill is
	// sorted and written at a time, so the batches share it.
	sorted  []rec
	next    int // index of the next spill
	err     error
	closed  bool
	aborted atomic.Bool
	wg      sync.WaitGroup

	// Spill-writing state, used by one spill at a time.
	sw      *SegmentWriter
	bw      *bufio.Writer
	grouper *Grouper
	rit     recIterator
	cemit   combineEmitter

	cOutRecs, cOutBytes, cCombIn, cCombOut, cSpilled, cMaterialized *mr.Counter
	pendRecs, pendBytes                                             int64

	// ringLeaves counts batches that left the ring for lack of room (for
	// tests).
	ringLeaves int
	// batchRecs are the records of each batch cut, in spill order (for
	// tests).
	batchRecs []int

	// spillHook, when set by tests, runs at the start of every background
	// spill, in the spilling goroutine.
	spillHook func(index int)
}

// NewBuffer checks the options and returns an empty Buffer.
func NewBuffer(opts Options) (*Buffer, error) {
	switch {
	case opts.BufferBytes <= 0 || opts.BufferBytes > maxBufferBytes:
		return nil, fmt.Errorf("spill: buffer size %d bytes is out of range (1 .. %d)", opts.BufferBytes, int64(maxBufferBytes))
	case !(opts.SpillPercent > 0 && opts.SpillPercent <= 1):
		return nil, fmt.Errorf("spill: spill percent %v is out of range (0, 1]", opts.SpillPercent)
	case opts.NumPartitions < 1 || opts.NumPartitions > math.MaxInt32:
		return nil, fmt.Errorf("spill: number of partitions %d is out of range (1 .. %d)", opts.NumPartitions, math.MaxInt32)
	case opts.BlockSize < 0:
		return nil, fmt.Errorf("spill: block size %d is negative", opts.BlockSize)
	case opts.Dir == "":
		return nil, errors.New("spill: no spill directory given")
	case opts.FirstIndex < 0:
		return nil, fmt.Errorf("spill: first spill index %d is negative", opts.FirstIndex)
	case opts.RecordOverhead < 0:
		return nil, fmt.Errorf("spill: record overhead %d is negative", opts.RecordOverhead)
	case !(opts.TablePercent >= 0 && opts.TablePercent <= 1):
		return nil, fmt.Errorf("spill: table percent %v is out of range [0, 1]", opts.TablePercent)
	}
	if opts.RecordOverhead == 0 {
		opts.RecordOverhead = DefaultRecordOverhead
	}
	st, err := os.Stat(opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("spill: spill directory: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("spill: spill directory %s is not a directory", opts.Dir)
	}
	if opts.BlockSize == 0 {
		opts.BlockSize = DefaultBlockSize
	}
	if opts.Counters == nil {
		opts.Counters = mr.NewCounters()
	}
	b := &Buffer{
		opts:  opts,
		limit: int64(math.Ceil(float64(opts.BufferBytes) * opts.SpillPercent)),
		part:  opts.Partitioner,
		cmp:   opts.Compare,
		cur:   newBatch(opts.NumPartitions),
		sw:    NewSegmentWriter(nil, opts.BlockSize),
		next:  opts.FirstIndex,
	}
	if b.limit < 1 {
		b.limit = 1
	}
	if opts.TablePercent > 0 {
		b.tableLimit = max(int64(math.Ceil(float64(opts.BufferBytes)*opts.TablePercent)), 1)
	}
	if b.part == nil {
		b.part = mr.HashPartitioner{}
	}
	if b.cmp == nil {
		b.cmp = bytes.Compare
		b.defaultCmp = true
	}
	g := mr.TaskCounterGroup
	cs := opts.Counters
	b.cOutRecs = cs.Get(g, mr.MapOutputRecords)
	b.cOutBytes = cs.Get(g, mr.MapOutputBytes)
	b.cCombIn = cs.Get(g, mr.CombineInputRecords)
	b.cCombOut = cs.Get(g, mr.CombineOutputRecords)
	b.cSpilled = cs.Get(g, mr.SpilledRecords)
	b.cMaterialized = cs.Get(g, mr.MapOutputMaterializedBytes)
	if opts.Combiner != nil {
		b.grouper = NewGrouper(&b.rit, b.cmp)
		b.cemit.cmp = b.cmp
		b.cemit.sw = b.sw
	}
	if tableUsable(opts, b.defaultCmp) {
		b.tab = newCombTable(opts.NumPartitions, isUvarintSum(opts.Combiner))
	}
	return b, nil
}

// Emit adds a record to the buffer, copying key and value. It may block
// while a spill is in progress (see Buffer), and it reports completed
// spills through OnSpill.
func (b *Buffer) Emit(key, value []byte) error {
	if b.err != nil {
		return b.err
	}
	if b.closed {
		return errors.New("spill: emit on a closed buffer")
	}
	if b.aborted.Load() {
		return b.fail(errors.New("spill: emit on an aborted buffer"))
	}
	if b.inflight != nil && len(b.inflight.done) > 0 {
		if err := b.finishInflight(); err != nil {
			return err
		}
	}
	if int64(len(key))+int64(len(value)) > maxRecordBytes {
		return b.fail(fmt.Errorf("spill: record with key of %d bytes and value of %d bytes is too large (limit %d bytes together)", len(key), len(value), maxRecordBytes))
	}
	p := 0
	if b.tab == nil { // the table asks only for keys new to it
		var err error
		if p, err = b.partition(key); err != nil {
			return b.fail(err)
		}
	}
	cost := int64(len(key)) + int64(len(value)) + b.opts.RecordOverhead
	if b.cur.n > 0 && (cost >= b.limit || b.tableFull()) {
		// A record that fills a batch on its own gets a batch of its own;
		// a combining table at its bound ends the batch before the record.
		if err := b.startSpill(); err != nil {
			return err
		}
	}
	if b.inflight != nil && b.inflight.batch.bytes+b.cur.bytes+cost > b.opts.BufferBytes {
		if err := b.finishInflight(); err != nil {
			return err
		}
	}
	if b.inflight != nil && b.inflight.batch.inRing && b.tab == nil && !b.cur.noRing && !b.ringFree(len(key)+len(value)) {
		// The ring is full with the spill in progress: wait for it, as
		// Hadoop's collector waits for its spill thread.
		if err := b.finishInflight(); err != nil {
			return err
		}
	}
	bt := b.cur
	if b.tab != nil {
		if err := b.tab.put(b, bt, key, value); err != nil {
			return b.fail(err)
		}
	} else {
		b.appendRecord(bt, p, key, value)
	}
	bt.n++
	bt.bytes += cost
	b.pendRecs++
	b.pendBytes += int64(len(key)) + int64(len(value))
	if b.pendRecs >= counterFlushEvery {
		b.flushCounters()
	}
	if bt.bytes >= b.limit {
		return b.startSpill()
	}
	return nil
}

// tableFull tells whether the current batch's combining table has reached
// the memory that cuts its batch (Options.TablePercent). The table takes
// records a few dozen late (combTable.advance), always the same ones for
// the same record sequence, so the cut depends on the records alone.
func (b *Buffer) tableFull() bool {
	return b.tableLimit > 0 && b.tab != nil && !b.cur.raw && b.tab.keyMemory() >= b.tableLimit
}

// partition returns key's partition, checked.
func (b *Buffer) partition(key []byte) (int, error) {
	p := b.part.Partition(key, b.opts.NumPartitions)
	if p < 0 || p >= b.opts.NumPartitions {
		return 0, fmt.Errorf("spill: partitioner put key %q in partition %d, outside [0, %d)", keyForError(key), p, b.opts.NumPartitions)
	}
	return p, nil
}

// appendRecord copies a record into bt's arena (or the ring) and record
// index.
func (b *Buffer) appendRecord(bt *batch, p int, key, value []byte) {
	n := len(key) + len(value)
	if !bt.inRing && !bt.noRing && b.tab == nil && (b.ring != nil || int64(len(bt.data)+n) > min(ringEnterAt, b.opts.BufferBytes/16)) {
		b.enterRing(bt)
	}
	var off int
	if bt.inRing {
		off = b.ringPlace(bt, n) // may move bt out of the ring
	}
	if !bt.inRing {
		if need := len(bt.data) + n; need > cap(bt.data) {
			bt.data = growArena(bt.data, need, b.limit)
		}
		off = len(bt.data)
		bt.data = bt.data[:off+n]
	}
	if len(bt.recs) == cap(bt.recs) {
		b.growRecs(bt)
	}
	r := rec{off: uint32(off), klen: uint32(len(key)), vlen: uint32(len(value)), part: uint32(p)}
	if b.defaultCmp {
		r.prefix = keyPrefix(key)
	}
	copy(bt.data[off:off+len(key)], key)
	copy(bt.data[off+len(key):off+n], value)
	bt.recs = append(bt.recs, r)
	bt.counts[p]++
}

// growRecs makes room in bt's record index. Past 1024 records it grows
// the index straight to a 16th more than the records a batch is expected
// to hold (the largest batch cut so far; before the first cut, the
// spill threshold over the mean cost of the records so far), doubling
// only past that: batches of similar records then allocate their index
// once instead of leaving the garbage of every doubling (25 MB a batch for
// TeraSort's 560,000 records).
func (b *Buffer) growRecs(bt *batch) {
	n := len(bt.recs)
	want := max(n, 1024)
	hint := b.maxBatchRecs
	if hint == 0 && n >= 1024 && bt.bytes > 0 && !bt.raw {
		// No batch cut yet: the records so far tell how many the batch
		// will hold if the rest are like them.
		hint = int(min(b.limit/max(bt.bytes/int64(n), 1), b.limit/b.opts.RecordOverhead))
	}
	if hint += hint / 16; hint > n && n >= 1024 {
		want = hint - n
	}
	bt.recs = slices.Grow(bt.recs, want)
}

// ringEnterAt is the data size past which a batch without a table moves
// into the ring (or a 16th of the buffer, if smaller): below it a private
// arena (which doubles from 64 KiB) keeps a small map output small. Once
// the ring exists, every such batch starts in it.
const ringEnterAt = 1 << 20

// ringAlloc reserves n contiguous bytes at the ring's head and returns
// their physical offset, or -1 if the live bytes plus these would pass the
// ring's size.
func (b *Buffer) ringAlloc(n int) int {
	r := int64(len(b.ring))
	v := b.headV
	if pos := v % r; pos+int64(n) > r {
		v += r - pos // skip the end: the record goes at the start
	}
	if v+int64(n)-b.tailV > r {
		return -1
	}
	b.headV = v + int64(n)
	return int(v % r)
}

// ringPlace reserves room in the ring for a record of n bytes of bt (in
// the ring) and returns its offset. With no room, it moves bt out of the
// ring into a private arena and returns 0 with bt.inRing false: the caller
// appends there. The spill in progress, if any, is not waited for: this
// runs inside Emit after the accounting checks, and memory that frees up
// later is used by the next batch.
func (b *Buffer) ringPlace(bt *batch, n int) int {
	if off := b.ringAlloc(n); off >= 0 {
		return off
	}
	b.leaveRing(bt, n)
	return 0
}

// enterRing moves bt's records (in a private arena) into the ring, and
// tells whether it did; if not, bt keeps its private arena for good.
func (b *Buffer) enterRing(bt *batch) bool {
	if b.ring == nil {
		b.ring = make([]byte, b.ringSize(bt))
	}
	if b.headV == b.tailV {
		// Nothing is live: start at the ring's physical start.
		r := int64(len(b.ring))
		b.headV += (r - b.headV%r) % r
		b.tailV = b.headV
	}
	startV := b.headV
	base := b.ringAlloc(len(bt.data))
	if base < 0 {
		bt.noRing = true
		return false
	}
	copy(b.ring[base:], bt.data)
	for i := range bt.recs {
		bt.recs[i].off += uint32(base)
	}
	bt.data = b.ring
	bt.inRing, bt.startV = true, startV
	b.retail()
	return true
}

// ringSize is the size of the ring, chosen when the first batch enters
// it: the share of the buffer that the bytes of the records so far take of
// their accounted cost (the rest of the cost is their record index, kept
// outside the ring), an eighth more and 64 KiB (or a 16th of the buffer,
// if less), at most BufferBytes. Both
// batches' bytes fit while the records are like the first ones; when they
// do not, Emit waits for the spill in progress, and a batch that alone
// outgrows the ring leaves it.
func (b *Buffer) ringSize(bt *batch) int64 {
	if bt.bytes <= 0 || len(bt.data) == 0 {
		return b.opts.BufferBytes
	}
	share := float64(len(bt.data)) / float64(bt.bytes)
	return min(b.opts.BufferBytes, int64(float64(b.opts.BufferBytes)*share*9/8)+min(64<<10, b.opts.BufferBytes/16))
}

// ringFree tells whether n more bytes fit at the ring's head.
func (b *Buffer) ringFree(n int) bool {
	r := int64(len(b.ring))
	v := b.headV
	if pos := v % r; pos+int64(n) > r {
		v += r - pos
	}
	return v+int64(n)-b.tailV <= r
}

// leaveRing copies bt's records out of the ring into a private arena with
// room for n more bytes, for the rest of the batch.
func (b *Buffer) leaveRing(bt *batch, n int) {
	size := n
	for _, r := range bt.recs {
		size += int(r.klen + r.vlen)
	}
	data := make([]byte, 0, max(size, int(min(b.limit, int64(maxRecordBytes)))))
	for i, r := range bt.recs {
		e := r.off + r.klen + r.vlen
		bt.recs[i].off = uint32(len(data))
		data = append(data, b.ring[r.off:e]...)
	}
	bt.data = data
	bt.inRing, bt.noRing = false, true
	b.ringLeaves++
	b.retail()
}

// retail sets the ring's tail to the start of the oldest batch in it.
func (b *Buffer) retail() {
	switch {
	case b.inflight != nil && b.inflight.batch.inRing:
		b.tailV = b.inflight.batch.startV
	case b.cur != nil && b.cur.inRing:
		b.tailV = b.cur.startV
	default:
		b.tailV = b.headV
	}
}

// cut ends the current batch in combining mode, in this goroutine (see
// Buffer): it runs the combiner on every key of the batch and leaves the
// output in data, sorted and starts, in spill order, with combined set. A
// batch held in the table is combined key by key in order of first
// emission and its output sorted afterwards; a batch that fell back to
// plain records is sorted, combined key group by key group, and its output
// is already in order.
func (b *Buffer) cut(bt *batch) error {
	if err := b.tab.flush(b, bt); err != nil {
		return err
	}
	out := &b.tab.out
	out.bt, out.index = bt, b.next
	bt.out, bt.outRecs = bt.out[:0], bt.outRecs[:0]
	clear(bt.outCounts)
	if bt.raw {
		b.sortBatch(bt)
		var combIn int64
		for p := range b.opts.NumPartitions {
			recs := bt.sorted[bt.starts[p]:bt.starts[p+1]]
			if len(recs) == 0 {
				continue
			}
			out.part = uint32(p)
			if err := b.combine(bt.data, recs, out); err != nil {
				return fmt.Errorf("spill: combiner on spill %d, partition %d: %w", b.next, p, err)
			}
			combIn += int64(len(recs))
		}
		b.cCombIn.Add(combIn)
		// The output is in order: it becomes the spill.
		bt.data, bt.out = bt.out, bt.data
		bt.sorted, bt.outRecs = bt.outRecs, bt.sorted
		sum := 0
		for p, c := range bt.outCounts {
			bt.starts[p] = sum
			sum += c
		}
		bt.starts[len(bt.outCounts)] = sum
	} else {
		if err := b.tab.cut(b, bt); err != nil {
			return err
		}
		// Sort the output as the records of a batch.
		bt.data, bt.out = bt.out, bt.data
		bt.recs, bt.outRecs = bt.outRecs, bt.recs
		bt.counts, bt.outCounts = bt.outCounts, bt.counts
		b.sortBatch(bt)
	}
	b.cCombOut.Add(int64(len(bt.sorted)))
	bt.combined = true
	b.prevOut = int64(len(bt.data)) + int64(len(bt.sorted))*int64(unsafe.Sizeof(rec{}))
	return nil
}

// Poll reports, through OnSpill, a background spill that has completed,
// without emitting anything. A map runner may call it between input records
// so that spills are announced promptly even when the map emits rarely. It
// never blocks on a spill in progress.
func (b *Buffer) Poll() error {
	if b.err != nil {
		return b.err
	}
	if b.inflight != nil && len(b.inflight.done) > 0 {
		return b.finishInflight()
	}
	return nil
}

// Close spills what is left as the final spill (an empty one if nothing is
// left) after waiting for the spill in progress, and reports both through
// OnSpill. It returns the first error met.
func (b *Buffer) Close() error { return b.close(true) }

// CloseSplit is Close for a map that stops early because it was split
// (docs/split.md): what is left becomes a spill that is not final (an
// empty one if nothing is left), as Cut would make it, and the map's
// remainder continues the numbering in another attempt.
func (b *Buffer) CloseSplit() error { return b.close(false) }

// Cut ends the current batch here, as a spill of its own (an empty one if
// nothing was emitted since the last boundary) whatever its size, waits
// for it to be written and reports it, and leaves the Buffer in the state
// NewBuffer leaves it in (nothing held, no spill in progress, a fresh
// combining table) but for the next spill's index. A map that resumes a
// split task, or runs one again, cuts at the task's recorded split points:
// its spills after a cut are then those of an attempt that started there
// with FirstIndex the cut's spill, byte for byte, as its spills before are
// those of the attempt that was split.
func (b *Buffer) Cut() error {
	if b.err != nil {
		return b.err
	}
	if b.closed {
		return errors.New("spill: cut on a closed buffer")
	}
	if b.aborted.Load() {
		return b.fail(errors.New("spill: cut on an aborted buffer"))
	}
	if err := b.startSpill(); err != nil {
		return err
	}
	if err := b.finishInflight(); err != nil {
		return err
	}
	b.prevOut = 0
	if b.tab != nil {
		b.tab = newCombTable(b.opts.NumPartitions, isUvarintSum(b.opts.Combiner))
	}
	return nil
}

// NextIndex is the index the next spill will have.
func (b *Buffer) NextIndex() int { return b.next }

func (b *Buffer) close(final bool) error {
	if b.err != nil {
		return b.err
	}
	if b.closed {
		return errors.New("spill: buffer closed twice")
	}
	b.closed = true
	if b.aborted.Load() {
		return b.fail(errors.New("spill: close on an aborted buffer"))
	}
	if b.inflight != nil {
		if err := b.finishInflight(); err != nil {
			return err
		}
	}
	b.flushCounters()
	if b.tab != nil {
		if err := b.cut(b.cur); err != nil {
			return b.fail(err)
		}
	}
	index := b.next
	b.next++
	b.batchRecs = append(b.batchRecs, b.cur.n)
	info, err := b.writeSpill(index, final, b.cur)
	if err != nil {
		return b.fail(err)
	}
	b.cur.reset()
	if err := b.deliver(info); err != nil {
		return err
	}
	b.cur, b.spare = nil, nil
	return nil
}

// Abort stops any background work: the spill in progress stops at its next
// check and Abort waits for it. It removes no completed spill file. Abort
// must not be called concurrently with Emit or Close; every later call
// returns an error.
func (b *Buffer) Abort() {
	b.aborted.Store(true)
	b.wg.Wait()
	if b.err == nil {
		b.err = errors.New("spill: buffer aborted")
	}
}

func (b *Buffer) fail(err error) error {
	if b.err == nil {
		b.err = err
	}
	return b.err
}

func (b *Buffer) flushCounters() {
	if b.pendRecs != 0 {
		b.cOutRecs.Add(b.pendRecs)
		b.cOutBytes.Add(b.pendBytes)
		b.pendRecs, b.pendBytes = 0, 0
	}
}

// startSpill cuts the current batch and spills it in the background, after
// waiting for (and reporting) the spill already in progress. In combining
// mode the cut (the last combine, see combTable.cut) happens first, here,
// while the spill in progress goes on.
func (b *Buffer) startSpill() error {
	if b.tab != nil {
		if err := b.cut(b.cur); err != nil {
			return b.fail(err)
		}
	}
	if b.inflight != nil {
		if err := b.finishInflight(); err != nil {
			return err
		}
	}
	b.flushCounters()
	b.maxBatchRecs = max(b.maxBatchRecs, len(b.cur.recs))
	b.batchRecs = append(b.batchRecs, b.cur.n)
	job := &spillJob{index: b.next, batch: b.cur, done: make(chan spillResult, 1)}
	b.next++
	if b.spare != nil {
		b.cur, b.spare = b.spare, nil
	} else {
		b.cur = newBatch(b.opts.NumPartitions)
	}
	b.inflight = job
	b.retail()
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		if b.spillHook != nil {
			b.spillHook(job.index)
		}
		info, err := b.writeSpill(job.index, false, job.batch)
		job.done <- spillResult{info: info, err: err}
	}()
	return nil
}

// finishInflight waits for the spill in progress and reports it.
func (b *Buffer) finishInflight() error {
	job := b.inflight
	res := <-job.done
	b.inflight = nil
	job.batch.reset()
	b.spare = job.batch
	b.retail()
	if res.err != nil {
		return b.fail(res.err)
	}
	return b.deliver(res.info)
}

func (b *Buffer) deliver(info SpillInfo) error {
	if b.opts.OnSpill == nil {
		return nil
	}
	if err := b.opts.OnSpill(info); err != nil {
		return b.fail(fmt.Errorf("spill: reporting spill %d: %w", info.Index, err))
	}
	return nil
}

// sortBatch groups the batch's records by partition (a stable counting
// sort) and sorts each partition by key, ties in emit order.
func (b *Buffer) sortBatch(bt *batch) {
	n := b.opts.NumPartitions
	if b.tab == nil {
		// One batch at a time is sorted and written (see Buffer.sorted).
		bt.sorted = b.sorted
	}
	if cap(bt.sorted) < len(bt.recs) {
		bt.sorted = make([]rec, len(bt.recs))
		if b.tab == nil {
			b.sorted = bt.sorted
		}
	}
	bt.sorted = bt.sorted[:len(bt.recs)]
	if n == 1 {
		copy(bt.sorted, bt.recs)
		bt.starts[0], bt.starts[1] = 0, len(bt.recs)
	} else {
		sum := 0
		for p, c := range bt.counts {
			bt.starts[p] = sum
			sum += c
		}
		bt.starts[n] = sum
		next := bt.counts // reuse as write cursors; counts are rebuilt by reset
		copy(next, bt.starts[:n])
		for _, r := range bt.recs {
			bt.sorted[next[r.part]] = r
			next[r.part]++
		}
	}
	data := bt.data
	var ord emitOrder
	if bt.inRing {
		ord = emitOrder{base: uint32(bt.startV % int64(len(b.ring))), size: uint32(len(b.ring))}
	}
	for p := 0; p < n; p++ {
		lo, hi := bt.starts[p], bt.starts[p+1]
		s := bt.sorted[lo:hi]
		if len(s) < 2 {
			continue
		}
		if b.defaultCmp {
			// bt.recs is free once scattered: it is the radix sort's scratch.
			if bt.radix == nil {
				bt.radix = new(radixCounts)
			}
			sortByKeyPrefixWith(data, s, bt.recs[lo:hi], bt.radix, ord)
			continue
		}
		compare := b.cmp
		slices.SortFunc(s, func(x, y rec) int {
			if c := compare(data[x.off:x.off+x.klen:x.off+x.klen], data[y.off:y.off+y.klen:y.off+y.klen]); c != 0 {
				return c
			}
			return cmp.Compare(ord.of(x.off), ord.of(y.off))
		})
	}
}

// emitOrder maps a record's offset to a number that grows with emit
// order within its batch, the tie-break of equal keys: the offset itself
// in a private arena; in the ring, where a batch may wrap to the ring's
// start, its distance from the batch's first byte.
type emitOrder struct {
	base, size uint32 // size 0: offsets are in emit order
}

func (o emitOrder) of(off uint32) uint32 {
	if o.size == 0 || off >= o.base {
		return off - o.base
	}
	return off + o.size - o.base
}

// radixMin is the smallest run sorted by radix rather than by comparison.
const radixMin = 256

// The radix sort takes the 64-bit key prefix radixBits at a time, least
// significant digit first: six passes at most (a pass whose digit is the
// same for every record is skipped).
const (
	radixBits   = 11
	radixDigits = (64 + radixBits - 1) / radixBits
)

// radixCounts is the scratch of sortByKeyPrefix: a histogram per digit.
type radixCounts [radixDigits][1 << radixBits]int

// sortByKeyPrefix sorts s (in emit order) by key under bytes.Compare, ties
// in emit order, using tmp (as long as s) as scratch. It radix-sorts on the
// 8-byte key prefix (a stable LSD sort, so equal prefixes stay in emit
// order) and then sorts each run of equal prefixes by the full key.
func sortByKeyPrefix(data []byte, s, tmp []rec) {
	sortByKeyPrefixWith(data, s, tmp, new(radixCounts), emitOrder{})
}

// sortByKeyPrefixWith is sortByKeyPrefix with its scratch histograms and
// the batch's emit order of offsets.
func sortByKeyPrefixWith(data []byte, s, tmp []rec, counts *radixCounts, ord emitOrder) {
	full := func(x, y rec) int {
		if c := bytes.Compare(data[x.off:x.off+x.klen], data[y.off:y.off+y.klen]); c != 0 {
			return c
		}
		return cmp.Compare(ord.of(x.off), ord.of(y.off))
	}
	if len(s) < radixMin {
		slices.SortFunc(s, func(x, y rec) int {
			if x.prefix != y.prefix {
				return cmp.Compare(x.prefix, y.prefix)
			}
			return full(x, y)
		})
		return
	}
	const mask = 1<<radixBits - 1
	clear(counts[:])
	for _, r := range s {
		p := r.prefix
		for d := range radixDigits {
			counts[d][(p>>(radixBits*d))&mask]++
		}
	}
	src, dst := s, tmp
	for d := range radixDigits {
		c := &counts[d]
		shift := radixBits * d
		if c[(src[0].prefix>>shift)&mask] == len(src) {
			continue // every record has the same digit here
		}
		sum := 0
		for i, n := range c {
			c[i] = sum
			sum += n
		}
		for _, r := range src {
			k := (r.prefix >> shift) & mask
			dst[c[k]] = r
			c[k]++
		}
		src, dst = dst, src
	}
	if &src[0] != &s[0] {
		copy(s, src)
	}
	// Equal prefixes: order by the whole key (keys may differ after 8 bytes
	// or in length).
	for i := 0; i < len(s); {
		j := i + 1
		for j < len(s) && s[j].prefix == s[i].prefix {
			j++
		}
		if run := s[i:j]; len(run) > 1 && !slices.IsSortedFunc(run, full) {
			slices.SortFunc(run, full)
		}
		i = j
	}
}

// writeSpill sorts a batch and runs the combiner (unless the batch is
// combined already, see cut) and writes spill index's data and index
// files, renaming both into place.
func (b *Buffer) writeSpill(index int, final bool, bt *batch) (SpillInfo, error) {
	if !bt.combined {
		b.sortBatch(bt)
	}
	dataPath := filepath.Join(b.opts.Dir, DataFileName(index))
	indexPath := filepath.Join(b.opts.Dir, IndexFileName(index))
	f, err := os.CreateTemp(b.opts.Dir, DataFileName(index)+".tmp*")
	if err != nil {
		return SpillInfo{}, fmt.Errorf("spill: create data file for spill %d: %w", index, err)
	}
	tmp := f.Name()
	failed := func(err error) (SpillInfo, error) {
		f.Close()
		os.Remove(tmp)
		return SpillInfo{}, err
	}
	if err := f.Chmod(0o644); err != nil {
		return failed(fmt.Errorf("spill: chmod %s: %w", tmp, err))
	}
	if b.bw == nil {
		b.bw = bufio.NewWriterSize(f, 256<<10)
	} else {
		b.bw.Reset(f)
	}
	segs := make([]SegmentInfo, b.opts.NumPartitions)
	var off, combIn, combOut, spilled int64
	for p := range segs {
		if b.aborted.Load() {
			return failed(fmt.Errorf("spill: spill %d aborted", index))
		}
		data, recs := bt.data, bt.sorted[bt.starts[p]:bt.starts[p+1]]
		b.sw.reset(b.bw, b.opts.BlockSize)
		if b.opts.Combiner != nil && !bt.combined && len(recs) > 0 {
			ce := &b.cemit
			ce.n = 0
			if err := b.combine(data, recs, ce); err != nil {
				return failed(fmt.Errorf("spill: combiner on spill %d, partition %d: %w", index, p, err))
			}
			combIn += int64(len(recs))
			combOut += ce.n
		} else {
			// Sorted records lie scattered in data: prefetching the
			// record writeAhead places on lets the processor fetch it
			// while it writes the ones before.
			for i, r := range recs {
				if j := i + writeAhead; j < len(recs) && int(recs[j].off) < len(data) {
					prefetch(&data[recs[j].off])
				}
				k := r.off + r.klen
				e := k + r.vlen
				if err := b.sw.Write(data[r.off:k], data[k:e]); err != nil {
					return failed(fmt.Errorf("spill: write spill %d to %s: %w", index, tmp, err))
				}
			}
		}
		seg, err := b.sw.Close()
		if err != nil {
			return failed(fmt.Errorf("spill: write spill %d to %s: %w", index, tmp, err))
		}
		seg.Offset = off
		off += seg.Length
		spilled += seg.Records
		segs[p] = seg
	}
	if err := b.bw.Flush(); err != nil {
		return failed(fmt.Errorf("spill: write spill %d to %s: %w", index, tmp, err))
	}
	b.bw.Reset(nil)
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return SpillInfo{}, fmt.Errorf("spill: close %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, dataPath); err != nil {
		os.Remove(tmp)
		return SpillInfo{}, fmt.Errorf("spill: rename %s to %s: %w", tmp, dataPath, err)
	}
	if err := WriteIndex(indexPath, segs); err != nil {
		return SpillInfo{}, fmt.Errorf("spill: spill %d: %w", index, err)
	}
	b.cCombIn.Add(combIn)
	b.cCombOut.Add(combOut)
	b.cSpilled.Add(spilled)
	b.cMaterialized.Add(off)
	return SpillInfo{Index: index, Final: final, DataPath: dataPath, IndexPath: indexPath, Partitions: segs}, nil
}

// groupEmitter receives a combiner's output for one key group at a time.
type groupEmitter interface {
	mr.Emitter
	setKey(key []byte)
}

// combine runs the combiner over the key groups of one partition's sorted
// records, writing its output to out.
func (b *Buffer) combine(data []byte, recs []rec, out groupEmitter) error {
	b.rit.data, b.rit.recs, b.rit.i = data, recs, -1
	g := b.grouper
	*g = Grouper{it: &b.rit, cmp: b.cmp, equal: b.defaultCmp, key: g.key}
	g.vals.g = g
	g.vals.done = true
	for g.NextKey() {
		if b.aborted.Load() {
			return errors.New("aborted")
		}
		out.setKey(g.Key())
		if err := b.callCombiner(g.Key(), g.Values(), out); err != nil {
			return err
		}
	}
	return nil
}

// callCombiner runs the combiner on one key group, turning a panic in user
// code into an error so that the task fails with a message instead of
// crashing from the spill goroutine.
func (b *Buffer) callCombiner(key []byte, values mr.ValueIterator, out mr.Emitter) error {
	return callCombiner(b.opts.Combiner, b.opts.TaskContext, key, values, out)
}

// callCombiner runs c on one key group, turning a panic in user code into
// an error.
func callCombiner(c mr.Reducer, tc mr.TaskContext, key []byte, values mr.ValueIterator, out mr.Emitter) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("combiner panicked on key %q: %v\n%s", keyForError(key), r, debug.Stack())
		}
	}()
	return c.Reduce(tc, key, values, out)
}

// combineEmitter writes a combiner's output to the segment, checking that
// each key sorts like the group's key so that the segment stays sorted.
type combineEmitter struct {
	sw  *SegmentWriter
	cmp mr.Comparator
	key []byte
	n   int64
}

func (ce *combineEmitter) setKey(key []byte) { ce.key = key }

func (ce *combineEmitter) Emit(key, value []byte) error {
	if ce.cmp(key, ce.key) != 0 {
		return wrongKeyError(key, ce.key)
	}
	if err := ce.sw.Write(key, value); err != nil {
		return err
	}
	ce.n++
	return nil
}

// recIterator walks buffered records in the order of a rec slice.
type recIterator struct {
	data []byte
	recs []rec
	i    int
}

func (it *recIterator) Next() bool {
	if it.i < len(it.recs) {
		it.i++
	}
	return it.i < len(it.recs)
}

func (it *recIterator) Key() []byte {
	if it.i < 0 || it.i >= len(it.recs) {
		return nil
	}
	r := it.recs[it.i]
	e := r.off + r.klen
	return it.data[r.off:e:e]
}

func (it *recIterator) Value() []byte {
	if it.i < 0 || it.i >= len(it.recs) {
		return nil
	}
	r := it.recs[it.i]
	s := r.off + r.klen
	e := s + r.vlen
	return it.data[s:e:e]
}

func (it *recIterator) Err() error { return nil }

// growArena returns data with capacity for need bytes. It doubles the
// capacity up to 1 MiB and then jumps to the spill threshold, which no
// batch passes except by its last record: a small map output stays small,
// and a large one is not copied over and over (append grows large slices
// by only 1.25x). Fresh pages of a large allocation cost nothing until
// they are written.
func growArena(data []byte, need int, limit int64) []byte {
	newCap := max(2*cap(data), 64<<10)
	if newCap > 1<<20 || int64(newCap) > limit {
		newCap = int(limit)
	}
	newCap = max(newCap, need)
	grown := make([]byte, len(data), newCap)
	copy(grown, data)
	return grown
}

// keyPrefix returns the first 8 bytes of key as a big-endian integer,
// zero-padded: comparing prefixes orders keys as bytes.Compare does whenever
// the prefixes differ.
func keyPrefix(key []byte) uint64 {
	if len(key) >= 8 {
		return binary.BigEndian.Uint64(key)
	}
	var p uint64
	for i, c := range key {
		p |= uint64(c) << (56 - 8*uint(i))
	}
	return p
}

// keyForError shortens a key for an error message.
func keyForError(key []byte) []byte {
	if len(key) > 64 {
		return key[:64]
	}
	return key
}
