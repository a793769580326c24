package shuffle

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"testing"

	"gomr/mr"
	"gomr/spill"
)

// waitIdle waits until no merge runs in the background.
func (m *MergeManager) waitIdle() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for m.active > 0 {
		m.cond.Wait()
	}
}

func dirEntries(t *testing.T, dir string) int {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return len(es)
}

// incompressible returns n sorted records with random 20-byte values, so
// that a segment's Length is close to its raw length.
func incompressible(rng *rand.Rand, prefix string, n int) []kv {
	out := make([]kv, n)
	for i := range out {
		v := make([]byte, 20)
		for j := range v {
			v[j] = byte(rng.Uint32())
		}
		out[i] = kv{fmt.Sprintf("%s%05d", prefix, rng.IntN(100000)), string(v)}
	}
	sortKVs(out)
	return out
}

type testSegment struct {
	recs []kv
	data []byte
	info spill.SegmentInfo
}

func makeSegment(t testing.TB, recs []kv) testSegment {
	data, info := encodeSegment(t, recs, 128)
	return testSegment{recs, data, info}
}

// TestMergeManagerSequence follows one sequence of adds with known effects
// (each add waits for the merges it starts): memory 1000 bytes, segments
// over 400 bytes to disk, merge at 500 bytes, factor 2.
func TestMergeManagerSequence(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	small := func() testSegment { return makeSegment(t, incompressible(rng, "k", 11)) }
	big := func() testSegment { return makeSegment(t, incompressible(rng, "k", 70)) }
	segs := []testSegment{small(), small(), big(), small(), small(), small()}
	for i, s := range segs {
		isBig := i == 2
		if (isBig && s.info.Length <= 1000) || (!isBig && (s.info.Length <= 250 || s.info.Length >= 400)) {
			t.Fatalf("segment %d has %d bytes, outside the range the test is built on", i, s.info.Length)
		}
	}
	counters := mr.NewCounters()
	dir := t.TempDir()
	m, err := NewMergeManager(MergeOptions{Dir: dir, MemoryBytes: 1000, SegmentLimit: 400, MergePercent: 0.5, RetainBytes: 1000, Factor: 2, BlockSize: 100, Counters: counters})
	if err != nil {
		t.Fatal(err)
	}
	// After each add: disk runs waiting, in-memory segments.
	wantState := [][2]int{{0, 1}, {1, 0}, {2, 0}, {2, 1}, {2, 0}, {2, 1}}
	var all []kv
	for i, s := range segs {
		if err := m.Add(s.data, s.info); err != nil {
			t.Fatalf("add %d: %v", i, err)
		}
		m.waitIdle()
		all = append(all, s.recs...)
		m.mu.Lock()
		got := [2]int{len(m.runs), m.mem.len()}
		m.mu.Unlock()
		if got != wantState[i] {
			t.Errorf("after add %d: %d runs and %d in-memory segments, want %v", i, got[0], got[1], wantState[i])
		}
	}
	// Memory merges wrote segments 0+1 and 3+4; the disk merge wrote them
	// again together; segment 2 went to disk as it was.
	r := func(i int) int64 { return segs[i].info.Records }
	wantSpilled := 2 * (r(0) + r(1) + r(3) + r(4))
	if err := m.Add(nil, spill.SegmentInfo{}); err != nil { // an empty segment
		t.Fatal(err)
	}
	it, err := m.Finish(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	checkOutput(t, it, all)
	cs := counters.Snapshot()
	if got := cs.Get(mr.TaskCounterGroup, mr.SpilledRecords); got != wantSpilled {
		t.Errorf("SPILLED_RECORDS = %d, want %d", got, wantSpilled)
	}
	if got := cs.Get(mr.TaskCounterGroup, mr.MergedMapOutputs); got != int64(len(segs)+1) {
		t.Errorf("MERGED_MAP_OUTPUTS = %d, want %d", got, len(segs)+1)
	}
	if m.stats.FinalRuns != 2 || dirEntries(t, dir) != 2 {
		t.Errorf("final merge read %d disk runs with %d files in the scratch directory, want 2 and 2", m.stats.FinalRuns, dirEntries(t, dir))
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if n := dirEntries(t, dir); n != 0 {
		t.Errorf("%d files left after Close", n)
	}
	if err := m.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// TestMergeManagerFinishPasses: more than Factor disk runs left at Finish
// are merged down to Factor, smallest first.
func TestMergeManagerFinishPasses(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	counters := mr.NewCounters()
	m, err := NewMergeManager(MergeOptions{Dir: t.TempDir(), MemoryBytes: 1000, SegmentLimit: 100, MergePercent: 1, Factor: 3, Counters: counters})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	var all []kv
	sizes := []int{160, 100, 140, 120} // records; all go to disk as they are
	for _, n := range sizes {
		s := makeSegment(t, incompressible(rng, "k", n))
		if err := m.Add(s.data, s.info); err != nil {
			t.Fatal(err)
		}
		all = append(all, s.recs...)
	}
	it, err := m.Finish(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	checkOutput(t, it, all)
	// 4 runs, factor 3: one pass merges the 2 smallest (100 + 120 records).
	if got := counters.Snapshot().Get(mr.TaskCounterGroup, mr.SpilledRecords); got != 220 {
		t.Errorf("SPILLED_RECORDS = %d, want 220", got)
	}
	if m.stats.FinalRuns != 3 {
		t.Errorf("final merge read %d disk runs, want 3", m.stats.FinalRuns)
	}
}

// TestMergeManagerConcurrent adds many segments of mixed sizes from several
// goroutines into a tiny budget, forcing memory merges, direct disk writes
// and multi-pass disk merges.
func TestMergeManagerConcurrent(t *testing.T) {
	for _, factor := range []int{2, 3, 10} {
		t.Run(fmt.Sprint("factor", factor), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(factor), 5))
			var segs []testSegment
			var all []kv
			for i := 0; i < 300; i++ {
				n := rng.IntN(40)
				if i%25 == 0 {
					n = 300 // over the segment limit
				}
				s := makeSegment(t, incompressible(rng, "", n))
				segs = append(segs, s)
				all = append(all, s.recs...)
			}
			counters := mr.NewCounters()
			dir := t.TempDir()
			m, err := NewMergeManager(MergeOptions{Dir: dir, MemoryBytes: 16 << 10, SegmentLimit: 4 << 10, MergePercent: 0.66, Factor: factor, BlockSize: 512, Counters: counters})
			if err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			errs := make(chan error, 8)
			for g := 0; g < 8; g++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := g; i < len(segs); i += 8 {
						if err := m.Add(segs[i].data, segs[i].info); err != nil {
							errs <- err
							return
						}
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			it, err := m.Finish(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			checkOutput(t, it, all)
			cs := counters.Snapshot()
			if got := cs.Get(mr.TaskCounterGroup, mr.MergedMapOutputs); got != int64(len(segs)) {
				t.Errorf("MERGED_MAP_OUTPUTS = %d, want %d", got, len(segs))
			}
			if got := cs.Get(mr.TaskCounterGroup, mr.SpilledRecords); got < int64(len(all))/2 {
				t.Errorf("SPILLED_RECORDS = %d: too few for a 16 KiB budget and %d records", got, len(all))
			}
			if m.stats.FinalRuns > factor {
				t.Errorf("final merge read %d disk runs, more than the factor %d", m.stats.FinalRuns, factor)
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

func TestMergeManagerCompare(t *testing.T) {
	reverse := func(a, b []byte) int { return bytes.Compare(b, a) }
	m, err := NewMergeManager(MergeOptions{Dir: t.TempDir(), MemoryBytes: 300, SegmentLimit: 300, MergePercent: 0.5, Factor: 2, Compare: reverse})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	for _, keys := range [][]string{{"c", "b", "a"}, {"e", "b"}, {"d"}, {"z", "y", "a"}} {
		var recs []kv
		for _, k := range keys {
			recs = append(recs, kv{k, "v"})
		}
		s := makeSegment(t, recs)
		if err := m.Add(s.data, s.info); err != nil {
			t.Fatal(err)
		}
	}
	it, err := m.Finish(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range drain(t, it) {
		got = append(got, r.k)
	}
	if s := strings.Join(got, ""); s != "zyedcbbaa" {
		t.Errorf("keys %q, want zyedcbbaa", s)
	}
}

func TestMergeManagerErrors(t *testing.T) {
	dir := t.TempDir()
	file := dir + "/file"
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	ok := MergeOptions{Dir: dir, MemoryBytes: 100, SegmentLimit: 50, MergePercent: 0.5, Factor: 2}
	bad := []struct {
		name string
		edit func(*MergeOptions)
		want string
	}{
		{"missing dir", func(o *MergeOptions) { o.Dir = dir + "/nope" }, "scratch directory"},
		{"dir is a file", func(o *MergeOptions) { o.Dir = file }, "is not a directory"},
		{"no memory", func(o *MergeOptions) { o.MemoryBytes = 0 }, "MemoryBytes=0"},
		{"limit over memory", func(o *MergeOptions) { o.SegmentLimit = 101 }, "SegmentLimit=101"},
		{"merge percent", func(o *MergeOptions) { o.MergePercent = 1.5 }, "MergePercent=1.5"},
		{"factor", func(o *MergeOptions) { o.Factor = 1 }, "Factor=1"},
		{"block size", func(o *MergeOptions) { o.BlockSize = -1 }, "BlockSize=-1"},
	}
	for _, tc := range bad {
		o := ok
		tc.edit(&o)
		if _, err := NewMergeManager(o); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}

	m, err := NewMergeManager(ok)
	if err != nil {
		t.Fatal(err)
	}
	s := makeSegment(t, []kv{{"a", "1"}, {"b", "2"}})
	if err := m.Add(s.data[:3], s.info); err == nil || !strings.Contains(err.Error(), "described as") {
		t.Errorf("short data: error %v", err)
	}
	if _, err := m.Finish(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := m.Add(s.data, s.info); err == nil || !strings.Contains(err.Error(), "after Finish") {
		t.Errorf("add after finish: error %v", err)
	}
	if _, err := m.Finish(context.Background()); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Errorf("second finish: error %v", err)
	}
	m.Close()
	if err := m.Add(s.data, s.info); err == nil {
		t.Error("add after close succeeded")
	}

	// A corrupt segment fails the merge that reads it, and every call
	// after: written to disk as it came (each add fills the memory), it
	// is merged with the next smallest run once three runs wait (factor 2).
	m, err = NewMergeManager(MergeOptions{Dir: dir, MemoryBytes: 1000, SegmentLimit: 500, MergePercent: 0.01, Factor: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	corrupt := bytes.Clone(s.data)
	corrupt[len(corrupt)-1] ^= 1
	if err := m.Add(corrupt, s.info); err != nil {
		t.Fatalf("add does not verify; got %v", err)
	}
	m.waitIdle()
	for _, recs := range [][]kv{{{"c", "3"}, {"d", "4"}, {"e", "5"}}, {{"f", "6"}, {"g", "7"}, {"h", "8"}}} {
		o := makeSegment(t, recs)
		if err := m.Add(o.data, o.info); err != nil && !errors.Is(err, spill.ErrCorrupt) {
			t.Fatalf("add: %v", err)
		}
		m.waitIdle()
	}
	if _, err := m.Finish(context.Background()); !errors.Is(err, spill.ErrCorrupt) {
		t.Errorf("finish after a corrupt segment: error %v, want spill.ErrCorrupt", err)
	}
	if err := m.Add(s.data, s.info); !errors.Is(err, spill.ErrCorrupt) {
		t.Errorf("add after a failed merge: error %v, want the merge's error", err)
	}

	// A corrupt segment written to disk as it came fails the final merge
	// that reads it, naming its run.
	m3, err := NewMergeManager(MergeOptions{Dir: t.TempDir(), MemoryBytes: 1000, SegmentLimit: 500, MergePercent: 1, Factor: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer m3.Close()
	other := makeSegment(t, []kv{{"c", "3"}})
	for _, sg := range []testSegment{{data: corrupt, info: s.info}, other} {
		if err := m3.Add(sg.data, sg.info); err != nil {
			t.Fatal(err)
		}
	}
	it, err := m3.Finish(context.Background())
	if err != nil {
		t.Fatalf("finish: %v (a run of segments as they came is not decoded before the final merge)", err)
	}
	for it.Next() {
	}
	if err := it.Err(); !errors.Is(err, spill.ErrCorrupt) || !strings.Contains(err.Error(), "merge-") {
		t.Errorf("final merge over a corrupt segment: error %v, want spill.ErrCorrupt naming its run", err)
	}
}

// BenchmarkMergeManager adds about 100 MB of 100-byte records (TeraSort's
// shape) in 200 sorted segments with a 32 MiB budget, then reads the merged
// stream.
func BenchmarkMergeManager(b *testing.B) {
	const segments, perSegment = 200, 5000
	rng := rand.New(rand.NewPCG(9, 9))
	segs := make([]testSegment, segments)
	var raw int64
	for i := range segs {
		recs := make([]kv, perSegment)
		for j := range recs {
			k := make([]byte, 10)
			for x := range k {
				k[x] = byte(' ' + rng.IntN(95))
			}
			recs[j] = kv{string(k), fmt.Sprintf("%032x%058d", rng.Uint64(), j)}
		}
		sortKVs(recs)
		data, info := encodeSegment(b, recs, 0)
		segs[i] = testSegment{nil, data, info}
		raw += int64(perSegment * 100)
	}
	b.SetBytes(raw)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		m, err := NewMergeManager(MergeOptions{Dir: b.TempDir(), MemoryBytes: 32 << 20, SegmentLimit: 8 << 20, MergePercent: 0.66, Factor: 10})
		if err != nil {
			b.Fatal(err)
		}
		var wg sync.WaitGroup
		for g := 0; g < 5; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := g; j < len(segs); j += 5 {
					if err := m.Add(segs[j].data, segs[j].info); err != nil {
						b.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		it, err := m.Finish(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for it.Next() {
			n++
		}
		if it.Err() != nil || n != segments*perSegment {
			b.Fatalf("read %d records, err %v", n, it.Err())
		}
		if err := m.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// TestMemList: segments cut from one block (capacity to the block's end,
// as a batched fetch cuts them) are kept as offsets in it, one pointer
// per block; others as blocks of their own; take gives back each segment
// as it was added, with no room to grow, and empties the list.
func TestMemList(t *testing.T) {
	block := make([]byte, 100)
	for i := range block {
		block[i] = byte(i)
	}
	other := make([]byte, 30)
	for i := range other {
		other[i] = byte(200 + i)
	}
	tests := []struct {
		name       string
		segs       [][]byte
		wantBlocks int
	}{
		{"one block", [][]byte{block[1:11], block[12:40], block[41:100]}, 1},
		{"capped: a block each", [][]byte{block[1:11:11], block[12:40:40]}, 2},
		{"first capped, then the block", [][]byte{block[1:11:11], block[12:40], block[41:50]}, 2},
		{"two blocks", [][]byte{block[1:11], block[12:40], other[0:10], other[10:30]}, 2},
		{"back to an earlier block", [][]byte{block[1:11], other[0:10], block[20:30]}, 3},
		{"empty segment", [][]byte{block[1:11], block[11:11], block[11:20]}, 2},
		{"the same bytes twice", [][]byte{block[0:10], block[0:10]}, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var l memList
			for i, d := range tc.segs {
				l.add(d, spill.SegmentInfo{Length: int64(len(d)), Records: int64(i + 1), CRC: uint32(i)})
			}
			if l.len() != len(tc.segs) || len(l.blocks) != tc.wantBlocks {
				t.Fatalf("%d segments in %d blocks, want %d in %d", l.len(), len(l.blocks), len(tc.segs), tc.wantBlocks)
			}
			got := l.take()
			if l.len() != 0 || l.blocks != nil {
				t.Fatalf("take left %d segments, %d blocks", l.len(), len(l.blocks))
			}
			for i, s := range got {
				want := tc.segs[i]
				if !bytes.Equal(s.data, want) || len(s.data) != len(want) || (len(want) > 0 && &s.data[0] != &want[0]) {
					t.Errorf("segment %d: %v, want the bytes added %v", i, s.data, want)
				}
				if cap(s.data) != len(s.data) {
					t.Errorf("segment %d: room to grow into the next one", i)
				}
				if s.info != (spill.SegmentInfo{Length: int64(len(want)), Records: int64(i + 1), CRC: uint32(i)}) {
					t.Errorf("segment %d: info %+v", i, s.info)
				}
			}
		})
	}
}

func TestOffsetIn(t *testing.T) {
	block := make([]byte, 64)
	other := make([]byte, 8)
	tests := []struct {
		name        string
		block, data []byte
		want        int
	}{
		{"start", block, block[:10], 0},
		{"middle", block, block[20:30], 20},
		{"end", block, block[60:], 60},
		{"whole", block, block, 0},
		{"past the end", block[:32], block[30:40], -1},
		{"before", block[10:], block[5:15], -1},
		{"longer than the block", block[:8], block[:9], -1},
		{"another allocation", block, other, -1},
		{"empty data", block, block[3:3], -1},
		{"empty block", block[:0], block[:1], -1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := offsetIn(tc.block, tc.data); got != tc.want {
				t.Errorf("offsetIn = %d, want %d", got, tc.want)
			}
		})
	}
}
