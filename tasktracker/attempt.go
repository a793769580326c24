package tasktracker

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"google.golang.org/protobuf/proto"

	"gomr/conf"
	"gomr/mrpb"
	"gomr/tasktracker/child"
	"gomr/tasktracker/criu"
)

// childEnv is what every task child runs with: no MPTCP sockets (CRIU
// cannot dump them) and no container-aware GOMAXPROCS files held open.
const childEnv = "GODEBUG=multipathtcp=0,containermaxprocs=0,updatemaxprocs=0"

// ChildArg is the hidden subcommand that runs a task attempt.
const ChildArg = "child"

// taskAttempt is one attempt running as a child process of this tracker.
type taskAttempt struct {
	tt      *TaskTracker
	launch  *mrpb.LaunchTask
	dir     string
	timeout time.Duration
	// token authenticates the attempt's child on the umbilical.
	token string
	// lifeline is the write end of the child's lifeline pipe (nil when
	// its control pipe serves as one): the tracker holds it until the
	// child exits, so that the child reads EOF when the tracker dies. Set
	// and closed under mu.
	lifeline *os.File

	mu           sync.Mutex
	cmd          *exec.Cmd   // the child as started (nil for a clone)
	proc         *os.Process // the child's process (a clone's is restored by CRIU)
	state        string      // RUNNING, COMMIT_PENDING, SUCCEEDED, FAILED, KILLED, SPLIT
	progress     float32
	phase        string
	counters     []*mrpb.Counter
	diag         string
	start        time.Time
	finish       time.Time
	lastProgress time.Time
	shuffleDone  time.Time
	sortDone     time.Time
	doneReported bool
	failReported string
	// failNotOwn is set when the child reported its failure as not its
	// own (FailedRequest.killed): it ends KILLED.
	failNotOwn bool
	killReason string
	exited     chan struct{}

	// splitOrdered: the JobTracker ordered the map split (the child learns
	// it from its next status report); splitReported: the child stopped
	// because of it, and the attempt ends as SPLIT (docs/split.md).
	splitOrdered, splitReported bool
	// splitFanout is the pieces a reduce split for idle slots cuts the
	// rest of its key range into (0 or 1: a plain split).
	splitFanout int
	// reduceCut is where a split reduce stopped (reported with its end).
	reduceCut *mrpb.ReduceCut

	// Cloning: the tracker's end of the child's control pipe (nil when
	// the tracker cannot clone), whether a clone of it is being made and
	// the channel its quiet point is reported on, and for an attempt made
	// by cloning, how that went.
	ctrl           *criu.Ctrl
	childCloneable bool // the child's last status said it can reach a quiet point
	cloning        bool
	quiet          chan quietReport
	// While cloning is set by checkpointAttempt: crDone is closed when it
	// ends, and crCancel (a clone's checkpoint only, nil for a preemption
	// dump) drops it, so that a preemption dump can take the process
	// (spec §5.10: the preemption dump has priority, the clone request
	// is dropped).
	crDone   chan struct{}
	crCancel context.CancelFunc
	// nsDir and nsOutput are, for an attempt restored or cloned from a
	// checkpoint, the attempt and output directories its process uses
	// (its first attempt's; its own are bound over them in its mount
	// namespace): a checkpoint of it names those.
	nsDir, nsOutput string
	cloneStats      *mrpb.CloneStats

	// Preemption by checkpoint (preempt.go): holdEnd is set while a dump
	// that ends the process runs, so that its exit does not settle the
	// attempt's state (the checkpoint does: CHECKPOINTED, or KILLED when
	// the dump failed); ckptStats is how the checkpoint went. restoreStats
	// is set on an attempt restored from a preempted attempt's image.
	holdEnd   bool
	ckptStats *mrpb.CheckpointStats
	// slotReleased: the slot was freed at the dump's freeze (releaseSlot);
	// the attempt, still RUNNING until its dump ends, holds no slot.
	slotReleased bool
	restoreStats *mrpb.CloneStats
	// memShareMB is the slot's share of the tracker's memory budget the
	// child's settings were sized from (0: no budget); the child learns it
	// from child.MemoryShareEnv. Set before the child starts.
	memShareMB int
}

