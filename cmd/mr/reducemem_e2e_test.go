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

// TestE2EWordCountSmallShuffleBuffer counts the same words with the default
// reduce memory and with a shuffle buffer of about 0.5 MiB (none of it kept
// for the reduce) and a merge factor of 3, which make the reduces merge the
// many small spills of 1 MiB sort buffers in memory to disk runs and merge
// those runs, running the job's combiner in those merges (as Hadoop's
// MergeManager does): both counts must equal an independent count, and
// the reduces must read fewer records than with the default buffer, where
// nothing is merged to disk.
func TestE2EWordCountSmallShuffleBuffer(t *testing.T) {
	in := t.TempDir()
	genText(t, filepath.Join(in, "a.txt"), 2<<20, 11)
	want := countWords(t, in)
	count := func(name string, defs ...string) string {
		out := filepath.Join(t.TempDir(), name)
		args := []string{"local", "-D", "mapreduce.job.reduces=2", "-D", "mapreduce.input.fileinputformat.split.maxsize=500000",
			"-D", "mapreduce.task.io.sort.mb=1"}
		for _, d := range defs {
			args = append(args, "-D", d)
		}
		text, err := runMR(t, append(args, "wordcount", in, out)...)
		if err != nil {
			t.Fatalf("wordcount %v: %v\n%s", defs, err, text)
		}
		checkWordCount(t, out, want)
		return text
	}
	defText := count("default")
	smallText := count("small",
		"mapreduce.reduce.shuffle.input.buffer.percent=0.0005", // 0.5 MiB of the 1024 MiB reduce memory
		"mapreduce.reduce.input.buffer.percent=0",
		"mapreduce.task.io.sort.factor=3")
	if got, def := counterValue(t, smallText, "Reduce input records"), counterValue(t, defText, "Reduce input records"); got >= def {
		t.Errorf("Reduce input records=%d with a 0.5 MiB shuffle buffer, %d with the default: want fewer (the reduces' merges combine)", got, def)
	}
	if got, def := counterValue(t, smallText, "Combine input records"), counterValue(t, defText, "Combine input records"); got <= def {
		t.Errorf("Combine input records=%d with a 0.5 MiB shuffle buffer, %d with the default: want more (the reduces' merges combine)", got, def)
	}
}
