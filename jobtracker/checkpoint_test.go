package jobtracker

import (
	"context"
	"testing"
	"time"

	"gomr/mr"
	"gomr/mrpb"
)

// jobCounter reads a job counter.
func jobCounter(jt *JobTracker, job, name string) int64 {
	jt.mu.Lock()
	defer jt.unlock()
	return jt.jobs[job].counters[mr.JobCounterGroup][name]
}

func checkpointActions(resp *mrpb.HeartbeatResponse) []string {
	var out []string
	for _, a := range resp.Actions {
		if c := a.GetCheckpoint(); c != nil {
			out = append(out, c.AttemptId)
		}
	}
	return out
}

// startCheckpointable launches the job's map on tracker t1 (with CRIU) and
// reports it running at progress 0.4; it returns the attempt.
func startCheckpointable(t *testing.T, jt *JobTracker, extra ...string) string {
	t.Helper()
	first := heartbeat(t, jt, &mrpb.HeartbeatRequest{InitialContact: true, FreeMapSlots: 2, CriuAvailable: true, Instance: "p1"})
	ls := launches(first)
	if len(ls) != 1 {
		t.Fatalf("launches %v", ls)
	}
	for _, name := range extra {
		heartbeat(t, jt, &mrpb.HeartbeatRequest{Tracker: name, InitialContact: true, CriuAvailable: true, Instance: name})
	}
	heartbeat(t, jt, &mrpb.HeartbeatRequest{CriuAvailable: true, Attempts: []*mrpb.AttemptStatus{
		{AttemptId: ls[0].AttemptId, State: StateRunning, Progress: 0.4, Cloneable: true, RssBytes: 5 << 20}}})
	return ls[0].AttemptId
}

// A checkpoint order goes to the attempt's tracker; the CHECKPOINTED report
// frees the slot, counts the checkpoint and makes the task restorable; its
// next launch, on the image's tracker, names the image; the restored
// attempt's report counts the restore. A late report of the checkpointed
// attempt changes nothing.
func TestCheckpointedTaskResumesFromImage(t *testing.T) {
	jt, job := newTestJT(t, 1)
	a0 := startCheckpointable(t, jt)
	if _, err := jt.CheckpointTaskAttempt(context.Background(), &mrpb.CheckpointTaskAttemptRequest{AttemptId: a0}); err != nil {
		t.Fatal(err)
	}
	if _, err := jt.CheckpointTaskAttempt(context.Background(), &mrpb.CheckpointTaskAttemptRequest{AttemptId: a0}); err == nil {
		t.Errorf("a second checkpoint order of %s was accepted", a0)
	}
	resp := heartbeat(t, jt, &mrpb.HeartbeatRequest{CriuAvailable: true})
	if got := checkpointActions(resp); len(got) != 1 || got[0] != a0 {
		t.Fatalf("checkpoint actions %v, want [%s]", got, a0)
	}
	resp = heartbeat(t, jt, &mrpb.HeartbeatRequest{CriuAvailable: true, FreeMapSlots: 2, Attempts: []*mrpb.AttemptStatus{
		{AttemptId: a0, State: StateCheckpointed, Progress: 0.4,
			Checkpoint: &mrpb.CheckpointStats{DumpMs: 120, ImageBytes: 1000, FileSetBytes: 24, Progress: 0.4}}}})
	if st, _ := attemptStateOf(jt, a0); st != StateCheckpointed {
		t.Fatalf("attempt %s is %s, want CHECKPOINTED", a0, st)
	}
	ls := launches(resp)
	if len(ls) != 1 || ls[0].Restore == nil {
		t.Fatalf("launches after the checkpoint: %v, want one restore", ls)
	}
	if r := ls[0].Restore; r.SourceAttempt != a0 || r.SourceTracker != "t1" || r.ImageBytes != 1024 {
		t.Errorf("restore source %v", r)
	}
	for name, want := range map[string]int64{mr.Checkpoints: 1, mr.CheckpointBytes: 1024, mr.CheckpointDumpMillis: 120, mr.NumKilledMaps: 0} {
		if got := jobCounter(jt, job, name); got != want {
			t.Errorf("%s = %d, want %d", name, got, want)
		}
	}
	a1 := ls[0].AttemptId
	// A late report of the checkpointed attempt is fenced off.
	heartbeat(t, jt, &mrpb.HeartbeatRequest{CriuAvailable: true, Attempts: []*mrpb.AttemptStatus{
		{AttemptId: a0, State: StateCheckpointed, Checkpoint: &mrpb.CheckpointStats{DumpMs: 120, ImageBytes: 1000}},
		{AttemptId: a1, State: StateRunning, Progress: 0.45,
			Restore: &mrpb.CloneStats{SourceAttempt: a0, ImageBytes: 1000, CopyMs: 3, RestoreMs: 50, StartProgress: 0.4}}}})
	if got := jobCounter(jt, job, mr.Checkpoints); got != 1 {
		t.Errorf("CHECKPOINTS = %d after a late report, want 1", got)
	}
	if got := jobCounter(jt, job, mr.CheckpointRestores); got != 1 {
		t.Errorf("CHECKPOINT_RESTORES = %d, want 1", got)
	}
	if got := jobCounter(jt, job, mr.CheckpointRestoreMillis); got != 50 {
		t.Errorf("CHECKPOINT_RESTORE_MILLIS = %d, want 50", got)
	}
	jt.mu.Lock()
	_, a := jt.findAttempt(a1)
	startProgress, cost := a.startProgress, a.cloneCost
	jt.unlock()
	if startProgress < 0.39 || cost != 53*time.Millisecond {
		t.Errorf("restored attempt: start progress %v, restore cost %v; want 0.4 and 53ms", startProgress, cost)
	}
}

