package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"gomr/conf"
	"gomr/jobtracker"
	"gomr/mrpb"
)

// The test binary doubles as the mr binary: with GOMR_AS_MR=1 it runs
// main(), and a TaskTracker started from it launches task children as
// "<test binary> child ...", which TestMain hands to the child mode. So
// every end-to-end test runs real daemons and real child processes built
// from this very code.
func TestMain(m *testing.M) {
	if len(os.Args) >= 2 && os.Args[1] == "child" {
		os.Exit(runChild(os.Args[2:]))
	}
	if os.Getenv("GOMR_AS_MR") == "1" {
		main()
		os.Exit(0)
	}
	k, v, _ := strings.Cut(harnessMark, "=")
	os.Setenv(k, v)
	os.Exit(m.Run())
}

// mrCmd returns a command running this binary as mr.
func mrCmd(args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "GOMR_AS_MR=1")
	return cmd
}

// harnessMark is in the environment of this test process (TestMain
// sets it), and so of every daemon it starts and of their task children
// (a TaskTracker hands its own environment down): childPID finds only
// this process's children, not those of another test binary running the
// same test on the machine.
var harnessMark = fmt.Sprintf("GOMR_TEST_HARNESS=%d", os.Getpid())

// runMR runs mr with args and returns its combined output.
func runMR(t *testing.T, args ...string) (string, error) {
	t.Helper()
	return runMREnv(t, 5*time.Minute, nil, args...)
}

