package spill

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"gomr/mr"
)

func sortKVsStable(kvs [][2][]byte) {
	slices.SortStableFunc(kvs, func(a, b [2][]byte) int { return bytes.Compare(a[0], b[0]) })
}

// collector records the spills a Buffer reports.
type collector struct {
	spills []SpillInfo
}

func (c *collector) onSpill(info SpillInfo) error {
	if info.Index != len(c.spills) {
		return fmt.Errorf("spill %d reported after %d spills", info.Index, len(c.spills))
	}
	for _, p := range []string{info.DataPath, info.IndexPath} {
		if _, err := os.Stat(p); err != nil {
			return fmt.Errorf("spill %d reported before it is durable: %w", info.Index, err)
		}
	}
	c.spills = append(c.spills, info)
	return nil
}

// readSpillPartition reads partition p of a spill from its files, checking
// the index file against the reported SpillInfo.
func readSpillPartition(t testing.TB, info SpillInfo, p int) [][2][]byte {
	t.Helper()
	segs, err := ReadIndex(info.IndexPath)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(segs, info.Partitions) {
		t.Fatalf("spill %d: index file %+v differs from reported %+v", info.Index, segs, info.Partitions)
	}
	data, err := os.ReadFile(info.DataPath)
	if err != nil {
		t.Fatal(err)
	}
	seg := segs[p]
	part := data[seg.Offset : seg.Offset+seg.Length]
	if err := VerifySegment(part, seg); err != nil {
		t.Fatalf("spill %d partition %d: %v", info.Index, p, err)
	}
	kvs, err := readSegment(part, seg)
	if err != nil {
		t.Fatalf("spill %d partition %d: %v", info.Index, p, err)
	}
	return kvs
}

func checkSpillLayout(t testing.TB, spills []SpillInfo, partitions int) {
	t.Helper()
	if len(spills) == 0 {
		t.Fatal("no spills")
	}
	for i, s := range spills {
		if s.Index != i || s.Final != (i == len(spills)-1) || len(s.Partitions) != partitions {
			t.Fatalf("spill %d: index %d final %v partitions %d", i, s.Index, s.Final, len(s.Partitions))
		}
		if filepath.Base(s.DataPath) != DataFileName(i) || filepath.Base(s.IndexPath) != IndexFileName(i) {
			t.Fatalf("spill %d files %s %s", i, s.DataPath, s.IndexPath)
		}
		var off int64
		for p, seg := range s.Partitions {
			if seg.Offset != off {
				t.Fatalf("spill %d partition %d at offset %d, want %d", i, p, seg.Offset, off)
			}
			off += seg.Length
		}
		st, err := os.Stat(s.DataPath)
		if err != nil {
			t.Fatal(err)
		}
		if st.Size() != off {
			t.Fatalf("spill %d data file has %d bytes, segments %d", i, st.Size(), off)
		}
	}
}

func newTestBuffer(t testing.TB, opts Options) (*Buffer, *collector) {
	t.Helper()
	c := &collector{}
	if opts.RecordOverhead == 0 {
		opts.RecordOverhead = 16 // the figures in these tests use Hadoop's charge
	}
	if opts.Dir == "" {
		opts.Dir = t.TempDir()
	}
	if opts.OnSpill == nil {
		opts.OnSpill = c.onSpill
	}
	b, err := NewBuffer(opts)
	if err != nil {
		t.Fatal(err)
	}
	return b, c
}

