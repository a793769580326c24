package shuffle

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"gomr/mr"
	"gomr/spill"
)

func newTestMerger(t testing.TB, memory int64, counters *mr.Counters) *MergeManager {
	t.Helper()
	m, err := NewMergeManager(MergeOptions{
		Dir:          t.TempDir(),
		MemoryBytes:  memory,
		SegmentLimit: memory / 4,
		MergePercent: 0.66,
		Factor:       3,
		BlockSize:    1024,
		Counters:     counters,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := m.Close(); err != nil {
			t.Errorf("close merge manager: %v", err)
		}
	})
	return m
}

// checkOutput drains the merged stream, checks it is sorted by key, and
// compares it as a multiset with want.
func checkOutput(t *testing.T, it spill.Iterator, want []kv) {
	t.Helper()
	got := drain(t, it)
	for i := 1; i < len(got); i++ {
		if got[i-1].k > got[i].k {
			t.Fatalf("output not sorted at %d: %q after %q", i, got[i].k, got[i-1].k)
		}
	}
	want = slices.Clone(want)
	sortKVs(got)
	sortKVs(want)
	if len(got) != len(want) {
		t.Fatalf("got %d records, want %d", len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("record %d (sorted): got %v, want %v", i, got[i], want[i])
		}
	}
}

// mapJob is a set of map tasks whose spills were written with the spill
// package, each by attempt "m<i>_a" in its own directory.
type mapJob struct {
	job     string
	secret  []byte
	reduces int
	recs    [][]kv              // per map
	spills  [][]spill.SpillInfo // per map
	dirs    []string
}

func newMapJob(t *testing.T, maps, reduces, recsPerMap int, seed uint64) *mapJob {
	t.Helper()
	j := &mapJob{job: "job_1", secret: []byte("s3cret"), reduces: reduces}
	rng := rand.New(rand.NewPCG(seed, 1))
	for m := 0; m < maps; m++ {
		recs := randomKVs(rng, recsPerMap)
		dir := t.TempDir()
		j.recs = append(j.recs, recs)
		j.spills = append(j.spills, runMap(t, dir, recs, reduces, 4096))
		j.dirs = append(j.dirs, dir)
		if len(j.spills[m]) < 3 {
			t.Fatalf("map %d made %d spills; the test wants several", m, len(j.spills[m]))
		}
	}
	return j
}

func (j *mapJob) attempt(m int) string { return fmt.Sprintf("m%d_a", m) }

func (j *mapJob) want(r int) []kv {
	var out []kv
	for _, recs := range j.recs {
		out = append(out, partitionOf(recs, r, j.reduces)...)
	}
	return out
}

// fetchMode is a way Run fetches: one segment per request, or batches
// bounded in count or in bytes; with the segments announced, or not
// (unknown: read from the server's index first).
type fetchMode struct {
	name          string
	batchSegments int
	batchBytes    int64
	unknown       bool
}

// events returns evs as the mode's JobTracker announces them.
func (m fetchMode) events(evs []Event) []Event {
	if m.unknown {
		return withoutSegments(evs)
	}
	return evs
}

var fetchModes = []fetchMode{
	{"single", 0, 0, false},
	{"batch", 16, 0, false},
	{"batch-bytes", 64, 1500, false},
	{"single-unknown", 0, 0, true},
	{"batch-unknown", 16, 0, true},
	{"batch-bytes-unknown", 64, 1500, true},
}

func TestRunEndToEnd(t *testing.T) {
	for _, mode := range fetchModes {
		t.Run(mode.name, func(t *testing.T) { testRunEndToEnd(t, mode) })
	}
}

