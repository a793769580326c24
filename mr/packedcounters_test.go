package mr

import (
	"encoding/json"
	"fmt"
	"reflect"
	"runtime"
	"slices"
	"testing"
)

// entries are counters as a status lists them: in any order, a name
// possibly twice.
type entry struct {
	group, name string
	value       int64
}

func pack(es []entry) PackedCounters {
	keys := make([]CounterKey, len(es))
	values := make([]int64, len(es))
	for i, e := range es {
		keys[i], values[i] = CounterKey{e.group, e.name}, e.value
	}
	return PackCounters(keys, values)
}

// TestPackCountersInOrder: counters given in (group, name) order, each
// once, as a child reports them, pack to what the same counters in another
// order pack to; the packed values are a copy of the caller's.
func TestPackCountersInOrder(t *testing.T) {
	for _, in := range [][]entry{
		nil,
		{{"a", "x", 1}},
		{{"", "", 1}, {"", "n", 9}, {"\x00\x80", "\xff\x01", -4}, {"<&>", "\"\\", 2}},
		{{"FileSystemCounters", "FILE_BYTES_READ", 10}, {"TaskCounter", "CPU_MILLISECONDS", 20}, {"TaskCounter", "MAP_INPUT_RECORDS", 30}},
	} {
		if keys := packKeys(in); !countersInOrder(keys) {
			t.Fatalf("%v: not in order", in)
		}
		reversed := slices.Clone(in)
		slices.Reverse(reversed)
		if len(in) > 1 && countersInOrder(packKeys(reversed)) {
			t.Fatalf("%v: in order", reversed)
		}
		got, want := pack(in), pack(reversed)
		if !reflect.DeepEqual(got.Set(), want.Set()) || got.names != want.names || !slices.Equal(got.values, want.values) {
			t.Errorf("%v: packed %v, in another order %v", in, got.Set(), want.Set())
		}
	}
	// Not in order: a name twice, or out of order within a group.
	for _, in := range [][]entry{{{"a", "x", 1}, {"a", "x", 2}}, {{"a", "y", 1}, {"a", "x", 2}}, {{"b", "x", 1}, {"a", "y", 2}}} {
		if countersInOrder(packKeys(in)) {
			t.Errorf("%v: taken as in order", in)
		}
	}
	keys, values := []CounterKey{{"a", "x"}, {"a", "y"}}, []int64{1, 2}
	c := PackCounters(keys, values)
	values[0] = 99
	if c.Get("a", "x") != 1 {
		t.Errorf("the packed counters share the caller's values: %v", c.Set())
	}
}

// packKeys is the keys of es.
func packKeys(es []entry) []CounterKey {
	keys := make([]CounterKey, len(es))
	for i, e := range es {
		keys[i] = CounterKey{e.group, e.name}
	}
	return keys
}

