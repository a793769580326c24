package shuffle

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"gomr/mr"
	"gomr/spill"
)

// uniqueSegments returns segments of the given record counts whose keys
// are distinct across all of them (so that the merged stream has one right
// order), with incompressible values of valueLen bytes, and every record
// in key order.
func uniqueSegments(t *testing.T, seed uint64, counts []int, valueLen int) ([]testSegment, []kv) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 7))
	var segs []testSegment
	var all []kv
	for i, n := range counts {
		recs := make([]kv, n)
		for j := range recs {
			v := make([]byte, valueLen)
			for b := range v {
				v[b] = byte(rng.Uint32())
			}
			recs[j] = kv{fmt.Sprintf("%06d-%03d-%05d", rng.IntN(1000000), i, j), string(v)}
		}
		sortKVs(recs)
		data, info := encodeSegment(t, recs, 256)
		segs = append(segs, testSegment{recs, data, info})
		all = append(all, recs...)
	}
	sortKVs(all)
	return segs, all
}

func repeatInts(n, v int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = v
	}
	return out
}

// TestMergeManagerPlans runs one merge plan per case, adding segments one
// at a time (each add waits for the merges it starts, so that the plan is
// the same every run) and checks the merged stream record for record,
// what went to disk, and that Close leaves no file.
func TestMergeManagerPlans(t *testing.T) {
	const mib = 1 << 20
	cases := []struct {
		name   string
		counts []int // records per segment (60-byte values: about 80 bytes on disk a record)
		opts   MergeOptions
		// want is checked against the manager's stats after Finish.
		want func(st MergeStats, n int) error
		// wantSpilled: SPILLED_RECORDS must be positive (true) or zero.
		wantSpilled bool
	}{
		{"all in memory", repeatInts(20, 50),
			MergeOptions{MemoryBytes: 8 * mib, SegmentLimit: 2 * mib, MergePercent: 0.9, RetainBytes: 8 * mib, Factor: 10},
			func(st MergeStats, n int) error {
				if st != (MergeStats{FinalInMemory: n}) {
					return fmt.Errorf("stats %+v, want every segment read from memory", st)
				}
				return nil
			}, false},
		{"all in memory, none retained for the reduce", repeatInts(20, 50),
			MergeOptions{MemoryBytes: 8 * mib, SegmentLimit: 2 * mib, MergePercent: 0.9, RetainBytes: 0, Factor: 10},
			func(st MergeStats, n int) error {
				if st != (MergeStats{MemToDisk: 1, MemToDiskAsIs: 1, FinalRuns: 1, FinalStreams: n}) {
					return fmt.Errorf("stats %+v, want the segments written to one disk run as they came at Finish", st)
				}
				return nil
			}, true},
		{"retained in part", repeatInts(20, 50),
			MergeOptions{MemoryBytes: 8 * mib, SegmentLimit: 2 * mib, MergePercent: 0.9, RetainBytes: 20 << 10, Factor: 10},
			func(st MergeStats, n int) error {
				if st.MemToDisk != 1 || st.FinalRuns != 1 || st.FinalInMemory == 0 || st.FinalInMemory == n {
					return fmt.Errorf("stats %+v, want some segments kept in memory and the rest in one disk run", st)
				}
				return nil
			}, true},
		{"all on disk", repeatInts(12, 50),
			MergeOptions{MemoryBytes: 4 << 10, SegmentLimit: 1 << 10, MergePercent: 0.66, Factor: 20},
			func(st MergeStats, n int) error {
				if st != (MergeStats{DirectToDisk: n, FinalRuns: n, FinalStreams: n}) {
					return fmt.Errorf("stats %+v, want every segment written to disk as it came", st)
				}
				return nil
			}, false},
		{"one huge segment", []int{5000},
			MergeOptions{MemoryBytes: 64 << 10, SegmentLimit: 16 << 10, MergePercent: 0.66, Factor: 10},
			func(st MergeStats, n int) error {
				if st != (MergeStats{DirectToDisk: 1, FinalRuns: 1, FinalStreams: 1}) {
					return fmt.Errorf("stats %+v, want the segment on disk as it came", st)
				}
				return nil
			}, false},
		{"mixed", []int{40, 30, 900, 45, 20, 35, 1200, 50, 25, 40, 30, 10},
			MergeOptions{MemoryBytes: 16 << 10, SegmentLimit: 8 << 10, MergePercent: 0.5, RetainBytes: 4 << 10, Factor: 10},
			func(st MergeStats, n int) error {
				if st.DirectToDisk != 2 || st.MemToDisk < 2 || st.FinalRuns < 1 || st.FinalStreams > 10 {
					return fmt.Errorf("stats %+v, want the 2 large segments straight to disk, several writes of memory to disk, and at most 10 streams (Factor) in the final merge", st)
				}
				return nil
			}, true},
		{"in-memory threshold", repeatInts(30, 20),
			MergeOptions{MemoryBytes: 8 * mib, SegmentLimit: 2 * mib, MergePercent: 1, InMemThreshold: 4, RetainBytes: 8 * mib, Factor: 100},
			func(st MergeStats, n int) error {
				if st.MemToDisk != n/4 || st.FinalRuns != n/4 || st.FinalInMemory != n%4 {
					return fmt.Errorf("stats %+v, want a merge to disk every 4 segments (%d), %d left in memory", st, n/4, n%4)
				}
				return nil
			}, true},
		{"runs of segments up to the stream limit, then merged", repeatInts(60, 20),
			MergeOptions{MemoryBytes: 16 << 10, SegmentLimit: 4 << 10, MergePercent: 0.3, Factor: 12},
			func(st MergeStats, n int) error {
				if st.DirectToDisk != 0 || st.MemToDiskAsIs == 0 || st.MemToDiskAsIs == st.MemToDisk || st.FinalStreams > 12 {
					return fmt.Errorf("stats %+v, want segments written as they came up to 12 streams on disk, merged after, and at most 12 streams in the final merge", st)
				}
				return nil
			}, true},
		{"multi-pass", repeatInts(40, 30),
			MergeOptions{MemoryBytes: 2 << 10, SegmentLimit: 1 << 10, MergePercent: 0.66, Factor: 3},
			func(st MergeStats, n int) error {
				if st.DirectToDisk != n || st.DiskMerges < n/3 || st.FinalRuns > 3 {
					return fmt.Errorf("stats %+v, want %d runs merged 3 at a time down to at most 3", st, n)
				}
				return nil
			}, true},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			segs, all := uniqueSegments(t, uint64(i), tc.counts, 60)
			counters := mr.NewCounters()
			dir := t.TempDir()
			o := tc.opts
			o.Dir, o.Counters, o.BlockSize = dir, counters, 512
			m, err := NewMergeManager(o)
			if err != nil {
				t.Fatal(err)
			}
			for j, s := range segs {
				if err := m.Add(s.data, s.info); err != nil {
					t.Fatalf("add %d: %v", j, err)
				}
				m.waitIdle()
			}
			it, err := m.Finish(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			got := drain(t, it)
			if !slices.Equal(got, all) {
				t.Fatalf("merged %d records, want %d in key order (first difference at %d)", len(got), len(all), firstDiff(got, all))
			}
			if err := tc.want(m.Stats(), len(segs)); err != nil {
				t.Error(err)
			}
			cs := counters.Snapshot()
			if got := cs.Get(mr.TaskCounterGroup, mr.MergedMapOutputs); got != int64(len(segs)) {
				t.Errorf("MERGED_MAP_OUTPUTS = %d, want %d", got, len(segs))
			}
			if got := cs.Get(mr.TaskCounterGroup, mr.SpilledRecords); (got > 0) != tc.wantSpilled {
				t.Errorf("SPILLED_RECORDS = %d, want positive: %v", got, tc.wantSpilled)
			}
			if err := m.Close(); err != nil {
				t.Fatal(err)
			}
			if n := dirEntries(t, dir); n != 0 {
				t.Errorf("%d files left after Close", n)
			}
		})
	}
}

