package shuffle

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"testing/iotest"
	"time"

	"gomr/spill"
)

func TestBatchRequestEncoding(t *testing.T) {
	many := make([]BatchItem, MaxBatchSegments+1)
	for i := range many {
		many[i] = BatchItem{Attempt: "a", Spill: i}
	}
	tests := []struct {
		name    string
		req     BatchRequest
		wantErr string
	}{
		{"one", BatchRequest{Job: "job_1", Reduce: 0, At: 1, Items: []BatchItem{{Attempt: "attempt_1_m_0_0", Spill: 0}}}, ""},
		{"several", BatchRequest{Job: "j", Reduce: 49, At: 1764115200000, Items: []BatchItem{{Attempt: "a", Spill: 0}, {Attempt: "a", Spill: 1}, {Attempt: "b", Spill: 3}, {Attempt: "c", Spill: 1 << 20}}}, ""},
		{"negative time", BatchRequest{Job: "j", Reduce: 1, At: -5, Items: []BatchItem{{Attempt: "a", Spill: 0}}}, ""},
		{"the most", BatchRequest{Job: "j", Items: many[:MaxBatchSegments]}, ""},
		{"too many", BatchRequest{Job: "j", Items: many}, "segments"},
		{"none", BatchRequest{Job: "j"}, "segments"},
		{"no job", BatchRequest{Items: []BatchItem{{Attempt: "a", Spill: 0}}}, "missing parameter job"},
		{"job with a path", BatchRequest{Job: "../j", Items: []BatchItem{{Attempt: "a", Spill: 0}}}, "not a valid identifier"},
		{"attempt dot-dot", BatchRequest{Job: "j", Items: []BatchItem{{Attempt: "..", Spill: 0}}}, "not a valid identifier"},
		{"long attempt", BatchRequest{Job: "j", Items: []BatchItem{{Attempt: strings.Repeat("a", maxIDLength+1), Spill: 0}}}, "more than"},
		{"negative spill", BatchRequest{Job: "j", Items: []BatchItem{{Attempt: "a", Spill: -1}}}, "negative"},
		// An attempt is checked once per run of items naming it: a bad
		// one after a run of good ones, or between two, is still refused.
		{"bad attempt after a run", BatchRequest{Job: "j", Items: []BatchItem{{Attempt: "a", Spill: 0}, {Attempt: "a", Spill: 1}, {Attempt: "a/b", Spill: 2}}}, "not a valid identifier"},
		{"bad attempt between runs", BatchRequest{Job: "j", Items: []BatchItem{{Attempt: "a", Spill: 0}, {Attempt: "..", Spill: 1}, {Attempt: "a", Spill: 2}}}, "not a valid identifier"},
		{"bad attempt repeated", BatchRequest{Job: "j", Items: []BatchItem{{Attempt: "a", Spill: 0}, {Attempt: "", Spill: 1}, {Attempt: "", Spill: 2}}}, "missing parameter attempt"},
		{"negative spill in a run", BatchRequest{Job: "j", Items: []BatchItem{{Attempt: "a", Spill: 0}, {Attempt: "a", Spill: -2}}}, "negative"},
		{"negative reduce", BatchRequest{Job: "j", Reduce: -1, Items: []BatchItem{{Attempt: "a", Spill: 0}}}, "negative"},
		{"ranges", BatchRequest{Version: 2, Job: "j", Reduce: 3, At: 9, Items: []BatchItem{{"a", 0, 0, 825}, {"a", 1, 41250, 825}, {"b", 7, 1 << 40, 0}}}, ""},
		{"largest range", BatchRequest{Job: "j", Items: []BatchItem{{"a", 0, maxSegmentOffset, maxSegmentBytes}}}, ""},
		{"version 1 ignores ranges", BatchRequest{Version: 1, Job: "j", Items: []BatchItem{{Attempt: "a", Spill: 2}}}, ""},
		{"negative offset", BatchRequest{Job: "j", Items: []BatchItem{{"a", 0, -1, 10}}}, "out of range"},
		{"negative length", BatchRequest{Job: "j", Items: []BatchItem{{"a", 0, 0, -1}}}, "out of range"},
		{"offset too far", BatchRequest{Job: "j", Items: []BatchItem{{"a", 0, maxSegmentOffset + 1, 1}}}, "out of range"},
		{"length too long", BatchRequest{Job: "j", Items: []BatchItem{{"a", 0, 0, maxSegmentBytes + 1}}}, "out of range"},
		{"unknown version", BatchRequest{Version: 4, Job: "j", Items: []BatchItem{{Attempt: "a", Spill: 0}}}, "version 4"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := EncodeBatchRequest(tc.req)
			if tc.wantErr != "" {
				if err == nil || !errors.Is(err, ErrBadBatch) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want ErrBadBatch saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, err := DecodeBatchRequest(b)
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			want := tc.req
			if want.Version == 0 {
				want.Version = BatchVersion
			}
			if !reflect.DeepEqual(got, want) && len(want.Items) < 10 {
				t.Errorf("decoded %+v, want %+v", got, want)
			} else if !reflect.DeepEqual(got, want) {
				t.Errorf("decoded request of %d items differs from the one encoded", len(got.Items))
			}
			// Every proper prefix is refused, and so is a trailing byte.
			for n := range len(b) {
				if _, err := DecodeBatchRequest(b[:n]); !errors.Is(err, ErrBadBatch) {
					t.Fatalf("prefix of %d of %d bytes: error %v, want ErrBadBatch", n, len(b), err)
				}
			}
			if _, err := DecodeBatchRequest(append(b, 0)); !errors.Is(err, ErrBadBatch) {
				t.Errorf("trailing byte: error %v, want ErrBadBatch", err)
			}
		})
	}
}

