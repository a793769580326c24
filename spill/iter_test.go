package spill

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"

	"gomr/mr"
)

func kv(k, v string) [2][]byte { return [2][]byte{[]byte(k), []byte(v)} }

func drain(it Iterator) []string {
	var out []string
	for it.Next() {
		out = append(out, string(it.Key())+"="+string(it.Value()))
	}
	return out
}

func TestSliceIterator(t *testing.T) {
	it := NewSliceIterator([][2][]byte{kv("a", "1"), kv("b", "2")})
	if it.Key() != nil {
		t.Fatal("Key before Next is not nil")
	}
	if got := strings.Join(drain(it), ","); got != "a=1,b=2" {
		t.Fatalf("got %s", got)
	}
	if it.Next() || it.Key() != nil || it.Err() != nil {
		t.Fatal("iterator not finished cleanly")
	}
}

type errIterator struct {
	Iterator
	after int
	err   error
}

func (e *errIterator) Next() bool {
	if e.after == 0 {
		return false
	}
	e.after--
	return e.Iterator.Next()
}

func (e *errIterator) Err() error {
	if e.after == 0 {
		return e.err
	}
	return nil
}

func TestMerge(t *testing.T) {
	reverse := func(a, b []byte) int { return bytes.Compare(b, a) }
	tests := []struct {
		name   string
		cmp    mr.Comparator
		inputs [][][2][]byte
		want   string
	}{
		{"no inputs", nil, nil, ""},
		{"empty inputs", nil, [][][2][]byte{nil, {}}, ""},
		{"one input", nil, [][][2][]byte{{kv("a", "1"), kv("b", "2")}}, "a=1,b=2"},
		{"interleaved", nil, [][][2][]byte{
			{kv("a", "0"), kv("d", "0"), kv("g", "0")},
			{kv("b", "1"), kv("e", "1")},
			{kv("c", "2"), kv("f", "2"), kv("h", "2")},
		}, "a=0,b=1,c=2,d=0,e=1,f=2,g=0,h=2"},
		{"ties in input order", nil, [][][2][]byte{
			{kv("k", "0a"), kv("k", "0b"), kv("z", "0")},
			{kv("a", "1"), kv("k", "1a")},
			{kv("k", "2a"), kv("k", "2b")},
			{},
			{kv("k", "4a")},
		}, "a=1,k=0a,k=0b,k=1a,k=2a,k=2b,k=4a,z=0"},
		{"all equal", nil, [][][2][]byte{
			{kv("x", "0"), kv("x", "1")}, {kv("x", "2")}, {kv("x", "3"), kv("x", "4")},
		}, "x=0,x=1,x=2,x=3,x=4"},
		{"custom order", reverse, [][][2][]byte{
			{kv("c", "0"), kv("a", "0")}, {kv("d", "1"), kv("b", "1"), kv("a", "1")},
		}, "d=1,c=0,b=1,a=0,a=1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			its := make([]Iterator, len(tc.inputs))
			for i, in := range tc.inputs {
				its[i] = NewSliceIterator(in)
			}
			m := Merge(tc.cmp, its)
			if got := strings.Join(drain(m), ","); got != tc.want {
				t.Fatalf("merge = %s, want %s", got, tc.want)
			}
			if m.Err() != nil || m.Next() {
				t.Fatalf("merge not finished cleanly: %v", m.Err())
			}
		})
	}
}

func TestMergeManyRandom(t *testing.T) {
	// 20 sorted runs; the merge must equal a stable sort by key of the
	// concatenation (run order breaks ties).
	var all [][2][]byte
	var its []Iterator
	for r := 0; r < 20; r++ {
		run := genKVs(200, 2, 4, uint32(r+1))
		sortKVsStable(run)
		all = append(all, run...)
		its = append(its, NewSliceIterator(run))
	}
	sortKVsStable(all)
	var got [][2][]byte
	m := Merge(nil, its)
	for m.Next() {
		got = append(got, [2][]byte{m.Key(), m.Value()})
	}
	if !equalKVs(got, all) {
		t.Fatal("merge differs from the stable sort of all runs")
	}
}

