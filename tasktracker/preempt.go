package tasktracker

// Preemption by checkpoint (spec/preemption-elasticity.md §5.6, §5.7): on
// the JobTracker's order the tracker dumps a running attempt with CRIU,
// ending its process, keeps the image and a snapshot of the attempt's
// working files under its local directory, and reports the attempt
// CHECKPOINTED (the slot is free from then on). A later launch that names
// the image restores it as a new attempt: here, from the kept files, or on
// another tracker, which fetches them over the signed checkpoint endpoint
// (serveCheckpoint) as a clone's are fetched. The quiet point, the dump,
// the restore and the re-binding of the attempt id are the clone's
// (clone.go); every CRIU operation of the tracker goes through one queue.

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"gomr/mrpb"
)

// stateCheckpointed is the state of an attempt ended by a dump whose image
// this tracker keeps.
const stateCheckpointed = "CHECKPOINTED"

// ---- kept images ----

// storedImage is a preempted attempt's checkpoint kept by this tracker:
// the image in dir/img, the attempt's working files in dir/attempt and
// its output attempt directory (if any) in dir/output, as they were at
// the dump.
type storedImage struct {
	job, attempt string
	dir          string
	cp           checkpoint // what the transfer headers and the restore need
}

func (s *storedImage) imgDir() string { return filepath.Join(s.dir, "img") }

// storedImage returns the kept image of attempt of job, or nil.
func (tt *TaskTracker) storedImage(job, attempt string) *storedImage {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	if img := tt.images[attempt]; img != nil && img.job == job {
		return img
	}
	return nil
}

// dropImage forgets a kept image and removes its files, on the
// JobTracker's order (DropImage): the task has a newer image, or no longer
// needs this one. Until then the image stays after a restore, so that a
// restored attempt that is killed resumes from it again (a task keeps one
// image, spec §5.3 "Kill after an earlier image").
func (tt *TaskTracker) dropImage(img *storedImage) {
	tt.mu.Lock()
	if tt.images[img.attempt] == img {
		delete(tt.images, img.attempt)
	}
	tt.mu.Unlock()
	if err := os.RemoveAll(img.dir); err != nil {
		tt.log.Warn("removing a used checkpoint image", "attempt", img.attempt, "error", err)
	}
}