func TestBatchRequestHashCoversTheList(t *testing.T) {
	s := []byte("secret")
	base := BatchRequest{Job: "j", Reduce: 2, At: 7, Items: []BatchItem{{Attempt: "a", Spill: 0}, {Attempt: "b", Spill: 1}}}
	hash := func(r BatchRequest) string {
		b, err := EncodeBatchRequest(r)
		if err != nil {
			t.Fatal(err)
		}
		return BatchRequestHash(s, b)
	}
	h0 := hash(base)
	change := map[string]func(*BatchRequest){
		"job":     func(r *BatchRequest) { r.Job = "k" },
		"reduce":  func(r *BatchRequest) { r.Reduce = 3 },
		"time":    func(r *BatchRequest) { r.At = 8 },
		"attempt": func(r *BatchRequest) { r.Items = []BatchItem{{Attempt: "a", Spill: 0}, {Attempt: "c", Spill: 1}} },
		"spill":   func(r *BatchRequest) { r.Items = []BatchItem{{Attempt: "a", Spill: 0}, {Attempt: "b", Spill: 2}} },
		"order":   func(r *BatchRequest) { r.Items = []BatchItem{{Attempt: "b", Spill: 1}, {Attempt: "a", Spill: 0}} },
		"one more": func(r *BatchRequest) {
			r.Items = []BatchItem{{Attempt: "a", Spill: 0}, {Attempt: "b", Spill: 1}, {Attempt: "b", Spill: 2}}
		},
		"one less": func(r *BatchRequest) { r.Items = []BatchItem{{Attempt: "a", Spill: 0}} },
		"offset":   func(r *BatchRequest) { r.Items[1].Offset = 1 },
		"length":   func(r *BatchRequest) { r.Items[0].Length = 1 },
		"version":  func(r *BatchRequest) { r.Version = batchVersionIndexed },
	}
	for name, f := range change {
		r := base
		r.Items = append([]BatchItem(nil), base.Items...)
		f(&r)
		if hash(r) == h0 {
			t.Errorf("changing the %s does not change the hash", name)
		}
	}
	if RequestHash(s, "j", "a", 0, 2, 7) == h0 {
		t.Error("a single request's hash equals the batch's")
	}
}

// batchFixture is a worker with spills 0, 1 and 2 of attempt "a0" of job
// "j" (three partitions each, partition 1 empty) and spill 0 of "a1".
type batchFixture struct {
	*serverFixture
	segs map[string][]spill.SegmentInfo // attempt/spill -> segments
}

func newBatchFixture(t testing.TB) *batchFixture {
	t.Helper()
	f := &batchFixture{serverFixture: newServerFixture(t), segs: map[string][]spill.SegmentInfo{}}
	f.segs["a0/0"] = f.serverFixture.segs
	for k := 1; k <= 2; k++ {
		f.segs[fmt.Sprintf("a0/%d", k)] = writeSpillFiles(t, f.dir, k, [][]kv{
			{{fmt.Sprint("k", k), "v"}}, nil, {{"z", strings.Repeat(fmt.Sprint(k), 500)}},
		})
	}
	dir1 := t.TempDir()
	f.w.addAttempt("j", "a1", dir1)
	f.segs["a1/0"] = writeSpillFiles(t, dir1, 0, [][]kv{{{"q", "1"}}, nil, {{"r", "2"}}})
	return f
}

func (f *batchFixture) locOf(attempt string, k, reduce int) SpillLocation {
	return SpillLocation{JobID: "j", Spill: k, AttemptID: attempt, Host: f.w.host(), Segment: f.segs[fmt.Sprintf("%s/%d", attempt, k)][reduce]}
}

