//go:build linux

package shuffle

import (
	"container/heap"
	"encoding/binary"
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"

	"gomr/spill"
)

// dataCache keeps small spill data files mapped into memory (mmap, read
// only, shared: the kernel's page cache itself, where a spill the map has
// just written already is), so that the reduces of a job, which each ask
// for their partition of every spill (and in a per-spill shuffle do so
// soon after the spill is announced), cost the server no system call per
// segment: a small segment is a copy from the mapping into the reply. A
// miss maps the whole file (open, fstat, mmap, close: about a third of
// what reading a 41 KB file into a buffer of its own cost, and no copy, no
// allocation for the garbage collector); a file of at most populateMaxBytes
// is mapped with MAP_POPULATE (its pages mapped ahead, in the one system
// call), a larger one without (each page faults in when a segment on it is
// first copied, with the kernel's fault-around mapping its neighbours: a
// reduce touches only its own partition of a large spill). The bound
// is on the bytes mapped, which are page cache, not the server's heap;
// the mapped files are also bounded in number (maxMappedFiles), well
// under the kernel's limit of mappings a process (vm.max_map_count).
//
// A mapping is pinned by each request that plans to serve from it (the
// pin segment returns, given back with releaseAll once the reply is
// written) and is unmapped only when evicted or dropped and no longer
// pinned, so that a request never reads a mapping that has gone. A file
// truncated during a request, after the request's check, faults on the
// pages past its new end: the request's goroutine turns the fault into an
// error (copyMapped, with debug.SetPanicOnFault) and breaks the
// connection, as a data file shrinking under a read does.
//
// A cached file is never served once it has changed or gone: the cache
// watches the directory of every file it holds with inotify (deletion,
// rename, writes, truncation, attribute changes, the directory's own
// deletion) and drains the events, without blocking, at the start of each
// request (sync) and before caching what it read. So a spill deleted or
// damaged before a request starts (the TaskTracker purging a job, a test
// injecting a fault behind its back) is seen by that request, exactly as
// with a fresh open; a change during a request races with it, as it does
// with a file read. If inotify is not available (no instance or watch
// left), nothing is cached. Writes through a hard link in another
// directory or a shared mapping are not seen; spill files get neither.
//
// Once their bytes pass the limit, entries are evicted by the demand still
// expected for them: first the file with the fewest bytes not yet asked
// for (its size less the lengths of the segments asked for so far, which
// the cache counts per path across evictions: demand), the most recently
// used among equals; a directory's watch is removed with its last entry.
// (Until 2026-11-26 the demand was the partitions not yet asked for,
// from the spill's index; a batched request of version 2 names its
// segments' byte ranges and the server reads no index.) Reduces ask for the
// spills in the same order (announcement order), several at a time and
// more reduces than slots: once the spills are larger than the cache, LRU
// evicts each file just before the next reduce comes for it and reads
// every file again for each wave of reduces (make bench-shuffle: about 7
// times for 50 reduces, 8 at a time). By demand, the files the reduces
// have passed go first, and among those the one passed last, which the
// reduces behind will want last; the rest stay. In a simulation of that
// pattern (1,000 files, a cache of 82% of them, 50 reduces 8 at a time,
// each reduce's speed varying by up to 5%, 20% and 50%) LRU read each
// file 7.0, 6.8 and 11.8 times, this 2.1, 4.1 and 7.1 times (LRU among
// equals: 8.6 times), and evicting the file whose next use is furthest
// (which needs the reduces' positions) 2.1, 2.5 and 4.7 times. In make
// bench-shuffle itself, whose reduces drift apart, it read about as many
// files as LRU (docs/scaling.md); in a running job it also evicts a spill
// every reduce has fetched before one they have not come to yet.
type dataCache struct {
	mu      sync.Mutex
	limit   int64
	maxFile int64
	// maxFiles bounds the files mapped at once (maxMappedFiles).
	maxFiles int
	// populateMax is the largest file mapped with its pages populated
	// ahead (populateMaxBytes).
	populateMax int64
	bytes       int64
	evict       evictHeap // the next victim first
	tick        uint64    // use clock, for lastUse
	files       map[string]*cachedFile
	loading     map[string]chan struct{} // files being read, closed when done
	reads       atomic.Int64             // files read (misses), for tests
	dirs        map[string]*watchedDir
	byWD        map[int32]*watchedDir
	ifd         int // inotify descriptor; -1: not opened yet or unavailable
	failed      bool
	evbuf       []byte
	unmapq      [][]byte // mappings to unmap once mu is released (unlock)
	// risen are the cached files whose eviction priority rose (a request
	// for them) since their place in evict was last settled: a hit only
	// notes it, and settleLocked moves them up before evict is used
	// (an eviction, a file joining or leaving it), once however many hits
	// they had. A cache that evicts nothing then never reorders evict.
	risen []*cachedFile
	// demand is what the cache knows of each data file it was asked
	// about, cached or not (at most maxDemandEntries, then it starts
	// again empty).
	demand map[string]*fileDemand
}

