package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// counterValue returns the value of a counter the client printed as
// "Name=value".
func counterValue(t *testing.T, text, name string) int64 {
	t.Helper()
	m := regexp.MustCompile(`(?m)^\s*` + regexp.QuoteMeta(name) + `=(\d+)\s*$`).FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("the client printed no %q counter:\n%s", name, text)
	}
	v, _ := strconv.ParseInt(m[1], 10, 64)
	return v
}

// TestE2ETeraSortSmallShuffleBuffer sorts the same records with the default
// reduce memory and with a shuffle buffer of about 2 MiB and a merge
// factor of 3, which make the reduces merge fetched segments in memory to
// disk runs, write large segments straight to disk and merge the disk runs
// in several passes: the part files must be identical byte for byte, and
// the reduces must have spilled records (Spilled Records beyond the maps'
// one spill of each output record).
func TestE2ETeraSortSmallShuffleBuffer(t *testing.T) {
	dir := t.TempDir()
	gen := filepath.Join(dir, "gen")
	const rows = 300000
	if text, err := runMR(t, "local", "-D", "mapreduce.job.maps=3", "teragen", strconv.Itoa(rows), gen); err != nil {
		t.Fatalf("teragen: %v\n%s", err, text)
	}
	sorted := func(name string, defs ...string) (string, string) {
		out := filepath.Join(dir, name)
		args := []string{"local", "-D", "mapreduce.job.reduces=2", "-D", "mapreduce.input.fileinputformat.split.maxsize=5000000",
			"-D", "mapreduce.task.io.sort.mb=2"}
		for _, d := range defs {
			args = append(args, "-D", d)
		}
		text, err := runMR(t, append(args, "terasort", gen, out)...)
		if err != nil {
			t.Fatalf("terasort %v: %v\n%s", defs, err, text)
		}
		return out, text
	}
	wantOut, wantText := sorted("default")
	gotOut, gotText := sorted("small",
		"mapreduce.reduce.shuffle.input.buffer.percent=0.002", // 2 MiB of the 1024 MiB reduce memory
		"mapreduce.task.io.sort.factor=3")

	for _, text := range []string{wantText, gotText} {
		if n := counterValue(t, text, "Map output records"); n != rows {
			t.Fatalf("Map output records=%d, want %d", n, rows)
		}
		if n := counterValue(t, text, "Reduce input records"); n != rows {
			t.Fatalf("Reduce input records=%d, want %d", n, rows)
		}
	}
	// Maps spill each record once; what is beyond is the reduces'.
	if n := counterValue(t, gotText, "Spilled Records"); n < 2*rows {
		t.Errorf("with a 2 MiB shuffle buffer: Spilled Records=%d, want at least %d (the reduces merging to disk)", n, 2*rows)
	}
	if got, want := counterValue(t, gotText, "Merged Map outputs"), counterValue(t, wantText, "Merged Map outputs"); got != want || got == 0 {
		t.Errorf("Merged Map outputs=%d, want %d as with the default buffer", got, want)
	}
	for r := 0; r < 2; r++ {
		name := "part-r-0000" + strconv.Itoa(r)
		want, err1 := os.ReadFile(filepath.Join(wantOut, name))
		got, err2 := os.ReadFile(filepath.Join(gotOut, name))
		if err1 != nil || err2 != nil {
			t.Fatalf("reading %s: %v, %v", name, err1, err2)
		}
		if len(want) == 0 || !bytes.Equal(got, want) {
			t.Errorf("%s: %d bytes with a 2 MiB shuffle buffer, %d with the default; they differ", name, len(got), len(want))
		}
	}
	if !strings.Contains(gotText, "completed successfully") {
		t.Errorf("no success line:\n%s", gotText)
	}
}