// post sends a batch request body with a hash and returns the reply.
func (f *batchFixture) post(t *testing.T, method string, body []byte, hash string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, f.w.srv.URL+BatchPath, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if hash != "" {
		req.Header.Set(HashHeader, hash)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

func TestBatchHandler(t *testing.T) {
	f := newBatchFixture(t)
	now := time.Now().UnixMilli()
	enc := func(job string, reduce int, at int64, items ...BatchItem) []byte {
		b, err := EncodeBatchRequest(BatchRequest{Version: batchVersionIndexed, Job: job, Reduce: reduce, At: at, Items: items})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	good := enc("j", 2, now, BatchItem{Attempt: "a0", Spill: 1}, BatchItem{Attempt: "gone", Spill: 0}, BatchItem{Attempt: "a0", Spill: 0}, BatchItem{Attempt: "a0", Spill: 9}, BatchItem{Attempt: "a1", Spill: 0}, BatchItem{Attempt: "a0", Spill: 2})
	old := now - 2*DefaultRequestWindow.Milliseconds()
	refusals := []struct {
		name   string
		method string
		body   []byte
		hash   string
		status int
	}{
		{"GET", "GET", good, BatchRequestHash(f.secret, good), 405},
		{"no hash", "POST", good, "", 401},
		{"another secret", "POST", good, BatchRequestHash([]byte("guess"), good), 401},
		{"unknown job", "POST", enc("k", 0, now, BatchItem{Attempt: "a0", Spill: 0}), BatchRequestHash(f.secret, enc("k", 0, now, BatchItem{Attempt: "a0", Spill: 0})), 401},
		{"replayed", "POST", enc("j", 0, old, BatchItem{Attempt: "a0", Spill: 0}), BatchRequestHash(f.secret, enc("j", 0, old, BatchItem{Attempt: "a0", Spill: 0})), 401},
		{"not a batch", "POST", []byte("job=j"), BatchRequestHash(f.secret, []byte("job=j")), 400},
		{"too large", "POST", make([]byte, maxBatchRequestBytes+1), "x", 400},
	}
	for _, tc := range refusals {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := f.post(t, tc.method, tc.body, tc.hash)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d (%q)", resp.StatusCode, tc.status, body)
			}
			if resp.Header.Get(ReplyHashHeader) != "" {
				t.Error("a refused request got a reply hash")
			}
		})
	}

	t.Run("frames", func(t *testing.T) {
		hash := BatchRequestHash(f.secret, good)
		resp, body := f.post(t, "POST", good, hash)
		if resp.StatusCode != 200 {
			t.Fatalf("status %d: %q", resp.StatusCode, body)
		}
		if got, want := resp.Header.Get(ReplyHashHeader), ReplyHash(f.secret, hash); got != want {
			t.Errorf("reply hash %q, want %q", got, want)
		}
		// The length is known ahead (so that large segments can go with
		// sendfile): no chunking.
		if resp.ContentLength != int64(len(body)) || len(resp.TransferEncoding) != 0 {
			t.Errorf("Content-Length %d, transfer encoding %v, body of %d bytes; want the body's length, no chunking", resp.ContentLength, resp.TransferEncoding, len(body))
		}
		fr := newFrameReader(bytes.NewReader(body), batchVersionIndexed)
		if err := fr.readMagic(); err != nil {
			t.Fatal(err)
		}
		want := []struct {
			status byte
			key    string
		}{{frameOK, "a0/1"}, {frameNotFound, ""}, {frameOK, "a0/0"}, {frameNotFound, ""}, {frameOK, "a1/0"}, {frameOK, "a0/2"}}
		for i, w := range want {
			fm, err := fr.next(1 << 20)
			if err != nil {
				t.Fatalf("frame %d: %v", i, err)
			}
			if fm.status != w.status {
				t.Fatalf("frame %d: status %d (%q), want %d", i, fm.status, fm.msg, w.status)
			}
			if w.status != frameOK {
				continue
			}
			seg := f.segs[w.key][2]
			seg.Offset = 0
			if fm.seg != seg {
				t.Errorf("frame %d: %+v, want %+v", i, fm.seg, seg)
			}
			buf := make([]byte, fm.seg.Length)
			if err := fr.data(buf); err != nil {
				t.Fatal(err)
			}
			if err := spill.VerifySegment(buf, seg); err != nil {
				t.Errorf("frame %d: %v", i, err)
			}
		}
		if _, err := fr.next(1 << 20); !errors.Is(err, io.EOF) {
			t.Errorf("after the last frame: %v, want EOF", err)
		}
	})

	// The attempt's directory is remembered (dirCache) and its index and
	// data cached after the frames above: once the directory is gone, its
	// segments are not found all the same.
	t.Run("attempt removed after it was served", func(t *testing.T) {
		dir1, err := f.w.SpillDir("j", "a1")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.RemoveAll(dir1); err != nil {
			t.Fatal(err)
		}
		b := enc("j", 2, time.Now().UnixMilli(), BatchItem{Attempt: "a1", Spill: 0}, BatchItem{Attempt: "a0", Spill: 0})
		resp, body := f.post(t, "POST", b, BatchRequestHash(f.secret, b))
		if resp.StatusCode != 200 {
			t.Fatalf("status %d", resp.StatusCode)
		}
		fr := newFrameReader(bytes.NewReader(body), batchVersionIndexed)
		if err := fr.readMagic(); err != nil {
			t.Fatal(err)
		}
		if fm, err := fr.next(1 << 20); err != nil || fm.status != frameNotFound {
			t.Errorf("removed attempt: frame %+v, %v; want not found", fm, err)
		}
		if fm, err := fr.next(1 << 20); err != nil || fm.status != frameOK {
			t.Errorf("the other attempt: frame %+v, %v; want served", fm, err)
		}
	})

	t.Run("reduce out of range", func(t *testing.T) {
		b := enc("j", 3, now, BatchItem{Attempt: "a0", Spill: 0})
		resp, body := f.post(t, "POST", b, BatchRequestHash(f.secret, b))
		if resp.StatusCode != 200 {
			t.Fatalf("status %d", resp.StatusCode)
		}
		fr := newFrameReader(bytes.NewReader(body), batchVersionIndexed)
		if err := fr.readMagic(); err != nil {
			t.Fatal(err)
		}
		if fm, err := fr.next(0); err != nil || fm.status != frameBadRequest || !strings.Contains(fm.msg, "out of range") {
			t.Errorf("frame %+v, %v; want a bad-request frame saying out of range", fm, err)
		}
	})
}