func emitAll(t testing.TB, b *Buffer, kvs [][2][]byte) {
	t.Helper()
	for i, r := range kvs {
		if err := b.Emit(r[0], r[1]); err != nil {
			t.Fatalf("Emit record %d: %v", i, err)
		}
	}
	if err := b.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

func TestBufferRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewSource(42))
	const parts = 7
	kvs := make([][2][]byte, 20000)
	for i := range kvs {
		k := make([]byte, rng.Intn(12))
		for j := range k {
			k[j] = byte('a' + rng.Intn(4))
		}
		v := []byte(strconv.Itoa(i))
		kvs[i] = [2][]byte{k, v}
	}
	for _, custom := range []bool{false, true} {
		t.Run(fmt.Sprintf("customCompare=%v", custom), func(t *testing.T) {
			opts := Options{BufferBytes: 64 << 10, SpillPercent: 0.8, NumPartitions: parts, BlockSize: 4096}
			if custom {
				opts.Compare = func(a, b []byte) int { return bytes.Compare(a, b) }
			}
			b, c := newTestBuffer(t, opts)
			// Emit from reused slices: the buffer must copy.
			var kb, vb []byte
			for i, r := range kvs {
				kb = append(kb[:0], r[0]...)
				vb = append(vb[:0], r[1]...)
				if err := b.Emit(kb, vb); err != nil {
					t.Fatalf("Emit %d: %v", i, err)
				}
				clear(kb)
				clear(vb)
			}
			if err := b.Close(); err != nil {
				t.Fatal(err)
			}
			if len(c.spills) < 5 {
				t.Fatalf("only %d spills; the test wants several", len(c.spills))
			}
			checkSpillLayout(t, c.spills, parts)
			for p := 0; p < parts; p++ {
				var want [][2][]byte
				for _, r := range kvs {
					if mr.HashPartitioner.Partition(mr.HashPartitioner{}, r[0], parts) == p {
						want = append(want, r)
					}
				}
				sortKVsStable(want)
				var its []Iterator
				for _, s := range c.spills {
					run := readSpillPartition(t, s, p)
					if !slices.IsSortedFunc(run, func(a, b [2][]byte) int { return bytes.Compare(a[0], b[0]) }) {
						t.Fatalf("spill %d partition %d is not sorted", s.Index, p)
					}
					its = append(its, NewSliceIterator(run))
				}
				var got [][2][]byte
				m := Merge(nil, its)
				for m.Next() {
					got = append(got, [2][]byte{m.Key(), m.Value()})
				}
				if !equalKVs(got, want) {
					t.Fatalf("partition %d: merged %d records differ from the %d expected", p, len(got), len(want))
				}
			}
		})
	}
}

// expectedBatches applies the boundary rule independently: the number of
// records of each spill (the last one being the final spill).
func expectedBatches(costs []int64, bufferBytes int64, percent float64) []int {
	threshold := float64(bufferBytes) * percent
	var out []int
	n, acc := 0, int64(0)
	for _, c := range costs {
		if float64(c) >= threshold && n > 0 {
			out = append(out, n)
			n, acc = 0, 0
		}
		n++
		acc += c
		if float64(acc) >= threshold {
			out = append(out, n)
			n, acc = 0, 0
		}
	}
	return append(out, n)
}