// A dump that failed ends the attempt KILLED, and the task runs again from
// scratch.
func TestCheckpointFailureRunsTaskAfresh(t *testing.T) {
	jt, job := newTestJT(t, 1)
	a0 := startCheckpointable(t, jt)
	if _, err := jt.CheckpointTaskAttempt(context.Background(), &mrpb.CheckpointTaskAttemptRequest{AttemptId: a0}); err != nil {
		t.Fatal(err)
	}
	heartbeat(t, jt, &mrpb.HeartbeatRequest{CriuAvailable: true})
	resp := heartbeat(t, jt, &mrpb.HeartbeatRequest{CriuAvailable: true, FreeMapSlots: 2, Attempts: []*mrpb.AttemptStatus{
		{AttemptId: a0, State: StateKilled, Diagnostic: "checkpoint for preemption failed: CRIU said no",
			Checkpoint: &mrpb.CheckpointStats{Error: "CRIU said no"}}}})
	if st, _ := attemptStateOf(jt, a0); st != StateKilled {
		t.Fatalf("attempt %s is %s, want KILLED", a0, st)
	}
	ls := launches(resp)
	if len(ls) != 1 || ls[0].Restore != nil {
		t.Fatalf("launches %v, want one fresh attempt", ls)
	}
	if got := jobCounter(jt, job, mr.Checkpoints); got != 0 {
		t.Errorf("CHECKPOINTS = %d, want 0", got)
	}
	if got := jobCounter(jt, job, mr.NumKilledMaps); got != 1 {
		t.Errorf("NUM_KILLED_MAPS = %d, want 1", got)
	}
}

// An image to be restored elsewhere (migrate) is not restored on its own
// tracker; when that tracker is lost the image is lost with it, and the
// task runs again from scratch on another tracker.
func TestCheckpointImageLostWithTracker(t *testing.T) {
	jt, _ := newTestJT(t, 1)
	a0 := startCheckpointable(t, jt, "t2")
	if _, err := jt.CheckpointTaskAttempt(context.Background(), &mrpb.CheckpointTaskAttemptRequest{AttemptId: a0, Migrate: true}); err != nil {
		t.Fatal(err)
	}
	heartbeat(t, jt, &mrpb.HeartbeatRequest{CriuAvailable: true})
	resp := heartbeat(t, jt, &mrpb.HeartbeatRequest{CriuAvailable: true, FreeMapSlots: 2, Attempts: []*mrpb.AttemptStatus{
		{AttemptId: a0, State: StateCheckpointed, Checkpoint: &mrpb.CheckpointStats{DumpMs: 10, ImageBytes: 100, Progress: 0.4}}}})
	if ls := launches(resp); len(ls) != 0 {
		t.Fatalf("launches on the image's own tracker despite migrate: %v", ls)
	}
	jt.mu.Lock()
	jt.lostTrackerLocked(jt.trackers["t1"], "lost in a test")
	jt.unlock()
	resp = heartbeat(t, jt, &mrpb.HeartbeatRequest{Tracker: "t2", CriuAvailable: true, FreeMapSlots: 2})
	ls := launches(resp)
	if len(ls) != 1 || ls[0].Restore != nil {
		t.Fatalf("launches on t2: %v, want one fresh attempt", ls)
	}
}

