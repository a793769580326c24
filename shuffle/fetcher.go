package shuffle

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"gomr/spill"
)

// Errors a fetch can end with; test them with errors.Is.
var (
	// ErrUnauthorized: the server refused the request (401), or its reply
	// hash was missing or wrong, so it does not hold the job's secret.
	ErrUnauthorized = errors.New("shuffle: authentication failed")
	// ErrNotFound: the server does not have the attempt or spill (404).
	ErrNotFound = errors.New("shuffle: map output not found")
	// ErrChecksum: the fetched bytes do not match the segment's CRC or
	// structure (it also wraps spill.ErrCorrupt).
	ErrChecksum = errors.New("shuffle: checksum mismatch")
	// ErrSegmentMismatch: the server describes the segment differently from
	// its announcement (length, raw length, records or CRC).
	ErrSegmentMismatch = errors.New("shuffle: segment differs from its announcement")
)

// SpillLocation is the location of one spill of one map task as the
// JobTracker announced it, with this reduce's segment of it.
type SpillLocation struct {
	JobID     string
	MapTask   int
	Spill     int
	Final     bool
	AttemptID string
	// Host is the shuffle server's host:port.
	Host string
	// Segment is this reduce's segment as announced; what is fetched is
	// checked against it.
	Segment spill.SegmentInfo
	// SegmentUnknown: the announcement did not carry this reduce's segment
	// (a JobTracker that announces spills, not segments: resolve.go), so
	// Segment is zero until it is read from the serving tracker's index.
	SegmentUnknown bool
}

// String names the spill and where it is, for messages.
func (l SpillLocation) String() string {
	return fmt.Sprintf("job %s map %d spill %d (attempt %s on %s)", l.JobID, l.MapTask, l.Spill, l.AttemptID, l.Host)
}

// Fetcher fetches and verifies segments from shuffle servers.
type Fetcher struct {
	// Client makes the requests; nil means http.DefaultClient, which has no
	// timeout, so set one with a timeout in production.
	Client *http.Client
	// Secret is the job's secret.
	Secret []byte
	// Retries is how many times a transient failure is retried
	// (mapreduce.reduce.shuffle.fetch.retries); negative counts as 0.
	Retries int
	// RetryDelay is the first back-off, doubled after each retry.
	RetryDelay time.Duration
	// After, when not nil, makes Run fetch only the records whose key is
	// after it (FetchRange: the remainder of a split reduce), one
	// segment a request; Def names the job definition whose comparator
	// orders the keys.
	After []byte
	Def   string
	// Upto, when Bounded (with After), makes Run fetch only the records
	// whose key is not after it either (a reduce whose key range ends: a
	// piece of a reduce scale-up split, docs/split.md).
	Upto    []byte
	Bounded bool

	// indexedHosts holds the hosts that refused a batched request of
	// BatchVersion (servers of version 1): FetchBatch asks them with
	// version 1.
	indexedHosts sync.Map
}

// permanentError marks a failure that retrying the same request cannot fix.
type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// Fetch fetches partition reduce of the spill at loc and returns its
// verified on-disk bytes: the server's reply hash must be right, the
// SegmentInfo it sends must equal loc.Segment in Length, RawLength, Records
// and CRC, and the body must pass spill.VerifySegment against loc.Segment.
//
// Network errors, 5xx answers, short bodies and checksum mismatches are
// retried up to Retries times with exponential back-off; a 401, a wrong
// reply hash (ErrUnauthorized), a 404 (ErrNotFound), a 400, or a segment that
// differs from its announcement (ErrSegmentMismatch) are not. The error
// names the location and wraps the cause.
func (f *Fetcher) Fetch(ctx context.Context, loc SpillLocation, reduce int) ([]byte, error) {
	return f.withRetries(ctx, loc, reduce, func() ([]byte, error) { return f.fetchOnce(ctx, loc, reduce) })
}

// withRetries runs one fetch of partition reduce of the spill at loc
// until it succeeds, fails permanently, or has failed Retries+1 times,
// with Fetch's back-off.
func (f *Fetcher) withRetries(ctx context.Context, loc SpillLocation, reduce int, once func() ([]byte, error)) ([]byte, error) {
	retries := max(f.Retries, 0)
	delay := f.RetryDelay
	for attempt := 0; ; attempt++ {
		data, err := once()
		if err == nil {
			return data, nil
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("fetch reduce %d of %v: %w", reduce, loc, ctx.Err())
		}
		var perm *permanentError
		if errors.As(err, &perm) {
			return nil, fmt.Errorf("fetch reduce %d of %v: %w", reduce, loc, perm.err)
		}
		if attempt >= retries {
			return nil, fmt.Errorf("fetch reduce %d of %v: failed %d times, last: %w", reduce, loc, attempt+1, err)
		}
		if delay > 0 {
			t := time.NewTimer(delay)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil, fmt.Errorf("fetch reduce %d of %v: %w", reduce, loc, ctx.Err())
			case <-t.C:
			}
			delay *= 2
		}
	}
}

