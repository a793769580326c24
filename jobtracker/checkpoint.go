package jobtracker

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"gomr/mr"
	"gomr/mrpb"
	"gomr/partitions"
	"gomr/preempt"
)

// Preemption by checkpoint (spec/preemption-elasticity.md §5.3, §5.7): an
// attempt is ordered checkpointed (trackerHost.Checkpoint, or an operator's
// CheckpointTaskAttempt); its tracker dumps it with CRIU and reports it
// CHECKPOINTED, which frees the slot; the task goes back to pending as
// restorable from the image, and its next launch restores the image as a
// new attempt, on the image's tracker or, by the resume rule (preempt.Resume, seed 002 Alg. 2),
// on the tracker offering the slot. A dump that fails ends the attempt
// KILLED and the task runs again from scratch; so does a task whose image
// is lost (its tracker lost, or the restore failing).
//
// A task keeps one image (spec §5.3, "Kill after an earlier image"): a
// restored attempt that is killed resumes from the same image again, so it
// loses only its own run; a restored attempt checkpointed again replaces
// the image (the old one's tracker is told to delete it); an image is
// dropped when the task succeeds, when an attempt of the task fails (it
// may be what the image holds that fails) or its restore fails, and when
// the task was split since (the image would redo the split-off part).

// StateCheckpointed is the state of an attempt dumped for preemption.
const StateCheckpointed = "CHECKPOINTED"

// resumeLocalityWait bounds how long a restorable task waits for a slot on
// its image's tracker before the resume rule counts that wait as over
// (spec §5.7's resume.localityWait).
const resumeLocalityWait = 15 * time.Second

// taskImage is the checkpoint a preempted task resumes from.
type taskImage struct {
	tracker, attempt string
	// bytes is the image plus the working-file snapshot.
	bytes    int64
	progress float32
	// at is when the task became restorable from it; useful is the run
	// time of the task's work the image holds.
	at     time.Time
	useful time.Duration
	// migrate: restore on another tracker than the image's (an order).
	migrate bool
	// failures and cuts are the task's failed attempts and split points
	// when the image was made: more of either makes the image stale.
	failures, cuts int
}

// attemptCkpt is an attempt's part in preemption by checkpoint.
type attemptCkpt struct {
	// ordered is when its checkpoint was ordered (zero: never), migrate
	// whether the task is to resume on another tracker.
	ordered time.Time
	migrate bool
	// released is when its tracker reported the slot free before the
	// dump ended (preemption.checkpoint.release-slot=frozen or quiesced;
	// zero: not yet, or the slot is freed when the attempt ends).
	released time.Time
	// from is the image a restored attempt started from (nil: fresh);
	// restored is set once its restore was counted.
	from     *taskImage
	restored bool
}

// reclaimReasons maps the planner's reasons to the order's: the tracker's
// checkpoint/restore queue runs a deadline's dumps first.
var reclaimReasons = map[preempt.Reason]mrpb.ReclaimReason{
	preempt.ReasonUnspecified:     mrpb.ReclaimReason_RECLAIM_UNSPECIFIED,
	preempt.ReasonPriorityArrival: mrpb.ReclaimReason_RECLAIM_PRIORITY_ARRIVAL,
	preempt.ReasonFairMinShare:    mrpb.ReclaimReason_RECLAIM_FAIR_MIN_SHARE,
	preempt.ReasonFairShare:       mrpb.ReclaimReason_RECLAIM_FAIR_SHARE,
	preempt.ReasonDeadlineAtRisk:  mrpb.ReclaimReason_RECLAIM_DEADLINE_AT_RISK,
}

