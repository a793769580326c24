package criu

// The test binary doubles as a toy task child (TestMain runs toyMain when
// toyEnv is set), and this file holds the tracker-side harness that starts it
// and talks to it over TCP.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

const (
	toyEnv        = "GOMR_CRIU_TOY"         // "1": run as the toy child
	toyAddrEnv    = "GOMR_CRIU_TOY_ADDR"    // the test's listener
	toyAttemptEnv = "GOMR_CRIU_TOY_ATTEMPT" // first attempt id
	toyMiBEnv     = "GOMR_CRIU_TOY_MIB"     // memory held and dirtied
	toyLog        = "task.log"              // per-attempt file, reopened on resume
	// hangGuard bounds every wait on the child, so that a broken protocol
	// fails the test instead of hanging it; it is not a timing assertion.
	hangGuard = 60 * time.Second
)

func TestMain(m *testing.M) {
	if os.Getenv(toyEnv) == "1" {
		os.Exit(toyMain())
	}
	// Stray descriptors inherited from the shell or go test must not end up
	// in the toy children (CRIU would dump them too).
	if err := MarkInheritedFDsCloseOnExec(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	os.Exit(m.Run())
}

// toyMain is the toy task: it holds and keeps dirtying some memory, counts
// passes over it, and talks to the tracker:
//
//	child -> "hello <attempt> <role> <counter>"   on every (re)connect
//	"ping"    -> "pong <attempt> <role> <counter>" (after the counter moved)
//	"quiesce" -> "quiet <counter>", then it closes the connection and its
//	             files, waits for "resume <attempt> <role>" on fd CtrlFD,
//	             reopens its files (relative to its cwd) and reconnects.
//
// Between "quiet" and the resume line it writes nothing anywhere: a restored
// copy would otherwise write into the original's files.
func toyMain() int {
	addr := os.Getenv(toyAddrEnv)
	attempt, role := os.Getenv(toyAttemptEnv), "orig"
	mib, err := strconv.Atoi(os.Getenv(toyMiBEnv))
	if err != nil || mib <= 0 {
		fmt.Fprintf(os.Stderr, "toy: bad %s=%q\n", toyMiBEnv, os.Getenv(toyMiBEnv))
		return 2
	}
	ctrl := os.NewFile(CtrlFD, "ctrl")

	mem := make([]byte, mib<<20)
	var counter atomic.Uint64
	go func() {
		for v := byte(1); ; v++ {
			for off := 0; off < len(mem); off += 4096 {
				mem[off] = v
			}
			counter.Add(1)
			time.Sleep(2 * time.Millisecond)
		}
	}()

	for {
		logf, err := os.OpenFile(toyLog, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			fmt.Fprintf(os.Stderr, "toy %s: %v\n", attempt, err)
			return 3
		}
		fmt.Printf("%s %s resumed at %d\n", attempt, role, counter.Load())
		fmt.Fprintf(logf, "%s %s start %d\n", attempt, role, counter.Load())
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			fmt.Fprintf(logf, "%s %s dial: %v\n", attempt, role, err)
			return 3
		}
		fmt.Fprintf(conn, "hello %s %s %d\n", attempt, role, counter.Load())
		in := bufio.NewScanner(conn)
		quiesced := false
		for !quiesced && in.Scan() {
			switch cmd := in.Text(); cmd {
			case "ping":
				c0 := counter.Load()
				for counter.Load() == c0 {
					time.Sleep(time.Millisecond)
				}
				c := counter.Load()
				fmt.Fprintf(logf, "%s %s pong %d\n", attempt, role, c)
				fmt.Fprintf(conn, "pong %s %s %d\n", attempt, role, c)
			case "quiesce":
				fmt.Fprintf(logf, "%s %s quiet\n", attempt, role)
				fmt.Fprintf(conn, "quiet %d\n", counter.Load())
				quiesced = true
			default:
				fmt.Fprintf(logf, "%s %s unknown command %q\n", attempt, role, cmd)
			}
		}
		if !quiesced {
			fmt.Fprintf(logf, "%s %s connection ended: %v\n", attempt, role, in.Err())
			return 4
		}
		conn.Close()
		logf.Close()
		a, r, err := WaitResume(ctrl)
		if err != nil {
			return 5 // no identity: write nothing, the files may be the original's
		}
		attempt, role = a, r
	}
}

// tracker is the test's side: a listener the toys connect to.
type tracker struct {
	t     *testing.T
	ln    net.Listener
	hello chan *toyConn
}

// toyConn is one connection from a toy, after its hello.
type toyConn struct {
	attempt, role string
	counter       uint64 // from the hello
	conn          net.Conn
	in            *bufio.Reader
}

func newTracker(t *testing.T) *tracker {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tr := &tracker{t: t, ln: ln, hello: make(chan *toyConn, 16)}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go tr.greet(c)
		}
	}()
	return tr
}

func (tr *tracker) greet(c net.Conn) {
	c.SetReadDeadline(time.Now().Add(hangGuard))
	in := bufio.NewReader(c)
	line, err := in.ReadString('\n')
	var a, r string
	var n uint64
	if err == nil {
		_, err = fmt.Sscanf(line, "hello %s %s %d\n", &a, &r, &n)
	}
	if err != nil {
		tr.t.Errorf("bad hello %q: %v", line, err)
		c.Close()
		return
	}
	tr.hello <- &toyConn{attempt: a, role: r, counter: n, conn: c, in: in}
}

