package main

import (
	"bytes"
	"errors"
	"log"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"gomr/conf"
)

// runMRSplit runs mr with args and returns its stdout and stderr apart.
func runMRSplit(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	cmd := mrCmd(args...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	return o.String(), e.String(), err
}

// TestSimHelp: mr sim --help (and -h) prints the usage and the
// simulator's real flags on stdout, nothing on stderr, and succeeds.
func TestSimHelp(t *testing.T) {
	for _, flag := range []string{"--help", "-h"} {
		out, errOut, err := runMRSplit(t, "sim", flag)
		if err != nil {
			t.Fatalf("mr sim %s: %v\nstderr: %s", flag, err, errOut)
		}
		if errOut != "" {
			t.Errorf("mr sim %s wrote to stderr:\n%s", flag, errOut)
		}
		for _, want := range []string{"Usage:\n  mr sim --policy", "Flags:", "--workload string", "--compare-speculation"} {
			if !strings.Contains(out, want) {
				t.Errorf("mr sim %s stdout lacks %q:\n%s", flag, want, out)
			}
		}
	}
}

// localJobIDs runs mr local with args and returns its output and the
// job ids it printed.
func localJobIDs(t *testing.T, args ...string) (string, []string) {
	t.Helper()
	out, err := runMR(t, append([]string{"local"}, args...)...)
	if err != nil {
		t.Fatalf("mr local %v: %v\n%s", args, err, out)
	}
	var ids []string
	for _, line := range strings.Split(out, "\n") {
		if rest, ok := strings.CutPrefix(line, "Running job: "); ok {
			ids = append(ids, strings.Fields(rest)[0])
		}
	}
	if len(ids) == 0 {
		t.Fatalf("mr local %v printed no job id:\n%s", args, out)
	}
	return out, ids
}

// TestE2ELocalJobIDsDiffer: two mr local runs, each with a fresh
// history, give their jobs different ids (they were both
// job_<minute>_0001 within a minute). Each prints its web UI's address
// and the job's tracking URL, and the map-only job ends at "map 100%
// reduce 0%", as in Hadoop, never reduce 100%.
func TestE2ELocalJobIDsDiffer(t *testing.T) {
	args := []string{"--trackers", "1", "sleep", "-m", "1", "-r", "0", "-mt", "0"}
	out, a := localJobIDs(t, args...)
	_, b := localJobIDs(t, args...)
	if a[0] == b[0] {
		t.Errorf("two mr local runs gave the same job id %s", a[0])
	}
	ui := regexp.MustCompile(`(?m)^JobTracker web UI: (http://127\.0\.0\.1:[0-9]+)$`).FindStringSubmatch(out)
	if ui == nil {
		t.Fatalf("mr local printed no web UI address:\n%s", out)
	}
	for _, want := range []string{"The url to track the job: " + ui[1] + "/job?id=" + a[0] + "\n", " map 100% reduce 0%\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("mr local output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "reduce 100%") {
		t.Errorf("a map-only job reported reduce 100%%:\n%s", out)
	}
}

// TestE2ELocalChecksArgsFirst: mr local refuses an app's bad arguments
// with its usage error (exit status 2) before it starts the cluster
// (--keep would print the work directory of a cluster it started).
func TestE2ELocalChecksArgsFirst(t *testing.T) {
	out, err := runMR(t, "local", "--keep", "wordcount", "only-an-input")
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 {
		t.Fatalf("mr local wordcount with one argument: %v, want exit status 2\n%s", err, out)
	}
	if !strings.Contains(out, "usage: wordcount <in> [<in>...] <out>") {
		t.Errorf("no usage in the output:\n%s", out)
	}
	if strings.Contains(out, "work directory:") {
		t.Errorf("mr local started its cluster before checking the arguments:\n%s", out)
	}
}

// TestE2ELocalInputGlob: an input glob is expanded as Hadoop expands it
// (only the .txt files are counted); one that matches nothing fails the
// job with an error saying so.
func TestE2ELocalInputGlob(t *testing.T) {
	in := t.TempDir()
	for name, text := range map[string]string{"1.txt": "a b a\n", "2.txt": "c\n", "3.log": "zzz\n"} {
		if err := os.WriteFile(filepath.Join(in, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(t.TempDir(), "out")
	if text, err := runMR(t, "local", "--trackers", "1", "wordcount", in+"/*.txt", out); err != nil {
		t.Fatalf("mr local wordcount %s/*.txt: %v\n%s", in, err, text)
	}
	checkWordCount(t, out, map[string]int{"a": 2, "b": 1, "c": 1})
	text, err := runMR(t, "local", "--trackers", "1", "wordcount", in+"/*.none", out+"2")
	if err == nil || !strings.Contains(text, "input pattern "+in+"/*.none matches no files") {
		t.Errorf("a glob matching nothing: %v, want the error saying so:\n%s", err, text)
	}
}

// TestE2ELocalOneLogFormat: an app driver's log lines (dfsio logs its
// result through slog's default logger) come out in the daemons' format
// (level=INFO msg=...), not the standard log package's
// ("2026/11/25 22:15:59 INFO ...").
func TestE2ELocalOneLogFormat(t *testing.T) {
	dir := t.TempDir()
	text, err := runMR(t, "local", "--trackers", "1", "dfsio", "-write", "-files", "1", "-size", "1KB", filepath.Join(dir, "io"), filepath.Join(dir, "result"))
	if err != nil {
		t.Fatalf("mr local dfsio: %v\n%s", err, text)
	}
	if !strings.Contains(text, `level=INFO msg="dfsio done"`) {
		t.Errorf("the driver's log line is not in the daemons' format:\n%s", text)
	}
}

// TestInstallLogger: after installLogger, the standard log package and
// slog's default logger write in the one format.
func TestInstallLogger(t *testing.T) {
	defer slog.SetDefault(slog.Default())
	var buf bytes.Buffer
	cfg, err := conf.FromMap(map[string]string{"log.level": "info"})
	if err != nil {
		t.Fatal(err)
	}
	installLogger(cfg, &buf)
	log.Print("from the log package")
	slog.Info("from slog", "k", 1)
	for _, want := range []string{`level=INFO msg="from the log package"`, `level=INFO msg="from slog" k=1`} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, buf.String())
		}
	}
}