// TestBatchHandlerRanges: a request of version 2 is served from the byte
// ranges it names, with no index read, from the data cache or from the
// files; a range past the end of its data file, an unknown attempt or a
// missing spill fail alone.
func TestBatchHandlerRanges(t *testing.T) {
	for _, cache := range []int64{DefaultDataCacheBytes, 0} {
		t.Run(fmt.Sprintf("cache %d", cache), func(t *testing.T) {
			f := newBatchFixture(t)
			h := NewHandler(f.w, f.w, nil, WithDataCache(cache))
			seg := func(key string, r int) spill.SegmentInfo { return f.segs[key][r] }
			last := seg("a0/0", 2)
			items := []BatchItem{
				{"a0", 1, seg("a0/1", 2).Offset, seg("a0/1", 2).Length},
				{"gone", 0, 0, 10},
				{"a0", 9, 0, 10},
				{"a0", 0, last.Offset, last.Length + 1}, // one byte past the end
				{"a1", 0, seg("a1/0", 0).Offset, seg("a1/0", 0).Length},
				{"a0", 0, seg("a0/0", 1).Offset, 0}, // an empty range
				{"a0", 0, last.Offset, last.Length},
			}
			want := []struct {
				status byte
				seg    spill.SegmentInfo
				msg    string
			}{
				{frameOK, seg("a0/1", 2), ""}, {frameNotFound, spill.SegmentInfo{}, "unknown attempt gone"},
				{frameNotFound, spill.SegmentInfo{}, "unknown spill 9"}, {frameError, spill.SegmentInfo{}, "truncated"},
				{frameOK, seg("a1/0", 0), ""}, {frameOK, spill.SegmentInfo{}, ""}, {frameOK, last, ""},
			}
			body, err := EncodeBatchRequest(BatchRequest{Job: "j", Reduce: 2, At: time.Now().UnixMilli(), Items: items})
			if err != nil {
				t.Fatal(err)
			}
			rec := httptest.NewRecorder()
			req := httptest.NewRequest("POST", BatchPath, bytes.NewReader(body))
			req.Header.Set(HashHeader, BatchRequestHash(f.secret, body))
			h.ServeHTTP(rec, req)
			if rec.Code != 200 {
				t.Fatalf("status %d: %q", rec.Code, rec.Body.Bytes())
			}
			if n, err := strconv.Atoi(rec.Header().Get("Content-Length")); err != nil || n != rec.Body.Len() {
				t.Errorf("Content-Length %q for a body of %d bytes", rec.Header().Get("Content-Length"), rec.Body.Len())
			}
			fr := newFrameReader(rec.Body, BatchVersion)
			if err := fr.readMagic(); err != nil {
				t.Fatal(err)
			}
			for i, w := range want {
				fm, err := fr.next(items[i].Length)
				if err != nil {
					t.Fatalf("frame %d: %v", i, err)
				}
				if fm.status != w.status || !strings.Contains(fm.msg, w.msg) {
					t.Fatalf("frame %d: status %d (%q), want %d (%q)", i, fm.status, fm.msg, w.status, w.msg)
				}
				if w.status != frameOK {
					continue
				}
				buf := make([]byte, fm.seg.Length)
				if err := fr.data(buf); err != nil {
					t.Fatal(err)
				}
				if err := spill.VerifySegment(buf, w.seg); err != nil {
					t.Errorf("frame %d: %v", i, err)
				}
			}
			if _, err := fr.next(1 << 20); !errors.Is(err, io.EOF) {
				t.Errorf("after the last frame: %v, want EOF", err)
			}
		})
	}
}

