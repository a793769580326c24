package criu

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	gocriu "github.com/checkpoint-restore/go-criu/v7"
	"github.com/checkpoint-restore/go-criu/v7/rpc"
	"golang.org/x/sys/unix"
	"google.golang.org/protobuf/proto"
)

// Bind asks Restore to bind-mount Source over Target (recursively) in the
// restore's private mount namespace, which the clone then lives in. Both must
// be absolute paths of existing directories or files.
type Bind struct {
	Source, Target string
}

// RestoreSpec says what to restore and how.
type RestoreSpec struct {
	// ImagesDir holds the images of a Dump; WorkDir receives CRIU's log
	// (RestoreLog), stats-restore and, with Binds, the helper script and its
	// error output (RestoreHelper, RestoreHelperErr). WorkDir is created if
	// missing and must allow executing files when Binds are given.
	ImagesDir, WorkDir string
	// CtrlInode is the inode of the dumped process's control pipe
	// (PipeInode(Ctrl.W) of the original; for a clone of a clone, of its
	// Restored.Ctrl.W). The clone gets a fresh pipe in its place.
	CtrlInode uint64
	// Binds are applied in order before CRIU restores, e.g. the clone's copy of
	// the attempt directory over the original's path (CRIU reopens files, the
	// working directory and stdio by absolute path).
	Binds []Bind
}

// Restored is a clone that Restore started.
type Restored struct {
	// Pid is the clone's host pid. The clone is a child of the calling
	// process: reap it (os.FindProcess(Pid) then Wait).
	Pid int
	// Ctrl holds the write end of the clone's new control pipe (R is nil):
	// Ctrl.Resume hands the clone its attempt id and role. The caller closes it.
	Ctrl *Ctrl
	// Wall is the time of the CRIU restore call, start-up of CRIU (and of the
	// bind helper) included.
	Wall time.Duration
}

// restoreNotify records the restored root task's pid from CRIU's post-restore
// notification.
type restoreNotify struct {
	gocriu.NoNotify
	pid int
}

// PostRestore records the clone's host pid.
func (n *restoreNotify) PostRestore(pid int32) error {
	n.pid = int(pid)
	return nil
}

