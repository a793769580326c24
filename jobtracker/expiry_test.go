package jobtracker

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"gomr/mrpb"
)

// TestExpiryPassLooksAtWhatIsDue checks the expiry's ordered lists
// (expiry.go) against the rule they stand for: of two trackers, the one
// that keeps heartbeating stays and the silent one is declared lost once
// silent for the expiry; a launch the tracker acknowledged is never failed
// for want of an acknowledgement, however long it runs.
func TestExpiryPassLooksAtWhatIsDue(t *testing.T) {
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	jt, _ := newTestJTAt(t, t.TempDir(), 4, func() time.Time { return clock })
	expiry := jt.cfg.Duration("mapreduce.jobtracker.expire.trackers.interval")
	first := rawHeartbeat(t, jt, &mrpb.HeartbeatRequest{Tracker: "t1", InitialContact: true, FreeMapSlots: 2})
	rawHeartbeat(t, jt, &mrpb.HeartbeatRequest{Tracker: "t2", InitialContact: true})
	if len(launches(first)) == 0 {
		t.Fatal("no launch on t1")
	}
	att := launches(first)[0].AttemptId
	running := []*mrpb.AttemptStatus{{AttemptId: att, State: StateRunning, Progress: 0.1}}
	// t1 acknowledges the launch and reports the attempt; t2 goes silent.
	resp := rawHeartbeat(t, jt, &mrpb.HeartbeatRequest{Tracker: "t1", Incarnation: first.Incarnation, ResponseId: first.ResponseId, Attempts: running})
	for step := 0; step < 4; step++ {
		clock = clock.Add(expiry / 2)
		resp = rawHeartbeat(t, jt, &mrpb.HeartbeatRequest{Tracker: "t1", Incarnation: first.Incarnation, ResponseId: resp.ResponseId, Attempts: running})
		jt.mu.Lock()
		jt.expirePassLocked(clock)
		_, t1 := jt.trackers["t1"]
		_, t2 := jt.trackers["t2"]
		jt.unlock()
		if !t1 {
			t.Fatalf("step %d: t1, heartbeating, was declared lost", step)
		}
		if wantT2 := step < 2; t2 != wantT2 {
			t.Fatalf("step %d: t2 silent for %v is live: %v, want %v", step, time.Duration(step+1)*expiry/2, t2, wantT2)
		}
	}
	if st, diag := attemptStateOf(jt, att); st != StateRunning {
		t.Fatalf("acknowledged attempt %s is %s (%s) after %v", att, st, diag, 2*expiry)
	}
}

// TestListsAcrossChunks lists more jobs than one hold of the lock reads
// (listChunk): ListJobs and the web UI's job list give every job once, in
// submission order.
func TestListsAcrossChunks(t *testing.T) {
	dir := t.TempDir()
	jt, _ := newTestJTAt(t, dir, 0, nil)
	const n = 2*listChunk + 5
	var ids []string
	for i := range n {
		sub := filepath.Join(dir, fmt.Sprint(i))
		if err := os.Mkdir(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, submitWordCountOn(t, jt, sub, 1, func(int) []string { return nil }))
	}
	resp, err := jt.ListJobs(context.Background(), &mrpb.ListJobsRequest{All: true})
	if err != nil {
		t.Fatal(err)
	}
	infos := jt.listJobs(jt.jobsSnapshot(false), allJobs, true, "/api/jobs").Jobs
	if len(resp.Jobs) != n || len(infos) != n {
		t.Fatalf("listed %d jobs (rpc), %d (web UI); want %d", len(resp.Jobs), len(infos), n)
	}
	for i, id := range ids {
		if resp.Jobs[i].JobId != id || infos[i].ID != id {
			t.Fatalf("job %d: listed %s (rpc), %s (web UI); want %s", i, resp.Jobs[i].JobId, infos[i].ID, id)
		}
	}
}