func TestFetchBatch(t *testing.T) {
	f := newBatchFixture(t)
	all := []SpillLocation{f.locOf("a0", 0, 2), f.locOf("a0", 1, 2), f.locOf("a1", 0, 2), f.locOf("a0", 2, 2)}
	check := func(t *testing.T, data [][]byte, errs []error, wantErr map[int]error) {
		t.Helper()
		for i := range all {
			if w := wantErr[i]; w != nil {
				if !errors.Is(errs[i], w) {
					t.Errorf("segment %d: error %v, want %v", i, errs[i], w)
				}
				if data[i] != nil {
					t.Errorf("segment %d: data with an error", i)
				}
				continue
			}
			if cap(data[i]) != len(data[i]) {
				t.Errorf("segment %d: room to grow into the next one", i)
			}
			if errs[i] != nil {
				t.Errorf("segment %d: %v", i, errs[i])
				continue
			}
			if err := spill.VerifySegment(data[i], all[i].Segment); err != nil {
				t.Errorf("segment %d: %v", i, err)
			}
		}
	}

	t.Run("all", func(t *testing.T) {
		ct := &countingTransport{}
		fe := &Fetcher{Client: &http.Client{Transport: ct}, Secret: f.secret, Retries: 2, RetryDelay: time.Millisecond}
		data, errs := fe.FetchBatch(context.Background(), all, 2)
		check(t, data, errs, nil)
		if n := ct.n.Load(); n != 1 {
			t.Errorf("%d requests, want 1", n)
		}
	})

	t.Run("one missing, the others kept", func(t *testing.T) {
		locs := append([]SpillLocation(nil), all...)
		locs[1].AttemptID = "gone"
		ct := &countingTransport{}
		fe := &Fetcher{Client: &http.Client{Transport: ct}, Secret: f.secret, Retries: 2, RetryDelay: time.Millisecond}
		data, errs := fe.FetchBatch(context.Background(), locs, 2)
		check(t, data, errs, map[int]error{1: ErrNotFound})
		if n := ct.n.Load(); n != 1 {
			t.Errorf("%d requests, want 1 (a missing segment is not retried)", n)
		}
		if !strings.Contains(errs[1].Error(), "gone") || !strings.Contains(errs[1].Error(), f.w.host()) {
			t.Errorf("error %q should name the attempt and the host", errs[1])
		}
	})

	t.Run("announcement differs, version 1", func(t *testing.T) {
		locs := append([]SpillLocation(nil), all...)
		locs[0].Segment.Records++
		locs[2].Segment.CRC ^= 1
		fe := &Fetcher{Secret: f.secret, Retries: 2, RetryDelay: time.Millisecond}
		fe.indexedHosts.Store(f.w.host(), struct{}{})
		data, errs := fe.FetchBatch(context.Background(), locs, 2)
		if !errors.Is(errs[0], ErrSegmentMismatch) || !errors.Is(errs[2], ErrSegmentMismatch) {
			t.Errorf("errors %v, %v; want ErrSegmentMismatch", errs[0], errs[2])
		}
		for _, i := range []int{1, 3} {
			if errs[i] != nil || spill.VerifySegment(data[i], locs[i].Segment) != nil {
				t.Errorf("segment %d: %v", i, errs[i])
			}
		}
	})

	// With version 2 the server reads no index: a segment is its announced
	// byte range, and the CRC32C of what comes back is what tells a wrong
	// range or different bytes (retried as a checksum mismatch); a range
	// past the end of the data file is refused by the server.
	t.Run("announcement differs, version 2", func(t *testing.T) {
		locs := append([]SpillLocation(nil), all...)
		locs[0].Segment.Records++ // the bytes at the announced place are served
		locs[1].Segment.CRC ^= 1
		locs[2].Segment.Offset-- // a byte early: the CRC fails
		locs[3].Segment.Offset += 1 << 20
		ct := &countingTransport{}
		fe := &Fetcher{Client: &http.Client{Transport: ct}, Secret: f.secret, Retries: 1, RetryDelay: time.Millisecond}
		data, errs := fe.FetchBatch(context.Background(), locs, 2)
		if errs[0] != nil || !bytes.Equal(data[0], mustFetch(t, f, all[0])) {
			t.Errorf("segment 0: %v", errs[0])
		}
		for _, i := range []int{1, 2} {
			if !errors.Is(errs[i], ErrChecksum) || data[i] != nil {
				t.Errorf("segment %d: error %v, want ErrChecksum", i, errs[i])
			}
		}
		if errs[3] == nil || !strings.Contains(errs[3].Error(), "truncated") || data[3] != nil {
			t.Errorf("segment 3, past the file's end: error %v, want the server's refusal", errs[3])
		}
		if n := ct.n.Load(); n != 2 {
			t.Errorf("%d requests, want 2 (the three failed segments asked for again in one)", n)
		}
	})

	t.Run("server of version 1", func(t *testing.T) {
		g := newBatchFixture(t)
		var refused atomic.Int32
		g.w.setOverride(func(w http.ResponseWriter, r *http.Request, real http.Handler) {
			body, err := io.ReadAll(r.Body)
			if err != nil {
				t.Error(err)
			}
			if r.URL.Path == BatchPath && len(body) > 4 && body[4] != batchVersionIndexed {
				// What a server of version 1 answers.
				refused.Add(1)
				http.Error(w, "bad request: shuffle: malformed batch: not a batch request (magic or version)", http.StatusBadRequest)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			real.ServeHTTP(w, r)
		})
		locs := []SpillLocation{g.locOf("a0", 0, 2), g.locOf("a0", 1, 2), g.locOf("a1", 0, 2)}
		ct := &countingTransport{}
		fe := &Fetcher{Client: &http.Client{Transport: ct}, Secret: g.secret, Retries: 2, RetryDelay: time.Millisecond}
		for round := range 2 {
			got, errs := fe.FetchBatch(context.Background(), locs, 2)
			for i := range locs {
				if errs[i] != nil || spill.VerifySegment(got[i], locs[i].Segment) != nil {
					t.Errorf("round %d, segment %d: %v", round, i, errs[i])
				}
			}
		}
		// One refused request, then version 1 for this host from then on.
		if n, r := ct.n.Load(), refused.Load(); n != 3 || r != 1 {
			t.Errorf("%d requests, %d refused; want 3 and 1", n, r)
		}
	})

	t.Run("impostor", func(t *testing.T) {
		fe := &Fetcher{Secret: []byte("other"), Retries: 2, RetryDelay: time.Millisecond}
		_, errs := fe.FetchBatch(context.Background(), all, 2)
		for i, err := range errs {
			if !errors.Is(err, ErrUnauthorized) {
				t.Errorf("segment %d: %v, want ErrUnauthorized", i, err)
			}
		}
	})

	t.Run("corrupt segment retried alone", func(t *testing.T) {
		g := newBatchFixture(t)
		path := filepath.Join(g.dir, spill.DataFileName(1))
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		seg := g.segs["a0/1"][2]
		data[seg.Offset+seg.Length/2] ^= 0x40
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		locs := []SpillLocation{g.locOf("a0", 0, 2), g.locOf("a0", 1, 2), g.locOf("a1", 0, 2)}
		fe := &Fetcher{Secret: g.secret, Retries: 2, RetryDelay: time.Millisecond}
		got, errs := fe.FetchBatch(context.Background(), locs, 2)
		if !errors.Is(errs[1], ErrChecksum) || !strings.Contains(errs[1].Error(), "failed 3 times") {
			t.Errorf("error %v, want ErrChecksum after 3 tries", errs[1])
		}
		for _, i := range []int{0, 2} {
			if errs[i] != nil || spill.VerifySegment(got[i], locs[i].Segment) != nil {
				t.Errorf("segment %d: %v", i, errs[i])
			}
		}
		for key, want := range map[string]int{"a0/0/2": 1, "a0/1/2": 3, "a1/0/2": 1} {
			if n := g.w.count(key); n != want {
				t.Errorf("%s asked for %d times, want %d", key, n, want)
			}
		}
	})

	t.Run("reply cut short", func(t *testing.T) {
		g := newBatchFixture(t)
		var calls atomic.Int32
		first := g.segs["a0/0"][2].Length
		g.w.setOverride(func(w http.ResponseWriter, r *http.Request, real http.Handler) {
			if calls.Add(1) > 1 {
				real.ServeHTTP(w, r)
				return
			}
			// The first reply breaks in the middle of the second frame.
			rec := httptest.NewRecorder()
			real.ServeHTTP(rec, r)
			for k, v := range rec.Header() {
				w.Header()[k] = v
			}
			w.WriteHeader(rec.Code)
			w.Write(rec.Body.Bytes()[:int(first)+40])
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler)
		})
		locs := []SpillLocation{g.locOf("a0", 0, 2), g.locOf("a0", 1, 2), g.locOf("a0", 2, 2)}
		fe := &Fetcher{Secret: g.secret, Retries: 1, RetryDelay: time.Millisecond}
		got, errs := fe.FetchBatch(context.Background(), locs, 2)
		for i := range locs {
			if errs[i] != nil || spill.VerifySegment(got[i], locs[i].Segment) != nil {
				t.Errorf("segment %d: %v", i, errs[i])
			}
		}
		for key, want := range map[string]int{"a0/0/2": 1, "a0/1/2": 2, "a0/2/2": 2} {
			if n := g.w.count(key); n != want {
				t.Errorf("%s asked for %d times, want %d", key, n, want)
			}
		}
	})

	t.Run("mixed hosts refused", func(t *testing.T) {
		locs := append([]SpillLocation(nil), all[:2]...)
		locs[1].Host = "127.0.0.1:1"
		fe := &Fetcher{Secret: f.secret}
		_, errs := fe.FetchBatch(context.Background(), locs, 2)
		for i, err := range errs {
			if err == nil || !strings.Contains(err.Error(), "internal error") {
				t.Errorf("segment %d: %v, want an internal error", i, err)
			}
		}
	})
}

