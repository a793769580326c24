package spill

import (
	"bytes"
	"errors"
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
