package tasktracker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"gomr/mr"
	mrfs "gomr/mr/fs"
	"gomr/mrpb"
	"gomr/tasktracker/criu"
)

// CloneFaultEnv names an environment variable of the TaskTracker for fault
// injection in tests: "restore" damages every clone's image before it is
// restored, so that the restore fails and the fallback path runs.
const CloneFaultEnv = "GOMR_CLONE_FAULT"

// quiesceTimeout bounds the wait for a child to reach its quiet point.
const quiesceTimeout = 10 * time.Second

// probeCRIU checks the CRIU binary named by mapreduce.tasktracker.criu.path
// (empty: cloning off). Without a working CRIU the tracker reports that it
// cannot clone, and the JobTracker's speculator then starts fresh attempts
// only.
func (tt *TaskTracker) probeCRIU(ctx context.Context) {
	path := tt.cfg.String("mapreduce.tasktracker.criu.path")
	if path == "" {
		tt.log.Info("cloning disabled: mapreduce.tasktracker.criu.path is empty; speculative attempts will be fresh")
		return
	}
	pctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	info, err := criu.Probe(pctx, path)
	if err != nil {
		tt.log.Warn("CRIU unavailable: speculative attempts will be fresh, never clones", "path", path, "error", err)
		return
	}
	if !tt.pidNamespaces {
		tt.log.Warn("CRIU found but task children cannot run in their own PID namespace: cloning disabled", "path", path)
		return
	}
	if err := criu.MarkInheritedFDsCloseOnExec(); err != nil {
		tt.log.Warn("CRIU found but inherited descriptors could not be closed on exec: cloning disabled", "error", err)
		return
	}
	tt.criuPath = info.Path
	tt.log.Info("CRIU available: running attempts can be cloned", "path", info.Path, "version", info.Version)
}

// cloneable tells whether this tracker can clone attempts.
func (tt *TaskTracker) cloneable() bool { return tt.criuPath != "" }

// clone makes a new attempt by cloning a running one on this tracker: the
// child is asked to reach a quiet point, dumped with CRIU (it keeps
// running), its working directory copied to the new attempt's, and the
// image restored beside it with that copy mounted over the original's
// path, so that the clone writes its own files. The clone then takes its
// new attempt id from its fresh control pipe. On any failure the new
// attempt is reported FAILED with the reason in its clone stats, and the
// JobTracker falls back to a fresh attempt.
func (tt *TaskTracker) clone(ctx context.Context, c *mrpb.CloneAttempt) {
	l := c.Launch
	a, err := tt.register(l)
	if err != nil {
		tt.log.Error("clone refused", "attempt", l.AttemptId, "error", err)
		return
	}
	a.cloneStats = &mrpb.CloneStats{SourceAttempt: c.SourceAttempt}
	go func() {
		if err := tt.cloneInto(ctx, a, c.SourceAttempt); err != nil {
			tt.log.Warn("clone failed", "attempt", l.AttemptId, "source", c.SourceAttempt, "error", err)
			a.mu.Lock()
			a.cloneStats.Error = err.Error()
			a.state, a.diag, a.finish = "FAILED", "clone failed: "+err.Error(), time.Now()
			a.mu.Unlock()
			close(a.exited)
			tt.poke()
		}
	}()
}