func (a *taskAttempt) status() *mrpb.AttemptStatus {
	rss, fileSet := a.sizes()
	a.mu.Lock()
	defer a.mu.Unlock()
	st := &mrpb.AttemptStatus{
		RssBytes:     rss,
		FileSetBytes: fileSet,
		AttemptId:    a.launch.AttemptId,
		State:        a.state,
		Progress:     a.progress,
		Phase:        a.phase,
		Counters:     a.counters,
		Diagnostic:   a.diag,
		StartMs:      a.start.UnixMilli(),
		Clone:        cloneStatsCopy(a.cloneStats), // it changes under a.mu; the copy is marshalled later
		Restore:      cloneStatsCopy(a.restoreStats),
		Cloneable:    a.ctrl != nil && a.childCloneable && !a.cloning && a.state == "RUNNING",
	}
	if a.state == "SPLIT" {
		st.ReduceCut = a.reduceCut
	}
	st.NotOwnFault = a.state == "KILLED" && a.failNotOwn && a.killReason == ""
	if a.ckptStats != nil {
		st.Checkpoint = proto.Clone(a.ckptStats).(*mrpb.CheckpointStats)
	}
	if !a.finish.IsZero() {
		st.FinishMs = a.finish.UnixMilli()
	}
	if !a.shuffleDone.IsZero() {
		st.ShuffleFinishMs = a.shuffleDone.UnixMilli()
	}
	if !a.sortDone.IsZero() {
		st.SortFinishMs = a.sortDone.UnixMilli()
	}
	return st
}

func cloneStatsCopy(cs *mrpb.CloneStats) *mrpb.CloneStats {
	if cs == nil {
		return nil
	}
	return proto.Clone(cs).(*mrpb.CloneStats)
}

// sizes reads what a clone of the running attempt would move: the
// resident set of its process (the image) and the bytes of its working
// files (a reduce's fetched map output; not a map's announced spills, nor
// the logs). Zero when it is not running.
func (a *taskAttempt) sizes() (rss, fileSet int64) {
	a.mu.Lock()
	proc, running := a.proc, a.state == "RUNNING"
	a.mu.Unlock()
	if !running || proc == nil {
		return 0, 0
	}
	rss = treeResidentBytes(proc.Pid)
	isMap := a.launch.Type == "m"
	_ = filepath.WalkDir(a.dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() {
			if isMap && path == filepath.Join(a.dir, "spills") {
				return filepath.SkipDir // announced spills stay with the original
			}
			return nil
		}
		if name := d.Name(); path == filepath.Join(a.dir, name) && (name == "stdout" || name == "stderr") {
			return nil
		}
		if info, err := d.Info(); err == nil {
			fileSet += info.Size()
		}
		return nil
	})
	return rss, fileSet
}

// residentBytes is VmRSS of process pid, 0 if it cannot be read.
func residentBytes(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			var kb int64
			if _, err := fmt.Sscanf(strings.TrimSpace(rest), "%d kB", &kb); err == nil {
				return kb << 10
			}
		}
	}
	return 0
}

// holdsSlot tells whether the attempt occupies its slot: until it ends,
// unless its slot was freed at its checkpoint's freeze.
func (a *taskAttempt) holdsSlot() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return !terminal(a.state) && !a.slotReleased
}

// terminal tells whether an attempt in state has ended (its slot is free).
func terminal(state string) bool {
	return state == "SUCCEEDED" || state == "FAILED" || state == "KILLED" || state == stateCheckpointed || state == "SPLIT"
}

// errKnownAttempt is a launch of an attempt this tracker already has: the
// JobTracker sends the actions of a reply it believes lost again.
var errKnownAttempt = errors.New("attempt already known on this tracker")

// launch starts a task attempt as a child process.
func (tt *TaskTracker) launch(ctx context.Context, l *mrpb.LaunchTask) error {
	// Sized before the attempt is registered, so that no one reads the
	// launch's configuration while it is replaced.
	share, clamps, budgetErr := tt.budgetChild(l)
	a, err := tt.register(l)
	if err != nil {
		return err
	}
	a.memShareMB = share
	tt.logClamps(l.JobId, l.AttemptId, clamps)
	start := a.start1
	if budgetErr != nil {
		start = func() error { return budgetErr }
	}
	if tt.faults.failTasks {
		start = func() error { return errors.New("fault injection: fail-tasks") }
	}
	if err := start(); err != nil {
		a.mu.Lock()
		a.state, a.diag, a.finish = "FAILED", "launching the task child: "+err.Error(), time.Now()
		tt.prom.attemptEnded(l, a.state, nil) // before a heartbeat can report the end
		a.mu.Unlock()
		close(a.exited)
		tt.poke()
		return err
	}
	tt.log.Info("attempt launched", "attempt", l.AttemptId)
	return nil
}

