//go:build linux

package shuffle

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"gomr/spill"
)

// cacheFixture is attempt "a" of job "j" (secret "s") with one spill of
// three small partitions, and a handler with a data cache.
type cacheFixture struct {
	w    *worker
	dir  string
	segs []spill.SegmentInfo
	h    *handler
}

func newCacheFixture(t *testing.T) *cacheFixture {
	t.Helper()
	f := &cacheFixture{dir: t.TempDir()}
	f.w = &worker{secrets: map[string][]byte{"j": []byte("s")}, dirs: map[string]string{"j/a": f.dir}}
	f.segs = writeSpillFiles(t, f.dir, 0, [][]kv{
		{{"a", "1"}, {"b", "2"}}, {{"c", strings.Repeat("x", 300)}}, {{"d", "4"}},
	})
	f.h = NewHandler(f.w, f.w, nil).(*handler)
	return f
}

// fetch asks for partition reduce of spill 0 and returns its frame and
// bytes.
func (f *cacheFixture) fetch(t *testing.T, reduce int) (frame, []byte) {
	t.Helper()
	body, err := EncodeBatchRequest(BatchRequest{Version: batchVersionIndexed, Job: "j", Reduce: reduce, At: time.Now().UnixMilli(), Items: []BatchItem{{Attempt: "a", Spill: 0}}})
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest("POST", BatchPath, bytes.NewReader(body))
	req.Header.Set(HashHeader, BatchRequestHash([]byte("s"), body))
	rec := httptest.NewRecorder()
	f.h.ServeHTTP(rec, req)
	if rec.Code != 200 {
		t.Fatalf("status %d: %q", rec.Code, rec.Body.Bytes())
	}
	if cl := rec.Header().Get("Content-Length"); cl != "" && cl != itoa(rec.Body.Len()) {
		t.Errorf("Content-Length %s, body of %d bytes", cl, rec.Body.Len())
	}
	fr := newFrameReader(rec.Body, batchVersionIndexed)
	defer fr.release()
	if err := fr.readMagic(); err != nil {
		t.Fatal(err)
	}
	fm, err := fr.next(1 << 20)
	if err != nil {
		t.Fatal(err)
	}
	var data []byte
	if fm.status == frameOK {
		data = make([]byte, fm.seg.Length)
		if err := fr.data(data); err != nil {
			t.Fatal(err)
		}
	}
	return fm, data
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestDataCacheSeesChanges: once a spill's data file is cached, a change
// made to it before a request (as the TaskTracker's purge or the
// fault-injection tests make them, behind the server's back) is what that
// request sees: a deleted file or directory is not found, a flipped byte
// is served flipped (so the fetcher's CRC check fails), a truncated file
// is an error frame, a file replaced by rename is served new.
func TestDataCacheSeesChanges(t *testing.T) {
	tests := []struct {
		name   string
		change func(t *testing.T, f *cacheFixture, path string)
		status byte
		msg    string // for a failure frame
		flip   bool   // served, with one byte of partition 1 flipped
	}{
		{"unchanged", func(*testing.T, *cacheFixture, string) {}, frameOK, "", false},
		{"deleted", func(t *testing.T, _ *cacheFixture, path string) {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
		}, frameNotFound, "unknown spill 0 of attempt a", false},
		{"directory removed", func(t *testing.T, f *cacheFixture, _ string) {
			// The index stays cached (its path never changes while it
			// exists); the data file's absence is what is seen.
			if err := os.RemoveAll(f.dir); err != nil {
				t.Fatal(err)
			}
		}, frameNotFound, "unknown spill 0 of attempt a", false},
		{"byte flipped in place", func(t *testing.T, f *cacheFixture, path string) {
			file, err := os.OpenFile(path, os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer file.Close()
			b := make([]byte, 1)
			off := f.segs[1].Offset + f.segs[1].Length/2
			if _, err := file.ReadAt(b, off); err != nil {
				t.Fatal(err)
			}
			b[0] ^= 0x40
			if _, err := file.WriteAt(b, off); err != nil {
				t.Fatal(err)
			}
		}, frameOK, "", true},
		{"rewritten shorter", func(t *testing.T, f *cacheFixture, path string) {
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, b[:f.segs[1].Offset+1], 0o644); err != nil {
				t.Fatal(err)
			}
		}, frameError, "spill data file is truncated", false},
		{"replaced by rename", func(t *testing.T, f *cacheFixture, path string) {
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			b[f.segs[1].Offset+f.segs[1].Length/2] ^= 0x40
			tmp := filepath.Join(f.dir, "tmp")
			if err := os.WriteFile(tmp, b, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(tmp, path); err != nil {
				t.Fatal(err)
			}
		}, frameOK, "", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newCacheFixture(t)
			path := filepath.Join(f.dir, spill.DataFileName(0))
			orig, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			seg := f.segs[1]
			fm, data := f.fetch(t, 1)
			if fm.status != frameOK || !bytes.Equal(data, orig[seg.Offset:seg.Offset+seg.Length]) {
				t.Fatalf("first fetch: %+v, %d bytes", fm, len(data))
			}
			f.h.data.mu.Lock()
			_, cached := f.h.data.files[path]
			f.h.data.mu.Unlock()
			if !cached {
				t.Fatalf("%s is not cached after a fetch", path)
			}

			tc.change(t, f, path)
			fm, data = f.fetch(t, 1)
			if fm.status != tc.status {
				t.Fatalf("after the change: frame %+v, want status %d", fm, tc.status)
			}
			if tc.status != frameOK {
				if fm.msg != tc.msg {
					t.Errorf("message %q, want %q", fm.msg, tc.msg)
				}
				return
			}
			err = verifyChecksum(data, seg)
			switch {
			case tc.flip && !errors.Is(err, spill.ErrCorrupt):
				t.Errorf("flipped segment served with the old bytes: checksum %v", err)
			case !tc.flip && err != nil:
				t.Errorf("unchanged segment: %v", err)
			}
		})
	}
}

// TestDataCacheEviction: the cache keeps at most its limit of bytes, evicts
// the most recently used file first among files of equal demand, removes a directory's watch with its
// last file, and a file larger than the per-file bound is served from the
// file and not cached.
func TestDataCacheEviction(t *testing.T) {
	dirs := []string{t.TempDir(), t.TempDir(), t.TempDir()}
	var paths []string
	for i, d := range dirs {
		p := filepath.Join(d, "spill00000.out")
		if err := os.WriteFile(p, bytes.Repeat([]byte{byte('a' + i)}, 1000), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	c := newDataCache(2500, 1200)
	get := func(i int) {
		t.Helper()
		data, pin, ok, err := c.segment([]byte(paths[i]), 10, 5)
		if err != nil || !ok || string(data) != strings.Repeat(string(rune('a'+i)), 5) {
			t.Fatalf("file %d: %q, %t, %v", i, data, ok, err)
		}
		c.releaseAll([]*cachedFile{pin})
	}
	get(1)
	get(0)
	get(1) // 1 is now the most recent
	get(2) // 3,000 bytes: 1 goes
	c.mu.Lock()
	_, has0 := c.files[paths[0]]
	_, has1 := c.files[paths[1]]
	_, has2 := c.files[paths[2]]
	bytes, watches := c.bytes, len(c.byWD)
	c.mu.Unlock()
	if !has0 || has1 || !has2 || bytes != 2000 || watches != 2 {
		t.Errorf("cached 0=%t 1=%t 2=%t, %d bytes, %d watches; want 0 and 2, 2000 bytes, 2 watches", has0, has1, has2, bytes, watches)
	}

	big := filepath.Join(dirs[1], "spill00001.out")
	if err := os.WriteFile(big, make([]byte, 2000), 0o644); err != nil {
		t.Fatal(err)
	}
	for range 2 { // the second time from what the cache remembers of it
		if _, _, ok, err := c.segment([]byte(big), 0, 10); ok || err != nil {
			t.Errorf("a file over the per-file bound: ok=%t, err %v; want not cached", ok, err)
		}
	}
	c.mu.Lock()
	tooLarge := c.demand[big] != nil && c.demand[big].tooLarge
	c.mu.Unlock()
	if !tooLarge {
		t.Errorf("a file over the per-file bound is not remembered as such")
	}
	if _, _, _, err := c.segment([]byte(filepath.Join(dirs[1], "missing.out")), 0, 1); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing file: %v, want not exist", err)
	}
	c.mu.Lock()
	watches = len(c.byWD)
	c.mu.Unlock()
	if watches != 2 {
		t.Errorf("%d watches after reads that cached nothing, want 2", watches)
	}
}

// TestDataCacheEvictsByDemand: once full, the cache evicts the file with
// the fewest bytes still to serve (its size less the segments asked for,
// the most recently used among equals), not the least recently used one:
// a file the reduces have all had goes before one most of them still
// want, however recently used.
func TestDataCacheEvictsByDemand(t *testing.T) {
	dir := t.TempDir()
	var paths []string
	for i := range 4 {
		p := filepath.Join(dir, fmt.Sprintf("spill%05d.out", i))
		if err := os.WriteFile(p, bytes.Repeat([]byte{byte('a' + i)}, 1000), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	cached := func(c *dataCache) (got []bool) {
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, p := range paths {
			got = append(got, c.files[p] != nil)
		}
		return got
	}
	for _, tc := range []struct {
		name  string
		asked []int64 // bytes asked for, per request, in order: files 0, 1, 2, then 3
		want  []bool
	}{
		// 0 was asked for last but has nothing left to serve: it goes.
		{"fewest remaining", []int64{1000, 10, 100}, []bool{false, true, true, true}},
		{"most recent but fewest", []int64{10, 800, 10}, []bool{true, false, true, true}},
		// Equal demand: most recently used first (reduces ask in the
		// same order: those behind want it last).
		{"equal: MRU", []int64{10, 10, 10}, []bool{true, true, false, true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newDataCache(3000, 1200)
			for i, n := range tc.asked {
				if _, _, ok, err := c.segment([]byte(paths[i]), 0, n); !ok || err != nil {
					t.Fatalf("file %d: ok=%t, %v", i, ok, err)
				}
			}
			// A fourth file of 1,000 bytes needs one evicted.
			if _, _, ok, err := c.segment([]byte(paths[3]), 0, 10); !ok || err != nil {
				t.Fatalf("file 3: ok=%t, %v", ok, err)
			}
			if got := cached(c); !slices.Equal(got, tc.want) {
				t.Errorf("cached %v, want %v", got, tc.want)
			}
		})
	}
	// A hit updates the demand: 0 asked for whole goes first.
	c := newDataCache(3000, 1200)
	for i, n := range []int64{100, 200, 300} {
		c.segment([]byte(paths[i]), 0, n)
	}
	c.segment([]byte(paths[0]), 100, 900)
	c.segment([]byte(paths[3]), 0, 10)
	if got, want := cached(c), []bool{false, true, true, true}; !slices.Equal(got, want) {
		t.Errorf("after a hit: cached %v, want %v", got, want)
	}
	// The demand outlives an eviction: 0, mapped again (2 makes room, 700
	// bytes left), still has nothing left and is the next to go.
	c.segment([]byte(paths[0]), 0, 10)
	if got, want := cached(c), []bool{true, true, false, true}; !slices.Equal(got, want) {
		t.Errorf("after mapping 0 again: cached %v, want %v", got, want)
	}
	c.segment([]byte(paths[2]), 0, 10)
	if got, want := cached(c), []bool{false, true, true, true}; !slices.Equal(got, want) {
		t.Errorf("file 0, asked for whole before its eviction, kept over the others: cached %v, want %v", got, want)
	}
}

// TestDataCacheOneReadPerMiss: requests that miss the same file at the
// same time read it once; the others wait and take it from the cache.
func TestDataCacheOneReadPerMiss(t *testing.T) {
	p := filepath.Join(t.TempDir(), "spill00000.out")
	if err := os.WriteFile(p, bytes.Repeat([]byte("abcdefghij"), 10000), 0o644); err != nil {
		t.Fatal(err)
	}
	c := newDataCache(1<<20, 1<<20)
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			data, _, ok, err := c.segment([]byte(p), int64(i*10), 10)
			if err != nil || !ok || string(data) != "abcdefghij" {
				t.Errorf("request %d: %q, %t, %v", i, data, ok, err)
			}
		})
	}
	wg.Wait()
	if n := c.reads.Load(); n != 1 {
		t.Errorf("%d reads of the file, want 1", n)
	}
}

// TestDataCachePins: a file evicted while a request still serves from it
// keeps its mapping until the request gives its pin back, and is unmapped
// then; an unpinned file is unmapped as it is evicted; the files mapped at
// once are bounded in number as well as in bytes.
func TestDataCachePins(t *testing.T) {
	dir := t.TempDir()
	var paths []string
	for i := range 3 {
		p := filepath.Join(dir, fmt.Sprintf("spill%05d.out", i))
		if err := os.WriteFile(p, bytes.Repeat([]byte{byte('a' + i)}, 1000), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	c := newDataCache(1500, 1200) // one file at a time
	data0, pin0, ok, err := c.segment([]byte(paths[0]), 0, 10)
	if err != nil || !ok || pin0 == nil {
		t.Fatalf("file 0: ok=%t, pin %v, %v", ok, pin0, err)
	}
	_, pin1, ok, err := c.segment([]byte(paths[1]), 0, 10) // evicts 0, pinned
	if err != nil || !ok {
		t.Fatalf("file 1: ok=%t, %v", ok, err)
	}
	c.mu.Lock()
	_, has0 := c.files[paths[0]]
	gone0, mapped0 := pin0.gone, pin0.data != nil
	c.mu.Unlock()
	if has0 || !gone0 || !mapped0 {
		t.Fatalf("after eviction: cached=%t gone=%t mapped=%t; want out of the cache and still mapped", has0, gone0, mapped0)
	}
	if string(data0) != "aaaaaaaaaa" {
		t.Errorf("a pinned evicted file reads %q", data0)
	}
	c.releaseAll([]*cachedFile{pin0, nil})
	c.mu.Lock()
	mapped0 = pin0.data != nil
	c.mu.Unlock()
	if mapped0 {
		t.Error("an evicted file is still mapped after its last pin was given back")
	}
	c.releaseAll([]*cachedFile{pin1})
	_, pin2, _, _ := c.segment([]byte(paths[2]), 0, 10) // evicts 1, unpinned: unmapped at once
	c.mu.Lock()
	mapped1 := pin1.data != nil
	c.mu.Unlock()
	if mapped1 {
		t.Error("an unpinned evicted file is still mapped")
	}
	c.releaseAll([]*cachedFile{pin2})

	c = newDataCache(1<<20, 1200)
	c.maxFiles = 2
	for i := range 3 {
		_, pin, ok, err := c.segment([]byte(paths[i]), 0, 10)
		if err != nil || !ok {
			t.Fatalf("file %d: ok=%t, %v", i, ok, err)
		}
		c.releaseAll([]*cachedFile{pin})
	}
	c.mu.Lock()
	n := len(c.files)
	c.mu.Unlock()
	if n != 2 {
		t.Errorf("%d files cached, want at most 2", n)
	}
}

// TestCopyMappedFault: bytes of a mapping whose file was truncated after
// it was mapped (past its new end the pages are gone) give an error
// wrapping io.ErrUnexpectedEOF, not a crash of the server.
func TestCopyMappedFault(t *testing.T) {
	p := filepath.Join(t.TempDir(), "spill00000.out")
	if err := os.WriteFile(p, bytes.Repeat([]byte("x"), 3*os.Getpagesize()), 0o644); err != nil {
		t.Fatal(err)
	}
	c := newDataCache(1<<20, 1<<20)
	data, pin, ok, err := c.segment([]byte(p), int64(2*os.Getpagesize()), 100)
	if err != nil || !ok {
		t.Fatalf("ok=%t, %v", ok, err)
	}
	defer c.releaseAll([]*cachedFile{pin})
	var buf bytes.Buffer
	if n, err := copyMapped(&buf, data); err != nil || n != 100 {
		t.Fatalf("before the truncation: %d bytes, %v", n, err)
	}
	if err := os.Truncate(p, 0); err != nil {
		t.Fatal(err)
	}
	buf.Reset()
	if _, err := copyMapped(&buf, data); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("after the truncation: %v, want io.ErrUnexpectedEOF", err)
	}
}

// TestDataCacheLargeFileMappedLazily: a data file over populateMaxBytes
// is cached (its small segments cost no open and no read each) but mapped
// without populating it: serving one segment maps in only the pages
// around it (the mapping's resident size in /proc/self/smaps: not the
// whole file), where a
// small file is mapped whole. A large file truncated behind the cache's
// back is an error, not a crash, when a page past its new end is copied.
func TestDataCacheLargeFileMappedLazily(t *testing.T) {
	dir := t.TempDir()
	large := filepath.Join(dir, "spill00000.out")
	small := filepath.Join(dir, "spill00001.out")
	const largeSize = 4 << 20
	content := make([]byte, largeSize)
	for i := range content {
		content[i] = byte(i * 7)
	}
	if err := os.WriteFile(large, content, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(small, content[:populateMaxBytes], 0o644); err != nil {
		t.Fatal(err)
	}
	c := newDataCache(64<<20, maxCachedFileBytes)
	var pins []*cachedFile
	for _, off := range []int64{3 << 20, 3<<20 + 4096, 3<<20 + 8192} {
		data, pin, ok, err := c.segment([]byte(large), off, 1000)
		if err != nil || !ok || !bytes.Equal(data, content[off:off+1000]) {
			t.Fatalf("segment at %d: ok=%t, %v, equal=%t", off, ok, err, bytes.Equal(data, content[off:off+1000]))
		}
		var buf bytes.Buffer
		if n, err := copyMapped(&buf, data); err != nil || n != 1000 || !bytes.Equal(buf.Bytes(), content[off:off+1000]) {
			t.Fatalf("copy of the segment at %d: %d bytes, %v", off, n, err)
		}
		pins = append(pins, pin)
	}
	if n := c.reads.Load(); n != 1 {
		t.Errorf("three segments of a cached file of %d bytes took %d reads, want 1", largeSize, n)
	}
	data, pin, ok, err := c.segment([]byte(small), 100, 100)
	if err != nil || !ok {
		t.Fatalf("small file: ok=%t, %v", ok, err)
	}
	pins = append(pins, pin)
	_ = data
	// The kernel maps in the pages around a fault (fault-around, or a
	// whole large folio of the page cache: 2 MiB here on Linux 6.18), not
	// the whole file.
	if rss := mappedRSS(t, large); rss > largeSize/2 {
		t.Errorf("the large file's mapping has %d of its %d bytes resident after segments on 3 pages were served, want at most half (mapped lazily)", rss, largeSize)
	}
	if rss := mappedRSS(t, small); rss != populateMaxBytes {
		t.Errorf("the small file's mapping has %d bytes resident, want all its %d (populated)", rss, populateMaxBytes)
	}

	// Truncated behind the cache's back while a request holds a segment
	// on a page never touched: the copy fails, the process does not.
	last, pin, ok, err := c.segment([]byte(large), largeSize-2000, 1000)
	if err != nil || !ok {
		t.Fatalf("last segment: ok=%t, %v", ok, err)
	}
	pins = append(pins, pin)
	if err := os.Truncate(large, 1<<20); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := copyMapped(&buf, last); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("copy past the truncated end: %v, want io.ErrUnexpectedEOF", err)
	}
	c.releaseAll(pins)
}

// mappedRSS is the resident size of this process's mapping of path, from
// /proc/self/smaps (the test fails if there is none).
func mappedRSS(t *testing.T, path string) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Skipf("no /proc/self/smaps: %v", err)
	}
	lines := strings.Split(string(b), "\n")
	for i, l := range lines {
		if !strings.HasSuffix(l, " "+path) {
			continue
		}
		for _, m := range lines[i+1:] {
			if f := strings.Fields(m); len(f) == 3 && f[0] == "Rss:" {
				kb, err := strconv.ParseInt(f[1], 10, 64)
				if err != nil {
					t.Fatal(err)
				}
				return kb << 10
			}
		}
	}
	t.Fatalf("no mapping of %s in /proc/self/smaps", path)
	return 0
}

