package shuffle

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"gomr/mr"
	"gomr/spill"
)

// kv is one record in tests.
type kv struct{ k, v string }

func sortKVs(kvs []kv) {
	slices.SortFunc(kvs, func(a, b kv) int {
		if c := cmp.Compare(a.k, b.k); c != 0 {
			return c
		}
		return cmp.Compare(a.v, b.v)
	})
}

// encodeSegment writes recs (sorted by the caller) as one segment.
func encodeSegment(t testing.TB, recs []kv, blockSize int) ([]byte, spill.SegmentInfo) {
	t.Helper()
	var buf bytes.Buffer
	sw := spill.NewSegmentWriter(&buf, blockSize)
	for _, r := range recs {
		if err := sw.Write([]byte(r.k), []byte(r.v)); err != nil {
			t.Fatalf("write segment: %v", err)
		}
	}
	info, err := sw.Close()
	if err != nil {
		t.Fatalf("close segment: %v", err)
	}
	return buf.Bytes(), info
}

// decodeSegment reads every record of a segment.
func decodeSegment(t testing.TB, data []byte, seg spill.SegmentInfo) []kv {
	t.Helper()
	return drain(t, spill.NewSegmentReader(bytes.NewReader(data), seg))
}

func drain(t testing.TB, it spill.Iterator) []kv {
	t.Helper()
	var out []kv
	for it.Next() {
		out = append(out, kv{string(it.Key()), string(it.Value())})
	}
	if err := it.Err(); err != nil {
		t.Fatalf("iterate: %v", err)
	}
	return out
}

// writeSpillFiles writes spill k of an attempt by hand: one segment per
// partition (each sorted by the caller), the data file and the index.
func writeSpillFiles(t testing.TB, dir string, k int, parts [][]kv) []spill.SegmentInfo {
	t.Helper()
	var data []byte
	segs := make([]spill.SegmentInfo, len(parts))
	for p, recs := range parts {
		b, info := encodeSegment(t, recs, 256)
		info.Offset = int64(len(data))
		data = append(data, b...)
		segs[p] = info
	}
	if err := os.WriteFile(filepath.Join(dir, spill.DataFileName(k)), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := spill.WriteIndex(filepath.Join(dir, spill.IndexFileName(k)), segs); err != nil {
		t.Fatal(err)
	}
	return segs
}

// randomKVs returns n random records with keys from a small alphabet, so
// that keys repeat.
func randomKVs(rng *rand.Rand, n int) []kv {
	out := make([]kv, n)
	for i := range out {
		out[i] = kv{
			k: fmt.Sprintf("key%04d", rng.IntN(500)),
			v: fmt.Sprintf("value-%d-%x", i, rng.Uint64()),
		}
	}
	return out
}

// worker is a fake TaskTracker: job secrets, attempt spill directories, and
// a shuffle server on loopback that counts requests.
type worker struct {
	mu                    sync.Mutex
	secrets               map[string][]byte
	dirs                  map[string]string // job/attempt -> dir
	requests              map[string]int    // attempt/spill/reduce -> count
	inFlight, maxInFlight int
	served                int64
	outcomes              map[string]int // WithOutcome's counts
	httpRequests          map[string]int // by URL path
	srv                   *httptest.Server
	// override, if set, serves requests instead of the shuffle handler,
	// which it is given.
	override func(w http.ResponseWriter, r *http.Request, real http.Handler)
}

func (w *worker) setOverride(f func(w http.ResponseWriter, r *http.Request, real http.Handler)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.override = f
}

func (w *worker) JobSecret(job string) ([]byte, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	s, ok := w.secrets[job]
	return s, ok
}

func (w *worker) SpillDir(job, attempt string) (string, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	d, ok := w.dirs[job+"/"+attempt]
	if !ok {
		return "", fmt.Errorf("no attempt %s of job %s here", attempt, job)
	}
	return d, nil
}

func (w *worker) addAttempt(job, attempt, dir string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.dirs[job+"/"+attempt] = dir
}

func (w *worker) host() string { return w.srv.Listener.Addr().String() }

func (w *worker) count(key string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.requests[key]
}

func newWorker(t testing.TB, job string, secret []byte) *worker {
	t.Helper()
	w := &worker{
		secrets:  map[string][]byte{job: secret},
		dirs:     map[string]string{},
		requests: map[string]int{},
		outcomes: map[string]int{},

		httpRequests: map[string]int{},
	}
	h := NewHandler(w, w, nil, WithServedBytes(func(_ string, n int64) {
		w.mu.Lock()
		w.served += n
		w.mu.Unlock()
	}), WithOutcome(func(o string) {
		w.mu.Lock()
		w.outcomes[o]++
		w.mu.Unlock()
	}))
	w.srv = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		// Count each segment asked for, by attempt/spill/reduce, in a
		// single request or in a batch (whose body is put back).
		// A request for index entries (version 3) is counted apart, as
		// "entries:" keys and under the path "entries".
		var keys []string
		path := r.URL.Path
		if r.URL.Path == BatchPath {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			if req, err := DecodeBatchRequest(body); err == nil {
				prefix := ""
				if req.Version == batchVersionEntries {
					prefix, path = "entries:", "entries"
				}
				for _, it := range req.Items {
					keys = append(keys, fmt.Sprintf("%s%s/%d/%d", prefix, it.Attempt, it.Spill, req.Reduce))
				}
			}
		} else {
			q := r.URL.Query()
			keys = append(keys, q.Get("attempt")+"/"+q.Get("spill")+"/"+q.Get("reduce"))
		}
		w.mu.Lock()
		for _, k := range keys {
			w.requests[k]++
		}
		w.httpRequests[path]++
		w.inFlight++
		w.maxInFlight = max(w.maxInFlight, w.inFlight)
		override := w.override
		w.mu.Unlock()
		defer func() {
			w.mu.Lock()
			w.inFlight--
			w.mu.Unlock()
		}()
		if override != nil {
			override(rw, r, h)
			return
		}
		h.ServeHTTP(rw, r)
	}))
	t.Cleanup(w.srv.Close)
	return w
}

