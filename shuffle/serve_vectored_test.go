//go:build linux

package shuffle

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"gomr/spill"
)

// vectoredFiles writes the spills of TestBatchReplyVectored: attempt "a"
// with spills 0-3 of 4 partitions of various sizes (spill 3's partition
// 1 of 40 KiB, which goes by sendfile-size rules from its file), and
// attempt "e" with an empty spill 0. It returns each spill's segments.
func vectoredFiles(t *testing.T) (w *worker, dir string, segs [][]spill.SegmentInfo) {
	t.Helper()
	dir, empty := t.TempDir(), t.TempDir()
	w = &worker{secrets: map[string][]byte{"j": []byte("s")}, dirs: map[string]string{"j/a": dir, "j/e": empty}}
	if err := os.WriteFile(filepath.Join(empty, spill.DataFileName(0)), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for k := range 4 {
		parts := [][]kv{{{"a", strings.Repeat("p", 300+k)}}, {{"b", strings.Repeat("q", 20+k)}}, {{"c", "3"}}, {{"d", strings.Repeat("r", 900)}}}
		if k == 3 {
			v := make([]byte, 40<<10) // random: snappy leaves it 40 KiB
			for i := range v {
				v[i] = byte(rng.Uint32())
			}
			parts[1] = []kv{{"b", string(v)}}
		}
		segs = append(segs, writeSpillFiles(t, dir, k, parts))
	}
	return w, dir, segs
}

// debugLog is a logger at level debug into a buffer that tests read.
type debugLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *debugLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *debugLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func (l *debugLog) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// TestBatchReplyVectored: over a plain TCP connection (ConnContext), a
// reply whose served segments all come from the data cache is written with
// writev from the mappings (writeVectored), byte for byte the reply the
// buffered path writes (the same request into a recorder), of the length
// announced, keeping the connection alive for the next request; a reply
// with a segment from a file goes the buffered way.
func TestBatchReplyVectored(t *testing.T) {
	w, _, segs := vectoredFiles(t)
	seg := func(k, p int) BatchItem {
		s := segs[k][p]
		return BatchItem{Attempt: "a", Spill: k, Offset: s.Offset, Length: s.Length}
	}
	var many []BatchItem
	for k := range 4 {
		for p := range 4 {
			if k != 3 || p != 1 {
				many = append(many, seg(k, p))
			}
		}
	}
	tests := []struct {
		name     string
		items    []BatchItem
		vectored bool
	}{
		{"small segments", many, true},
		{"a reply under 512 bytes", []BatchItem{seg(0, 2)}, true},
		{"failures and an empty spill among them", []BatchItem{
			seg(0, 0),
			{Attempt: "x", Spill: 0, Offset: 0, Length: 5},                                     // unknown attempt
			{Attempt: "a", Spill: 0, Offset: segs[0][3].Offset, Length: segs[0][3].Length + 1}, // past the end
			{Attempt: "a", Spill: 9, Offset: 0, Length: 5},                                     // no such spill
			{Attempt: "e", Spill: 0, Offset: 0, Length: 0},                                     // empty
			seg(1, 3), seg(2, 0),
			{Attempt: "x", Spill: 1, Offset: 0, Length: 5}, // a failure last
		}, true},
		{"only failures", []BatchItem{{Attempt: "x", Spill: 0, Offset: 0, Length: 5}}, true},
		{"a segment from its file", []BatchItem{seg(0, 0), seg(3, 1), seg(1, 1)}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var log debugLog
			h := NewHandler(w, w, log.logger())
			srv := httptest.NewUnstartedServer(h)
			srv.Config.ConnContext = ConnContext
			srv.Start()
			var want []byte
			for round := range 3 {
				body, err := EncodeBatchRequest(BatchRequest{Version: BatchVersion, Job: "j", Reduce: 1, At: time.Now().UnixMilli(), Items: tc.items})
				if err != nil {
					t.Fatal(err)
				}
				if round == 0 {
					// The buffered path's reply, from a handler of its own.
					req := httptest.NewRequest("POST", BatchPath, bytes.NewReader(body))
					req.Header.Set(HashHeader, BatchRequestHash([]byte("s"), body))
					rec := httptest.NewRecorder()
					NewHandler(w, w, nil).ServeHTTP(rec, req)
					if rec.Code != 200 {
						t.Fatalf("recorder: status %d", rec.Code)
					}
					want = rec.Body.Bytes()
				}
				req, err := http.NewRequest("POST", srv.URL+BatchPath, bytes.NewReader(body))
				if err != nil {
					t.Fatal(err)
				}
				req.Header.Set(HashHeader, BatchRequestHash([]byte("s"), body))
				reused := false
				req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
					GotConn: func(ci httptrace.GotConnInfo) { reused = ci.Reused },
				}))
				resp, err := srv.Client().Do(req)
				if err != nil {
					t.Fatalf("round %d: %v", round, err)
				}
				got, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil || resp.StatusCode != 200 {
					t.Fatalf("round %d: status %d, %v", round, resp.StatusCode, err)
				}
				if resp.ContentLength != int64(len(got)) {
					t.Errorf("round %d: Content-Length %d, %d bytes", round, resp.ContentLength, len(got))
				}
				if !bytes.Equal(got, want) {
					t.Errorf("round %d: reply of %d bytes differs from the buffered one of %d", round, len(got), len(want))
				}
				if round > 0 && !reused {
					t.Errorf("round %d: the connection was not reused", round)
				}
			}
			srv.Close() // the handlers have returned: their pins are given back
			if got := strings.Count(log.String(), "vectored=true"); (got == 3) != tc.vectored || (got != 0) != tc.vectored {
				t.Errorf("%d of 3 replies vectored, want vectored %t:\n%s", got, tc.vectored, log.String())
			}
			h.(*handler).data.mu.Lock()
			defer h.(*handler).data.mu.Unlock()
			for _, f := range h.(*handler).data.files {
				if f.refs != 0 {
					t.Errorf("%s: %d pins left", f.path, f.refs)
				}
			}
		})
	}
}