// fileDemand is what the cache remembers of a data file across its
// evictions: the bytes of its segments asked for so far (its eviction
// priority is its size less them), and whether it is too large to cache,
// so that a small segment of a large spill costs no inotify watch and no
// second open after the first (spill files are written once, under their
// attempt's directory, and never grow).
type fileDemand struct {
	asked    int64
	tooLarge bool
}

// maxDemandEntries bounds dataCache.demand: some 64 bytes each.
const maxDemandEntries = 1 << 16

// demandLocked returns path's fileDemand, added if new.
func (c *dataCache) demandLocked(path string) *fileDemand {
	if d := c.demand[path]; d != nil {
		return d
	}
	if c.demand == nil || len(c.demand) >= maxDemandEntries {
		c.demand = map[string]*fileDemand{}
	}
	d := &fileDemand{}
	c.demand[path] = d
	return d
}

type cachedFile struct {
	path  string
	name  string // base name in dir
	spill int    // the spill whose data file it is, in dir.spills; -1: none
	dir   *watchedDir
	data  []byte // the file's mapping (empty for an empty file)
	// refs is the requests that pinned the file; gone is set once the file
	// has left the cache (or never joined it): it is unmapped when both
	// say it is unused.
	refs  int
	gone  bool
	unmap runtime.Cleanup // unmaps data if the file is collected first
	// dem is the file's demand (dataCache.demand's entry when it was
	// cached); remaining is the bytes of the file not asked for yet (its
	// size less dem.asked), as of the last request for it; lastUse that
	// request's tick.
	dem       *fileDemand
	remaining int64
	lastUse   uint64
	index     int  // in dataCache.evict; -1 while not in it
	risen     bool // in dataCache.risen: its priority rose since its place in evict was settled
}

// evictHeap orders cached files by eviction: fewest remaining bytes first,
// then most recently used. Besides heap.Interface (container/heap's Push
// and Remove, once a miss or an eviction), it has fix, the typed heap.Fix
// (without the interface's indirect calls), and up, which is all a hit's
// change needs: a request for a file lowers its remaining bytes and makes
// it the most recently used, so it can only move towards the root (several
// such elements: settleLocked).
type evictHeap []*cachedFile

// up moves element j towards the root while it comes before its parent.
func (h evictHeap) up(j int) {
	for j > 0 {
		i := (j - 1) / 2 // parent
		if !h.Less(j, i) {
			break
		}
		h.Swap(i, j)
		j = i
	}
}

func (h evictHeap) Len() int { return len(h) }
func (h evictHeap) Less(i, j int) bool {
	a, b := h[i], h[j]
	return a.remaining < b.remaining || a.remaining == b.remaining && a.lastUse > b.lastUse
}
func (h evictHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *evictHeap) Push(x any) {
	f := x.(*cachedFile)
	f.index = len(*h)
	*h = append(*h, f)
}
func (h *evictHeap) Pop() any {
	old := *h
	f := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	f.index = -1
	return f
}

