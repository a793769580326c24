package child

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"gomr/mr"
	"gomr/mrpb"
	"gomr/spill"
)

func TestMapCutter(t *testing.T) {
	type step struct {
		off, records int64
		cut          bool
		err          bool
	}
	resume := &mrpb.MapResume{Offset: 100, FirstSpill: 2, RecordsBefore: 10, Cuts: []*mrpb.MapCut{
		{Offset: 150, Spill: 4, Records: 15},
		{Offset: 200, Spill: 5, Records: 20},
	}}
	tests := []struct {
		name  string
		steps []step
	}{
		{"both cuts", []step{{120, 12, false, false}, {150, 15, true, false}, {170, 17, false, false}, {200, 20, true, false}, {210, 21, false, false}}},
		{"a record straddles the cut", []step{{140, 14, false, false}, {160, 16, false, true}}},
		{"another record count", []step{{150, 16, false, true}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := newMapCutter(resume)
			if err != nil {
				t.Fatal(err)
			}
			for i, s := range tc.steps {
				c, err := m.after(s.off, s.records)
				if (err != nil) != s.err || (c != nil) != s.cut {
					t.Fatalf("step %d (offset %d, %d records): cut %v, error %v; want cut %v, error %v", i, s.off, s.records, c, err, s.cut, s.err)
				}
				if err != nil {
					return
				}
			}
			if m.pending() {
				t.Fatal("cuts still pending after the last one was passed")
			}
		})
	}
}

