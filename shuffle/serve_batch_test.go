package shuffle

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"gomr/spill"
)

// largeBatch is an attempt "a" of job "j" (secret "s") whose spills each
// hold one incompressible segment of about segBytes for reduce 0, and a
// signed batched request for all of them.
type largeBatch struct {
	w    *worker
	dir  string
	segs []spill.SegmentInfo // per spill, reduce 0
	body []byte
	hash string
}

func newLargeBatch(t testing.TB, spills, segBytes int) *largeBatch {
	t.Helper()
	lb := &largeBatch{dir: t.TempDir()}
	lb.w = &worker{secrets: map[string][]byte{"j": []byte("s")}, dirs: map[string]string{"j/a": lb.dir}}
	rng := rand.New(rand.NewPCG(3, 4))
	items := make([]BatchItem, spills)
	for k := range spills {
		recs := make([]kv, segBytes/4096)
		for i := range recs {
			v := make([]byte, 4096)
			for j := range v {
				v[j] = byte(rng.Uint32())
			}
			recs[i] = kv{k: string(rune('a'+i%26)) + string(rune('a'+i/26%26)) + string(rune('a'+i/676%26)), v: string(v)}
		}
		sortKVs(recs)
		data, seg := encodeSegment(t, recs, 64<<10)
		if err := os.WriteFile(filepath.Join(lb.dir, spill.DataFileName(k)), data, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := spill.WriteIndex(filepath.Join(lb.dir, spill.IndexFileName(k)), []spill.SegmentInfo{seg}); err != nil {
			t.Fatal(err)
		}
		lb.segs = append(lb.segs, seg)
		items[k] = BatchItem{Attempt: "a", Spill: k}
	}
	var err error
	lb.body, err = EncodeBatchRequest(BatchRequest{Version: batchVersionIndexed, Job: "j", Reduce: 0, At: time.Now().UnixMilli(), Items: items})
	if err != nil {
		t.Fatal(err)
	}
	lb.hash = BatchRequestHash([]byte("s"), lb.body)
	return lb
}

func (lb *largeBatch) serve(h http.Handler, w http.ResponseWriter) {
	req := httptest.NewRequest("POST", BatchPath, bytes.NewReader(lb.body))
	req.Header.Set(HashHeader, lb.hash)
	h.ServeHTTP(w, req)
}

// total is the bytes of all the batch's segments.
func (lb *largeBatch) total() int64 {
	var n int64
	for _, s := range lb.segs {
		n += s.Length
	}
	return n
}

// TestBatchHandlerLargeSegments: segments larger than the server's buffers
// arrive whole and verify, and serving them allocates a small fraction of
// their bytes (the server streams them, it does not hold them).
func TestBatchHandlerLargeSegments(t *testing.T) {
	const spills, segBytes = 4, 4 << 20
	lb := newLargeBatch(t, spills, segBytes)
	h := NewHandler(lb.w, lb.w, nil)

	rec := httptest.NewRecorder()
	lb.serve(h, rec)
	if rec.Code != 200 {
		t.Fatalf("status %d: %q", rec.Code, rec.Body.Bytes())
	}
	fr := newFrameReader(rec.Body, batchVersionIndexed)
	defer fr.release()
	if err := fr.readMagic(); err != nil {
		t.Fatal(err)
	}
	for k, want := range lb.segs {
		fm, err := fr.next(want.Length)
		if err != nil || fm.status != frameOK {
			t.Fatalf("frame %d: %+v, %v", k, fm, err)
		}
		buf := make([]byte, fm.seg.Length)
		if err := fr.data(buf); err != nil {
			t.Fatalf("frame %d: %v", k, err)
		}
		if err := spill.VerifySegment(buf, want); err != nil {
			t.Errorf("frame %d: %v", k, err)
		}
	}
	if _, err := fr.next(0); !errors.Is(err, io.EOF) {
		t.Errorf("after the last frame: %v, want EOF", err)
	}

	// What one request allocates, over a few runs (the first warms the
	// index cache).
	lb.serve(h, &discardWriter{h: http.Header{}})
	const runs = 5
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range runs {
		dw := &discardWriter{h: http.Header{}}
		lb.serve(h, dw)
		if dw.code != 200 || int64(dw.n) < lb.total() {
			t.Fatalf("status %d, %d of %d bytes", dw.code, dw.n, lb.total())
		}
	}
	runtime.ReadMemStats(&after)
	perRequest := (after.TotalAlloc - before.TotalAlloc) / runs
	t.Logf("a request for %d segments of %d bytes allocates %d bytes", spills, lb.segs[0].Length, perRequest)
	if limit := uint64(1 << 20); perRequest > limit {
		t.Errorf("a request for %d segments of %d bytes allocates %d bytes, more than %d: a segment is held whole", spills, lb.segs[0].Length, perRequest, limit)
	}
}

// TestBatchHandlerTruncatedLargeSegment: a large segment whose data file is
// shorter than its index says gets an error frame before any of its bytes,
// and the segments after it are served.
func TestBatchHandlerTruncatedLargeSegment(t *testing.T) {
	lb := newLargeBatch(t, 3, 1<<20)
	path := filepath.Join(lb.dir, spill.DataFileName(1))
	if err := os.Truncate(path, lb.segs[1].Length-1); err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	lb.serve(NewHandler(lb.w, lb.w, nil), rec)
	if rec.Code != 200 {
		t.Fatalf("status %d", rec.Code)
	}
	fr := newFrameReader(rec.Body, batchVersionIndexed)
	defer fr.release()
	if err := fr.readMagic(); err != nil {
		t.Fatal(err)
	}
	for k, want := range lb.segs {
		fm, err := fr.next(want.Length)
		if err != nil {
			t.Fatalf("frame %d: %v", k, err)
		}
		if k == 1 {
			if fm.status != frameError || fm.msg != "spill data file is truncated" {
				t.Errorf("frame %d: %+v, want an error frame saying truncated", k, fm)
			}
			continue
		}
		if fm.status != frameOK {
			t.Fatalf("frame %d: %+v", k, fm)
		}
		if err := fr.skip(fm.seg.Length); err != nil {
			t.Fatalf("frame %d: %v", k, err)
		}
	}
}

// BenchmarkBatchHandlerLarge measures the server's cost and allocations for
// batches of 8 segments of 4 MiB (a TeraSort reduce's share of a spill
// at 1 GB is about 28 MB), answered into a discarding writer.
func BenchmarkBatchHandlerLarge(b *testing.B) {
	lb := newLargeBatch(b, 8, 4<<20)
	h := NewHandler(lb.w, lb.w, nil)
	b.SetBytes(lb.total())
	b.ReportAllocs()
	for b.Loop() {
		dw := &discardWriter{h: http.Header{}}
		lb.serve(h, dw)
		if dw.code != 200 || int64(dw.n) < lb.total() {
			b.Fatalf("status %d, %d bytes", dw.code, dw.n)
		}
	}
}

// TestCopySegment: copySegment copies exactly the asked range, and a file
// that ends before it (one that shrank after streamFrame's check) is an
// error wrapping io.ErrUnexpectedEOF, not a short frame.
func TestCopySegment(t *testing.T) {
	data := make([]byte, 200<<10)
	for i := range data {
		data[i] = byte(i * 7)
	}
	tests := []struct {
		name           string
		offset, length int64
		wantErr        error
	}{
		{"whole", 0, int64(len(data)), nil},
		{"inside", 1000, 150 << 10, nil},
		{"empty", 5, 0, nil},
		{"past the end", 100 << 10, 101 << 10, io.ErrUnexpectedEOF},
		{"beyond the file", int64(len(data)) + 10, 1, io.ErrUnexpectedEOF},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			bw := bufio.NewWriterSize(&out, batchWriterBytes)
			n, err := copySegment(bw, bytes.NewReader(data), "spill0.out", tc.offset, tc.length)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("copied %d bytes, err %v; want %v", n, err, tc.wantErr)
				}
				return
			}
			if err != nil || n != tc.length {
				t.Fatalf("copied %d of %d bytes: %v", n, tc.length, err)
			}
			if err := bw.Flush(); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(out.Bytes(), data[tc.offset:tc.offset+tc.length]) {
				t.Error("copied bytes differ from the file's")
			}
		})
	}
}

