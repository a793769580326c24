package shuffle

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"sync"
	"unsafe"

	"gomr/mr"
	"gomr/spill"
)

// MergeOptions configure a MergeManager.
type MergeOptions struct {
	// Dir is the scratch directory for on-disk runs; it must exist.
	Dir string
	// MemoryBytes is the shuffle buffer: reduce memory times
	// mapreduce.reduce.shuffle.input.buffer.percent. Required > 0.
	MemoryBytes int64
	// SegmentLimit is the largest segment kept in memory: MemoryBytes times
	// mapreduce.reduce.shuffle.memory.limit.percent; in (0, MemoryBytes].
	SegmentLimit int64
	// MergePercent is the share of MemoryBytes whose use (by segments not
	// already being merged) starts merging memory into one disk run
	// (mapreduce.reduce.shuffle.merge.percent); in (0, 1].
	MergePercent float64
	// InMemThreshold, if positive, also starts merging the in-memory
	// segments into one disk run when that many wait in memory, whatever
	// their bytes (mapreduce.reduce.merge.inmem.threshold); 0 means no
	// such bound.
	InMemThreshold int
	// RetainBytes is how many bytes of in-memory segments may stay in
	// memory through the reduce: reduce memory times
	// mapreduce.reduce.input.buffer.percent. Finish merges the in-memory
	// segments beyond it into a disk run before the final merge; 0 keeps
	// none in memory.
	RetainBytes int64
	// Factor is the most runs merged at once (mapreduce.task.io.sort.factor);
	// at least 2.
	Factor int
	// Compare orders keys; nil means bytes.Compare.
	Compare mr.Comparator
	// BlockSize is the target uncompressed block size of disk runs; 0 means
	// the spill package's default.
	BlockSize int
	// Combiner, if set, makes the job's combiner, which then runs on the
	// key groups of every merge that writes a disk run (in-memory
	// segments merged to disk, disk runs merged into one), as Hadoop's
	// MergeManager runs it when it merges in-memory map outputs to disk.
	// It is called once per merge, since merges run at once. With it, a
	// batch of several in-memory segments is always merged (and combined)
	// rather than written as it came: the merge costs CPU once, and every
	// later merge and the reduce read fewer records. The final merge,
	// which the reduce reads, is not combined.
	Combiner func() (mr.Reducer, error)
	// TaskContext is passed to the combiner. May be nil.
	TaskContext mr.TaskContext
	// Counters receives SPILLED_RECORDS (records written to disk runs by
	// merges), MERGED_MAP_OUTPUTS (segments added), and
	// COMBINE_INPUT_RECORDS and COMBINE_OUTPUT_RECORDS (of the merges'
	// combiner) in group mr.TaskCounterGroup. May be nil.
	Counters *mr.Counters
}

// MergeStats count what a MergeManager did (MergeManager.Stats).
type MergeStats struct {
	// MemToDisk is the number of merges of in-memory segments into a disk
	// run, those of Finish for RetainBytes included.
	MemToDisk int
	// MemToDiskAsIs is how many of them wrote the segments as they came
	// (a run of segments) instead of merging them.
	MemToDiskAsIs int
	// DirectToDisk is the number of segments written to disk as they
	// came, being over SegmentLimit.
	DirectToDisk int
	// DiskMerges is the number of merges of disk runs into one, in the
	// background or in Finish's passes.
	DiskMerges int
	// FinalRuns and FinalInMemory are the disk runs and in-memory segments
	// the final merge reads; FinalStreams the sorted streams of those disk
	// runs (a run of segments written as they came has one per segment).
	FinalRuns, FinalStreams, FinalInMemory int
	// CombineInput and CombineOutput are the records the merges' combiner
	// (MergeOptions.Combiner) read and wrote.
	CombineInput, CombineOutput int64
}

// streams is the number of sorted streams of runs.
func streams(runs []diskRun) int {
	n := 0
	for _, r := range runs {
		n += r.streams()
	}
	return n
}