// await returns the next hello, which must come from attempt/role.
func (tr *tracker) await(attempt, role string) *toyConn {
	tr.t.Helper()
	select {
	case tc := <-tr.hello:
		if tc.attempt != attempt || tc.role != role {
			tr.t.Fatalf("hello from %s %s, want %s %s", tc.attempt, tc.role, attempt, role)
		}
		tr.t.Cleanup(func() { tc.conn.Close() })
		return tc
	case <-time.After(hangGuard):
		tr.t.Fatalf("no hello from %s %s", attempt, role)
		return nil
	}
}

func (tc *toyConn) send(t *testing.T, cmd string) string {
	t.Helper()
	tc.conn.SetDeadline(time.Now().Add(hangGuard))
	if _, err := fmt.Fprintf(tc.conn, "%s\n", cmd); err != nil {
		t.Fatalf("%s: sending %s: %v", tc.attempt, cmd, err)
	}
	line, err := tc.in.ReadString('\n')
	if err != nil {
		t.Fatalf("%s: reply to %s: %v", tc.attempt, cmd, err)
	}
	return strings.TrimSuffix(line, "\n")
}

// ping returns the toy's counter, which has moved since the ping was sent.
func (tc *toyConn) ping(t *testing.T) uint64 {
	t.Helper()
	var a, r string
	var n uint64
	reply := tc.send(t, "ping")
	if _, err := fmt.Sscanf(reply, "pong %s %s %d", &a, &r, &n); err != nil || a != tc.attempt || r != tc.role {
		t.Fatalf("ping %s %s: reply %q (%v)", tc.attempt, tc.role, reply, err)
	}
	return n
}

// quiesce asks the toy for its quiet point and waits until it has closed
// the connection; it returns the counter the toy reported.
func (tc *toyConn) quiesce(t *testing.T) uint64 {
	t.Helper()
	var n uint64
	reply := tc.send(t, "quiesce")
	if _, err := fmt.Sscanf(reply, "quiet %d", &n); err != nil {
		t.Fatalf("quiesce %s: reply %q (%v)", tc.attempt, reply, err)
	}
	if rest, err := tc.in.ReadString('\n'); !errors.Is(err, io.EOF) {
		t.Fatalf("quiesce %s: want EOF after quiet, got %q, %v", tc.attempt, rest, err)
	}
	tc.conn.Close()
	return n
}

// startToy starts a toy child in dir (created) the way a TaskTracker starts a
// task child for CRIU: own session and pid namespace, parent-death signal,
// stdio appended to files in dir, control pipe on fd CtrlFD.
func startToy(t *testing.T, tr *tracker, dir, attempt string, mib int) (*exec.Cmd, *Ctrl) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	ctrl, err := NewCtrl()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ctrl.Close() })
	open := func(name string) *os.File {
		f, err := os.OpenFile(filepath.Join(dir, name), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	stdout, stderr := open("stdout"), open("stderr")
	defer stdout.Close()
	defer stderr.Close()
	cmd := exec.Command(os.Args[0])
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.ExtraFiles = []*os.File{ctrl.R}
	cmd.Env = append(os.Environ(),
		toyEnv+"=1", toyAddrEnv+"="+tr.ln.Addr().String(), toyAttemptEnv+"="+attempt,
		toyMiBEnv+"="+strconv.Itoa(mib),
		"GODEBUG=multipathtcp=0,containermaxprocs=0,updatemaxprocs=0")
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Setsid:     true,
		Cloneflags: syscall.CLONE_NEWPID,
		Pdeathsig:  syscall.SIGKILL,
		// Own time namespace (CLONE_NEWTIME, in effect from execve): CRIU
		// then restores the monotonic clock offsets (spec gotcha 9).
		Unshareflags: unix.CLONE_NEWTIME,
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting toy child: %v", err)
	}
	ctrl.R.Close()
	ctrl.R = nil
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	return cmd, ctrl
}

// killReap kills a child of this process by pid and reaps it, returning the
// signal that ended it.
func killReap(t *testing.T, pid int) syscall.Signal {
	t.Helper()
	p, err := os.FindProcess(pid)
	if err != nil {
		t.Fatalf("find pid %d: %v", pid, err)
	}
	if err := p.Kill(); err != nil {
		t.Fatalf("kill pid %d: %v", pid, err)
	}
	st, err := p.Wait()
	if err != nil {
		t.Fatalf("reaping pid %d: %v", pid, err)
	}
	ws, ok := st.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() {
		t.Fatalf("pid %d ended with %v, want a signal", pid, st)
	}
	return ws.Signal()
}

// requireCRIU returns the CRIU wrapper to test with ($GOMR_CRIU, else
// DefaultPath). Without a usable CRIU the test is skipped, or fails when
// GOMR_REQUIRE_CRIU=1.
func requireCRIU(t testing.TB) string {
	t.Helper()
	path := os.Getenv("GOMR_CRIU")
	if path == "" {
		path = DefaultPath
	}
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	if _, err := Probe(ctx, path); err != nil {
		if os.Getenv("GOMR_REQUIRE_CRIU") == "1" {
			t.Fatalf("GOMR_REQUIRE_CRIU=1 but CRIU is unusable: %v", err)
		}
		t.Skipf("skipping: CRIU unusable (run `make criu` as root, or set GOMR_CRIU): %v", err)
	}
	return path
}

// copyDir copies the regular files of src (recursively) into dst.
func copyDir(t testing.TB, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		to := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(to, 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		in, err := os.Open(p)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	})
	if err != nil {
		t.Fatalf("copying %s to %s: %v", src, dst, err)
	}
}