// FuzzDecodeBatchRequest: any body either is refused with ErrBadBatch or
// decodes to a request that encodes and decodes to itself.
func FuzzDecodeBatchRequest(f *testing.F) {
	for _, r := range []BatchRequest{
		{Job: "job_1", Reduce: 3, At: 1764115200000, Items: []BatchItem{{Attempt: "attempt_1_m_000001_0", Spill: 0}, {Attempt: "attempt_1_m_000002_1", Spill: 4}}},
		{Job: "j", Items: []BatchItem{{Attempt: "a", Spill: 0}}},
		{Version: 1, Job: "j", Items: []BatchItem{{Attempt: "a", Spill: 0}}},
		{Job: "job_1", Reduce: 7, At: 1, Items: []BatchItem{{"attempt_1_m_000001_0", 3, 4096, 825}, {"attempt_1_m_000001_0", 4, 0, 1 << 31}}},
	} {
		b, err := EncodeBatchRequest(r)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("GMSB\x01\x01j\x00\x00\xff\xff\xff\xff\x0f"))
	f.Add([]byte("GMSB\x02\x01j\x00\x00\x01\x01a\x00\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01\x05"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		req, err := DecodeBatchRequest(b)
		if err != nil {
			if !errors.Is(err, ErrBadBatch) {
				t.Fatalf("error %v is not ErrBadBatch", err)
			}
			return
		}
		again, err := EncodeBatchRequest(req)
		if err != nil {
			t.Fatalf("decoded request %+v does not encode: %v", req, err)
		}
		req2, err := DecodeBatchRequest(again)
		if err != nil || !reflect.DeepEqual(req, req2) {
			t.Fatalf("round trip: %+v, %v; want %+v", req2, err, req)
		}
	})
}

// FuzzBatchReply: whatever a server with the job's secret replies, a
// batched fetch, of either version, neither panics nor returns a segment
// that does not verify against its announcement.
func FuzzBatchReply(f *testing.F) {
	fx := newBatchFixture(f)
	locs := []SpillLocation{fx.locOf("a0", 0, 2), fx.locOf("a1", 0, 2), fx.locOf("a0", 1, 2)}
	// Seeds: the real server's replies of both versions, and pieces of them.
	for _, version := range []int{batchVersionIndexed, BatchVersion} {
		req := BatchRequest{Version: version, Job: "j", Reduce: 2, At: time.Now().UnixMilli()}
		for _, l := range locs {
			req.Items = append(req.Items, BatchItem{l.AttemptID, l.Spill, l.Segment.Offset, l.Segment.Length})
		}
		body, err := EncodeBatchRequest(req)
		if err != nil {
			f.Fatal(err)
		}
		rec := httptest.NewRecorder()
		hreq := httptest.NewRequest("POST", BatchPath, bytes.NewReader(body))
		hreq.Header.Set(HashHeader, BatchRequestHash(fx.secret, body))
		NewHandler(fx.w, fx.w, nil).ServeHTTP(rec, hreq)
		real := rec.Body.Bytes()
		if rec.Code != 200 || len(real) < 20 {
			f.Fatalf("seed reply of version %d: %d, %d bytes", version, rec.Code, len(real))
		}
		f.Add(real)
		f.Add(real[:len(real)/2])
	}
	f.Add([]byte("GMSR\x01\x01\x00\x03\x02abc\x00"))
	f.Add([]byte("GMSR\x01\x00\xff\xff\xff\xff\xff\xff\xff\xff\x7f"))
	f.Add([]byte("GMSR\x02\x00abc\x01\x02no\x00"))
	var reply atomic.Pointer[[]byte]
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(ReplyHashHeader, ReplyHash(fx.secret, r.Header.Get(HashHeader)))
		w.Write(*reply.Load())
	}))
	f.Cleanup(srv.Close)
	for i := range locs {
		locs[i].Host = srv.Listener.Addr().String()
	}
	fe := &Fetcher{Secret: fx.secret, Client: srv.Client()}
	fe1 := &Fetcher{Secret: fx.secret, Client: srv.Client()}
	fe1.indexedHosts.Store(locs[0].Host, struct{}{})
	f.Fuzz(func(t *testing.T, b []byte) {
		reply.Store(&b)
		for _, fe := range []*Fetcher{fe, fe1} {
			data, errs := fe.FetchBatch(context.Background(), locs, 2)
			for i := range locs {
				if errs[i] != nil {
					if data[i] != nil {
						t.Fatalf("segment %d: data and error %v", i, errs[i])
					}
					continue
				}
				if err := spill.VerifySegment(data[i], locs[i].Segment); err != nil {
					t.Fatalf("segment %d returned without verifying: %v", i, err)
				}
			}
		}
	})
}