// MergeManager is the reduce side's merge of fetched segments. Memory is
// accounted by segment Length, the compressed bytes it holds (segments are
// kept compressed and decompressed block by block while merging). Merges run
// in background goroutines; Add blocks while the memory budget is full.
type MergeManager struct {
	opts      MergeOptions
	cmp       mr.Comparator
	threshold int64
	ctx       context.Context // cancelled by Close
	cancel    context.CancelFunc

	spilled, merged, combIn, combOut *mr.Counter

	mu         sync.Mutex
	cond       *sync.Cond
	mem        memList   // in memory, not being merged
	memUsed    int64     // bytes of all in-memory segments, incl. those being merged
	reserved   int64     // bytes of fetches in flight (Reserve)
	memMerging int64     // bytes of in-memory segments being merged
	runs       []diskRun // on disk, not being merged
	// writing is the streams of the runs of segments being written.
	writing  int
	active   int   // merges and disk writes in progress
	err      error // first failure; every later call returns it
	finished bool
	closed   bool
	files    map[string]struct{} // scratch files that exist
	open     []func()            // closes the readers of the final merge
	stats    MergeStats
	// records is the records of the segments added less those the
	// merges' combiner took away (Records).
	records int64
}

type memSegment struct {
	data []byte
	info spill.SegmentInfo
}

// memList is the in-memory segments not being merged, kept so that the
// garbage collector follows one pointer per block of fetched bytes
// rather than one per segment: a batched fetch reads many small segments
// into one shared block (readServedFrames, segmentArena), and a segment
// that lies inside the block of the segment added before it is kept as
// its offset in that block. A reduce holds thousands of segments, which
// every collection (a reduce child runs at GOGC=25) scanned.
type memList struct {
	refs   []memRef // no pointers: the collector does not scan them
	blocks [][]byte // what refs point into
}

// memRef is one segment of a memList: its announcement, with Offset its
// offset in blocks[block].
type memRef struct {
	info  spill.SegmentInfo
	block int
}

func (l *memList) len() int { return len(l.refs) }

// add appends segment data (described by info, Offset 0). If data lies
// within the list's last block it is kept as an offset in it; else
// data's bytes up to its capacity become the list's last block (a
// segment of a shared block, cut with its capacity reaching to the end
// of the block, so brings the block's following segments in too).
func (l *memList) add(data []byte, info spill.SegmentInfo) {
	n := len(l.blocks)
	var off int
	if n > 0 && len(data) > 0 {
		off = offsetIn(l.blocks[n-1], data)
	}
	if n == 0 || off < 0 || len(data) == 0 {
		l.blocks = append(l.blocks, data[:cap(data)])
		n, off = n+1, 0
	}
	if len(l.refs) == cap(l.refs) {
		// Double: append grows a long slice by a quarter, which for a
		// reduce of many small segments copies (and allocates) the
		// list about five times over.
		l.refs = slices.Grow(l.refs, max(len(l.refs), 64))
	}
	info.Offset = int64(off)
	l.refs = append(l.refs, memRef{info: info, block: n - 1})
}

// take returns the list's segments (each with no room to grow into the
// next, Offset 0) and empties it.
func (l *memList) take() []memSegment {
	if len(l.refs) == 0 {
		*l = memList{}
		return nil
	}
	segs := make([]memSegment, len(l.refs))
	for i, r := range l.refs {
		from, to := r.info.Offset, r.info.Offset+r.info.Length
		r.info.Offset = 0
		segs[i] = memSegment{data: l.blocks[r.block][from:to:to], info: r.info}
	}
	*l = memList{}
	return segs
}

// offsetIn returns the offset of data's bytes in block's, or -1 if they
// are not all within block. It compares addresses only; the bytes are
// then reached through block, a slice the caller holds.
func offsetIn(block, data []byte) int {
	if len(block) == 0 || len(data) == 0 {
		return -1
	}
	b := uintptr(unsafe.Pointer(unsafe.SliceData(block)))
	d := uintptr(unsafe.Pointer(unsafe.SliceData(data)))
	if len(data) > len(block) || d < b || d-b > uintptr(len(block)-len(data)) {
		return -1
	}
	return int(d - b)
}

type diskRun struct {
	path string
	// info describes the run: for a merged run (or a segment over
	// SegmentLimit written as it came) its one segment; for a run of
	// segments (segs) the file's bytes and the records of all of them.
	info spill.SegmentInfo
	// segs are, for a run of in-memory segments written to disk as they
	// came (writeSegments), those segments, each a sorted run of its own at
	// its Offset in the file, read as a stream of its own; nil for a run of
	// one segment (info).
	segs []spill.SegmentInfo
	// memBytes is, for a run Finish wrote from memory, the in-memory bytes
	// it replaced.
	memBytes int64
}