// TestCheckCutSpill: after the cut at a recorded split point, the next
// spill must be the one recorded there.
func TestCheckCutSpill(t *testing.T) {
	c := &mrpb.MapCut{Offset: 400, Spill: 2, Records: 50}
	tests := []struct {
		next int
		err  string
	}{
		{2, ""},
		{1, "the next spill is 1, but it was 2"},
		{3, "the next spill is 3, but it was 2"},
	}
	for _, tc := range tests {
		err := checkCutSpill(c, tc.next)
		if tc.err == "" {
			if err != nil {
				t.Errorf("next spill %d: %v", tc.next, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "non-deterministic map output") {
			t.Errorf("next spill %d: error %v, want one saying %q", tc.next, err, tc.err)
		}
	}
}

// TestBufferCutNumbersTheNextSpill: a buffer cut at a split point after k
// spills next cuts spill k+1, whether the cut's spill holds records or is
// empty, so that an attempt that cut the same spills before a split point
// as the split attempt passes checkCutSpill.
func TestBufferCutNumbersTheNextSpill(t *testing.T) {
	for _, emit := range []bool{true, false} {
		buf, err := spill.NewBuffer(spill.Options{BufferBytes: 1 << 20, SpillPercent: 0.8, NumPartitions: 1, Dir: t.TempDir(), FirstIndex: 3})
		if err != nil {
			t.Fatal(err)
		}
		if emit {
			if err := buf.Emit([]byte("k"), []byte("v")); err != nil {
				t.Fatal(err)
			}
		}
		if err := buf.Cut(); err != nil {
			t.Fatal(err)
		}
		if err := checkCutSpill(&mrpb.MapCut{Spill: 4}, buf.NextIndex()); err != nil {
			t.Errorf("records before the cut %v: %v", emit, err)
		}
		buf.Abort()
	}
}

func TestNewMapCutterChecksOrder(t *testing.T) {
	tests := []struct {
		name string
		r    *mrpb.MapResume
		ok   bool
	}{
		{"none", nil, true},
		{"in order", &mrpb.MapResume{Offset: 5, FirstSpill: 1, Cuts: []*mrpb.MapCut{{Offset: 9, Spill: 2}, {Offset: 20, Spill: 4}}}, true},
		{"cut at the resume point", &mrpb.MapResume{Offset: 5, FirstSpill: 1, Cuts: []*mrpb.MapCut{{Offset: 5, Spill: 2}}}, false},
		{"spills out of order", &mrpb.MapResume{Offset: 5, FirstSpill: 3, Cuts: []*mrpb.MapCut{{Offset: 9, Spill: 3}}}, false},
		{"offsets out of order", &mrpb.MapResume{Cuts: []*mrpb.MapCut{{Offset: 9, Spill: 1}, {Offset: 8, Spill: 2}}}, false},
	}
	for _, tc := range tests {
		if _, err := newMapCutter(tc.r); (err == nil) != tc.ok {
			t.Errorf("%s: error %v, want ok %v", tc.name, err, tc.ok)
		}
	}
}

func TestResumeSplit(t *testing.T) {
	s := mr.Split{Path: "f", Start: 10, Length: 90}
	if got, err := resumeSplit(s, nil); err != nil || got.Start != s.Start || got.Length != s.Length || got.ExactStart {
		t.Fatalf("no resume: %+v, %v", got, err)
	}
	if got, err := resumeSplit(s, &mrpb.MapResume{Offset: 10, Cuts: []*mrpb.MapCut{{Offset: 40, Spill: 1}}}); err != nil || got.Start != 10 || got.ExactStart {
		t.Fatalf("a re-run from the start with cuts: %+v, %v", got, err)
	}
	got, err := resumeSplit(s, &mrpb.MapResume{Offset: 40, FirstSpill: 2})
	if err != nil || got.Start != 40 || got.Length != 60 || !got.ExactStart {
		t.Fatalf("resume at 40: %+v, %v", got, err)
	}
	if _, err := resumeSplit(s, &mrpb.MapResume{Offset: 5, FirstSpill: 1}); err == nil {
		t.Fatal("a resume point before the split was accepted")
	}
}

// skipGroupsThrough leaves the grouper on the first key group after the
// last key of the earlier fragments (skip-replay), under the job's
// comparator, whatever the values of the skipped groups.
func TestSkipGroupsThrough(t *testing.T) {
	recs := [][2][]byte{}
	for _, k := range []string{"", "a", "a", "b", "c", "c", "c", "e"} {
		recs = append(recs, [2][]byte{[]byte(k), []byte("v")})
	}
	reverse := func(a, b []byte) int { return bytes.Compare(b, a) }
	for _, tc := range []struct {
		after string
		cmp   mr.Comparator
		want  string // the first group left; "-" for none
	}{
		{"", nil, "a"},
		{"a", nil, "b"},
		{"b", nil, "c"},
		{"bb", nil, "c"},
		{"d", nil, "e"},
		{"e", nil, "-"},
		{"z", nil, "-"},
	} {
		g := spill.NewGrouper(spill.NewSliceIterator(recs), tc.cmp)
		if !g.NextKey() {
			t.Fatal("no first group")
		}
		have, err := skipGroupsThrough(context.Background(), g, tc.cmp, []byte(tc.after))
		got := "-"
		if have {
			got = string(g.Key())
		}
		if err != nil || got != tc.want {
			t.Errorf("after %q: first group %q (%v), want %q", tc.after, got, err, tc.want)
		}
	}
	// Under a reverse comparator, "after" means before in byte order.
	rev := [][2][]byte{{[]byte("c")}, {[]byte("b")}, {[]byte("a")}}
	g := spill.NewGrouper(spill.NewSliceIterator(rev), reverse)
	g.NextKey()
	if have, _ := skipGroupsThrough(context.Background(), g, reverse, []byte("b")); !have || string(g.Key()) != "a" {
		t.Errorf("reverse order: after b, got %q", g.Key())
	}
}

// The keys that cut a reduce's rest into pieces of about equal records:
// a bound is a group's key (never the last group's), the pieces are never
// empty, and a group larger than a piece leaves fewer pieces.
func TestBoundPicker(t *testing.T) {
	type tcase struct {
		name   string
		groups []int64 // records per group; group i's key is key(i)
		k      int
		want   []int // the groups whose keys are the bounds
	}
	cases := []tcase{
		{"even groups in two", []int64{1, 1, 1, 1}, 2, []int{1}},
		{"even groups in four", []int64{1, 1, 1, 1, 1, 1, 1, 1}, 4, []int{1, 3, 5}},
		{"uneven groups", []int64{5, 1, 1, 1, 1, 1}, 2, []int{0}},
		{"a large group in the middle: a piece of its own", []int64{1, 1, 10, 1, 1}, 3, []int{1, 2}},
		{"one group", []int64{7}, 4, nil},
		{"two groups, four pieces asked", []int64{3, 3}, 4, []int{0}},
		{"fanout 1", []int64{1, 1, 1}, 1, nil},
		{"no groups", nil, 3, nil},
	}
	// Many groups: the picker keeps few keys, and the pieces are still
	// within 2/boundCandidates of equal.
	many := make([]int64, 100000)
	for i := range many {
		many[i] = 1 + int64(i%3)
	}
	cases = append(cases, tcase{"100000 groups in three", many, 3, nil})
	key := func(i int) []byte { return fmt.Appendf(nil, "k%07d", i) }
	for _, tc := range cases {
		var p boundPicker
		var through int64
		for i, n := range tc.groups {
			through += n
			p.add(key(i), through)
		}
		if len(p.cands) > 2*boundCandidates {
			t.Errorf("%s: %d keys kept", tc.name, len(p.cands))
		}
		got := p.bounds(tc.k)
		if tc.name == "100000 groups in three" {
			if len(got) != 2 {
				t.Fatalf("%s: %d bounds", tc.name, len(got))
			}
			var idx []int
			for _, b := range got {
				var i int
				fmt.Sscanf(string(b), "k%07d", &i)
				idx = append(idx, i)
			}
			var sums [3]int64
			piece := 0
			for i, n := range tc.groups {
				sums[piece] += n
				if piece < 2 && i == idx[piece] {
					piece++
				}
			}
			for _, s := range sums {
				if d := float64(s) - float64(through)/3; d > float64(through)*2/boundCandidates || -d > float64(through)*2/boundCandidates {
					t.Errorf("%s: pieces of %v records (of %d)", tc.name, sums, through)
					break
				}
			}
			continue
		}
		var want [][]byte
		for _, i := range tc.want {
			want = append(want, key(i))
		}
		if len(got) != len(want) {
			t.Errorf("%s: bounds %q, want %q", tc.name, got, want)
			continue
		}
		for i := range got {
			if !bytes.Equal(got[i], want[i]) {
				t.Errorf("%s: bounds %q, want %q", tc.name, got, want)
				break
			}
		}
	}
}

// scanBounds reads the groups left after a split (from the current one),
// stopping after a bounded task's upper key, and counts their records as
// the merge gives them.
func TestScanBounds(t *testing.T) {
	var recs [][2][]byte
	for _, k := range []string{"a", "b", "b", "c", "d", "d", "e", "f", "g", "h"} {
		recs = append(recs, [2][]byte{[]byte(k), []byte("v")})
	}
	for _, tc := range []struct {
		name    string
		upper   string // "" : unbounded
		k       int
		want    string
		groupAt string // the current group when the split stopped
	}{
		{"unbounded, from b", "", 2, "d", "b"},
		{"unbounded, three pieces", "", 3, "c e", "b"},
		{"bounded at e", "e", 2, "c", "b"},
		{"bounded, one group left", "b", 3, "", "b"},
	} {
		it := &countingIterator{it: spill.NewSliceIterator(recs)}
		g := spill.NewGrouper(it, nil)
		for g.NextKey() && string(g.Key()) != tc.groupAt {
		}
		bs, err := scanBounds(context.Background(), g, it.n.Load, nil, []byte(tc.upper), tc.upper != "", tc.k)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, b := range bs {
			got = append(got, string(b))
		}
		if strings.Join(got, " ") != tc.want {
			t.Errorf("%s: bounds %q, want %q", tc.name, got, tc.want)
		}
	}
}
