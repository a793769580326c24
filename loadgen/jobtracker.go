package loadgen

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"gomr/conf"
	"gomr/jobtracker"
)

// jobTracker is the JobTracker a run drives: one in this process, a child
// process, or a remote one.
type jobTracker struct {
	mode string
	addr string
	// pid is the process to read CPU and RSS of; 0 unknown.
	pid int
	// handler serves an in-process JobTracker's pages; url is another's
	// /metrics.
	handler http.Handler
	url     string
	// lost counts the JobTracker's "lost tracker" log lines; nil when its
	// log is not seen.
	lost *atomic.Int64
	log  *slog.Logger
	// pprof is a spawned JobTracker's profile server (mr jobtracker
	// --pprof), host:port; empty: none.
	pprof string

	stop    func()
	tempDir string
}

func (jt *jobTracker) procSource() string {
	switch {
	case jt.mode == "in-process":
		return "in-process (JobTracker and generator together)"
	case jt.pid != 0:
		return fmt.Sprintf("/proc/%d", jt.pid)
	}
	return "/metrics"
}

func (jt *jobTracker) lostLogged() int64 {
	if jt.lost == nil {
		return -1
	}
	return jt.lost.Load()
}

// rss is the JobTracker's resident set size, or -1.
func (jt *jobTracker) rss() int64 {
	if jt.pid == 0 {
		return -1
	}
	p, err := readProc(jt.pid)
	if err != nil {
		return -1
	}
	return p.rss
}

func (jt *jobTracker) metrics() (map[string]float64, error) { return metricsFrom(jt.handler, jt.url) }

func (jt *jobTracker) close() {
	if jt.stop != nil {
		jt.stop()
	}
	if jt.tempDir != "" {
		os.RemoveAll(jt.tempDir)
	}
}

// keyHistoryDir is the JobTracker's job history directory (conf/keys.go).
const keyHistoryDir = "mapreduce.jobtracker.jobhistory.location"

// settings are the configuration of a JobTracker the generator starts:
// its history in a temporary directory, the run's heartbeat interval and
// policy, then the user's definitions.
func settings(cfg *Config, dir string) map[string]string {
	m := map[string]string{
		keyHistoryDir:                              filepath.Join(dir, "history"),
		"mapreduce.jobtracker.system.dir":          filepath.Join(dir, "system"),
		"mapreduce.tasktracker.heartbeat.interval": strconv.FormatInt(cfg.Heartbeat.Milliseconds(), 10),
		"mapreduce.jobtracker.http.address":        "127.0.0.1:0",
	}
	if cfg.Policy != "" {
		m["scheduler.policy"] = cfg.Policy
	}
	for k, v := range cfg.Defines {
		m[k] = v
	}
	return m
}

func startJobTracker(ctx context.Context, cfg *Config, log *slog.Logger) (*jobTracker, error) {
	if cfg.JobTracker != "" {
		jt := &jobTracker{mode: "remote", addr: cfg.JobTracker, pid: cfg.JobTrackerPID, log: log}
		if cfg.JobTrackerHTTP != "" {
			jt.url = "http://" + cfg.JobTrackerHTTP + "/metrics"
		}
		if jt.pid != 0 {
			if _, err := readProc(jt.pid); err != nil {
				return nil, fmt.Errorf("loadgen: --jobtracker-pid %d: %w", jt.pid, err)
			}
		}
		return jt, nil
	}
	dir, err := os.MkdirTemp("", "gomr-loadgen-jt-")
	if err != nil {
		return nil, fmt.Errorf("loadgen: JobTracker directory: %w", err)
	}
	if cfg.Profiles {
		// where the JobTracker will look: settings' value, or the user's
		if err := writeEarlierRuns(settings(cfg, dir)[keyHistoryDir], cfg.Jobs); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	var jt *jobTracker
	if cfg.Spawn {
		jt, err = spawnJobTracker(ctx, cfg, dir, log)
	} else {
		jt, err = inProcessJobTracker(ctx, cfg, dir, log)
	}
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	jt.tempDir = dir
	return jt, nil
}

// inProcessJobTracker starts a JobTracker in this process, its log at
// warnings and above going to the generator's logger, and its "lost
// tracker" lines counted.
func inProcessJobTracker(ctx context.Context, cfg *Config, dir string, log *slog.Logger) (*jobTracker, error) {
	c, err := conf.Load(conf.LoadOptions{File: cfg.ConfFile, Env: true, Overrides: settings(cfg, dir)})
	if err != nil {
		return nil, fmt.Errorf("loadgen: JobTracker configuration: %w", err)
	}
	lost := &atomic.Int64{}
	h := &countingHandler{next: log.Handler(), lost: lost}
	jt, err := jobtracker.New(c, jobtracker.Options{Logger: slog.New(h)})
	if err != nil {
		return nil, fmt.Errorf("loadgen: starting the JobTracker: %w", err)
	}
	addr, err := jt.Listen("127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("loadgen: starting the JobTracker: %w", err)
	}
	sctx, cancel := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- jt.Serve(sctx) }()
	return &jobTracker{mode: "in-process", addr: addr, pid: os.Getpid(), handler: jt.HTTPHandler(), lost: lost, log: log,
		stop: func() {
			cancel()
			if err := <-served; err != nil {
				log.Warn("in-process JobTracker ended", "error", err)
			}
		}}, nil
}