type watchedDir struct {
	path  string
	wd    int32
	files map[string]*cachedFile // by base name
	// spills are the files named as spill data files (spill.DataFileName),
	// by spill, of the first maxIndexedSpills spills: lookup finds a
	// request's files here without building or comparing their names
	// (the names of an attempt's spills differ only in a middle digit,
	// which made each lookup in files compare them all).
	spills []*cachedFile
	// gen counts the events about the directory itself (no name: its
	// deletion, its move, its attributes); loading, the events naming
	// each file being mapped (miss): a file is cached only if neither
	// counted an event while it was mapped. Events naming other files do
	// not stop it (a map attempt writes its next spill in the directory of
	// the spills being fetched).
	gen     uint64
	loading map[string]*nameEvents
}

// nameEvents counts the events naming a file of a directory while misses
// map it (loaders of them).
type nameEvents struct {
	events  uint64
	loaders int
}

// loadingLocked registers a miss mapping the file name of d: the events
// that name it from now on are counted in the nameEvents returned, which
// the miss gives back with doneLoadingLocked.
func (d *watchedDir) loadingLocked(name string) *nameEvents {
	ne := d.loading[name]
	if ne == nil {
		if d.loading == nil {
			d.loading = map[string]*nameEvents{}
		}
		ne = &nameEvents{}
		d.loading[name] = ne
	}
	ne.loaders++
	return ne
}

// doneLoadingLocked gives back what loadingLocked returned.
func (d *watchedDir) doneLoadingLocked(name string, ne *nameEvents) {
	if ne.loaders--; ne.loaders == 0 && d.loading[name] == ne {
		delete(d.loading, name)
	}
}

// maxIndexedSpills bounds watchedDir.spills (the spills of a map attempt,
// a handful mostly); files of later spills are looked up by name.
const maxIndexedSpills = 1 << 12

// addLocked adds a cached file to its directory.
func (d *watchedDir) addLocked(f *cachedFile) {
	d.files[f.name] = f
	f.spill = -1
	if k, ok := spill.ParseDataFileName(f.name); ok && k < maxIndexedSpills {
		if k >= len(d.spills) {
			d.spills = append(d.spills, make([]*cachedFile, k+1-len(d.spills))...)
		}
		d.spills[k], f.spill = f, k
	}
}

// removeLocked removes a cached file from its directory.
func (d *watchedDir) removeLocked(f *cachedFile) {
	delete(d.files, f.name)
	if f.spill >= 0 && f.spill < len(d.spills) && d.spills[f.spill] == f {
		d.spills[f.spill] = nil
	}
}

// watchMask is what a directory's watch reports: anything that may change
// or remove a file in it, or the directory itself.
const watchMask = syscall.IN_MODIFY | syscall.IN_ATTRIB | syscall.IN_CLOSE_WRITE | syscall.IN_MOVED_FROM |
	syscall.IN_MOVED_TO | syscall.IN_CREATE | syscall.IN_DELETE | syscall.IN_DELETE_SELF | syscall.IN_MOVE_SELF |
	syscall.IN_ONLYDIR

// populateMaxBytes is the largest data file the cache maps with
// MAP_POPULATE. Populating a small file ahead costs less than faulting its
// pages in one by one, since most of its partitions will be asked for; a
// large file's pages are faulted in as they are used (without it, mapping
// a file of 16 MiB to serve one reduce's 4 KB would read every page).
const populateMaxBytes = 128 << 10

// newDataCache returns a cache of at most limit bytes holding files of at
// most maxFile bytes; limit 0 disables it (nil).
func newDataCache(limit, maxFile int64) *dataCache {
	if limit <= 0 {
		return nil
	}
	c := &dataCache{limit: limit, maxFile: min(maxFile, limit), maxFiles: maxMappedFiles, populateMax: populateMaxBytes, files: map[string]*cachedFile{}, loading: map[string]chan struct{}{},
		dirs: map[string]*watchedDir{}, byWD: map[int32]*watchedDir{}, ifd: -1}
	return c
}

