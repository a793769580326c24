package spill

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/bits"
	"math/rand"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"gomr/mr"
)

// Combiners for the table tests, each with the plain function a reference
// spill applies to all of a key's values at once. All but identity may be
// applied to consecutive runs of a key's values in any grouping with the
// same end result, so a spill combined in the table must be byte for byte
// the spill of sorting every record and combining each key once.
type testCombiner struct {
	name string
	fn   func(values [][]byte) [][]byte
	// declared: the reducer is an mr.UvarintSumCombiner (fn must be
	// sumUvarint's), so that the table keeps running sums.
	declared bool
}

var (
	// sumUvarint adds uvarint counts, as WordCount's combiner does.
	sumUvarint = testCombiner{name: "sum", fn: func(values [][]byte) [][]byte {
		var sum uint64
		for _, v := range values {
			n, k := binary.Uvarint(v)
			if k <= 0 || k != len(v) {
				panic(fmt.Sprintf("value %x is not a uvarint", v))
			}
			sum += n
		}
		return [][]byte{binary.AppendUvarint(nil, sum)}
	}}
	// declaredSum is sumUvarint declared as a uvarint sum.
	declaredSum = testCombiner{name: "declared sum", fn: sumUvarint.fn, declared: true}
	// concat joins the values in order: its output never shrinks, so the
	// table drops its pre-combines.
	concat = testCombiner{name: "concat", fn: func(values [][]byte) [][]byte {
		return [][]byte{bytes.Join(values, nil)}
	}}
	// maxValue keeps the greatest value.
	maxValue = testCombiner{name: "max", fn: func(values [][]byte) [][]byte {
		return [][]byte{slices.MaxFunc(values, bytes.Compare)}
	}}
	// identity emits every value: applied to any runs of values it gives
	// them all back in order.
	identity = testCombiner{name: "identity", fn: func(values [][]byte) [][]byte { return values }}
)

// summingReducer is a reducer declared as a uvarint sum.
type summingReducer struct{ mr.Reducer }

func (summingReducer) SumsUvarints() {}

// reducer makes c an mr.Reducer.
func (c testCombiner) reducer() mr.Reducer {
	if c.declared {
		undeclared := c
		undeclared.declared = false
		return summingReducer{undeclared.reducer()}
	}
	return mr.ReducerFunc(func(_ mr.TaskContext, key []byte, values mr.ValueIterator, out mr.Emitter) error {
		var vs [][]byte
		for values.Next() {
			vs = append(vs, bytes.Clone(values.Value()))
		}
		for _, v := range c.fn(vs) {
			if err := out.Emit(key, v); err != nil {
				return err
			}
		}
		return nil
	})
}

// referenceSpills is what a Buffer must spill: the records cut into
// batches by the boundary rule, each batch's records of each partition
// sorted by key (ties in emit order) and each key's values combined at
// once. It returns spill -> partition -> records.
func referenceSpills(kvs [][2][]byte, opts Options, c testCombiner) [][][][2][]byte {
	costs := make([]int64, len(kvs))
	for i, r := range kvs {
		costs[i] = int64(len(r[0])+len(r[1])) + opts.RecordOverhead
	}
	return referenceSpillsOf(kvs, expectedBatches(costs, opts.BufferBytes, opts.SpillPercent), opts, c)
}

// referenceSpillsOf is referenceSpills with the records cut into batches
// of the given sizes.
func referenceSpillsOf(kvs [][2][]byte, batches []int, opts Options, c testCombiner) [][][][2][]byte {
	var out [][][][2][]byte
	next := 0
	for _, n := range batches {
		parts := make([][][2][]byte, opts.NumPartitions)
		for _, r := range kvs[next : next+n] {
			p := mr.HashPartitioner{}.Partition(r[0], opts.NumPartitions)
			parts[p] = append(parts[p], r)
		}
		next += n
		for p, recs := range parts {
			sortKVsStable(recs)
			var combined [][2][]byte
			for i := 0; i < len(recs); {
				j := i
				var vals [][]byte
				for ; j < len(recs) && bytes.Equal(recs[j][0], recs[i][0]); j++ {
					vals = append(vals, recs[j][1])
				}
				for _, v := range c.fn(vals) {
					combined = append(combined, [2][]byte{recs[i][0], v})
				}
				i = j
			}
			parts[p] = combined
		}
		out = append(out, parts)
	}
	return out
}