// checkpointAttemptLocked orders a running attempt checkpointed by its
// tracker in its next heartbeat reply; reason (the reclaim's, or
// unspecified for an operator's order) places its dump in the tracker's
// checkpoint/restore queue.
func (jt *JobTracker) checkpointAttemptLocked(a *attempt, incremental, migrate bool, reason preempt.Reason) error {
	t := jt.trackers[a.tracker]
	switch {
	case a.state != attemptRunning:
		return fmt.Errorf("attempt %s is %s, not running", a.id, a.state)
	case a.task.job.done():
		return fmt.Errorf("the job of attempt %s has ended", a.id)
	case t == nil:
		return fmt.Errorf("the tracker of attempt %s is lost", a.id)
	case !t.criu:
		return fmt.Errorf("tracker %s of attempt %s cannot checkpoint (no CRIU)", a.tracker, a.id)
	case a.ckpt != nil && !a.ckpt.ordered.IsZero():
		return fmt.Errorf("attempt %s is being checkpointed already", a.id)
	case a.ckpt != nil && a.ckpt.from != nil && !a.ckpt.restored:
		// Spec §5.10: its process is not there yet; an order now would
		// fail and kill it.
		return fmt.Errorf("attempt %s is still being restored", a.id)
	}
	if a.ckpt == nil {
		a.ckpt = &attemptCkpt{}
	}
	a.ckpt.ordered, a.ckpt.migrate = jt.now(), migrate
	release := jt.driver.Planner().Config().Release
	t.actions = append(t.actions, &mrpb.TaskAction{Action: &mrpb.TaskAction_Checkpoint{
		Checkpoint: &mrpb.CheckpointAttempt{AttemptId: a.id, Incremental: incremental, ReleaseSlot: slotReleases[release],
			Reason: reclaimReasons[reason]}}})
	jt.log.Info("checkpoint ordered", "attempt", a.id, "tracker", a.tracker, "incremental", incremental, "migrate", migrate,
		"release_slot", release.String(), "reason", reclaimReasons[reason].String())
	return nil
}

// slotReleases maps preemption.checkpoint.release-slot to the order's.
var slotReleases = map[preempt.SlotRelease]mrpb.SlotRelease{
	preempt.ReleaseAtDump:   mrpb.SlotRelease_RELEASE_DUMPED,
	preempt.ReleaseAtFreeze: mrpb.SlotRelease_RELEASE_FROZEN,
	preempt.ReleaseAtQuiet:  mrpb.SlotRelease_RELEASE_QUIESCED,
}

// checkpointSlotReleasedLocked takes in that the tracker of an attempt
// being checkpointed counts its slot free before its dump ended: the
// child is at its quiet point, or frozen by CRIU, and the dump waits or
// runs (the order's release_slot). From now on the
// policies and the planner count the slot free (the driver's end of the
// attempt: the victim leaves the planner's in-flight count, as a kill's
// would); the dump stays in the planner's mirror of the tracker's queue
// (Planner.ReleasedEarly) until the attempt ends, CHECKPOINTED or KILLED
// (dumpEndedLocked). The attempt itself stays live here until then: its
// task is restorable only once the image is kept, and runs again from
// scratch if the dump fails.
func (jt *JobTracker) checkpointSlotReleasedLocked(a *attempt, now time.Time) {
	if a.ckpt == nil || a.ckpt.ordered.IsZero() || !a.ckpt.released.IsZero() {
		return
	}
	a.ckpt.released = now
	jt.trackerChangedLocked(a.tracker) // its row's busy slots
	k := attemptKey(a)
	jt.driver.CheckpointSlotReleased(now, k, now.Sub(a.start))
	// reclaim_ms: from the order to the slot free here.
	jt.log.Info("checkpoint slot released before the dump ended", "attempt", a.id, "tracker", a.tracker,
		"reclaim_ms", now.Sub(a.ckpt.ordered).Milliseconds())
}

// holdsSlot tells whether a live attempt occupies its slot: it does until
// it ends, unless its tracker freed the slot before its checkpoint's dump
// ended.
func (a *attempt) holdsSlot() bool {
	return a.live() && (a.ckpt == nil || a.ckpt.released.IsZero())
}

// dumpEndedLocked tells the planner that the dump of an attempt whose
// slot was freed early has ended (the attempt is CHECKPOINTED or
// KILLED): it leaves the mirror of its tracker's queue.
func (jt *JobTracker) dumpEndedLocked(a *attempt, now time.Time) {
	if a.ckpt != nil && !a.ckpt.released.IsZero() {
		jt.driver.DumpEnded(now, attemptKey(a))
	}
}