// checkpointForPreemption carries out a CheckpointAttempt order in the
// background: quiet point, dump ending the process, snapshot of the working
// files; then the attempt is CHECKPOINTED with its stats, or, when any of
// it failed, killed (KILLED, the reason in its checkpoint stats) so that
// the task runs again from scratch. The slot is free only once it ended
// either way. Incremental dumps need a parent image of the same process
// made with memory tracking (spec §5.8), which the tracker never has: a
// preemption dump ends the process, a restore makes a new one, a clone's
// dump is not kept, and on kernels without soft-dirty bits CRIU cannot
// track memory at all (probeCRIU says which). An incremental order is
// therefore carried out as a full dump, says why, and is reported as not
// incremental.
func (tt *TaskTracker) checkpointForPreemption(ctx context.Context, c *mrpb.CheckpointAttempt) {
	tt.mu.Lock()
	a := tt.attempts[c.AttemptId]
	tt.mu.Unlock()
	if a == nil {
		tt.log.Debug("checkpoint of an unknown attempt ignored", "attempt", c.AttemptId)
		return
	}
	a.mu.Lock()
	dup := a.ckptStats != nil
	if !dup {
		a.ckptStats = &mrpb.CheckpointStats{}
	}
	a.mu.Unlock()
	if dup {
		return // the order of a reply thought lost, sent again
	}
	if c.Incremental {
		tt.log.Info("incremental checkpoint ordered; dumping in full", "attempt", c.AttemptId, "why", tt.dirtyWhy)
	}
	go func() {
		st, err := tt.preempt(ctx, a, preemptDumpClass(c.Reason), c.ReleaseSlot)
		a.mu.Lock()
		if err != nil {
			a.ckptStats.Error = err.Error()
			held := a.holdEnd
			a.holdEnd = false
			if !held && terminal(a.state) {
				// It ended on its own before it could be dumped (it
				// finished, failed, or was killed): its end stands.
				a.mu.Unlock()
				tt.log.Info("checkpoint for preemption not made: the attempt ended first", "attempt", a.launch.AttemptId, "error", err)
				return
			}
			if a.killReason == "" {
				a.killReason = "checkpoint for preemption failed: " + err.Error()
			}
			select {
			case <-a.exited:
				// It ended while its end was held: settle it here.
				a.state, a.diag, a.finish = "KILLED", a.killReason, time.Now()
				tt.prom.attemptEnded(a.launch, a.state, a.counters)
			default:
			}
			proc := a.proc
			a.mu.Unlock()
			if proc != nil {
				_ = proc.Kill() // wait settles it as KILLED
			}
			tt.prom.preemptions.WithLabelValues("failed").Inc()
			tt.log.Warn("checkpoint for preemption failed; the attempt is killed", "attempt", a.launch.AttemptId, "error", err)
			tt.poke()
			return
		}
		st.SlotReleased = a.slotReleased
		a.ckptStats = st
		a.mu.Unlock()
		<-a.exited // CRIU ended it; wait has reaped it
		a.mu.Lock()
		a.state, a.progress, a.finish = stateCheckpointed, st.Progress, time.Now()
		a.diag = "checkpointed for preemption"
		tt.prom.attemptEnded(a.launch, a.state, a.counters)
		a.mu.Unlock()
		tt.prom.preemptions.WithLabelValues("checkpointed").Inc()
		tt.prom.imageBytes.Add(float64(st.ImageBytes + st.FileSetBytes))
		tt.log.Info("attempt checkpointed for preemption", "attempt", a.launch.AttemptId, "dump_ms", st.DumpMs,
			"image_bytes", st.ImageBytes, "file_set_bytes", st.FileSetBytes, "progress", st.Progress)
		tt.poke()
	}()
}

// preempt dumps attempt a, ending it, and keeps its image and files.
// The dump waits in the checkpoint/restore queue as class (its order's
// reason's). release says when the slot is counted free (releaseSlot):
// once the dump is done (RELEASE_DUMPED), once CRIU has frozen the
// process (RELEASE_FROZEN), or once the child is at its quiet point
// (RELEASE_QUIESCED).
func (tt *TaskTracker) preempt(ctx context.Context, a *taskAttempt, class crClass, release mrpb.SlotRelease) (*mrpb.CheckpointStats, error) {
	id := a.launch.AttemptId
	dir := filepath.Join(tt.imageJobDir(a.launch.JobId), id+".image")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	img := &storedImage{job: a.launch.JobId, attempt: id, dir: dir}
	began := time.Now()
	var early *earlyRelease
	switch release {
	case mrpb.SlotRelease_RELEASE_FROZEN:
		early = &earlyRelease{release: func() { tt.releaseSlot(a, began, "freeze") }}
	case mrpb.SlotRelease_RELEASE_QUIESCED:
		early = &earlyRelease{atQuiet: true, release: func() { tt.releaseSlot(a, began, "quiet point") }}
	}
	cp, err := tt.checkpointAttempt(ctx, a, id, img.imgDir(), true, class, early)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	// The process is gone: its files are as the image expects them. Keep
	// copies, cut at the sizes noted at the quiet point, so that nothing
	// done to the attempt's directories later can spoil a restore.
	for i := range cp.files {
		if err := cp.files[i].copyTo(filepath.Join(dir, cp.files[i].name)); err != nil {
			_ = os.RemoveAll(dir)
			return nil, fmt.Errorf("keeping the working files of %s: %w", id, err)
		}
	}
	img.cp = *cp
	img.cp.files = nil
	tt.mu.Lock()
	tt.images[id] = img
	tt.mu.Unlock()
	// Where the time from the order to the slot free goes, on this side.
	tt.log.Info("checkpoint for preemption made", "attempt", id, "class", class.String(), "quiesce", cp.quiesce.Round(time.Millisecond),
		"queued", cp.queued.Round(time.Millisecond), "criu_dump", cp.criu.Round(time.Millisecond), "criu_frozen", cp.frozen.Round(time.Millisecond),
		"keep_files", (time.Since(began) - cp.dump).Round(time.Millisecond), "total", time.Since(began).Round(time.Millisecond),
		"image_bytes", cp.imageBytes, "file_set_bytes", cp.fileBytes)
	return &mrpb.CheckpointStats{DumpMs: cp.dump.Milliseconds(), ImageBytes: cp.imageBytes,
		FileSetBytes: cp.fileBytes, Progress: cp.progress}, nil
}

