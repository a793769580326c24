package shuffle

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"gomr/spill"
)

// entriesReply asks the fixture's server, through its handler, for the
// index entries of items for reduce, and decodes the reply.
func entriesReply(t *testing.T, f *batchFixture, reduce int, items ...BatchItem) []frame {
	t.Helper()
	body, err := EncodeBatchRequest(BatchRequest{Version: batchVersionEntries, Job: "j", Reduce: reduce, At: time.Now().UnixMilli(), Items: items})
	if err != nil {
		t.Fatal(err)
	}
	resp, raw := f.post(t, http.MethodPost, body, BatchRequestHash(f.secret, body))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %s: %s", resp.Status, raw)
	}
	if got, want := resp.Header.Get(ReplyHashHeader), ReplyHash(f.secret, BatchRequestHash(f.secret, body)); got != want {
		t.Fatalf("reply hash %q, want %q", got, want)
	}
	if got := resp.ContentLength; got != int64(len(raw)) {
		t.Errorf("Content-Length %d, body of %d bytes", got, len(raw))
	}
	frames, n, err := decodeEntries(raw, len(items))
	if err != nil || n != len(items) {
		t.Fatalf("decoded %d of %d entries: %v", n, len(items), err)
	}
	return frames
}

// TestServeEntries: a request of version 3 gets, for each spill it names,
// this reduce's index entry (offset included) or why there is none, and
// no segment's bytes.
func TestServeEntries(t *testing.T) {
	f := newBatchFixture(t)
	frames := entriesReply(t, f, 2,
		BatchItem{Attempt: "a0", Spill: 1}, BatchItem{Attempt: "gone", Spill: 0}, BatchItem{Attempt: "a0", Spill: 0},
		BatchItem{Attempt: "a0", Spill: 9}, BatchItem{Attempt: "a1", Spill: 0}, BatchItem{Attempt: "a0", Spill: 2})
	want := []struct {
		status byte
		seg    spill.SegmentInfo
		msg    string
	}{
		{frameOK, f.segs["a0/1"][2], ""},
		{frameNotFound, spill.SegmentInfo{}, "unknown attempt gone"},
		{frameOK, f.segs["a0/0"][2], ""},
		{frameNotFound, spill.SegmentInfo{}, "unknown spill 9 of attempt a0"},
		{frameOK, f.segs["a1/0"][2], ""},
		{frameOK, f.segs["a0/2"][2], ""},
	}
	for i, w := range want {
		if got := frames[i]; got.status != w.status || got.seg != w.seg || got.msg != w.msg {
			t.Errorf("entry %d: %+v, want status %d, %+v, %q", i, got, w.status, w.seg, w.msg)
		}
	}
	if f.segs["a0/2"][2].Offset == 0 {
		t.Fatal("the fixture's last segment starts at 0: the offset is not tested")
	}
	// The empty partition's entry is sent too: the reduce then knows it
	// has nothing to fetch.
	if got := entriesReply(t, f, 1, BatchItem{Attempt: "a0", Spill: 1})[0]; got.status != frameOK || got.seg != f.segs["a0/1"][1] || got.seg.Records != 0 {
		t.Errorf("empty partition's entry %+v, want %+v", got, f.segs["a0/1"][1])
	}
	if got := entriesReply(t, f, 3, BatchItem{Attempt: "a0", Spill: 1})[0]; got.status != frameBadRequest || !strings.Contains(got.msg, "reduce 3 out of range: the spill has 3 partitions") {
		t.Errorf("reduce out of range: %+v", got)
	}
}