// streams is the number of sorted streams a merge of the run reads.
func (r diskRun) streams() int {
	if len(r.segs) > 0 {
		return len(r.segs)
	}
	return 1
}

// segments are the run's sorted segments, with their offsets in its file.
func (r diskRun) segments() []spill.SegmentInfo {
	if len(r.segs) > 0 {
		return r.segs
	}
	return []spill.SegmentInfo{r.info}
}

// streamCost is the memory one stream of a merge holds while it reads: a
// compressed block, its decoded block and a read buffer (runReader).
func streamCost(blockSize int) int64 {
	if blockSize <= 0 {
		blockSize = spill.DefaultBlockSize
	}
	return 2*int64(blockSize) + runReadBuffer
}

// runReadBuffer is the read buffer of each stream of a disk run.
const runReadBuffer = 16 << 10

// streamLimit is the fan-in of the merges of disk runs, the most streams
// they read at once: Factor, or more if their buffers (streamCost) take at
// most a quarter of the shuffle buffer, which the segments written to disk
// held before. Hadoop's factor (10) bounds open files and the memory of
// the streams; here a reduce's memory decides, so that a reduce whose
// shuffle buffer holds the buffers of 33 streams does not merge its runs
// in passes of 10. (The final merge also reads the in-memory segments kept
// for the reduce, as many as RetainBytes holds.)
func streamLimit(opts MergeOptions) int {
	return max(opts.Factor, int(opts.MemoryBytes/4/streamCost(opts.BlockSize)))
}

// NewMergeManager checks opts and returns an empty merge manager.
func NewMergeManager(opts MergeOptions) (*MergeManager, error) {
	st, err := os.Stat(opts.Dir)
	switch {
	case err != nil:
		return nil, fmt.Errorf("merge manager: scratch directory: %w", err)
	case !st.IsDir():
		return nil, fmt.Errorf("merge manager: scratch directory %s is not a directory", opts.Dir)
	case opts.MemoryBytes <= 0:
		return nil, fmt.Errorf("merge manager: MemoryBytes=%d, must be positive", opts.MemoryBytes)
	case opts.SegmentLimit <= 0 || opts.SegmentLimit > opts.MemoryBytes:
		return nil, fmt.Errorf("merge manager: SegmentLimit=%d, must be in (0, MemoryBytes=%d]", opts.SegmentLimit, opts.MemoryBytes)
	case !(opts.MergePercent > 0 && opts.MergePercent <= 1):
		return nil, fmt.Errorf("merge manager: MergePercent=%v, must be in (0, 1]", opts.MergePercent)
	case opts.InMemThreshold < 0:
		return nil, fmt.Errorf("merge manager: InMemThreshold=%d is negative", opts.InMemThreshold)
	case opts.RetainBytes < 0:
		return nil, fmt.Errorf("merge manager: RetainBytes=%d is negative", opts.RetainBytes)
	case opts.Factor < 2:
		return nil, fmt.Errorf("merge manager: Factor=%d, must be at least 2", opts.Factor)
	case opts.BlockSize < 0:
		return nil, fmt.Errorf("merge manager: BlockSize=%d is negative", opts.BlockSize)
	}
	counters := opts.Counters
	if counters == nil {
		counters = mr.NewCounters()
	}
	m := &MergeManager{
		opts:      opts,
		cmp:       opts.Compare,
		threshold: max(int64(float64(opts.MemoryBytes)*opts.MergePercent), 1),
		spilled:   counters.Get(mr.TaskCounterGroup, mr.SpilledRecords),
		merged:    counters.Get(mr.TaskCounterGroup, mr.MergedMapOutputs),
		combIn:    counters.Get(mr.TaskCounterGroup, mr.CombineInputRecords),
		combOut:   counters.Get(mr.TaskCounterGroup, mr.CombineOutputRecords),
		files:     map[string]struct{}{},
	}
	if m.cmp == nil {
		m.cmp = bytes.Compare
	}
	m.cond = sync.NewCond(&m.mu)
	m.ctx, m.cancel = context.WithCancel(context.Background())
	return m, nil
}

