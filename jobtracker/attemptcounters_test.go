package jobtracker

import (
	"fmt"
	"reflect"
	"runtime"
	"testing"

	"gomr/mr"
	"gomr/mrpb"
)

func TestAttemptCounters(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []*mrpb.Counter
		want mr.CounterSet
	}{
		{"none", nil, mr.CounterSet{}},
		{"one group", []*mrpb.Counter{{Group: "a", Name: "x", Value: 1}, {Group: "a", Name: "y", Value: 2}},
			mr.CounterSet{"a": {"x": 1, "y": 2}}},
		{"interleaved, repeats summed", []*mrpb.Counter{{Group: "a", Name: "x", Value: 1}, {Group: "b", Name: "x", Value: 5},
			{Group: "a", Name: "x", Value: 2}, {Group: "b", Name: "y", Value: 7}},
			mr.CounterSet{"a": {"x": 3}, "b": {"x": 5, "y": 7}}},
		{"zero values kept", []*mrpb.Counter{{Group: "a", Name: "x"}}, mr.CounterSet{"a": {"x": 0}}},
		{"empty and odd names", []*mrpb.Counter{{Group: "", Name: "", Value: 1}, {Group: "\x00\x80", Name: "\xff\x01", Value: -4},
			{Group: "", Name: "n", Value: 9}},
			mr.CounterSet{"": {"": 1, "n": 9}, "\x00\x80": {"\xff\x01": -4}}},
		{"long names", []*mrpb.Counter{{Group: string(make([]byte, 300)), Name: string(make([]byte, 200)), Value: 3}},
			mr.CounterSet{string(make([]byte, 300)): {string(make([]byte, 200)): 3}}},
	} {
		c := countersOfStatus(tc.in)
		if !c.reported() {
			t.Errorf("%s: not reported", tc.name)
		}
		if got := c.set(); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: set %v, want %v", tc.name, got, tc.want)
		}
		if got := countersFromProto(tc.in); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: countersFromProto %v, want %v", tc.name, got, tc.want)
		}
		if got := countersOfSet(tc.want).set(); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: through countersOfSet %v, want %v", tc.name, got, tc.want)
		}
		for g, m := range tc.want {
			for n, v := range m {
				if got := c.get(g, n); got != v {
					t.Errorf("%s: get(%q, %q) = %d, want %d", tc.name, g, n, got, v)
				}
			}
		}
		if got := c.get("no", "such"); got != 0 {
			t.Errorf("%s: get of an absent counter = %d", tc.name, got)
		}
		// addTo and subtractFrom are inverse, and leave no zero
		// counter or empty group behind that was not there.
		s := mr.CounterSet{"a": {"kept": 5}}
		c.addTo(s)
		c.addTo(s)
		c.subtractFrom(s)
		c.subtractFrom(s)
		if want := (mr.CounterSet{"a": {"kept": 5}}); !reflect.DeepEqual(s, want) {
			t.Errorf("%s: add twice, subtract twice: %v, want %v", tc.name, s, want)
		}
	}

	var none attemptCounters
	if none.reported() || none.set() != nil || none.len() != 0 {
		t.Errorf("zero value: reported %v, set %v, len %d", none.reported(), none.set(), none.len())
	}
	if countersOfSet(nil).reported() {
		t.Error("countersOfSet(nil) is reported")
	}
	s := mr.CounterSet{"a": {"x": 1}}
	none.addTo(s)
	none.subtractFrom(s)
	if !reflect.DeepEqual(s, mr.CounterSet{"a": {"x": 1}}) {
		t.Errorf("the zero value changed a set: %v", s)
	}

	// Reports of the same names, in any order, share one names string.
	a := countersOfStatus([]*mrpb.Counter{{Group: "g", Name: "x", Value: 1}, {Group: "g", Name: "y", Value: 2}})
	b := countersOfStatus([]*mrpb.Counter{{Group: "g", Name: "y", Value: 20}, {Group: "g", Name: "x", Value: 10}})
	if a.names != b.names {
		t.Error("two reports of the same names do not share their names")
	}
	if got := b.set(); !reflect.DeepEqual(got, mr.CounterSet{"g": {"x": 10, "y": 20}}) {
		t.Errorf("reordered report: %v", got)
	}
}

// TestAttemptCountersRetainedBytes checks what the JobTracker keeps for an
// attempt's 24 counters in 2 groups, as a real map's status carries
// (docs/scaling.md): at most a third of the counter set of maps it kept
// before, and at most 16 bytes a counter.
func TestAttemptCountersRetainedBytes(t *testing.T) {
	var status []*mrpb.Counter
	for i := range 4 {
		status = append(status, &mrpb.Counter{Group: mr.TaskCounterGroup, Name: fmt.Sprintf("TASK_%d", i), Value: int64(i)})
	}
	for i := range 20 {
		status = append(status, &mrpb.Counter{Group: "user.Counters", Name: fmt.Sprintf("USER_COUNTER_%02d", i), Value: int64(i)})
	}
	const n = 2000
	retained := func(f func(i int) any) float64 {
		keep := make([]any, n)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		for i := range keep {
			keep[i] = f(i)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		runtime.KeepAlive(keep)
		return float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / n
	}
	packed := retained(func(int) any { c := countersOfStatus(status); return &c })
	maps := retained(func(int) any { return countersFromProto(status) })
	t.Logf("24 counters kept: %.0f bytes packed, %.0f as maps", packed, maps)
	if packed > maps/3 || packed > 16*24 {
		t.Errorf("24 counters kept take %.0f bytes packed, want at most a third of the %.0f of maps and 16 bytes a counter", packed, maps)
	}
}
