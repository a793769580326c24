package shuffle

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"gomr/spill"
)

func TestRequestHash(t *testing.T) {
	s := []byte("secret")
	base := RequestHash(s, "job1", "att1", 2, 3, 7)
	if base != RequestHash(s, "job1", "att1", 2, 3, 7) {
		t.Fatal("RequestHash is not deterministic")
	}
	others := map[string]string{
		"secret":  RequestHash([]byte("secreT"), "job1", "att1", 2, 3, 7),
		"job":     RequestHash(s, "job2", "att1", 2, 3, 7),
		"attempt": RequestHash(s, "job1", "att2", 2, 3, 7),
		"spill":   RequestHash(s, "job1", "att1", 3, 3, 7),
		"reduce":  RequestHash(s, "job1", "att1", 2, 4, 7),
		// The same characters split differently between job and attempt.
		"split": RequestHash(s, "job1a", "tt1", 2, 3, 7),
		// Spill and reduce swapped.
		"swap": RequestHash(s, "job1", "att1", 3, 2, 7),
		"time": RequestHash(s, "job1", "att1", 2, 3, 8),
	}
	for name, h := range others {
		if h == base {
			t.Errorf("changing %s does not change the hash", name)
		}
	}
	if ReplyHash(s, base) == base || ReplyHash(s, base) == ReplyHash([]byte("x"), base) {
		t.Error("ReplyHash does not depend on the secret or equals the request hash")
	}
}

// serverFixture is one worker serving spill 0 of attempt "a0" of job "j"
// with three partitions (the middle one empty).
type serverFixture struct {
	w      *worker
	secret []byte
	dir    string
	parts  [][]kv
	segs   []spill.SegmentInfo
}

func newServerFixture(t testing.TB) *serverFixture {
	t.Helper()
	f := &serverFixture{secret: []byte("job secret"), dir: t.TempDir()}
	f.w = newWorker(t, "j", f.secret)
	f.w.addAttempt("j", "a0", f.dir)
	f.parts = [][]kv{
		{{"a", "1"}, {"b", "2"}, {"b", "3"}},
		nil,
		{{"x", strings.Repeat("v", 3000)}, {"y", "4"}},
	}
	f.segs = writeSpillFiles(t, f.dir, 0, f.parts)
	return f
}

func (f *serverFixture) get(t *testing.T, path, query, hash, method string, at int64) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, f.w.srv.URL+path+"?"+query, nil)
	if err != nil {
		t.Fatal(err)
	}
	if hash != "" {
		req.Header.Set(HashHeader, hash)
	}
	req.Header.Set(TimeHeader, strconv.FormatInt(at, 10))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, body
}