// Restore restores the image in spec.ImagesDir beside the still-running
// original, with CRIU at criuPath: the clone becomes a child of the calling
// process (RstSibling), a TCP connection in the image comes back closed
// (TcpClose), and the clone's fd CtrlFD is a fresh pipe whose write end is
// Restored.Ctrl (inherit-fd, key "pipe:[CtrlInode]"). The clone is left
// blocked wherever it was dumped, normally in WaitResume.
//
// With spec.Binds, CRIU runs through a helper script (RestoreHelper in
// WorkDir) that enters a new mount namespace with unshare(1) (/ made
// private, recursively), applies the binds with mount(8) and execs CRIU; the
// clone lives in that namespace, and the host's mount table and the calling
// process's threads are untouched. unshare and mount (util-linux) must be on
// PATH.
//
// The clone's parent is, as for any child, the OS thread that started it
// (here: the thread go-criu starts CRIU from), and a parent-death signal the
// original was started with (SysProcAttr.Pdeathsig) comes back with the image:
// the clone gets it when that thread ends. Go ends a thread only when a
// goroutine exits while locked to it (runtime.LockOSThread); callers using
// Pdeathsig should start children and call Restore from one goroutine that
// stays locked to its thread for the process's life, or never let a locked
// goroutine exit.
//
// While CRIU starts, the read end of the clone's pipe is inheritable (CRIU
// must inherit it): a process the caller starts at that moment inherits a copy
// too. Task children should therefore not start concurrently with a Restore,
// or should close descriptors above CtrlFD.
//
// On failure the error carries the error lines of CRIU's log (and the bind
// helper's errors). ctx is checked before CRIU starts; a started restore runs
// to its end.
func Restore(ctx context.Context, criuPath string, spec RestoreSpec) (Restored, error) {
	if err := ctx.Err(); err != nil {
		return Restored{}, fmt.Errorf("criu: restore from %s: %w", spec.ImagesDir, err)
	}
	if spec.CtrlInode == 0 {
		return Restored{}, fmt.Errorf("criu: restore from %s: no control pipe inode given", spec.ImagesDir)
	}
	if spec.ImagesDir == "" {
		return Restored{}, errors.New("criu: restore: no images directory given")
	}
	for _, b := range spec.Binds {
		for _, p := range []string{b.Source, b.Target} {
			if !filepath.IsAbs(p) {
				return Restored{}, fmt.Errorf("criu: restore from %s: bind %s over %s: %q is not an absolute path", spec.ImagesDir, b.Source, b.Target, p)
			}
			if _, err := os.Stat(p); err != nil {
				return Restored{}, fmt.Errorf("criu: restore from %s: bind %s over %s: %w", spec.ImagesDir, b.Source, b.Target, err)
			}
		}
	}
	if st, err := os.Stat(spec.ImagesDir); err != nil {
		return Restored{}, fmt.Errorf("criu: restore: images directory: %w", err)
	} else if !st.IsDir() {
		return Restored{}, fmt.Errorf("criu: restore: images path %s is not a directory", spec.ImagesDir)
	}
	img, work, err := openDirs(spec.ImagesDir, spec.WorkDir)
	if err != nil {
		return Restored{}, fmt.Errorf("criu: restore from %s: %w", spec.ImagesDir, err)
	}
	defer img.Close()
	defer work.Close()
	swrk := criuPath
	var helperErr string
	if len(spec.Binds) > 0 {
		if swrk, helperErr, err = writeBindHelper(spec.WorkDir, criuPath, spec.Binds); err != nil {
			return Restored{}, fmt.Errorf("criu: restore from %s: %w", spec.ImagesDir, err)
		}
	}

	cloneR, cloneW, err := os.Pipe()
	if err != nil {
		return Restored{}, fmt.Errorf("criu: restore from %s: creating the clone's control pipe: %w", spec.ImagesDir, err)
	}
	defer cloneR.Close() // the clone holds its own copy once restored
	rfd := cloneR.Fd()   // Fd makes the pipe end blocking, as the clone expects
	opts := &rpc.CriuOpts{
		ImagesDirFd: proto.Int32(int32(img.Fd())),
		WorkDirFd:   proto.Int32(int32(work.Fd())),
		LogFile:     proto.String(RestoreLog),
		LogLevel:    proto.Int32(criuLogLevel),
		RstSibling:  proto.Bool(true),
		TcpClose:    proto.Bool(true),
		InheritFd: []*rpc.InheritFd{{
			Key: proto.String(fmt.Sprintf("pipe:[%d]", spec.CtrlInode)),
			Fd:  proto.Int32(int32(rfd)),
		}},
	}
	// go-criu starts "criu swrk" without ExtraFiles: the inherit-fd
	// descriptor must simply survive exec at its number.
	if _, err := unix.FcntlInt(rfd, unix.F_SETFD, 0); err != nil {
		cloneW.Close()
		return Restored{}, fmt.Errorf("criu: restore from %s: clearing close-on-exec on fd %d: %w", spec.ImagesDir, rfd, err)
	}
	c := gocriu.MakeCriu()
	c.SetCriuPath(swrk)
	nfy := &restoreNotify{}
	var wall time.Duration
	err = retryTextBusy(func() error {
		start := time.Now()
		err := c.Restore(opts, nfy)
		wall = time.Since(start)
		return err
	})
	if err == nil && nfy.pid <= 0 {
		err = errors.New("CRIU reported success but no restored pid")
	}
	if err != nil {
		if nfy.pid > 0 {
			// CRIU reported a failure after the clone came to life.
			_ = unix.Kill(nfy.pid, unix.SIGKILL)
			var ws unix.WaitStatus
			_, _ = unix.Wait4(nfy.pid, &ws, 0, nil)
		}
		cloneW.Close()
		logPath := filepath.Join(spec.WorkDir, RestoreLog)
		return Restored{}, fmt.Errorf("criu: restore from %s failed: %s%s (CRIU log %s; go-criu: %s)",
			spec.ImagesDir, helperCause(helperErr), logCause(logPath), logPath, oneLine(err))
	}
	return Restored{Pid: nfy.pid, Ctrl: &Ctrl{W: cloneW}, Wall: wall}, nil
}
