package shuffle

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"testing"
	"time"

	"gomr/mr"
	"gomr/spill"
)

// rangeTestDef is a job definition for the range fetch tests: its keys
// are ordered in reverse, so that "after" must follow the job's order, not
// bytes.Compare.
const rangeTestDef = "shuffle-range-test"

func init() {
	mr.RegisterJob(&mr.JobDef{Name: rangeTestDef,
		Mapper:  func(mr.TaskContext) (mr.Mapper, error) { return nil, errors.New("not run") },
		Input:   mr.TextInput{},
		Output:  mr.TextOutput{},
		Compare: func(a, b []byte) int { return bytes.Compare(b, a) },
	})
}

func TestSegmentAfter(t *testing.T) {
	recs := []kv{{"a", "1"}, {"b", "2"}, {"b", "3"}, {"c", "4"}, {"e", "5"}}
	data, seg := encodeSegment(t, recs, 16)
	for _, tc := range []struct {
		after string
		cmp   mr.Comparator
		want  []kv
		same  bool // the segment as it is
	}{
		{"", bytes.Compare, recs, true},
		{"a", bytes.Compare, recs[1:], false},
		{"b", bytes.Compare, recs[3:], false},
		{"bz", bytes.Compare, recs[3:], false},
		{"e", bytes.Compare, nil, false},
		{"z", bytes.Compare, nil, false},
	} {
		got, info, err := segmentAfter(data, seg, []byte(tc.after), tc.cmp)
		if err != nil {
			t.Fatalf("after %q: %v", tc.after, err)
		}
		if err := spill.VerifySegment(got, info); err != nil {
			t.Fatalf("after %q: the range segment does not verify: %v", tc.after, err)
		}
		if kvs := decodeSegment(t, got, info); !slices.Equal(kvs, tc.want) || info.Records != int64(len(tc.want)) {
			t.Errorf("after %q: %v (%d records), want %v", tc.after, kvs, info.Records, tc.want)
		}
		if same := bytes.Equal(got, data); same != tc.same {
			t.Errorf("after %q: segment sent as it is = %v, want %v", tc.after, same, tc.same)
		}
	}
}

// A bounded range (a piece of a reduce scale-up split): the records after
// one key through another.
func TestSegmentRange(t *testing.T) {
	recs := []kv{{"a", "1"}, {"b", "2"}, {"b", "3"}, {"c", "4"}, {"e", "5"}}
	data, seg := encodeSegment(t, recs, 16)
	for _, tc := range []struct {
		after, upto string
		want        []kv
		same        bool
	}{
		{"", "z", recs, true},
		{"", "b", recs[:3], false},
		{"a", "c", recs[1:4], false},
		{"a", "bz", recs[1:3], false},
		{"b", "b", nil, false},
		{"c", "d", nil, false},
	} {
		got, info, err := segmentRange(data, seg, []byte(tc.after), []byte(tc.upto), true, bytes.Compare)
		if err != nil {
			t.Fatalf("(%q, %q]: %v", tc.after, tc.upto, err)
		}
		if err := spill.VerifySegment(got, info); err != nil {
			t.Fatalf("(%q, %q]: the range segment does not verify: %v", tc.after, tc.upto, err)
		}
		if kvs := decodeSegment(t, got, info); !slices.Equal(kvs, tc.want) || info.Records != int64(len(tc.want)) {
			t.Errorf("(%q, %q]: %v (%d records), want %v", tc.after, tc.upto, kvs, info.Records, tc.want)
		}
		if same := bytes.Equal(got, data); same != tc.same {
			t.Errorf("(%q, %q]: segment sent as it is = %v, want %v", tc.after, tc.upto, same, tc.same)
		}
	}
}