// TestBatchReplyVectoredFault: a cached file truncated after the request
// planned its reply (its mapping's pages gone) fails writeVectored with an
// error, not a crash of the server, whether its bytes are among the first
// ones net/http copies itself (readingMapped turns the fault into an
// error) or among those the kernel copies in writev (EFAULT).
func TestBatchReplyVectoredFault(t *testing.T) {
	for _, tc := range []struct {
		name    string
		first   bool // the truncated file's segment first in the reply
		wantErr error
	}{
		{"in net/http's copy", true, io.ErrUnexpectedEOF},
		{"in writev", false, syscall.EFAULT},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			w := &worker{secrets: map[string][]byte{"j": []byte("s")}, dirs: map[string]string{"j/a": dir}}
			page := os.Getpagesize()
			big := bytes.Repeat([]byte("b"), 4*page) // spill 0: not truncated
			if err := os.WriteFile(filepath.Join(dir, spill.DataFileName(0)), big, 0o644); err != nil {
				t.Fatal(err)
			}
			victim := filepath.Join(dir, spill.DataFileName(1))
			if err := os.WriteFile(victim, bytes.Repeat([]byte("v"), 3*page), 0o644); err != nil {
				t.Fatal(err)
			}
			items := []BatchItem{{Attempt: "a", Spill: 0, Offset: 0, Length: int64(3 * page)}, {Attempt: "a", Spill: 1, Offset: int64(page), Length: int64(page)}}
			if tc.first {
				items[0], items[1] = items[1], items[0]
			}
			h := NewHandler(w, w, nil).(*handler)
			var werr error
			var done bool
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
				p := planBatch(h, BatchRequest{Version: BatchVersion, Job: "j", Reduce: 0, Items: items}, slog.New(slog.DiscardHandler))
				defer p.close()
				rw.Header().Set("Content-Length", itoa(int(p.length)))
				rw.WriteHeader(200)
				if err := os.Truncate(victim, 0); err != nil {
					t.Error(err)
				}
				_, werr, done = p.writeVectored(rw, r)
				if werr != nil {
					panic(http.ErrAbortHandler)
				}
			}))
			srv.Config.ConnContext = ConnContext
			srv.Config.ErrorLog = nil
			srv.Start()
			defer srv.Close()
			resp, err := srv.Client().Post(srv.URL, "application/octet-stream", nil)
			if err == nil {
				_, err = io.ReadAll(resp.Body)
				resp.Body.Close()
			}
			if err == nil {
				t.Error("the client read the whole reply; want a broken connection")
			}
			if !done || !errors.Is(werr, tc.wantErr) {
				t.Errorf("writeVectored: done %t, %v; want an error wrapping %v", done, werr, tc.wantErr)
			}
		})
	}
}
