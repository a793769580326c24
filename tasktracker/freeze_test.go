package tasktracker

import (
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// TestTracedStatus checks the reading of /proc/<pid>/status's TracerPid.
func TestTracedStatus(t *testing.T) {
	for _, tc := range []struct {
		name, status string
		want         bool
	}{
		{"traced", "Name:\tchild\nState:\tt (tracing stop)\nTracerPid:\t4242\nUid:\t0\n", true},
		{"not traced", "Name:\tchild\nState:\tS (sleeping)\nTracerPid:\t0\n", false},
		{"no line", "Name:\tchild\n", false},
		{"garbage", "TracerPid:\tx\n", false},
		{"last line without newline", "Name:\tc\nTracerPid:\t7", true},
	} {
		if got := tracedStatus(tc.status); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestWatchFreeze checks that watchFreeze sees a process tree frozen the
// way CRIU freezes one (every thread ptrace-seized), and only then.
func TestWatchFreeze(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to ptrace a child")
	}
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	pid := cmd.Process.Pid
	if treeTraced(pid) {
		t.Fatal("an untraced child counts as frozen")
	}
	frozen := make(chan struct{})
	stop := watchFreeze(pid, func() { close(frozen) })
	select {
	case <-frozen:
		t.Fatal("frozen before any tracer")
	case <-time.After(20 * freezePoll):
	}
	// A tracer seizes it (from a locked thread, as ptrace requires).
	seized := make(chan error, 1)
	release := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		_, _, e := syscall.RawSyscall6(syscall.SYS_PTRACE, 0x4206 /* PTRACE_SEIZE */, uintptr(pid), 0, 0, 0, 0)
		if e != 0 {
			seized <- e
			return
		}
		seized <- nil
		<-release
		_ = syscall.PtraceDetach(pid)
	}()
	if err := <-seized; err != nil {
		t.Fatalf("PTRACE_SEIZE: %v", err)
	}
	defer close(release)
	select {
	case <-frozen:
	case <-time.After(5 * time.Second):
		t.Fatal("the seized child was not seen frozen")
	}
	stop()
	// A nil callback watches nothing.
	watchFreeze(pid, nil)()
}

// TestWalkProcTree: the walk reaches a child's own children (a shell and
// the sleep it waits for), and the tree's resident set counts both.
func TestWalkProcTree(t *testing.T) {
	cmd := exec.Command("sh", "-c", "sleep 30 & wait")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	pid := cmd.Process.Pid
	var seen []int
	deadline := time.Now().Add(5 * time.Second)
	for len(seen) < 2 && time.Now().Before(deadline) {
		seen = seen[:0]
		walkProcTree(pid, func(p int, tasks []os.DirEntry, err error) bool {
			if err == nil && len(tasks) > 0 {
				seen = append(seen, p)
			}
			return true
		})
		time.Sleep(10 * time.Millisecond)
	}
	if len(seen) != 2 || seen[0] != pid {
		t.Fatalf("walked %v, want the shell %d and its sleep", seen, pid)
	}
	if whole, own := treeResidentBytes(pid), residentBytes(pid); own <= 0 || whole <= own {
		t.Errorf("tree resident %d bytes, the shell alone %d: want more for the tree", whole, own)
	}
	if walkProcTree(pid, func(int, []os.DirEntry, error) bool { return false }) {
		t.Error("a visit that stops the walk: want false")
	}
}