// checkSpills compares each partition of each spill with the reference's
// (spill -> partition -> records).
func checkSpills(t *testing.T, spills []SpillInfo, ref [][][][2][]byte) {
	t.Helper()
	if len(ref) != len(spills) {
		t.Fatalf("%d spills, the reference has %d", len(spills), len(ref))
	}
	for i, s := range spills {
		for p := range ref[i] {
			if got := readSpillPartition(t, s, p); !equalKVs(got, ref[i][p]) {
				t.Fatalf("spill %d partition %d: %d records differ from the reference's %d", i, p, len(got), len(ref[i][p]))
			}
		}
	}
}

// runBuffer emits kvs through a Buffer with opts, with or without its
// combining table, and returns the Buffer, its spills and the contents of
// its spill directory.
func runBuffer(t *testing.T, kvs [][2][]byte, opts Options, table bool) (*Buffer, []SpillInfo, map[string][]byte) {
	t.Helper()
	opts.Dir = t.TempDir()
	b, c := newTestBuffer(t, opts)
	if !table {
		b.tab = nil
	} else if b.tab == nil {
		t.Fatalf("options %+v give no combining table", opts)
	}
	emitAll(t, b, kvs)
	return b, c.spills, dirContents(t, opts.Dir)
}

// genWords returns n records whose keys are drawn from a vocabulary of
// size words (Zipf-like: low ranks far more often) of 1 to maxKey bytes,
// with values made by value(i).
func genWords(n, words, maxKey int, seed int64, value func(rng *rand.Rand, i int) []byte) [][2][]byte {
	rng := rand.New(rand.NewSource(seed))
	vocab := make([][]byte, words)
	for i := range vocab {
		w := make([]byte, 1+rng.Intn(maxKey))
		for j := range w {
			w[j] = byte('a' + rng.Intn(26))
		}
		vocab[i] = w
	}
	zipf := rand.NewZipf(rng, 1.2, 1, uint64(words-1))
	kvs := make([][2][]byte, n)
	for i := range kvs {
		kvs[i] = [2][]byte{vocab[zipf.Uint64()], value(rng, i)}
	}
	return kvs
}

func uvarintOne(*rand.Rand, int) []byte { return []byte{1} }

// sharedPrefixKeys returns n records with one-byte counts whose keys share
// their first 8 or 16 bytes, or differ from each other only in length or in
// trailing zero bytes.
func sharedPrefixKeys(n int, seed int64) [][2][]byte {
	rng := rand.New(rand.NewSource(seed))
	stems := []string{"", "abcdefgh", "abcdefghijklmnop", "abcdefgh\x00\x00\x00\x00\x00\x00\x00\x00"}
	var vocab [][]byte
	for _, stem := range stems {
		for range 60 {
			k := []byte(stem)
			for range rng.Intn(10) {
				k = append(k, "ab\x00"[rng.Intn(3)])
			}
			vocab = append(vocab, k)
		}
	}
	kvs := make([][2][]byte, n)
	for i := range kvs {
		kvs[i] = [2][]byte{vocab[rng.Intn(len(vocab))], {1}}
	}
	return kvs
}

func TestTableEntryIsOneCacheLine(t *testing.T) {
	if s := unsafe.Sizeof(tentry{}); s != 64 {
		t.Fatalf("tentry is %d bytes, want 64", s)
	}
}