// A range fetch over the shuffle server: the records after the key under
// the job's comparator, authenticated, and refused when the key or the
// definition is changed after signing or unknown.
func TestFetchRange(t *testing.T) {
	f := newServerFixture(t)
	loc := SpillLocation{JobID: "j", MapTask: 0, Spill: 0, AttemptID: "a0", Host: f.w.host(), Segment: f.segs[0]}
	fe := &Fetcher{Secret: f.secret, After: []byte("a"), Def: rangeTestDef + "-bytes"}
	if _, _, err := fe.FetchRange(context.Background(), loc, 0); err == nil {
		t.Fatal("a range fetch naming an unknown job definition succeeded")
	}
	mr.RegisterJob(&mr.JobDef{Name: rangeTestDef + "-bytes",
		Mapper: func(mr.TaskContext) (mr.Mapper, error) { return nil, errors.New("not run") },
		Input:  mr.TextInput{}, Output: mr.TextOutput{}})
	data, info, err := fe.FetchRange(context.Background(), loc, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := decodeSegment(t, data, info); !slices.Equal(got, f.parts[0][1:]) {
		t.Errorf("after a: %v, want %v", got, f.parts[0][1:])
	}
	// Under the reverse order, the keys after "b" are those before it.
	fe.Def = rangeTestDef
	fe.After = []byte("b")
	data, info, err = fe.FetchRange(context.Background(), loc, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := decodeSegment(t, data, info); !slices.Equal(got, f.parts[0][:1]) {
		t.Errorf("after b in reverse order: %v, want %v", got, f.parts[0][:1])
	}
	// The key changed after signing: refused.
	at := time.Now().UnixMilli()
	hash := RangeRequestHash(f.secret, "j", "a0", 0, 0, at, []byte("a"), rangeTestDef)
	q := url.Values{"job": {"j"}, "attempt": {"a0"}, "spill": {"0"}, "reduce": {"0"}, AfterParam: {"Yg"}, DefParam: {rangeTestDef}}
	if resp, _ := f.get(t, Path, q.Encode(), hash, http.MethodGet, at); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a range request whose key changed after signing: %s, want 401", resp.Status)
	}
	// A whole-segment hash does not sign a range request either.
	if resp, _ := f.get(t, Path, q.Encode(), RequestHash(f.secret, "j", "a0", 0, 0, at), http.MethodGet, at); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a range request with a whole-segment hash: %s, want 401", resp.Status)
	}
	// A bounded range: the upper key is signed; dropped or changed after
	// signing, the request is refused.
	fe.Def, fe.After = rangeTestDef+"-bytes", []byte("")
	all, allInfo, err := (&Fetcher{Secret: f.secret, After: []byte(""), Def: fe.Def}).FetchRange(context.Background(), loc, 0)
	if err != nil {
		t.Fatal(err)
	}
	whole := decodeSegment(t, all, allInfo)
	fe.Upto, fe.Bounded = []byte(whole[0].k), true
	data, info, err = fe.FetchRange(context.Background(), loc, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := decodeSegment(t, data, info); len(got) == 0 || len(got) >= len(whole) || got[len(got)-1].k != whole[0].k {
		t.Errorf("through %q: %v, want the records of that key only, of %v", whole[0].k, got, whole)
	}
	bq := url.Values{"job": {"j"}, "attempt": {"a0"}, "spill": {"0"}, "reduce": {"0"}, AfterParam: {""}, DefParam: {fe.Def}, UptoParam: {"Yg"}}
	bhash := BoundedRangeRequestHash(f.secret, "j", "a0", 0, 0, at, nil, fe.Def, []byte("a"))
	if resp, _ := f.get(t, Path, bq.Encode(), bhash, http.MethodGet, at); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a bounded range request whose upper key changed after signing: %s, want 401", resp.Status)
	}
	bq.Del(UptoParam)
	if resp, _ := f.get(t, Path, bq.Encode(), bhash, http.MethodGet, at); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a bounded range request whose upper key was dropped: %s, want 401", resp.Status)
	}
	q.Del(DefParam)
	if resp, _ := f.get(t, Path, q.Encode(), hash, http.MethodGet, at); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("a range request without %s: %s, want 400", DefParam, resp.Status)
	}
}

// Run with Fetcher.After merges only the records after the key, from
// every spill, fetched one segment a request.
func TestRunRangeFetch(t *testing.T) {
	f := newServerFixture(t)
	mm, err := NewMergeManager(MergeOptions{Dir: t.TempDir(), MemoryBytes: 1 << 20, SegmentLimit: 1 << 19, MergePercent: 0.9, Factor: 10})
	if err != nil {
		t.Fatal(err)
	}
	defer mm.Close()
	src := newFakeSource(Event{Kind: SpillReady, Location: SpillLocation{JobID: "j", MapTask: 0, Spill: 0, Final: true, AttemptID: "a0", Host: f.w.host(), Segment: f.segs[2]}})
	fe := &Fetcher{Secret: f.secret, After: []byte("x"), Def: rangeTestDef + "-run"}
	mr.RegisterJob(&mr.JobDef{Name: fe.Def,
		Mapper: func(mr.TaskContext) (mr.Mapper, error) { return nil, errors.New("not run") },
		Input:  mr.TextInput{}, Output: mr.TextOutput{}})
	counters := mr.NewCounters()
	if err := Run(context.Background(), src, Options{Reduce: 2, NumMaps: 1, Parallel: 1, BatchSegments: 64, Fetcher: fe, Merger: mm, Counters: counters}); err != nil {
		t.Fatal(err)
	}
	it, err := mm.Finish(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := drain(t, it); !slices.Equal(got, f.parts[2][1:]) {
		t.Errorf("merged %v, want %v", got, f.parts[2][1:])
	}
	f.w.mu.Lock()
	n := f.w.httpRequests[Path]
	f.w.mu.Unlock()
	if n != 1 {
		t.Errorf("%d single-segment requests, want 1 (a range fetch is not batched)", n)
	}
	if got, whole := counters.Get(mr.TaskCounterGroup, mr.ReduceShuffleBytes).Value(), f.segs[2].Length; got <= 0 || got >= whole {
		t.Errorf("shuffled %d bytes of a %d-byte segment", got, whole)
	}
}

// MapsAdded raises the maps a shuffle waits for: with one map announced
// and a second added, Run does not end until the second's final spill is
// fetched too.
func TestRunMapsAdded(t *testing.T) {
	f := newServerFixture(t)
	f.w.addAttempt("j", "a1", f.dir) // the same files, as another map's attempt
	loc := func(m int, attempt string) Event {
		return Event{Kind: SpillReady, Location: SpillLocation{JobID: "j", MapTask: m, Spill: 0, Final: true, AttemptID: attempt, Host: f.w.host(), Segment: f.segs[0]}}
	}
	src := newFakeSource(loc(0, "a0"), Event{Kind: MapsAdded, MapTask: 2})
	mm := newTestMerger(t, 1<<20, nil)
	done := make(chan error, 1)
	go func() {
		done <- Run(context.Background(), src, Options{Reduce: 0, NumMaps: 1, Parallel: 1, Fetcher: &Fetcher{Secret: f.secret}, Merger: mm})
	}()
	select {
	case err := <-done:
		t.Fatalf("the shuffle ended (%v) before the added map was fetched", err)
	case <-time.After(200 * time.Millisecond):
	}
	src.add(loc(1, "a1"))
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	it, err := mm.Finish(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := drain(t, it); len(got) != 2*len(f.parts[0]) {
		t.Errorf("merged %d records, want %d (both maps)", len(got), 2*len(f.parts[0]))
	}
}