// TestMergeTreeSizes merges k runs for k from 1 to 40 (loser trees of
// every shape), with keys that tie within and across runs, short keys that
// differ only in length or in bytes past 8, under the default order and a
// custom one; the merge must equal a stable sort of the runs' records
// (run order breaks ties).
func TestMergeTreeSizes(t *testing.T) {
	keys := []string{"", "a", "a\x00", "ab", "abcdefgh", "abcdefgh\x00", "abcdefghi", "abcdefgj", "b", "\xff\xff\xff\xff\xff\xff\xff\xff", "\xff\xff\xff\xff\xff\xff\xff\xff\xff"}
	reverse := func(a, b []byte) int { return bytes.Compare(b, a) }
	rng := rand.New(rand.NewSource(8))
	for _, order := range []struct {
		name string
		cmp  mr.Comparator
	}{{"default", nil}, {"bytes.Compare", bytes.Compare}, {"reverse", reverse}} {
		for k := 1; k <= 40; k++ {
			var all [][2][]byte
			its := make([]Iterator, k)
			for r := range k {
				run := make([][2][]byte, rng.Intn(30))
				for i := range run {
					run[i] = [2][]byte{[]byte(keys[rng.Intn(len(keys))]), []byte(fmt.Sprintf("%d.%d", r, i))}
				}
				c := order.cmp
				if c == nil {
					c = bytes.Compare
				}
				slices.SortStableFunc(run, func(a, b [2][]byte) int { return c(a[0], b[0]) })
				all = append(all, run...)
				its[r] = NewSliceIterator(run)
			}
			c := order.cmp
			if c == nil {
				c = bytes.Compare
			}
			slices.SortStableFunc(all, func(a, b [2][]byte) int { return c(a[0], b[0]) })
			var got [][2][]byte
			m := Merge(order.cmp, its)
			for m.Next() {
				got = append(got, [2][]byte{m.Key(), m.Value()})
			}
			if m.Err() != nil || !equalKVs(got, all) {
				t.Fatalf("%s, %d runs: merge of %d records differs from the stable sort of %d (error %v)", order.name, k, len(got), len(all), m.Err())
			}
			if m.Next() || m.Key() != nil || m.Value() != nil {
				t.Fatalf("%s, %d runs: merge yields more after its end", order.name, k)
			}
		}
	}
}