// attemptCheckpointedLocked ends a live attempt its tracker reports
// checkpointed: the slot is free, and the task is pending again,
// restorable from the image (unless another attempt of it runs).
func (jt *JobTracker) attemptCheckpointedLocked(a *attempt, cs *mrpb.CheckpointStats, now time.Time) {
	if cs == nil {
		cs = &mrpb.CheckpointStats{}
	}
	t := a.task
	j := t.job
	if !jt.attemptToLocked(a, attemptCheckpointed) {
		return
	}
	if tr := jt.trackers[a.tracker]; tr != nil {
		delete(tr.attempts, a.id)
	}
	a.finish, a.diag, a.progress = now, "checkpointed for preemption", cs.Progress
	jt.observeAttemptLocked(a)
	if t.commitGrant == a {
		t.commitGrant = nil
	}
	if sp := t.specPending; sp != nil && (sp.source == a || sp.attempt == a) {
		endSpeculationLocked(t, "attempt "+a.id+" was checkpointed")
	}
	jt.addMillisLocked(a)
	img := &taskImage{tracker: a.tracker, attempt: a.id, bytes: cs.ImageBytes + cs.FileSetBytes,
		progress: cs.Progress, at: now, useful: a.usefulRunTime(), failures: t.failures, cuts: t.cuts()}
	if a.ckpt != nil {
		img.migrate = a.ckpt.migrate
	}
	g := mr.JobCounterGroup
	j.counters.Add(g, mr.Checkpoints, 1)
	j.counters.Add(g, mr.CheckpointBytes, img.bytes)
	j.counters.Add(g, mr.CheckpointDumpMillis, cs.DumpMs)
	// A kill would have lost the attempt's own run only: a restored
	// attempt's task keeps the image it was restored from.
	j.counters.Add(g, mr.CheckpointWorkSavedMillis, a.ownRunTime().Milliseconds())
	jt.prom.preemptCheckpoints.WithLabelValues("checkpointed").Inc()
	jt.prom.checkpointBytes.Add(float64(img.bytes))
	jt.driver.Ended(now, attemptKey(a), a.finish.Sub(a.start))
	jt.dumpEndedLocked(a, now)
	jt.observeCROpLocked(a.tracker, preempt.OpDump, cs.ImageBytes, cs.DumpMs)
	// reclaim_ms: from the order (the planner's decision) to the slot
	// free here, the figure of the reclaim target: here, or
	// earlier when the tracker freed it before the dump ended.
	var reclaim, dumped time.Duration
	if a.ckpt != nil && !a.ckpt.ordered.IsZero() {
		reclaim, dumped = now.Sub(a.ckpt.ordered), now.Sub(a.ckpt.ordered)
		if !a.ckpt.released.IsZero() {
			reclaim = a.ckpt.released.Sub(a.ckpt.ordered)
		}
	}
	jt.log.Info("attempt checkpointed", "attempt", a.id, "tracker", a.tracker, "dump_ms", cs.DumpMs,
		"reclaim_ms", reclaim.Milliseconds(), "dumped_ms", dumped.Milliseconds(), "released_early", a.ckpt != nil && !a.ckpt.released.IsZero(),
		"bytes", img.bytes, "progress", cs.Progress, "work_saved", img.useful.Round(time.Millisecond))
	if j.done() || t.state == taskSucceeded {
		jt.dropImageLocked(j, img, "its task has succeeded")
		return
	}
	if old := t.image; old != nil {
		jt.dropImageLocked(j, old, "replaced by the image of "+a.id)
	}
	t.setImage(img)
	if len(t.running()) > 0 {
		return // another attempt runs on; the image waits in case it ends
	}
	jt.taskToLocked(t, taskPending)
}

// usefulRunTime is the run time of the task's work an attempt holds: its
// own since it started (less a restore's cost), plus what the image it
// was restored from held.
func (a *attempt) usefulRunTime() time.Duration {
	d := a.ownRunTime()
	if a.ckpt != nil && a.ckpt.from != nil {
		d += a.ckpt.from.useful
	}
	return d
}

// ownRunTime is an ended attempt's run time since it started, less a
// restore's cost: what a kill loses when its task keeps an image.
func (a *attempt) ownRunTime() time.Duration { return max(a.finish.Sub(a.start)-a.cloneCost, 0) }

// cuts is the number of split points recorded for the task.
func (t *task) cuts() int {
	if t.split == nil {
		return 0
	}
	return len(t.split.cuts)
}

// dropImageLocked tells img's tracker to delete it (when the tracker is
// still there); the caller has made sure no task resumes from it.
func (jt *JobTracker) dropImageLocked(j *job, img *taskImage, why string) {
	jt.log.Info("checkpoint image dropped", "image", img.attempt, "tracker", img.tracker, "why", why)
	if tr := jt.trackers[img.tracker]; tr != nil {
		tr.actions = append(tr.actions, &mrpb.TaskAction{Action: &mrpb.TaskAction_DropImage{
			DropImage: &mrpb.DropImage{JobId: j.id, AttemptId: img.attempt}}})
	}
}

// taskImageDoneLocked drops the image of a task that no longer needs it
// (it succeeded, or the spills written before the image were lost).
func (jt *JobTracker) taskImageDoneLocked(t *task, why string) {
	if img := t.image; img != nil {
		t.setImage(nil)
		jt.dropImageLocked(t.job, img, why)
	}
}

