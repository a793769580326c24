package child

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"gomr/mrpb"
)

// CtrlFDEnv names the environment variable through which a TaskTracker
// tells a child that its control pipe is open on that descriptor. The
// tracker writes lines to it:
//
//	quiesce                           reach a quiet point and report it (Quiet RPC)
//	resume <attempt> <role> [<addr> [<token>]]  go on as <attempt> ("orig" or "clone"), reporting to the umbilical at <addr> (default: the one it had) with umbilical token <token> (default: the one it had)
//
// A cloned child is restored blocked on the same read as its original, with
// the descriptor now its own fresh pipe, so the line it reads first gives it
// its identity.
const CtrlFDEnv = "GOMR_CTRL_FD"

// ctrl is the child's side of its control pipe.
type ctrl struct {
	quiesce atomic.Bool
	resume  chan resumeLine
	// onQuiesce runs in the reader when a quiesce request arrives; the
	// task sets it to refuse at once when it is past its quiet points.
	onQuiesce atomic.Pointer[func()]
}

type resumeLine struct {
	attempt, role, addr, token string
	err                        error
	// taken is closed once the task took its identity; the reader waits
	// for it, so that nothing it does races with the change.
	taken chan struct{}
}

// startCtrl starts reading the control pipe named by CtrlFDEnv; nil when
// there is none (the tracker does not clone). The pipe is the child's
// lifeline too: at its EOF the child exits (lifeline.go).
func startCtrl(log *slog.Logger) *ctrl {
	v := os.Getenv(CtrlFDEnv)
	if v == "" {
		return nil
	}
	var fd int
	if _, err := fmt.Sscanf(v, "%d", &fd); err != nil || fd < 3 {
		log.Warn("ignoring a bad control descriptor", "env", CtrlFDEnv, "value", v)
		return nil
	}
	f := os.NewFile(uintptr(fd), "ctrl")
	c := &ctrl{resume: make(chan resumeLine, 1)}
	go func() {
		r := bufio.NewReader(f)
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				// EOF: the tracker is gone, or this is a copy restored
				// without a control pipe of its own. Either way nobody
				// will resume it, and it must write nothing more.
				c.resume <- resumeLine{err: fmt.Errorf("control pipe: %w", err)}
				trackerGone(log, "control")
				return
			}
			fields := strings.Fields(line)
			switch {
			case len(fields) == 1 && fields[0] == "quiesce":
				c.quiesce.Store(true)
				if f := c.onQuiesce.Load(); f != nil {
					(*f)()
				}
			case len(fields) >= 3 && len(fields) <= 5 && fields[0] == "resume":
				l := resumeLine{attempt: fields[1], role: fields[2], taken: make(chan struct{})}
				if len(fields) >= 4 {
					l.addr = fields[3]
				}
				if len(fields) == 5 {
					l.token = fields[4]
				}
				c.resume <- l
				<-l.taken
			}
		}
	}()
	return c
}

// setCloneable says whether the work loop can reach a quiet point now; the
// tracker offers the attempt for cloning only then.
func (t *task) setCloneable(ok bool) {
	if t.ctrl == nil {
		return
	}
	if t.cloneable.Swap(ok) != ok && ok {
		t.sendStatus() // the speculator may be waiting to hear it
	}
	if !ok {
		// A request that came in just before: no quiet point will
		// answer it any more.
		t.refuseQuiesce("past its last quiet point")
	}
}

// watchQuiesce makes quiesce requests that arrive while the task cannot
// reach a quiet point fail at once.
func (t *task) watchQuiesce() {
	if t.ctrl == nil {
		return
	}
	f := func() {
		if !t.cloneable.Load() {
			t.refuseQuiesce("in a phase without a quiet point (" + t.currentPhase() + ")")
			return
		}
		t.wakeWork()
	}
	t.ctrl.onQuiesce.Store(&f)
}

func (t *task) currentPhase() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.phase
}

// refuseQuiesce answers a pending quiesce request, if any, with a refusal.
func (t *task) refuseQuiesce(why string) {
	if !t.ctrl.quiesce.CompareAndSwap(true, false) {
		return
	}
	ctx, cancel := context.WithTimeout(t.ctx, 5*time.Second)
	defer cancel()
	if _, err := t.umb.Quiet(ctx, &mrpb.QuietRequest{AttemptId: t.launch.AttemptId, Refused: why}); err != nil {
		t.log.Warn("could not refuse a quiesce request", "error", err)
	}
}