func testRunEndToEnd(t *testing.T, mode fetchMode) {
	batchSegments, batchBytes := mode.batchSegments, mode.batchBytes
	const maps, reduces, parallel = 4, 3, 3
	j := newMapJob(t, maps, reduces, 600, 7)
	workers := []*worker{newWorker(t, j.job, j.secret), newWorker(t, j.job, j.secret)}
	for m := range maps {
		workers[m%2].addAttempt(j.job, j.attempt(m), j.dirs[m])
	}
	for r := range reduces {
		t.Run(fmt.Sprint("reduce", r), func(t *testing.T) {
			var evs []Event
			var wantBytes int64
			spills := 0
			for m := range maps {
				evs = append(evs, announce(j.job, m, j.attempt(m), workers[m%2].host(), j.spills[m], r)...)
				for _, si := range j.spills[m] {
					wantBytes += si.Partitions[r].Length
					spills++
				}
			}
			evs = mode.events(evs)
			rng := rand.New(rand.NewPCG(uint64(r), 2))
			rng.Shuffle(len(evs), func(a, b int) { evs[a], evs[b] = evs[b], evs[a] })
			// Half the events now, the rest a little later, a few at a time.
			src := newFakeSource(evs[:len(evs)/2]...)
			go func() {
				for i := len(evs) / 2; i < len(evs); i += 3 {
					time.Sleep(2 * time.Millisecond)
					src.add(evs[i:min(i+3, len(evs))]...)
				}
			}()
			counters := mr.NewCounters()
			merger := newTestMerger(t, 8<<10, counters)
			var progress [][2]int
			for _, w := range workers {
				w.mu.Lock()
				w.maxInFlight = 0
				w.mu.Unlock()
			}
			err := Run(context.Background(), src, Options{
				Reduce:        r,
				NumMaps:       maps,
				Parallel:      parallel,
				BatchSegments: batchSegments,
				BatchBytes:    batchBytes,
				Fetcher:       &Fetcher{Secret: j.secret, Retries: 1, RetryDelay: time.Millisecond},
				Merger:        merger,
				Counters:      counters,
				Progress:      func(done, total int) { progress = append(progress, [2]int{done, total}) },
			})
			if err != nil {
				t.Fatal(err)
			}
			it, err := merger.Finish(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			checkOutput(t, it, j.want(r))

			cs := counters.Snapshot()
			g := mr.TaskCounterGroup
			for name, want := range map[string]int64{
				mr.ShuffledMaps:       maps,
				mr.ReduceShuffleBytes: wantBytes,
				mr.FailedShuffle:      0,
				mr.MergedMapOutputs:   int64(spills),
			} {
				if got := cs.Get(g, name); got != want {
					t.Errorf("counter %s = %d, want %d", name, got, want)
				}
			}
			if got, want := progress[len(progress)-1], [2]int{maps, maps}; got != want || len(progress) != maps+1 {
				t.Errorf("progress calls %v, want %d ending with %v", progress, maps+1, want)
			}
			for m := range maps {
				for _, si := range j.spills[m] {
					n := workers[m%2].count(fmt.Sprintf("%s/%d/%d", j.attempt(m), si.Index, r))
					want := 1
					if si.Partitions[r].Records == 0 {
						want = 0
					}
					if n != want {
						t.Errorf("map %d spill %d fetched %d times, want %d", m, si.Index, n, want)
					}
					// A segment announced without its entry has it read
					// once, empty or not; an announced one never.
					n = workers[m%2].count(fmt.Sprintf("entries:%s/%d/%d", j.attempt(m), si.Index, r))
					if want := map[bool]int{true: 1}[mode.unknown]; n != want {
						t.Errorf("map %d spill %d's index entry read %d times, want %d", m, si.Index, n, want)
					}
				}
			}
			for i, w := range workers {
				w.mu.Lock()
				if w.maxInFlight > parallel {
					t.Errorf("worker %d saw %d requests at once, more than Parallel=%d", i, w.maxInFlight, parallel)
				}
				if batchSegments > 1 && w.httpRequests[Path] != 0 {
					t.Errorf("worker %d got %d single-segment requests in batch mode", i, w.httpRequests[Path])
				}
				if batchSegments <= 1 && w.httpRequests[BatchPath] != 0 {
					t.Errorf("worker %d got %d batch requests in single mode", i, w.httpRequests[BatchPath])
				}
				w.mu.Unlock()
			}
			if batchSegments > 1 {
				requests, segments := 0, 0
				for _, w := range workers {
					w.mu.Lock()
					requests += w.httpRequests[BatchPath]
					for _, n := range w.requests {
						segments += n
					}
					w.mu.Unlock()
				}
				if requests*2 > segments {
					t.Errorf("%d batch requests for %d segments: batches of under 2 on average", requests, segments)
				}
			}
			if fails, _ := src.reported(); len(fails) != 0 {
				t.Errorf("failures reported: %v", fails)
			}
		})
	}
}

// TestRunLostTracker: map 1's first attempt ran on a tracker that is gone;
// fetches from it fail and are reported, the JobTracker declares the attempt
// obsolete and announces a re-run on another worker, whose byte-identical
// spills are fetched instead.
func TestRunLostTracker(t *testing.T) {
	for _, mode := range fetchModes {
		t.Run(mode.name, func(t *testing.T) { testRunLostTracker(t, mode) })
	}
}

func testRunLostTracker(t *testing.T, mode fetchMode) {
	batchSegments, batchBytes := mode.batchSegments, mode.batchBytes
	const maps, reduces, r = 2, 2, 1
	j := newMapJob(t, maps, reduces, 500, 11)
	live := newWorker(t, j.job, j.secret)
	dead := newWorker(t, j.job, j.secret)
	deadHost := dead.host()
	dead.srv.Close()
	live.addAttempt(j.job, j.attempt(0), j.dirs[0])

	// The re-run of map 1 on the live worker, in a fresh directory.
	rerunDir := t.TempDir()
	rerun := runMap(t, rerunDir, j.recs[1], reduces, 4096)
	if len(rerun) != len(j.spills[1]) {
		t.Fatalf("re-run made %d spills, first attempt %d: spill boundaries are not deterministic", len(rerun), len(j.spills[1]))
	}
	live.addAttempt(j.job, "m1_b", rerunDir)

	evs := announce(j.job, 0, j.attempt(0), live.host(), j.spills[0], r)
	evs = append(evs, announce(j.job, 1, j.attempt(1), deadHost, j.spills[1], r)...)
	src := newFakeSource(mode.events(evs)...)
	var once sync.Once
	src.onFail = func(s *fakeSource, loc SpillLocation) {
		once.Do(func() {
			s.add(Event{Kind: MapObsolete, MapTask: 1, AttemptID: j.attempt(1)})
			s.add(mode.events(announce(j.job, 1, "m1_b", live.host(), rerun, r))...)
		})
	}
	counters := mr.NewCounters()
	merger := newTestMerger(t, 64<<10, counters)
	err := Run(context.Background(), src, Options{
		Reduce: r, NumMaps: maps, Parallel: 2, BatchSegments: batchSegments, BatchBytes: batchBytes,
		Fetcher:  &Fetcher{Secret: j.secret, Retries: 1, RetryDelay: 5 * time.Millisecond},
		Merger:   merger,
		Counters: counters,
	})
	if err != nil {
		t.Fatal(err)
	}
	it, err := merger.Finish(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	checkOutput(t, it, j.want(r))

	fails, causes := src.reported()
	if len(fails) == 0 {
		t.Fatal("no fetch failure reported")
	}
	for i, loc := range fails {
		if loc.AttemptID != j.attempt(1) || loc.Host != deadHost {
			t.Errorf("failure %d reported for %v, want attempt %s on %s", i, loc, j.attempt(1), deadHost)
		}
		if !strings.Contains(causes[i].Error(), deadHost) {
			t.Errorf("cause %q does not name the host", causes[i])
		}
	}
	cs := counters.Snapshot()
	if got := cs.Get(mr.TaskCounterGroup, mr.FailedShuffle); got != int64(len(fails)) {
		t.Errorf("FAILED_SHUFFLE = %d, want %d (one per reported failure)", got, len(fails))
	}
	if got := cs.Get(mr.ShuffleErrorsGroup, ShuffleErrConnection); got != int64(len(fails)) {
		t.Errorf("Shuffle Errors CONNECTION = %d, want %d", got, len(fails))
	}
	if got := cs.Get(mr.TaskCounterGroup, mr.ShuffledMaps); got != maps {
		t.Errorf("SHUFFLED_MAPS = %d, want %d", got, maps)
	}
	for _, si := range rerun {
		n := live.count(fmt.Sprintf("m1_b/%d/%d", si.Index, r))
		if want := min(1, int(si.Partitions[r].Records)); n != want {
			t.Errorf("re-run spill %d fetched %d times, want %d", si.Index, n, want)
		}
	}
}

// TestRunObsoleteBeforeFetch: a MapObsolete that arrives before anything
// was fetched from the attempt makes its spills wait for a new
// announcement: the obsolete attempt is never asked.
func TestRunObsoleteBeforeFetch(t *testing.T) {
	const r = 0
	j := newMapJob(t, 1, 1, 400, 3)
	w := newWorker(t, j.job, j.secret)
	w.addAttempt(j.job, "m0_a", j.dirs[0])
	w.addAttempt(j.job, "m0_b", j.dirs[0])
	evs := announce(j.job, 0, "m0_a", w.host(), j.spills[0], r)
	evs = append(evs, Event{Kind: MapObsolete, MapTask: 0, AttemptID: "m0_a"})
	src := newFakeSource(evs...)
	go func() {
		time.Sleep(30 * time.Millisecond)
		src.add(announce(j.job, 0, "m0_b", w.host(), j.spills[0], r)...)
	}()
	merger := newTestMerger(t, 64<<10, nil)
	err := Run(context.Background(), src, Options{
		Reduce: r, NumMaps: 1, Parallel: 4,
		Fetcher: &Fetcher{Secret: j.secret},
		Merger:  merger,
	})
	if err != nil {
		t.Fatal(err)
	}
	it, err := merger.Finish(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	checkOutput(t, it, j.want(r))
	for _, si := range j.spills[0] {
		if n := w.count(fmt.Sprintf("m0_a/%d/%d", si.Index, r)); n != 0 {
			t.Errorf("obsolete attempt asked %d times for spill %d", n, si.Index)
		}
		if n := w.count(fmt.Sprintf("m0_b/%d/%d", si.Index, r)); n != 1 {
			t.Errorf("new attempt asked %d times for spill %d, want 1", n, si.Index)
		}
	}
}

// emptyAt announces spill k of map m with an empty segment, which Run takes
// without a request.
func emptyAt(m, k int, final bool, attempt string) Event {
	return Event{Kind: SpillReady, Location: SpillLocation{JobID: "j", MapTask: m, Spill: k, Final: final, AttemptID: attempt, Host: "unused:1"}}
}

func TestRunEventSequences(t *testing.T) {
	tests := []struct {
		name    string
		maps    int
		events  []Event
		wantErr string // "" for success
		nondet  bool
	}{
		{"final first, then the others", 2, []Event{emptyAt(0, 2, true, "a"), emptyAt(1, 0, true, "c"), emptyAt(0, 0, false, "a"), emptyAt(0, 1, false, "b")}, "", false},
		{"same spill announced twice alike", 1, []Event{emptyAt(0, 0, false, "a"), emptyAt(0, 0, false, "b"), emptyAt(0, 1, true, "b")}, "", false},
		{"two different finals", 1, []Event{emptyAt(0, 1, true, "a"), emptyAt(0, 2, true, "b")}, "announced spill 2 as final, but spill 1", true},
		{"spill after the final", 1, []Event{emptyAt(0, 1, true, "a"), emptyAt(0, 3, false, "b")}, "announced spill 3 as not final", true},
		{"final below an announced spill", 1, []Event{emptyAt(0, 3, false, "a"), emptyAt(0, 1, true, "b")}, "but spill 3 (final=false) was announced by attempt a", true},
		{"a withdrawn attempt's final does not bind the re-run", 1, []Event{emptyAt(0, 2, true, "a"), emptyAt(0, 1, false, "a"), {Kind: MapObsolete, MapTask: 0, AttemptID: "a"}, emptyAt(0, 1, true, "b"), emptyAt(0, 0, false, "b")}, "", false},
		{"map out of range", 1, []Event{emptyAt(1, 0, true, "a")}, "the job has 1 maps", false},
		{"obsolete map out of range", 1, []Event{{Kind: MapObsolete, MapTask: -1}}, "the job has 1 maps", false},
		{"negative spill", 1, []Event{emptyAt(0, -1, true, "a")}, "is negative", false},
		{"unknown kind", 1, []Event{{}}, "unknown map event kind EventKind(0)", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			counters := mr.NewCounters()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			err := Run(ctx, newFakeSource(tc.events...), Options{
				NumMaps: tc.maps, Parallel: 2,
				Fetcher:  &Fetcher{},
				Merger:   newTestMerger(t, 1<<10, nil),
				Counters: counters,
			})
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				if got := counters.Snapshot().Get(mr.TaskCounterGroup, mr.ShuffledMaps); got != int64(tc.maps) {
					t.Errorf("SHUFFLED_MAPS = %d, want %d", got, tc.maps)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
			}
			if errors.Is(err, ErrNondeterministic) != tc.nondet {
				t.Errorf("errors.Is(err, ErrNondeterministic) = %t, want %t", !tc.nondet, tc.nondet)
			}
		})
	}
}

// unreachableAt announces spill k of map m with a segment on a host that
// refuses connections, so that every fetch of it fails.
func unreachableAt(t *testing.T, m, k int, final bool, attempt string) Event {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln.Close()
	ev := emptyAt(m, k, final, attempt)
	ev.Location.Host = ln.Addr().String()
	ev.Location.Segment = spill.SegmentInfo{Length: 10, RawLength: 12, Records: 1, CRC: 7}
	return ev
}

func TestRunGivesUp(t *testing.T) {
	src := newFakeSource(unreachableAt(t, 0, 0, true, "a"))
	counters := mr.NewCounters()
	err := Run(context.Background(), src, Options{
		NumMaps: 1, Parallel: 1, MaxFetchFailures: 3,
		Fetcher:  &Fetcher{Retries: 0, RetryDelay: time.Millisecond},
		Merger:   newTestMerger(t, 1<<10, nil),
		Counters: counters,
	})
	if err == nil || !strings.Contains(err.Error(), "giving up after 3 failed fetches from attempt a") {
		t.Fatalf("error %v, want giving up after 3", err)
	}
	fails, _ := src.reported()
	if len(fails) != 3 {
		t.Errorf("%d failures reported, want 3", len(fails))
	}
	if got := counters.Snapshot().Get(mr.TaskCounterGroup, mr.FailedShuffle); got != 3 {
		t.Errorf("FAILED_SHUFFLE = %d, want 3", got)
	}
}

func TestRunCancelAndPollErrors(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(20 * time.Millisecond); cancel() }()
	opts := Options{NumMaps: 1, Parallel: 1, Fetcher: &Fetcher{}, Merger: newTestMerger(t, 1<<10, nil)}
	if err := Run(ctx, newFakeSource(), opts); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled run: error %v, want context.Canceled", err)
	}
	src := newFakeSource()
	src.pollErr = errors.New("jobtracker unreachable")
	if err := Run(context.Background(), src, opts); err == nil || !strings.Contains(err.Error(), "failed 6 times, last: jobtracker unreachable") {
		t.Errorf("poll errors: error %v, want failed 6 times", err)
	}
}

