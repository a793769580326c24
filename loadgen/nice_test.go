package loadgen

import (
	"io"
	"log/slog"
	"os"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// niceOf is a thread's nice value (the raw getpriority returns 20 - nice),
// or base for a thread that ended meanwhile.
func niceOf(t *testing.T, tid, base int) int {
	t.Helper()
	p, err := syscall.Getpriority(syscall.PRIO_PROCESS, tid)
	if err == syscall.ESRCH {
		return base
	}
	if err != nil {
		t.Fatalf("getpriority(%d): %v", tid, err)
	}
	return 20 - p
}

// TestGeneratorNice: a nice value is applied to every thread of the
// process only when the JobTracker is not in it, and the main thread's
// restored after (as root: lowering a nice value needs CAP_SYS_NICE); one
// out of range is refused.
func TestGeneratorNice(t *testing.T) {
	base := niceOf(t, os.Getpid(), 0)
	for _, c := range []struct {
		mode    string
		n, want int
	}{
		{"in-process", 5, 0},
		{"spawned", 0, 0},
		{"spawned", 5, 5},
		{"remote", 3, 3},
	} {
		got, restore, err := generatorNice(c.mode, c.n)
		if err != nil {
			t.Fatalf("%s, nice %d: %v", c.mode, c.n, err)
		}
		if got != c.want {
			t.Errorf("%s, nice %d: in effect %d, want %d", c.mode, c.n, got, c.want)
		}
		tids, err := threads()
		if err != nil {
			t.Fatal(err)
		}
		for _, tid := range tids {
			want := base
			if c.want != 0 {
				want = c.want
			}
			if n := niceOf(t, tid, want); n != want {
				t.Errorf("%s, nice %d: thread %d has nice %d, want %d", c.mode, c.n, tid, n, want)
			}
		}
		restore()
		if os.Geteuid() != 0 {
			if c.want != 0 {
				t.Logf("not root: the nice value %d stays (lowering it needs CAP_SYS_NICE)", c.want)
				return
			}
			continue
		}
		// The restore is best effort (a thread the runtime starts while it
		// runs may keep the nice value); the main thread's is checked.
		if n := niceOf(t, os.Getpid(), base); n != base {
			t.Errorf("%s, nice %d: the main thread has nice %d after the restore, want %d", c.mode, c.n, n, base)
		}
	}
	if _, _, err := generatorNice("spawned", 20); err == nil {
		t.Error("nice 20 accepted, want an error (-20 to 19)")
	}
}

// TestGrowPipe: the pipe a spawned JobTracker logs into is enlarged to
// logPipeSize, so that its log writes do not wait for the generator.
func TestGrowPipe(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	growPipe(r, slog.New(slog.NewTextHandler(io.Discard, nil)))
	rc, err := r.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var size int
	if cerr := rc.Control(func(fd uintptr) { size, err = unix.FcntlInt(fd, unix.F_GETPIPE_SZ, 0) }); cerr != nil {
		t.Fatal(cerr)
	}
	if err != nil {
		t.Fatal(err)
	}
	if size < logPipeSize {
		t.Errorf("pipe of %d bytes after growPipe, want at least %d", size, logPipeSize)
	}
}
