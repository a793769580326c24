package criu

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	gocriu "github.com/checkpoint-restore/go-criu/v7"
	"github.com/checkpoint-restore/go-criu/v7/rpc"
	"github.com/checkpoint-restore/go-criu/v7/stats"
	"golang.org/x/sys/unix"
	"google.golang.org/protobuf/proto"
)

// Log file names CRIU writes in the work directory (beside its stats-dump and
// stats-restore files).
const (
	DumpLog    = "dump.log"
	RestoreLog = "restore.log"
)

// criuLogLevel 4 is CRIU's most verbose level: the log is what explains a failure.
const criuLogLevel = 4

// DumpStats reports one dump.
type DumpStats struct {
	// ImageBytes is the total size of the image files (*.img) written.
	ImageBytes int64
	// Wall is the time of the whole CRIU call, start-up of CRIU included: how
	// long a quiesced original waits for its resume line.
	Wall time.Duration
	// Frozen is how long the task was actually frozen (CRIU's stats-dump);
	// 0 when CRIU left no stats file.
	Frozen time.Duration
}

// Dump checkpoints the process tree rooted at pid (a child started as the
// package doc says, quiesced) into imagesDir with CRIU at criuPath. The process
// keeps running (LeaveRunning); an open TCP connection is dumped as closed
// (TcpClose), so a clone finds it closed while the original's is untouched.
// Both directories are created if missing; CRIU's log (DumpLog) and stats go
// to workDir.
//
// A process in another mount namespace (a clone restored with Binds) is dumped
// by a CRIU started in that namespace (through DumpHelper, a script in workDir
// that uses nsenter(1)), so that its image restores like any other: this is
// what lets a clone be cloned again.
//
// On failure the error carries the error lines of CRIU's log (go-criu's own
// message is only CRIU's first error line, on these machines always a harmless
// RLIMIT_NOFILE warning). ctx is checked before CRIU starts; a started dump
// runs to its end (stopping CRIU half-way could leave the task frozen).
func Dump(ctx context.Context, criuPath string, pid int, imagesDir, workDir string) (DumpStats, error) {
	return DumpWith(ctx, criuPath, pid, imagesDir, workDir, DumpOptions{})
}

// DumpOptions are the choices of a dump beyond Dump's defaults.
type DumpOptions struct {
	// Stop ends the process tree once the dump succeeded (CRIU's default,
	// without --leave-running): a checkpoint for preemption, whose image is
	// the only copy of the task. A failed dump leaves the process running
	// (CRIU resumes it).
	Stop bool
	// TrackMem has CRIU reset the soft-dirty bits of the process's memory
	// after the dump (--track-mem), so that a later dump of the same
	// process with Parent writes only the pages written since. It needs
	// DirtyTracking; without it the dump fails ("Tracking memory is not
	// available").
	TrackMem bool
	// Parent is the images directory of an earlier dump of the same
	// process made with TrackMem, relative to the new images directory
	// (--prev-images-dir; CRIU links it as "parent"): the dump is
	// incremental. Across a restore CRIU silently dumps in full (spec
	// preemption-elasticity.md §5.8).
	Parent string
}

// DumpWith is Dump with options: with o.Stop the process is not left
// running after a successful dump.
func DumpWith(ctx context.Context, criuPath string, pid int, imagesDir, workDir string, o DumpOptions) (DumpStats, error) {
	if err := ctx.Err(); err != nil {
		return DumpStats{}, fmt.Errorf("criu: dump of pid %d: %w", pid, err)
	}
	if pid <= 0 {
		return DumpStats{}, fmt.Errorf("criu: dump: bad pid %d", pid)
	}
	img, work, err := openDirs(imagesDir, workDir)
	if err != nil {
		return DumpStats{}, fmt.Errorf("criu: dump of pid %d: %w", pid, err)
	}
	defer img.Close()
	defer work.Close()
	logPath := filepath.Join(workDir, DumpLog)

	c := gocriu.MakeCriu()
	c.SetCriuPath(criuPath)
	opts := &rpc.CriuOpts{
		ImagesDirFd:  proto.Int32(int32(img.Fd())),
		WorkDirFd:    proto.Int32(int32(work.Fd())),
		LogFile:      proto.String(DumpLog),
		LogLevel:     proto.Int32(criuLogLevel),
		Pid:          proto.Int32(int32(pid)),
		LeaveRunning: proto.Bool(!o.Stop),
		TcpClose:     proto.Bool(true),
	}
	if o.TrackMem {
		opts.TrackMem = proto.Bool(true)
	}
	if o.Parent != "" {
		opts.ParentImg = proto.String(o.Parent)
	}
	var wall time.Duration
	dump := func() error {
		start := time.Now()
		err := c.Dump(opts, nil)
		wall = time.Since(start)
		return err
	}
	same, err := sameMountNS(pid)
	if err != nil {
		return DumpStats{}, fmt.Errorf("criu: dump of pid %d: %w", pid, err)
	}
	var helperErr string
	if !same {
		var script string
		if script, helperErr, err = writeNSEnterHelper(workDir, criuPath, pid); err != nil {
			return DumpStats{}, fmt.Errorf("criu: dump of pid %d: %w", pid, err)
		}
		c.SetCriuPath(script)
	}
	if err = retryTextBusy(dump); err != nil {
		return DumpStats{}, fmt.Errorf("criu: dump of pid %d into %s failed: %s%s (CRIU log %s; go-criu: %s)",
			pid, imagesDir, helperCause(helperErr), logCause(logPath), logPath, oneLine(err))
	}
	ds := DumpStats{Wall: wall}
	if ds.ImageBytes, err = imageBytes(imagesDir); err != nil {
		return ds, fmt.Errorf("criu: dump of pid %d: sizing images: %w", pid, err)
	}
	if st, err := stats.CriuGetDumpStats(work); err != nil {
		slog.Warn("criu: no dump statistics", "dir", workDir, "err", err)
	} else {
		ds.Frozen = time.Duration(st.GetFrozenTime()) * time.Microsecond
	}
	return ds, nil
}