// start opens the inotify instance on first use (so that a handler that
// serves no batch holds none) and closes it when c is collected. Called
// with c.mu held; false if inotify is unavailable.
func (c *dataCache) startLocked() bool {
	if c.ifd >= 0 {
		return true
	}
	if c.failed {
		return false
	}
	fd, err := syscall.InotifyInit1(syscall.IN_NONBLOCK | syscall.IN_CLOEXEC)
	if err != nil {
		c.failed = true
		return false
	}
	c.ifd = fd
	c.evbuf = make([]byte, 64<<10)
	runtime.AddCleanup(c, func(fd int) { syscall.Close(fd) }, fd)
	return true
}

// sync applies the pending inotify events: every file they name, and
// every file of a directory that went away, is dropped.
func (c *dataCache) sync() {
	c.mu.Lock()
	defer c.unlock()
	c.syncLocked()
}

func (c *dataCache) syncLocked() {
	if c.ifd < 0 {
		return
	}
	for {
		n, err := syscall.Read(c.ifd, c.evbuf)
		if err == syscall.EINTR {
			continue
		}
		if err != nil || n <= 0 {
			// EAGAIN: nothing pending. Any other error: stop trusting
			// the cache.
			if err != nil && err != syscall.EAGAIN {
				c.dropAllLocked()
			}
			return
		}
		c.applyLocked(c.evbuf[:n])
	}
}

// applyLocked applies a buffer of inotify events.
func (c *dataCache) applyLocked(b []byte) {
	for len(b) >= syscall.SizeofInotifyEvent {
		wd := int32(binary.NativeEndian.Uint32(b[0:4]))
		mask := binary.NativeEndian.Uint32(b[4:8])
		nameLen := int(binary.NativeEndian.Uint32(b[12:16]))
		end := syscall.SizeofInotifyEvent + nameLen
		if end > len(b) {
			c.dropAllLocked()
			return
		}
		name := b[syscall.SizeofInotifyEvent:end]
		for len(name) > 0 && name[len(name)-1] == 0 {
			name = name[:len(name)-1]
		}
		b = b[end:]
		if mask&syscall.IN_Q_OVERFLOW != 0 {
			c.dropAllLocked()
			continue
		}
		d := c.byWD[wd]
		if d == nil {
			continue
		}
		if len(name) > 0 {
			if ne := d.loading[string(name)]; ne != nil {
				ne.events++
			}
			if f := d.files[string(name)]; f != nil {
				c.removeLocked(f)
			}
		} else {
			d.gen++
		}
		if mask&(syscall.IN_DELETE_SELF|syscall.IN_MOVE_SELF|syscall.IN_IGNORED|syscall.IN_UNMOUNT) != 0 {
			for _, f := range d.files {
				c.removeLocked(f)
			}
			if mask&syscall.IN_IGNORED != 0 {
				c.forgetDirLocked(d, false)
			}
		}
	}
}

// segment returns length bytes at offset of the data file at path, from
// the cache or mapped into it, and the pin that keeps them valid: the
// caller gives it back with releaseAll once it no longer reads data.
// The request counts length bytes of the file as asked for (its eviction
// priority: demand). ok is false (and pin nil) when the file is not cached
// and too large to be, or cannot be mapped (the caller reads it itself).
// A missing file is an error wrapping fs.ErrNotExist; one shorter than
// offset+length one wrapping io.ErrUnexpectedEOF.
//
// path is a buffer the caller reuses: a hit, or a file known to be too
// large, costs no allocation.
func (c *dataCache) segment(path []byte, offset, length int64) (data []byte, pin *cachedFile, ok bool, err error) {
	c.mu.Lock()
	if f := c.files[string(path)]; f != nil {
		c.tick++
		f.dem.asked += max(length, 0)
		return c.hitLocked(f, offset, length)
	}
	if dem := c.demand[string(path)]; dem != nil && dem.tooLarge {
		c.unlock()
		return nil, nil, false, nil
	}
	c.unlock()
	return c.miss(string(path), offset, length)
}