// TestTableMatchesSortAndCombine checks, for combiners that may be applied
// to any runs of a key's values, that the spills of a Buffer with its
// combining table are byte for byte those of the same Buffer without it
// (every record sorted, then combined once per key), and equal to an
// independent reference.
func TestTableMatchesSortAndCombine(t *testing.T) {
	counts := func(rng *rand.Rand, _ int) []byte { return binary.AppendUvarint(nil, uint64(rng.Intn(300))) }
	bigCounts := func(rng *rand.Rand, _ int) []byte {
		return binary.AppendUvarint(nil, uint64(rng.Int63n(1<<40)))
	}
	var long []byte
	for i := range 300 {
		long = append(long, byte(i))
	}
	mixed := func(rng *rand.Rand, i int) []byte {
		switch i % 7 {
		case 0:
			return long[:rng.Intn(len(long))] // past the inline room: chained
		case 1:
			return nil
		default:
			return long[i%50 : i%50+rng.Intn(12)]
		}
	}
	tests := []struct {
		name        string
		kvs         [][2][]byte
		comb        testCombiner
		bufferBytes int64
		parts       int
		// Whether some pre-combines run, some are dropped, and some
		// batch falls back to plain records: 1 yes, 0 no, -1 either.
		wantPre, wantNoPre, wantRaw int
	}{
		{name: "word counts", kvs: genWords(40000, 3000, 10, 1, uvarintOne), comb: sumUvarint, bufferBytes: 256 << 10, parts: 3, wantPre: 1},
		{name: "word counts, one partition", kvs: genWords(20000, 500, 6, 2, uvarintOne), comb: sumUvarint, bufferBytes: 128 << 10, parts: 1, wantPre: 1},
		{name: "counts up to 300", kvs: genWords(30000, 2000, 12, 3, counts), comb: sumUvarint, bufferBytes: 200 << 10, parts: 4, wantPre: 1},
		{name: "large counts", kvs: genWords(30000, 2000, 12, 4, bigCounts), comb: sumUvarint, bufferBytes: 200 << 10, parts: 2, wantPre: 1},
		{name: "long keys", kvs: genWords(20000, 1500, 40, 5, uvarintOne), comb: sumUvarint, bufferBytes: 200 << 10, parts: 2, wantPre: 1},
		{name: "keys sharing 8 or 16 bytes", kvs: sharedPrefixKeys(30000, 12), comb: sumUvarint, bufferBytes: 200 << 10, parts: 2, wantPre: 1},
		{name: "concatenation", kvs: genWords(20000, 300, 8, 6, mixed), comb: concat, bufferBytes: 300 << 10, parts: 3, wantNoPre: 1},
		{name: "maximum", kvs: genWords(20000, 300, 8, 7, mixed), comb: maxValue, bufferBytes: 300 << 10, parts: 3, wantPre: 1, wantNoPre: -1},
		{name: "identity", kvs: genWords(20000, 300, 8, 8, mixed), comb: identity, bufferBytes: 300 << 10, parts: 2, wantNoPre: 1},
		{name: "distinct keys fall back", kvs: genKVs(20000, 12, 3, 9), comb: concat, bufferBytes: 400 << 10, parts: 2, wantRaw: 1},
		{name: "declared word counts", kvs: genWords(40000, 3000, 10, 1, uvarintOne), comb: declaredSum, bufferBytes: 256 << 10, parts: 3},
		{name: "declared large counts", kvs: genWords(30000, 2000, 12, 4, bigCounts), comb: declaredSum, bufferBytes: 200 << 10, parts: 2},
		{name: "declared, keys sharing 8 or 16 bytes", kvs: sharedPrefixKeys(30000, 12), comb: declaredSum, bufferBytes: 200 << 10, parts: 2},
		{name: "declared, tiny buffer falls back", kvs: genWords(5000, 400, 6, 10, uvarintOne), comb: declaredSum, bufferBytes: 4 << 10, parts: 2, wantRaw: 1},
		{name: "tiny buffer falls back", kvs: genWords(5000, 400, 6, 10, uvarintOne), comb: sumUvarint, bufferBytes: 4 << 10, parts: 2, wantPre: -1, wantRaw: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			opts := Options{BufferBytes: tc.bufferBytes, SpillPercent: 0.8, NumPartitions: tc.parts, BlockSize: 4096,
				Combiner: tc.comb.reducer(), RecordOverhead: 48}
			withTable, spills, files := runBuffer(t, tc.kvs, opts, true)
			_, _, plainFiles := runBuffer(t, tc.kvs, opts, false)
			if len(spills) < 3 {
				t.Fatalf("%d spills; the test wants several", len(spills))
			}
			tab := withTable.tab
			for _, c := range []struct {
				what string
				n    int
				want int
			}{{"pre-combines", tab.preCombines, tc.wantPre}, {"dropped pre-combines", tab.dropped, tc.wantNoPre},
				{"batches fallen back to plain records", tab.rawBatches, tc.wantRaw}} {
				if c.want >= 0 && (c.n > 0) != (c.want == 1) {
					t.Errorf("%d %s, want some: %v", c.n, c.what, c.want == 1)
				}
			}
			if len(files) != len(plainFiles) {
				t.Fatalf("%d files with the table, %d without", len(files), len(plainFiles))
			}
			for name, data := range files {
				if !bytes.Equal(data, plainFiles[name]) {
					t.Fatalf("%s differs with and without the table", name)
				}
			}
			checkSpills(t, spills, referenceSpills(tc.kvs, opts, tc.comb))
		})
	}
}