func firstDiff(a, b []kv) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// TestMergeManagerCorruptRun: a disk run damaged after it was written
// fails the final merge with an error that wraps spill.ErrCorrupt and
// names the run's file.
func TestMergeManagerCorruptRun(t *testing.T) {
	for _, where := range []string{"middle", "last byte"} {
		t.Run(where, func(t *testing.T) {
			segs, _ := uniqueSegments(t, 9, []int{400, 400}, 60)
			dir := t.TempDir()
			m, err := NewMergeManager(MergeOptions{Dir: dir, MemoryBytes: 4 << 10, SegmentLimit: 1 << 10, MergePercent: 0.66, Factor: 10})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			for _, s := range segs {
				if err := m.Add(s.data, s.info); err != nil {
					t.Fatal(err)
				}
			}
			m.waitIdle()
			files, _ := filepath.Glob(filepath.Join(dir, "*.run"))
			if len(files) != 2 {
				t.Fatalf("%d runs on disk, want 2", len(files))
			}
			victim := files[0]
			b, err := os.ReadFile(victim)
			if err != nil {
				t.Fatal(err)
			}
			i := len(b) / 2
			if where == "last byte" {
				i = len(b) - 1
			}
			b[i] ^= 0x40
			if err := os.WriteFile(victim, b, 0o644); err != nil {
				t.Fatal(err)
			}
			it, err := m.Finish(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			for it.Next() {
			}
			err = it.Err()
			if !errors.Is(err, spill.ErrCorrupt) || !strings.Contains(err.Error(), victim) {
				t.Fatalf("merge over a corrupt run: error %v, want spill.ErrCorrupt naming %s", err, victim)
			}
		})
	}
}

// TestMergeManagerRetainLone: with RetainBytes the segments
// kept in memory are the first added that fit, and a lone segment beyond
// it goes to disk as it is (its bytes unchanged).
func TestMergeManagerRetainLone(t *testing.T) {
	segs, all := uniqueSegments(t, 11, []int{30, 30}, 60)
	dir := t.TempDir()
	m, err := NewMergeManager(MergeOptions{Dir: dir, MemoryBytes: 1 << 20, SegmentLimit: 1 << 20, MergePercent: 1,
		RetainBytes: segs[0].info.Length, Factor: 10})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	for _, s := range segs {
		if err := m.Add(s.data, s.info); err != nil {
			t.Fatal(err)
		}
	}
	it, err := m.Finish(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := drain(t, it); !slices.Equal(got, all) {
		t.Fatalf("merged stream differs (first difference at %d)", firstDiff(got, all))
	}
	if st := m.Stats(); st != (MergeStats{MemToDisk: 1, MemToDiskAsIs: 1, FinalRuns: 1, FinalStreams: 1, FinalInMemory: 1}) {
		t.Errorf("stats %+v, want the first segment in memory, the second on disk", st)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.run"))
	if len(files) != 1 {
		t.Fatalf("%d runs on disk, want 1", len(files))
	}
	if b, _ := os.ReadFile(files[0]); !bytes.Equal(b, segs[1].data) {
		t.Errorf("the lone segment's run differs from its bytes")
	}
}

// TestMergeManagerReserve: fetches reserve their bytes of the shuffle
// buffer before they start; one that does not fit waits for a release or
// for a merge of the held segments to disk, one larger than the buffer
// goes alone, and a cancelled or closed wait fails.
func TestMergeManagerReserve(t *testing.T) {
	segs, all := uniqueSegments(t, 13, []int{10, 10, 10}, 60)
	limit := segs[0].info.Length + segs[1].info.Length // two segments fit, not three
	m, err := NewMergeManager(MergeOptions{Dir: t.TempDir(), MemoryBytes: limit, SegmentLimit: limit, MergePercent: 1, RetainBytes: limit, Factor: 10})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ctx := context.Background()
	waiting := func(n int64) chan func() {
		got := make(chan func(), 1)
		go func() {
			rel, err := m.Reserve(ctx, n)
			if err != nil {
				t.Error(err)
			}
			got <- rel
		}()
		return got
	}
	notYet := func(c chan func(), what string) {
		t.Helper()
		select {
		case <-c:
			t.Fatalf("%s: reserved while the buffer is full", what)
		case <-time.After(50 * time.Millisecond):
		}
	}
	r1, err := m.Reserve(ctx, segs[0].info.Length)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := m.Reserve(ctx, segs[1].info.Length)
	if err != nil {
		t.Fatal(err)
	}
	third := waiting(segs[2].info.Length)
	notYet(third, "third fetch")
	// The first two fetches arrive: their bytes are held, the third still
	// waits, until the held segments are merged to disk. Both are added
	// before either reservation is released: a release between the two
	// adds would let the waiting fetch merge the first segment alone.
	for i := range 2 {
		if err := m.Add(segs[i].data, segs[i].info); err != nil {
			t.Fatal(err)
		}
	}
	for _, rel := range []func(){r1, r2} {
		rel()
		rel() // a second release is a no-op
	}
	r3 := <-third // the wait started a merge of the held segments
	if err := m.Add(segs[2].data, segs[2].info); err != nil {
		t.Fatal(err)
	}
	r3()
	m.waitIdle()
	if st := m.Stats(); st.MemToDisk != 1 {
		t.Errorf("stats %+v, want one merge of memory to disk", st)
	}
	// Larger than the buffer: goes when nothing else is held or in flight.
	m.mu.Lock()
	held := m.memUsed
	m.mu.Unlock()
	if held == 0 {
		t.Fatal("nothing held in memory")
	}
	huge := waiting(10 * limit)
	rHuge := <-huge // the held segment is merged to disk first
	rHuge()
	it, err := m.Finish(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := drain(t, it); !slices.Equal(got, all) {
		t.Fatalf("merged stream differs (first difference at %d)", firstDiff(got, all))
	}

	// A cancelled wait, and a wait on a closed manager, fail.
	m2, err := NewMergeManager(MergeOptions{Dir: t.TempDir(), MemoryBytes: 100, SegmentLimit: 100, MergePercent: 1, Factor: 2})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m2.Reserve(ctx, 80); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Millisecond)
	defer cancel()
	if _, err := m2.Reserve(cctx, 80); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("cancelled wait: error %v, want the context's", err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := m2.Reserve(ctx, 80)
		done <- err
	}()
	time.Sleep(20 * time.Millisecond)
	m2.Close()
	if err := <-done; err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("wait on a closed manager: error %v", err)
	}
}

// TestPickRuns: a merge takes the first runs up to Factor, fewer when their
// streams would pass the stream limit, but always at least two.
func TestPickRuns(t *testing.T) {
	run := func(streams int) diskRun {
		if streams == 1 {
			return diskRun{}
		}
		return diskRun{segs: make([]spill.SegmentInfo, streams)}
	}
	runs := func(streams ...int) []diskRun {
		out := make([]diskRun, len(streams))
		for i, s := range streams {
			out[i] = run(s)
		}
		return out
	}
	cases := []struct {
		name          string
		runs          []diskRun
		factor, limit int
		want          int
	}{
		{"merged runs up to the factor", runs(1, 1, 1, 1, 1), 3, 3, 3},
		{"fewer runs than the factor", runs(1, 1), 10, 10, 2},
		{"runs of segments within the limit", runs(4, 4, 4, 4), 10, 12, 3},
		{"runs of segments past the limit: two at least", runs(20, 20, 20), 10, 12, 2},
		{"a run of segments after merged runs", runs(1, 1, 9, 1), 10, 10, 2},
		{"the factor binds before the limit", runs(2, 2, 2, 2), 2, 100, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := pickRuns(tc.runs, tc.factor, tc.limit); got != tc.want {
				t.Errorf("pickRuns = %d, want %d", got, tc.want)
			}
		})
	}
}

// TestStreamLimit: the final merge reads Factor streams, or more when
// their buffers (two blocks and a read buffer each) fit a quarter of the
// shuffle buffer.
func TestStreamLimit(t *testing.T) {
	cases := []struct {
		name string
		opts MergeOptions
		want int
	}{
		{"a small buffer: the factor", MergeOptions{MemoryBytes: 1 << 20, Factor: 10}, 10},
		{"the default reduce: 717 MB", MergeOptions{MemoryBytes: 751619276, Factor: 10}, 1274},
		{"a budget's 18.6 MB", MergeOptions{MemoryBytes: 19_500_000, Factor: 10}, 33},
		{"smaller blocks, more streams", MergeOptions{MemoryBytes: 19_500_000, Factor: 10, BlockSize: 16 << 10}, 99},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := streamLimit(tc.opts); got != tc.want {
				t.Errorf("streamLimit = %d, want %d", got, tc.want)
			}
		})
	}
}