// usableLocked returns why the manager takes no more segments, if so.
func (m *MergeManager) usableLocked() error {
	switch {
	case m.err != nil:
		return m.err
	case m.closed:
		return errors.New("merge manager is closed")
	case m.finished:
		return errors.New("merge manager: segment added after Finish")
	}
	return nil
}

func (m *MergeManager) failLocked(err error) {
	if m.err == nil {
		m.err = err
	}
	m.cond.Broadcast()
}

// Add takes one verified segment: its on-disk (framed, compressed) bytes
// and its description. The manager keeps data, so the caller must not
// change it afterwards. Segments with no records are counted and dropped;
// segments over SegmentLimit are written straight to a disk run; the rest
// are kept in memory, waiting while the memory budget is full. When the
// in-memory segments not yet being merged reach MergePercent of
// MemoryBytes (or InMemThreshold of them wait), they are merged into one
// disk run in the background; when 2*Factor-1 disk runs wait, the Factor
// smallest are merged into one in the background. Add is safe for concurrent use; it returns the error of a
// failed background merge, if any.
func (m *MergeManager) Add(data []byte, seg spill.SegmentInfo) error {
	if int64(len(data)) != seg.Length {
		return fmt.Errorf("merge manager: segment of %d bytes described as %d bytes", len(data), seg.Length)
	}
	seg.Offset = 0
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.usableLocked(); err != nil {
		return err
	}
	m.merged.Increment()
	m.records += seg.Records
	if seg.Records == 0 {
		return nil
	}
	if seg.Length > m.opts.SegmentLimit {
		m.active++
		m.mu.Unlock()
		run, err := m.writeRun(data, seg)
		m.mu.Lock()
		m.active--
		if err != nil {
			m.failLocked(err)
			return err
		}
		m.runs = append(m.runs, run)
		m.stats.DirectToDisk++
		m.maybeMergeRunsLocked()
		m.cond.Broadcast()
		return nil
	}
	for m.memUsed+seg.Length > m.opts.MemoryBytes {
		if err := m.usableLocked(); err != nil {
			return err
		}
		if m.memMerging == 0 && m.mem.len() > 0 {
			m.mergeMemoryLocked()
			continue
		}
		m.cond.Wait()
	}
	m.mem.add(data, seg)
	m.memUsed += seg.Length
	if m.memUsed-m.memMerging >= m.threshold || (m.opts.InMemThreshold > 0 && m.mem.len() >= m.opts.InMemThreshold) {
		m.mergeMemoryLocked()
	}
	return nil
}

// Reserve waits until n more bytes fit the shuffle buffer beside the
// segments it holds and the fetches in flight reserved before, and reserves
// them for a fetch; release gives them back once the fetched segments were
// added (or the fetch failed). Counting a fetch from its start bounds what
// a reduce holds at once by MemoryBytes (Hadoop's MergeManager.reserve),
// also for segments over SegmentLimit, which are in memory while fetched
// and written to disk by Add. While it waits it starts merging the
// in-memory segments to disk if no merge of them runs. A fetch of more
// than MemoryBytes goes when nothing else is held or in flight. It returns
// ctx's error, or the merge manager's if it failed or was closed.
func (m *MergeManager) Reserve(ctx context.Context, n int64) (release func(), err error) {
	if n <= 0 {
		return func() {}, nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	stop := context.AfterFunc(ctx, func() {
		m.mu.Lock()
		m.cond.Broadcast()
		m.mu.Unlock()
	})
	defer stop()
	for m.memUsed+m.reserved+n > m.opts.MemoryBytes && (m.memUsed > 0 || m.reserved > 0) {
		if err := m.usableLocked(); err != nil {
			return nil, err
		}
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("merge manager: waiting for %d bytes of shuffle buffer: %w", n, err)
		}
		if m.memMerging == 0 && m.mem.len() > 0 {
			m.mergeMemoryLocked()
			continue
		}
		m.cond.Wait()
	}
	if err := m.usableLocked(); err != nil {
		return nil, err
	}
	m.reserved += n
	var once sync.Once
	return func() {
		once.Do(func() {
			m.mu.Lock()
			m.reserved -= n
			m.cond.Broadcast()
			m.mu.Unlock()
		})
	}, nil
}