func TestSpillBoundaries(t *testing.T) {
	mk := func(sizes ...int) [][2][]byte {
		var kvs [][2][]byte
		for i, s := range sizes {
			kvs = append(kvs, [2][]byte{[]byte{byte('a' + i%26)}, bytes.Repeat([]byte{'v'}, s-1)})
		}
		return kvs
	}
	rng := rand.New(rand.NewSource(9))
	var random []int
	for i := 0; i < 3000; i++ {
		s := 1 + rng.Intn(200)
		if rng.Intn(100) == 0 {
			s = 3000 + rng.Intn(3000)
		}
		random = append(random, s)
	}
	tests := []struct {
		name    string
		kvs     [][2][]byte
		bytes   int64
		percent float64
		want    []int // records per spill; nil = computed by expectedBatches
	}{
		{"no records", nil, 100, 0.8, []int{0}},
		// cost 18 each, threshold 80: cut after 5 (90 >= 80).
		{"exact cut then empty final", mk(2, 2, 2, 2, 2, 2, 2, 2, 2, 2), 100, 0.8, []int{5, 5, 0}},
		{"cut and remainder", mk(2, 2, 2, 2, 2, 2, 2), 100, 0.8, []int{5, 2}},
		// cost 64+16=80 alone reaches the threshold: own batch.
		{"big record alone", mk(2, 2, 64, 2), 100, 0.8, []int{2, 1, 1}},
		{"big record first", mk(500, 2), 100, 0.8, []int{1, 1}},
		{"big records in a row", mk(500, 600, 2, 2), 100, 1, []int{1, 1, 2}},
		{"spill percent 1", mk(2, 2, 2, 2, 2, 2), 54, 1, []int{3, 3, 0}},
		{"random sizes", mk(random...), 4096, 0.66, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			want := tc.want
			if want == nil {
				costs := make([]int64, len(tc.kvs))
				for i, r := range tc.kvs {
					costs[i] = int64(len(r[0])+len(r[1])) + 16
				}
				want = expectedBatches(costs, tc.bytes, tc.percent)
			}
			b, c := newTestBuffer(t, Options{BufferBytes: tc.bytes, SpillPercent: tc.percent, NumPartitions: 3})
			emitAll(t, b, tc.kvs)
			checkSpillLayout(t, c.spills, 3)
			var got []int
			for _, s := range c.spills {
				n := int64(0)
				for _, seg := range s.Partitions {
					n += seg.Records
				}
				got = append(got, int(n))
			}
			if !slices.Equal(got, want) {
				t.Fatalf("records per spill = %v, want %v", got, want)
			}
		})
	}
}

func dirContents(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = b
	}
	return out
}

func TestBufferDeterministic(t *testing.T) {
	kvs := genKVs(30000, 10, 30, 5)
	combiner := mr.ReducerFunc(func(tc mr.TaskContext, key []byte, values mr.ValueIterator, out mr.Emitter) error {
		// Keep the values of a group concatenated, in order.
		var all []byte
		for values.Next() {
			all = append(all, values.Value()...)
		}
		return out.Emit(key, all)
	})
	run := func(slow bool, withCombiner bool) map[string][]byte {
		opts := Options{BufferBytes: 200 << 10, SpillPercent: 0.5, NumPartitions: 5, BlockSize: 8192}
		if withCombiner {
			opts.Combiner = combiner
		}
		rng := rand.New(rand.NewSource(time.Now().UnixNano()))
		c := &collector{}
		opts.OnSpill = func(info SpillInfo) error {
			if slow {
				time.Sleep(time.Duration(rng.Intn(3000)) * time.Microsecond)
			}
			return c.onSpill(info)
		}
		b, _ := newTestBuffer(t, opts)
		if slow {
			var mu sync.Mutex
			b.spillHook = func(int) {
				mu.Lock()
				d := time.Duration(rng.Intn(5000)) * time.Microsecond
				mu.Unlock()
				time.Sleep(d)
			}
		}
		emitAll(t, b, kvs)
		if len(c.spills) < 10 {
			t.Fatalf("only %d spills", len(c.spills))
		}
		return dirContents(t, b.opts.Dir)
	}
	for _, withCombiner := range []bool{false, true} {
		fast := run(false, withCombiner)
		slow := run(true, withCombiner)
		if len(fast) != len(slow) {
			t.Fatalf("combiner %v: %d files in one run, %d in the other", withCombiner, len(fast), len(slow))
		}
		for name, data := range fast {
			if !bytes.Equal(data, slow[name]) {
				t.Fatalf("combiner %v: file %s differs between runs", withCombiner, name)
			}
		}
	}
}

// sumCombiner adds decimal values.
var sumCombiner = mr.ReducerFunc(func(tc mr.TaskContext, key []byte, values mr.ValueIterator, out mr.Emitter) error {
	sum := 0
	for values.Next() {
		n, err := strconv.Atoi(string(values.Value()))
		if err != nil {
			return err
		}
		sum += n
	}
	return out.Emit(key, []byte(strconv.Itoa(sum)))
})

