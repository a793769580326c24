package apps

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"gomr/mr"
)

// readDFSIOResult parses the result lines into a map.
func readDFSIOResult(t *testing.T, dir string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "part-r-00000"))
	if err != nil {
		t.Fatal(err)
	}
	fields := map[string]string{}
	for _, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		k, v, ok := strings.Cut(line, "\t")
		if !ok {
			t.Fatalf("result line %q has no tab", line)
		}
		fields[k] = v
	}
	return fields
}

func TestDFSIOWriteRead(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "io")
	const files, size = 3, 3*dfsioChunk + 1234 // several chunks and a part
	// A file left from an earlier test is removed by -write.
	if err := os.MkdirAll(filepath.Join(dir, "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "data", "test_io_7"), []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	jc := &inProcessClient{t: t}
	sizeArg := strconv.Itoa(size)
	if err := runApp(t, "dfsio", jc, "-write", "-files", "3", "-size", sizeArg, dir, filepath.Join(base, "write")); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(filepath.Join(dir, "data"))
	if err != nil || len(entries) != files {
		t.Fatalf("data directory: %v, %v; want %d files", entries, err, files)
	}
	for i := range files {
		data, err := os.ReadFile(filepath.Join(dir, "data", fmt.Sprint("test_io_", i)))
		if err != nil {
			t.Fatal(err)
		}
		if len(data) != size {
			t.Fatalf("file %d: %d bytes, want %d", i, len(data), size)
		}
		for j, b := range data {
			if b != byte((j+7*i)%251) {
				t.Fatalf("file %d byte %d is %d, want %d", i, j, b, (j+7*i)%251)
			}
		}
	}
	if got := jc.results[0].Counters.Get(dfsioJob, dfsioBytesWritten); got != files*size {
		t.Errorf("BYTES_WRITTEN %d, want %d", got, files*size)
	}
	checkResult := func(name, mode string) {
		t.Helper()
		r := readDFSIOResult(t, filepath.Join(base, name))
		if r["Test"] != mode || r["Number of files"] != "3" || r["Total bytes processed"] != strconv.Itoa(files*size) {
			t.Errorf("%s result %v", name, r)
		}
		for _, k := range []string{"Total MBytes processed", "Throughput mb/sec", "Average IO rate mb/sec", "IO rate std deviation", "Test exec time sec"} {
			v, err := strconv.ParseFloat(r[k], 64)
			if err != nil || v < 0 || math.IsInf(v, 0) {
				t.Errorf("%s result: %q = %q", name, k, r[k])
			}
		}
		if len(r) != 8 {
			t.Errorf("%s result has %d lines, want 8: %v", name, len(r), r)
		}
	}
	checkResult("write", "write")

	if err := runApp(t, "dfsio", jc, "-read", "-files", "3", "-size", sizeArg, dir, filepath.Join(base, "read")); err != nil {
		t.Fatal(err)
	}
	if got := jc.results[1].Counters.Get(dfsioJob, dfsioBytesRead); got != files*size {
		t.Errorf("BYTES_READ %d, want %d", got, files*size)
	}
	checkResult("read", "read")

	// Reading with another size, a corrupted file or a missing file fails.
	err = runApp(t, "dfsio", jc, "-read", "-files", "3", "-size", "1MB", dir, filepath.Join(base, "read2"))
	if err == nil || !strings.Contains(err.Error(), "want -size 1048576") {
		t.Errorf("read with another size: %v", err)
	}
	err = runApp(t, "dfsio", jc, "-read", "-files", "4", "-size", sizeArg, dir, filepath.Join(base, "read3"))
	if err == nil || !strings.Contains(err.Error(), "test_io_3") {
		t.Errorf("read of a missing file: %v", err)
	}
	f1 := filepath.Join(dir, "data", "test_io_1")
	data, _ := os.ReadFile(f1)
	data[dfsioChunk+5]++
	if err := os.WriteFile(f1, data, 0o644); err != nil {
		t.Fatal(err)
	}
	err = runApp(t, "dfsio", jc, "-read", "-files", "3", "-size", sizeArg, dir, filepath.Join(base, "read4"))
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("content differs from what dfsio -write writes, in the %d bytes at offset %d", dfsioChunk, dfsioChunk)) {
		t.Errorf("read of a corrupted file: %v", err)
	}
}

func TestDFSIOSummarize(t *testing.T) {
	const mb = 1 << 20
	// Two maps: 10 MB in 1 s (10 MB/s) and 10 MB in 4 s (2.5 MB/s).
	r := summarize([]dfsioStats{{10 * mb, 1e9, 100, 1e9 + 100}, {10 * mb, 4e9, 5e8, 4.5e9}})
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	if r.Files != 2 || r.Bytes != 20*mb || !near(r.Throughput, 4) || !near(r.AvgRate, 6.25) || !near(r.StdDev, 3.75) || !near(r.ExecSec, 4.4999999) {
		t.Errorf("summary %+v", r)
	}
}

func TestParseDFSIOSize(t *testing.T) {
	for s, want := range map[string]int64{"0": 0, "1000": 1000, "10B": 10, "3KB": 3 << 10, "2mb": 2 << 20, "1GB": 1 << 30, "1 TB": 1 << 40} {
		if got, err := parseDFSIOSize(s); err != nil || got != want {
			t.Errorf("parseDFSIOSize(%q) = %d, %v; want %d", s, got, err, want)
		}
	}
	for _, s := range []string{"", "x", "-1", "1.5MB", "MB", "99999999999TB"} {
		if _, err := parseDFSIOSize(s); err == nil {
			t.Errorf("parseDFSIOSize(%q): no error", s)
		}
	}
}

func TestDFSIOUsage(t *testing.T) {
	tests := []struct {
		args    []string
		problem string
	}{
		{[]string{"dir", "res"}, "exactly one of -write and -read"},
		{[]string{"-write", "-read", "dir", "res"}, "exactly one of -write and -read"},
		{[]string{"-write", "dir"}, "need <dir> and <result>"},
		{[]string{"-read", "-files", "0", "dir", "res"}, "-files 0"},
		{[]string{"-read", "-size", "lots", "dir", "res"}, `-size: size "lots"`},
		{[]string{"-read", "-nrFiles", "2", "dir", "res"}, "-nrFiles"},
	}
	for _, tt := range tests {
		jc := &fakeClient{}
		err := runApp(t, "dfsio", jc, tt.args...)
		var ue *mr.UsageError
		if !errors.As(err, &ue) || !strings.Contains(ue.Problem, tt.problem) {
			t.Errorf("args %q: error %v, want a usage error containing %q", tt.args, err, tt.problem)
		}
		if len(jc.specs) != 0 {
			t.Errorf("args %q: ran a job", tt.args)
		}
	}
}

func TestDFSIORelativeDir(t *testing.T) {
	base := t.TempDir()
	t.Chdir(base)
	jc := &fakeClient{}
	if err := runApp(t, "dfsio", jc, "-read", "io", "res"); err != nil {
		t.Fatal(err)
	}
	// Tasks run elsewhere: the driver passes them the absolute directory.
	if got := jc.specs[0].Params["dir"]; got != filepath.Join(base, "io") {
		t.Errorf("dir parameter %q, want %q", got, filepath.Join(base, "io"))
	}
	if err := runApp(t, "dfsio", jc, "-read", "hdfs://nn:9000/bench", "res"); err != nil {
		t.Fatal(err)
	}
	if got := jc.specs[1].Params["dir"]; got != "hdfs://nn:9000/bench" {
		t.Errorf("dir parameter %q", got)
	}
}
