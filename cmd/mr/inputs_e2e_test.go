package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestE2EFIFOInputRefused: a FIFO given as input, or found in an input
// directory, fails the submission at once with an error naming it; it was
// taken for an empty file, and the job "completed successfully" with empty
// output while the FIFO's writer waited. Nothing may wait on the FIFO.
func TestE2EFIFOInputRefused(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(dir, "in")
	if err := os.MkdirAll(in, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(in, "a.txt"), []byte("a b\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(in, "p"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		inputs []string
		want   string
	}{
		{[]string{fifo}, "input " + fifo + " is a named pipe (FIFO), not a regular file or directory"},
		{[]string{filepath.Join(in, "a.txt"), in}, "input " + filepath.Join(in, "p") + " is a named pipe (FIFO), not a regular file or directory (in input directory " + in + ")"},
	}
	for i, c := range cases {
		out := filepath.Join(dir, "out"+string(rune('0'+i)))
		args := append(append([]string{"local", "wordcount"}, c.inputs...), out)
		start := time.Now()
		text, err := runMREnv(t, time.Minute, nil, args...)
		if err == nil {
			t.Errorf("mr %v succeeded, want an error:\n%s", args, text)
			continue
		}
		if !strings.Contains(text, c.want) {
			t.Errorf("mr %v: output lacks %q:\n%s", args, c.want, text)
		}
		if d := time.Since(start); d > 20*time.Second {
			t.Errorf("mr %v took %v to fail", args, d)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("mr %v made its output directory", args)
		}
	}
}

// TestE2EUnknownMREnvRefused: an MR_ variable that names no configuration
// key stops mr local before anything runs, as an unknown -D key does.
func TestE2EUnknownMREnvRefused(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.txt")
	if err := os.WriteFile(in, []byte("a b\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	text, err := runMREnv(t, time.Minute, []string{"MR_NO_SUCH_KEY=1"}, "local", "wordcount", in, out)
	if err == nil {
		t.Fatalf("mr local with MR_NO_SUCH_KEY=1 succeeded, want an error:\n%s", text)
	}
	want := "unknown configuration key in environment variable MR_NO_SUCH_KEY"
	if !strings.Contains(text, want) {
		t.Errorf("output lacks %q:\n%s", want, text)
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("output directory %s was made", out)
	}
	// A misspelt key's variable gets the key's variable suggested.
	text, err = runMREnv(t, time.Minute, []string{"MR_MAPREDUCE_JOB_REDUCE=2"}, "local", "wordcount", in, out)
	want = `did you mean MR_MAPREDUCE_JOB_REDUCES, for "mapreduce.job.reduces"?`
	if err == nil || !strings.Contains(text, want) {
		t.Errorf("mr local with MR_MAPREDUCE_JOB_REDUCE=2: err=%v, output lacks %q:\n%s", err, want, text)
	}
}