// TestFetchBatchLargeSegments: over HTTP, with and without the outcome
// wrapper (the TaskTracker mounts the handler with it; without it the
// reply writer is net/http's own, whose ReadFrom the copy may use), a
// fetcher gets large streamed segments whole and verified, and a truncated
// one fails alone.
func TestFetchBatchLargeSegments(t *testing.T) {
	lb := newLargeBatch(t, 3, 1<<20)
	if err := os.Truncate(filepath.Join(lb.dir, spill.DataFileName(1)), lb.segs[1].Length/2); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		opts []HandlerOption
	}{
		{"plain", nil},
		{"with outcome", []HandlerOption{WithOutcome(func(string) {})}},
		{"corked", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewUnstartedServer(NewHandler(lb.w, lb.w, nil, tc.opts...))
			if tc.name == "corked" {
				srv.Config.ConnContext = ConnContext
			}
			srv.Start()
			defer srv.Close()
			locs := make([]SpillLocation, len(lb.segs))
			for k, seg := range lb.segs {
				locs[k] = SpillLocation{JobID: "j", AttemptID: "a", Spill: k, Host: srv.Listener.Addr().String(), Segment: seg}
			}
			fe := &Fetcher{Secret: []byte("s"), Client: srv.Client()}
			data, errs := fe.FetchBatch(context.Background(), locs, 0)
			for k := range locs {
				if k == 1 {
					if errs[k] == nil || data[k] != nil {
						t.Errorf("segment 1 (truncated): %d bytes, err %v; want an error", len(data[k]), errs[k])
					}
					continue
				}
				if errs[k] != nil {
					t.Fatalf("segment %d: %v", k, errs[k])
				}
				if err := spill.VerifySegment(data[k], lb.segs[k]); err != nil {
					t.Errorf("segment %d: %v", k, err)
				}
			}
		})
	}
}