// countingHandler counts the JobTracker's "lost tracker" records and
// passes on those at warning level and above.
type countingHandler struct {
	next slog.Handler
	lost *atomic.Int64
}

func (h *countingHandler) Enabled(ctx context.Context, l slog.Level) bool { return true }

func (h *countingHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == "lost tracker" {
		h.lost.Add(1)
	}
	if r.Level < slog.LevelWarn || !h.next.Enabled(ctx, r.Level) {
		return nil
	}
	return h.next.Handle(ctx, r)
}

func (h *countingHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &countingHandler{next: h.next.WithAttrs(as), lost: h.lost}
}

func (h *countingHandler) WithGroup(name string) slog.Handler {
	return &countingHandler{next: h.next.WithGroup(name), lost: h.lost}
}

// freePort finds a free TCP port on the loopback interface.
func freePort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// spawnJobTracker starts `Executable jobtracker` as a child process on
// free loopback ports and waits until it accepts connections. Its log is
// read for "lost tracker" lines; its warnings and errors (the first 20)
// are passed on.
func spawnJobTracker(ctx context.Context, cfg *Config, dir string, log *slog.Logger) (*jobTracker, error) {
	exe := cfg.Executable
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("loadgen: finding the mr binary to start the JobTracker: %w", err)
		}
	}
	rpcAddr, err := freePort()
	if err != nil {
		return nil, fmt.Errorf("loadgen: a port for the JobTracker: %w", err)
	}
	httpAddr, err := freePort()
	if err != nil {
		return nil, fmt.Errorf("loadgen: a port for the JobTracker: %w", err)
	}
	m := settings(cfg, dir)
	m["mapreduce.jobtracker.address"] = rpcAddr
	m["mapreduce.jobtracker.http.address"] = httpAddr
	args := []string{"jobtracker"}
	pprofAddr := ""
	if cfg.JobTrackerProfiles != "" {
		if pprofAddr, err = freePort(); err != nil {
			return nil, fmt.Errorf("loadgen: a port for the JobTracker's profiles: %w", err)
		}
		args = append(args, "--pprof", pprofAddr)
	}
	if cfg.ConfFile != "" {
		args = append(args, "--conf", cfg.ConfFile)
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		args = append(args, "-D", k+"="+m[k])
	}
	cmd := exec.Command(exe, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	growPipe(stderr, log)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("loadgen: starting the JobTracker (%s jobtracker): %w", exe, err)
	}
	lost := &atomic.Int64{}
	var logWG sync.WaitGroup
	logWG.Add(1)
	go func() {
		defer logWG.Done()
		readJobTrackerLog(stderr, lost, log)
	}()
	exited := make(chan error, 1)
	go func() {
		logWG.Wait()
		exited <- cmd.Wait()
	}()
	jt := &jobTracker{mode: "spawned", addr: rpcAddr, pid: cmd.Process.Pid, url: "http://" + httpAddr + "/metrics", lost: lost, log: log, pprof: pprofAddr}
	jt.stop = func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", rpcAddr, time.Second)
		if err == nil {
			c.Close()
			break
		}
		select {
		case err := <-exited:
			return nil, fmt.Errorf("loadgen: the JobTracker (%s jobtracker) exited at its start: %v", exe, err)
		case <-ctx.Done():
			jt.stop()
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			jt.stop()
			return nil, fmt.Errorf("loadgen: the JobTracker started as process %d does not accept connections at %s after 20 s", jt.pid, rpcAddr)
		}
	}
	log.Info("JobTracker started", "pid", jt.pid, "address", rpcAddr, "http", httpAddr)
	return jt, nil
}

// logPipeSize is the buffer of the pipe a spawned JobTracker logs into
// (Linux's default pipe-max-size; the default buffer is 64 KiB).
const logPipeSize = 1 << 20

// growPipe enlarges the pipe whose read end is r to logPipeSize, where
// Linux allows: a JobTracker writes its log synchronously, and with 64 KiB
// of pipe a log line waits for the generator, busy with 10,000 trackers,
// to read the ones before it (a JobTracker on a host of its own writes to
// a file); with 1 MiB the pipe holds a few thousand lines. Failing that,
// the pipe keeps its size.
func growPipe(r io.Reader, log *slog.Logger) {
	f, ok := r.(*os.File)
	if !ok {
		return
	}
	rc, err := f.SyscallConn()
	if err == nil {
		cerr := rc.Control(func(fd uintptr) {
			_, err = unix.FcntlInt(fd, unix.F_SETPIPE_SZ, logPipeSize)
		})
		if err == nil {
			err = cerr
		}
	}
	if err != nil {
		log.Warn("the JobTracker's log pipe keeps its size", "error", err)
	}
}

// readJobTrackerLog reads a spawned JobTracker's log: "lost tracker"
// lines are counted, the first 20 warnings and errors passed on.
func readJobTrackerLog(r io.Reader, lost *atomic.Int64, log *slog.Logger) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	passed := 0
	for sc.Scan() {
		line := sc.Text()
		if strings.Contains(line, `msg="lost tracker"`) {
			lost.Add(1)
		}
		if (strings.Contains(line, "level=WARN") || strings.Contains(line, "level=ERROR")) && passed < 20 {
			passed++
			log.Warn("jobtracker: " + line)
		}
	}
}