// The policy driver's host orders checkpoints and describes candidates.
func TestTrackerHostCheckpointAndDescribe(t *testing.T) {
	jt, _ := newTestJT(t, 1)
	a0 := startCheckpointable(t, jt)
	jt.mu.Lock()
	_, a := jt.findAttempt(a0)
	h := &trackerHost{jt: jt, t: jt.trackers["t1"], now: jt.now()}
	c := h.Describe(attemptKey(a))
	err := h.Checkpoint(attemptKey(a), true)
	again := h.Checkpoint(attemptKey(a), false)
	jt.unlock()
	if c.Node != "t1" || c.RSSBytes != 5<<20 || !c.CanCheckpoint || c.HasImage || c.Duplicate {
		t.Errorf("candidate %+v", c)
	}
	if err != nil || again == nil {
		t.Fatalf("checkpoint orders: %v, then %v (want nil, then an error)", err, again)
	}
	resp := heartbeat(t, jt, &mrpb.HeartbeatRequest{CriuAvailable: true})
	for _, act := range resp.Actions {
		if c := act.GetCheckpoint(); c != nil && (c.AttemptId != a0 || !c.Incremental) {
			t.Errorf("checkpoint action %v", c)
		}
	}
	if got := checkpointActions(resp); len(got) != 1 {
		t.Errorf("checkpoint actions %v, want one", got)
	}
}

func dropActions(resp *mrpb.HeartbeatResponse) []string {
	var out []string
	for _, a := range resp.Actions {
		if d := a.GetDropImage(); d != nil {
			out = append(out, d.AttemptId)
		}
	}
	return out
}

