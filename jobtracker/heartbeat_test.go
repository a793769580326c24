package jobtracker

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"gomr/internal/promexport"
	"gomr/mr"
	"gomr/mrpb"
)

// rawHeartbeat sends req as it is (no asTracker), from tracker t1 on h1.
func rawHeartbeat(t *testing.T, jt *JobTracker, req *mrpb.HeartbeatRequest) *mrpb.HeartbeatResponse {
	t.Helper()
	if req.Tracker == "" {
		req.Tracker = "t1"
	}
	req.Host, req.MapSlots, req.ReduceSlots, req.AcceptNewTasks = "h1", 2, 1, true
	resp, err := jt.Heartbeat(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func attemptStateOf(jt *JobTracker, id string) (string, string) {
	jt.mu.Lock()
	defer jt.unlock()
	_, a := jt.findAttempt(id)
	if a == nil {
		return "", ""
	}
	return a.state.String(), a.diag
}

// A reply that carried a launch and never arrived is sent again: the
// tracker's next heartbeat names the reply before it, and the launch is in
// the answer. On the old protocol the attempt stayed RUNNING at the
// JobTracker while no tracker ran it, and the job hung.
func TestLostReplyIsSentAgain(t *testing.T) {
	jt, _ := newTestJT(t, 1)
	first := rawHeartbeat(t, jt, &mrpb.HeartbeatRequest{InitialContact: true, FreeMapSlots: 2, Instance: "p1"})
	ls := launches(first)
	if len(ls) != 1 || first.ResponseId != 1 || first.Incarnation == "" {
		t.Fatalf("first reply: id %d, incarnation %q, launches %v", first.ResponseId, first.Incarnation, ls)
	}
	inc := first.Incarnation
	// Reply 1 is lost: the tracker still names reply 0 and runs nothing.
	for i := 0; i < 3; i++ {
		again := rawHeartbeat(t, jt, &mrpb.HeartbeatRequest{Incarnation: inc, ResponseId: 0, FreeMapSlots: 2})
		got := launches(again)
		if len(got) != 1 || got[0].AttemptId != ls[0].AttemptId {
			t.Fatalf("heartbeat %d after the lost reply: launches %v, want %s again", i, got, ls[0].AttemptId)
		}
		if st, _ := attemptStateOf(jt, ls[0].AttemptId); st != StateRunning {
			t.Fatalf("attempt %s is %s while its launch is undelivered", ls[0].AttemptId, st)
		}
		if again.ResponseId != int64(2+i) {
			t.Fatalf("reply id %d, want %d", again.ResponseId, 2+i)
		}
	}
	// Reply 4 arrives: the tracker acknowledges it and reports the attempt.
	resp := rawHeartbeat(t, jt, &mrpb.HeartbeatRequest{Incarnation: inc, ResponseId: 4, FreeMapSlots: 1,
		Attempts: []*mrpb.AttemptStatus{{AttemptId: ls[0].AttemptId, State: StateRunning, Progress: 0.2}}})
	if len(resp.Actions) != 0 {
		t.Fatalf("actions after the acknowledgement: %v", resp.Actions)
	}
	if st, _ := attemptStateOf(jt, ls[0].AttemptId); st != StateRunning {
		t.Fatalf("attempt is %s, want RUNNING", st)
	}
	if jt.lostReplies != 3 {
		t.Fatalf("lost replies counted: %d, want 3", jt.lostReplies)
	}
}

// An attempt whose launch the tracker acknowledged and that it does not
// report has vanished: it fails with a diagnostic naming the tracker, and
// the task is launched again.
func TestVanishedAttemptFailsAndReruns(t *testing.T) {
	jt, _ := newTestJT(t, 1)
	first := rawHeartbeat(t, jt, &mrpb.HeartbeatRequest{InitialContact: true, FreeMapSlots: 2})
	att := launches(first)[0].AttemptId
	resp := rawHeartbeat(t, jt, &mrpb.HeartbeatRequest{Incarnation: first.Incarnation, ResponseId: first.ResponseId, FreeMapSlots: 2})
	st, diag := attemptStateOf(jt, att)
	if st != StateFailed || !strings.Contains(diag, "Lost task attempt: tracker t1 acknowledged its launch (heartbeat reply 1) but does not report it") {
		t.Fatalf("vanished attempt: state %s, diagnostic %q", st, diag)
	}
	retry := launches(resp)
	if len(retry) != 1 || !strings.HasSuffix(retry[0].AttemptId, "_m_000000_1") {
		t.Fatalf("re-run launches %v", retry)
	}
}

// An attempt the JobTracker ended and a tracker still reports running gets
// its kill order again.
func TestKillOfAStillRunningAttemptIsRepeated(t *testing.T) {
	jt, id := newTestJT(t, 1)
	first := rawHeartbeat(t, jt, &mrpb.HeartbeatRequest{InitialContact: true, FreeMapSlots: 2})
	att := launches(first)[0].AttemptId
	if _, err := jt.KillJob(context.Background(), &mrpb.KillJobRequest{JobId: id}); err != nil {
		t.Fatal(err)
	}
	running := []*mrpb.AttemptStatus{{AttemptId: att, State: StateRunning}}
	resp := rawHeartbeat(t, jt, &mrpb.HeartbeatRequest{Incarnation: first.Incarnation, ResponseId: 1, Attempts: running})
	if k := kills(resp); len(k) != 1 || k[0] != att {
		t.Fatalf("kills after the job was killed: %v", k)
	}
	// That reply arrived, and the attempt is still reported running.
	resp = rawHeartbeat(t, jt, &mrpb.HeartbeatRequest{Incarnation: first.Incarnation, ResponseId: resp.ResponseId, Attempts: running})
	if k := kills(resp); len(k) != 1 || k[0] != att {
		t.Fatalf("kills for an attempt still running: %v", k)
	}
}

// A launch that a heartbeating tracker never acknowledges is failed after
// the tracker expiry interval.
func TestUnacknowledgedLaunchExpires(t *testing.T) {
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	jt, _ := newTestJTAt(t, t.TempDir(), 1, func() time.Time { return clock })
	first := rawHeartbeat(t, jt, &mrpb.HeartbeatRequest{InitialContact: true, FreeMapSlots: 2})
	att := launches(first)[0].AttemptId
	expiry := jt.cfg.Duration("mapreduce.jobtracker.expire.trackers.interval")
	clock = clock.Add(expiry / 2)
	rawHeartbeat(t, jt, &mrpb.HeartbeatRequest{Incarnation: first.Incarnation, ResponseId: 0})
	jt.mu.Lock()
	jt.expirePassLocked(clock)
	jt.unlock()
	if st, _ := attemptStateOf(jt, att); st != StateRunning {
		t.Fatalf("attempt %s is %s before the expiry", att, st)
	}
	clock = clock.Add(expiry)
	rawHeartbeat(t, jt, &mrpb.HeartbeatRequest{Incarnation: first.Incarnation, ResponseId: 0})
	jt.mu.Lock()
	jt.expirePassLocked(clock)
	jt.unlock()
	if st, diag := attemptStateOf(jt, att); st != StateFailed || !strings.Contains(diag, "Error launching task: tracker t1 did not acknowledge the launch") {
		t.Fatalf("attempt %s after the expiry: %s %q", att, st, diag)
	}
}

// A second process registering a live tracker's name is refused, naming
// both; its heartbeats without the incarnation are refused too. Once the
// first process no longer listens, the name is free.
func TestTrackerNameIsHeldByOneProcess(t *testing.T) {
	jt, _ := newTestJT(t, 1)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	shuffle := l.Addr().String()
	first := rawHeartbeat(t, jt, &mrpb.HeartbeatRequest{InitialContact: true, Instance: "p1", ShuffleAddress: shuffle, FreeMapSlots: 2})
	att := launches(first)[0].AttemptId

	_, err = jt.Heartbeat(context.Background(), &mrpb.HeartbeatRequest{Tracker: "t1", InitialContact: true, Instance: "p2", ShuffleAddress: "127.0.0.1:1", AcceptNewTasks: true, FreeMapSlots: 2})
	if status.Code(err) != codes.AlreadyExists || !strings.Contains(err.Error(), "tracker name t1 is held by a live tracker") ||
		!strings.Contains(err.Error(), "shuffle "+shuffle) || !strings.Contains(err.Error(), "(shuffle 127.0.0.1:1)") {
		t.Fatalf("second registration: %v", err)
	}
	_, err = jt.Heartbeat(context.Background(), &mrpb.HeartbeatRequest{Tracker: "t1", Incarnation: "forged", ResponseId: 1})
	if status.Code(err) != codes.PermissionDenied || !strings.Contains(err.Error(), "does not carry the incarnation") {
		t.Fatalf("heartbeat with a wrong incarnation: %v", err)
	}
	if st, _ := attemptStateOf(jt, att); st != StateRunning {
		t.Fatalf("the first process's attempt is %s after the refusals", st)
	}
	// The first process retries its registration (its reply was lost): it
	// is accepted as itself.
	again := rawHeartbeat(t, jt, &mrpb.HeartbeatRequest{InitialContact: true, Instance: "p1", ShuffleAddress: shuffle})
	if again.Incarnation == "" || again.Incarnation == first.Incarnation {
		t.Fatalf("re-registration of the same process: incarnation %q (was %q)", again.Incarnation, first.Incarnation)
	}
	// The first process dies: its port no longer answers, and the second
	// process gets the name.
	l.Close()
	resp, err := jt.Heartbeat(context.Background(), &mrpb.HeartbeatRequest{Tracker: "t1", InitialContact: true, Instance: "p2", ShuffleAddress: "127.0.0.1:1"})
	if err != nil || resp.Incarnation == "" {
		t.Fatalf("registration after the first process died: %v", err)
	}
}

// On initial contact a tracker lists the jobs it holds state of; those the
// JobTracker does not know (from before a restart) are purged.
func TestHeldJobsOfUnknownJobsArePurged(t *testing.T) {
	jt, id := newTestJT(t, 1)
	resp := rawHeartbeat(t, jt, &mrpb.HeartbeatRequest{InitialContact: true, HeldJobs: []string{id, "job_1_0001"}})
	var purged []string
	for _, a := range resp.Actions {
		if p := a.GetPurgeJob(); p != "" {
			purged = append(purged, p)
		}
	}
	if len(purged) != 1 || purged[0] != "job_1_0001" {
		t.Fatalf("purged %v, want [job_1_0001]", purged)
	}
}

// A JobTracker restarted within the minute of its ident gives no job id
// twice, and records the jobs the previous process had not finished as
// FAILED with the reason. Before, the next job got the lost job's id, the
// trackers still held the lost job's secret under it, and every shuffle
// fetch of the new job was refused.
func TestRestartNeitherReusesIDsNorForgetsJobs(t *testing.T) {
	dir := t.TempDir()
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := func() time.Time { return clock }
	noRecovery := map[string]string{"mapreduce.jobtracker.restart.recover": "false"}
	jt1, lost := newTestJTWith(t, dir, 1, now, noRecovery)
	clock = clock.Add(10 * time.Second)
	jt2, next := newTestJTWith(t, dir, 1, now, noRecovery)
	if lost != "job_202601010000_0001" || next != "job_202601010000_0002" {
		t.Fatalf("job ids %s then %s after a restart in the same minute", lost, next)
	}
	_ = jt1
	rec, err := jt2.history.Read(lost)
	if err != nil {
		t.Fatalf("the lost job has no history: %v", err)
	}
	if !strings.Contains(string(rec), `"state":"FAILED"`) ||
		!strings.Contains(string(rec), "lost: the JobTracker restarted while the job ran (submitted 2026-01-01T00:00:00Z)") {
		t.Fatalf("history of the lost job:\n%s", rec)
	}
	staged, err := jt2.staging.List()
	if err != nil || len(staged) != 1 || staged[0].ID != next {
		t.Fatalf("staged jobs after the restart: %v, %v", staged, err)
	}
}

// The launches of a lost reply go out again, and their slots are not
// offered a second time: the tracker reports them free (it never got the
// launches), but they are taken. Before, the resent launches and new ones
// together ran more attempts than the tracker has slots.
func TestLostReplyLaunchesKeepTheirSlots(t *testing.T) {
	jt, _ := newTestJT(t, 5)
	first := rawHeartbeat(t, jt, &mrpb.HeartbeatRequest{InitialContact: true, FreeMapSlots: 2, Instance: "p1"})
	if ls := launches(first); len(ls) != 2 {
		t.Fatalf("first reply launches %d maps, want 2", len(ls))
	}
	again := rawHeartbeat(t, jt, &mrpb.HeartbeatRequest{Incarnation: first.Incarnation, ResponseId: 0, FreeMapSlots: 2})
	if ls := launches(again); len(ls) != 2 {
		var ids []string
		for _, l := range ls {
			ids = append(ids, l.AttemptId)
		}
		t.Fatalf("after the lost reply: %d launches %v, want the 2 sent again and no new one", len(ls), ids)
	}
	jt.mu.Lock()
	running := len(jt.trackers["t1"].attempts)
	jt.unlock()
	if running != 2 {
		t.Fatalf("the JobTracker has %d attempts on a tracker of 2 map slots", running)
	}
}

// The planner's mirror of a tracker's checkpoint/restore queue runs as
// many operations at once as the tracker's heartbeat says it does; a
// tracker that does not say runs them one at a time.
func TestHeartbeatCarriesCheckpointConcurrency(t *testing.T) {
	jt, _ := newTestJT(t, 0)
	concurrency := func() int {
		jt.mu.Lock()
		defer jt.unlock()
		return jt.driver.Planner().Queue().Concurrency("t1")
	}
	first := rawHeartbeat(t, jt, &mrpb.HeartbeatRequest{InitialContact: true, Instance: "p1", CrQueueMaxConcurrent: 2})
	if n := concurrency(); n != 2 {
		t.Fatalf("after a heartbeat saying 2: the mirror runs %d at once", n)
	}
	rawHeartbeat(t, jt, &mrpb.HeartbeatRequest{Incarnation: first.Incarnation, ResponseId: first.ResponseId})
	if n := concurrency(); n != 1 {
		t.Fatalf("after a heartbeat saying nothing: the mirror runs %d at once, want 1", n)
	}
}

// TestJobEndInHeartbeatDoesNotWaitForHistory: a heartbeat that ends a job
// (its map failed for the last time) is answered while the job's history
// file is still being written, and the file is written after: the history
// write, blocked here on a FIFO at the file's temporary path until the test
// reads it, is off the reply path. Until it ends the job is historyWriting
// (GetJobHistory waits, the retirement pass keeps it) and stays in the
// system directory.
func TestJobEndInHeartbeatDoesNotWaitForHistory(t *testing.T) {
	dir := t.TempDir()
	jt, id := newTestJTWith(t, dir, 1, nil, map[string]string{"mapreduce.map.maxattempts": "1"})
	tmp := filepath.Join(dir, "history", id+".jsonl.tmp")
	if err := syscall.Mkfifo(tmp, 0o644); err != nil {
		t.Fatal(err)
	}
	ls := launches(heartbeat(t, jt, &mrpb.HeartbeatRequest{InitialContact: true, FreeMapSlots: 1}))
	if len(ls) != 1 {
		t.Fatalf("launched %d maps, want 1", len(ls))
	}
	req := &mrpb.HeartbeatRequest{Tracker: "t1", Host: "h1", MapSlots: 2, ReduceSlots: 1, AcceptNewTasks: true,
		Attempts: []*mrpb.AttemptStatus{{AttemptId: ls[0].AttemptId, State: StateFailed, Diagnostic: "boom"}}}
	asTracker(jt, req)
	answered := make(chan error, 1)
	go func() {
		_, err := jt.Heartbeat(context.Background(), req)
		answered <- err
	}()
	select {
	case err := <-answered:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		// Unblock the write so that the test can end.
		if f, err := os.Open(tmp); err == nil {
			io.Copy(io.Discard, f)
			f.Close()
		}
		t.Fatal("the heartbeat that ended the job waited for its history file")
	}
	jt.mu.Lock()
	j := jt.jobs[id]
	state, hist, done := j.state, j.history, j.historyDone
	jt.unlock()
	if state != jobFailed || hist != historyWriting {
		t.Fatalf("job after the heartbeat: %v, history %v; want failed, being written", state, hist)
	}
	if _, err := os.Stat(filepath.Join(dir, "system", id+".json")); err != nil {
		t.Errorf("the job left the system directory before its history was written: %v", err)
	}
	// Read the history as it is written: the write ends.
	f, err := os.Open(tmp)
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(f)
	f.Close()
	if err != nil || !bytes.Contains(data, []byte(id)) {
		t.Fatalf("history written through the FIFO: %q, %v", data, err)
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the history write did not end")
	}
	jt.mu.Lock()
	hist = j.history
	jt.unlock()
	if hist != historyWritten {
		t.Fatalf("history %v once written, want written", hist)
	}
}

// TestQueuedHeartbeatsAreAnsweredInCappedBatches: heartbeats queued
// behind another holder of the lock are all answered, in batches of at
// most maxHeartbeatBatch under one hold each (a batch's replies go out
// together, so an uncapped one made every queued heartbeat wait for the
// whole queue).
func TestQueuedHeartbeatsAreAnsweredInCappedBatches(t *testing.T) {
	jt, _ := newHTTPTestJT(t, nil)
	holds := func() float64 {
		fams := scrapeMetrics(t, httpGet(t, jt.HTTPHandler(), "GET", "/metrics").Body.String())
		return promexport.Samples(fams["gomr_jobtracker_lock_held_seconds"])["holder=heartbeat"]
	}
	before := holds()
	const queued = 2*maxHeartbeatBatch + 5
	jt.lock(holderClient)
	errs := make(chan error, queued)
	beat := func(i int) {
		// Unknown trackers: each is told to register.
		resp, err := jt.Heartbeat(context.Background(), &mrpb.HeartbeatRequest{Tracker: fmt.Sprintf("stranger-%d", i)})
		if err == nil && !resp.Reinit {
			err = fmt.Errorf("heartbeat of stranger-%d: no reinit", i)
		}
		errs <- err
	}
	// waitQueue waits for the combiner to be at work with n heartbeats
	// queued behind it.
	waitQueue := func(n int) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
			jt.hbMu.Lock()
			got, combining := len(jt.hbQueue), jt.hbCombining
			jt.hbMu.Unlock()
			if got == n && combining {
				return
			}
			if time.Now().After(deadline) {
				jt.unlock()
				t.Fatalf("%d heartbeats queued (combining %v), want %d behind a combiner", got, combining, n)
			}
		}
	}
	// The first takes its batch, itself, and waits for the lock; the
	// others queue behind it.
	go beat(0)
	waitQueue(0)
	for i := 1; i < queued; i++ {
		go beat(i)
	}
	waitQueue(queued - 1)
	jt.unlock()
	for range queued {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if got, want := holds()-before, float64(1+(queued-1+maxHeartbeatBatch-1)/maxHeartbeatBatch); got != want {
		t.Errorf("%d queued heartbeats answered in %v holds of the lock, want %v (batches of at most %d)", queued-1, got-1, want-1, maxHeartbeatBatch)
	}
	jt.hbMu.Lock()
	defer jt.hbMu.Unlock()
	if len(jt.hbQueue) != 0 || jt.hbCombining {
		t.Errorf("after the batches: %d heartbeats queued, combining %v; want none and no combiner", len(jt.hbQueue), jt.hbCombining)
	}
}

// A RUNNING status without counters keeps the attempt's last ones (its
// tracker sends them only every mapreduce.tasktracker.counters.update.interval):
// the job's counters do not drop to nothing between two that carry them,
// and move when one does; a final status replaces them.
func TestRunningStatusWithoutCountersKeepsThem(t *testing.T) {
	jt, id := newTestJT(t, 1)
	first := rawHeartbeat(t, jt, &mrpb.HeartbeatRequest{InitialContact: true, FreeMapSlots: 2})
	att := launches(first)[0].AttemptId
	jobCounter := func() int64 {
		t.Helper()
		st, err := jt.GetJobStatus(context.Background(), &mrpb.JobStatusRequest{JobId: id})
		if err != nil {
			t.Fatal(err)
		}
		return countersFromProto(st.Counters).Get("g", "n")
	}
	with := func(state string, v int64) []*mrpb.AttemptStatus {
		st := &mrpb.AttemptStatus{AttemptId: att, State: state, Progress: 0.5}
		if v >= 0 {
			st.Counters = []*mrpb.Counter{{Group: "g", Name: "n", Value: v}}
		}
		return []*mrpb.AttemptStatus{st}
	}
	resp := first
	for i, s := range []struct {
		state string
		sent  int64 // -1: no counters
		want  int64
	}{
		{StateRunning, 5, 5},
		{StateRunning, -1, 5},
		{StateRunning, -1, 5},
		{StateRunning, 9, 9},
		{StateRunning, -1, 9},
		{StateSucceeded, 11, 11},
	} {
		req := &mrpb.HeartbeatRequest{Incarnation: first.Incarnation, ResponseId: resp.ResponseId, Attempts: with(s.state, s.sent)}
		if s.state == StateSucceeded {
			req.Spills = []*mrpb.SpillAnnouncement{{AttemptId: att, Spill: 0, Final: true, Segments: seg(1)}}
		}
		resp = rawHeartbeat(t, jt, req)
		if got := jobCounter(); got != s.want {
			st, diag := attemptStateOf(jt, att)
			t.Fatalf("status %d (%s, counters %d): the job's counter is %d, want %d (attempt %s %q)", i, s.state, s.sent, got, s.want, st, diag)
		}
	}
}

// TestCountersFromProto: a status's counters become a set by group and
// name, repeats summed, groups interleaved or not; and a set kept for a
// status of a 4-counter group and a 20-counter group takes no more than
// one with its maps made for their own counters (they were made for all
// the counters left: the first group's in the room of 24).
func TestCountersFromProto(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []*mrpb.Counter
		want mr.CounterSet
	}{
		{"none", nil, mr.CounterSet{}},
		{"one group", []*mrpb.Counter{{Group: "a", Name: "x", Value: 1}, {Group: "a", Name: "y", Value: 2}},
			mr.CounterSet{"a": {"x": 1, "y": 2}}},
		{"interleaved, repeats summed", []*mrpb.Counter{{Group: "a", Name: "x", Value: 1}, {Group: "b", Name: "x", Value: 5},
			{Group: "a", Name: "x", Value: 2}, {Group: "b", Name: "y", Value: 7}},
			mr.CounterSet{"a": {"x": 3}, "b": {"x": 5, "y": 7}}},
	} {
		if got := countersFromProto(tc.in); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
		if got := countersOfStatus(tc.in).Set(); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: countersOfStatus %v, want %v", tc.name, got, tc.want)
		}
	}
}