// earlyRelease frees a preemption victim's slot before its dump ends:
// release is called once, when the child is parked at its quiet point
// (atQuiet) or when CRIU has frozen its process tree.
type earlyRelease struct {
	atQuiet bool
	release func()
}

// releaseSlot counts the slot of attempt a, being dumped for preemption,
// free from now (preemption.checkpoint.release-slot=frozen or quiesced;
// at says which point was reached): the child is parked at its quiet
// point, blocked on its control pipe, or frozen by CRIU; it uses no CPU
// of its own from then on and its memory is only read, so a new task may
// start in the slot while the dump waits or runs. The attempt stays
// RUNNING until the dump ends (then CHECKPOINTED, or KILLED when it
// fails); its status says the slot is free
// (CheckpointStats.slot_released), and an out-of-band heartbeat tells
// the JobTracker at once. Until the dump ends the process's memory and
// the new task's are both resident.
func (tt *TaskTracker) releaseSlot(a *taskAttempt, ordered time.Time, at string) {
	a.mu.Lock()
	if a.slotReleased || terminal(a.state) {
		a.mu.Unlock()
		return
	}
	a.slotReleased = true
	if a.ckptStats != nil {
		a.ckptStats.SlotReleased = true
	}
	a.mu.Unlock()
	tt.log.Info("checkpoint slot released before the dump ended", "attempt", a.launch.AttemptId, "at", at,
		"since_order", time.Since(ordered).Round(time.Millisecond))
	tt.poke()
}

// watchFreeze calls frozen (once, from another goroutine) when every
// thread of the process tree rooted at pid is traced, which is how CRIU
// freezes a tree it dumps (PTRACE_SEIZE, then the parasite runs in it):
// from then on the tree runs none of its own code. It polls /proc every
// freezePoll until the returned stop is called; stop waits for the
// watcher to end. A nil frozen watches nothing.
func watchFreeze(pid int, frozen func()) (stop func()) {
	if frozen == nil {
		return func() {}
	}
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(freezePoll)
		defer tick.Stop()
		for {
			if treeTraced(pid) {
				frozen()
				return
			}
			select {
			case <-quit:
				return
			case <-tick.C:
			}
		}
	}()
	return func() {
		close(quit)
		<-done
	}
}

// freezePoll is how often watchFreeze looks at /proc.
const freezePoll = 2 * time.Millisecond

// treeTraced tells whether every thread of process pid and of its
// descendants has a tracer (false when none can be read).
func treeTraced(pid int) bool {
	threads := 0
	ok := walkProcTree(pid, func(p int, tasks []os.DirEntry, err error) bool {
		if err != nil {
			return false
		}
		for _, t := range tasks {
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/status", p, t.Name()))
			if err != nil || !tracedStatus(string(b)) {
				return false
			}
			threads++
		}
		return true
	})
	return ok && threads > 0
}