// mergeMemoryLocked starts writing every in-memory segment not already
// being written to one disk run, in the background. While the streams on
// disk and these segments stay within streamLimit it writes them as they
// came (a run of segments, each still a sorted stream, with its own CRC),
// which costs a write and a read of their compressed bytes where a merge
// decodes, compares, re-encodes and writes every record; the final merge
// reads them. Past that, it merges them into one sorted run, as Hadoop
// does: written as they came, they would only be merged by a pass later.
func (m *MergeManager) mergeMemoryLocked() {
	batch := m.mem.take()
	var size, records int64
	for _, s := range batch {
		size += s.info.Length
		records += s.info.Records
	}
	raw := len(batch) == 1 || m.opts.Combiner == nil && streams(m.runs)+m.writing+len(batch) <= streamLimit(m.opts)
	if raw {
		m.writing += len(batch)
	}
	m.memMerging += size
	m.active++
	go func() {
		run, err := m.memoryToRun(m.ctx, batch, records, raw)
		m.mu.Lock()
		defer m.mu.Unlock()
		if raw {
			m.writing -= len(batch)
		}
		m.active--
		m.memMerging -= size
		m.memUsed -= size
		if err != nil {
			m.failLocked(err)
			return
		}
		m.runs = append(m.runs, run)
		m.stats.MemToDisk++
		if raw {
			m.stats.MemToDiskAsIs++
		}
		m.maybeMergeRunsLocked()
		m.cond.Broadcast()
	}()
}

// maybeMergeRunsLocked starts merging the smallest disk runs, up to
// streamLimit streams of them (at least two runs), into one for as long as
// 2*streamLimit-1 runs wait.
func (m *MergeManager) maybeMergeRunsLocked() {
	f := streamLimit(m.opts)
	for m.err == nil && !m.closed && len(m.runs) >= 2*f-1 {
		sortRuns(m.runs)
		n := pickRuns(m.runs, f, f)
		pick := slices.Clone(m.runs[:n])
		m.runs = slices.Delete(m.runs, 0, n)
		m.active++
		go func() {
			run, err := m.mergeRuns(m.ctx, pick)
			m.mu.Lock()
			defer m.mu.Unlock()
			m.active--
			if err != nil {
				m.failLocked(err)
				return
			}
			m.runs = append(m.runs, run)
			m.maybeMergeRunsLocked()
			m.cond.Broadcast()
		}()
	}
}

// pickRuns is how many of the first runs (sorted by sortRuns) one merge
// takes: at most factor, and no more than keep their streams within limit,
// but at least two.
func pickRuns(runs []diskRun, factor, limit int) int {
	n, streams := 0, 0
	for n < len(runs) && n < factor && (n < 2 || streams+runs[n].streams() <= limit) {
		streams += runs[n].streams()
		n++
	}
	return n
}

// sortRuns orders runs by size, smallest first (by path on ties, so that
// the order is the same every time).
func sortRuns(runs []diskRun) {
	slices.SortFunc(runs, func(a, b diskRun) int {
		if a.info.Length != b.info.Length {
			if a.info.Length < b.info.Length {
				return -1
			}
			return 1
		}
		if a.path < b.path {
			return -1
		}
		if a.path > b.path {
			return 1
		}
		return 0
	})
}

// createRun creates a scratch file and remembers it for Close.
func (m *MergeManager) createRun() (*os.File, error) {
	f, err := os.CreateTemp(m.opts.Dir, "merge-*.run")
	if err != nil {
		return nil, fmt.Errorf("create merge run in %s: %w", m.opts.Dir, err)
	}
	m.mu.Lock()
	m.files[f.Name()] = struct{}{}
	m.mu.Unlock()
	return f, nil
}

// removeRun deletes a scratch file.
func (m *MergeManager) removeRun(path string) error {
	m.mu.Lock()
	delete(m.files, path)
	m.mu.Unlock()
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove merge run: %w", err)
	}
	return nil
}

// writeRun stores a segment's bytes as they are in a disk run.
func (m *MergeManager) writeRun(data []byte, seg spill.SegmentInfo) (diskRun, error) {
	f, err := m.createRun()
	if err != nil {
		return diskRun{}, err
	}
	_, werr := f.Write(data)
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		_ = m.removeRun(f.Name())
		return diskRun{}, fmt.Errorf("write segment of %d bytes to %s: %w", len(data), f.Name(), err)
	}
	return diskRun{path: f.Name(), info: seg}, nil
}