// TestTableCounters follows one key through the table: 40 one-byte counts.
// Eleven fit in the entry (2 bytes each of its 23); the twelfth goes on
// the chain and the twelve are combined into one count; then ten more fit
// beside it, the next is chained and twelve are combined again; and so on:
// pre-combines of 12, 12 and 12 values, and 7 values left for the cut.
func TestTableCounters(t *testing.T) {
	if inlineBytes != 23 {
		t.Fatalf("the figures below assume 23 bytes of inline values, not %d", inlineBytes)
	}
	counters := mr.NewCounters()
	b, c := newTestBuffer(t, Options{BufferBytes: 1 << 20, SpillPercent: 0.8, NumPartitions: 2,
		Combiner: sumUvarint.reducer(), Counters: counters})
	var kvs [][2][]byte
	for range 40 {
		kvs = append(kvs, kv("word", "\x01"))
	}
	kvs = append(kvs, kv("other", "\x05"))
	emitAll(t, b, kvs)
	if b.tab.preCombines != 3 {
		t.Errorf("%d pre-combines, want 3", b.tab.preCombines)
	}
	var got []string
	for p := range 2 {
		for _, r := range readSpillPartition(t, c.spills[0], p) {
			n, _ := binary.Uvarint(r[1])
			got = append(got, fmt.Sprintf("%s=%d", r[0], n))
		}
	}
	slices.Sort(got)
	if want := []string{"other=5", "word=40"}; !slices.Equal(got, want) {
		t.Fatalf("spilled %v, want %v", got, want)
	}
	snap := counters.Snapshot()
	for name, want := range map[string]int64{
		mr.MapOutputRecords:     41,
		mr.MapOutputBytes:       41*1 + 40*4 + 5,
		mr.CombineInputRecords:  12 + 12 + 12 + 7 + 1,
		mr.CombineOutputRecords: 3 + 2,
		mr.SpilledRecords:       2,
	} {
		if got := snap.Get(mr.TaskCounterGroup, name); got != want {
			t.Errorf("%s = %d, want %d", name, got, want)
		}
	}
}

