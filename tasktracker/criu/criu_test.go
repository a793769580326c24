package criu

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestCloneBesideOriginal runs the whole protocol with real CRIU on a toy
// child: quiesce, dump, resume the original, copy its directory, restore a
// clone with that copy bound over the original's directory, hand the clone a
// new attempt id, and check that both run on with their own identity, the
// clone from the dumped state and writing into its copy.
func TestCloneBesideOriginal(t *testing.T) {
	criuPath := requireCRIU(t)
	ctx := context.Background()
	base := t.TempDir()
	origDir := filepath.Join(base, "tasks", "t1")   // the attempt's fixed path
	cloneDir := filepath.Join(base, "clones", "t1") // the clone's copy
	imgDir, workDir := filepath.Join(base, "img"), filepath.Join(base, "work")

	tr := newTracker(t)
	cmd, ctrl := startToy(t, tr, origDir, "a0", 10)
	orig := tr.await("a0", "orig")
	// Let the counter get well away from zero (each ping waits for it to move).
	for n := orig.counter; n < 30; {
		m := orig.ping(t)
		if m <= n {
			t.Fatalf("a0 counter did not move: %d, then %d", n, m)
		}
		n = m
	}
	quiet := orig.quiesce(t)
	if quiet < 30 {
		t.Fatalf("a0 quiet at counter %d, want >= 30", quiet)
	}

	ds, err := Dump(ctx, criuPath, cmd.Process.Pid, imgDir, workDir)
	if err != nil {
		t.Fatal(err)
	}
	if ds.ImageBytes < 10<<20 {
		t.Errorf("image of a 10 MiB child is %d bytes, want >= %d", ds.ImageBytes, 10<<20)
	}
	if ds.Frozen <= 0 || ds.Frozen > ds.Wall {
		t.Errorf("dump stats: frozen %v, wall %v: want 0 < frozen <= wall", ds.Frozen, ds.Wall)
	}
	t.Logf("dump: %d bytes, wall %v, frozen %v", ds.ImageBytes, ds.Wall, ds.Frozen)

	if err := ctrl.Resume("a0", "orig"); err != nil {
		t.Fatal(err)
	}
	orig = tr.await("a0", "orig")
	if orig.counter < quiet {
		t.Errorf("a0 resumed at counter %d, below its quiet point %d", orig.counter, quiet)
	}

	copyDir(t, origDir, cloneDir)
	ino, err := PipeInode(ctrl.W)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := Restore(ctx, criuPath, RestoreSpec{
		ImagesDir: imgDir, WorkDir: workDir, CtrlInode: ino,
		Binds: []Bind{{Source: cloneDir, Target: origDir}},
	})
	if err != nil {
		t.Fatal(err)
	}
	clonePid := rs.Pid
	reaped := false
	t.Cleanup(func() {
		rs.Ctrl.Close()
		if !reaped {
			syscall.Kill(clonePid, syscall.SIGKILL)
			syscall.Wait4(clonePid, nil, 0, nil)
		}
	})
	if clonePid == cmd.Process.Pid {
		t.Fatalf("clone has the original's pid %d", clonePid)
	}
	// Both run in a time namespace of their own, as started (the clone's
	// comes from the image).
	selfTime, err := os.Readlink("/proc/self/ns/time")
	if err != nil {
		t.Fatal(err)
	}
	for _, pid := range []int{cmd.Process.Pid, clonePid} {
		if ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/time", pid)); err != nil || ns == selfTime {
			t.Errorf("pid %d time namespace %q (%v), the test's is %q", pid, ns, err, selfTime)
		}
	}
	// The bind lives only in the clone's mount namespace.
	if same, err := sameMountNS(clonePid); err != nil || same {
		t.Errorf("clone in this process's mount namespace: %v, %v", same, err)
	}
	if mi, err := os.ReadFile("/proc/self/mountinfo"); err != nil {
		t.Fatal(err)
	} else if strings.Contains(string(mi), origDir) {
		t.Errorf("bind over %s visible in the test's mount table", origDir)
	}
	if err := rs.Ctrl.Resume("a1", "clone"); err != nil {
		t.Fatal(err)
	}
	clone := tr.await("a1", "clone")
	// The clone carries on from the dumped state (the counter at the dump is
	// at least the one at the quiet point), not from a fresh start.
	if clone.counter < quiet {
		t.Errorf("clone a1 says hello at counter %d, below the original's quiet point %d", clone.counter, quiet)
	}
	t.Logf("quiet at %d; original resumed at %d; clone resumed at %d; restore wall %v",
		quiet, orig.counter, clone.counter, rs.Wall)

	// Both keep running, each with its own identity.
	for _, tc := range []*toyConn{orig, clone, orig, clone} {
		before := tc.counter
		if n := tc.ping(t); n <= before {
			t.Errorf("%s %s: counter %d after %d", tc.attempt, tc.role, n, before)
		} else {
			tc.counter = n
		}
	}

	// Files: the clone's output went to its copy, never to the original's.
	read := func(p string) string {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	origLog, cloneLog := read(filepath.Join(origDir, toyLog)), read(filepath.Join(cloneDir, toyLog))
	origOut, cloneOut := read(filepath.Join(origDir, "stdout")), read(filepath.Join(cloneDir, "stdout"))
	for _, c := range []struct {
		name, text, want, notWant string
	}{
		{"original's " + toyLog, origLog, "a0 orig pong", "a1"},
		{"clone's " + toyLog, cloneLog, "a1 clone pong", ""},
		{"original's stdout", origOut, "a0 orig resumed", "a1"},
		{"clone's stdout", cloneOut, "a1 clone resumed", ""},
	} {
		if !strings.Contains(c.text, c.want) {
			t.Errorf("%s lacks %q:\n%s", c.name, c.want, c.text)
		}
		if c.notWant != "" && strings.Contains(c.text, c.notWant) {
			t.Errorf("%s contains %q:\n%s", c.name, c.notWant, c.text)
		}
	}
	// The copy started as the original's log at the copy; the clone only
	// appended its own lines after it.
	if n := strings.Count(cloneLog, "a0 orig start"); n != 2 {
		t.Errorf("clone's %s has %d 'a0 orig start' lines, want 2 (copied):\n%s", toyLog, n, cloneLog)
	}
	if strings.Count(origLog, "a0 orig start") != 2 {
		t.Errorf("original's %s: want 2 'a0 orig start' lines:\n%s", toyLog, origLog)
	}

	if sig := killReap(t, clonePid); sig != syscall.SIGKILL {
		t.Errorf("clone ended by %v", sig)
	}
	reaped = true
	if sig := killReap(t, cmd.Process.Pid); sig != syscall.SIGKILL {
		t.Errorf("original ended by %v", sig)
	}
}