// client is the HTTP client fetches use.
func (f *Fetcher) client() *http.Client {
	if f.Client == nil {
		return http.DefaultClient
	}
	return f.Client
}

// statusError is the error of a shuffle answer that is not 200 (nil for
// 200): permanent for a 4xx, to retry for the others.
func statusError(resp *http.Response, loc SpillLocation) error {
	switch {
	case resp.StatusCode == http.StatusOK:
		return nil
	case resp.StatusCode == http.StatusUnauthorized:
		return &permanentError{fmt.Errorf("server %s answered 401: %w", loc.Host, ErrUnauthorized)}
	case resp.StatusCode == http.StatusNotFound:
		return &permanentError{fmt.Errorf("server %s answered 404 (%s): %w", loc.Host, errorBody(resp), ErrNotFound)}
	case resp.StatusCode >= 400 && resp.StatusCode < 500:
		return &permanentError{fmt.Errorf("server %s refused the request: %s: %s", loc.Host, resp.Status, errorBody(resp))}
	default:
		return fmt.Errorf("server %s answered %s: %s", loc.Host, resp.Status, errorBody(resp))
	}
}

// URL returns the address of partition reduce of the spill at loc.
func (l SpillLocation) URL(reduce int) string {
	q := url.Values{}
	q.Set("job", l.JobID)
	q.Set("attempt", l.AttemptID)
	q.Set("spill", strconv.Itoa(l.Spill))
	q.Set("reduce", strconv.Itoa(reduce))
	return "http://" + l.Host + Path + "?" + q.Encode()
}

func (f *Fetcher) fetchOnce(ctx context.Context, loc SpillLocation, reduce int) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, loc.URL(reduce), nil)
	if err != nil {
		return nil, &permanentError{fmt.Errorf("build request: %w", err)}
	}
	at := time.Now().UnixMilli()
	hash := RequestHash(f.Secret, loc.JobID, loc.AttemptID, loc.Spill, reduce, at)
	req.Header.Set(HashHeader, hash)
	req.Header.Set(TimeHeader, strconv.FormatInt(at, 10))
	resp, err := f.client().Do(req)
	if err != nil {
		return nil, fmt.Errorf("connect to shuffle server %s: %w", loc.Host, err)
	}
	defer func() {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
	}()
	if err := statusError(resp, loc); err != nil {
		return nil, err
	}
	reply := resp.Header.Get(ReplyHashHeader)
	if reply == "" || !hashEqual(reply, ReplyHash(f.Secret, hash)) {
		return nil, &permanentError{fmt.Errorf("server %s sent a missing or wrong reply hash: %w", loc.Host, ErrUnauthorized)}
	}
	var got spill.SegmentInfo
	if err := json.Unmarshal([]byte(resp.Header.Get(SegmentHeader)), &got); err != nil {
		return nil, &permanentError{fmt.Errorf("server %s sent a bad %s header %q: %w", loc.Host, SegmentHeader, resp.Header.Get(SegmentHeader), err)}
	}
	want := loc.Segment
	if got.Length != want.Length || got.RawLength != want.RawLength || got.Records != want.Records || got.CRC != want.CRC {
		return nil, &permanentError{fmt.Errorf("server %s has length %d, raw length %d, records %d, crc %08x; announced length %d, raw length %d, records %d, crc %08x: %w",
			loc.Host, got.Length, got.RawLength, got.Records, got.CRC, want.Length, want.RawLength, want.Records, want.CRC, ErrSegmentMismatch)}
	}
	if resp.ContentLength != want.Length {
		return nil, fmt.Errorf("server %s sent Content-Length %d for a segment of %d bytes", loc.Host, resp.ContentLength, want.Length)
	}
	data := make([]byte, want.Length)
	if n, err := io.ReadFull(resp.Body, data); err != nil {
		return nil, fmt.Errorf("read segment from %s: got %d of %d bytes: %w", loc.Host, n, want.Length, err)
	}
	if err := spill.VerifySegment(data, want); err != nil {
		return nil, fmt.Errorf("segment from %s: %w: %w", loc.Host, ErrChecksum, err)
	}
	return data, nil
}

// errorBody returns the start of an error response's body, for messages.
func errorBody(resp *http.Response) string {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 256))
	return strings.TrimSpace(string(b))
}
