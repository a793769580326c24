package shuffle

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"gomr/mr"
	"gomr/spill"
)

// TestRunRerunOfWithdrawnMap: map 0's first attempt (m0_a) is withdrawn
// (MapObsolete) after the reduce fetched some of its spills, and a re-run
// (m0_b) announces its own, which may differ. The reduce goes on when
// what it fetched from m0_a is part of the re-run's output (then its input
// is exactly the re-run's), and stops with ErrNondeterministic naming
// both attempts otherwise; a reduce that fetched nothing from m0_a, or
// all of m0_a's spills, is unaffected.
func TestRunRerunOfWithdrawnMap(t *testing.T) {
	const r, reduces = 0, 1
	rng := rand.New(rand.NewPCG(5, 9))
	recsA := randomKVs(rng, 500)
	dirA := t.TempDir()
	spillsA := runMap(t, dirA, recsA, reduces, 4096)
	nA := len(spillsA)
	if nA < 4 {
		t.Fatalf("first attempt made %d spills; the test wants at least 4", nA)
	}
	// A re-run whose first record has another value of the same length:
	// the same spills, records and lengths, another CRC in spill 0.
	sameLen := slices.Clone(recsA)
	v := []byte(sameLen[0].v)
	v[len(v)-1] ^= 1
	sameLen[0].v = string(v)
	// A re-run with other records from the start.
	other := randomKVs(rand.New(rand.NewPCG(6, 9)), 500)
	longer := append(slices.Clone(recsA), randomKVs(rand.New(rand.NewPCG(7, 9)), 300)...)
	shorter := recsA[:len(recsA)/4]

	tests := []struct {
		name    string
		recsB   []kv
		fetchA  []int  // spills of m0_a fetched before it is withdrawn
		wantErr string // "" for success
		wantA   bool   // success with m0_a's records (the map was fetched whole)
		// inFlight holds m0_a's fetches until the withdrawal and the
		// re-run's announcements are in.
		inFlight bool
	}{
		{"identical re-run", recsA, []int{0, 1}, "", false, false},
		{"different records", other, []int{0}, "spill 0: fetched from attempt m0_a", false, false},
		{"same records, different CRC", sameLen, []int{0, 1}, "crc32c", false, false},
		{"more spills after those fetched", longer, []int{0, 1}, "", false, false},
		{"more spills, final fetched", longer, []int{0, nA - 1}, "attempt m0_a", false, false},
		{"fewer spills than fetched", shorter, []int{nA - 2}, fmt.Sprintf("spill %d ", nA-2), false, false},
		{"re-run before anything was fetched", other, nil, "", false, false},
		{"map fetched whole before the re-run", other, seq(nA), "", true, false},
		{"identical re-run announced during the fetches", recsA, []int{0, 1}, "", false, true},
		{"different re-run announced during the fetches", other, []int{0, 1}, "but announced since by attempt m0_b", false, true},
		{"fewer spills announced during the fetches", shorter, []int{0, nA - 2}, fmt.Sprintf("spill %d ", nA-2), false, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dirB := t.TempDir()
			spillsB := runMap(t, dirB, tc.recsB, reduces, 4096)
			w := newWorker(t, "job_1", []byte("s3cret"))
			w.addAttempt("job_1", "m0_a", dirA)
			w.addAttempt("job_1", "m0_b", dirB)
			release := make(chan struct{})
			var releaseOnce sync.Once
			defer releaseOnce.Do(func() { close(release) })
			if tc.inFlight {
				w.setOverride(func(rw http.ResponseWriter, req *http.Request, real http.Handler) {
					if req.URL.Query().Get("attempt") == "m0_a" {
						<-release
					}
					real.ServeHTTP(rw, req)
				})
			}
			evsA := announce("job_1", 0, "m0_a", w.host(), spillsA, r)
			src := newFakeSource()
			counters := mr.NewCounters()
			merger := newTestMerger(t, 256<<10, counters)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			errc := make(chan error, 1)
			go func() {
				errc <- Run(ctx, src, Options{
					Reduce: r, NumMaps: 2, Parallel: 2,
					Fetcher:  &Fetcher{Secret: []byte("s3cret"), Retries: 1, RetryDelay: time.Millisecond},
					Merger:   merger,
					Counters: counters,
				})
			}()
			for _, k := range tc.fetchA {
				src.add(evsA[k])
			}
			for _, k := range tc.fetchA {
				key := fmt.Sprintf("m0_a/%d/%d", k, r)
				for w.count(key) == 0 && ctx.Err() == nil {
					time.Sleep(time.Millisecond)
				}
			}
			// A request made may not be merged yet: either way the outcome is
			// the same, but a map fetched whole is only done once merged.
			for tc.wantA && counters.Get(mr.TaskCounterGroup, mr.ShuffledMaps).Value() == 0 && ctx.Err() == nil {
				time.Sleep(time.Millisecond)
			}
			var rest []Event
			if tc.fetchA == nil {
				rest = evsA // announced, withdrawn at once: the log a retried reduce reads
			}
			rest = append(rest, Event{Kind: MapObsolete, MapTask: 0, AttemptID: "m0_a"})
			rest = append(rest, announce("job_1", 0, "m0_b", w.host(), spillsB, r)...)
			rest = append(rest, emptyAt(1, 0, true, "m1_a"))
			src.add(rest...)
			if tc.inFlight {
				time.Sleep(50 * time.Millisecond) // the events are applied first
				releaseOnce.Do(func() { close(release) })
			}
			err := <-errc
			if tc.wantErr != "" {
				if !errors.Is(err, ErrNondeterministic) || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "m0_b") {
					t.Fatalf("error %v, want ErrNondeterministic naming m0_b and containing %q", err, tc.wantErr)
				}
				if tc.name == "same records, different CRC" && strings.Contains(err.Error(), "records ") {
					t.Errorf("error %v names records as differing; only the CRC does", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			it, err := merger.Finish(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			want := tc.recsB
			if tc.wantA {
				want = recsA
			}
			checkOutput(t, it, want)
			// No extra work: every spill is fetched once, from one attempt.
			fetched := map[int]bool{}
			for _, k := range tc.fetchA {
				fetched[k] = true
			}
			for _, si := range spillsA {
				if n, want := w.count(fmt.Sprintf("m0_a/%d/%d", si.Index, r)), b2i(fetched[si.Index]); n != want {
					t.Errorf("m0_a spill %d fetched %d times, want %d", si.Index, n, want)
				}
			}
			for _, si := range spillsB {
				want := b2i(!fetched[si.Index] && !tc.wantA)
				if n := w.count(fmt.Sprintf("m0_b/%d/%d", si.Index, r)); n != want {
					t.Errorf("m0_b spill %d fetched %d times, want %d", si.Index, n, want)
				}
			}
		})
	}
}

// TestRunRerunAfterMapFetchedWhole: once every spill of a map is fetched,
// a later announcement that differs is ignored: the reduce holds one
// complete output of the map.
func TestRunRerunAfterMapFetchedWhole(t *testing.T) {
	counters := mr.NewCounters()
	src := newFakeSource(emptyAt(0, 0, true, "a"))
	go func() {
		for counters.Get(mr.TaskCounterGroup, mr.ShuffledMaps).Value() == 0 {
			time.Sleep(time.Millisecond)
		}
		ev := emptyAt(0, 0, false, "b")
		ev.Location.Segment.Records = 1
		src.add(Event{Kind: MapObsolete, MapTask: 0, AttemptID: "a"}, ev, emptyAt(0, 1, true, "b"), emptyAt(1, 0, true, "c"))
	}()
	err := Run(context.Background(), src, Options{
		NumMaps: 2, Parallel: 1,
		Fetcher:  &Fetcher{},
		Merger:   newTestMerger(t, 1<<10, nil),
		Counters: counters,
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := counters.Snapshot().Get(mr.TaskCounterGroup, mr.ShuffledMaps); got != 2 {
		t.Errorf("SHUFFLED_MAPS = %d, want 2", got)
	}
}

func TestSegmentDiff(t *testing.T) {
	base := SpillLocation{Segment: spillSeg(10, 20, 3, 0xabc)}
	tests := []struct {
		name string
		b    SpillLocation
		want string
	}{
		{"identical", base, "identical"},
		{"final", SpillLocation{Final: true, Segment: base.Segment}, "final false vs true"},
		{"records and crc", SpillLocation{Segment: spillSeg(10, 20, 4, 0xabd)}, "records 3 vs 4, crc32c 00000abc vs 00000abd"},
		{"lengths", SpillLocation{Segment: spillSeg(11, 21, 3, 0xabc)}, "length 10 vs 11, raw length 20 vs 21"},
	}
	for _, tc := range tests {
		if got := segmentDiff(base, tc.b); got != tc.want {
			t.Errorf("%s: segmentDiff = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func seq(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func spillSeg(length, raw, records int64, crc uint32) spill.SegmentInfo {
	return spill.SegmentInfo{Length: length, RawLength: raw, Records: records, CRC: crc}
}