// runMREnv runs mr with args, with env (VAR=value) added to the
// environment, and returns its combined output. If it has not finished
// within timeout it is killed and the error says so.
func runMREnv(t *testing.T, timeout time.Duration, env []string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := mrCmd(args...)
	cmd = exec.CommandContext(ctx, cmd.Path, cmd.Args[1:]...)
	cmd.Env = append(append(os.Environ(), "GOMR_AS_MR=1"), env...)
	out, err := cmd.CombinedOutput()
	if strings.Contains(string(out), "DATA RACE") {
		t.Errorf("the race detector fired in mr %v:\n%s", args, out)
	}
	if ctx.Err() != nil {
		return string(out), fmt.Errorf("mr %v did not finish within %v (killed): %w", args, timeout, err)
	}
	return string(out), err
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// cluster is a JobTracker and TaskTrackers running as separate processes.
type cluster struct {
	t       *testing.T
	dir     string
	jtAddr  string
	defines []string
	// procDefines are a process's own -D defines (by its name: the
	// "jobtracker" or a tracker's), given after the cluster's, so that
	// they win: each daemon's own certificate, for instance.
	procDefines map[string][]string
	procs       map[string]*exec.Cmd
	client      *jobtracker.Client
}

type trackerSpec struct {
	name          string
	maps, reduces int
}

func startCluster(t *testing.T, trackers []trackerSpec, defines ...string) *cluster {
	t.Helper()
	return startClusterProcDefines(t, trackers, nil, defines...)
}

// startClusterProcDefines is startCluster with defines of each process's
// own (cluster.procDefines), given after the cluster's defines. The
// harness's client (cluster.client) uses the cluster's defines only.
func startClusterProcDefines(t *testing.T, trackers []trackerSpec, procDefines map[string][]string, defines ...string) *cluster {
	t.Helper()
	dir := t.TempDir()
	c := &cluster{t: t, dir: dir, procs: map[string]*exec.Cmd{}, procDefines: procDefines}
	c.jtAddr = fmt.Sprintf("127.0.0.1:%d", freePort(t))
	c.defines = append([]string{
		"mapreduce.jobtracker.address=" + c.jtAddr,
		"mapreduce.jobtracker.http.address=127.0.0.1:0",
		"mapreduce.jobtracker.jobhistory.location=" + filepath.Join(dir, "history"),
		"mapreduce.cluster.local.dir=" + filepath.Join(dir, "local"),
		"mapreduce.tasktracker.heartbeat.interval=100",
		"mapreduce.tasktracker.host.name=localhost",
		"log.level=info",
		// Speculation is on by default, as in Hadoop; tests that count
		// attempts exactly must not see a speculative one, so the harness
		// turns it off and the speculation tests turn it back on.
		"mapreduce.map.speculative=false",
		"mapreduce.reduce.speculative=false",
	}, defines...)
	t.Cleanup(c.stop)
	c.start("jobtracker", "jobtracker")
	waitPort(t, c.jtAddr)
	for _, tr := range trackers {
		c.startTracker(tr)
	}
	cfg, err := conf.Load(conf.LoadOptions{Overrides: c.overrides()})
	if err != nil {
		t.Fatal(err)
	}
	c.client, err = jobtracker.Dial(c.jtAddr, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (c *cluster) overrides() map[string]string {
	m := map[string]string{}
	for _, d := range c.defines {
		k, v, _ := conf.ParseDefine(d)
		m[k] = v
	}
	return m
}

func (c *cluster) startTracker(tr trackerSpec) {
	c.startTrackerEnv(tr, nil)
}

// startTrackerEnv starts a tracker with extra environment variables (fault
// injection, tasktracker.FaultsEnv).
func (c *cluster) startTrackerEnv(tr trackerSpec, env []string) {
	c.startEnv(tr.name, env, "tasktracker", "--name", tr.name,
		"-D", fmt.Sprintf("mapreduce.tasktracker.map.tasks.maximum=%d", tr.maps),
		"-D", fmt.Sprintf("mapreduce.tasktracker.reduce.tasks.maximum=%d", tr.reduces))
}

func (c *cluster) start(name string, args ...string) { c.startEnv(name, nil, args...) }

func (c *cluster) startEnv(name string, env []string, args ...string) {
	for _, d := range c.defines {
		args = append(args, "-D", d)
	}
	for _, d := range c.procDefines[name] {
		args = append(args, "-D", d)
	}
	cmd := mrCmd(args...)
	cmd.Env = append(cmd.Env, env...)
	logf, err := os.Create(filepath.Join(c.dir, name+".log"))
	if err != nil {
		c.t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	logf.Close()
	c.procs[name] = cmd
}

// kill sends SIGKILL to a daemon (its children die with it: they are
// started with a parent-death signal).
func (c *cluster) kill(name string) {
	cmd := c.procs[name]
	_ = cmd.Process.Kill()
	_, _ = cmd.Process.Wait()
	delete(c.procs, name)
}

func (c *cluster) stop() {
	if c.client != nil {
		c.client.Close()
	}
	for _, cmd := range c.procs {
		_ = cmd.Process.Signal(syscall.SIGTERM)
	}
	for name, cmd := range c.procs {
		done := make(chan struct{})
		go func() { _, _ = cmd.Process.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		data, _ := os.ReadFile(filepath.Join(c.dir, name+".log"))
		if strings.Contains(string(data), "DATA RACE") {
			c.t.Errorf("the race detector fired in %s:\n%s", name, data)
		}
		if c.t.Failed() {
			c.t.Logf("---- %s log (tail) ----\n%s", name, tail(string(data), 4000))
		}
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

func waitPort(t *testing.T, addr string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		conn, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			conn.Close()
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("nothing listening on %s", addr)
}

// logHas tells whether a daemon's log holds s.
func (c *cluster) logHas(name, s string) bool {
	data, _ := os.ReadFile(filepath.Join(c.dir, name+".log"))
	return strings.Contains(string(data), s)
}

// waitFor polls cond until it holds or the timeout passes.
func waitFor(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if cond() {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
}

func (c *cluster) status(id string) *mrpb.JobStatus {
	st, err := c.client.Status(context.Background(), id)
	if err != nil {
		c.t.Fatal(err)
	}
	return st
}

// logValue waits for a line of a daemon's log holding msg and returns the
// value of its key=value field key.
func (c *cluster) logValue(name, msg, key string) string {
	var v string
	waitFor(c.t, name+" to log "+msg, 20*time.Second, func() bool {
		data, _ := os.ReadFile(filepath.Join(c.dir, name+".log"))
		for _, line := range strings.Split(string(data), "\n") {
			if i := strings.Index(line, " "+key+"="); i >= 0 && strings.Contains(line, msg) {
				v = strings.Fields(line[i+len(key)+2:])[0]
				return true
			}
		}
		return false
	})
	return v
}

// trackerShuffleAddr reads a tracker's shuffle address from its log.
func (c *cluster) trackerShuffleAddr(name string) string {
	var addr string
	waitFor(c.t, name+" to log its shuffle address", 20*time.Second, func() bool {
		f, err := os.Open(filepath.Join(c.dir, name+".log"))
		if err != nil {
			return false
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if i := strings.Index(sc.Text(), " shuffle="); i >= 0 && strings.Contains(sc.Text(), "tasktracker started") {
				addr = strings.Fields(sc.Text()[i+len(" shuffle="):])[0]
				return true
			}
		}
		return false
	})
	return addr
}

// childPID finds the host PID of the task child running attemptID.
func childPID(attemptID string) int {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(string(data), "\x00")
		if len(args) > 3 && args[1] == "child" && args[3] == attemptID && ownChild(pid) {
			return pid
		}
	}
	return 0
}

// ownChild tells whether process pid was started under this test
// process's daemons (harnessMark in its environment).
func ownChild(pid int) bool {
	env, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "environ"))
	if err != nil {
		return false
	}
	for _, kv := range strings.Split(string(env), "\x00") {
		if kv == harnessMark {
			return true
		}
	}
	return false
}

// skipUnderRace skips a long end-to-end test in make test's race-built
// run (its task children are race-built too, which makes it minutes long
// there); the race detector covers the same daemon code in the tests
// named by covered, which do run race-built.
func skipUnderRace(t *testing.T, covered string) {
	t.Helper()
	if raceEnabled {
		t.Skip("run without -race only (race-built children make it minutes long); the race-built run covers the same code with " + covered)
	}
}
