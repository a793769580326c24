package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

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