// sameMountNS tells whether pid is in the calling thread's mount namespace.
func sameMountNS(pid int) (bool, error) {
	var self, other unix.Stat_t
	if err := unix.Stat("/proc/thread-self/ns/mnt", &self); err != nil {
		return false, fmt.Errorf("own mount namespace: %w", err)
	}
	p := fmt.Sprintf("/proc/%d/ns/mnt", pid)
	if err := unix.Stat(p, &other); err != nil {
		return false, fmt.Errorf("mount namespace of pid %d: %w", pid, err)
	}
	return self.Dev == other.Dev && self.Ino == other.Ino, nil
}

// openDirs creates (if needed) and opens the images and work directories.
func openDirs(imagesDir, workDir string) (img, work *os.File, err error) {
	for _, d := range []string{imagesDir, workDir} {
		if d == "" {
			return nil, nil, fmt.Errorf("empty images or work directory name")
		}
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, nil, fmt.Errorf("creating %s: %w", d, err)
		}
	}
	if img, err = os.Open(imagesDir); err != nil {
		return nil, nil, fmt.Errorf("opening images directory: %w", err)
	}
	if work, err = os.Open(workDir); err != nil {
		img.Close()
		return nil, nil, fmt.Errorf("opening work directory: %w", err)
	}
	return img, work, nil
}

// imageBytes sums the sizes of the CRIU image files (*.img) in dir, not counting
// logs and stats when dir is also the work directory.
func imageBytes(dir string) (int64, error) {
	es, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	var n int64
	for _, e := range es {
		if !e.Type().IsRegular() || !strings.HasSuffix(e.Name(), ".img") {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			return 0, err
		}
		n += fi.Size()
	}
	return n, nil
}

// maxCauseLines bounds how many CRIU log lines an error carries.
const maxCauseLines = 6

// logCause returns the lines of a CRIU log that explain a failure: its
// "Error (...)" lines, leaving out the RLIMIT_NOFILE one CRIU prints whenever
// it lacks CAP_SYS_RESOURCE, preceded by the line before the first of them
// (CRIU often says there what it was doing, e.g. "No inventory.img image");
// the last lines of the log when it has no other error line.
func logCause(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Sprintf("(log unreadable: %v)", err)
	}
	defer f.Close()
	var errs, tail []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		isErr := strings.Contains(line, "Error (")
		if isErr && !strings.Contains(line, "RLIMIT_NOFILE") {
			if len(errs) == 0 && len(tail) > 0 && !strings.Contains(tail[len(tail)-1], "Error (") {
				errs = append(errs, tail[len(tail)-1])
			}
			errs = append(errs, line)
		}
		tail = append(tail, line)
		if len(tail) > maxCauseLines {
			tail = tail[1:]
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Sprintf("(reading log: %v)", err)
	}
	switch {
	case len(errs) > maxCauseLines:
		errs = append(errs[:maxCauseLines-1], errs[len(errs)-1])
	case len(errs) == 0 && len(tail) == 0:
		return "(log empty)"
	case len(errs) == 0:
		errs = tail
	}
	return strings.Join(errs, " | ")
}

// oneLine puts an error's text on one line (go-criu's messages span lines).
func oneLine(err error) string {
	return oneLineText(err.Error())
}
