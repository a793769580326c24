package tasktracker

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"gomr/mrpb"
)

// TestTrackerDeathKillsChildren: a TaskTracker process that dies (kill
// -9: no chance to kill its children) takes its task children with it
// (their parent-death signal), so that no attempt runs on unsupervised.
func TestTrackerDeathKillsChildren(t *testing.T) {
	jt := startFakeJT(t)
	root := t.TempDir()
	logPath := filepath.Join(root, "tracker.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), trackerProcessEnv+"="+jt.addr, "TTTEST_TRACKER_PROCESS_LOCAL="+root)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	killed := false
	t.Cleanup(func() {
		if !killed {
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("tracker process log:\n%s", b)
		}
	})
	jt.waitBeat(t, 0, "from the tracker process", func(b *mrpb.HeartbeatRequest) bool { return b.InitialContact })

	j := newTestJob(t, blockDef, 1)
	m0 := j.attempt("m", 0, 0)
	from := jt.send(j.launch(t, "m", 0, 0))
	jt.waitBeat(t, from, "reporting "+m0+" RUNNING", inState(m0, "RUNNING"))
	var pid int
	deadline := time.Now().Add(waitTimeout)
	for pid == 0 {
		if pids := taskChildren("", "", m0); len(pids) == 1 {
			pid = pids[0]
		} else if time.Now().After(deadline) {
			t.Fatalf("attempt %s has child processes %v, want one", m0, pids)
		} else {
			time.Sleep(20 * time.Millisecond)
		}
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) }) // if the test fails

	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed = true
	<-exited
	// Within 10 s: a child that loses its tracker's umbilical exits by
	// itself after 30 s, which is not what is tested here.
	if !processGoneWithin(pid, 10*time.Second) {
		t.Fatalf("the child of %s (pid %d) outlived its tracker by 10 s", m0, pid)
	}
}