// miss is segment for a file that was not cached when it looked.
func (c *dataCache) miss(path string, offset, length int64) (data []byte, pin *cachedFile, ok bool, err error) {
	c.mu.Lock()
	c.tick++
	dem := c.demandLocked(path)
	dem.asked += max(length, 0)
	if f := c.files[path]; f != nil {
		return c.hitLocked(f, offset, length)
	}
	if dem.tooLarge {
		c.unlock()
		return nil, nil, false, nil
	}
	if ch := c.loading[path]; ch != nil {
		// Another request is mapping the file (the reduces of a wave ask
		// for it at about the same time): wait for it rather than map it
		// too, then take it from the cache, or map it if it was not cached
		// after all.
		c.unlock()
		<-ch
		c.mu.Lock()
		if f := c.files[path]; f != nil {
			c.tick++
			return c.hitLocked(f, offset, length)
		}
	}
	if !c.startLocked() {
		c.unlock()
		return nil, nil, false, nil
	}
	dir, name := filepath.Split(path)
	d, err := c.watchLocked(filepath.Clean(dir))
	if err != nil {
		c.unlock()
		return nil, nil, false, nil // no watch: do not cache
	}
	gen, ne := d.gen, d.loadingLocked(name)
	events := ne.events
	defer func() {
		c.mu.Lock()
		d.doneLoadingLocked(name, ne)
		c.unlock()
	}()
	if c.loading[path] == nil {
		ch := make(chan struct{})
		c.loading[path] = ch
		defer func() {
			c.mu.Lock()
			delete(c.loading, path)
			c.unlock()
			close(ch)
		}()
	}
	c.unlock()

	// Map the file with the watch in place: a change from now on is an
	// event, and gen and ne tell whether one came before it is cached.
	unwatch := func() {
		c.mu.Lock()
		c.unwatchIfEmptyLocked(d)
		c.unlock()
	}
	f, size, err := openDataFile(path)
	if err != nil {
		unwatch()
		return nil, nil, false, err
	}
	if size > c.maxFile {
		f.Close()
		c.mu.Lock()
		c.demandLocked(path).tooLarge = true
		c.unwatchIfEmptyLocked(d)
		c.unlock()
		return nil, nil, false, nil
	}
	c.reads.Add(1)
	var m []byte
	if size > 0 {
		flags := syscall.MAP_SHARED
		if size <= c.populateMax {
			flags |= syscall.MAP_POPULATE
		}
		m, err = syscall.Mmap(f.fd, 0, int(size), syscall.PROT_READ, flags)
	}
	f.Close()
	if err != nil {
		// Out of mappings or address space: serve from the file.
		unwatch()
		return nil, nil, false, nil
	}
	cf := &cachedFile{path: path, name: name, dir: d, data: m[:size:size], index: -1, refs: 1}
	if len(m) > 0 {
		cf.unmap = runtime.AddCleanup(cf, func(m []byte) { _ = syscall.Munmap(m) }, m)
	}

	c.mu.Lock()
	c.syncLocked()
	if c.byWD[d.wd] == d && d.gen == gen && ne.events == events && c.files[path] == nil {
		c.tick++
		cf.lastUse = c.tick
		cf.dem = c.demandLocked(path)
		cf.remaining = max(size-cf.dem.asked, 0)
		c.files[path] = cf
		d.addLocked(cf) // d keeps its watch while others are evicted
		c.bytes += int64(len(cf.data))
		// Make room before the new file joins the heap, so that it is not
		// its own victim.
		c.settleLocked()
		for (c.bytes > c.limit || len(c.files) > c.maxFiles) && c.evict.Len() > 0 {
			c.removeLocked(c.evict[0])
		}
		heap.Push(&c.evict, cf)
	} else {
		// Changed while being mapped, or its directory went: this request
		// serves what it mapped (as a read racing with the change would)
		// and nothing is cached.
		cf.gone = true
		if c.byWD[d.wd] == d {
			c.unwatchIfEmptyLocked(d)
		}
	}
	c.unlock()
	data, ok, err = slice(path, cf.data, offset, length)
	if err != nil {
		c.releaseAll([]*cachedFile{cf})
		return nil, nil, ok, err
	}
	return data, cf, ok, nil
}

