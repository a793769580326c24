//go:build linux

package shuffle

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"gomr/spill"
)

// BenchmarkBatchHandlerSmall is the server's side of make bench-shuffle
// without the network: 250 attempts of 4 spills of 50 partitions of 825
// bytes, every reduce asking for its 1,000 segments in one request of
// version 2, into a handler whose data cache starts empty (each file
// mapped once, then served to 49 more reduces). One op is the 50 requests;
// ns/segment is the time of one segment's share, cpu-ns/segment the
// process's CPU (user and system, the garbage collector's included: on a
// loaded machine the time includes waiting for a CPU, the CPU does not).
func BenchmarkBatchHandlerSmall(b *testing.B) {
	const attempts, spills, reduces, segBytes = 250, 4, 50, 825
	root := b.TempDir()
	w := &worker{secrets: map[string][]byte{"j": []byte("s")}, dirs: map[string]string{}}
	data := make([]byte, reduces*segBytes)
	rng := rand.New(rand.NewPCG(5, 6))
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	bodies, hashes := make([][]byte, reduces), make([]string, reduces)
	items := make([][]BatchItem, reduces)
	for a := range attempts {
		attempt := fmt.Sprintf("attempt_b_0001_m_%06d_0", a)
		dir := filepath.Join(root, attempt)
		if err := os.Mkdir(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		w.dirs["j/"+attempt] = dir
		for k := range spills {
			if err := os.WriteFile(filepath.Join(dir, spill.DataFileName(k)), data, 0o644); err != nil {
				b.Fatal(err)
			}
			for r := range reduces {
				items[r] = append(items[r], BatchItem{Attempt: attempt, Spill: k, Offset: int64(r * segBytes), Length: segBytes})
			}
		}
	}
	for r := range reduces {
		var err error
		if bodies[r], err = EncodeBatchRequest(BatchRequest{Version: BatchVersion, Job: "j", Reduce: r, At: time.Now().UnixMilli(), Items: items[r]}); err != nil {
			b.Fatal(err)
		}
		hashes[r] = BatchRequestHash([]byte("s"), bodies[r])
	}
	b.ReportAllocs()
	b.SetBytes(attempts * spills * reduces * segBytes)
	cpu0 := processCPU(b)
	for b.Loop() {
		h := NewHandler(w, w, nil)
		for r := range reduces {
			req := httptest.NewRequest("POST", BatchPath, bytes.NewReader(bodies[r]))
			req.Header.Set(HashHeader, hashes[r])
			dw := &discardWriter{h: http.Header{}}
			h.ServeHTTP(dw, req)
			if dw.code != 200 || dw.n < attempts*spills*segBytes {
				b.Fatalf("status %d, %d bytes", dw.code, dw.n)
			}
		}
	}
	cpu := processCPU(b) - cpu0
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*attempts*spills*reduces), "ns/segment")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N*attempts*spills*reduces), "cpu-ns/segment")
}

// processCPU is the process's user and system CPU time so far.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
