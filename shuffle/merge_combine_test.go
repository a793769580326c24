package shuffle

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"gomr/mr"
)

// uvarintSum is a combiner summing its uvarint values.
var uvarintSum = mr.ReducerFunc(func(_ mr.TaskContext, key []byte, values mr.ValueIterator, out mr.Emitter) error {
	var sum uint64
	for values.Next() {
		v, n := binary.Uvarint(values.Value())
		if n <= 0 {
			return errors.New("not a uvarint")
		}
		sum += v
	}
	return out.Emit(key, binary.AppendUvarint(nil, sum))
})

// declaredSum is uvarintSum declared as a uvarint sum, which the merges
// sum without walking each value through it.
type declaredSum struct{ mr.Reducer }

func (declaredSum) SumsUvarints() {}

// countSegments returns n segments of words counted as a combining map's
// spills are: each a sorted set of distinct keys of a vocabulary of 40
// with uvarint counts, and the sum of each key's counts.
func countSegments(t *testing.T, seed uint64, n int) ([]testSegment, map[string]uint64) {
	rng := rand.New(rand.NewPCG(seed, 7))
	sums := map[string]uint64{}
	segs := make([]testSegment, n)
	for i := range segs {
		var recs []kv
		for w := range 40 {
			if rng.IntN(3) == 0 {
				continue
			}
			c := uint64(1 + rng.IntN(1000))
			k := fmt.Sprintf("w%02d", w)
			sums[k] += c
			recs = append(recs, kv{k, string(binary.AppendUvarint(nil, c))})
		}
		segs[i] = testSegment{recs: recs}
		segs[i].data, segs[i].info = encodeSegment(t, recs, 64)
	}
	return segs, sums
}

// TestMergeManagerCombine: with a combiner, the merges that write disk runs
// combine their records (memory merged to disk, disk runs merged), the
// final merge gives each key's records summing to its total, and Records
// says how many it gives; a combiner's failures fail the merge, naming it.
func TestMergeManagerCombine(t *testing.T) {
	mkSum := func() (mr.Reducer, error) { return uvarintSum, nil }
	cases := []struct {
		name     string
		opts     MergeOptions
		combiner func() (mr.Reducer, error)
		// want is checked against the manager's stats after Finish.
		want    func(st MergeStats) error
		wantErr string
	}{
		{name: "in-memory segments merged to disk, combined", combiner: mkSum,
			opts: MergeOptions{MemoryBytes: 2 << 10, SegmentLimit: 1 << 10, MergePercent: 0.5, Factor: 100},
			want: func(st MergeStats) error {
				if st.MemToDisk < 5 || st.MemToDiskAsIs != 0 || st.CombineOutput >= st.CombineInput/2 {
					return fmt.Errorf("stats %+v, want several merges of memory to disk, none as they came, combining to under half", st)
				}
				return nil
			}},
		{name: "in-memory segments merged to disk, summed (a declared uvarint sum)",
			combiner: func() (mr.Reducer, error) { return declaredSum{uvarintSum}, nil },
			opts:     MergeOptions{MemoryBytes: 2 << 10, SegmentLimit: 1 << 10, MergePercent: 0.5, Factor: 3},
			want: func(st MergeStats) error {
				if st.MemToDisk < 5 || st.MemToDiskAsIs != 0 || st.CombineOutput >= st.CombineInput/2 {
					return fmt.Errorf("stats %+v, want several merges of memory to disk, none as they came, combining to under half", st)
				}
				return nil
			}},
		{name: "disk runs merged, combined", combiner: mkSum,
			opts: MergeOptions{MemoryBytes: 1 << 10, SegmentLimit: 16, MergePercent: 0.5, Factor: 3},
			want: func(st MergeStats) error {
				if st.DirectToDisk != 30 || st.DiskMerges == 0 || st.FinalStreams > 3 || st.CombineOutput >= st.CombineInput {
					return fmt.Errorf("stats %+v, want every segment on disk, merged and combined down to 3 streams", st)
				}
				return nil
			}},
		{name: "kept in memory: nothing combined", combiner: mkSum,
			opts: MergeOptions{MemoryBytes: 1 << 20, SegmentLimit: 1 << 20, MergePercent: 0.9, RetainBytes: 1 << 20, Factor: 10},
			want: func(st MergeStats) error {
				if st.FinalInMemory != 30 || st.CombineInput != 0 {
					return fmt.Errorf("stats %+v, want every segment read from memory, none combined", st)
				}
				return nil
			}},
		{name: "no combiner", opts: MergeOptions{MemoryBytes: 2 << 10, SegmentLimit: 1 << 10, MergePercent: 0.5, Factor: 100},
			want: func(st MergeStats) error {
				if st.MemToDisk == 0 || st.CombineInput != 0 {
					return fmt.Errorf("stats %+v, want merges to disk, none combined", st)
				}
				return nil
			}},
		{name: "the combiner cannot be made", wantErr: "creating the combiner: no combiner today",
			combiner: func() (mr.Reducer, error) { return nil, errors.New("no combiner today") },
			opts:     MergeOptions{MemoryBytes: 2 << 10, SegmentLimit: 1 << 10, MergePercent: 0.5, Factor: 100}},
		{name: "a combiner emitting another key", wantErr: "combiner emitted key",
			combiner: func() (mr.Reducer, error) {
				return mr.ReducerFunc(func(_ mr.TaskContext, key []byte, _ mr.ValueIterator, out mr.Emitter) error {
					return out.Emit(append(key, 'x'), nil)
				}), nil
			},
			opts: MergeOptions{MemoryBytes: 2 << 10, SegmentLimit: 1 << 10, MergePercent: 0.5, Factor: 100}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			segs, sums := countSegments(t, uint64(i), 30)
			counters := mr.NewCounters()
			dir := t.TempDir()
			o := tc.opts
			o.Dir, o.Counters, o.BlockSize, o.Combiner = dir, counters, 64, tc.combiner
			m, err := NewMergeManager(o)
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			var addErr error
			for j, s := range segs {
				if addErr = m.Add(s.data, s.info); addErr != nil {
					addErr = fmt.Errorf("add %d: %w", j, addErr)
					break
				}
				m.waitIdle()
			}
			it, err := m.Finish(context.Background())
			if tc.wantErr != "" {
				if err = errors.Join(addErr, err); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if addErr != nil || err != nil {
				t.Fatal(addErr, err)
			}
			got := drain(t, it)
			gotSums := map[string]uint64{}
			for j, r := range got {
				if j > 0 && got[j-1].k > r.k {
					t.Fatalf("output not sorted at %d: %q after %q", j, r.k, got[j-1].k)
				}
				v, _ := binary.Uvarint([]byte(r.v))
				gotSums[r.k] += v
			}
			if fmt.Sprint(gotSums) != fmt.Sprint(sums) {
				t.Fatalf("sums %v, want %v", gotSums, sums)
			}
			if n := m.Records(); n != int64(len(got)) {
				t.Errorf("Records() = %d, the final merge gave %d", n, len(got))
			}
			st := m.Stats()
			cs := counters.Snapshot()
			if in, out := cs.Get(mr.TaskCounterGroup, mr.CombineInputRecords), cs.Get(mr.TaskCounterGroup, mr.CombineOutputRecords); in != st.CombineInput || out != st.CombineOutput {
				t.Errorf("COMBINE_INPUT_RECORDS %d, COMBINE_OUTPUT_RECORDS %d, want the stats' %d and %d", in, out, st.CombineInput, st.CombineOutput)
			}
			if err := tc.want(st); err != nil {
				t.Error(err)
			}
		})
	}
}