// hitLocked serves a segment of a cached file and pins it; it unlocks c.mu.
func (c *dataCache) hitLocked(f *cachedFile, offset, length int64) ([]byte, *cachedFile, bool, error) {
	c.usedLocked(f)
	data, ok, err := slice(f.path, f.data, offset, length)
	if err != nil {
		c.unlock()
		return nil, nil, ok, err
	}
	f.refs++
	c.unlock()
	return data, f, ok, nil
}

// usedLocked updates a cached file's eviction priority after a request
// for it (c.tick is that request's; its demand counts the segment): it
// can only rise, and the file's place in evict is settled when evict is
// next used (settleLocked).
func (c *dataCache) usedLocked(f *cachedFile) {
	f.remaining, f.lastUse = max(int64(len(f.data))-f.dem.asked, 0), c.tick
	if !f.risen && f.index >= 0 {
		f.risen = true
		c.risen = append(c.risen, f)
	}
}

// settleLocked moves the files whose priority rose since the last call to
// their places in evict, which is a heap again after it. They move up
// one after the other from the one nearest the root: a file moving up
// displaces only files above it, which are settled already, and the
// others stay where they were until their turn, as the argument of a
// single sift-up needs (moved up in another order, a file can come to sit
// over one that rose more than it, which the test's random hits found).
func (c *dataCache) settleLocked() {
	if len(c.risen) > 1 {
		slices.SortFunc(c.risen, func(a, b *cachedFile) int { return a.index - b.index })
	}
	for i, f := range c.risen {
		if f.risen && f.index >= 0 {
			c.evict.up(f.index)
		}
		f.risen = false
		c.risen[i] = nil
	}
	c.risen = c.risen[:0]
}

// lookup answers the queries it can from the files cached now, under one
// hold of c.mu: for a segment of a cached file (its directory, clean, and
// spill), the query gets its bytes and the file's pin (given back with
// releaseAll), and the segment counts as asked for, as with segment. The
// others are left as they are (pin nil), for segment to answer: a file
// not cached (or of a spill past maxIndexedSpills), or a segment outside
// the cached file (segment's error).
func (c *dataCache) lookup(qs []cacheQuery) {
	c.mu.Lock()
	defer c.unlock()
	var d *watchedDir
	for i := range qs {
		q := &qs[i]
		if q.dir == "" {
			continue
		}
		if i == 0 || q.dir != qs[i-1].dir {
			d = c.dirs[q.dir]
		}
		if d == nil || q.spill < 0 || q.spill >= len(d.spills) {
			continue
		}
		f := d.spills[q.spill]
		if f == nil || q.offset < 0 || q.length < 0 || q.offset+q.length > int64(len(f.data)) {
			continue
		}
		c.tick++
		f.dem.asked += q.length
		c.usedLocked(f)
		f.refs++
		q.data, q.pin = f.data[q.offset:q.offset+q.length:q.offset+q.length], f
	}
}

// releaseAll gives back pins segment returned (nil ones are skipped):
// a file that has left the cache is unmapped with its last pin.
func (c *dataCache) releaseAll(pins []*cachedFile) {
	if len(pins) == 0 {
		return
	}
	c.mu.Lock()
	defer c.unlock()
	for _, f := range pins {
		if f == nil {
			continue
		}
		f.refs--
		if f.refs == 0 && f.gone {
			c.unmapLocked(f)
		}
	}
}