// checkpointFailedLocked counts a checkpoint for preemption that failed
// (the tracker killed the attempt instead; the caller ends it KILLED).
func (jt *JobTracker) checkpointFailedLocked(a *attempt, cs *mrpb.CheckpointStats) {
	if cs == nil || cs.Error == "" || !a.live() {
		return
	}
	jt.dumpEndedLocked(a, jt.now())
	jt.prom.preemptCheckpoints.WithLabelValues("failed").Inc()
	var since time.Duration
	if a.ckpt != nil && !a.ckpt.ordered.IsZero() {
		since = jt.now().Sub(a.ckpt.ordered)
	}
	jt.log.Warn("checkpoint failed; the attempt was killed and its task runs again from scratch", "attempt", a.id,
		"tracker", a.tracker, "since_order_ms", since.Milliseconds(), "progress", a.progress, "error", cs.Error)
}

// restoreStatusLocked takes in what a tracker reports of a restored
// attempt: once it runs, its restore is counted and its cost kept (the
// speculator leaves it out of the attempt's run time); a restore that
// failed ends the attempt KILLED (not counted against the task), and the
// task runs again from scratch. It reports true when the status is fully
// handled.
func (jt *JobTracker) restoreStatusLocked(a *attempt, cs *mrpb.CloneStats, now time.Time) bool {
	j := a.task.job
	if cs.Error != "" {
		jt.prom.preemptRestores.WithLabelValues("failed").Inc()
		jt.log.Warn("restore failed; the task runs again from scratch", "attempt", a.id, "source", cs.SourceAttempt, "error", cs.Error)
		if t := a.task; a.ckpt != nil && t.image != nil && t.image == a.ckpt.from {
			jt.taskImageDoneLocked(t, "its restore failed")
		}
		jt.attemptFailedLocked(a, "restore failed: "+cs.Error, now, false)
		return true
	}
	if a.ckpt == nil || a.ckpt.from == nil || a.ckpt.restored || cs.ImageBytes <= 0 {
		return false // being restored, or already counted
	}
	a.ckpt.restored = true
	a.cloneCost = time.Duration(cs.CopyMs+cs.RestoreMs) * time.Millisecond
	j.counters.Add(mr.JobCounterGroup, mr.CheckpointRestores, 1)
	j.counters.Add(mr.JobCounterGroup, mr.CheckpointRestoreMillis, cs.RestoreMs)
	jt.prom.preemptRestores.WithLabelValues("succeeded").Inc()
	jt.observeCROpLocked(a.tracker, preempt.OpRestore, cs.ImageBytes, cs.RestoreMs)
	if a.ckpt.from.tracker != a.tracker {
		jt.observeCROpLocked(a.tracker, preempt.OpTransfer, cs.ImageBytes, cs.CopyMs)
	}
	jt.log.Info("attempt restored", "attempt", a.id, "tracker", a.tracker, "source", cs.SourceAttempt,
		"copy_ms", cs.CopyMs, "restore_ms", cs.RestoreMs, "start_progress", cs.StartProgress)
	return false
}

// restoreSourceLocked makes the launch of a's task a restore when the task
// is restorable: the launch names the image, the attempt starts at the
// image's progress (and its run time, for the speculator, at its restore).
// The task keeps the image: if the restored attempt is killed, the task
// resumes from it again; if the restore fails, the image is dropped.
func (jt *JobTracker) restoreSourceLocked(tk *task, a *attempt, launch *mrpb.LaunchTask) {
	img := tk.image
	if img == nil || jt.staleImageLocked(tk) {
		return
	}
	home := jt.trackers[img.tracker]
	if home == nil {
		tk.setImage(nil)
		return // lost with its tracker (imagesLostLocked); afresh
	}
	launch.Restore = &mrpb.RestoreSource{SourceAttempt: img.attempt, SourceTracker: img.tracker,
		SourceAddress: home.shuffleAddr, ImageBytes: img.bytes}
	a.ckpt = &attemptCkpt{from: img}
	a.startProgress, a.progress = float64(img.progress), img.progress
	jt.log.Info("resuming a checkpointed task", "attempt", a.id, "tracker", a.tracker, "image", img.attempt,
		"image_tracker", img.tracker, "local", img.tracker == a.tracker,
		"restorable_ms", jt.now().Sub(img.at).Milliseconds())
}