// TestFetchBatchUnknownSegments: FetchBatch of locations announced
// without their segments reads their entries from the server in one
// request, then fetches and verifies the bytes in one more; a location the
// server does not have fails alone, with ErrNotFound.
func TestFetchBatchUnknownSegments(t *testing.T) {
	f := newBatchFixture(t)
	missing := f.locOf("a0", 0, 2)
	missing.Spill = 9
	known := []SpillLocation{f.locOf("a0", 0, 2), f.locOf("a0", 1, 2), f.locOf("a1", 0, 2), f.locOf("a0", 2, 2), missing}
	locs := withoutSegments(eventsOf(known))
	unknown := make([]SpillLocation, len(locs))
	for i := range locs {
		unknown[i] = locs[i].Location
	}
	ct := &countingTransport{}
	fe := &Fetcher{Client: &http.Client{Transport: ct}, Secret: f.secret, Retries: 2, RetryDelay: time.Millisecond}
	data, errs := fe.FetchBatch(context.Background(), unknown, 2)
	for i := range known[:4] {
		if errs[i] != nil {
			t.Errorf("segment %d: %v", i, errs[i])
			continue
		}
		if err := spill.VerifySegment(data[i], known[i].Segment); err != nil {
			t.Errorf("segment %d: %v", i, err)
		}
	}
	if !errors.Is(errs[4], ErrNotFound) || !strings.Contains(errs[4].Error(), "unknown spill 9 of attempt a0") || data[4] != nil {
		t.Errorf("missing spill: data %v, error %v; want ErrNotFound naming the spill", data[4] != nil, errs[4])
	}
	if n := ct.n.Load(); n != 2 {
		t.Errorf("%d requests, want 2 (the entries, then the bytes)", n)
	}
}

// TestFetchUnknownFromOldServer: a server that does not know version 3
// answers 400; the segments fail at once (no retry can help) with an
// error that says what the server refused.
func TestFetchUnknownFromOldServer(t *testing.T) {
	f := newBatchFixture(t)
	f.w.setOverride(func(w http.ResponseWriter, r *http.Request, real http.Handler) {
		http.Error(w, "bad request: shuffle: malformed batch: batch request of version 3, this server knows 1 and 2", http.StatusBadRequest)
	})
	ct := &countingTransport{}
	fe := &Fetcher{Client: &http.Client{Transport: ct}, Secret: f.secret, Retries: 3, RetryDelay: time.Millisecond}
	loc := f.locOf("a0", 0, 2)
	loc.Segment, loc.SegmentUnknown = spill.SegmentInfo{}, true
	_, errs := fe.FetchBatch(context.Background(), []SpillLocation{loc}, 2)
	if errs[0] == nil || !strings.Contains(errs[0].Error(), "refused a request for index entries") || !strings.Contains(errs[0].Error(), "version 3") {
		t.Errorf("error %v, want one saying the server refused the index entries' request", errs[0])
	}
	if n := ct.n.Load(); n != 1 {
		t.Errorf("%d requests, want 1 (not retried)", n)
	}
}

// eventsOf returns SpillReady events of locs.
func eventsOf(locs []SpillLocation) []Event {
	evs := make([]Event, len(locs))
	for i, l := range locs {
		evs[i] = Event{Kind: SpillReady, Location: l}
	}
	return evs
}

// FuzzDecodeEntries: whatever a server with the job's secret replies to a
// request for index entries, resolving neither panics nor sets an entry
// out of range, and every item ends resolved or with an error.
func FuzzDecodeEntries(f *testing.F) {
	fx := newBatchFixture(f)
	items := []BatchItem{{Attempt: "a0", Spill: 0}, {Attempt: "gone", Spill: 0}, {Attempt: "a0", Spill: 2}}
	body, err := EncodeBatchRequest(BatchRequest{Version: batchVersionEntries, Job: "j", Reduce: 2, At: time.Now().UnixMilli(), Items: items})
	if err != nil {
		f.Fatal(err)
	}
	rec := httptest.NewRecorder()
	hreq := httptest.NewRequest("POST", BatchPath, bytes.NewReader(body))
	hreq.Header.Set(HashHeader, BatchRequestHash(fx.secret, body))
	NewHandler(fx.w, fx.w, nil).ServeHTTP(rec, hreq)
	real := rec.Body.Bytes()
	if rec.Code != 200 {
		f.Fatalf("seed reply: %d", rec.Code)
	}
	f.Add(real)
	f.Add(real[:len(real)/2])
	f.Add([]byte("GMSR\x03\x00\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01\x01\x00\x00\x00\x00\x00\x00"))
	f.Add([]byte("GMSR\x03\x07"))
	f.Fuzz(func(t *testing.T, b []byte) {
		frames, n, err := decodeEntries(b, len(items))
		if n > len(items) || len(frames) != n {
			t.Fatalf("%d frames, n=%d, for %d items", len(frames), n, len(items))
		}
		if n < len(items) && err == nil {
			t.Fatalf("%d of %d entries decoded without an error", n, len(items))
		}
		for _, fm := range frames {
			if fm.status == frameOK && checkEntry(fm.seg) != nil {
				t.Fatalf("entry out of range decoded: %+v", fm.seg)
			}
		}
	})
}