func TestBufferCombinerCounters(t *testing.T) {
	counters := mr.NewCounters()
	// Each record costs 1+1+16 = 18; the threshold is 100, so a spill is cut
	// after every 6th record.
	b, c := newTestBuffer(t, Options{BufferBytes: 100, SpillPercent: 1, NumPartitions: 1, Combiner: sumCombiner, Counters: counters})
	words := "a b a c a b  a a a b c c  a"
	var kvs [][2][]byte
	for _, w := range strings.Fields(words) {
		kvs = append(kvs, kv(w, "1"))
	}
	emitAll(t, b, kvs)
	want := [][]string{{"a=3", "b=2", "c=1"}, {"a=3", "b=1", "c=2"}, {"a=1"}}
	if len(c.spills) != len(want) {
		t.Fatalf("%d spills, want %d", len(c.spills), len(want))
	}
	var materialized int64
	for i, s := range c.spills {
		var got []string
		for _, r := range readSpillPartition(t, s, 0) {
			got = append(got, string(r[0])+"="+string(r[1]))
		}
		if !slices.Equal(got, want[i]) {
			t.Fatalf("spill %d = %v, want %v", i, got, want[i])
		}
		st, err := os.Stat(s.DataPath)
		if err != nil {
			t.Fatal(err)
		}
		materialized += st.Size()
	}
	g := mr.TaskCounterGroup
	snap := counters.Snapshot()
	for name, v := range map[string]int64{
		mr.MapOutputRecords:           13,
		mr.MapOutputBytes:             26,
		mr.CombineInputRecords:        13,
		mr.CombineOutputRecords:       7,
		mr.SpilledRecords:             7,
		mr.MapOutputMaterializedBytes: materialized,
	} {
		if got := snap.Get(g, name); got != v {
			t.Errorf("counter %s = %d, want %d", name, got, v)
		}
	}
}

func TestBufferCountersMultiPartition(t *testing.T) {
	counters := mr.NewCounters()
	kvs := genKVs(5000, 3, 1, 11)
	for i := range kvs {
		kvs[i][1] = []byte("1")
	}
	for _, withCombiner := range []bool{false, true} {
		counters = mr.NewCounters()
		opts := Options{BufferBytes: 8 << 10, SpillPercent: 0.9, NumPartitions: 4, Counters: counters}
		if withCombiner {
			opts.Combiner = sumCombiner
		}
		b, c := newTestBuffer(t, opts)
		emitAll(t, b, kvs)
		var spilled, materialized, groups int64
		for _, s := range c.spills {
			for p, seg := range s.Partitions {
				spilled += seg.Records
				materialized += seg.Length
				run := readSpillPartition(t, s, p)
				g := NewGrouper(NewSliceIterator(run), nil)
				for g.NextKey() {
					groups++
				}
			}
		}
		snap := counters.Snapshot()
		tg := mr.TaskCounterGroup
		wantSpilled := int64(len(kvs))
		wantCombIn, wantCombOut := int64(0), int64(0)
		if withCombiner {
			wantSpilled, wantCombIn, wantCombOut = groups, int64(len(kvs)), groups
			if spilled != groups {
				t.Fatalf("combined spills hold %d records for %d key groups", spilled, groups)
			}
		}
		checks := map[string][2]int64{
			mr.MapOutputRecords:           {snap.Get(tg, mr.MapOutputRecords), int64(len(kvs))},
			mr.MapOutputBytes:             {snap.Get(tg, mr.MapOutputBytes), int64(len(kvs) * 4)},
			mr.SpilledRecords:             {snap.Get(tg, mr.SpilledRecords), wantSpilled},
			"spilled in files":            {spilled, wantSpilled},
			mr.CombineInputRecords:        {snap.Get(tg, mr.CombineInputRecords), wantCombIn},
			mr.CombineOutputRecords:       {snap.Get(tg, mr.CombineOutputRecords), wantCombOut},
			mr.MapOutputMaterializedBytes: {snap.Get(tg, mr.MapOutputMaterializedBytes), materialized},
		}
		for name, gw := range checks {
			if gw[0] != gw[1] {
				t.Errorf("combiner %v: %s = %d, want %d", withCombiner, name, gw[0], gw[1])
			}
		}
	}
}