// register records a new attempt of this tracker, not started yet.
func (tt *TaskTracker) register(l *mrpb.LaunchTask) (*taskAttempt, error) {
	if !validID(l.AttemptId) || !validID(l.JobId) {
		return nil, fmt.Errorf("bad attempt id %q", l.AttemptId)
	}
	jcfg, err := conf.FromMap(l.Conf)
	if err != nil {
		return nil, fmt.Errorf("job configuration of %s: %w", l.AttemptId, err)
	}
	dir := filepath.Join(tt.jobDir(l.JobId), l.AttemptId)
	a := &taskAttempt{
		tt:           tt,
		launch:       l,
		dir:          dir,
		token:        randomHex(16),
		timeout:      jcfg.Duration("mapreduce.task.timeout"),
		state:        "RUNNING",
		phase:        "MAP",
		start:        time.Now(),
		lastProgress: time.Now(),
		exited:       make(chan struct{}),
	}
	if l.Type == "r" {
		a.phase = "SHUFFLE"
	}
	tt.mu.Lock()
	if _, dup := tt.attempts[l.AttemptId]; dup {
		tt.mu.Unlock()
		return nil, fmt.Errorf("attempt %s: %w", l.AttemptId, errKnownAttempt)
	}
	tt.attempts[l.AttemptId] = a
	if _, ok := tt.jobs[l.JobId]; !ok {
		tt.jobs[l.JobId] = &localJob{secret: l.JobSecret, dir: tt.jobDir(l.JobId)}
	}
	tt.mu.Unlock()
	tt.prom.started.WithLabelValues(typeLabel(l.Type)).Inc()
	return a, nil
}

func (a *taskAttempt) start1() error {
	tt := a.tt
	if err := os.MkdirAll(filepath.Join(a.dir, "spills"), 0o755); err != nil {
		return err
	}
	open := func(name string) (*os.File, error) {
		return os.OpenFile(filepath.Join(a.dir, name), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	}
	stdout, err := open("stdout")
	if err != nil {
		return err
	}
	defer stdout.Close()
	stderr, err := open("stderr")
	if err != nil {
		return err
	}
	defer stderr.Close()

	// A tracker that can clone gives every child a control pipe on fd 3;
	// one that cannot, a lifeline pipe there. Either way the tracker
	// alone holds the write end (close-on-exec), so the child reads EOF
	// when the tracker dies, and exits: the parent-death signal misses a
	// child forked in the instant the tracker is killed, and Go's check
	// of getppid() after setting it cannot work in a PID namespace.
	var ctrl *criu.Ctrl
	var lifeR, lifeW *os.File
	if tt.cloneable() {
		if ctrl, err = criu.NewCtrl(); err != nil {
			return err
		}
	} else if lifeR, lifeW, err = os.Pipe(); err != nil {
		return fmt.Errorf("lifeline pipe of %s: %w", a.launch.AttemptId, err)
	}
	newCmd := func(pidns bool) *exec.Cmd {
		cmd := exec.Command(tt.exe, ChildArg, "--attempt", a.launch.AttemptId, "--umbilical", tt.umbAddr)
		cmd.Dir = a.dir
		cmd.Stdout, cmd.Stderr = stdout, stderr
		cmd.Env = append(os.Environ(), childEnv, child.TokenEnv+"="+a.token)
		if a.memShareMB > 0 {
			cmd.Env = append(cmd.Env, fmt.Sprintf("%s=%d", child.MemoryShareEnv, a.memShareMB))
		}
		if ctrl != nil {
			cmd.ExtraFiles = []*os.File{ctrl.R}
			cmd.Env = append(cmd.Env, fmt.Sprintf("%s=%d", child.CtrlFDEnv, criu.CtrlFD))
		} else {
			cmd.ExtraFiles = []*os.File{lifeR}
			cmd.Env = append(cmd.Env, fmt.Sprintf("%s=%d", child.LifelineFDEnv, 3))
		}
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
		if tt.faults.noPdeathsig {
			cmd.SysProcAttr.Pdeathsig = 0
		}
		if pidns {
			cmd.SysProcAttr.Cloneflags = syscall.CLONE_NEWPID
		}
		return cmd
	}
	tt.mu.Lock()
	pidns := tt.pidNamespaces
	tt.mu.Unlock()
	tt.forkMu.RLock()
	defer tt.forkMu.RUnlock()
	cmd := newCmd(pidns)
	err = cmd.Start()
	if err != nil && pidns && (errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EINVAL)) {
		tt.log.Warn("cannot start task children in their own PID namespace; running them in their own session only", "error", err)
		tt.mu.Lock()
		tt.pidNamespaces = false
		tt.mu.Unlock()
		cmd = newCmd(false)
		err = cmd.Start()
	}
	if ctrl != nil {
		ctrl.R.Close()
		ctrl.R = nil
	}
	if lifeR != nil {
		lifeR.Close()
	}
	if err != nil {
		if ctrl != nil {
			ctrl.Close()
		}
		if lifeW != nil {
			lifeW.Close()
		}
		return err
	}
	a.mu.Lock()
	a.cmd, a.proc, a.ctrl, a.lifeline = cmd, cmd.Process, ctrl, lifeW
	a.mu.Unlock()
	go a.wait()
	return nil
}