// TestRestoreBadImages: restoring from a directory without a usable image
// fails with CRIU's own explanation from its log.
func TestRestoreBadImages(t *testing.T) {
	criuPath := requireCRIU(t)
	ctrl, err := NewCtrl()
	if err != nil {
		t.Fatal(err)
	}
	defer ctrl.Close()
	ino, err := PipeInode(ctrl.W)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	notDir := filepath.Join(dir, "file")
	if err := os.WriteFile(notDir, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		inventory []byte // nil: no inventory.img
		binds     []Bind
		want      []string
	}{
		{"empty directory", nil, nil, []string{"No inventory.img image", "Error (criu/protobuf.c:72): Unexpected EOF on (empty-image)"}},
		{"corrupt inventory", []byte("this is not a CRIU image at all"), nil, []string{"Error (criu/image.c:563): Magic doesn't match for inventory.img"}},
		{"bind fails", nil, []Bind{{Source: notDir, Target: dir}}, []string{"helper: mount: " + dir + ": ", "Not a directory",
			"bind-mounting " + notDir + " over " + dir + " failed", "(log unreadable"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			base := t.TempDir()
			img, work := filepath.Join(base, "img"), filepath.Join(base, "work")
			if err := os.MkdirAll(img, 0o755); err != nil {
				t.Fatal(err)
			}
			if tc.inventory != nil {
				if err := os.WriteFile(filepath.Join(img, "inventory.img"), tc.inventory, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			_, err := Restore(context.Background(), criuPath, RestoreSpec{ImagesDir: img, WorkDir: work, CtrlInode: ino, Binds: tc.binds})
			if err == nil {
				t.Fatal("restore succeeded")
			}
			msg := err.Error()
			want := append([]string{"criu: restore from " + img + " failed: ", "CRIU log " + filepath.Join(work, RestoreLog)}, tc.want...)
			for _, w := range want {
				if !strings.Contains(msg, w) {
					t.Errorf("error lacks %q:\n%s", w, msg)
				}
			}
			if strings.Contains(msg, "\n") {
				t.Errorf("error spans lines:\n%s", msg)
			}
		})
	}
}

// TestProbeErrors: Probe names exactly what is wrong with the path.
func TestProbeErrors(t *testing.T) {
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain")
	if err := os.WriteFile(plain, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	notCRIU := filepath.Join(dir, "not-criu.sh")
	if err := os.WriteFile(notCRIU, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	root := os.Geteuid() == 0
	tests := []struct {
		name, path, want string
		needRoot         bool
	}{
		{"empty", "", "no CRIU path configured", false},
		{"missing", filepath.Join(dir, "nope", "criu.sh"), "CRIU not found at " + filepath.Join(dir, "nope", "criu.sh"), false},
		{"directory", dir, "CRIU path " + dir + " is a directory", false},
		{"not executable", plain, "CRIU at " + plain + " is not executable (mode -rw-r--r--)", false},
		{"not root", notCRIU, "needs root", false},
		{"not criu", notCRIU, "running " + notCRIU + " swrk (CRIU's RPC service) for its version failed", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "not root" && root {
				t.Skip("running as root")
			}
			if tc.needRoot && !root {
				t.Skip("needs root")
			}
			_, err := Probe(context.Background(), tc.path)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Probe(%q) = %v, want an error containing %q", tc.path, err, tc.want)
			}
		})
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Probe(ctx, notCRIU); !errors.Is(err, context.Canceled) {
		t.Errorf("Probe with a cancelled context = %v, want context.Canceled", err)
	}
}

// TestProbeInstalled: the installed CRIU is 4.2 or later.
func TestProbeInstalled(t *testing.T) {
	path := requireCRIU(t)
	info, err := Probe(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	if info.Path != path || !strings.HasPrefix(info.Version, "4.") {
		t.Fatalf("Probe = %+v", info)
	}
	t.Logf("CRIU %s at %s", info.Version, info.Path)
}

// cloneToy runs the clone protocol on a running toy (tc, host pid pid, control
// pipe ctrl) whose files the tracker sees in liveDir and the toy at
// attemptDir: quiesce, dump, resume, copy liveDir to copyTo, restore with
// copyTo bound over attemptDir, and hand the clone newAttempt. It returns the
// original's and the clone's new connections, the clone, and the original's
// quiet counter.
func cloneToy(t *testing.T, criuPath string, tr *tracker, tc *toyConn, pid int, ctrl *Ctrl,
	liveDir, attemptDir, copyTo, newAttempt string) (orig, clone *toyConn, rs Restored, quiet uint64) {
	t.Helper()
	ctx := context.Background()
	work := filepath.Join(filepath.Dir(copyTo), "work-"+newAttempt)
	img := filepath.Join(filepath.Dir(copyTo), "img-"+newAttempt)
	quiet = tc.quiesce(t)
	if _, err := Dump(ctx, criuPath, pid, img, work); err != nil {
		t.Fatal(err)
	}
	if err := ctrl.Resume(tc.attempt, tc.role); err != nil {
		t.Fatal(err)
	}
	orig = tr.await(tc.attempt, tc.role)
	copyDir(t, liveDir, copyTo)
	ino, err := PipeInode(ctrl.W)
	if err != nil {
		t.Fatal(err)
	}
	rs, err = Restore(ctx, criuPath, RestoreSpec{ImagesDir: img, WorkDir: work, CtrlInode: ino,
		Binds: []Bind{{Source: copyTo, Target: attemptDir}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		rs.Ctrl.Close()
		syscall.Kill(rs.Pid, syscall.SIGKILL) // no-op once reaped
	})
	if err := rs.Ctrl.Resume(newAttempt, "clone"); err != nil {
		t.Fatal(err)
	}
	clone = tr.await(newAttempt, "clone")
	if clone.counter < quiet {
		t.Errorf("clone %s says hello at counter %d, below %s's quiet point %d", newAttempt, clone.counter, tc.attempt, quiet)
	}
	return orig, clone, rs, quiet
}

// TestCloneOfClone clones a clone: the second dump runs in the first clone's
// mount namespace, and the second clone's copy of the directory is bound over
// the same attempt path.
func TestCloneOfClone(t *testing.T) {
	criuPath := requireCRIU(t)
	base := t.TempDir()
	attemptDir := filepath.Join(base, "tasks", "t1")
	copy1, copy2 := filepath.Join(base, "c1", "t1"), filepath.Join(base, "c2", "t1")
	tr := newTracker(t)
	cmd, ctrl := startToy(t, tr, attemptDir, "a0", 10)
	a0 := tr.await("a0", "orig")
	a0, a1, rs1, _ := cloneToy(t, criuPath, tr, a0, cmd.Process.Pid, ctrl, attemptDir, attemptDir, copy1, "a1")
	// a1 lives in its own mount namespace, its files in copy1.
	a1, a2, rs2, _ := cloneToy(t, criuPath, tr, a1, rs1.Pid, rs1.Ctrl, copy1, attemptDir, copy2, "a2")
	for _, tc := range []*toyConn{a0, a1, a2} {
		if n := tc.ping(t); n <= tc.counter {
			t.Errorf("%s: counter %d after %d", tc.attempt, n, tc.counter)
		}
	}
	for _, c := range []struct{ dir, own, others string }{
		{attemptDir, "a0 orig pong", "a1 a2"}, {copy1, "a1 clone pong", "a2"}, {copy2, "a2 clone pong", ""},
	} {
		b, err := os.ReadFile(filepath.Join(c.dir, toyLog))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), c.own) {
			t.Errorf("%s lacks %q:\n%s", c.dir, c.own, b)
		}
		for _, o := range strings.Fields(c.others) {
			if strings.Contains(string(b), o+" ") {
				t.Errorf("%s has lines of %s:\n%s", c.dir, o, b)
			}
		}
	}
	if rs2.Pid == rs1.Pid || rs2.Pid == cmd.Process.Pid {
		t.Errorf("pids: original %d, a1 %d, a2 %d", cmd.Process.Pid, rs1.Pid, rs2.Pid)
	}
	for _, pid := range []int{rs2.Pid, rs1.Pid, cmd.Process.Pid} {
		if sig := killReap(t, pid); sig != syscall.SIGKILL {
			t.Errorf("pid %d ended by %v", pid, sig)
		}
	}
}
