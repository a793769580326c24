package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// sleepArgs is the empty job: Hadoop's SleepJob with one map that does not
// sleep and no reduce.
var sleepArgs = []string{"sleep", "-m", "1", "-r", "0", "-mt", "0"}

// emptyTarget is the latency target of the empty job, seconds.
const emptyTarget = 0.5

// emptyJobs measures the empty job on an embedded cluster (mr local: the
// cluster's start and stop included) and on a cluster of separate
// JobTracker and TaskTracker processes started once.
func (b *bench) emptyJobs() ([]*result, error) {
	progress("empty job: mr local, %d runs", b.runs)
	local := &result{Name: fmt.Sprintf("empty job, mr local (median of %d)", b.runs), MaxSeconds: emptyTarget}
	var stats []*procStats
	for i := range b.runs {
		c := b.mrLocal(fmt.Sprintf("empty-local-%d", i), nil, sleepArgs...)
		if i == 0 {
			local.JobCommand = c.String()
		}
		st, err := b.execQuiet(i == 0, c)
		if err != nil {
			return nil, fmt.Errorf("empty job under mr local: %w", err)
		}
		stats = append(stats, st)
		local.Runs = append(local.Runs, st.Wall.Seconds())
	}
	local.Job = medianRun(stats)
	local.JobSeconds = local.Job.Wall.Seconds()
	local.Check = "wall time of mr local: starting the JobTracker and TaskTrackers, the job, stopping them"
	local.judge()

	cl, err := b.clusterEmptyJob()
	if err != nil {
		return []*result{local}, err
	}
	return []*result{local, cl}, nil
}

// execQuiet runs a command, recording its command line only if record.
func (b *bench) execQuiet(record bool, c command) (*procStats, error) {
	if record {
		return b.exec(true, c)
	}
	if err := os.MkdirAll(filepath.Dir(c.log), 0o755); err != nil {
		return nil, fmt.Errorf("creating the log directory: %w", err)
	}
	return b.run(c)
}

// medianRun returns the run of median wall time (the lower median).
func medianRun(runs []*procStats) *procStats {
	s := slices.Clone(runs)
	slices.SortFunc(s, func(a, b *procStats) int { return int(a.Wall - b.Wall) })
	return s[(len(s)-1)/2]
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[(len(s)-1)/2]
}

