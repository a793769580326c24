// Package criu holds the worker-side mechanics of cloning a running task
// attempt with CRIU (github.com/checkpoint-restore/go-criu/v7): probing the
// installed CRIU, the control pipe through which a quiesced child learns
// "resume <attempt> <role>", a leave-running dump of the child, and a restore
// of the image beside the still-running original with a fresh control pipe
// and, optionally, bind mounts that put the clone's copy of the attempt
// directory at the original's path. It makes no scheduling decisions.
//
// The protocol (docs/criu.md, shared spec criu-clone-mechanism.md):
//
//  1. The tracker starts the child with SysProcAttr{Setsid, CLONE_NEWPID},
//     GODEBUG=multipathtcp=0,containermaxprocs=0,updatemaxprocs=0, stdout and
//     stderr opened O_WRONLY|O_APPEND, and Ctrl.R as fd CtrlFD.
//  2. Quiesce: the child closes its connection and per-attempt files and
//     blocks in WaitResume.
//  3. Dump (leave-running), then Ctrl.Resume(attempt, "orig").
//  4. Copy the attempt directory; Restore with CtrlInode = PipeInode(Ctrl.W)
//     and a Bind of the copy over the original's directory; then
//     Restored.Ctrl.Resume(newAttempt, "clone").
//
// Everything needs root (CAP_SYS_ADMIN); CRIU 4.2 or later (4.1 cannot dump a
// task holding an inet socket on kernels >= 6.16). CRIU is installed by
// tasktracker/criu/install.sh (make criu) as a wrapper script.
package criu

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"

	gocriu "github.com/checkpoint-restore/go-criu/v7"
	"golang.org/x/sys/unix"
)

// DefaultPath is where make criu installs the CRIU wrapper.
const DefaultPath = "/opt/gomr/criu/criu.sh"

// minVersion is the oldest usable CRIU, as go-criu numbers versions
// (major*10000 + minor*100 + sublevel).
const minVersion = 40200

// Info describes a usable CRIU.
type Info struct {
	// Path is the CRIU binary or wrapper that was probed.
	Path string
	// Version is CRIU's version, e.g. "4.2.1".
	Version string
}

// Probe checks that CRIU at path can be used for cloning: the file exists and
// is executable, the process is root, CRIU answers the VERSION request of its
// RPC service (run as "path swrk", the way Dump and Restore run it), and the
// version is 4.2 or later. The error names what is missing. ctx bounds the
// wait for CRIU's answer (a CRIU still running when ctx ends is left to exit
// on its own).
func Probe(ctx context.Context, path string) (Info, error) {
	if err := ctx.Err(); err != nil {
		return Info{}, fmt.Errorf("criu: probe of %q: %w", path, err)
	}
	if path == "" {
		return Info{}, fmt.Errorf("criu: no CRIU path configured (the wrapper make criu installs is %s)", DefaultPath)
	}
	st, err := os.Stat(path)
	switch {
	case os.IsNotExist(err):
		return Info{}, fmt.Errorf("criu: CRIU not found at %s (install it as root with `make criu`): %w", path, err)
	case err != nil:
		return Info{}, fmt.Errorf("criu: CRIU at %s: %w", path, err)
	case st.IsDir():
		return Info{}, fmt.Errorf("criu: CRIU path %s is a directory, not the criu binary or wrapper", path)
	case st.Mode().Perm()&0o111 == 0:
		return Info{}, fmt.Errorf("criu: CRIU at %s is not executable (mode %s)", path, st.Mode())
	}
	if euid := os.Geteuid(); euid != 0 {
		return Info{}, fmt.Errorf("criu: CRIU at %s needs root to checkpoint and restore, but this process runs as uid %d", path, euid)
	}
	if err := unix.Access(path, unix.X_OK); err != nil {
		return Info{}, fmt.Errorf("criu: CRIU at %s is not executable: %w", path, err)
	}

	type answer struct {
		v   int
		err error
	}
	ch := make(chan answer, 1)
	go func() {
		c := gocriu.MakeCriu()
		c.SetCriuPath(path)
		v, err := c.GetCriuVersion()
		ch <- answer{v, err}
	}()
	var a answer
	select {
	case a = <-ch:
	case <-ctx.Done():
		return Info{}, fmt.Errorf("criu: probe of %s: no answer to the VERSION request: %w", path, ctx.Err())
	}
	if a.err != nil {
		return Info{}, fmt.Errorf("criu: running %s swrk (CRIU's RPC service) for its version failed: %w", path, a.err)
	}
	info := Info{Path: path, Version: versionString(a.v)}
	if a.v < minVersion {
		return info, fmt.Errorf("criu: CRIU at %s is version %s; gomr needs 4.2 or later (4.1 cannot dump tasks with inet sockets on kernels >= 6.16)", path, info.Version)
	}
	return info, nil
}

// versionString formats go-criu's major*10000+minor*100+sublevel.
func versionString(v int) string {
	return strconv.Itoa(v/10000) + "." + strconv.Itoa(v/100%100) + "." + strconv.Itoa(v%100)
}

// MarkInheritedFDsCloseOnExec sets FD_CLOEXEC on every descriptor above 2 of
// the calling process, so that descriptors it inherited from whoever started
// it (a shell's stray fds) do not pass on into task children, where CRIU would
// dump and restore them too. Call it once at start-up, before starting
// children and while no Restore is running (Restore briefly makes one pipe end
// inheritable for CRIU).
func MarkInheritedFDsCloseOnExec() error {
	d, err := os.Open("/proc/self/fd")
	if err != nil {
		return fmt.Errorf("criu: listing own descriptors: %w", err)
	}
	names, err := d.Readdirnames(-1)
	self := int(d.Fd())
	d.Close()
	if err != nil {
		return fmt.Errorf("criu: listing /proc/self/fd: %w", err)
	}
	for _, n := range names {
		fd, err := strconv.Atoi(n)
		if err != nil || fd <= 2 || fd == self {
			continue
		}
		flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
		if err != nil {
			continue // closed meanwhile
		}
		if flags&unix.FD_CLOEXEC == 0 {
			if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFD, flags|unix.FD_CLOEXEC); err != nil {
				return fmt.Errorf("criu: setting close-on-exec on fd %d: %w", fd, err)
			}
		}
	}
	return nil
}

// DirtyTracking tells whether CRIU at path can track the memory a process
// writes between two dumps (`criu check --feature mem_dirty_track`): the
// kernel's soft-dirty bits, CONFIG_MEM_SOFT_DIRTY, which some kernels and
// architectures lack. Without it a dump with TrackMem fails, a pre-dump
// cannot be followed by an incremental dump, and every dump is full. When
// it is missing, why says so in CRIU's words. err is for a check that
// could not be run at all.
func DirtyTracking(ctx context.Context, path string) (ok bool, why string, err error) {
	out, err := exec.CommandContext(ctx, path, "check", "--feature", "mem_dirty_track").CombinedOutput()
	text := oneLineText(strings.TrimSpace(string(out)))
	var exit *exec.ExitError
	switch {
	case err == nil:
		return true, "", nil
	case errors.As(err, &exit) && ctx.Err() == nil && strings.Contains(text, "racking"):
		return false, text, nil
	default:
		return false, "", fmt.Errorf("criu: %s check --feature mem_dirty_track: %w (%s)", path, err, text)
	}
}
