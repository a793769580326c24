package criu

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestResumeLine(t *testing.T) {
	tests := []struct {
		attempt, role, want, err string
	}{
		{"a1", "clone", "resume a1 clone\n", ""},
		{"attempt_1_m_000003_2", "orig", "resume attempt_1_m_000003_2 orig\n", ""},
		{"", "clone", "", `bad attempt id ""`},
		{"a 1", "clone", "", `bad attempt id "a 1"`},
		{"a1", "clo\nne", "", `bad role "clo\nne"`},
		{"a1", "", "", `bad role ""`},
		{strings.Repeat("x", maxCtrlLine), "clone", "", "more than 512"},
	}
	for _, tc := range tests {
		got, err := resumeLine(tc.attempt, tc.role)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("resumeLine(%q, %q) error %v, want %q", tc.attempt, tc.role, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("resumeLine(%q, %q) = %q, %v; want %q", tc.attempt, tc.role, got, err, tc.want)
		}
	}
}

func TestParseResumeLine(t *testing.T) {
	tests := []struct {
		line, attempt, role string
		ok                  bool
	}{
		{"resume a1 clone", "a1", "clone", true},
		{"resume  a0   orig ", "a0", "orig", true},
		{"resume a1", "", "", false},
		{"resume a1 clone extra", "", "", false},
		{"start a1 clone", "", "", false},
		{"", "", "", false},
	}
	for _, tc := range tests {
		a, r, err := parseResumeLine(tc.line)
		if (err == nil) != tc.ok || a != tc.attempt || r != tc.role {
			t.Errorf("parseResumeLine(%q) = %q, %q, %v", tc.line, a, r, err)
		}
	}
}

// TestCtrlRoundTrip sends resume lines through a real pipe, the way tracker
// and child use it, and checks that each WaitResume takes exactly one line.
func TestCtrlRoundTrip(t *testing.T) {
	c, err := NewCtrl()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := PipeInode(c.R); err != nil {
		t.Fatal(err)
	}
	ir, _ := PipeInode(c.R)
	iw, _ := PipeInode(c.W)
	if ir != iw || ir == 0 {
		t.Fatalf("pipe ends have inodes %d and %d", ir, iw)
	}
	if err := c.Resume("a0", "orig"); err != nil {
		t.Fatal(err)
	}
	if err := c.Resume("a7", "clone"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.W.WriteString("resume a8"); err != nil {
		t.Fatal(err)
	}
	for _, want := range [][2]string{{"a0", "orig"}, {"a7", "clone"}} {
		a, r, err := WaitResume(c.R)
		if err != nil || a != want[0] || r != want[1] {
			t.Fatalf("WaitResume = %q, %q, %v; want %q, %q", a, r, err, want[0], want[1])
		}
	}
	c.W.Close()
	c.W = nil
	// A line cut short by the writer closing.
	if _, _, err := WaitResume(c.R); !errors.Is(err, ErrCtrlClosed) || !strings.Contains(err.Error(), `"resume a8"`) {
		t.Fatalf("WaitResume on a cut line: %v", err)
	}
	// No writer, no line: what a clone restored without inherit-fd sees.
	if _, _, err := WaitResume(c.R); !errors.Is(err, ErrCtrlClosed) {
		t.Fatalf("WaitResume at EOF: %v, want ErrCtrlClosed", err)
	}
	if err := c.Resume("a9", "clone"); err == nil {
		t.Fatal("Resume without a write end succeeded")
	}
}

func TestPipeInodeNotPipe(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := PipeInode(f); err == nil || !strings.Contains(err.Error(), "is not a pipe") {
		t.Fatalf("PipeInode(regular file) = %v", err)
	}
}

func TestVersionString(t *testing.T) {
	for v, want := range map[int]string{40201: "4.2.1", 40200: "4.2.0", 31701: "3.17.1", 50000: "5.0.0"} {
		if got := versionString(v); got != want {
			t.Errorf("versionString(%d) = %q, want %q", v, got, want)
		}
	}
}

func TestLogCause(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	rlimit := "(00.000301) Error (criu/util.c:1234): rlimit: Can't setup RLIMIT_NOFILE for self: Operation not permitted\n"
	tests := []struct {
		name, log, want string
	}{
		{"error lines, rlimit left out", rlimit +
			"(00.001) Warn  (criu/kerndat.c:1): something\n" +
			"(00.002) Error (criu/files-reg.c:2): File tmp/x/task.out has bad size 16 (expect 0)\n" +
			"(00.003) Error (criu/cr-restore.c:3): Restoring FAILED.\n",
			"(00.001) Warn  (criu/kerndat.c:1): something | (00.002) Error (criu/files-reg.c:2): File tmp/x/task.out has bad size 16 (expect 0) | (00.003) Error (criu/cr-restore.c:3): Restoring FAILED."},
		{"line before the first error, not an error itself", rlimit + "(00.001) No inventory.img image\n(00.002) Error (criu/protobuf.c:72): Unexpected EOF on (empty-image)\n",
			"(00.001) No inventory.img image | (00.002) Error (criu/protobuf.c:72): Unexpected EOF on (empty-image)"},
		{"rlimit right before the error", rlimit + "(00.002) Error (criu/image.c:563): Magic doesn't match for inventory.img\n",
			"(00.002) Error (criu/image.c:563): Magic doesn't match for inventory.img"},
		{"no error line: the tail", rlimit + "l1\nl2\nl3\nl4\nl5\nl6\nl7\n", "l2 | l3 | l4 | l5 | l6 | l7"},
		{"empty", "", "(log empty)"},
		{"many errors: first five and the last", "Error (a) 1\nError (a) 2\nError (a) 3\nError (a) 4\nError (a) 5\nError (a) 6\nError (a) 7\n",
			"Error (a) 1 | Error (a) 2 | Error (a) 3 | Error (a) 4 | Error (a) 5 | Error (a) 7"},
	}
	for _, tc := range tests {
		if got := logCause(write(tc.name, tc.log)); got != tc.want {
			t.Errorf("%s: logCause = %q, want %q", tc.name, got, tc.want)
		}
	}
	if got := logCause(filepath.Join(dir, "missing")); !strings.Contains(got, "log unreadable") {
		t.Errorf("logCause(missing) = %q", got)
	}
}