// walkProcTree visits process pid and its descendants, breadth first, at
// most 1024 processes: visit gets each one's threads (the entries of
// /proc/<p>/task, or the error reading them) and returns false to stop
// the walk, which then returns false.
func walkProcTree(pid int, visit func(p int, tasks []os.DirEntry, err error) bool) bool {
	seen := map[int]bool{}
	queue := []int{pid}
	for len(queue) > 0 && len(seen) < 1024 {
		p := queue[0]
		queue = queue[1:]
		if seen[p] {
			continue
		}
		seen[p] = true
		tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", p))
		if !visit(p, tasks, err) {
			return false
		}
		for _, t := range tasks {
			c, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", p, t.Name()))
			if err != nil {
				continue
			}
			for _, f := range strings.Fields(string(c)) {
				if n, err := strconv.Atoi(f); err == nil {
					queue = append(queue, n)
				}
			}
		}
	}
	return true
}

// tracedStatus tells whether a /proc/<pid>/status text names a tracer.
func tracedStatus(status string) bool {
	for line := range strings.Lines(status) {
		if v, ok := strings.CutPrefix(line, "TracerPid:"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			return err == nil && n != 0
		}
	}
	return false
}

// copyTo copies the noted directories and files (each cut at its noted
// size) under dst.
func (d *dirCopy) copyTo(dst string) error {
	for _, rel := range d.dirs {
		if err := os.MkdirAll(filepath.Join(dst, rel), 0o755); err != nil {
			return err
		}
	}
	for _, f := range d.files {
		if err := copyFileN(filepath.Join(d.from, f.rel), filepath.Join(dst, f.rel), f.size); err != nil {
			return err
		}
	}
	return nil
}

// copyFileN writes the first n bytes of src to dst (created or truncated).
func copyFileN(src, dst string, n int64) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if n > 0 {
		in, err := os.Open(src)
		if err != nil {
			out.Close()
			return err
		}
		_, err = io.CopyN(out, in, n)
		in.Close()
		if err != nil {
			out.Close()
			return fmt.Errorf("copying %s: %w", src, err)
		}
	}
	return out.Close()
}

// copyTree copies the directory tree src into dst.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		if e.IsDir() {
			return os.MkdirAll(to, 0o755)
		}
		if !e.Type().IsRegular() {
			return nil
		}
		info, err := e.Info()
		if err != nil {
			return err
		}
		return copyFileN(path, to, info.Size())
	})
}

// tarTree sends the directory tree dir under prefix ("attempt/").
func tarTree(tw *tar.Writer, prefix, dir string) error {
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return filepath.WalkDir(dir, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		name := prefix + "/" + filepath.ToSlash(rel)
		if e.IsDir() {
			return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: 0o755})
		}
		if !e.Type().IsRegular() {
			return nil
		}
		info, err := e.Info()
		if err != nil {
			return err
		}
		return tarFile(tw, name, path, info.Size())
	})
}

// sendStoredImage answers a checkpoint request for a kept image: the
// image and the kept files, as serveCheckpoint sends a fresh dump. The
// image stays (dropImage).
func (tt *TaskTracker) sendStoredImage(w http.ResponseWriter, img *storedImage, restoreID string) {
	setCheckpointHeaders(w.Header(), &img.cp)
	tw := tar.NewWriter(w)
	err := func() error {
		if err := tarImage(tw, img.imgDir()); err != nil {
			return err
		}
		for _, part := range []string{"attempt", "output"} {
			if err := tarTree(tw, part, filepath.Join(img.dir, part)); err != nil {
				return err
			}
		}
		return tw.Close()
	}()
	if err != nil {
		tt.log.Warn("sending a kept checkpoint failed", "attempt", img.attempt, "to", restoreID, "error", err)
		tt.prom.checkpoints.WithLabelValues("failed").Inc()
		return
	}
	tt.prom.checkpoints.WithLabelValues("sent").Inc()
}