// unmapLocked queues the file's mapping (no pin left, out of the cache) to
// be unmapped once c.mu is released (unlock): munmap has every CPU running
// the process drop the pages from its TLB, which should not hold up the
// other requests' lookups.
func (c *dataCache) unmapLocked(f *cachedFile) {
	if len(f.data) == 0 {
		return
	}
	f.unmap.Stop()
	c.unmapq = append(c.unmapq, f.data[:cap(f.data)])
	f.data = nil
}

// unlock releases c.mu and then unmaps what unmapLocked queued.
func (c *dataCache) unlock() {
	q := c.unmapq
	c.unmapq = nil
	c.mu.Unlock()
	for _, m := range q {
		_ = syscall.Munmap(m)
	}
}

// maxMappedFiles bounds the files the cache keeps mapped, each a mapping
// of its own: far under Linux's default vm.max_map_count (65,530), which
// the Go runtime and the rest of the TaskTracker share.
const maxMappedFiles = 8192

// copyMapped writes data, bytes of a mapped file, to w. A fault reading
// them (the file was truncated after the request checked it: the pages
// past its end are gone) is returned as an error, not a crash of the
// server.
func copyMapped(w io.Writer, data []byte) (n int, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			re, ok := r.(runtime.Error)
			if !ok {
				panic(r)
			}
			if _, fault := re.(interface{ Addr() uintptr }); !fault {
				panic(r)
			}
			err = fmt.Errorf("read mapped spill data: %w (the file shrank): %w", re, io.ErrUnexpectedEOF)
		}
	}()
	return w.Write(data)
}

func slice(path string, data []byte, offset, length int64) ([]byte, bool, error) {
	if offset < 0 || length < 0 || offset+length > int64(len(data)) {
		return nil, true, fmt.Errorf("%s: %d bytes, segment at %d of %d bytes: %w", path, len(data), offset, length, io.ErrUnexpectedEOF)
	}
	return data[offset : offset+length : offset+length], true, nil
}

// watchLocked returns the watched directory dir, adding its watch if
// needed.
func (c *dataCache) watchLocked(dir string) (*watchedDir, error) {
	if d := c.dirs[dir]; d != nil {
		return d, nil
	}
	wd, err := syscall.InotifyAddWatch(c.ifd, dir, watchMask)
	if err != nil {
		return nil, err
	}
	if d := c.byWD[int32(wd)]; d != nil {
		// The same directory under another name (a link): keep one.
		return d, nil
	}
	d := &watchedDir{path: dir, wd: int32(wd), files: map[string]*cachedFile{}}
	c.dirs[dir] = d
	c.byWD[d.wd] = d
	return d, nil
}

// removeLocked drops a cached file (and its directory's watch with its
// last file).
func (c *dataCache) removeLocked(f *cachedFile) {
	if c.files[f.path] != f {
		return
	}
	delete(c.files, f.path)
	f.dir.removeLocked(f)
	if f.index >= 0 {
		c.settleLocked()
		heap.Remove(&c.evict, f.index)
	}
	c.bytes -= int64(len(f.data))
	f.gone = true
	if f.refs == 0 {
		c.unmapLocked(f)
	}
	c.unwatchIfEmptyLocked(f.dir)
}

func (c *dataCache) unwatchIfEmptyLocked(d *watchedDir) {
	if len(d.files) == 0 && c.byWD[d.wd] == d {
		c.forgetDirLocked(d, true)
	}
}

// forgetDirLocked forgets a directory (its files are gone already),
// removing its watch if rm (not when the kernel removed it).
func (c *dataCache) forgetDirLocked(d *watchedDir, rm bool) {
	for _, f := range d.files {
		c.removeLocked(f)
	}
	if c.byWD[d.wd] == d {
		delete(c.byWD, d.wd)
	}
	if c.dirs[d.path] == d {
		delete(c.dirs, d.path)
	}
	if rm {
		_, _ = syscall.InotifyRmWatch(c.ifd, uint32(d.wd))
	}
}

// dropAllLocked empties the cache (an event queue overflow: any file may
// have changed).
func (c *dataCache) dropAllLocked() {
	for _, d := range c.dirs {
		c.forgetDirLocked(d, true)
	}
}