func TestHandler(t *testing.T) {
	f := newServerFixture(t)
	data, err := os.ReadFile(filepath.Join(f.dir, spill.DataFileName(0)))
	if err != nil {
		t.Fatal(err)
	}
	q := func(job, attempt, spillIdx, reduce string) string {
		v := url.Values{}
		v.Set("job", job)
		v.Set("attempt", attempt)
		v.Set("spill", spillIdx)
		v.Set("reduce", reduce)
		return v.Encode()
	}
	now := time.Now().UnixMilli()
	good := func(job, attempt string, k, r int) string { return RequestHash(f.secret, job, attempt, k, r, now) }
	old := now - 2*DefaultRequestWindow.Milliseconds()
	tests := []struct {
		name   string
		path   string
		method string
		query  string
		hash   string
		status int
		reduce int   // for 200: which segment
		at     int64 // the time sent; 0: now
	}{
		{"segment 0", Path, "GET", q("j", "a0", "0", "0"), good("j", "a0", 0, 0), 200, 0, 0},
		{"empty segment", Path, "GET", q("j", "a0", "0", "1"), good("j", "a0", 0, 1), 200, 1, 0},
		{"segment 2", Path, "GET", q("j", "a0", "0", "2"), good("j", "a0", 0, 2), 200, 2, 0},
		{"no hash", Path, "GET", q("j", "a0", "0", "0"), "", 401, 0, 0},
		{"hash with another secret", Path, "GET", q("j", "a0", "0", "0"), RequestHash([]byte("guess"), "j", "a0", 0, 0, now), 401, 0, 0},
		{"time changed after signing", Path, "GET", q("j", "a0", "0", "0"), good("j", "a0", 0, 0), 401, 0, now + 1},
		{"replayed after the window", Path, "GET", q("j", "a0", "0", "0"), RequestHash(f.secret, "j", "a0", 0, 0, old), 401, 0, old},
		{"from the future", Path, "GET", q("j", "a0", "0", "0"), RequestHash(f.secret, "j", "a0", 0, 0, now-old+now), 401, 0, now - old + now},
		{"hash of another reduce", Path, "GET", q("j", "a0", "0", "0"), good("j", "a0", 0, 2), 401, 0, 0},
		{"garbage hash", Path, "GET", q("j", "a0", "0", "0"), "not base64 at all", 401, 0, 0},
		{"unknown job", Path, "GET", q("k", "a0", "0", "0"), good("k", "a0", 0, 0), 401, 0, 0},
		{"unknown attempt", Path, "GET", q("j", "a9", "0", "0"), good("j", "a9", 0, 0), 404, 0, 0},
		{"unknown spill", Path, "GET", q("j", "a0", "7", "0"), good("j", "a0", 7, 0), 404, 0, 0},
		{"reduce out of range", Path, "GET", q("j", "a0", "0", "3"), good("j", "a0", 0, 3), 400, 0, 0},
		{"negative reduce", Path, "GET", q("j", "a0", "0", "-1"), good("j", "a0", 0, -1), 400, 0, 0},
		{"spill not a number", Path, "GET", q("j", "a0", "x", "0"), good("j", "a0", 0, 0), 400, 0, 0},
		{"missing attempt", Path, "GET", "job=j&spill=0&reduce=0", good("j", "", 0, 0), 400, 0, 0},
		{"attempt with a path", Path, "GET", q("j", "../a0", "0", "0"), good("j", "../a0", 0, 0), 400, 0, 0},
		{"wrong path", "/other", "GET", q("j", "a0", "0", "0"), good("j", "a0", 0, 0), 404, 0, 0},
		{"POST", Path, "POST", q("j", "a0", "0", "0"), good("j", "a0", 0, 0), 405, 0, 0},
	}
	var wantServed int64
	wantOutcomes := map[string]int{}
	for _, tc := range tests {
		wantOutcomes[map[int]string{200: OutcomeServed, 400: OutcomeBadRequest, 401: OutcomeUnauthorized,
			404: OutcomeNotFound, 405: OutcomeBadRequest}[tc.status]]++
		t.Run(tc.name, func(t *testing.T) {
			at := tc.at
			if at == 0 {
				at = now
			}
			resp, body := f.get(t, tc.path, tc.query, tc.hash, tc.method, at)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d (body %q)", resp.StatusCode, tc.status, body)
			}
			if tc.status != 200 {
				if resp.Header.Get(SegmentHeader) != "" || resp.Header.Get(ReplyHashHeader) != "" {
					t.Errorf("refused request got segment or reply headers: %v", resp.Header)
				}
				if tc.status == 401 && string(body) != "unauthorized\n" {
					t.Errorf("401 body %q says more than unauthorized", body)
				}
				return
			}
			seg := f.segs[tc.reduce]
			if got := string(body); got != string(data[seg.Offset:seg.Offset+seg.Length]) {
				t.Errorf("body differs from the data file range [%d, %d)", seg.Offset, seg.Offset+seg.Length)
			}
			if resp.ContentLength != seg.Length {
				t.Errorf("Content-Length %d, want %d", resp.ContentLength, seg.Length)
			}
			if got, want := resp.Header.Get(ReplyHashHeader), ReplyHash(f.secret, tc.hash); got != want {
				t.Errorf("reply hash %q, want %q", got, want)
			}
			var info spill.SegmentInfo
			if err := json.Unmarshal([]byte(resp.Header.Get(SegmentHeader)), &info); err != nil {
				t.Fatalf("segment header: %v", err)
			}
			if info != seg {
				t.Errorf("segment header %+v, want %+v", info, seg)
			}
			if got := decodeSegment(t, body, seg); fmt.Sprint(got) != fmt.Sprint(f.parts[tc.reduce]) {
				t.Errorf("records %v, want %v", got, f.parts[tc.reduce])
			}
			wantServed += seg.Length
		})
	}
	f.w.mu.Lock()
	served, outcomes := f.w.served, maps.Clone(f.w.outcomes)
	f.w.mu.Unlock()
	if served != wantServed {
		t.Errorf("metrics callback counted %d bytes, want %d", served, wantServed)
	}
	if !maps.Equal(outcomes, wantOutcomes) {
		t.Errorf("outcomes %v, want %v", outcomes, wantOutcomes)
	}
}

// TestOutcomeWriter checks the outcomes of the responses TestHandler
// cannot make: a copy cut short and a 500.
func TestOutcomeWriter(t *testing.T) {
	tests := []struct {
		code int
		cut  bool
		want string
	}{
		{0, false, OutcomeServed},
		{200, false, OutcomeServed},
		{200, true, OutcomeCutShort},
		{500, false, OutcomeError},
		{401, false, OutcomeUnauthorized},
		{404, false, OutcomeNotFound},
		{405, false, OutcomeBadRequest},
	}
	for _, tc := range tests {
		w := &outcomeWriter{ResponseWriter: httptest.NewRecorder()}
		if tc.code != 0 {
			w.WriteHeader(tc.code)
			w.WriteHeader(299) // superfluous: the first stands
		}
		w.cut = tc.cut
		if got := w.outcome(); got != tc.want {
			t.Errorf("status %d, cut %v: outcome %s, want %s", tc.code, tc.cut, got, tc.want)
		}
	}
}
