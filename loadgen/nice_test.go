package loadgen

import (
	"os"
	"syscall"
	"testing"
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
// process only when the JobTracker is not in it, and restored after (as
// root: lowering a nice value needs CAP_SYS_NICE); one out of range is
// refused.
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
		for _, tid := range tids {
			if n := niceOf(t, tid, base); n != base {
				t.Errorf("%s, nice %d: thread %d has nice %d after the restore, want %d", c.mode, c.n, tid, n, base)
			}
		}
	}
	if _, _, err := generatorNice("spawned", 20); err == nil {
		t.Error("nice 20 accepted, want an error (-20 to 19)")
	}
}
