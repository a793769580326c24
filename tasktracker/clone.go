package tasktracker

import (
	"archive/tar"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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
// only. It runs once, when the tracker starts: a CRIU that is absent is
// the common case (CRIU needs root), so it is logged at INFO, once per
// tracker; a probe cut short by the tracker stopping logs nothing, as it
// says nothing about CRIU.
func (tt *TaskTracker) probeCRIU(ctx context.Context) {
	if ctx.Err() != nil {
		return
	}
	path := tt.cfg.String("mapreduce.tasktracker.criu.path")
	if path == "" {
		tt.log.Info("cloning disabled: mapreduce.tasktracker.criu.path is empty; speculative attempts will be fresh")
		return
	}
	pctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	info, err := criu.Probe(pctx, path)
	if err != nil {
		if ctx.Err() != nil {
			tt.log.Debug("CRIU probe cut short: the tracker is stopping", "path", path, "error", err)
			return
		}
		tt.log.Info("CRIU unavailable: speculative attempts will be fresh, never clones", "path", path, "error", err)
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
	// Incremental dumps need the kernel's soft-dirty bits (spec §5.8).
	switch ok, why, err := criu.DirtyTracking(pctx, info.Path); {
	case err != nil:
		tt.dirtyWhy = "the check failed: " + err.Error()
		tt.log.Warn("cannot tell whether CRIU can track memory: every checkpoint will be a full dump", "error", err)
	case !ok:
		tt.dirtyWhy = "CRIU cannot track memory on this kernel (soft-dirty bits, CONFIG_MEM_SOFT_DIRTY): " + why
		tt.log.Info("CRIU cannot track memory on this kernel (soft-dirty bits, CONFIG_MEM_SOFT_DIRTY): every checkpoint will be a full dump", "criu", why)
	default:
		tt.dirtyWhy = "the attempt's process has no earlier image of its own to dump against"
	}
	tt.criuPath = info.Path
	tt.log.Info("CRIU available: running attempts can be cloned", "path", info.Path, "version", info.Version)
}

// cloneable tells whether this tracker can clone attempts.
func (tt *TaskTracker) cloneable() bool { return tt.criuPath != "" }

// clone makes a new attempt on this tracker by cloning a running one,
// here or on another tracker. The source's tracker checkpoints it (see
// serveCheckpoint: quiet point, CRIU dump with the original left running,
// the clone's file set noted) and streams the image and the file set over
// HTTP; this tracker unpacks them into the clone's own directories and
// restores the image in a private mount namespace where those directories
// are bind-mounted over the original's paths, so that the clone writes its
// own files. The clone then takes its new attempt id and this tracker's
// umbilical from its fresh control pipe. On any failure the new attempt is
// reported FAILED with the reason in its clone stats, and the JobTracker
// falls back to a fresh attempt.
func (tt *TaskTracker) clone(ctx context.Context, c *mrpb.CloneAttempt) {
	l := c.Launch
	a, err := tt.register(l)
	if errors.Is(err, errKnownAttempt) {
		tt.log.Debug("clone of a known attempt ignored", "attempt", l.AttemptId)
		return
	} else if err != nil {
		tt.log.Error("clone refused", "attempt", l.AttemptId, "error", err)
		return
	}
	a.mu.Lock()
	a.cloneStats = &mrpb.CloneStats{SourceAttempt: c.SourceAttempt}
	a.cloning = true
	a.mu.Unlock()
	go func() {
		err := tt.cloneFrom(ctx, a, c)
		a.mu.Lock()
		a.cloning = false
		if err != nil {
			a.cloneStats.Error = err.Error()
			a.state, a.diag, a.finish = "FAILED", "clone failed: "+err.Error(), time.Now()
			tt.prom.clones.WithLabelValues("failed").Inc()
			tt.prom.attemptEnded(l, a.state, nil) // before a heartbeat can report the end
		} else {
			tt.prom.clones.WithLabelValues("succeeded").Inc()
		}
		a.mu.Unlock()
		if err != nil {
			tt.log.Warn("clone failed", "attempt", l.AttemptId, "source", c.SourceAttempt, "error", err)
			close(a.exited)
			tt.poke()
		}
	}()
}

func (tt *TaskTracker) cloneFrom(ctx context.Context, a *taskAttempt, c *mrpb.CloneAttempt) error {
	if !tt.cloneable() {
		return errors.New("CRIU is not available on tracker " + tt.name)
	}
	imgDir := filepath.Join(tt.jobDir(a.launch.JobId), a.launch.AttemptId+".criu")
	if err := os.MkdirAll(imgDir, 0o755); err != nil {
		return err
	}
	defer os.RemoveAll(imgDir)
	_, outTo, _ := outputDirs(a.launch, c.SourceAttempt, a.launch.AttemptId)

	began := time.Now()
	cp, err := fetchCheckpoint(ctx, tt.httpTransport(), c.SourceAddress, a.launch, c.SourceAttempt,
		map[string]string{"img": imgDir, "attempt": a.dir, "output": outTo})
	if err != nil {
		return err
	}
	cp.sourceAttempt, cp.from = c.SourceAttempt, c.SourceAddress
	return tt.restoreAttempt(ctx, a, cp, imgDir, began, time.Now(), "clone")
}

// restoreAttempt restores the checkpoint cp, whose image is in imgDir and
// whose file set is already in attempt a's directories, as attempt a of
// this tracker: in a private mount namespace where a's directories are
// bind-mounted over the source's paths, so that the restored process
// writes its own files; then it hands the process a's attempt id, this
// tracker's umbilical and a's token through its fresh control pipe. began
// is when the transfer of the checkpoint began, received when it ended;
// a's stats (its clone or restore stats, by kind) get the times. It is the
// one restore path of clones and of preempted attempts.
func (tt *TaskTracker) restoreAttempt(ctx context.Context, a *taskAttempt, cp *checkpoint, imgDir string, began, received time.Time, kind string) error {
	source := cp.sourceAttempt
	outFrom, outTo, hasOutput := outputDirs(a.launch, source, a.launch.AttemptId)
	// The bind mounts need the original's paths to exist here (on another
	// host they would not): empty directories do.
	// The targets are the paths the process uses: its first attempt's,
	// when the source was itself restored or cloned (it runs with its
	// directories bound over them).
	binds := []criu.Bind{{Source: a.dir, Target: cp.sourceDir}}
	if cp.sourceOutput != "" {
		if !hasOutput || filepath.Dir(cp.sourceOutput) != filepath.Dir(outFrom) || !validID(filepath.Base(cp.sourceOutput)) {
			return fmt.Errorf("the source's output directory %s is not one of this job's (%s)", cp.sourceOutput, filepath.Dir(outFrom))
		}
		binds = append(binds, criu.Bind{Source: outTo, Target: cp.sourceOutput})
	}
	for _, b := range binds {
		if err := os.MkdirAll(b.Source, 0o755); err != nil {
			return err
		}
		if err := os.MkdirAll(b.Target, 0o755); err != nil {
			return err
		}
	}
	if os.Getenv(CloneFaultEnv) == "restore" {
		// Fault injection (tests): a damaged image, as a failed transfer
		// or a full disk would leave it.
		if err := os.Truncate(filepath.Join(imgDir, "inventory.img"), 0); err != nil {
			return fmt.Errorf("fault injection: %w", err)
		}
	}
	var r criu.Restored
	err := tt.cr.run(ctx, crRestore, restoreEstimate(cp.imageBytes), func() error {
		// No child may start while CRIU holds the clone's pipe end
		// inheritable: it would inherit a copy.
		tt.forkMu.Lock()
		defer tt.forkMu.Unlock()
		var err error
		r, err = criu.Restore(ctx, tt.criuPath, criu.RestoreSpec{
			ImagesDir: imgDir, WorkDir: imgDir, CtrlInode: cp.ctrlInode, Binds: binds,
		})
		return err
	})
	if err != nil {
		return fmt.Errorf("restoring the %s of %s: %w", kind, source, err)
	}
	restored := time.Now()
	clonedProc, err := os.FindProcess(r.Pid)
	if err != nil {
		_ = r.Ctrl.Close()
		return fmt.Errorf("finding the restored %s (pid %d): %w", kind, r.Pid, err)
	}
	a.mu.Lock()
	a.proc = clonedProc
	a.ctrl = r.Ctrl
	a.nsDir, a.nsOutput = cp.sourceDir, cp.sourceOutput
	a.progress = cp.progress
	a.start = began
	a.lastProgress = time.Now()
	cs := a.cloneStats
	if kind != "clone" {
		cs = a.restoreStats
	}
	cs.DumpMs = cp.dump.Milliseconds()
	cs.CopyMs = max(received.Sub(began)-cp.dump, 0).Milliseconds()
	cs.RestoreMs = restored.Sub(received).Milliseconds()
	cs.ImageBytes = cp.imageBytes
	cs.FileSetBytes = cp.fileBytes
	cs.StartProgress = cp.progress
	killed := a.killReason != ""
	a.mu.Unlock()
	if killed {
		// Killed while it was being made: it never runs.
		_ = clonedProc.Kill()
	}
	line := fmt.Sprintf("resume %s clone %s %s\n", a.launch.AttemptId, tt.umbAddr, a.token)
	if _, err := r.Ctrl.W.Write([]byte(line)); err != nil {
		_ = clonedProc.Kill()
		_, _ = clonedProc.Wait()
		return fmt.Errorf("handing the %s its identity: %w", kind, err)
	}
	go a.wait()
	verb := map[bool]string{true: "attempt cloned", false: "attempt restored"}[kind == "clone"]
	tt.log.Info(verb, "attempt", a.launch.AttemptId, "source", source, "from", cp.from,
		"pid", r.Pid, "dump", cp.dump, "transfer", received.Sub(began)-cp.dump, "restore", restored.Sub(received),
		"image_bytes", cp.imageBytes, "file_bytes", cp.fileBytes)
	return nil
}

// checkpoint is a dumped attempt ready to be sent to the tracker that
// restores its clone.
type checkpoint struct {
	sourceAttempt string
	from          string // where it came from (a tracker's shuffle address, or "local")
	progress      float32
	dump          time.Duration // quiesce plus dump
	imageBytes    int64
	fileBytes     int64
	ctrlInode     uint64
	sourceDir     string // the attempt directory the process uses (its first attempt's)
	sourceOutput  string // the output attempt directory the process uses, if any
	img           string // directory of the image
	files         []dirCopy

	// quiesce (the request to the quiet point), queued (the wait for the
	// checkpoint/restore queue) and criu (CRIU's dump) split dump; frozen
	// is CRIU's own figure for the time the task was frozen (the rest of
	// criu is CRIU's start-up and end).
	quiesce, queued, criu, frozen time.Duration
}

// checkpointAttempt brings attempt src to a quiet point, notes the files a
// clone needs, dumps it into imgDir with CRIU (through the tracker's
// checkpoint/restore queue) and resumes it: the original goes on as soon
// as the dump is done. With stop (a checkpoint for preemption), the dump
// ends the process instead, and the attempt's end is held (holdEnd) for
// the caller to settle: on success CRIU has ended it; on failure it is
// left parked at its quiet point, for the caller to kill.
//
// class is the dump's class in the checkpoint/restore queue (crCloneDump
// for a clone, a preemption dump's by its reason). early, when not nil (a
// preemption dump that frees the slot before it ends), says when to call
// its release: once the child is parked at its quiet point, before the
// queue; or once CRIU has frozen the process tree (every thread traced:
// it runs none of its own code until it ends), while the image is still
// being written, and then not when the dump fails before the freeze or
// the freeze was not seen before the dump ended.
func (tt *TaskTracker) checkpointAttempt(ctx context.Context, src *taskAttempt, cloneID, imgDir string, stop bool, class crClass, early *earlyRelease) (*checkpoint, error) {
	if !tt.cloneable() {
		return nil, errors.New("CRIU is not available on tracker " + tt.name)
	}
	sourceID := src.launch.AttemptId
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	src.mu.Lock()
	for stop && src.crCancel != nil {
		// A clone's checkpoint holds the process: drop it and wait.
		drop, dropped := src.crCancel, src.crDone
		src.mu.Unlock()
		if err := tt.dropCloneDump(ctx, sourceID, drop, dropped); err != nil {
			return nil, err
		}
		src.mu.Lock()
	}
	ctrl, proc, state := src.ctrl, src.proc, src.state
	busy := src.cloning
	done := make(chan struct{})
	if ctrl != nil && state == "RUNNING" && !busy {
		src.cloning = true
		src.quiet = make(chan quietReport, 1)
		src.crDone = done
		if !stop {
			src.crCancel = cancel
		}
	}
	quiet := src.quiet
	src.mu.Unlock()
	switch {
	case ctrl == nil || proc == nil:
		return nil, fmt.Errorf("source attempt %s has no control pipe", sourceID)
	case state != "RUNNING":
		return nil, fmt.Errorf("source attempt %s is %s", sourceID, state)
	case busy:
		return nil, fmt.Errorf("source attempt %s is being cloned or checkpointed already", sourceID)
	}
	parked := false // the child is waiting on its pipe to be resumed
	defer func() {
		src.mu.Lock()
		src.cloning, src.quiet = false, nil
		src.crDone, src.crCancel = nil, nil
		close(done)
		src.mu.Unlock()
		if !parked {
			// A quiet report that came in as we gave up: the child
			// waits for its resume line.
			select {
			case q := <-quiet:
				parked = q.refused == ""
			default:
			}
		}
		if parked && !stop {
			if err := ctrl.Resume(sourceID, "orig"); err != nil {
				tt.log.Error("could not resume a quiesced attempt", "attempt", sourceID, "error", err)
			}
		}
	}()

	began := time.Now()
	if _, err := ctrl.W.Write([]byte("quiesce\n")); err != nil {
		return nil, fmt.Errorf("asking %s to quiesce: %w", sourceID, err)
	}
	cp := &checkpoint{sourceAttempt: sourceID, sourceDir: src.dir, img: imgDir}
	src.mu.Lock()
	if src.nsDir != "" {
		cp.sourceDir = src.nsDir
	}
	nsOutput := src.nsOutput
	src.mu.Unlock()
	select {
	case q := <-quiet:
		if q.refused != "" {
			return nil, fmt.Errorf("source attempt %s cannot be quiesced now: %s", sourceID, q.refused)
		}
		parked = true
		cp.progress = q.progress
		cp.quiesce = time.Since(began)
	case <-src.exited:
		return nil, fmt.Errorf("source attempt %s ended before its quiet point", sourceID)
	case <-time.After(quiesceTimeout):
		return nil, fmt.Errorf("source attempt %s did not reach a quiet point within %v", sourceID, quiesceTimeout)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	// The child is quiet: its files hold exactly what the process wrote
	// so far. Note their sizes now, since the original writes on once it
	// is resumed, and the clone's copies must match its image.
	cp.files = []dirCopy{{name: "attempt", from: src.dir, skipSpills: src.launch.Type == "m"}}
	if from, _, ok := outputDirs(src.launch, sourceID, cloneID); ok {
		cp.sourceOutput = from
		if nsOutput != "" {
			cp.sourceOutput = nsOutput
		}
		cp.files = append(cp.files, dirCopy{name: "output", from: from})
	}
	for i := range cp.files {
		if err := cp.files[i].snapshot(); err != nil {
			return nil, fmt.Errorf("listing the working files of %s: %w", sourceID, err)
		}
		cp.fileBytes += cp.files[i].bytes()
	}
	ino, err := criu.PipeInode(ctrl.W)
	if err != nil {
		return nil, err
	}
	cp.ctrlInode = ino
	if stop {
		src.mu.Lock()
		src.holdEnd = true
		src.mu.Unlock()
	}
	var frozen func()
	if early != nil && early.atQuiet {
		early.release()
	} else if early != nil {
		frozen = early.release
	}
	var ds criu.DumpStats
	queuedFrom := time.Now()
	err = tt.cr.run(ctx, class, dumpEstimate(residentBytes(proc.Pid)), func() error {
		criuFrom := time.Now()
		cp.queued = criuFrom.Sub(queuedFrom)
		defer func() { cp.criu = time.Since(criuFrom) }()
		switch fault := os.Getenv(CloneFaultEnv); {
		case stop && fault == "dump":
			// Fault injection (tests): CRIU refusing the dump.
			return errors.New("fault injection: dump refused")
		case stop && fault == "dump-after-release" && early != nil:
			// Fault injection (tests): the dump failing once the slot
			// was freed (with release-slot=frozen the process, parked at
			// its quiet point, is not really frozen: it is killed all the
			// same).
			early.release()
			return errors.New("fault injection: dump failed after the slot was released")
		}
		// CRIU's work directory (its log, its stats, and the helper that
		// dumps a process in another mount namespace) is on the tracker's
		// local disk, not beside the image: a checkpoint directory that
		// fills up must not also swallow the log line that says so. The
		// error carries the log's lines; the directory goes after the dump.
		work := filepath.Join(tt.jobDir(src.launch.JobId), cloneID+".criu-work")
		defer os.RemoveAll(work)
		stopWatch := watchFreeze(proc.Pid, frozen)
		var err error
		ds, err = criu.DumpWith(ctx, tt.criuPath, proc.Pid, imgDir, work, criu.DumpOptions{Stop: stop})
		stopWatch()
		return err
	})
	cp.dump = time.Since(began)
	if !stop {
		if err := ctrl.Resume(sourceID, "orig"); err == nil {
			parked = false
		}
	} else if err == nil {
		parked = false // CRIU ended it
	}
	if err != nil {
		return nil, fmt.Errorf("dumping %s: %w", sourceID, err)
	}
	cp.imageBytes, cp.frozen = ds.ImageBytes, ds.Frozen
	return cp, nil
}

// cloneDropWait bounds how long a preemption dump waits for the clone
// dump it dropped to end: a CRIU dump that has started runs to its end.
const cloneDropWait = time.Minute

// dropCloneDump makes way for a preemption dump of attempt id: the
// clone's checkpoint of it in progress is dropped (drop; it ends with an
// error, and the tracker restoring the clone falls back to a fresh
// attempt) and waited for (done is closed when it ended); when it is past
// dropping (its CRIU dump runs), it ends first. Spec §5.10: never two CRIU
// operations on one process, the preemption dump first.
func (tt *TaskTracker) dropCloneDump(ctx context.Context, id string, drop context.CancelFunc, done <-chan struct{}) error {
	tt.log.Info("clone of an attempt dropped for its preemption dump", "attempt", id)
	drop()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(cloneDropWait):
		return fmt.Errorf("the clone dump of %s did not end within %v", id, cloneDropWait)
	}
}

// outputDirs gives the output attempt directories of attempt "from" and
// of its clone "to", when the task writes output files (a reduce, a
// map-only map) to local storage; ok reports whether from's exists.
func outputDirs(l *mrpb.LaunchTask, from, to string) (fromDir, toDir string, ok bool) {
	var spec mr.JobSpec
	if json.Unmarshal(l.SpecJson, &spec) != nil || spec.Output == "" {
		return "", "", false
	}
	c, err := mr.NewCommitter(spec.Output)
	if err != nil {
		return "", "", false
	}
	fromDir, err1 := mrfs.LocalPath(c.AttemptDir(from))
	toDir, err2 := mrfs.LocalPath(c.AttemptDir(to))
	if err1 != nil || err2 != nil {
		return "", "", false
	}
	st, err := os.Stat(fromDir)
	return fromDir, toDir, err == nil && st.IsDir()
}

// dirCopy is a directory of a quiesced attempt that its clone needs: the
// files and sizes are noted while the original is quiet, and sent up to
// those sizes after it went on. A map's announced spills are not sent:
// reducers fetch them from the original's directory, which its tracker
// keeps until the job ends. The clone's stdout and stderr start empty:
// they are its own logs (opened O_APPEND, so CRIU does not check their
// size).
type dirCopy struct {
	name       string // "attempt" or "output": where the receiver puts it
	from       string
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

func (d *dirCopy) bytes() int64 {
	var n int64
	for _, f := range d.files {
		n += f.size
	}
	return n
}

// writeTar sends the noted directories and files, each file cut at its
// noted size.
func (d *dirCopy) writeTar(tw *tar.Writer) error {
	for _, rel := range d.dirs {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d.name + "/" + filepath.ToSlash(rel) + "/", Mode: 0o755}); err != nil {
			return err
		}
	}
	for _, f := range d.files {
		if err := tarFile(tw, d.name+"/"+filepath.ToSlash(f.rel), filepath.Join(d.from, f.rel), f.size); err != nil {
			return err
		}
	}
	return nil
}

// tarFile writes the first size bytes of path as entry name.
func tarFile(tw *tar.Writer, name, path string, size int64) error {
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: size}); err != nil {
		return err
	}
	if size == 0 {
		return nil
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := io.CopyN(tw, f, size); err != nil {
		return fmt.Errorf("sending %s: %w", path, err)
	}
	return nil
}