// writeSegments stores in-memory segments in one disk run as they are,
// one after the other: a run of segments.
func (m *MergeManager) writeSegments(segs []memSegment) (diskRun, error) {
	if len(segs) == 1 {
		return m.writeRun(segs[0].data, segs[0].info)
	}
	f, err := m.createRun()
	if err != nil {
		return diskRun{}, err
	}
	run := diskRun{path: f.Name(), segs: make([]spill.SegmentInfo, 0, len(segs))}
	for _, s := range segs {
		info := s.info
		info.Offset = run.info.Length
		run.segs = append(run.segs, info)
		run.info.Length += info.Length
		run.info.RawLength += info.RawLength
		run.info.Records += info.Records
	}
	var werr error
	for _, s := range segs {
		if _, werr = f.Write(s.data); werr != nil {
			break
		}
	}
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		_ = m.removeRun(run.path)
		return diskRun{}, fmt.Errorf("write %d segments of %d bytes to %s: %w", len(segs), run.info.Length, run.path, err)
	}
	return run, nil
}

// mergeToRun merges its, which must hold wantRecords records, into a new
// disk run, combining them if the manager has a combiner.
func (m *MergeManager) mergeToRun(ctx context.Context, its []spill.Iterator, wantRecords int64) (diskRun, error) {
	f, err := m.createRun()
	if err != nil {
		return diskRun{}, err
	}
	path := f.Name()
	fail := func(err error) (diskRun, error) {
		f.Close()
		_ = m.removeRun(path)
		return diskRun{}, err
	}
	bw := bufio.NewWriterSize(f, 256<<10)
	sw := spill.NewSegmentWriter(bw, m.opts.BlockSize)
	it := spill.Merge(m.cmp, its)
	read := int64(-1) // the records merged, if combined
	if m.opts.Combiner != nil {
		c, err := m.opts.Combiner()
		if err != nil {
			return fail(fmt.Errorf("merge into %s: creating the combiner: %w", path, err))
		}
		in, out, err := spill.CombineTo(ctx, m.opts.TaskContext, c, it, m.cmp, sw)
		if err != nil {
			return fail(fmt.Errorf("merge into %s: %w", path, err))
		}
		read = in
		m.combIn.Add(in)
		m.combOut.Add(out)
		m.mu.Lock()
		m.stats.CombineInput += in
		m.stats.CombineOutput += out
		m.records -= in - out
		m.mu.Unlock()
	} else {
		for n := 0; it.Next(); n++ {
			if n&1023 == 0 && ctx.Err() != nil {
				return fail(fmt.Errorf("merge into %s: %w", path, ctx.Err()))
			}
			if err := sw.Write(it.Key(), it.Value()); err != nil {
				return fail(fmt.Errorf("write merge run %s: %w", path, err))
			}
		}
		if err := it.Err(); err != nil {
			return fail(fmt.Errorf("merge into %s: %w", path, err))
		}
	}
	info, err := sw.Close()
	if err != nil {
		return fail(fmt.Errorf("write merge run %s: %w", path, err))
	}
	if err := bw.Flush(); err != nil {
		return fail(fmt.Errorf("write merge run %s: %w", path, err))
	}
	if err := f.Close(); err != nil {
		_ = m.removeRun(path)
		return diskRun{}, fmt.Errorf("write merge run %s: %w", path, err)
	}
	switch {
	case read < 0 && info.Records != wantRecords:
		_ = m.removeRun(path)
		return diskRun{}, fmt.Errorf("merge run %s has %d records, its inputs %d", path, info.Records, wantRecords)
	case read >= 0 && read != wantRecords:
		_ = m.removeRun(path)
		return diskRun{}, fmt.Errorf("merge into %s read %d records, its inputs have %d", path, read, wantRecords)
	}
	m.spilled.Add(info.Records)
	return diskRun{path: path, info: info}, nil
}

