package mr

import (
	"bytes"
	"encoding/json"
	"testing"
)

// TestCounterSetJSONIsTheMapsEncoding checks CounterSet.MarshalJSON against
// encoding/json's encoding of the same map, byte for byte, and that it
// decodes back to the set.
func TestCounterSetJSONIsTheMapsEncoding(t *testing.T) {
	cases := []struct {
		name string
		set  CounterSet
		// lossy: encoding/json replaces invalid UTF-8, so the set does
		// not decode back to itself.
		lossy bool
	}{
		{name: "nil"},
		{name: "empty", set: CounterSet{}},
		{name: "empty group", set: CounterSet{"g": {}}},
		{name: "nil group", set: CounterSet{"g": nil, "a": {"x": 1}}},
		{name: "task counters", set: CounterSet{TaskCounterGroup: {MapInputRecords: 12, MapOutputRecords: -3, SpilledRecords: 1 << 40},
			JobCounterGroup: {TotalLaunchedMaps: 1}, ShuffleErrorsGroup: {"BAD_ID": 0}}},
		{name: "names to escape", set: CounterSet{`q"uote\back`: {"<tag>&": 1, "tab\there": 2, "é ünïcode": 3, "\u2028line": 4, "\x7f": 5}}},
		{name: "invalid utf-8", set: CounterSet{"bad\xff": {"x\xfe": 7}}, lossy: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := json.Marshal(c.set)
			if err != nil {
				t.Fatal(err)
			}
			want, err := json.Marshal(map[string]map[string]int64(c.set))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("MarshalJSON:\n got %s\nwant %s", got, want)
			}
			// Inside a struct, as the recovery log writes it.
			type line struct {
				C CounterSet `json:"counters,omitempty"`
			}
			got, _ = json.Marshal(line{c.set})
			want, _ = json.Marshal(struct {
				C map[string]map[string]int64 `json:"counters,omitempty"`
			}{c.set})
			if !bytes.Equal(got, want) {
				t.Fatalf("in a struct:\n got %s\nwant %s", got, want)
			}
			var back line
			if err := json.Unmarshal(got, &back); err != nil {
				t.Fatal(err)
			}
			if len(c.set) > 0 && !c.lossy && !c.set.equal(back.C) {
				t.Fatalf("decoded %v, want %v", back.C, c.set)
			}
		})
	}
}

// equal compares two sets, a nil group as an empty one.
func (s CounterSet) equal(o CounterSet) bool {
	if len(s) != len(o) {
		return false
	}
	for g, m := range s {
		om, ok := o[g]
		if !ok || len(m) != len(om) {
			return false
		}
		for k, v := range m {
			if ov, ok := om[k]; !ok || ov != v {
				return false
			}
		}
	}
	return true
}

func BenchmarkCounterSetJSON(b *testing.B) {
	s := CounterSet{TaskCounterGroup: {}}
	for i, n := range []string{MapInputRecords, MapOutputRecords, MapOutputBytes, CPUMilliseconds, SpilledRecords,
		CombineInputRecords, CombineOutputRecords, "MAP_OUTPUT_MATERIALIZED_BYTES", "GC_TIME_MILLIS",
		"PHYSICAL_MEMORY_BYTES", "VIRTUAL_MEMORY_BYTES", "COMMITTED_HEAP_BYTES"} {
		s[TaskCounterGroup][n] = int64(1000 * (i + 1))
	}
	b.Run("MarshalJSON", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			json.Marshal(s)
		}
	})
	b.Run("map", func(b *testing.B) {
		m := map[string]map[string]int64(s)
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			json.Marshal(m)
		}
	})
}
