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

// TestE2EDefineAfterApp: -D key=value among the app's arguments is applied
// as if given before the app name, not read as an input path; a lone --
// passes what follows to the app as is.
func TestE2EDefineAfterApp(t *testing.T) {
	in := t.TempDir()
	genText(t, filepath.Join(in, "x.txt"), 64<<10, 3)
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	text, err := runMREnv(t, 2*time.Minute, nil, "local", "wordcount",
		"-Dmapreduce.map.speculative=false", in, out,
		"-D", "mapreduce.job.reduces=3", "--define", "mapreduce.reduce.speculative=false")
	if err != nil {
		t.Fatalf("mr local wordcount with -D after the app name: %v\n%s", err, text)
	}
	if !strings.Contains(text, "Launched reduce tasks=3") {
		t.Errorf("output lacks Launched reduce tasks=3:\n%s", text)
	}
	parts, _ := filepath.Glob(filepath.Join(out, "part-r-*"))
	if len(parts) != 3 {
		t.Errorf("%d part files, want 3: %v", len(parts), parts)
	}
	checkWordCount(t, out, countWords(t, in))

	// After the app name, as before it, an unknown key is refused.
	text, err = runMREnv(t, time.Minute, nil, "local", "wordcount", in, filepath.Join(dir, "o2"), "-D", "mapreduce.job.reducez=3")
	if want := `unknown configuration key "mapreduce.job.reducez" in -D (did you mean "mapreduce.job.reduces"?)`; err == nil || !strings.Contains(text, want) {
		t.Errorf("unknown key after the app name: err=%v, output lacks %q:\n%s", err, want, text)
	}
	// A -D without key=value is an error, not a path.
	text, err = runMREnv(t, time.Minute, nil, "local", "wordcount", in, filepath.Join(dir, "o3"), "-D")
	if want := "-D at the end of the app's arguments"; err == nil || !strings.Contains(text, want) {
		t.Errorf("-D at the end: err=%v, output lacks %q:\n%s", err, want, text)
	}

	// After --, "-Dx=1" is grep's pattern.
	gin := filepath.Join(dir, "grep-in.txt")
	if err := os.WriteFile(gin, []byte("a -Dx=1 b -Dx=1\n-Dx=1\nnone\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gout := filepath.Join(dir, "grep-out")
	text, err = runMREnv(t, 2*time.Minute, nil, "local", "grep", gin, gout, "--", "-Dx=1")
	if err != nil {
		t.Fatalf("mr local grep ... -- -Dx=1: %v\n%s", err, text)
	}
	if got := readParts(t, gout); len(got) != 1 || got[0] != "3\t-Dx=1" {
		t.Errorf("grep output %q, want [\"3\\t-Dx=1\"]", got)
	}
}