func (tt *TaskTracker) cloneInto(ctx context.Context, a *taskAttempt, sourceID string) error {
	if !tt.cloneable() {
		return errors.New("CRIU is not available on tracker " + tt.name)
	}
	tt.mu.Lock()
	src := tt.attempts[sourceID]
	tt.mu.Unlock()
	if src == nil {
		return fmt.Errorf("source attempt %s is not running here", sourceID)
	}
	src.mu.Lock()
	ctrl, proc, state := src.ctrl, src.proc, src.state
	busy := src.cloning
	if ctrl != nil && state == "RUNNING" && !busy {
		src.cloning = true
		src.quiet = make(chan quietReport, 1)
	}
	quiet := src.quiet
	src.mu.Unlock()
	switch {
	case ctrl == nil || proc == nil:
		return fmt.Errorf("source attempt %s has no control pipe", sourceID)
	case state != "RUNNING":
		return fmt.Errorf("source attempt %s is %s", sourceID, state)
	case busy:
		return fmt.Errorf("source attempt %s is already being cloned", sourceID)
	}
	resumed := false
	defer func() {
		src.mu.Lock()
		src.cloning, src.quiet = false, nil
		src.mu.Unlock()
		if !resumed {
			// Whatever happened, the original must not stay parked.
			_ = ctrl.Resume(sourceID, "orig")
		}
	}()

	began := time.Now()
	if _, err := ctrl.W.Write([]byte("quiesce\n")); err != nil {
		return fmt.Errorf("asking %s to quiesce: %w", sourceID, err)
	}
	var progress float32
	select {
	case q := <-quiet:
		if q.refused != "" {
			return fmt.Errorf("source attempt %s cannot be quiesced now: %s", sourceID, q.refused)
		}
		progress = q.progress
	case <-src.exited:
		return fmt.Errorf("source attempt %s ended before its quiet point", sourceID)
	case <-time.After(quiesceTimeout):
		return fmt.Errorf("source attempt %s did not reach a quiet point within %v", sourceID, quiesceTimeout)
	case <-ctx.Done():
		return ctx.Err()
	}
	// The child is quiet: its files hold exactly what the process wrote
	// so far. Note their sizes now, since the original writes on once it
	// is resumed, and the clone's copies must match its image.
	files := []dirCopy{{from: src.dir, to: a.dir, skipSpills: src.launch.Type == "m"}}
	if from, to, ok := outputDirs(src.launch, a.launch.AttemptId); ok {
		files = append(files, dirCopy{from: from, to: to})
	}
	for i := range files {
		if err := files[i].snapshot(); err != nil {
			return fmt.Errorf("listing the working files of %s: %w", sourceID, err)
		}
	}
	imgDir := filepath.Join(tt.jobDir(a.launch.JobId), a.launch.AttemptId+".criu")
	if err := os.MkdirAll(imgDir, 0o755); err != nil {
		return err
	}
	defer os.RemoveAll(imgDir)
	ds, err := criu.Dump(ctx, tt.criuPath, proc.Pid, imgDir, imgDir)
	dumpDone := time.Now()
	if err := ctrl.Resume(sourceID, "orig"); err == nil {
		resumed = true
	}
	if err != nil {
		return fmt.Errorf("dumping %s: %w", sourceID, err)
	}

	var fileBytes int64
	var binds []criu.Bind
	for _, dc := range files {
		n, err := dc.copy()
		if err != nil {
			return fmt.Errorf("copying the working files of %s: %w", sourceID, err)
		}
		fileBytes += n
		binds = append(binds, criu.Bind{Source: dc.to, Target: dc.from})
	}
	copyDone := time.Now()
	if os.Getenv(CloneFaultEnv) == "restore" {
		// Fault injection (tests): a damaged image, as a failed transfer
		// or a full disk would leave it.
		if err := os.Truncate(filepath.Join(imgDir, "inventory.img"), 0); err != nil {
			return fmt.Errorf("fault injection: %w", err)
		}
	}
	ino, err := criu.PipeInode(ctrl.W)
	if err != nil {
		return err
	}
	// No child may start while CRIU holds the clone's pipe end
	// inheritable: it would inherit a copy.
	tt.forkMu.Lock()
	r, err := criu.Restore(ctx, tt.criuPath, criu.RestoreSpec{
		ImagesDir: imgDir, WorkDir: imgDir, CtrlInode: ino,
		Binds: binds,
	})
	tt.forkMu.Unlock()
	if err != nil {
		return fmt.Errorf("restoring the clone of %s: %w", sourceID, err)
	}
	restoreDone := time.Now()
	clonedProc, err := os.FindProcess(r.Pid)
	if err != nil {
		_ = r.Ctrl.Close()
		return fmt.Errorf("finding the restored clone (pid %d): %w", r.Pid, err)
	}
	a.mu.Lock()
	a.proc = clonedProc
	a.ctrl = r.Ctrl
	a.progress = progress
	a.start = began
	a.lastProgress = time.Now()
	a.cloneStats.DumpMs = dumpDone.Sub(began).Milliseconds()
	a.cloneStats.CopyMs = copyDone.Sub(dumpDone).Milliseconds()
	a.cloneStats.RestoreMs = restoreDone.Sub(copyDone).Milliseconds()
	a.cloneStats.ImageBytes = ds.ImageBytes
	a.cloneStats.FileSetBytes = fileBytes
	a.cloneStats.StartProgress = progress
	killed := a.killReason != ""
	a.mu.Unlock()
	if killed {
		// Killed while it was being made: it never runs.
		_ = clonedProc.Kill()
	}
	if err := a.ctrl.Resume(a.launch.AttemptId, "clone"); err != nil {
		_ = clonedProc.Kill()
		_, _ = clonedProc.Wait()
		return fmt.Errorf("handing the clone its identity: %w", err)
	}
	go a.wait()
	tt.log.Info("attempt cloned", "attempt", a.launch.AttemptId, "source", sourceID, "pid", r.Pid,
		"dump", dumpDone.Sub(began), "copy", copyDone.Sub(dumpDone), "restore", restoreDone.Sub(copyDone),
		"image_bytes", ds.ImageBytes, "file_bytes", fileBytes)
	return nil
}