// A task keeps one image (spec §5.3): a restored attempt that is killed
// resumes from the same image again; a restored attempt checkpointed again
// replaces the image, and the old one's tracker is told to delete it; a
// restore that fails drops the image and the task runs afresh. The planner
// sees a restored attempt's progress as its own run only. An attempt
// being restored cannot be checkpointed yet.
func TestTaskKeepsOneImage(t *testing.T) {
	clock := time.Unix(1_000_000, 0)
	jt, job := newTestJTAt(t, t.TempDir(), 1, func() time.Time { return clock })
	a0 := startCheckpointable(t, jt)
	checkpoint := func(a string, wantDrop []string) *mrpb.HeartbeatResponse {
		t.Helper()
		if _, err := jt.CheckpointTaskAttempt(context.Background(), &mrpb.CheckpointTaskAttemptRequest{AttemptId: a}); err != nil {
			t.Fatal(err)
		}
		heartbeat(t, jt, &mrpb.HeartbeatRequest{CriuAvailable: true})
		clock = clock.Add(10 * time.Second)
		resp := heartbeat(t, jt, &mrpb.HeartbeatRequest{CriuAvailable: true, FreeMapSlots: 2, Attempts: []*mrpb.AttemptStatus{
			{AttemptId: a, State: StateCheckpointed, Checkpoint: &mrpb.CheckpointStats{DumpMs: 10, ImageBytes: 1000, Progress: 0.5}}}})
		if got := dropActions(resp); len(got) != len(wantDrop) || (len(got) == 1 && got[0] != wantDrop[0]) {
			t.Errorf("drop orders after checkpointing %s: %v, want %v", a, got, wantDrop)
		}
		return resp
	}
	restored := func(resp *mrpb.HeartbeatResponse, from string) string {
		t.Helper()
		ls := launches(resp)
		if len(ls) != 1 || ls[0].Restore == nil || ls[0].Restore.SourceAttempt != from {
			t.Fatalf("launches %v, want one restore from %s", ls, from)
		}
		// Until its restore is done it cannot be checkpointed (spec §5.10).
		if _, err := jt.CheckpointTaskAttempt(context.Background(), &mrpb.CheckpointTaskAttemptRequest{AttemptId: ls[0].AttemptId}); err == nil {
			t.Errorf("a checkpoint of %s, still being restored, was ordered", ls[0].AttemptId)
		}
		heartbeat(t, jt, &mrpb.HeartbeatRequest{CriuAvailable: true, Attempts: []*mrpb.AttemptStatus{
			{AttemptId: ls[0].AttemptId, State: StateRunning, Progress: 0.55, Cloneable: true,
				Restore: &mrpb.CloneStats{SourceAttempt: from, ImageBytes: 1000, RestoreMs: 1000, StartProgress: 0.5}}}})
		return ls[0].AttemptId
	}
	a1 := restored(checkpoint(a0, nil), a0)

	// The planner's view: 5 s since the restore, less its 1 s: 4 s, not
	// the 10 s the image holds too.
	clock = clock.Add(5 * time.Second)
	jt.mu.Lock()
	_, a := jt.findAttempt(a1)
	c := (&trackerHost{jt: jt, now: jt.now()}).Describe(attemptKey(a))
	jt.killAttemptLocked(a, "preempted in a test")
	jt.unlock()
	if c.Progressed != 4*time.Second {
		t.Errorf("restored attempt's progress for the planner %v, want 4s", c.Progressed)
	}
	// Killed: the task resumes from a0's image again.
	resp := heartbeat(t, jt, &mrpb.HeartbeatRequest{CriuAvailable: true, FreeMapSlots: 2, Attempts: []*mrpb.AttemptStatus{
		{AttemptId: a1, State: StateKilled}}})
	if got := dropActions(resp); len(got) != 0 {
		t.Errorf("drop orders after a kill: %v", got)
	}
	a2 := restored(resp, a0)

	// Checkpointed again: a2's image replaces a0's, which is dropped.
	a3 := restored(checkpoint(a2, []string{a0}), a2)
	if got := jobCounter(jt, job, mr.Checkpoints); got != 2 {
		t.Errorf("CHECKPOINTS = %d, want 2", got)
	}
	// Work saved by the second checkpoint is a2's own run (10 s less its
	// 1 s restore), not what a0's image held as well.
	if got := jobCounter(jt, job, mr.CheckpointWorkSavedMillis); got != (10+9)*1000 {
		t.Errorf("CHECKPOINT_WORK_SAVED_MILLIS = %d, want 19000", got)
	}

	// a3's restore fails: a2's image is dropped, the task runs afresh.
	resp = heartbeat(t, jt, &mrpb.HeartbeatRequest{CriuAvailable: true, FreeMapSlots: 2, Attempts: []*mrpb.AttemptStatus{
		{AttemptId: a3, State: StateFailed, Restore: &mrpb.CloneStats{SourceAttempt: a2, Error: "CRIU said no"}}}})
	if got := dropActions(resp); len(got) != 1 || got[0] != a2 {
		t.Errorf("drop orders after a failed restore: %v, want [%s]", got, a2)
	}
	if ls := launches(resp); len(ls) != 1 || ls[0].Restore != nil {
		t.Errorf("launches after a failed restore: %v, want one fresh attempt", ls)
	}
}

// Fencing (spec §5.14): a tracker declared lost while it dumps an attempt
// reports the dump done afterwards; the report is ignored (the attempt
// stays KILLED, nothing is counted, no task resumes from that image) and
// the task runs afresh elsewhere.
func TestLateCheckpointOfLostTrackerIsFenced(t *testing.T) {
	jt, job := newTestJT(t, 1)
	a0 := startCheckpointable(t, jt, "t2")
	if _, err := jt.CheckpointTaskAttempt(context.Background(), &mrpb.CheckpointTaskAttemptRequest{AttemptId: a0}); err != nil {
		t.Fatal(err)
	}
	heartbeat(t, jt, &mrpb.HeartbeatRequest{CriuAvailable: true})
	jt.mu.Lock()
	jt.lostTrackerLocked(jt.trackers["t1"], "lost in a test")
	jt.unlock()
	heartbeat(t, jt, &mrpb.HeartbeatRequest{CriuAvailable: true, FreeMapSlots: 2, Attempts: []*mrpb.AttemptStatus{
		{AttemptId: a0, State: StateCheckpointed, Checkpoint: &mrpb.CheckpointStats{DumpMs: 10, ImageBytes: 100, Progress: 0.4}}}})
	if st, _ := attemptStateOf(jt, a0); st != StateKilled {
		t.Errorf("attempt %s is %s after a late checkpoint report, want KILLED", a0, st)
	}
	if got := jobCounter(jt, job, mr.Checkpoints); got != 0 {
		t.Errorf("CHECKPOINTS = %d, want 0", got)
	}
	resp := heartbeat(t, jt, &mrpb.HeartbeatRequest{Tracker: "t2", CriuAvailable: true, FreeMapSlots: 2})
	if ls := launches(resp); len(ls) != 1 || ls[0].Restore != nil {
		t.Errorf("launches on t2: %v, want one fresh attempt", ls)
	}
}