// quiesceRequested tells the work loop to call quiesce at its next check;
// it claims the request, so that it is answered once.
func (t *task) quiesceRequested() bool {
	return t.ctrl != nil && t.ctrl.quiesce.Load() && t.ctrl.quiesce.CompareAndSwap(true, false)
}

// quiesce runs at a quiet point of the work loop: settle (no spill being
// written, no file open for writing but the O_APPEND logs), stop
// reporting, tell the tracker, and wait on the control pipe. The tracker
// dumps the process meanwhile and then resumes it; a clone restored from
// the dump returns from here with a new attempt id and umbilical.
func (t *task) quiesce(settle func() error) error {
	quietFrom := time.Now()
	if settle != nil {
		if err := settle(); err != nil {
			return err
		}
	}
	t.stopReporting()
	t.mu.Lock()
	progress := t.progress
	t.mu.Unlock()
	if t.slow != nil && t.slow.k > 0 {
		// What the injector counted so far: with what a restored copy
		// counts after its restore, the work of the whole task.
		t.log.Info("straggler injector: at a quiet point", "progress", progress, "work", t.slow.worked.Round(time.Millisecond),
			"delay", t.slow.slept.Round(time.Millisecond), "owed", t.slow.owed.Round(time.Millisecond),
			"process_cpu", processCPU().Round(time.Millisecond), "settle", time.Since(quietFrom).Round(time.Millisecond))
	}
	ctx, cancel := context.WithTimeout(t.ctx, 10*time.Second)
	_, err := t.umb.Quiet(ctx, &mrpb.QuietRequest{AttemptId: t.launch.AttemptId, Progress: progress})
	cancel()
	if err != nil {
		// The tracker did not hear it: it gives up the clone; go on.
		t.log.Warn("could not report the quiet point; going on", "error", err)
		t.startReporting()
		return nil
	}
	var line resumeLine
	select {
	case line = <-t.ctrl.resume:
	case <-time.After(5 * time.Minute):
		return errors.New("quiesced but never resumed by the tracker")
	}
	if line.err != nil {
		return line.err
	}
	if line.role == "clone" {
		err := t.becomeClone(line.attempt, line.addr, line.token)
		close(line.taken)
		if err != nil {
			return err
		}
	} else {
		close(line.taken)
		t.slow.pause(time.Since(quietFrom))
	}
	t.startReporting()
	return nil
}

// becomeClone takes the clone's identity: its attempt id, its umbilical,
// its task description (a speculative attempt) and its own straggler draw.
// The connection inherited from the original came back closed.
func (t *task) becomeClone(attemptID, addr, token string) error {
	if addr == "" {
		addr = t.umbAddr
	}
	if token == "" {
		token = launchToken()
	}
	conn, err := dialUmbilical(addr, attemptID, token)
	if err != nil {
		return fmt.Errorf("clone %s: umbilical %s: %w", attemptID, addr, err)
	}
	umb := mrpb.NewUmbilicalClient(conn)
	ctx, cancel := context.WithTimeout(t.ctx, 10*time.Second)
	defer cancel()
	launch, err := umb.GetTask(ctx, &mrpb.GetTaskRequest{AttemptId: attemptID})
	if err != nil {
		conn.Close()
		return fmt.Errorf("clone %s: getting its task: %w", attemptID, err)
	}
	if t.conn != nil {
		t.conn.Close()
	}
	t.conn, t.umb, t.launch = conn, umb, launch
	t.log = t.log.With("attempt", attemptID, "cloned", true)
	t.log.Info("running as a clone")
	if t.slow != nil {
		slow, err := t.newSlowdown()
		if err != nil {
			return err
		}
		slow.start()
		// A restored process is a new process to the kernel: its CPU
		// clock starts at its restore (CRIU's restorer included), so the
		// injector counts from here. The delay the original owed for its
		// work and had not slept (a quiesce cut its sleep short) is owed
		// by the copy, at the copy's factor.
		if t.slow.k > 0 {
			slow.owed = time.Duration(float64(t.slow.owed) * slow.k / t.slow.k)
		}
		t.log.Info("straggler injector: restarted in the copy", "process_cpu", slow.lastCPU.Round(time.Millisecond),
			"owed", slow.owed.Round(time.Millisecond))
		*t.slow = *slow
	}
	return nil
}
