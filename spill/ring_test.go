package spill

import (
	"bytes"
	"fmt"
	"math/rand"
	"testing"

	"gomr/mr"
)

// TestBufferRing checks the ring that batches without a combining table
// share: each spill holds exactly its batch's records (the boundary rule
// of expectedBatches), sorted, whatever the wraps, the records that go
// to the ring's start and the batches that leave the ring for lack of
// room; and the ring is the only arena of a batch past the entry size.
func TestBufferRing(t *testing.T) {
	for _, tc := range []struct {
		name     string
		bytes    int64
		percent  float64
		maxValue int
		bigEvery int // a value of up to half the buffer every bigEvery records (0: none)
		custom   bool
	}{
		{"small records", 16 << 10, 0.8, 40, 0, false},
		{"spill percent 1", 16 << 10, 1, 40, 0, false},
		{"low spill percent", 16 << 10, 0.3, 40, 0, false},
		{"large records leave the ring", 16 << 10, 0.8, 40, 50, false},
		{"terasort-like", 64 << 10, 0.8, 90, 0, false},
		{"custom comparator", 16 << 10, 0.8, 40, 50, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewSource(int64(len(tc.name))))
			const parts = 3
			var kvs [][2][]byte
			var costs []int64
			for i := range 8000 {
				k := fmt.Appendf(nil, "%x", rng.Intn(1<<20))
				v := bytes.Repeat([]byte{byte('a' + i%26)}, rng.Intn(tc.maxValue+1))
				if tc.bigEvery > 0 && i%tc.bigEvery == 0 {
					v = bytes.Repeat([]byte{'B'}, rng.Intn(int(tc.bytes/2)))
				}
				kvs = append(kvs, [2][]byte{k, v})
				costs = append(costs, int64(len(k)+len(v))+16)
			}
			opts := Options{BufferBytes: tc.bytes, SpillPercent: tc.percent, NumPartitions: parts, BlockSize: 1024}
			if tc.custom {
				opts.Compare = func(a, b []byte) int { return bytes.Compare(a, b) }
			}
			b := checkBatchSpills(t, kvs, costs, opts, tc.bigEvery > 0)
			if tc.bigEvery == 0 && int64(len(b.ring)) >= tc.bytes {
				// The records' bytes are about a third of their cost.
				t.Errorf("ring of %d bytes for a buffer of %d; want it sized to the records' bytes", len(b.ring), tc.bytes)
			}
		})
	}
}

// checkBatchSpills emits kvs into a Buffer of opts (its record overhead
// 16, as costs assume) and checks that each spill holds exactly its
// batch's records, sorted, ties in emit order; wantLeaves asks that some
// batch left the ring.
func checkBatchSpills(t testing.TB, kvs [][2][]byte, costs []int64, opts Options, wantLeaves bool) *Buffer {
	t.Helper()
	const parts = 3
	opts.NumPartitions = parts
	b, c := newTestBuffer(t, opts)
	emitAll(t, b, kvs)
	if int64(len(b.ring)) > opts.BufferBytes {
		t.Fatalf("ring of %d bytes, more than the buffer's %d", len(b.ring), opts.BufferBytes)
	}
	if wantLeaves && b.ringLeaves == 0 {
		t.Errorf("no batch left the ring; the test wants some")
	}
	checkSpillLayout(t, c.spills, parts)
	want := expectedBatches(costs, opts.BufferBytes, opts.SpillPercent)
	if len(want) != len(c.spills) {
		t.Fatalf("%d spills, want %d", len(c.spills), len(want))
	}
	rest := kvs
	for i, s := range c.spills {
		batch := rest[:want[i]]
		rest = rest[want[i]:]
		for p := range parts {
			var exp [][2][]byte
			for _, r := range batch {
				if (mr.HashPartitioner{}).Partition(r[0], parts) == p {
					exp = append(exp, r)
				}
			}
			sortKVsStable(exp)
			if got := readSpillPartition(t, s, p); !equalKVs(got, exp) {
				t.Fatalf("spill %d partition %d: %d records differ from the %d expected", i, p, len(got), len(exp))
			}
		}
	}
	return b
}

// FuzzBufferRing drives the ring with records of fuzzed sizes and keys
// through a small buffer.
func FuzzBufferRing(f *testing.F) {
	f.Add(byte(4), byte(200), bytes.Repeat([]byte{3, 40, 'a', 'b', 'c'}, 200))
	f.Add(byte(1), byte(255), bytes.Repeat([]byte{1, 200, 'x', 7, 3, 'y', 'z', 'q'}, 300))
	f.Fuzz(func(t *testing.T, size, percent byte, data []byte) {
		bufferBytes := 256 + int64(size)*64
		spillPercent := 0.1 + 0.9*float64(percent)/255
		var kvs [][2][]byte
		var costs []int64
		for len(data) >= 2 && len(kvs) < 200 {
			kl, vl := int(data[0]%9), int(data[1])*int(1+data[0]/128)
			data = data[2:]
			k := data[:min(kl, len(data))]
			data = data[len(k):]
			v := bytes.Repeat([]byte{byte(len(kvs))}, vl)
			kvs = append(kvs, [2][]byte{k, v})
			costs = append(costs, int64(len(k)+len(v))+16)
		}
		checkBatchSpills(t, kvs, costs, Options{BufferBytes: bufferBytes, SpillPercent: spillPercent, BlockSize: 512}, false)
	})
}