// TestFetchBatchMediumSpillFromCache: the small segments (under
// sendfileMinBytes) of a spill data file larger than populateMaxBytes, as a
// map with many reduces writes them, are fetched by batched requests,
// one reduce at a time as reducers ask, verified, and served from one
// mapping of the file: the cache maps it once for all of them (before
// 2026-11-26's late change, such a file was never cached and each segment
// cost the server an open, a read and a close).
func TestFetchBatchMediumSpillFromCache(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(17, 28))
	parts := make([][]kv, 40)
	for p := range parts {
		parts[p] = randomKVs(rng, 160)
		slices.SortFunc(parts[p], func(a, b kv) int { return strings.Compare(a.k, b.k) })
	}
	segs := writeSpillFiles(t, dir, 0, parts)
	size := segs[len(segs)-1].Offset + segs[len(segs)-1].Length
	if size <= populateMaxBytes || size > maxCachedFileBytes {
		t.Fatalf("the spill is %d bytes: the test wants more than %d and at most %d", size, populateMaxBytes, maxCachedFileBytes)
	}
	for _, s := range segs {
		if s.Length >= sendfileMinBytes {
			t.Fatalf("a segment of %d bytes: the test wants them all under %d", s.Length, sendfileMinBytes)
		}
	}
	w := &worker{secrets: map[string][]byte{"j": []byte("s")}, dirs: map[string]string{"j/a": dir}}
	h := NewHandler(w, w, nil).(*handler)
	srv := httptest.NewServer(h)
	defer srv.Close()
	fe := &Fetcher{Secret: []byte("s"), Client: srv.Client()}
	for r, seg := range segs {
		loc := SpillLocation{JobID: "j", AttemptID: "a", Spill: 0, Host: srv.Listener.Addr().String(), Segment: seg}
		data, errs := fe.FetchBatch(context.Background(), []SpillLocation{loc}, r)
		if errs[0] != nil {
			t.Fatalf("reduce %d: %v", r, errs[0])
		}
		if err := spill.VerifySegment(data[0], seg); err != nil {
			t.Fatalf("reduce %d: %v", r, err)
		}
	}
	if n := h.data.reads.Load(); n != 1 {
		t.Errorf("the cache mapped the %d-byte spill %d times for its %d reduces, want once", size, n, len(segs))
	}
}