// BenchmarkBatchHandler measures the server's cost of a segment: batches
// of 64 small segments (one per spill file, as a reduce asks for them)
// answered by the handler into a discarding writer.
func BenchmarkBatchHandler(b *testing.B) {
	const spills = 64
	dir := b.TempDir()
	w := &worker{secrets: map[string][]byte{"j": []byte("s")}, dirs: map[string]string{"j/a": dir}}
	items := make([]BatchItem, spills)
	for k, seg := range writeSmallSpills(b, dir, spills) {
		items[k] = BatchItem{"a", k, seg.Offset, seg.Length}
	}
	h := NewHandler(w, w, nil)
	body, err := EncodeBatchRequest(BatchRequest{Job: "j", Reduce: 0, At: time.Now().UnixMilli(), Items: items})
	if err != nil {
		b.Fatal(err)
	}
	hash := BatchRequestHash([]byte("s"), body)
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest("POST", BatchPath, bytes.NewReader(body))
		req.Header.Set(HashHeader, hash)
		rec := &discardWriter{h: http.Header{}}
		h.ServeHTTP(rec, req)
		if rec.code != 200 || rec.n < spills*800 {
			b.Fatalf("status %d, %d bytes", rec.code, rec.n)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*spills), "ns/segment")
}

type discardWriter struct {
	h    http.Header
	code int
	n    int
}

func (d *discardWriter) Header() http.Header { return d.h }
func (d *discardWriter) WriteHeader(c int)   { d.code = c }
func (d *discardWriter) Write(p []byte) (int, error) {
	if d.code == 0 {
		d.code = 200
	}
	d.n += len(p)
	return len(p), nil
}

// TestSegmentArena: a batch's small segments share allocations of at most
// arenaBytes, a large one gets its own, and no buffer can grow into or be
// written by another.
func TestSegmentArena(t *testing.T) {
	many := make([]int64, 70)
	for i := range many {
		many[i] = 15 << 10
	}
	tests := []struct {
		name    string
		lengths []int64
		allocs  float64 // allocations of the buffers
	}{
		{"small ones share one block", []int64{825, 825, 0, 4000}, 1},
		{"large ones alone", []int64{arenaSegmentBytes, 100, 1 << 20}, 3},
		{"blocks of at most arenaBytes", many, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			segs := make([]fetchItem, len(tc.lengths))
			idx := make([]int, len(tc.lengths))
			for i, n := range tc.lengths {
				segs[i].seg.Length = n
				idx[i] = i
			}
			var bufs [][]byte
			allocs := testing.AllocsPerRun(20, func() {
				a := newSegmentArena(segs, idx)
				bufs = bufs[:0]
				for _, n := range tc.lengths {
					bufs = append(bufs, a.take(n))
				}
			})
			if want := tc.allocs; allocs != want {
				t.Errorf("%v allocations, want %v", allocs, want)
			}
			for i, b := range bufs {
				if int64(len(b)) != tc.lengths[i] {
					t.Fatalf("buffer %d: len %d, want %d", i, len(b), tc.lengths[i])
				}
				for j := range b {
					b[j] = byte(i + 1)
				}
			}
			for i, b := range bufs {
				for _, c := range b {
					if c != byte(i+1) {
						t.Fatalf("buffer %d was written through another", i)
					}
				}
			}
		})
	}
}

// TestFrameHeaderPaths: a served frame's header decoded from the reader's
// buffer (decodeFrameHeader) gives what reading it field by field gives
// (a reader that returns one byte at a time leaves nothing buffered),
// values, errors and the bytes consumed alike.
func TestFrameHeaderPaths(t *testing.T) {
	ok := appendFrameHeader(nil, spill.SegmentInfo{Length: 825, RawLength: 900, Records: 8, CRC: 0xdeadbeef})
	big := appendFrameHeader(nil, spill.SegmentInfo{Length: 1 << 40, RawLength: 1 << 41, Records: 1 << 30, CRC: 1})
	for _, tc := range []struct {
		name string
		b    []byte
	}{
		{"ok", ok},
		{"ok, then more", append(append([]byte{}, ok...), 0x01, 0x02)},
		{"large values", big},
		{"longer than announced", appendFrameHeader(nil, spill.SegmentInfo{Length: 5000})},
		{"field out of range", append([]byte{frameOK}, binary.AppendUvarint(nil, 1<<63)...)},
		{"varint overflow", []byte{frameOK, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}},
		{"truncated crc", ok[:len(ok)-2]},
		{"truncated field", ok[:2]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			read := func(r io.Reader) (frame, string, int) {
				fr := newFrameReader(r, batchVersionIndexed)
				defer fr.release()
				f, err := fr.next(4096)
				rest, _ := io.ReadAll(fr.r)
				msg := ""
				if err != nil {
					msg = err.Error()
				}
				return f, msg, len(rest)
			}
			f1, e1, n1 := read(bytes.NewReader(tc.b))
			f2, e2, n2 := read(iotest.OneByteReader(bytes.NewReader(tc.b)))
			if f1 != f2 || e1 != e2 || n1 != n2 {
				t.Errorf("buffered: %+v, %q, %d left; byte by byte: %+v, %q, %d left", f1, e1, n1, f2, e2, n2)
			}
		})
	}
}