func TestBufferEmpty(t *testing.T) {
	b, c := newTestBuffer(t, Options{BufferBytes: 1 << 20, SpillPercent: 0.8, NumPartitions: 3})
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if len(c.spills) != 1 || !c.spills[0].Final || c.spills[0].Index != 0 {
		t.Fatalf("spills = %+v, want one final spill 0", c.spills)
	}
	checkSpillLayout(t, c.spills, 3)
	for p, seg := range c.spills[0].Partitions {
		if seg != (SegmentInfo{}) {
			t.Fatalf("partition %d segment %+v, want zero", p, seg)
		}
		if got := readSpillPartition(t, c.spills[0], p); len(got) != 0 {
			t.Fatalf("partition %d has records", p)
		}
	}
	if err := b.Close(); err == nil {
		t.Fatal("second Close succeeded")
	}
	if err := b.Emit([]byte("k"), nil); err == nil {
		t.Fatal("Emit after Close succeeded")
	}
}

func TestBufferLargeRecord(t *testing.T) {
	big := bytes.Repeat([]byte("0123456789"), 1000) // 10000 bytes, buffer is 1000
	kvs := [][2][]byte{kv("a", "1"), kv("b", "2"), kv("c", "3"), {[]byte("big"), big}, kv("d", "4"), kv("e", "5")}
	b, c := newTestBuffer(t, Options{BufferBytes: 1000, SpillPercent: 0.8, NumPartitions: 1, BlockSize: 512})
	emitAll(t, b, kvs)
	want := [][]string{{"a", "b", "c"}, {"big"}, {"d", "e"}}
	if len(c.spills) != len(want) {
		t.Fatalf("%d spills, want %d", len(c.spills), len(want))
	}
	for i, s := range c.spills {
		run := readSpillPartition(t, s, 0)
		var keys []string
		for _, r := range run {
			keys = append(keys, string(r[0]))
		}
		if !slices.Equal(keys, want[i]) {
			t.Fatalf("spill %d keys %v, want %v", i, keys, want[i])
		}
		if i == 1 && !bytes.Equal(run[0][1], big) {
			t.Fatal("big value corrupted")
		}
	}
}