func TestRunOptions(t *testing.T) {
	m := newTestMerger(t, 1<<10, nil)
	tests := []struct {
		name string
		opts Options
		want string
	}{
		{"no fetcher", Options{Parallel: 1, Merger: m}, "Fetcher is nil"},
		{"no merger", Options{Parallel: 1, Fetcher: &Fetcher{}}, "Merger is nil"},
		{"no parallelism", Options{Fetcher: &Fetcher{}, Merger: m}, "Parallel=0"},
		{"negative maps", Options{Parallel: 1, NumMaps: -1, Fetcher: &Fetcher{}, Merger: m}, "NumMaps=-1"},
	}
	for _, tc := range tests {
		if err := Run(context.Background(), newFakeSource(), tc.opts); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
	if err := Run(context.Background(), newFakeSource(), Options{Parallel: 1, Fetcher: &Fetcher{}, Merger: m}); err != nil {
		t.Errorf("zero maps: %v", err)
	}
}

// TestRunFailuresOfOneAttemptAcrossOrigins: Run names a location's attempt
// by an origin id, a new one whenever a map's announcements change attempt,
// so one attempt may have several ids. A spill's failures count from its
// attempt, compared by name: another attempt's announcement of the map's
// next spill, then the first attempt's of the failing spill again (a new
// id for the same attempt), do not start the count again.
func TestRunFailuresOfOneAttemptAcrossOrigins(t *testing.T) {
	ev := unreachableAt(t, 0, 0, false, "a")
	src := newFakeSource(ev)
	var once sync.Once
	src.onFail = func(s *fakeSource, loc SpillLocation) {
		once.Do(func() { s.add(emptyAt(0, 1, false, "b"), ev) })
	}
	err := Run(context.Background(), src, Options{
		NumMaps: 1, Parallel: 1, MaxFetchFailures: 3,
		Fetcher: &Fetcher{Retries: 0, RetryDelay: time.Millisecond},
		Merger:  newTestMerger(t, 1<<10, nil),
	})
	if err == nil || !strings.Contains(err.Error(), "map 0 spill 0: giving up after 3 failed fetches from attempt a") {
		t.Fatalf("error %v, want giving up on spill 0 after 3", err)
	}
	if fails, _ := src.reported(); len(fails) != 3 {
		t.Errorf("%d failures reported, want 3", len(fails))
	}
}

// TestRequestBufs: a request's recycled slices come back as long as the
// next request, with nothing of the last one's results left in them.
func TestRequestBufs(t *testing.T) {
	bufs := &requestBufs{}
	for _, tc := range []struct {
		name string
		n    int
	}{
		{"first", 3},
		{"longer", 8},
		{"shorter", 2},
		{"same", 2},
		{"longest", 1024},
		{"one", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bufs.items = append(bufs.items, make([]fetchItem, tc.n)...)
			bufs.sized(tc.n)
			if len(bufs.items) != tc.n || len(bufs.results) != tc.n || len(bufs.data) != tc.n || len(bufs.errs) != tc.n {
				t.Fatalf("lengths %d %d %d %d, want %d", len(bufs.items), len(bufs.results), len(bufs.data), len(bufs.errs), tc.n)
			}
			for i := range tc.n {
				if bufs.results[i] != (fetchResult{}) || bufs.data[i] != nil || bufs.errs[i] != nil {
					t.Fatalf("element %d not zero: %+v %v %v", i, bufs.results[i], bufs.data[i], bufs.errs[i])
				}
				// What a request leaves behind.
				bufs.results[i] = fetchResult{bytes: 1, err: errors.New("x"), fatal: true}
				bufs.data[i] = []byte{1}
				bufs.errs[i] = errors.New("y")
			}
			bufs.reset()
			if len(bufs.items) != 0 {
				t.Fatalf("items not emptied: %d", len(bufs.items))
			}
			// reset clears the whole of what was used, not only up to
			// the next length.
			for i := range tc.n {
				if bufs.results[:tc.n][i] != (fetchResult{}) || bufs.data[:tc.n][i] != nil || bufs.errs[:tc.n][i] != nil {
					t.Fatalf("element %d kept after reset", i)
				}
			}
		})
	}
}

func TestEveryItem(t *testing.T) {
	for _, n := range []int{1, 2, MaxBatchSegments, MaxBatchSegments + 1} {
		s := everyItem(n)
		if len(s) != n || cap(s) != n {
			t.Fatalf("everyItem(%d): len %d cap %d", n, len(s), cap(s))
		}
		for i, v := range s {
			if v != i {
				t.Fatalf("everyItem(%d)[%d] = %d", n, i, v)
			}
		}
	}
}