// wait reaps the child and settles the attempt's final state.
func (a *taskAttempt) wait() {
	var err error
	if a.cmd != nil {
		err = a.cmd.Wait()
	} else {
		// A restored clone: a child of this process (CRIU restores it as
		// a sibling of its own helper), reaped through its pid.
		var st *os.ProcessState
		if st, err = a.proc.Wait(); err == nil && !st.Success() {
			err = errors.New(st.String())
		}
	}
	a.mu.Lock()
	if a.ctrl != nil {
		a.ctrl.Close()
	}
	if a.lifeline != nil {
		a.lifeline.Close()
		a.lifeline = nil
	}
	a.finish = time.Now()
	if a.holdEnd {
		// Ended by a dump for preemption: the checkpoint settles the
		// state once the image is kept (checkpointForPreemption).
		a.mu.Unlock()
		close(a.exited)
		return
	}
	switch {
	case a.killReason != "":
		a.state, a.diag = "KILLED", a.killReason
	case a.failReported != "" && a.failNotOwn:
		a.state, a.diag = "KILLED", a.failReported
	case a.failReported != "":
		a.state, a.diag = "FAILED", a.failReported
	case a.doneReported && err == nil && a.splitReported:
		a.state = "SPLIT"
	case a.doneReported && err == nil:
		a.state, a.progress = "SUCCEEDED", 1
	default:
		msg := "task child exited before reporting completion"
		if err != nil {
			msg = "task child " + err.Error()
		}
		if tail := tailFile(filepath.Join(a.dir, "stderr"), 2048); tail != "" {
			msg += "\n" + tail
		}
		a.state, a.diag = "FAILED", msg
	}
	a.tt.prom.attemptEnded(a.launch, a.state, a.counters) // before a heartbeat can report the end
	a.mu.Unlock()
	close(a.exited)
	a.tt.log.Info("attempt ended", "attempt", a.launch.AttemptId, "state", a.state, "diagnostic", firstLine(a.diag))
	a.tt.poke()
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

func tailFile(path string, n int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return ""
	}
	off := max(0, st.Size()-n)
	buf := make([]byte, st.Size()-off)
	if _, err := f.ReadAt(buf, off); err != nil {
		return ""
	}
	return strings.TrimSpace(string(buf))
}

// kill kills the child (the whole PID namespace when it has one).
func (a *taskAttempt) kill(why string) {
	a.mu.Lock()
	if a.killReason == "" && a.state != "SUCCEEDED" && a.state != "FAILED" && a.state != "SPLIT" {
		a.killReason = why
	}
	proc := a.proc
	a.mu.Unlock()
	if proc != nil {
		_ = proc.Kill()
	}
}

func (a *taskAttempt) waitExit(d time.Duration) {
	select {
	case <-a.exited:
	case <-time.After(d):
	}
}

func (a *taskAttempt) timedOut(now time.Time) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.timeout > 0 && a.proc != nil && !a.cloning && a.killReason == "" && a.failReported == "" &&
		(a.state == "RUNNING" || a.state == "COMMIT_PENDING") && now.Sub(a.lastProgress) > a.timeout
}

func (a *taskAttempt) failTimeout() {
	a.mu.Lock()
	a.failReported = fmt.Sprintf("Task %s failed to report status for %d seconds. Killing!", a.launch.AttemptId, int(a.timeout.Seconds()))
	proc := a.proc
	a.mu.Unlock()
	if proc != nil {
		_ = proc.Kill()
	}
}