func TestBufferEmitBlocksOnMemory(t *testing.T) {
	release := make(chan struct{})
	started := make(chan int, 10)
	// Records cost 100; threshold 600 (6 records); buffer 1000.
	b, c := newTestBuffer(t, Options{BufferBytes: 1000, SpillPercent: 0.6, NumPartitions: 1})
	b.spillHook = func(i int) {
		started <- i
		if i == 0 {
			<-release
		}
	}
	rec := bytes.Repeat([]byte("x"), 80)
	for i := 0; i < 6; i++ { // spill 0 is cut and held
		if err := b.Emit([]byte{byte(i), 0, 0, 0}, rec); err != nil {
			t.Fatal(err)
		}
	}
	if got := <-started; got != 0 {
		t.Fatalf("spill %d started, want 0", got)
	}
	for i := 0; i < 4; i++ { // 600 in flight + 400 current = 1000: fits
		if err := b.Emit([]byte{byte(i), 1, 0, 0}, rec); err != nil {
			t.Fatal(err)
		}
	}
	// One more record would make 1100 > 1000: Emit must wait for spill 0.
	done := make(chan error, 1)
	go func() { done <- b.Emit([]byte{9, 9, 9, 9}, rec) }()
	select {
	case err := <-done:
		t.Fatalf("Emit returned (%v) while the buffer was full", err)
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if len(c.spills) != 1 {
		t.Fatalf("%d spills reported after the wait, want 1", len(c.spills))
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	// Spill 0 has 6 records, the final spill the other 5: the wait did not
	// move the boundary.
	if len(c.spills) != 2 || c.spills[0].Partitions[0].Records != 6 || c.spills[1].Partitions[0].Records != 5 {
		t.Fatalf("spills = %+v", c.spills)
	}
}

func TestBufferErrors(t *testing.T) {
	boom := errors.New("announce failed")
	tests := []struct {
		name string
		opts Options
		emit int
		want string
	}{
		{"OnSpill error", Options{OnSpill: func(SpillInfo) error { return boom }}, 100, "announce failed"},
		{"partitioner out of range", Options{Partitioner: mr.PartitionerFunc(func([]byte, int) int { return 5 })}, 1, "partition 5, outside [0, 2)"},
		{"negative partition", Options{Partitioner: mr.PartitionerFunc(func([]byte, int) int { return -1 })}, 1, "partition -1"},
		{"combiner changes key", Options{Combiner: mr.ReducerFunc(func(tc mr.TaskContext, key []byte, values mr.ValueIterator, out mr.Emitter) error {
			return out.Emit(append([]byte("x"), key...), nil)
		})}, 100, "combiner emitted key"},
		{"combiner panic", Options{Combiner: mr.ReducerFunc(func(mr.TaskContext, []byte, mr.ValueIterator, mr.Emitter) error {
			panic("oops")
		})}, 100, "combiner panicked on key \"key000\": oops"},
		{"combiner error", Options{Combiner: mr.ReducerFunc(func(mr.TaskContext, []byte, mr.ValueIterator, mr.Emitter) error {
			return boom
		})}, 100, "announce failed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			opts := tc.opts
			opts.BufferBytes, opts.SpillPercent, opts.NumPartitions = 200, 0.5, 2
			b, _ := newTestBuffer(t, opts)
			var err error
			for i := 0; i < tc.emit && err == nil; i++ {
				err = b.Emit([]byte(fmt.Sprintf("key%03d", i)), []byte("v"))
			}
			if err == nil {
				err = b.Close()
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want one containing %q", err, tc.want)
			}
			// The buffer stays failed.
			if err2 := b.Emit([]byte("k"), nil); err2 == nil {
				t.Fatal("Emit after an error succeeded")
			}
			b.Abort()
		})
	}
}

func TestNewBufferOptions(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	ok := Options{BufferBytes: 100, SpillPercent: 0.8, NumPartitions: 1, Dir: dir}
	tests := []struct {
		name   string
		mutate func(*Options)
		want   string
	}{
		{"ok", func(*Options) {}, ""},
		{"zero buffer", func(o *Options) { o.BufferBytes = 0 }, "buffer size 0"},
		{"huge buffer", func(o *Options) { o.BufferBytes = 1 << 40 }, "out of range"},
		{"zero percent", func(o *Options) { o.SpillPercent = 0 }, "spill percent 0"},
		{"percent above one", func(o *Options) { o.SpillPercent = 1.5 }, "spill percent 1.5"},
		{"NaN percent", func(o *Options) { o.SpillPercent = nan() }, "spill percent NaN"},
		{"no partitions", func(o *Options) { o.NumPartitions = 0 }, "number of partitions 0"},
		{"negative block", func(o *Options) { o.BlockSize = -1 }, "block size -1"},
		{"no dir", func(o *Options) { o.Dir = "" }, "no spill directory"},
		{"missing dir", func(o *Options) { o.Dir = filepath.Join(dir, "nope") }, "no such file"},
		{"dir is a file", func(o *Options) { o.Dir = file }, "is not a directory"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := ok
			tc.mutate(&o)
			_, err := NewBuffer(o)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func nan() float64 { z := 0.0; return z / z }

func TestBufferAbort(t *testing.T) {
	release := make(chan struct{})
	b, c := newTestBuffer(t, Options{BufferBytes: 1000, SpillPercent: 0.5, NumPartitions: 2})
	b.spillHook = func(i int) {
		if i == 1 {
			<-release
		}
	}
	rec := bytes.Repeat([]byte("x"), 80)
	// 5 records cut spill 0; 5 more cut spill 1 after reporting spill 0.
	for i := 0; i < 10; i++ {
		if err := b.Emit([]byte{byte(i), 0, 0, 0}, rec); err != nil {
			t.Fatal(err)
		}
	}
	if len(c.spills) != 1 {
		t.Fatalf("%d spills reported, want 1", len(c.spills))
	}
	aborted := make(chan struct{})
	go func() { b.Abort(); close(aborted) }()
	select {
	case <-aborted:
		t.Fatal("Abort returned while the spill was still running")
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	<-aborted
	if err := b.Emit([]byte("k"), nil); err == nil {
		t.Fatal("Emit after Abort succeeded")
	}
	if err := b.Close(); err == nil {
		t.Fatal("Close after Abort succeeded")
	}
	// Spill 0 is still there; spill 1 never became durable.
	names := dirContents(t, b.opts.Dir)
	var got []string
	for n := range names {
		got = append(got, n)
	}
	slices.Sort(got)
	if want := []string{IndexFileName(0), DataFileName(0)}; !slices.Equal(got, want) {
		t.Fatalf("files after Abort = %v, want %v", got, want)
	}
}

func TestKeyPrefixOrder(t *testing.T) {
	keys := [][]byte{nil, {0}, {0, 0}, {0, 1}, {1}, []byte("a"), []byte("a\x00"), []byte("abcdefgh"), []byte("abcdefgh\x00"), []byte("abcdefghi"), []byte("abcdefgi"), {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}}
	for _, a := range keys {
		for _, b := range keys {
			pa, pb := keyPrefix(a), keyPrefix(b)
			if pa != pb {
				want := bytes.Compare(a, b)
				got := -1
				if pa > pb {
					got = 1
				}
				if got != want {
					t.Fatalf("prefix order of %q and %q is %d, bytes order %d", a, b, got, want)
				}
			}
		}
	}
}

// TestKeyPrefixInCap: the prefix read as a word within the key's capacity
// is keyPrefix's, for every length up to 16 and every capacity from the
// length to 16, whatever the bytes past the length hold.
func TestKeyPrefixInCap(t *testing.T) {
	backing := []byte("\xffabcdefgh\x00\x01\xfe\xff\x7fqrstuvwxyz")
	for n := range 17 {
		for c := n; c <= 16; c++ {
			for _, start := range []int{0, 1, 5} {
				key := backing[start : start+n : start+c]
				if got, want := keyPrefixInCap(key), keyPrefix(key); got != want {
					t.Fatalf("key %q (capacity %d): prefix %#x, keyPrefix %#x", key, c, got, want)
				}
			}
		}
	}
}

// BenchmarkBufferEmit measures one map's output of 1e6 small records (10-byte
// keys, 10-byte values, 4 partitions, 16 MiB buffer) including the sort,
// the spill writes and Close.
func BenchmarkBufferEmit(b *testing.B) {
	const n = 1_000_000
	keys := genKVs(n, 10, 10, 77)
	b.SetBytes(int64(n * 20))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		dir := b.TempDir()
		buf, err := NewBuffer(Options{BufferBytes: 16 << 20, SpillPercent: 0.8, NumPartitions: 4, Dir: dir})
		if err != nil {
			b.Fatal(err)
		}
		for _, r := range keys {
			if err := buf.Emit(r[0], r[1]); err != nil {
				b.Fatal(err)
			}
		}
		if err := buf.Close(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/record")
}

func TestSortByKeyPrefix(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	alphabet := []byte{0, 1, 'a', 'b', 0xff}
	for _, n := range []int{0, 1, 2, 10, radixMin - 1, radixMin, 5000} {
		for _, maxLen := range []int{3, 8, 12} {
			var data []byte
			var recs []rec
			var want [][2][]byte
			for i := 0; i < n; i++ {
				k := make([]byte, rng.Intn(maxLen+1))
				for j := range k {
					k[j] = alphabet[rng.Intn(len(alphabet))]
				}
				v := []byte(strconv.Itoa(i))
				recs = append(recs, rec{prefix: keyPrefix(k), off: uint32(len(data)), klen: uint32(len(k)), vlen: uint32(len(v))})
				data = append(data, k...)
				data = append(data, v...)
				want = append(want, [2][]byte{k, v})
			}
			sortKVsStable(want)
			sortByKeyPrefix(data, recs, make([]rec, len(recs)))
			got := make([][2][]byte, len(recs))
			for i, r := range recs {
				got[i] = [2][]byte{data[r.off : r.off+r.klen], data[r.off+r.klen : r.off+r.klen+r.vlen]}
			}
			if !equalKVs(got, want) {
				t.Fatalf("n=%d maxLen=%d: order differs from a stable sort", n, maxLen)
			}
		}
	}
}

func TestBufferPoll(t *testing.T) {
	release := make(chan struct{})
	b, c := newTestBuffer(t, Options{BufferBytes: 1000, SpillPercent: 0.5, NumPartitions: 1})
	spilled := make(chan struct{})
	b.spillHook = func(int) { <-release }
	rec := bytes.Repeat([]byte("x"), 80)
	for i := 0; i < 5; i++ {
		if err := b.Emit([]byte{byte(i), 0, 0, 0}, rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Poll(); err != nil || len(c.spills) != 0 {
		t.Fatalf("Poll while spilling: %v, %d spills", err, len(c.spills))
	}
	go func() {
		close(release)
		for len(b.inflight.done) == 0 {
			time.Sleep(time.Millisecond)
		}
		close(spilled)
	}()
	<-spilled
	if err := b.Poll(); err != nil || len(c.spills) != 1 {
		t.Fatalf("Poll after the spill: %v, %d spills", err, len(c.spills))
	}
	if err := b.Close(); err != nil || len(c.spills) != 2 {
		t.Fatalf("Close: %v, %d spills", err, len(c.spills))
	}
}

// BenchmarkBufferEmitTeraSort emits 1e6 TeraSort-like records (10-byte
// random keys, 90-byte values) through a 64 MiB buffer with 8 partitions.
func BenchmarkBufferEmitTeraSort(b *testing.B) {
	const n = 1_000_000
	rng := rand.New(rand.NewSource(1))
	keys := make([]byte, 10*n)
	rng.Read(keys)
	value := bytes.Repeat([]byte("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"), 3)[:90]
	b.SetBytes(100 * n)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		buf, err := NewBuffer(Options{BufferBytes: 64 << 20, SpillPercent: 0.8, NumPartitions: 8, Dir: b.TempDir()})
		if err != nil {
			b.Fatal(err)
		}
		for r := 0; r < n; r++ {
			if err := buf.Emit(keys[10*r:10*r+10], value); err != nil {
				b.Fatal(err)
			}
		}
		if err := buf.Close(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/record")
}

func TestBufferDefaultOverheadIsTheRealCost(t *testing.T) {
	if DefaultRecordOverhead != 48 {
		t.Fatalf("DefaultRecordOverhead = %d, want 48 (two 24-byte recs)", DefaultRecordOverhead)
	}
	// With the default charge, records of 2 bytes cost 50: a 100-byte
	// threshold cuts after every second record.
	var got []int
	b, err := NewBuffer(Options{BufferBytes: 100, SpillPercent: 1, NumPartitions: 1, Dir: t.TempDir(),
		OnSpill: func(s SpillInfo) error { got = append(got, int(s.Partitions[0].Records)); return nil }})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		if err := b.Emit([]byte{'k'}, []byte{'v'}); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, []int{2, 2, 1}) {
		t.Fatalf("records per spill %v, want [2 2 1]", got)
	}
}
