package shuffle

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"gomr/spill"
)

func (f *serverFixture) loc(reduce int) SpillLocation {
	return SpillLocation{JobID: "j", MapTask: 0, Spill: 0, Final: true, AttemptID: "a0", Host: f.w.host(), Segment: f.segs[reduce]}
}

// countingTransport counts the requests a client makes.
type countingTransport struct{ n atomic.Int32 }

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return http.DefaultTransport.RoundTrip(r)
}

func TestFetch(t *testing.T) {
	f := newServerFixture(t)
	fe := &Fetcher{Secret: f.secret, Retries: 2, RetryDelay: time.Millisecond}
	for r := range f.parts {
		data, err := fe.Fetch(context.Background(), f.loc(r), r)
		if err != nil {
			t.Fatalf("reduce %d: %v", r, err)
		}
		if got := decodeSegment(t, data, f.segs[r]); fmt.Sprint(got) != fmt.Sprint(f.parts[r]) {
			t.Errorf("reduce %d: records %v, want %v", r, got, f.parts[r])
		}
	}
}

func TestFetchRefusals(t *testing.T) {
	f := newServerFixture(t)
	mismatch := f.loc(0)
	mismatch.Segment.Records++
	unknown := f.loc(0)
	unknown.AttemptID = "gone"
	tests := []struct {
		name     string
		secret   string
		loc      SpillLocation
		reduce   int
		want     error
		wantText string
	}{
		{"wrong secret", "forged", f.loc(0), 0, ErrUnauthorized, "401"},
		{"announcement differs", string(f.secret), mismatch, 0, ErrSegmentMismatch, "records 3"},
		{"unknown attempt", string(f.secret), unknown, 0, ErrNotFound, "404"},
		{"reduce out of range", string(f.secret), f.loc(0), 9, nil, "400"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ct := &countingTransport{}
			fe := &Fetcher{Client: &http.Client{Transport: ct}, Secret: []byte(tc.secret), Retries: 3, RetryDelay: time.Millisecond}
			_, err := fe.Fetch(context.Background(), tc.loc, tc.reduce)
			if err == nil {
				t.Fatal("fetch succeeded")
			}
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Errorf("error %v is not %v", err, tc.want)
			}
			if !strings.Contains(err.Error(), tc.wantText) {
				t.Errorf("error %q does not mention %q", err, tc.wantText)
			}
			if n := ct.n.Load(); n != 1 {
				t.Errorf("%d requests, want 1 (no retry)", n)
			}
		})
	}
}

func TestFetchDetectsCorruption(t *testing.T) {
	f := newServerFixture(t)
	path := filepath.Join(f.dir, spill.DataFileName(0))
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	seg := f.segs[2]
	data[seg.Offset+seg.Length/2] ^= 0x40
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	ct := &countingTransport{}
	fe := &Fetcher{Client: &http.Client{Transport: ct}, Secret: f.secret, Retries: 2, RetryDelay: time.Millisecond}
	_, err = fe.Fetch(context.Background(), f.loc(2), 2)
	if !errors.Is(err, ErrChecksum) || !errors.Is(err, spill.ErrCorrupt) {
		t.Fatalf("error %v, want ErrChecksum and spill.ErrCorrupt", err)
	}
	if !strings.Contains(err.Error(), "checksum") || !strings.Contains(err.Error(), "failed 3 times") {
		t.Errorf("error %q should say checksum and failed 3 times", err)
	}
	if n := ct.n.Load(); n != 3 {
		t.Errorf("%d requests, want 3", n)
	}
	// The untouched segment is still fine.
	if _, err := fe.Fetch(context.Background(), f.loc(0), 0); err != nil {
		t.Errorf("reduce 0: %v", err)
	}
}

func TestFetchServerDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	host := ln.Addr().String()
	ln.Close()
	ct := &countingTransport{}
	fe := &Fetcher{Client: &http.Client{Transport: ct}, Secret: []byte("s"), Retries: 3, RetryDelay: 10 * time.Millisecond}
	start := time.Now()
	_, err = fe.Fetch(context.Background(), SpillLocation{JobID: "j", AttemptID: "a", Host: host, Segment: spill.SegmentInfo{Length: 10, Records: 1}}, 0)
	if err == nil {
		t.Fatal("fetch from a closed port succeeded")
	}
	if n := ct.n.Load(); n != 4 {
		t.Errorf("%d requests, want 4", n)
	}
	if d := time.Since(start); d < 70*time.Millisecond {
		t.Errorf("took %v, want at least 10+20+40 ms of back-off", d)
	}
	if !strings.Contains(err.Error(), "failed 4 times") || !strings.Contains(err.Error(), host) {
		t.Errorf("error %q should name the host and the number of tries", err)
	}
	if got := classify(err); got != ShuffleErrConnection {
		t.Errorf("classified as %s, want %s", got, ShuffleErrConnection)
	}

	// Cancellation stops the back-off at once.
	ctx, cancel := context.WithCancel(context.Background())
	fe.RetryDelay = time.Hour
	go func() { time.Sleep(20 * time.Millisecond); cancel() }()
	_, err = fe.Fetch(ctx, SpillLocation{JobID: "j", AttemptID: "a", Host: host}, 0)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("error %v, want context.Canceled", err)
	}
}