func TestIsBytesCompare(t *testing.T) {
	for _, tc := range []struct {
		name string
		cmp  mr.Comparator
		want bool
	}{
		{"nil", nil, true},
		{"bytes.Compare", bytes.Compare, true},
		{"wrapper", func(a, b []byte) int { return bytes.Compare(a, b) }, false},
		{"reverse", func(a, b []byte) int { return bytes.Compare(b, a) }, false},
	} {
		if got := isBytesCompare(tc.cmp); got != tc.want {
			t.Errorf("isBytesCompare(%s) = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestMergeInputError(t *testing.T) {
	boom := errors.New("fetch failed")
	bad := &errIterator{Iterator: NewSliceIterator([][2][]byte{kv("b", "1"), kv("d", "1")}), after: 1, err: boom}
	m := Merge(nil, []Iterator{NewSliceIterator([][2][]byte{kv("a", "0"), kv("c", "0"), kv("e", "0")}), bad})
	got := drain(m)
	if strings.Join(got, ",") != "a=0,b=1" {
		t.Fatalf("merge yielded %v before the error", got)
	}
	if err := m.Err(); !errors.Is(err, boom) || !strings.Contains(err.Error(), "merge input 1") {
		t.Fatalf("Err = %v, want input 1's error", err)
	}
	// An input failing before its first record.
	bad0 := &errIterator{Iterator: NewSliceIterator(nil), after: 0, err: boom}
	m = Merge(nil, []Iterator{NewSliceIterator([][2][]byte{kv("a", "0")}), bad0})
	if m.Next() || !errors.Is(m.Err(), boom) {
		t.Fatalf("merge with an input failing at start: Err = %v", m.Err())
	}
}

func TestGrouper(t *testing.T) {
	input := [][2][]byte{kv("a", "1"), kv("a", "2"), kv("b", "3"), kv("c", "4"), kv("c", "5"), kv("c", "6")}
	tests := []struct {
		name  string
		cmp   mr.Comparator
		input [][2][]byte
		read  int // values to read per group; -1 = all
		want  string
	}{
		{"empty", nil, nil, -1, ""},
		{"read all", nil, input, -1, "a[1 2] b[3] c[4 5 6]"},
		{"read none", nil, input, 0, "a[] b[] c[]"},
		{"read one", nil, input, 1, "a[1] b[3] c[4]"},
		{"read two", nil, input, 2, "a[1 2] b[3] c[4 5]"},
		{"single group", nil, [][2][]byte{kv("x", "1"), kv("x", "2")}, -1, "x[1 2]"},
		{"case-insensitive keeps first key", func(a, b []byte) int { return bytes.Compare(bytes.ToLower(a), bytes.ToLower(b)) },
			[][2][]byte{kv("A", "1"), kv("a", "2"), kv("B", "3"), kv("b", "4")}, -1, "A[1 2] B[3 4]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := NewGrouper(NewSliceIterator(tc.input), tc.cmp)
			var parts []string
			for g.NextKey() {
				var vals []string
				vs := g.Values()
				for tc.read < 0 || len(vals) < tc.read {
					if !vs.Next() {
						break
					}
					vals = append(vals, string(vs.Value()))
				}
				parts = append(parts, string(g.Key())+"["+strings.Join(vals, " ")+"]")
			}
			if got := strings.Join(parts, " "); got != tc.want {
				t.Fatalf("groups = %q, want %q", got, tc.want)
			}
			if g.NextKey() || g.Err() != nil {
				t.Fatal("grouper not finished cleanly")
			}
		})
	}
}

func TestGrouperValuesAfterEnd(t *testing.T) {
	g := NewGrouper(NewSliceIterator([][2][]byte{kv("a", "1"), kv("b", "2")}), nil)
	if !g.NextKey() {
		t.Fatal("no first group")
	}
	vs := g.Values()
	if vs.Value() != nil {
		t.Fatal("Value before Next is not nil")
	}
	if !vs.Next() || string(vs.Value()) != "1" || vs.Next() || vs.Value() != nil || vs.Next() {
		t.Fatal("first group's values are wrong")
	}
	if !g.NextKey() || string(g.Key()) != "b" {
		t.Fatalf("second group key = %q", g.Key())
	}
}

func TestGrouperError(t *testing.T) {
	boom := errors.New("bad input")
	g := NewGrouper(&errIterator{Iterator: NewSliceIterator([][2][]byte{kv("a", "1"), kv("a", "2")}), after: 1, err: boom}, nil)
	n := 0
	for g.NextKey() {
		n++
	}
	if n != 1 || !errors.Is(g.Err(), boom) {
		t.Fatalf("groups %d, Err %v", n, g.Err())
	}
}

// BenchmarkMerge merges 111 sorted runs of word-like keys (3 to 12 letters
// from a 20,000-word vocabulary, as a WordCount reduce merges its spills)
// and groups the result by key, as a reduce does.
func BenchmarkMerge(b *testing.B) {
	const runs, perRun = 111, 9000
	rng := rand.New(rand.NewSource(5))
	vocab := make([][]byte, 20000)
	for i := range vocab {
		w := make([]byte, 3+rng.Intn(10))
		for j := range w {
			w[j] = byte('a' + rng.Intn(26))
		}
		vocab[i] = w
	}
	inputs := make([][][2][]byte, runs)
	for r := range inputs {
		run := make([][2][]byte, perRun)
		for i := range run {
			run[i] = [2][]byte{vocab[rng.Intn(len(vocab))], {1}}
		}
		sortKVsStable(run)
		inputs[r] = run
	}
	b.ReportAllocs()
	for b.Loop() {
		its := make([]Iterator, runs)
		for r, in := range inputs {
			its[r] = NewSliceIterator(in)
		}
		g := NewGrouper(Merge(bytes.Compare, its), nil)
		n := 0
		for g.NextKey() {
			vs := g.Values()
			for vs.Next() {
				n++
			}
		}
		if n != runs*perRun {
			b.Fatalf("merged %d records, want %d", n, runs*perRun)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/(runs*perRun), "ns/record")
}

// BenchmarkMergeSegments merges 111 compressed segments of word-like keys
// with one-byte counts, as a WordCount reduce reads its map outputs, and
// groups the result by key.
func BenchmarkMergeSegments(b *testing.B) {
	const runs, perRun = 111, 9000
	rng := rand.New(rand.NewSource(6))
	vocab := make(map[string]bool)
	for len(vocab) < 200000 {
		w := make([]byte, 3+rng.Intn(10))
		for j := range w {
			w[j] = byte('a' + rng.Intn(26))
		}
		vocab[string(w)] = true
	}
	words := make([][]byte, 0, len(vocab))
	for w := range vocab {
		words = append(words, []byte(w))
	}
	segs := make([][]byte, runs)
	infos := make([]SegmentInfo, runs)
	for r := range segs {
		var run [][2][]byte
		seen := map[int]bool{}
		for len(run) < perRun {
			if i := rng.Intn(len(words)); !seen[i] {
				seen[i] = true
				run = append(run, [2][]byte{words[i], {1}})
			}
		}
		sortKVsStable(run)
		segs[r], infos[r] = encodeSegment(b, run, 0)
	}
	b.ReportAllocs()
	for b.Loop() {
		its := make([]Iterator, runs)
		for r := range segs {
			its[r] = NewSegmentReader(bytes.NewReader(segs[r]), infos[r])
		}
		g := NewGrouper(Merge(bytes.Compare, its), nil)
		n := 0
		for g.NextKey() {
			vs := g.Values()
			for vs.Next() {
				n++
			}
		}
		if err := g.Err(); err != nil || n != runs*perRun {
			b.Fatalf("merged %d records (error %v), want %d", n, err, runs*perRun)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/(runs*perRun), "ns/record")
}
