package jobtracker

import (
	"bytes"
	"strings"
	"testing"

	"gomr/mr"
	"gomr/mrpb"
)

// The key-range bookkeeping of a reduce task's fragments: which fragment a
// new attempt writes and after which key, and which reported fragments are
// taken (fencing: the next fragment only, from an attempt launched to
// write it, ending after the previous one).
func TestReduceFragments(t *testing.T) {
	frags := func(keys ...string) *taskSplit {
		if keys == nil {
			return nil
		}
		s := &taskSplit{}
		for _, k := range keys {
			s.frags = append(s.frags, reduceFrag{lastKey: []byte(k), by: &attempt{counters: mr.CounterSet{"g": {"n": 1}}}})
		}
		return s
	}
	cut := func(key string, k int32) *mrpb.ReduceCut { return &mrpb.ReduceCut{LastKey: []byte(key), Fragment: k} }
	for _, tc := range []struct {
		name      string
		s         *taskSplit
		cut       *mrpb.ReduceCut
		launched  int
		wantErr   string
		wantNext  int
		wantAfter string
	}{
		{name: "never split: the first fragment", s: nil, cut: cut("m", 0), launched: 0, wantNext: 0},
		{name: "the empty key ends a first fragment", s: nil, cut: cut("", 0), launched: 0, wantNext: 0},
		{name: "second fragment after the first", s: frags("m"), cut: cut("t", 1), launched: 1, wantNext: 1, wantAfter: "m"},
		{name: "third fragment", s: frags("c", "m"), cut: cut("x", 2), launched: 2, wantNext: 2, wantAfter: "m"},
		{name: "no cut reported", s: frags("m"), cut: nil, launched: 1, wantErr: "no fragment", wantNext: 1, wantAfter: "m"},
		{name: "cut of another fragment than launched", s: frags("m"), cut: cut("t", 2), launched: 1, wantErr: "launched to write fragment 1", wantNext: 1, wantAfter: "m"},
		{name: "an attempt of an earlier range (duplicate)", s: frags("m"), cut: cut("m", 0), launched: 0, wantErr: "next fragment is 1", wantNext: 1, wantAfter: "m"},
		{name: "last key not after the previous fragment", s: frags("m"), cut: cut("m", 1), launched: 1, wantErr: "not after", wantNext: 1, wantAfter: "m"},
		{name: "last key before the previous fragment", s: frags("m"), cut: cut("a", 1), launched: 1, wantErr: "not after", wantNext: 1, wantAfter: "m"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			next, after := tc.s.nextFragment()
			if next != tc.wantNext || string(after) != tc.wantAfter {
				t.Errorf("nextFragment = %d, %q; want %d, %q", next, after, tc.wantNext, tc.wantAfter)
			}
			err := tc.s.checkFragment(tc.cut, tc.launched, bytes.Compare)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("checkFragment: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("checkFragment: %v, want an error with %q", err, tc.wantErr)
			}
			if got, want := tc.s.fragmentCounters().Get("g", "n"), int64(len(tcFrags(tc.s))); got != want {
				t.Errorf("fragment counters add up to %d, want %d", got, want)
			}
		})
	}
}

func tcFrags(s *taskSplit) []reduceFrag {
	if s == nil {
		return nil
	}
	return s.frags
}
