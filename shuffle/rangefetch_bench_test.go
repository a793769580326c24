package shuffle

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"gomr/spill"
)

// BenchmarkSegmentAfter measures the shuffle server's cost of a range
// request (a split reduce's remainder asking for the records after a key)
// on one TeraSort-like segment (25,000 records of a 10-byte random key and
// a 90-byte value, 2.5 MB raw, 64 KiB blocks): "scan" is what the server
// does now (verify the whole segment, decode it, keep the records after
// the key), "seek" the lower bound of what a sparse key index would let
// it do (verify and decode only from the block that holds the key; the
// block's offset is taken as known). The bytes each reads from disk are
// reported as read-B/op. docs/split.md#not-done.
func BenchmarkSegmentAfter(b *testing.B) {
	const n, blockRecords = 25000, 64 << 10 / 100
	r := rand.New(rand.NewPCG(1, 2))
	recs := make([]kv, n)
	for i := range recs {
		k := make([]byte, 10)
		for j := range k {
			k[j] = byte(r.IntN(256))
		}
		v := bytes.Repeat([]byte{byte('A' + i%26)}, 90)
		recs[i] = kv{string(k), string(v)}
	}
	slices.SortFunc(recs, func(a, b kv) int { return bytes.Compare([]byte(a.k), []byte(b.k)) })
	encode := func(rs []kv) ([]byte, spill.SegmentInfo) {
		var buf bytes.Buffer
		sw := spill.NewSegmentWriter(&buf, 0)
		for _, x := range rs {
			if err := sw.Write([]byte(x.k), []byte(x.v)); err != nil {
				b.Fatal(err)
			}
		}
		info, err := sw.Close()
		if err != nil {
			b.Fatal(err)
		}
		return buf.Bytes(), info
	}
	data, seg := encode(recs)
	for _, frac := range []float64{0.1, 0.5, 0.9} {
		at := int(frac * n)
		after := []byte(recs[at].k)
		// The records from the block that holds the key: what a seek
		// would read (a block is about blockRecords records).
		tail, tseg := encode(recs[at/blockRecords*blockRecords:])
		for _, c := range []struct {
			name string
			data []byte
			seg  spill.SegmentInfo
		}{{"scan", data, seg}, {"seek", tail, tseg}} {
			b.Run(fmt.Sprintf("after=%.0f%%/%s", frac*100, c.name), func(b *testing.B) {
				for b.Loop() {
					if err := spill.VerifySegment(c.data, c.seg); err != nil {
						b.Fatal(err)
					}
					if _, _, err := segmentAfter(c.data, c.seg, after, bytes.Compare); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(len(c.data)), "read-B/op")
			})
		}
	}
}