// outputDirs gives the output attempt directories of an attempt and of its
// clone, when the attempt writes output files (a reduce, a map-only map)
// to local storage and has created its directory.
func outputDirs(l *mrpb.LaunchTask, cloneID string) (from, to string, ok bool) {
	var spec mr.JobSpec
	if json.Unmarshal(l.SpecJson, &spec) != nil || spec.Output == "" {
		return "", "", false
	}
	c, err := mr.NewCommitter(spec.Output)
	if err != nil {
		return "", "", false
	}
	from, err1 := mrfs.LocalPath(c.AttemptDir(l.AttemptId))
	to, err2 := mrfs.LocalPath(c.AttemptDir(cloneID))
	if err1 != nil || err2 != nil {
		return "", "", false
	}
	if st, err := os.Stat(from); err != nil || !st.IsDir() {
		return "", "", false
	}
	return from, to, true
}

// dirCopy copies a directory of a quiesced attempt for its clone: the
// files and sizes are noted while the original is quiet, and copied up to
// those sizes after it went on. A map's announced spills are not copied:
// reducers fetch them from the original's directory, which its tracker
// keeps until the job ends. The clone's stdout and stderr start empty:
// they are its own logs (opened O_APPEND, so CRIU does not check their
// size).
type dirCopy struct {
	from, to   string
	skipSpills bool
	dirs       []string
	files      []fileSize
}

type fileSize struct {
	rel  string
	size int64
}

func (d *dirCopy) snapshot() error {
	return filepath.WalkDir(d.from, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(d.from, path)
		if err != nil {
			return err
		}
		if e.IsDir() {
			d.dirs = append(d.dirs, rel)
			if d.skipSpills && rel == "spills" {
				return filepath.SkipDir
			}
			return nil
		}
		if !e.Type().IsRegular() {
			return nil
		}
		if rel == "stdout" || rel == "stderr" {
			d.files = append(d.files, fileSize{rel, 0})
			return nil
		}
		info, err := e.Info()
		if err != nil {
			return err
		}
		d.files = append(d.files, fileSize{rel, info.Size()})
		return nil
	})
}

func (d *dirCopy) copy() (int64, error) {
	for _, rel := range d.dirs {
		if err := os.MkdirAll(filepath.Join(d.to, rel), 0o755); err != nil {
			return 0, err
		}
	}
	var total int64
	for _, f := range d.files {
		n, err := copyFile(filepath.Join(d.from, f.rel), filepath.Join(d.to, f.rel), f.size)
		total += n
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// copyFile copies the first size bytes of from to a new file to.
func copyFile(from, to string, size int64) (int64, error) {
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return 0, err
	}
	var n int64
	if size > 0 {
		in, err := os.Open(from)
		if err != nil {
			out.Close()
			return 0, err
		}
		n, err = io.CopyN(out, in, size)
		in.Close()
		if err != nil {
			out.Close()
			return n, fmt.Errorf("copying %s: %w", from, err)
		}
	}
	return n, out.Close()
}
