package jobtracker

import (
	"context"
	"testing"

	"gomr/mrpb"
)

// restoredElsewhere runs the job's only map on t1, which announces spills 0
// and 1, checkpoints it there and restores it on t2 (an image to migrate).
// It returns the checkpointed and the restored attempt.
func restoredElsewhere(t *testing.T, jt *JobTracker) (a0, a1 string) {
	t.Helper()
	a0 = startCheckpointable(t, jt, "t2")
	heartbeat(t, jt, &mrpb.HeartbeatRequest{CriuAvailable: true, Spills: []*mrpb.SpillAnnouncement{
		{AttemptId: a0, Spill: 0, Segments: seg(10)}, {AttemptId: a0, Spill: 1, Segments: seg(11)}}})
	if _, err := jt.CheckpointTaskAttempt(context.Background(), &mrpb.CheckpointTaskAttemptRequest{AttemptId: a0, Migrate: true}); err != nil {
		t.Fatal(err)
	}
	heartbeat(t, jt, &mrpb.HeartbeatRequest{CriuAvailable: true})
	heartbeat(t, jt, &mrpb.HeartbeatRequest{CriuAvailable: true, Attempts: []*mrpb.AttemptStatus{
		{AttemptId: a0, State: StateCheckpointed, Checkpoint: &mrpb.CheckpointStats{DumpMs: 10, ImageBytes: 100, Progress: 0.4}}}})
	ls := launches(heartbeat(t, jt, &mrpb.HeartbeatRequest{Tracker: "t2", CriuAvailable: true, FreeMapSlots: 2}))
	if len(ls) != 1 || ls[0].Restore == nil || ls[0].Restore.SourceAttempt != a0 {
		t.Fatalf("launches on t2: %v, want the restore of %s", ls, a0)
	}
	a1 = ls[0].AttemptId
	heartbeat(t, jt, &mrpb.HeartbeatRequest{Tracker: "t2", CriuAvailable: true, Attempts: []*mrpb.AttemptStatus{
		{AttemptId: a1, State: StateRunning, Progress: 0.45,
			Restore: &mrpb.CloneStats{SourceAttempt: a0, ImageBytes: 100, RestoreMs: 5, StartProgress: 0.4}}}})
	return a0, a1
}

// loseTracker declares a tracker lost as its expiry would.
func loseTracker(jt *JobTracker, name string) {
	jt.mu.Lock()
	defer jt.unlock()
	jt.lostTrackerLocked(jt.trackers[name], "Lost task tracker: "+name)
}

func freshMapLaunches(t *testing.T, jt *JobTracker, tracker string) []*mrpb.LaunchTask {
	t.Helper()
	var out []*mrpb.LaunchTask
	for _, l := range launches(heartbeat(t, jt, &mrpb.HeartbeatRequest{Tracker: tracker, CriuAvailable: true, FreeMapSlots: 2})) {
		if l.Restore == nil && l.Type == "m" {
			out = append(out, l)
		}
	}
	return out
}

// A map restored on another tracker writes only the spills after its image:
// the earlier ones are served by the checkpointed attempt's tracker. When
// that tracker is lost, they are lost with it, and the map must run again
// (before, only a lost successful attempt re-ran its map, and the reduce
// waited for spills 0 and 1 for ever).
func TestInheritedSpillsLost(t *testing.T) {
	t.Run("after the restored attempt succeeded", func(t *testing.T) {
		jt, _ := newTestJT(t, 1)
		_, a1 := restoredElsewhere(t, jt)
		heartbeat(t, jt, &mrpb.HeartbeatRequest{Tracker: "t2", CriuAvailable: true,
			Spills:   []*mrpb.SpillAnnouncement{{AttemptId: a1, Spill: 2, Final: true, Segments: seg(12)}},
			Attempts: []*mrpb.AttemptStatus{{AttemptId: a1, State: StateSucceeded, Progress: 1}}})
		if st, _ := attemptStateOf(jt, a1); st != StateSucceeded {
			t.Fatalf("restored attempt is %s, want SUCCEEDED", st)
		}
		loseTracker(jt, "t1")
		if ls := freshMapLaunches(t, jt, "t2"); len(ls) != 1 {
			t.Fatalf("fresh map launches after t1 was lost: %v, want one", ls)
		}
	})
	t.Run("while the restored attempt runs", func(t *testing.T) {
		jt, _ := newTestJT(t, 1)
		_, a1 := restoredElsewhere(t, jt)
		heartbeat(t, jt, &mrpb.HeartbeatRequest{Tracker: "t2", CriuAvailable: true,
			Spills: []*mrpb.SpillAnnouncement{{AttemptId: a1, Spill: 2, Segments: seg(12)}}})
		loseTracker(jt, "t1")
		if st, _ := attemptStateOf(jt, a1); st != StateKilled {
			t.Fatalf("restored attempt is %s after its earlier spills were lost, want KILLED", st)
		}
		if ls := freshMapLaunches(t, jt, "t2"); len(ls) != 1 {
			t.Fatalf("fresh map launches: %v, want one", ls)
		}
	})
	t.Run("before the restored attempt announced a spill", func(t *testing.T) {
		jt, _ := newTestJT(t, 1)
		_, a1 := restoredElsewhere(t, jt)
		loseTracker(jt, "t1")
		if st, _ := attemptStateOf(jt, a1); st != StateRunning {
			t.Fatalf("restored attempt is %s, want RUNNING (it may yet be a fresh one)", st)
		}
		heartbeat(t, jt, &mrpb.HeartbeatRequest{Tracker: "t2", CriuAvailable: true,
			Spills:   []*mrpb.SpillAnnouncement{{AttemptId: a1, Spill: 2, Final: true, Segments: seg(12)}},
			Attempts: []*mrpb.AttemptStatus{{AttemptId: a1, State: StateSucceeded, Progress: 1}}})
		if ls := freshMapLaunches(t, jt, "t2"); len(ls) != 1 {
			t.Fatalf("fresh map launches after a success over lost spills: %v, want one", ls)
		}
	})
	t.Run("a fresh attempt that succeeded keeps its output", func(t *testing.T) {
		jt, _ := newTestJT(t, 1)
		heartbeat(t, jt, &mrpb.HeartbeatRequest{Tracker: "t2", InitialContact: true, Instance: "t2"})
		ls := launches(heartbeat(t, jt, &mrpb.HeartbeatRequest{Tracker: "t2", FreeMapSlots: 2}))
		if len(ls) != 1 {
			t.Fatalf("launches %v", ls)
		}
		heartbeat(t, jt, &mrpb.HeartbeatRequest{Tracker: "t1", InitialContact: true, Instance: "t1"})
		heartbeat(t, jt, &mrpb.HeartbeatRequest{Tracker: "t2",
			Spills: []*mrpb.SpillAnnouncement{{AttemptId: ls[0].AttemptId, Spill: 0, Segments: seg(1)},
				{AttemptId: ls[0].AttemptId, Spill: 1, Final: true, Segments: seg(2)}},
			Attempts: []*mrpb.AttemptStatus{{AttemptId: ls[0].AttemptId, State: StateSucceeded, Progress: 1}}})
		loseTracker(jt, "t1")
		if ls := freshMapLaunches(t, jt, "t2"); len(ls) != 0 {
			t.Fatalf("map launches after losing a tracker that held none of its output: %v", ls)
		}
	})
}