// ---- the checkpoint transfer between trackers ----

// CheckpointPath is the URL path on a tracker's shuffle server that
// checkpoints one of its attempts for a clone and streams the result.
const CheckpointPath = "/cloneAttempt"

// Headers of the checkpoint transfer.
const (
	cloneHashHeader     = "X-MR-Clone-Hash"
	cloneTimeHeader     = "X-MR-Clone-Time"
	cloneProgressHeader = "X-MR-Clone-Progress"
	cloneDumpHeader     = "X-MR-Clone-Dump-Ns"
	cloneImageHeader    = "X-MR-Clone-Image-Bytes"
	cloneFilesHeader    = "X-MR-Clone-File-Bytes"
	cloneInodeHeader    = "X-MR-Clone-Ctrl-Inode"
	cloneDirHeader      = "X-MR-Clone-Source-Dir"
	cloneOutputHeader   = "X-MR-Clone-Source-Output"
)

// cloneHash authenticates a checkpoint request: the HMAC-SHA256, keyed
// with the job's secret, of the length-prefixed job, source and clone ids
// and the time of the request (Unix milliseconds), which must fall within
// the shuffle request window of the server's clock.
func cloneHash(secret []byte, job, source, clone string, at int64) string {
	mac := hmac.New(sha256.New, secret)
	fmt.Fprintf(mac, "clone %d:%s %d:%s %d:%s %d", len(job), job, len(source), source, len(clone), clone, at)
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// serveCheckpoint answers a tracker that is to restore a clone of one of
// this tracker's attempts: it checks the request's signature with the
// job's secret, checkpoints the attempt and streams the image and the
// clone's file set as a tar archive.
func (tt *TaskTracker) serveCheckpoint(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	q := r.URL.Query()
	job, source, cloneID := q.Get("job"), q.Get("attempt"), q.Get("clone")
	if !validID(job) || !validID(source) || !validID(cloneID) {
		http.Error(w, "bad job, attempt or clone id", http.StatusBadRequest)
		return
	}
	tt.mu.Lock()
	lj := tt.jobs[job]
	src := tt.attempts[source]
	tt.mu.Unlock()
	at, err := strconv.ParseInt(r.Header.Get(cloneTimeHeader), 10, 64)
	if lj == nil || err != nil || !hmac.Equal([]byte(r.Header.Get(cloneHashHeader)), []byte(cloneHash(lj.secret, job, source, cloneID, at))) {
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	if age := time.Since(time.UnixMilli(at)); age > tt.requestWindow || age < -tt.requestWindow {
		tt.log.Warn("checkpoint request outside its time window refused (replayed, or clocks apart)", "remote", r.RemoteAddr, "clone", cloneID, "age", age.Round(time.Millisecond))
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	if img := tt.storedImage(job, source); img != nil {
		// A preempted attempt's image, kept here: sent as it is.
		tt.sendStoredImage(w, img, cloneID)
		return
	}
	if src == nil || src.launch.JobId != job {
		http.Error(w, fmt.Sprintf("attempt %s is not running on tracker %s", source, tt.name), http.StatusNotFound)
		return
	}
	imgDir := filepath.Join(tt.jobDir(job), cloneID+".ckpt")
	if err := os.MkdirAll(imgDir, 0o755); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	defer os.RemoveAll(imgDir)
	cp, err := tt.checkpointAttempt(r.Context(), src, cloneID, imgDir, false, crCloneDump, nil)
	if err != nil {
		tt.prom.checkpoints.WithLabelValues("failed").Inc()
		http.Error(w, err.Error(), http.StatusConflict)
		return
	}
	setCheckpointHeaders(w.Header(), cp)
	tw := tar.NewWriter(w)
	err = func() error {
		if err := tarImage(tw, imgDir); err != nil {
			return err
		}
		for i := range cp.files {
			if err := cp.files[i].writeTar(tw); err != nil {
				return err
			}
		}
		return tw.Close()
	}()
	if err != nil {
		// The receiver sees a truncated archive and fails the clone.
		tt.log.Warn("sending a checkpoint failed", "attempt", source, "clone", cloneID, "error", err)
		tt.prom.checkpoints.WithLabelValues("failed").Inc()
		return
	}
	tt.prom.checkpoints.WithLabelValues("sent").Inc()
}

// setCheckpointHeaders describes checkpoint cp in the headers of its transfer.
func setCheckpointHeaders(h http.Header, cp *checkpoint) {
	h.Set("Content-Type", "application/x-tar")
	h.Set(cloneProgressHeader, strconv.FormatFloat(float64(cp.progress), 'g', -1, 32))
	h.Set(cloneDumpHeader, strconv.FormatInt(int64(cp.dump), 10))
	h.Set(cloneImageHeader, strconv.FormatInt(cp.imageBytes, 10))
	h.Set(cloneFilesHeader, strconv.FormatInt(cp.fileBytes, 10))
	h.Set(cloneInodeHeader, strconv.FormatUint(cp.ctrlInode, 10))
	h.Set(cloneDirHeader, cp.sourceDir)
	h.Set(cloneOutputHeader, cp.sourceOutput)
}

// tarImage sends the regular files of a CRIU image directory under "img/".
func tarImage(tw *tar.Writer, imgDir string) error {
	ents, err := os.ReadDir(imgDir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		info, err := e.Info()
		if err != nil || !info.Mode().IsRegular() {
			continue
		}
		if err := tarFile(tw, "img/"+e.Name(), filepath.Join(imgDir, e.Name()), info.Size()); err != nil {
			return err
		}
	}
	return nil
}

// httpTransport is the transport to other trackers' HTTP servers: TLS
// with the tracker's certificate, or nil (plain HTTP) with TLS off.
func (tt *TaskTracker) httpTransport() http.RoundTripper {
	if tt.tls == nil {
		return nil
	}
	return tt.tls.Transport(nil)
}

// fetchCheckpoint asks the tracker at addr (its shuffle server, over
// HTTPS through rt, or plain HTTP when rt is nil) to checkpoint attempt
// source of the clone's job and unpacks what it sends:
// entries under "img/", "attempt/" and "output/" go to the directories
// dirs names for those prefixes.
func fetchCheckpoint(ctx context.Context, rt http.RoundTripper, addr string, l *mrpb.LaunchTask, source string, dirs map[string]string) (*checkpoint, error) {
	scheme := "http"
	if rt != nil {
		scheme = "https"
	}
	u := url.URL{Scheme: scheme, Host: addr, Path: CheckpointPath,
		RawQuery: url.Values{"job": {l.JobId}, "attempt": {source}, "clone": {l.AttemptId}}.Encode()}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), nil)
	if err != nil {
		return nil, err
	}
	at := time.Now().UnixMilli()
	req.Header.Set(cloneHashHeader, cloneHash(l.JobSecret, l.JobId, source, l.AttemptId, at))
	req.Header.Set(cloneTimeHeader, strconv.FormatInt(at, 10))
	client := &http.Client{Transport: rt, Timeout: 10 * time.Minute}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("checkpoint of %s from %s: %w", source, addr, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return nil, fmt.Errorf("checkpoint of %s from %s: %s: %s", source, addr, resp.Status, strings.TrimSpace(string(msg)))
	}
	h := resp.Header
	cp := &checkpoint{sourceDir: h.Get(cloneDirHeader), sourceOutput: h.Get(cloneOutputHeader)}
	p, err1 := strconv.ParseFloat(h.Get(cloneProgressHeader), 32)
	dump, err2 := strconv.ParseInt(h.Get(cloneDumpHeader), 10, 64)
	cp.imageBytes, _ = strconv.ParseInt(h.Get(cloneImageHeader), 10, 64)
	cp.fileBytes, _ = strconv.ParseInt(h.Get(cloneFilesHeader), 10, 64)
	ino, err3 := strconv.ParseUint(h.Get(cloneInodeHeader), 10, 64)
	if err := errors.Join(err1, err2, err3); err != nil || !filepath.IsAbs(cp.sourceDir) {
		return nil, fmt.Errorf("checkpoint of %s from %s: bad headers (source dir %q): %v", source, addr, cp.sourceDir, err)
	}
	cp.progress, cp.dump, cp.ctrlInode = float32(p), time.Duration(dump), ino
	tr := tar.NewReader(resp.Body)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return cp, nil
		}
		if err != nil {
			return nil, fmt.Errorf("checkpoint of %s from %s: %w", source, addr, err)
		}
		prefix, rel, ok := strings.Cut(hdr.Name, "/")
		base := dirs[prefix]
		clean := filepath.Clean(filepath.FromSlash(rel))
		if !ok || base == "" || clean == ".." || strings.HasPrefix(clean, "../") || filepath.IsAbs(clean) {
			return nil, fmt.Errorf("checkpoint of %s from %s: unexpected entry %q", source, addr, hdr.Name)
		}
		dst := filepath.Join(base, clean)
		switch hdr.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(dst, 0o755); err != nil {
				return nil, err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				return nil, err
			}
			f, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
			if err != nil {
				return nil, err
			}
			_, err = io.Copy(f, tr)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return nil, fmt.Errorf("checkpoint of %s from %s: writing %s: %w", source, addr, dst, err)
			}
		}
	}
}