// With preemption.checkpoint.release-slot=quiesced the order says when
// the slot is free; a RUNNING report with slot_released ends the victim
// for the policies (the driver no longer counts it) and frees its slot in
// the JobTracker's count, while the attempt stays live until its dump
// ends: CHECKPOINTED (the task resumes from the image) or KILLED (the task
// runs again from scratch).
func TestCheckpointSlotReleasedEarly(t *testing.T) {
	for _, end := range []string{StateCheckpointed, StateKilled} {
		t.Run(end, func(t *testing.T) {
			jt, job := newTestJTWith(t, t.TempDir(), 1, nil, map[string]string{"preemption.checkpoint.release-slot": "quiesced"})
			a0 := startCheckpointable(t, jt)
			if _, err := jt.CheckpointTaskAttempt(context.Background(), &mrpb.CheckpointTaskAttemptRequest{AttemptId: a0}); err != nil {
				t.Fatal(err)
			}
			resp := heartbeat(t, jt, &mrpb.HeartbeatRequest{CriuAvailable: true})
			var order *mrpb.CheckpointAttempt
			for _, a := range resp.Actions {
				if c := a.GetCheckpoint(); c != nil {
					order = c
				}
			}
			if order == nil || order.ReleaseSlot != mrpb.SlotRelease_RELEASE_QUIESCED || order.Reason != mrpb.ReclaimReason_RECLAIM_UNSPECIFIED {
				t.Fatalf("checkpoint order %v, want release at the quiet point, reason unspecified", order)
			}
			heartbeat(t, jt, &mrpb.HeartbeatRequest{CriuAvailable: true, FreeMapSlots: 1, Attempts: []*mrpb.AttemptStatus{
				{AttemptId: a0, State: StateRunning, Progress: 0.4, Checkpoint: &mrpb.CheckpointStats{SlotReleased: true}}}})
			jt.mu.Lock()
			_, a := jt.findAttempt(a0)
			live, holds, running := a.live(), a.holdsSlot(), jt.driver.Running(attemptKey(a))
			jt.unlock()
			if !live || holds || running {
				t.Fatalf("after the release: live %v, holds its slot %v, the driver counts it running %v; want true, false, false", live, holds, running)
			}
			st := &mrpb.AttemptStatus{AttemptId: a0, State: end, Progress: 0.4,
				Checkpoint: &mrpb.CheckpointStats{DumpMs: 90, ImageBytes: 1000, Progress: 0.4, SlotReleased: true}}
			if end == StateKilled {
				st.Diagnostic, st.Checkpoint = "checkpoint for preemption failed: CRIU said no", &mrpb.CheckpointStats{Error: "CRIU said no", SlotReleased: true}
			}
			resp = heartbeat(t, jt, &mrpb.HeartbeatRequest{CriuAvailable: true, FreeMapSlots: 2, Attempts: []*mrpb.AttemptStatus{st}})
			if got, _ := attemptStateOf(jt, a0); got != end {
				t.Fatalf("attempt %s is %s, want %s", a0, got, end)
			}
			ls := launches(resp)
			if len(ls) != 1 || (ls[0].Restore != nil) != (end == StateCheckpointed) {
				t.Fatalf("launches %v: want one, a restore iff checkpointed", ls)
			}
			want := map[string]int64{mr.Checkpoints: 1, mr.NumKilledMaps: 0}
			if end == StateKilled {
				want = map[string]int64{mr.Checkpoints: 0, mr.NumKilledMaps: 1}
			}
			for name, n := range want {
				if got := jobCounter(jt, job, name); got != n {
					t.Errorf("%s = %d, want %d", name, got, n)
				}
			}
		})
	}
}