// mustFetch fetches one segment with the single-segment endpoint.
func mustFetch(t *testing.T, f *batchFixture, loc SpillLocation) []byte {
	t.Helper()
	b, err := (&Fetcher{Secret: f.secret}).Fetch(context.Background(), loc, 2)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestReadServedFrames: the version 2 fast path reads served frames into
// shared blocks (large segments into their own), checks each CRC32C, and
// stops at the first frame that is not a served one, or at a cut reply,
// handing back the bytes it read past the frames it finished.
func TestReadServedFrames(t *testing.T) {
	seg := func(n int, b byte) []byte { return bytes.Repeat([]byte{b}, n) }
	payloads := [][]byte{seg(825, 'a'), seg(arenaSegmentBytes, 'b'), seg(10, 'c'), seg(0, 'd'), seg(300, 'e')}
	segs := make([]fetchItem, len(payloads))
	idx := make([]int, len(payloads))
	var full []byte
	for i, p := range payloads {
		segs[i].seg = spill.SegmentInfo{Length: int64(len(p)), CRC: crc32.Checksum(p, castagnoli)}
		idx[i] = i
		full = append(append(full, frameOK), p...)
	}
	notFound := appendFrameFailure(nil, frameNotFound, "gone")
	// The reply with frame 2 not found instead of served.
	at2 := 1 + 825 + 1 + arenaSegmentBytes
	missing := append(append(append([]byte(nil), full[:at2]...), notFound...), full[at2+1+10:]...)
	tests := []struct {
		name     string
		reply    []byte
		corrupt  int // a segment whose announced CRC is wrong; -1 none
		next     int
		rest     []byte
		err      bool
		verified []int
	}{
		{"all served", full, -1, 5, nil, false, []int{0, 1, 2, 3, 4}},
		{"one corrupt", full, 4, 5, nil, false, []int{0, 1, 2, 3}},
		{"not found in the middle", missing, -1, 2, missing[at2:], true, []int{0, 1}}, // the block's read ran into the reply's end
		{"cut in a block", full[:at2+5], -1, 2, full[at2 : at2+5], true, []int{0, 1}},
		{"cut in a large segment", full[:900], -1, 1, nil, true, []int{0}},
		{"empty", nil, -1, 0, nil, true, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := append([]fetchItem(nil), segs...)
			if tc.corrupt >= 0 {
				l[tc.corrupt].seg.CRC ^= 1
			}
			data, errs := make([][]byte, len(l)), make([]error, len(l))
			next, rest, err := readServedFrames(bytes.NewReader(tc.reply), "h", l, idx, data, errs)
			if next != tc.next || !bytes.Equal(rest, tc.rest) || (err != nil) != tc.err {
				t.Fatalf("next %d, rest of %d bytes, err %v; want %d, %d bytes, error %t", next, len(rest), err, tc.next, len(tc.rest), tc.err)
			}
			for i := range l {
				ok := slices.Contains(tc.verified, i)
				if ok != (data[i] != nil || l[i].seg.Length == 0 && i < next && errs[i] == nil) {
					t.Errorf("segment %d: data %t, error %v; want verified %t", i, data[i] != nil, errs[i], ok)
				}
				if ok && !bytes.Equal(data[i], payloads[i]) {
					t.Errorf("segment %d: wrong bytes", i)
				}
				if i == tc.corrupt && !errors.Is(errs[i], ErrChecksum) {
					t.Errorf("segment %d: error %v, want ErrChecksum", i, errs[i])
				}

			}
		})
	}
}

// BenchmarkFetchBatch measures a small segment's cost on both sides of a
// batched fetch: requests of 1,000 segments of about 825 bytes (one per
// spill file, as make bench-shuffle's reduces ask for them) from the real
// handler on loopback, in this process, read and verified by FetchBatch.
// Its CPU profile splits the two sides by function.
func BenchmarkFetchBatch(b *testing.B) {
	const spills = 1000
	dir := b.TempDir()
	w := &worker{secrets: map[string][]byte{"j": []byte("s")}, dirs: map[string]string{"j/a": dir}}
	srv := httptest.NewServer(NewHandler(w, w, nil))
	defer srv.Close()
	locs := make([]SpillLocation, spills)
	for k, seg := range writeSmallSpills(b, dir, spills) {
		locs[k] = SpillLocation{JobID: "j", Spill: k, AttemptID: "attempt_202611260000_0001_m_000001_0", Host: srv.Listener.Addr().String(), Segment: seg}
	}
	w.dirs["j/attempt_202611260000_0001_m_000001_0"] = dir
	tr := NewTransport(1)
	defer tr.CloseIdleConnections()
	fe := &Fetcher{Client: &http.Client{Transport: tr}, Secret: []byte("s")}
	b.ReportAllocs()
	for b.Loop() {
		data, errs := fe.FetchBatch(context.Background(), locs, 0)
		for i, err := range errs {
			if err != nil || len(data[i]) != int(locs[i].Segment.Length) {
				b.Fatalf("segment %d: %v", i, err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*spills), "ns/segment")
}

// writeSmallSpills writes spills 0 to n-1 in dir, each of two partitions:
// partition 0 one record of an 800-byte random printable value (a segment
// of about 825 bytes, as make bench-shuffle's), partition 1 a tiny one. It
// returns each spill's partition 0.
func writeSmallSpills(b *testing.B, dir string, n int) []spill.SegmentInfo {
	rng := rand.New(rand.NewPCG(1, 2))
	out := make([]spill.SegmentInfo, n)
	for k := range n {
		v := make([]byte, 800)
		for i := range v {
			v[i] = byte(' ' + rng.IntN(95))
		}
		out[k] = writeSpillFiles(b, dir, k, [][]kv{{{"key", string(v)}}, {{"k2", "x"}}})[0]
	}
	return out
}