// TestFetchTransient: a 503 and a body cut short are retried and the fetch
// then succeeds.
func TestFetchTransient(t *testing.T) {
	f := newServerFixture(t)
	var calls atomic.Int32
	f.w.setOverride(func(w http.ResponseWriter, r *http.Request, real http.Handler) {
		switch calls.Add(1) {
		case 1:
			http.Error(w, "busy", http.StatusServiceUnavailable)
		case 2:
			// Promise the whole segment, send half of it, then hang up.
			rec := httptest.NewRecorder()
			real.ServeHTTP(rec, r)
			for k, v := range rec.Header() {
				w.Header()[k] = v
			}
			w.WriteHeader(rec.Code)
			b := rec.Body.Bytes()
			w.Write(b[:len(b)/2])
			panic(http.ErrAbortHandler)
		default:
			real.ServeHTTP(w, r)
		}
	})
	fe := &Fetcher{Secret: f.secret, Retries: 2, RetryDelay: time.Millisecond}
	data, err := fe.Fetch(context.Background(), f.loc(2), 2)
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(data)) != f.segs[2].Length || calls.Load() != 3 {
		t.Errorf("got %d bytes after %d calls, want %d bytes after 3", len(data), calls.Load(), f.segs[2].Length)
	}
}

// TestFetchImpostor: a server that does not know the secret cannot forge
// the reply hash.
func TestFetchImpostor(t *testing.T) {
	f := newServerFixture(t)
	f.w.setOverride(func(w http.ResponseWriter, r *http.Request, real http.Handler) {
		rec := httptest.NewRecorder()
		real.ServeHTTP(rec, r)
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.Header().Set(ReplyHashHeader, ReplyHash([]byte("guess"), r.Header.Get(HashHeader)))
		w.Header().Set("Content-Length", strconv.Itoa(rec.Body.Len()))
		w.WriteHeader(rec.Code)
		w.Write(rec.Body.Bytes())
	})
	fe := &Fetcher{Secret: f.secret, Retries: 2, RetryDelay: time.Millisecond}
	_, err := fe.Fetch(context.Background(), f.loc(0), 0)
	if !errors.Is(err, ErrUnauthorized) || !strings.Contains(err.Error(), "reply hash") {
		t.Fatalf("error %v, want ErrUnauthorized about the reply hash", err)
	}
}

func TestClassify(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{fmt.Errorf("x: %w: %w", ErrChecksum, spill.ErrCorrupt), ShuffleErrChecksum},
		{fmt.Errorf("x: %w", ErrSegmentMismatch), ShuffleErrWrongLen},
		{fmt.Errorf("x: %w", ErrNotFound), ShuffleErrNotFound},
		{fmt.Errorf("x: %w", ErrUnauthorized), ShuffleErrAuth},
		{fmt.Errorf("x: %w", &net.OpError{Op: "dial", Err: errors.New("refused")}), ShuffleErrConnection},
		{errors.New("server answered 503"), ShuffleErrIO},
	}
	for _, tc := range tests {
		if got := classify(tc.err); got != tc.want {
			t.Errorf("classify(%v) = %s, want %s", tc.err, got, tc.want)
		}
	}
}

// TestFetchTruncatedDataFile: an index pointing past the end of its data
// file is a server error (500), retried, then reported.
func TestFetchTruncatedDataFile(t *testing.T) {
	f := newServerFixture(t)
	path := filepath.Join(f.dir, spill.DataFileName(0))
	if err := os.Truncate(path, f.segs[2].Offset+1); err != nil {
		t.Fatal(err)
	}
	ct := &countingTransport{}
	fe := &Fetcher{Client: &http.Client{Transport: ct}, Secret: f.secret, Retries: 1, RetryDelay: time.Millisecond}
	_, err := fe.Fetch(context.Background(), f.loc(2), 2)
	if err == nil || !strings.Contains(err.Error(), "500") || !strings.Contains(err.Error(), "truncated") {
		t.Fatalf("error %v, want a 500 saying the data file is truncated", err)
	}
	if n := ct.n.Load(); n != 2 {
		t.Errorf("%d requests, want 2", n)
	}
}