// TestTableMemoryBound emits records whose keys never repeat through a
// small buffer: the table would pass the buffer size, so each batch falls
// back to plain records, and the table's memory stays within the buffer.
func TestTableMemoryBound(t *testing.T) {
	const bufferBytes = 64 << 10
	b, c := newTestBuffer(t, Options{BufferBytes: bufferBytes, SpillPercent: 0.8, NumPartitions: 2,
		Combiner: sumUvarint.reducer(), RecordOverhead: 48})
	for i := range 20000 {
		if err := b.Emit(fmt.Appendf(nil, "key%06d", i), []byte{1}); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	// At most one record over: its entry, key and value node.
	if peak := b.tab.peak; peak > bufferBytes+tentrySize+9+10 || peak < bufferBytes/2 {
		t.Fatalf("table and spilling output peaked at %d bytes, buffer %d", peak, bufferBytes)
	}
	if b.tab.rawBatches < len(c.spills)-1 {
		t.Fatalf("%d of %d batches fell back to plain records", b.tab.rawBatches, len(c.spills))
	}
	var n int64
	for _, s := range c.spills {
		for _, seg := range s.Partitions {
			n += seg.Records
		}
	}
	if n != 20000 {
		t.Fatalf("%d records spilled, want 20000", n)
	}
}

// TestTableCombinerErrors checks that a combiner's failure in a pre-combine
// fails Emit, with the key, and leaves the buffer failed.
func TestTableCombinerErrors(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name string
		comb mr.ReducerFunc
		want string
	}{
		{"error", func(mr.TaskContext, []byte, mr.ValueIterator, mr.Emitter) error { return boom }, "boom"},
		{"panic", func(mr.TaskContext, []byte, mr.ValueIterator, mr.Emitter) error { panic("oops") }, `combiner panicked on key "k": oops`},
		{"other key", func(_ mr.TaskContext, key []byte, _ mr.ValueIterator, out mr.Emitter) error {
			return out.Emit([]byte("j"), nil)
		}, `combiner emitted key "j" for the group of key "k"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, c := newTestBuffer(t, Options{BufferBytes: 1 << 20, SpillPercent: 0.8, NumPartitions: 1, Combiner: tc.comb})
			var err error
			i := 0
			for ; i < 200 && err == nil; i++ {
				err = b.Emit([]byte("k"), []byte{1})
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "spill 0") {
				t.Fatalf("error = %v, want one about spill 0 containing %q", err, tc.want)
			}
			if i > 100 {
				t.Fatalf("the pre-combine failed only at record %d", i)
			}
			if err := b.Close(); err == nil {
				t.Fatal("Close after a failed pre-combine succeeded")
			}
			if len(c.spills) != 0 {
				t.Fatalf("%d spills after a failure", len(c.spills))
			}
			b.Abort()
		})
	}
}

// TestTableDeterministic checks that the same records give the same spill
// files however long the background spills take, with keys that repeat
// (pre-combines) and a combiner that keeps every value.
func TestTableDeterministic(t *testing.T) {
	kvs := genWords(30000, 2000, 10, 11, func(rng *rand.Rand, i int) []byte { return fmt.Appendf(nil, "%d", i) })
	opts := Options{BufferBytes: 128 << 10, SpillPercent: 0.6, NumPartitions: 3, BlockSize: 2048, Combiner: concat.reducer()}
	run := func(slow bool) map[string][]byte {
		o := opts
		o.Dir = t.TempDir()
		b, c := newTestBuffer(t, o)
		if slow {
			rng := rand.New(rand.NewSource(int64(len(kvs))))
			delays := make([]int, 1000)
			for i := range delays {
				delays[i] = rng.Intn(3000)
			}
			b.spillHook = func(i int) { busyWait(delays[i%len(delays)]) }
		}
		emitAll(t, b, kvs)
		if len(c.spills) < 10 {
			t.Fatalf("only %d spills", len(c.spills))
		}
		return dirContents(t, o.Dir)
	}
	fast, slow := run(false), run(true)
	if len(fast) != len(slow) {
		t.Fatalf("%d files in one run, %d in the other", len(fast), len(slow))
	}
	for name, data := range fast {
		if !bytes.Equal(data, slow[name]) {
			t.Fatalf("file %s differs between runs", name)
		}
	}
}

// busyWait spins for about n microseconds' worth of work.
func busyWait(n int) {
	x := 0
	for i := range n * 300 {
		x += i
	}
	_ = x
}

// FuzzTable feeds records drawn from fuzz data through a Buffer with and
// without its combining table, with a sum and a concatenating combiner,
// and compares both with the reference sort-and-combine.
func FuzzTable(f *testing.F) {
	f.Add([]byte("the cat the hat the end a cat a dog"), uint16(300), uint8(2))
	f.Add(bytes.Repeat([]byte{1, 2, 'a', 'b', 3}, 200), uint16(120), uint8(1))
	f.Add(bytes.Repeat([]byte("x y z xx yy zz "), 100), uint16(2000), uint8(5))
	f.Fuzz(func(t *testing.T, data []byte, bufferBytes uint16, parts uint8) {
		// Keys of 0 to 2 bytes from a small alphabet (so they repeat),
		// values of 0 to 40 bytes.
		var kvs [][2][]byte
		for len(data) >= 2 {
			kl, vl := int(data[0]%3), int(data[1]%41)
			data = data[2:]
			key := make([]byte, kl)
			for i := range key {
				if len(data) > 0 {
					key[i] = 'a' + data[0]%4
					data = data[1:]
				}
			}
			vl = min(vl, len(data))
			kvs = append(kvs, [2][]byte{key, data[:vl]})
			data = data[vl:]
		}
		opts := Options{BufferBytes: 64 + int64(bufferBytes), SpillPercent: 0.75, NumPartitions: 1 + int(parts%4),
			BlockSize: 256, RecordOverhead: 16}
		for _, comb := range []testCombiner{concat, sumUvarint, declaredSum} {
			recs := kvs
			if comb.name == "sum" || comb.declared {
				recs = make([][2][]byte, len(kvs))
				for i, r := range kvs {
					recs[i] = [2][]byte{r[0], binary.AppendUvarint(nil, uint64(len(r[1])))}
				}
			}
			opts.Combiner = comb.reducer()
			_, spills, files := runBuffer(t, recs, opts, true)
			_, _, plain := runBuffer(t, recs, opts, false)
			if len(files) != len(plain) {
				t.Fatalf("%s: %d files with the table, %d without", comb.name, len(files), len(plain))
			}
			for name, d := range files {
				if !bytes.Equal(d, plain[name]) {
					t.Fatalf("%s: %s differs with and without the table", comb.name, name)
				}
			}
			ref := referenceSpills(recs, opts, comb)
			if len(ref) != len(spills) {
				t.Fatalf("%s: %d spills, reference %d", comb.name, len(spills), len(ref))
			}
			for i, s := range spills {
				for p := range opts.NumPartitions {
					if got := readSpillPartition(t, s, p); !equalKVs(got, ref[i][p]) {
						t.Fatalf("%s: spill %d partition %d differs from the reference", comb.name, i, p)
					}
				}
			}
		}
	})
}

// BenchmarkBufferWordCount emits 6 million word counts through a 64 MiB
// buffer with 2 partitions and a summing combiner, as a WordCount map does,
// with the combining table and without it (every record sorted, then
// combined). The words are drawn as cmd/mrbench draws them: Zipf-distributed
// ranks (s = 1.1) in a vocabulary of 1,000,000 words, frequent words short.
func BenchmarkBufferWordCount(b *testing.B) {
	const n = 6_000_000
	rng := rand.New(rand.NewSource(12))
	vocab := make([][]byte, 1_000_000)
	for i := range vocab {
		w := make([]byte, max(1, bits.Len(uint(i+1))/2+rng.Intn(3)))
		for j := range w {
			w[j] = byte('a' + rng.Intn(26))
		}
		vocab[i] = w
	}
	// The words back to back, as a map reads them from its text.
	zipf := rand.NewZipf(rng, 1.1, 1, uint64(len(vocab)-1))
	var text []byte
	ends := make([]uint32, n)
	for i := range ends {
		text = append(text, vocab[zipf.Uint64()]...)
		ends[i] = uint32(len(text))
	}
	one := []byte{1}
	for _, mode := range []struct {
		name        string
		table, sums bool
	}{{"table=true", true, false}, {"table=sums", true, true}, {"table=false", false, false}} {
		table := mode.table
		b.Run(mode.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var comb mr.Reducer = &uvarintSummer{}
				if mode.sums {
					comb = summingReducer{comb}
				}
				buf, err := NewBuffer(Options{BufferBytes: 64 << 20, SpillPercent: 0.8, NumPartitions: 2,
					Combiner: comb, Dir: b.TempDir()})
				if err != nil {
					b.Fatal(err)
				}
				if !table {
					buf.tab = nil
				}
				start := uint32(0)
				for _, end := range ends {
					if err := buf.Emit(text[start:end], one); err != nil {
						b.Fatal(err)
					}
					start = end
				}
				if err := buf.Close(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/record")
		})
	}
}

// uvarintSummer is a combiner adding uvarint counts without allocating,
// as WordCount's.
type uvarintSummer struct{ buf [binary.MaxVarintLen64]byte }

func (s *uvarintSummer) Reduce(_ mr.TaskContext, key []byte, values mr.ValueIterator, out mr.Emitter) error {
	var sum uint64
	for values.Next() {
		n, k := binary.Uvarint(values.Value())
		if k <= 0 {
			return fmt.Errorf("value %x is not a uvarint", values.Value())
		}
		sum += n
	}
	return out.Emit(key, s.buf[:binary.PutUvarint(s.buf[:], sum)])
}

// TestTableDeclaredSumError: a table that keeps running sums reports a
// value that is not a uvarint with the combiner's own error.
func TestTableDeclaredSumError(t *testing.T) {
	for _, bad := range [][]byte{{0x80}, {1, 2}, nil} {
		opts := Options{BufferBytes: 64 << 10, SpillPercent: 0.8, NumPartitions: 2, Combiner: declaredSum.reducer(), RecordOverhead: 48}
		b, _ := newTestBuffer(t, opts)
		if b.tab == nil || !b.tab.sum {
			t.Fatal("the buffer does not keep running sums")
		}
		var err error
		for i := 0; i < 100 && err == nil; i++ {
			err = b.Emit([]byte("k"), []byte{1})
		}
		if err == nil {
			err = b.Emit([]byte("k"), bad)
		}
		if err == nil {
			err = b.Close()
		}
		if err == nil || !strings.Contains(err.Error(), "is not a uvarint") {
			t.Errorf("value %x: error %v, want the combiner's", bad, err)
		}
	}
}

// TestTableBound runs records through a Buffer whose combining table is
// bounded (Options.TablePercent): a batch is cut once its table reaches
// the bound, so that keys that stop repeating cut smaller spills instead
// of falling back to plain records. For keys that repeat (word counts),
// keys that never do (distinct numbers), and a mix of both (word counts
// with a run of distinct keys in the middle), it checks that the table
// never passes the bound by more than the records still staged on their
// way into it, that no batch falls back to plain records, that each spill
// is its batch's records sorted and combined, and that the same records
// cut the same spills, byte for byte, in every run.
func TestTableBound(t *testing.T) {
	const bufferBytes = 256 << 10
	distinct := func(n, from int) [][2][]byte {
		kvs := make([][2][]byte, n)
		for i := range kvs {
			kvs[i] = [2][]byte{fmt.Appendf(nil, "%d", 1_000_000+7*(from+i)), {1}}
		}
		return kvs
	}
	words := genWords(60000, 3000, 10, 21, uvarintOne)
	mix := slices.Concat(words[:20000], distinct(20000, 0), words[20000:])
	cases := []struct {
		name    string
		kvs     [][2][]byte
		comb    testCombiner
		percent float64
		// wantTableCuts: some batches cut by the table's bound (1), none
		// (0); wantRawUnbounded: the same records with no bound make
		// batches that fall back to plain records.
		wantTableCuts, wantRawUnbounded bool
	}{
		{name: "repeating keys, bound not reached", kvs: words, comb: declaredSum, percent: 0.5},
		{name: "repeating keys, bound reached", kvs: words, comb: declaredSum, percent: 0.05, wantTableCuts: true},
		{name: "distinct keys", kvs: distinct(40000, 0), comb: declaredSum, percent: 0.25, wantTableCuts: true, wantRawUnbounded: true},
		{name: "distinct keys, values kept", kvs: distinct(40000, 0), comb: sumUvarint, percent: 0.25, wantTableCuts: true, wantRawUnbounded: true},
		{name: "mix", kvs: mix, comb: declaredSum, percent: 0.25, wantTableCuts: true, wantRawUnbounded: true},
		{name: "mix, concatenation", kvs: mix, comb: concat, percent: 0.25, wantTableCuts: true, wantRawUnbounded: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			opts := Options{BufferBytes: bufferBytes, SpillPercent: 0.8, NumPartitions: 3, BlockSize: 4096,
				Combiner: tc.comb.reducer(), RecordOverhead: 48, TablePercent: tc.percent}
			b, spills, files := runBuffer(t, tc.kvs, opts, true)
			if b.tab.rawBatches != 0 {
				t.Errorf("%d batches fell back to plain records", b.tab.rawBatches)
			}
			// The bound is checked before each record goes in; the
			// records staged behind it (three groups at most) and the one
			// checked may pass it.
			maxRec := int64(0)
			for _, r := range tc.kvs {
				maxRec = max(maxRec, int64(len(r[0])+len(r[1])))
			}
			bound := int64(math.Ceil(float64(bufferBytes) * tc.percent))
			slack := (3*stageSize + 1) * (tentrySize + slotBytesPerKey + maxRec + 4 + 1)
			if b.tab.keyPeak > bound+slack {
				t.Errorf("the table held %d bytes at a cut, over its bound of %d (+%d)", b.tab.keyPeak, bound, slack)
			}
			// Batches cut by the bound are those below the spill
			// threshold (all but the last, which Close cuts).
			costs := make([]int64, len(tc.kvs))
			for i, r := range tc.kvs {
				costs[i] = int64(len(r[0])+len(r[1])) + opts.RecordOverhead
			}
			byThreshold := expectedBatches(costs, opts.BufferBytes, opts.SpillPercent)
			if cut := !slices.Equal(b.batchRecs, byThreshold); cut != tc.wantTableCuts {
				t.Errorf("batches %v, by the spill threshold alone %v: cut by the table's bound %v, want %v",
					b.batchRecs, byThreshold, cut, tc.wantTableCuts)
			}
			checkSpills(t, spills, referenceSpillsOf(tc.kvs, b.batchRecs, opts, tc.comb))
			b2, _, files2 := runBuffer(t, tc.kvs, opts, true)
			if !slices.Equal(b.batchRecs, b2.batchRecs) || !maps.EqualFunc(files, files2, bytes.Equal) {
				t.Fatalf("a second run cut batches %v, the first %v, or its spill files differ", b2.batchRecs, b.batchRecs)
			}
			unbounded := opts
			unbounded.TablePercent = 0
			u, _, _ := runBuffer(t, tc.kvs, unbounded, true)
			if (u.tab.rawBatches > 0) != tc.wantRawUnbounded {
				t.Errorf("without a bound %d batches fell back to plain records, want some: %v", u.tab.rawBatches, tc.wantRawUnbounded)
			}
		})
	}
}

// TestTablePercentChecked refuses a table bound outside [0, 1].
func TestTablePercentChecked(t *testing.T) {
	for _, p := range []float64{-0.1, 1.5, math.NaN()} {
		_, err := NewBuffer(Options{BufferBytes: 1 << 20, SpillPercent: 0.8, NumPartitions: 1, Dir: t.TempDir(), TablePercent: p})
		if err == nil || !strings.Contains(err.Error(), "table percent") {
			t.Errorf("TablePercent %v: error %v, want one about the table percent", p, err)
		}
	}
}
