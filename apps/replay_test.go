package apps

import (
	"testing"
	"time"

	"gomr/mr"
)

// TestReplayMapperAndReducer runs the replay job's code directly: a map
// emits its share of output_bytes spread over the reduces plus one marker
// each, and lasts its duration; a reduce counts the bytes it reads and
// holds until its reduce duration has passed.
func TestReplayMapperAndReducer(t *testing.T) {
	spec, err := ReplayTask{Maps: []time.Duration{120 * time.Millisecond, 10 * time.Millisecond},
		Reduces: []time.Duration{80 * time.Millisecond, 0}, InputBytes: 1000, OutputBytes: 2001}.Spec("j", "/tmp/x")
	if err != nil {
		t.Fatal(err)
	}
	def, err := mr.LookupJob(ReplayJob)
	if err != nil {
		t.Fatal(err)
	}
	splits, err := def.Input.Splits(mr.SplitContext{Params: spec.Params})
	if err != nil || len(splits) != 2 || splits[0].Length+splits[1].Length != 1000 {
		t.Fatalf("splits %+v, %v: want 2 adding up to 1000 bytes", splits, err)
	}
	tc := newTC(spec.Params, 2)
	start := time.Now()
	m, err := def.Mapper(tc)
	if err != nil {
		t.Fatal(err)
	}
	var c collector
	if err := m.Map(tc, nil, nil, &c); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < 120*time.Millisecond || took > 600*time.Millisecond {
		t.Errorf("map 0 took %v, want 120 ms", took)
	}
	if got := tc.counters.Get(ReplayCounterGroup, ReplayMapBytes).Value(); got != 1001 {
		t.Errorf("map 0 emitted %d bytes, want 1001 (its share of 2001)", got)
	}
	var data int
	parts := map[int]int{}
	for _, kv := range c.out {
		parts[indexPartition([]byte(kv.k), 2)]++
		data += len(kv.k) + len(kv.v)
	}
	if len(parts) != 2 || data < 1001 {
		t.Errorf("map output reaches partitions %v with %d bytes", parts, data)
	}
	var pairs []kv
	for _, p := range c.out {
		if indexPartition([]byte(p.k), 2) == 0 {
			pairs = append(pairs, p)
		}
	}
	rtc := newTC(spec.Params, 2)
	start = time.Now()
	r, err := def.Reducer(rtc)
	if err != nil {
		t.Fatal(err)
	}
	shuffle(t, rtc, r, pairs)
	if took := time.Since(start); took < 80*time.Millisecond || took > 600*time.Millisecond {
		t.Errorf("reduce 0 took %v, want 80 ms", took)
	}
	if got := rtc.counters.Get(ReplayCounterGroup, ReplayReduceBytes).Value(); got == 0 || got > 1001 {
		t.Errorf("reduce 0 consumed %d bytes, want its part of 1001", got)
	}
}

func TestReplaySpecRefusesBadTasks(t *testing.T) {
	for _, task := range []ReplayTask{
		{},
		{Maps: []time.Duration{-1}},
		{Maps: []time.Duration{1}, Reduces: []time.Duration{1}, Shuffles: []time.Duration{1, 2}},
		{Maps: []time.Duration{1}, RecordBytes: 3},
	} {
		if _, err := task.Spec("bad", "/tmp/x"); err == nil {
			t.Errorf("%+v: want an error", task)
		}
	}
}