// openRun returns an iterator over each sorted segment of a disk run (one
// for a merged run) and a function closing them.
func openRun(run diskRun) ([]spill.Iterator, func(), error) {
	f, err := os.Open(run.path)
	if err != nil {
		return nil, nil, fmt.Errorf("open merge run: %w", err)
	}
	if len(run.segs) == 0 {
		it := &runReader{spill.NewSegmentReader(bufio.NewReaderSize(f, 64<<10), run.info), run.path}
		return []spill.Iterator{it}, func() { closeIterator(it); f.Close() }, nil
	}
	its := make([]spill.Iterator, len(run.segs))
	for i, s := range run.segs {
		r := bufio.NewReaderSize(io.NewSectionReader(f, s.Offset, s.Length), runReadBuffer)
		its[i] = &runReader{spill.NewSegmentReader(r, s), run.path}
	}
	return its, func() {
		for _, it := range its {
			closeIterator(it)
		}
		f.Close()
	}, nil
}

// runReader reads a disk run; its error names the run's file, so that a
// run damaged on disk (the reader checks its framing, record count and
// CRC32C, wrapping spill.ErrCorrupt) fails the attempt saying which.
type runReader struct {
	*spill.SegmentReader
	path string
}

// Err returns the segment reader's error, naming the run.
func (r *runReader) Err() error {
	if err := r.SegmentReader.Err(); err != nil {
		return fmt.Errorf("reading merge run %s: %w", r.path, err)
	}
	return nil
}

// mergeRuns merges disk runs into one and removes them.
func (m *MergeManager) mergeRuns(ctx context.Context, runs []diskRun) (diskRun, error) {
	its := make([]spill.Iterator, 0, len(runs))
	closers := make([]func(), 0, len(runs))
	defer func() {
		for _, c := range closers {
			c()
		}
	}()
	var records int64
	for _, r := range runs {
		rits, c, err := openRun(r)
		if err != nil {
			return diskRun{}, fmt.Errorf("merge %d disk runs: %w", len(runs), err)
		}
		its = append(its, rits...)
		closers = append(closers, c)
		records += r.info.Records
	}
	out, err := m.mergeToRun(ctx, its, records)
	if err != nil {
		return diskRun{}, fmt.Errorf("merge %d disk runs: %w", len(runs), err)
	}
	m.mu.Lock()
	m.stats.DiskMerges++
	m.mu.Unlock()
	for _, c := range closers {
		c()
	}
	closers = nil
	for _, r := range runs {
		if err := m.removeRun(r.path); err != nil {
			return diskRun{}, err
		}
	}
	return out, nil
}

// closeIterator releases an iterator's buffers if it can.
func closeIterator(it spill.Iterator) {
	switch c := it.(type) {
	case interface{ Close() error }:
		_ = c.Close()
	case interface{ Close() }:
		c.Close()
	}
}

