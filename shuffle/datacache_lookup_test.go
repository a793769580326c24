//go:build linux

package shuffle

import (
	"bytes"
	"container/heap"
	"math/rand/v2"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"gomr/spill"
)

// TestDataCacheLookup: lookup answers a query from a cached file (its
// bytes, a pin, the segment counted as asked for) and leaves every other
// query for segment: a file not cached, a range outside the cached file,
// a query without a directory, another directory, a file changed since it
// was cached.
func TestDataCacheLookup(t *testing.T) {
	tests := []struct {
		name string
		// q's dir is "" (none), "dir" (the cached file's) or "other".
		dir            string
		spill          int
		offset, length int64
		change         bool // the cached file is written to before the lookup
		hit            bool
		want           string
	}{
		{name: "hit", dir: "dir", offset: 10, length: 5, hit: true, want: "aaaaa"},
		{name: "hit, the whole file", dir: "dir", offset: 0, length: 1000, hit: true, want: strings.Repeat("a", 1000)},
		{name: "empty segment at the end", dir: "dir", offset: 1000, length: 0, hit: true, want: ""},
		{name: "range past the end", dir: "dir", offset: 990, length: 20},
		{name: "negative offset", dir: "dir", offset: -1, length: 5},
		{name: "negative length", dir: "dir", offset: 5, length: -1},
		{name: "file not cached", dir: "dir", spill: 1, offset: 0, length: 5},
		{name: "no directory", dir: "", offset: 0, length: 5},
		{name: "another directory", dir: "other", offset: 0, length: 5},
		{name: "file changed", dir: "dir", offset: 0, length: 5, change: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir, other := t.TempDir(), t.TempDir()
			p0 := filepath.Join(dir, spill.DataFileName(0))
			for k, b := range []byte{'a', 'b'} {
				for _, d := range []string{dir, other} {
					if err := os.WriteFile(filepath.Join(d, spill.DataFileName(k)), bytes.Repeat([]byte{b}, 1000), 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
			c := newDataCache(1<<20, 1<<16)
			_, pin, ok, err := c.segment([]byte(p0), 0, 1) // caches spill 0 of dir
			if !ok || err != nil {
				t.Fatalf("caching the file: %t, %v", ok, err)
			}
			c.releaseAll([]*cachedFile{pin})
			if tc.change {
				if err := os.WriteFile(p0, bytes.Repeat([]byte{'c'}, 1000), 0o644); err != nil {
					t.Fatal(err)
				}
				c.sync()
			}
			q := cacheQuery{spill: tc.spill, offset: tc.offset, length: tc.length}
			switch tc.dir {
			case "dir":
				q.dir = dir
			case "other":
				q.dir = other
			}
			qs := []cacheQuery{q}
			c.lookup(qs)
			if got := qs[0]; tc.hit != (got.pin != nil) || string(got.data) != tc.want {
				t.Fatalf("lookup: data %q, pinned %t; want %q, pinned %t", got.data, got.pin != nil, tc.want, tc.hit)
			}
			c.mu.Lock()
			f := c.files[p0]
			var asked int64
			var refs int
			if f != nil {
				asked, refs = f.dem.asked, f.refs
			}
			c.mu.Unlock()
			wantAsked, wantRefs := int64(1), 0
			if tc.hit {
				wantAsked, wantRefs = 1+tc.length, 1
			}
			if f != nil && (asked != wantAsked || refs != wantRefs) {
				t.Errorf("cached file: %d bytes asked for, %d pins; want %d, %d", asked, refs, wantAsked, wantRefs)
			}
			if tc.change && f != nil {
				t.Error("a changed file is still cached")
			}
			c.releaseAll([]*cachedFile{qs[0].pin})
		})
	}
}

// TestEvictHeapSettle: hits only note that a file's priority rose
// (usedLocked); settleLocked then leaves the eviction heap ordered, with
// its elements' indexes right, however many files rose and however often
// each did, and eviction pops them in order.
func TestEvictHeapSettle(t *testing.T) {
	for _, n := range []int{1, 2, 3, 10, 100} {
		for _, hits := range []int{1, n / 2, 5 * n} {
			rng := rand.New(rand.NewPCG(uint64(n), uint64(hits)))
			c := &dataCache{}
			for range n {
				size := 10 + rng.Int64N(50)
				f := &cachedFile{data: make([]byte, size), dem: &fileDemand{}, remaining: size, lastUse: rng.Uint64N(50)}
				heap.Push(&c.evict, f)
			}
			c.tick = 100
			for round := range 5 {
				for range hits {
					f := c.evict[rng.IntN(n)]
					c.tick++
					f.dem.asked += rng.Int64N(8)
					c.usedLocked(f)
				}
				c.settleLocked()
				if len(c.risen) != 0 {
					t.Fatalf("n=%d, %d hits, round %d: %d files still noted as risen", n, hits, round, len(c.risen))
				}
				for i := range c.evict {
					if c.evict[i].index != i || c.evict[i].risen {
						t.Fatalf("n=%d, %d hits, round %d: element %d has index %d, risen %t", n, hits, round, i, c.evict[i].index, c.evict[i].risen)
					}
					if i > 0 && c.evict.Less(i, (i-1)/2) {
						t.Fatalf("n=%d, %d hits, round %d: element %d comes before its parent", n, hits, round, i)
					}
				}
			}
			var prev *cachedFile
			for c.evict.Len() > 0 {
				f := heap.Pop(&c.evict).(*cachedFile)
				if prev != nil && (f.remaining < prev.remaining || f.remaining == prev.remaining && f.lastUse > prev.lastUse) {
					t.Fatalf("n=%d: popped (%d, %d) after (%d, %d)", n, f.remaining, f.lastUse, prev.remaining, prev.lastUse)
				}
				prev = f
			}
		}
	}
}

// TestOpenDataFileNoAtime: reading a spill through openDataFile leaves
// its access time as it was (O_NOATIME), where a plain read would set it.
func TestOpenDataFileNoAtime(t *testing.T) {
	dir := t.TempDir()
	old := time.Now().Add(-time.Hour).Truncate(time.Second)
	atime := func(p string) time.Time {
		t.Helper()
		var st syscall.Stat_t
		if err := syscall.Stat(p, &st); err != nil {
			t.Fatal(err)
		}
		return time.Unix(st.Atim.Unix())
	}
	write := func(name string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, make([]byte, 100), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, old, time.Now()); err != nil { // atime before mtime: relatime updates it
			t.Fatal(err)
		}
		return p
	}
	plain := write("plain")
	if _, err := os.ReadFile(plain); err != nil {
		t.Fatal(err)
	}
	if atime(plain).Equal(old) {
		t.Skip("this file system does not update access times (noatime)")
	}
	p := write("spill")
	f, size, err := openDataFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.ReadAt(make([]byte, size), 0); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if got := atime(p); !got.Equal(old) {
		t.Errorf("access time %v after the read, want %v (unchanged)", got, old)
	}
}

// TestBatchHandlerMixedCache: a request of version 2 whose segments are
// cached or not, inside their files or not, of a known attempt or not,
// small or large, gets each its own frame, the first time (files mapped as
// the request goes) as the second (looked up at once).
func TestBatchHandlerMixedCache(t *testing.T) {
	dir, empty := t.TempDir(), t.TempDir()
	w := &worker{secrets: map[string][]byte{"j": []byte("s")}, dirs: map[string]string{"j/a": dir, "j/b": dir, "j/e": empty}}
	if err := os.WriteFile(filepath.Join(empty, spill.DataFileName(0)), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	small := writeSpillFiles(t, dir, 0, [][]kv{{{"a", "1"}}, {{"b", strings.Repeat("y", 200)}}})
	large := writeSpillFiles(t, dir, 1, [][]kv{{{"c", "3"}}, {{"d", strings.Repeat("z", 40<<10)}}})
	h := NewHandler(w, w, nil).(*handler)
	items := []BatchItem{
		{Attempt: "a", Spill: 0, Offset: small[1].Offset, Length: small[1].Length},
		{Attempt: "a", Spill: 0, Offset: small[1].Offset, Length: small[1].Length + 1}, // past the end
		{Attempt: "x", Spill: 0, Offset: 0, Length: 5},                                 // unknown attempt
		{Attempt: "a", Spill: 1, Offset: large[1].Offset, Length: large[1].Length},     // large: from the file
		{Attempt: "a", Spill: 1, Offset: large[0].Offset, Length: large[0].Length},     // a small segment of it
		{Attempt: "a", Spill: 2, Offset: 0, Length: 5},                                 // no such spill
		{Attempt: "b", Spill: 0, Offset: small[0].Offset, Length: small[0].Length},     // another attempt, same file
		{Attempt: "e", Spill: 0, Offset: 0, Length: 0},                                 // an empty spill
	}
	data0, _ := os.ReadFile(filepath.Join(dir, spill.DataFileName(0)))
	data1, _ := os.ReadFile(filepath.Join(dir, spill.DataFileName(1)))
	want := []struct {
		status byte
		data   []byte
	}{
		{frameOK, data0[small[1].Offset : small[1].Offset+small[1].Length]},
		{status: frameError},
		{status: frameNotFound},
		{frameOK, data1[large[1].Offset : large[1].Offset+large[1].Length]},
		{frameOK, data1[large[0].Offset : large[0].Offset+large[0].Length]},
		{status: frameNotFound},
		{frameOK, data0[small[0].Offset : small[0].Offset+small[0].Length]},
		{frameOK, []byte{}},
	}
	for round := range 2 {
		body, err := EncodeBatchRequest(BatchRequest{Version: BatchVersion, Job: "j", Reduce: 1, At: time.Now().UnixMilli(), Items: items})
		if err != nil {
			t.Fatal(err)
		}
		req := httptest.NewRequest("POST", BatchPath, bytes.NewReader(body))
		req.Header.Set(HashHeader, BatchRequestHash([]byte("s"), body))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != 200 {
			t.Fatalf("round %d: status %d: %q", round, rec.Code, rec.Body.Bytes())
		}
		if cl := rec.Header().Get("Content-Length"); cl != itoa(rec.Body.Len()) {
			t.Errorf("round %d: Content-Length %s, body of %d bytes", round, cl, rec.Body.Len())
		}
		fr := newFrameReader(rec.Body, BatchVersion)
		if err := fr.readMagic(); err != nil {
			t.Fatal(err)
		}
		for i, it := range items {
			fm, err := fr.next(it.Length)
			if err != nil {
				t.Fatalf("round %d, frame %d: %v", round, i, err)
			}
			if fm.status != want[i].status {
				t.Errorf("round %d, frame %d: status %d (%s), want %d", round, i, fm.status, fm.msg, want[i].status)
				continue
			}
			if fm.status == frameOK {
				got := make([]byte, fm.seg.Length)
				if err := fr.data(got); err != nil {
					t.Fatalf("round %d, frame %d: %v", round, i, err)
				}
				if !bytes.Equal(got, want[i].data) {
					t.Errorf("round %d, frame %d: %d bytes differ from the file's", round, i, len(got))
				}
			}
		}
		fr.release()
	}
	h.data.mu.Lock()
	cached, pinned := len(h.data.files), 0
	for _, f := range h.data.files {
		pinned += f.refs
	}
	h.data.mu.Unlock()
	if cached != 3 || pinned != 0 {
		t.Errorf("%d files cached, %d pins held after the requests; want 3, 0", cached, pinned)
	}
}

// TestDataCacheSpillIndex: a directory's cached spill data files are
// indexed by spill for lookup, up to maxIndexedSpills (a later spill, or
// a file of another name, is cached and served by segment but not found
// by lookup), and a file leaves the index with the cache.
func TestDataCacheSpillIndex(t *testing.T) {
	dir := t.TempDir()
	names := []string{spill.DataFileName(0), spill.DataFileName(3), spill.DataFileName(maxIndexedSpills), "other.out"}
	c := newDataCache(1<<20, 1<<16)
	for _, n := range names { // all written before any is cached (a write in the directory meanwhile is an event)
		if err := os.WriteFile(filepath.Join(dir, n), []byte("0123456789"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range names {
		_, pin, ok, err := c.segment([]byte(filepath.Join(dir, n)), 0, 1)
		if !ok || err != nil {
			t.Fatalf("%s: %t, %v", n, ok, err)
		}
		c.releaseAll([]*cachedFile{pin})
	}
	found := func() []bool {
		qs := []cacheQuery{{dir: dir, spill: 0, length: 2}, {dir: dir, spill: 3, length: 2}, {dir: dir, spill: maxIndexedSpills, length: 2}, {dir: dir, spill: 1, length: 2}}
		c.lookup(qs)
		var got []bool
		for _, q := range qs {
			got = append(got, q.pin != nil)
			if q.pin != nil && string(q.data) != "01" {
				t.Errorf("spill %d: %q", q.spill, q.data)
			}
			c.releaseAll([]*cachedFile{q.pin})
		}
		return got
	}
	if got, want := found(), []bool{true, true, false, false}; !slices.Equal(got, want) {
		t.Errorf("found %v, want %v", got, want)
	}
	if err := os.Remove(filepath.Join(dir, spill.DataFileName(0))); err != nil {
		t.Fatal(err)
	}
	c.sync()
	if got, want := found(), []bool{false, true, false, false}; !slices.Equal(got, want) {
		t.Errorf("after spill 0 was deleted: found %v, want %v", got, want)
	}
	c.mu.Lock()
	n := len(c.files)
	c.mu.Unlock()
	if n != 3 {
		t.Errorf("%d files cached, want 3", n)
	}
}

// TestDataCacheCachesBesideWrites: a file is cached while another file of
// its directory is being written (a map attempt writing its next spill
// beside the spills reduces fetch), and a change to the file itself still
// drops it.
func TestDataCacheCachesBesideWrites(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, spill.DataFileName(0))
	if err := os.WriteFile(p, []byte("0123456789"), 0o644); err != nil {
		t.Fatal(err)
	}
	next, err := os.Create(filepath.Join(dir, spill.DataFileName(1)+".tmp"))
	if err != nil {
		t.Fatal(err)
	}
	defer next.Close()
	c := newDataCache(1<<20, 1<<16)
	// The first miss adds the directory's watch; the writes then make
	// events all along.
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
				if _, err := next.Write([]byte("x")); err != nil {
					t.Error(err)
					return
				}
			}
		}
	}()
	defer func() { close(stop); <-done }()
	cached := false
	for i := 0; i < 20 && !cached; i++ {
		_, pin, ok, err := c.segment([]byte(p), 0, 4)
		if !ok || err != nil {
			t.Fatalf("segment: %t, %v", ok, err)
		}
		c.releaseAll([]*cachedFile{pin})
		c.mu.Lock()
		cached = c.files[p] != nil
		c.mu.Unlock()
	}
	if !cached {
		t.Fatal("the file was never cached while another file of its directory was written")
	}

	// A change to the file itself is an event naming it: it is dropped.
	if err := os.WriteFile(p, []byte("abcdefghij"), 0o644); err != nil {
		t.Fatal(err)
	}
	c.sync()
	c.mu.Lock()
	cached = c.files[p] != nil
	c.mu.Unlock()
	if cached {
		t.Error("a file written since it was cached is still cached")
	}
}

// TestPrefetchBytes: prefetchBytes reads and changes nothing and never
// faults, whatever the range: empty, unaligned, across lines, up to the
// end of a mapping whose next page is not mapped, or past the end of a
// file that shrank under its mapping.
func TestPrefetchBytes(t *testing.T) {
	page := os.Getpagesize()
	m, err := syscall.Mmap(-1, 0, 2*page, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	munmap := func(b []byte) error { // syscall.Munmap takes whole mappings only
		_, _, e := syscall.Syscall(syscall.SYS_MUNMAP, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), 0)
		if e != 0 {
			return e
		}
		return nil
	}
	defer munmap(m[:page])
	if err := munmap(m[page:]); err != nil { // the page after m[:page] is not mapped
		t.Fatal(err)
	}
	m = m[:page:page]
	for i := range page {
		m[i] = byte(i)
	}
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, make([]byte, 4*page), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fm, err := syscall.Mmap(int(f.Fd()), 0, 4*page, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Munmap(fm)
	if err := os.Truncate(p, int64(page)); err != nil { // fm's pages past the first are gone
		t.Fatal(err)
	}
	tests := []struct {
		name string
		b    []byte
	}{
		{"nil", nil},
		{"empty", m[5:5]},
		{"one byte", m[7:8]},
		{"unaligned, across lines", m[63:200]},
		{"to the end of the mapping", m[page-825 : page]},
		{"the whole page", m[:page]},
		{"past the end of a shrunk file", fm[page/2 : 3*page]},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			prefetchBytes(tc.b)
		})
	}
	for i := range page {
		if m[i] != byte(i) {
			t.Fatalf("byte %d changed", i)
		}
	}
}