// clusterEmptyJob starts a JobTracker and the TaskTrackers as processes,
// submits one untimed empty job (so that the trackers are registered),
// then times runs more with mr submit.
func (b *bench) clusterEmptyJob() (*result, error) {
	progress("empty job: a running cluster, %d submissions", b.runs)
	dir := filepath.Join(b.work, "cluster")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("empty job: %w", err)
	}
	port, err := freePort()
	if err != nil {
		return nil, fmt.Errorf("empty job: %w", err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	var daemons []*daemon
	defer func() {
		for _, d := range daemons {
			d.stop()
		}
	}()
	jt, err := b.startDaemon("jobtracker", b.daemonArgs("jobtracker",
		"mapreduce.jobtracker.address="+addr,
		"mapreduce.jobtracker.jobhistory.location="+filepath.Join(dir, "history"),
		"mapreduce.jobtracker.http.address=127.0.0.1:0",
		"log.level=warn")...)
	if err != nil {
		return nil, err
	}
	daemons = append(daemons, jt)
	if err := jt.waitListening(addr, 10*time.Second); err != nil {
		return nil, err
	}
	for i := range b.trackers {
		tt, err := b.startDaemon("tasktracker-"+fmt.Sprint(i), b.daemonArgs("tasktracker",
			"mapreduce.jobtracker.address="+addr,
			"mapreduce.cluster.local.dir="+filepath.Join(dir, "local-"+fmt.Sprint(i)),
			"mapreduce.tasktracker.host.name=localhost",
			"log.level=warn")...)
		if err != nil {
			return nil, err
		}
		daemons = append(daemons, tt)
	}
	submit := func(logName string) command {
		args := []string{"submit", "--jobtracker", addr}
		for _, d := range b.defines {
			args = append(args, "-D", d)
		}
		args = append(args, sleepArgs...)
		return command{path: b.bin, args: args, dir: dir, log: b.logPath(logName)}
	}
	if _, err := b.exec(false, submit("empty-warmup")); err != nil {
		return nil, fmt.Errorf("empty job on the running cluster (warm-up): %w", err)
	}
	r := &result{Name: fmt.Sprintf("empty job, running cluster (median of %d)", b.runs), MaxSeconds: emptyTarget}
	var stats []*procStats
	var inner []float64
	for i := range b.runs {
		var running, done time.Time
		c := submit(fmt.Sprintf("empty-submit-%d", i))
		c.onLine = func(at time.Time, line string) {
			switch {
			case strings.HasPrefix(line, "Running job:"):
				running = at
			case strings.HasPrefix(line, "Job ") && strings.HasSuffix(line, "completed successfully"):
				done = at
			}
		}
		if i == 0 {
			r.JobCommand = c.String()
		}
		st, err := b.execQuiet(i == 0, c)
		if err != nil {
			return nil, fmt.Errorf("empty job on the running cluster: %w", err)
		}
		if running.IsZero() || done.IsZero() {
			return nil, fmt.Errorf("empty job on the running cluster: no \"Running job\" and \"completed successfully\" lines in %s", c.log)
		}
		stats = append(stats, st)
		r.Runs = append(r.Runs, st.Wall.Seconds())
		inner = append(inner, done.Sub(running).Seconds())
	}
	r.Job = medianRun(stats)
	r.JobSeconds = r.Job.Wall.Seconds()
	r.SubmittedToDone = median(inner)
	r.Check = fmt.Sprintf("wall time of mr submit against daemons already running; from its \"Running job\" line to "+
		"\"completed successfully\": median %.3f s (runs %s s)", r.SubmittedToDone, joinFloats(inner))
	for _, d := range daemons {
		r.Memory = append(r.Memory, namedStats{Name: d.name, Stats: d.stop()})
	}
	daemons = nil
	r.judge()
	return r, nil
}

// daemonArgs builds "cmd -D k=v..." with the bench's own settings, then
// the user's -D settings (later ones win).
func (b *bench) daemonArgs(cmd string, defines ...string) []string {
	args := []string{cmd}
	if cmd == "tasktracker" {
		args = append(args, "--name", fmt.Sprintf("tracker_bench_%d", b.nextTracker))
		b.nextTracker++
	}
	for _, d := range append(defines, b.defines...) {
		args = append(args, "-D", d)
	}
	return args
}

// freePort asks the kernel for a free loopback port.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// daemon is a long-running mr process of the bench's cluster.
type daemon struct {
	name    string
	cmd     *exec.Cmd
	log     *os.File
	s       *sampler
	result  string        // the wrapper's result file
	done    chan struct{} // closed when Wait returned
	waitErr error
	stats   *procStats
}

// startDaemon starts "mr args..." with its output in logs/name.log.
func (b *bench) startDaemon(name string, args ...string) (*daemon, error) {
	logPath := b.logPath(name)
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		return nil, fmt.Errorf("creating the log directory: %w", err)
	}
	f, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("creating log %s: %w", logPath, err)
	}
	c := command{path: b.bin, args: args, dir: b.work, log: logPath}
	b.commands = append(b.commands, "  "+c.String()+" &")
	cmd := b.wrapped(logPath+".measured.json", c)
	cmd.Stdout, cmd.Stderr = f, f
	d := &daemon{name: name, cmd: cmd, log: f, result: logPath + ".measured.json", done: make(chan struct{})}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	d.s = startSampler(cmd.Process.Pid, true)
	go func() {
		d.waitErr = cmd.Wait()
		close(d.done)
	}()
	return d, nil
}

// waitListening waits until addr accepts connections or the daemon exits.
func (d *daemon) waitListening(addr string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		select {
		case <-d.done:
			return fmt.Errorf("%s exited (%v) before listening on %s:\n%s", d.name, d.waitErr, addr, logTail(d.log.Name(), 20))
		default:
		}
		if c, err := net.DialTimeout("tcp", addr, 100*time.Millisecond); err == nil {
			c.Close()
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("%s is not listening on %s after %v", d.name, addr, limit)
}

// stop sends SIGTERM (SIGKILL after 10 s) and returns the daemon's
// measurements. Calling it again returns the same measurements.
func (d *daemon) stop() *procStats {
	if d.stats != nil {
		return d.stats
	}
	_ = d.cmd.Process.Signal(syscall.SIGTERM) // the wrapper passes it on; it may have exited already
	select {
	case <-d.done:
	case <-time.After(10 * time.Second):
		_ = d.cmd.Process.Kill()
		<-d.done
	}
	st := &procStats{}
	d.s.finish(st)
	if err := readMeasured(d.result, st); err != nil {
		progress("%s: %v", d.name, err)
	}
	var ee *exec.ExitError
	if d.waitErr != nil && !errors.As(d.waitErr, &ee) {
		progress("%s: %v", d.name, d.waitErr)
	}
	d.log.Close()
	d.stats = st
	return st
}