// restoreLaunch starts a launch that names a preempted attempt's image:
// the image is restored as the new attempt, from this tracker's kept copy
// or fetched from the tracker that keeps it (which keeps it still). A
// restore that fails leaves the attempt FAILED with the reason in its
// restore stats; the JobTracker then drops the image and runs the task
// from scratch.
func (tt *TaskTracker) restoreLaunch(ctx context.Context, l *mrpb.LaunchTask) {
	a, err := tt.register(l)
	if errors.Is(err, errKnownAttempt) {
		tt.log.Debug("restore of a known attempt ignored", "attempt", l.AttemptId)
		return
	} else if err != nil {
		tt.log.Error("restore refused", "attempt", l.AttemptId, "error", err)
		return
	}
	src := l.Restore
	a.mu.Lock()
	a.restoreStats = &mrpb.CloneStats{SourceAttempt: src.SourceAttempt}
	a.cloning = true
	a.mu.Unlock()
	go func() {
		err := tt.restoreFrom(ctx, a, src)
		a.mu.Lock()
		a.cloning = false
		if err != nil {
			a.restoreStats.Error = err.Error()
			a.state, a.diag, a.finish = "FAILED", "restore failed: "+err.Error(), time.Now()
			tt.prom.restores.WithLabelValues("failed").Inc()
			tt.prom.attemptEnded(l, a.state, nil)
		} else {
			tt.prom.restores.WithLabelValues("succeeded").Inc()
		}
		a.mu.Unlock()
		if err != nil {
			tt.log.Warn("restore failed", "attempt", l.AttemptId, "source", src.SourceAttempt, "error", err)
			close(a.exited)
			tt.poke()
		}
	}()
}

func (tt *TaskTracker) restoreFrom(ctx context.Context, a *taskAttempt, src *mrpb.RestoreSource) error {
	if !tt.cloneable() {
		return errors.New("CRIU is not available on tracker " + tt.name)
	}
	_, outTo, _ := outputDirs(a.launch, src.SourceAttempt, a.launch.AttemptId)
	began := time.Now()
	if img := tt.storedImage(a.launch.JobId, src.SourceAttempt); img != nil {
		// Local: the image and the files are here.
		if err := copyTree(filepath.Join(img.dir, "attempt"), a.dir); err != nil {
			return fmt.Errorf("copying the kept files of %s: %w", src.SourceAttempt, err)
		}
		if out := filepath.Join(img.dir, "output"); outTo != "" {
			if _, err := os.Stat(out); err == nil {
				if err := copyTree(out, outTo); err != nil {
					return fmt.Errorf("copying the kept output of %s: %w", src.SourceAttempt, err)
				}
			}
		}
		cp := img.cp
		cp.from, cp.dump = "local", 0 // the dump is the checkpoint's cost, counted there
		return tt.restoreAttempt(ctx, a, &cp, img.imgDir(), began, time.Now(), "restore")
	}
	if src.SourceTracker == tt.name {
		return fmt.Errorf("the image of %s is no longer kept on this tracker", src.SourceAttempt)
	}
	imgDir := filepath.Join(tt.jobDir(a.launch.JobId), a.launch.AttemptId+".criu")
	if err := os.MkdirAll(imgDir, 0o755); err != nil {
		return err
	}
	defer os.RemoveAll(imgDir)
	cp, err := fetchCheckpoint(ctx, tt.httpTransport(), src.SourceAddress, a.launch, src.SourceAttempt,
		map[string]string{"img": imgDir, "attempt": a.dir, "output": outTo})
	if err != nil {
		return err
	}
	// A kept image's dump happened long before: the transfer is the copy.
	cp.dump = 0
	cp.sourceAttempt, cp.from = src.SourceAttempt, src.SourceAddress
	return tt.restoreAttempt(ctx, a, cp, imgDir, began, time.Now(), "restore")
}

// treeResidentBytes is the resident set of process pid and its
// descendants (a task child's process tree), 0 if it cannot be read.
func treeResidentBytes(pid int) int64 {
	var total int64
	walkProcTree(pid, func(p int, _ []os.DirEntry, _ error) bool {
		total += residentBytes(p)
		return true
	})
	return total
}