func TestPackedCounters(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []entry
		want CounterSet
	}{
		{"none", nil, CounterSet{}},
		{"one group", []entry{{"a", "x", 1}, {"a", "y", 2}}, CounterSet{"a": {"x": 1, "y": 2}}},
		{"interleaved, repeats summed", []entry{{"a", "x", 1}, {"b", "x", 5}, {"a", "x", 2}, {"b", "y", 7}},
			CounterSet{"a": {"x": 3}, "b": {"x": 5, "y": 7}}},
		{"zero values kept", []entry{{"a", "x", 0}}, CounterSet{"a": {"x": 0}}},
		{"empty and odd names", []entry{{"", "", 1}, {"\x00\x80", "\xff\x01", -4}, {"", "n", 9}, {"<&>", "\"\\", 2}},
			CounterSet{"": {"": 1, "n": 9}, "\x00\x80": {"\xff\x01": -4}, "<&>": {"\"\\": 2}}},
		{"long names", []entry{{string(make([]byte, 300)), string(make([]byte, 200)), 3}},
			CounterSet{string(make([]byte, 300)): {string(make([]byte, 200)): 3}}},
	} {
		c := pack(tc.in)
		if !c.Reported() {
			t.Errorf("%s: not reported", tc.name)
		}
		if got := c.Set(); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: Set %v, want %v", tc.name, got, tc.want)
		}
		if got := PackSet(tc.want).Set(); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: through PackSet %v, want %v", tc.name, got, tc.want)
		}
		n := 0
		for g, m := range tc.want {
			for name, v := range m {
				n++
				if got := c.Get(g, name); got != v {
					t.Errorf("%s: Get(%q, %q) = %d, want %d", tc.name, g, name, got, v)
				}
			}
		}
		if c.Len() != n || c.IsZero() != (n == 0) {
			t.Errorf("%s: Len %d, IsZero %v; want %d counters", tc.name, c.Len(), c.IsZero(), n)
		}
		if got := c.Get("no", "such"); got != 0 {
			t.Errorf("%s: Get of an absent counter = %d", tc.name, got)
		}
		// AddTo and SubtractFrom are inverse, and leave no zero counter
		// or empty group behind that was not there.
		s := CounterSet{"a": {"kept": 5}}
		c.AddTo(s)
		c.AddTo(s)
		c.SubtractFrom(s)
		c.SubtractFrom(s)
		if want := (CounterSet{"a": {"kept": 5}}); !reflect.DeepEqual(s, want) {
			t.Errorf("%s: add twice, subtract twice: %v, want %v", tc.name, s, want)
		}
		// The JSON is CounterSet's, byte for byte, and reads back.
		got, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal(map[string]map[string]int64(tc.want))
		if string(got) != string(want) {
			t.Errorf("%s: JSON %s, want %s", tc.name, got, want)
		}
		// (JSON holds UTF-8 only: encoding/json replaces other bytes, in
		// a CounterSet too.)
		var back PackedCounters
		var wantBack CounterSet
		json.Unmarshal(want, &wantBack)
		if err := json.Unmarshal(got, &back); err != nil {
			t.Errorf("%s: reading the JSON back: %v", tc.name, err)
		} else if !reflect.DeepEqual(back.Set(), wantBack) {
			t.Errorf("%s: JSON read back %v, want %v", tc.name, back.Set(), tc.want)
		}
	}

	var none PackedCounters
	if none.Reported() || none.Set() != nil || none.Len() != 0 || !none.IsZero() {
		t.Errorf("zero value: Reported %v, Set %v, Len %d", none.Reported(), none.Set(), none.Len())
	}
	if b, _ := json.Marshal(none); string(b) != "null" {
		t.Errorf("zero value's JSON %s, want null", b)
	}
	if PackSet(nil).Reported() {
		t.Error("PackSet(nil) is Reported")
	}
	s := CounterSet{"a": {"x": 1}}
	none.AddTo(s)
	none.SubtractFrom(s)
	if !reflect.DeepEqual(s, CounterSet{"a": {"x": 1}}) {
		t.Errorf("the zero value changed a set: %v", s)
	}
	// omitzero leaves out a set of no counters, as omitempty an empty map.
	type line struct {
		C PackedCounters `json:"c,omitzero"`
	}
	for _, l := range []line{{}, {pack(nil)}} {
		if b, _ := json.Marshal(l); string(b) != "{}" {
			t.Errorf("an empty set in a line: %s, want {}", b)
		}
	}
	var bad PackedCounters
	if err := json.Unmarshal([]byte(`{"g":{"n":"x"}}`), &bad); err == nil {
		t.Error("a counter that is not a number was read")
	}

	// Sets of the same names, in any order, share one names string; the
	// values are the set's own.
	in := []entry{{"g", "x", 1}, {"g", "y", 2}}
	a := pack(in)
	b := pack([]entry{{"g", "y", 20}, {"g", "x", 10}})
	if a.names != b.names {
		t.Error("two sets of the same names do not share their names")
	}
	if got := b.Set(); !reflect.DeepEqual(got, CounterSet{"g": {"x": 10, "y": 20}}) {
		t.Errorf("reordered set: %v", got)
	}
	keys, values := []CounterKey{{"g", "x"}}, []int64{1}
	c := PackCounters(keys, values)
	values[0] = 99
	if c.Get("g", "x") != 1 {
		t.Error("the set shares its caller's values")
	}
}

// TestPackedCountersRetainedBytes checks what is kept for 24 counters in
// 2 groups, as a real map's status carries (docs/scaling.md): at most a
// third of the CounterSet of maps the JobTracker kept before, and at most
// 16 bytes a counter.
func TestPackedCountersRetainedBytes(t *testing.T) {
	var es []entry
	for i := range 4 {
		es = append(es, entry{TaskCounterGroup, fmt.Sprintf("TASK_%d", i), int64(i)})
	}
	for i := range 20 {
		es = append(es, entry{"user.Counters", fmt.Sprintf("USER_COUNTER_%02d", i), int64(i)})
	}
	const n = 2000
	retained := func(f func() any) float64 {
		keep := make([]any, n)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		for i := range keep {
			keep[i] = f()
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		runtime.KeepAlive(keep)
		return float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / n
	}
	packed := retained(func() any { c := pack(es); return &c })
	maps := retained(func() any {
		s := CounterSet{}
		for _, e := range es {
			s.Add(e.group, e.name, e.value)
		}
		return s
	})
	t.Logf("24 counters kept: %.0f bytes packed, %.0f as a CounterSet", packed, maps)
	if packed > maps/3 || packed > 16*24 {
		t.Errorf("24 counters kept take %.0f bytes packed, want at most a third of a CounterSet's %.0f and 16 bytes a counter", packed, maps)
	}
}

// BenchmarkPackCounters packs a status's 24 counters, as the JobTracker
// does for each status that carries them: in (group, name) order, as a
// child sends them, and reversed.
func BenchmarkPackCounters(b *testing.B) {
	var keys []CounterKey
	var values []int64
	for i := range 24 {
		keys = append(keys, CounterKey{TaskCounterGroup, fmt.Sprintf("COUNTER_%02d", i)})
		values = append(values, int64(i)*1000)
	}
	rev, revValues := slices.Clone(keys), slices.Clone(values)
	slices.Reverse(rev)
	slices.Reverse(revValues)
	for _, bc := range []struct {
		name   string
		keys   []CounterKey
		values []int64
	}{{"in order", keys, values}, {"reversed", rev, revValues}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				PackCounters(bc.keys, bc.values)
			}
		})
	}
}