// restoreHereLocked tells whether restorable task tk may be launched on
// tracker t now (ok), and whether that is on its image's tracker (here).
// A task whose image's tracker is gone runs afresh anywhere.
func (jt *JobTracker) restoreHereLocked(tk *task, t *trackerState) (here, ok bool) {
	if jt.staleImageLocked(tk) {
		return false, true
	}
	img := tk.image
	home := jt.trackers[img.tracker]
	if home == nil {
		tk.setImage(nil)
		return false, true
	}
	if t.name == img.tracker {
		return true, !img.migrate
	}
	if !t.criu {
		return false, false
	}
	if img.migrate {
		return false, true
	}
	qLocal := home.crWait + jt.slotWaitLocked(home, tk.typ, img)
	where := preempt.Resume(img.bytes, true, jt.driver.Planner().Model(img.tracker), qLocal, t.crWait)
	return false, where == preempt.Remote
}

// staleImageLocked drops the task's image, and reports true, when an
// attempt of the task failed since it was made (what it holds may be what
// fails) or the task was split since (it would redo the split-off part):
// the task runs afresh.
func (jt *JobTracker) staleImageLocked(tk *task) bool {
	img := tk.image
	switch {
	case img == nil:
		return false
	case tk.failures > img.failures:
		jt.taskImageDoneLocked(tk, "an attempt of its task failed since")
	case tk.cuts() != img.cuts:
		jt.taskImageDoneLocked(tk, "its task was split since")
	default:
		return false
	}
	return true
}

// slotWaitLocked is how long a restorable task is expected to wait for a
// slot of its type on its image's tracker: none when one is free, else
// what is left of resumeLocalityWait since the task became restorable.
func (jt *JobTracker) slotWaitLocked(home *trackerState, typ partitions.TaskType, img *taskImage) time.Duration {
	busy := 0
	for _, a := range home.attempts {
		if a.holdsSlot() && a.task.typ == typ {
			busy++
		}
	}
	slots := home.mapSlots
	if typ == partitions.Reduce {
		slots = home.reduceSlots
	}
	if busy < slots {
		return 0
	}
	return max(resumeLocalityWait-jt.now().Sub(img.at), 0)
}

// imagesLostLocked forgets the images kept by a lost tracker: their tasks
// run again from scratch.
func (jt *JobTracker) imagesLostLocked(tracker string) {
	for _, j := range jt.order {
		if j.done() {
			continue
		}
		for _, typ := range []partitions.TaskType{partitions.Map, partitions.Reduce} {
			for _, tk := range j.tasks(typ) {
				if tk.image != nil && tk.image.tracker == tracker {
					jt.log.Warn("checkpoint image lost with its tracker; the task runs again from scratch",
						"task", tk.id(), "image", tk.image.attempt, "tracker", tracker)
					jt.prom.preemptRestores.WithLabelValues("lost").Inc()
					tk.setImage(nil)
				}
			}
		}
	}
}

// CheckpointTaskAttempt preempts a running attempt by checkpoint at an
// operator's request: its task resumes from the image, on the same
// tracker or, with Migrate, on another.
func (jt *JobTracker) CheckpointTaskAttempt(ctx context.Context, req *mrpb.CheckpointTaskAttemptRequest) (*mrpb.CheckpointTaskAttemptResponse, error) {
	jt.lock(holderClient)
	defer jt.unlock()
	_, a := jt.findAttempt(req.AttemptId)
	if a == nil {
		return nil, status.Errorf(codes.NotFound, "no task attempt %s (an attempt id is attempt_<jobtracker>_<job>_<m|r>_<task>_<n>)", req.AttemptId)
	}
	if err := jt.checkpointAttemptLocked(a, req.Incremental, req.Migrate, preempt.ReasonUnspecified); err != nil {
		return nil, status.Error(codes.FailedPrecondition, err.Error())
	}
	return &mrpb.CheckpointTaskAttemptResponse{Ordered: true, State: a.state.String()}, nil
}

// observeCROpLocked gives the reclaim planner a measured dump, restore or
// image transfer of a tracker, from which it learns that tracker's
// bandwidths (preemption.bandwidth.smoothing).
func (jt *JobTracker) observeCROpLocked(tracker string, op preempt.Op, bytes, ms int64) {
	if bytes <= 0 || ms <= 0 {
		return
	}
	if err := jt.driver.Planner().Observe(tracker, op, bytes, time.Duration(ms)*time.Millisecond); err != nil {
		jt.log.Warn("checkpoint measurement not used", "tracker", tracker, "error", err)
	}
}

// setImage sets or clears the image the task resumes from, keeping the
// job's count of tasks with one (pickTaskLocked stops early without any).
func (t *task) setImage(img *taskImage) {
	if (t.image == nil) != (img == nil) {
		if img != nil {
			t.job.images++
		} else {
			t.job.images--
		}
	}
	t.image = img
}