// runMap produces the spills of one map task with the spill package: the
// records are emitted in order into a buffer small enough to spill several
// times. It returns the spills in order.
func runMap(t testing.TB, dir string, recs []kv, reduces int, bufferBytes int64) []spill.SpillInfo {
	t.Helper()
	var spills []spill.SpillInfo
	b, err := spill.NewBuffer(spill.Options{
		BufferBytes:   bufferBytes,
		SpillPercent:  0.8,
		NumPartitions: reduces,
		Dir:           dir,
		BlockSize:     512,
		OnSpill: func(si spill.SpillInfo) error {
			spills = append(spills, si)
			return nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if err := b.Emit([]byte(r.k), []byte(r.v)); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	return spills
}

// partitionOf returns the records of recs that go to reduce r.
func partitionOf(recs []kv, r, reduces int) []kv {
	var out []kv
	for _, x := range recs {
		if (mr.HashPartitioner{}).Partition([]byte(x.k), reduces) == r {
			out = append(out, x)
		}
	}
	return out
}

// fakeSource is an EventSource fed by the test.
type fakeSource struct {
	mu       sync.Mutex
	changed  chan struct{} // closed and replaced when events are appended
	events   []Event
	failures []SpillLocation
	causes   []error
	onFail   func(s *fakeSource, loc SpillLocation) // called unlocked
	pollErr  error
}

func newFakeSource(evs ...Event) *fakeSource {
	return &fakeSource{changed: make(chan struct{}), events: evs}
}

func (s *fakeSource) add(evs ...Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, evs...)
	close(s.changed)
	s.changed = make(chan struct{})
}

func (s *fakeSource) MapEvents(ctx context.Context, from int) ([]Event, error) {
	for {
		s.mu.Lock()
		if s.pollErr != nil {
			s.mu.Unlock()
			return nil, s.pollErr
		}
		if from < len(s.events) {
			out := slices.Clone(s.events[from:])
			s.mu.Unlock()
			return out, nil
		}
		ch := s.changed
		s.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-ch:
		}
	}
}

func (s *fakeSource) ReportFetchFailure(ctx context.Context, loc SpillLocation, cause error) error {
	if cause == nil {
		return errors.New("fake source: failure reported without a cause")
	}
	s.mu.Lock()
	s.failures = append(s.failures, loc)
	s.causes = append(s.causes, cause)
	f := s.onFail
	s.mu.Unlock()
	if f != nil {
		f(s, loc)
	}
	return nil
}

func (s *fakeSource) reported() ([]SpillLocation, []error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.failures), slices.Clone(s.causes)
}

// withoutSegments returns evs with their SpillReady events' segments
// taken out, as a JobTracker that announces spills, not segments, sends
// them.
func withoutSegments(evs []Event) []Event {
	out := slices.Clone(evs)
	for i := range out {
		if out[i].Kind == SpillReady {
			out[i].Location.Segment, out[i].Location.SegmentUnknown = spill.SegmentInfo{}, true
		}
	}
	return out
}

// announce returns the SpillReady events of a map attempt's spills for
// reduce r.
func announce(job string, m int, attempt, host string, spills []spill.SpillInfo, r int) []Event {
	evs := make([]Event, len(spills))
	for i, si := range spills {
		evs[i] = Event{Kind: SpillReady, Location: SpillLocation{
			JobID: job, MapTask: m, Spill: si.Index, Final: si.Final,
			AttemptID: attempt, Host: host, Segment: si.Partitions[r],
		}}
	}
	return evs
}