// Finish waits for background merges and returns one sorted stream over
// every record added. In-memory segments beyond RetainBytes (the first
// added that fit stay) are first written to one disk run (as they are
// while the streams stay within streamLimit). If the disk runs then have
// more than streamLimit streams (at least Factor), it merges the smallest
// runs, in passes, until they are within it, so that the final merge reads
// at most that many streams of disk runs plus the retained in-memory
// segments. Equal keys come from disk runs before in-memory
// segments. The stream's files stay open until Close. No segment can be
// added after Finish.
func (m *MergeManager) Finish(ctx context.Context) (spill.Iterator, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stopOnClose := context.AfterFunc(m.ctx, cancel)
	defer stopOnClose()

	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil, errors.New("merge manager: Finish after Close")
	}
	if m.finished {
		m.mu.Unlock()
		return nil, errors.New("merge manager: Finish called twice")
	}
	m.finished = true
	wake := context.AfterFunc(ctx, func() {
		m.mu.Lock()
		m.cond.Broadcast()
		m.mu.Unlock()
	})
	for m.active > 0 && m.err == nil && ctx.Err() == nil {
		m.cond.Wait()
	}
	wake()
	if m.err != nil {
		defer m.mu.Unlock()
		return nil, m.err
	}
	if err := ctx.Err(); err != nil {
		m.mu.Unlock()
		return nil, fmt.Errorf("merge manager: finish: %w", err)
	}
	runs, mem := m.runs, m.mem.take()
	m.runs = nil
	m.active++ // so that Close waits for the passes below
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		m.active--
		m.cond.Broadcast()
		m.mu.Unlock()
	}()

	var keep, out []memSegment
	var kept, outRecords int64
	for _, s := range mem {
		if kept+s.info.Length <= m.opts.RetainBytes {
			keep, kept = append(keep, s), kept+s.info.Length
		} else {
			out, outRecords = append(out, s), outRecords+s.info.Records
		}
	}
	mem = keep
	if len(out) > 0 {
		raw := len(out) == 1 || m.opts.Combiner == nil && streams(runs)+len(out) <= streamLimit(m.opts)
		run, err := m.memoryToRun(ctx, out, outRecords, raw)
		if err != nil {
			return nil, fmt.Errorf("merge manager: finish: %w", err)
		}
		runs = append(runs, run)
		m.mu.Lock()
		m.memUsed -= run.memBytes
		m.stats.MemToDisk++
		if raw {
			m.stats.MemToDiskAsIs++
		}
		m.mu.Unlock()
	}
	limit := streamLimit(m.opts)
	for len(runs) > 1 && streams(runs) > limit {
		// Merge the smallest runs, as few as bring the streams within the
		// limit (Hadoop's first pass merges just enough), at most limit
		// streams of them.
		sortRuns(runs)
		excess := streams(runs) - limit
		n, s := 0, 0
		for most := pickRuns(runs, limit, limit); n < most && (n < 2 || s-1 < excess); n++ {
			s += runs[n].streams()
		}
		run, err := m.mergeRuns(ctx, runs[:n])
		if err != nil {
			return nil, fmt.Errorf("merge manager: finish: %w", err)
		}
		runs = append(slices.Clone(runs[n:]), run)
	}
	its := make([]spill.Iterator, 0, streams(runs)+len(mem))
	var closers []func()
	for _, r := range runs {
		rits, c, err := openRun(r)
		if err != nil {
			for _, c := range closers {
				c()
			}
			return nil, fmt.Errorf("merge manager: finish: %w", err)
		}
		its = append(its, rits...)
		closers = append(closers, c)
	}
	for _, s := range mem {
		it := spill.NewSegmentReader(bytes.NewReader(s.data), s.info)
		its = append(its, it)
		closers = append(closers, func() { closeIterator(it) })
	}
	m.mu.Lock()
	m.open = append(m.open, closers...)
	m.stats.FinalRuns, m.stats.FinalStreams, m.stats.FinalInMemory = len(runs), streams(runs), len(mem)
	m.mu.Unlock()
	return spill.Merge(m.cmp, its), nil
}

// Close stops background merges, closes the final stream's files and
// removes every scratch file the manager made. It may be called at any
// time, also without Finish, and more than once.
func (m *MergeManager) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	m.cancel()
	m.cond.Broadcast()
	for m.active > 0 {
		m.cond.Wait()
	}
	open, files := m.open, m.files
	m.open, m.files, m.mem, m.runs = nil, map[string]struct{}{}, memList{}, nil
	m.mu.Unlock()
	for _, c := range open {
		c()
	}
	var errs []error
	for path := range files {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("remove merge run: %w", err))
		}
	}
	return errors.Join(errs...)
}

// memoryToRun writes in-memory segments to one disk run: as they are
// (writeSegments) if raw, else merged.
func (m *MergeManager) memoryToRun(ctx context.Context, segs []memSegment, records int64, raw bool) (diskRun, error) {
	var run diskRun
	var err error
	if raw {
		run, err = m.writeSegments(segs)
		if err == nil {
			m.spilled.Add(records)
		}
	} else {
		its := make([]spill.Iterator, len(segs))
		for i, s := range segs {
			its[i] = spill.NewSegmentReader(bytes.NewReader(s.data), s.info)
		}
		run, err = m.mergeToRun(ctx, its, records)
		for _, it := range its {
			closeIterator(it)
		}
	}
	if err != nil {
		return diskRun{}, fmt.Errorf("write %d in-memory segments to disk: %w", len(segs), err)
	}
	for _, s := range segs {
		run.memBytes += s.info.Length
	}
	return run, nil
}

// Stats returns what the manager has done so far.
func (m *MergeManager) Stats() MergeStats {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.stats
}

// Records returns the records of the segments added so far, less those
// the merges' combiner took away: what the final merge gives (for a range
// fetch, fewer than the spills announced).
func (m *MergeManager) Records() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.records
}
