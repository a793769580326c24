package jobtracker

import (
	"fmt"
	"testing"
	"time"

	"gomr/mrpb"
)

// blacklistJT is a JobTracker with trackers t1..tN registered (no free
// slots) and a wordcount job of maps maps, blacklisting a tracker for a
// job after 2 failures and across jobs after 1 fault.
func blacklistJT(t *testing.T, trackers, maps int, clock *time.Time) (*JobTracker, string) {
	t.Helper()
	dir := t.TempDir()
	jt, _ := newTestJTWith(t, dir, 0, func() time.Time { return *clock }, map[string]string{
		"mapreduce.job.maxtaskfailures.per.tracker":      "2",
		"mapreduce.map.maxattempts":                      "10",
		"mapreduce.jobtracker.tasktracker.maxblacklists": "1",
	})
	for i := 1; i <= trackers; i++ {
		heartbeat(t, jt, &mrpb.HeartbeatRequest{Tracker: fmt.Sprintf("t%d", i), InitialContact: true})
	}
	return jt, submitWordCount(t, jt, dir, maps)
}

// failTwiceOnT1 launches two maps on t1 and fails them.
func failTwiceOnT1(t *testing.T, jt *JobTracker) {
	t.Helper()
	ls := launches(heartbeat(t, jt, &mrpb.HeartbeatRequest{Tracker: "t1", FreeMapSlots: 2}))
	if len(ls) != 2 {
		t.Fatalf("t1 got %d maps, want 2", len(ls))
	}
	var failed []*mrpb.AttemptStatus
	for _, l := range ls {
		failed = append(failed, &mrpb.AttemptStatus{AttemptId: l.AttemptId, State: StateFailed, Diagnostic: "disk full"})
	}
	heartbeat(t, jt, &mrpb.HeartbeatRequest{Tracker: "t1", Attempts: failed})
}

// finishOn runs every pending task of the job on tracker name and waits
// for the job to succeed.
func finishOn(t *testing.T, jt *JobTracker, name, id string) {
	t.Helper()
	ls := launches(heartbeat(t, jt, &mrpb.HeartbeatRequest{Tracker: name, FreeMapSlots: 10}))
	var done []*mrpb.AttemptStatus
	var spills []*mrpb.SpillAnnouncement
	for _, l := range ls {
		done = append(done, &mrpb.AttemptStatus{AttemptId: l.AttemptId, State: StateSucceeded})
		spills = append(spills, &mrpb.SpillAnnouncement{AttemptId: l.AttemptId, Spill: 0, Final: true, Segments: seg(1)})
	}
	rs := launches(heartbeat(t, jt, &mrpb.HeartbeatRequest{Tracker: name, Attempts: done, Spills: spills, FreeReduceSlots: 1}))
	if len(rs) != 1 {
		t.Fatalf("reduce launches on %s: %v", name, attemptIDs(rs))
	}
	heartbeat(t, jt, &mrpb.HeartbeatRequest{Tracker: name, Attempts: []*mrpb.AttemptStatus{{AttemptId: rs[0].AttemptId, State: StateSucceeded}}})
	waitJob(t, jt, id, StateSucceeded)
}

func TestTrackerBlacklisting(t *testing.T) {
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	jt, id := blacklistJT(t, 5, 3, &clock)
	failTwiceOnT1(t, jt)
	// Map 2 never failed on t1, but the job has blacklisted t1.
	if ls := launches(heartbeat(t, jt, &mrpb.HeartbeatRequest{Tracker: "t1", FreeMapSlots: 2})); len(ls) != 0 {
		t.Fatalf("a job that blacklisted t1 launched %v there", attemptIDs(ls))
	}
	st, _ := jt.jobStatusNoCountersLocked(jt.jobs[id])
	if len(st.BlacklistedTrackers) != 1 || st.BlacklistedTrackers[0] != "t1" {
		t.Fatalf("job's blacklisted trackers: %v", st.BlacklistedTrackers)
	}
	finishOn(t, jt, "t2", id)

	// The job succeeded having blacklisted t1: one fault, and one is the
	// limit. t1 gets no task of the next job.
	next := submitWordCount(t, jt, t.TempDir(), 1)
	if ls := launches(heartbeat(t, jt, &mrpb.HeartbeatRequest{Tracker: "t1", FreeMapSlots: 2})); len(ls) != 0 {
		t.Fatalf("blacklisted t1 got %v", attemptIDs(ls))
	}
	trackers := jt.trackerStatuses()
	if !trackers[0].Blacklisted || trackers[0].BlacklistReason != "blacklisted by 1 jobs within 3h0m0s" || trackers[1].Blacklisted {
		t.Fatalf("tracker statuses: %v", trackers)
	}
	view := jt.clusterViewLocked(clock, nil)
	if view.Trackers != 4 || view.MapSlots != 8 {
		t.Fatalf("the policy's view counts the blacklisted tracker: %d trackers, %d map slots", view.Trackers, view.MapSlots)
	}
	// Its fault ages out of the window: t1 gets tasks again.
	clock = clock.Add(3*time.Hour + time.Minute)
	jt.mu.Lock()
	jt.refreshBlacklistLocked(clock)
	jt.unlock()
	if ls := launches(heartbeat(t, jt, &mrpb.HeartbeatRequest{Tracker: "t1", FreeMapSlots: 2})); len(ls) != 1 {
		t.Fatalf("t1 after its fault aged out: launches %v of job %s", attemptIDs(ls), next)
	}
}

// On a small cluster a job's blacklist is ignored once it covers a quarter
// of the trackers (Hadoop's rule): with two trackers, never applied.
func TestJobBlacklistIgnoredOnSmallCluster(t *testing.T) {
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	jt, _ := blacklistJT(t, 2, 3, &clock)
	failTwiceOnT1(t, jt)
	if ls := launches(heartbeat(t, jt, &mrpb.HeartbeatRequest{Tracker: "t1", FreeMapSlots: 2})); len(ls) != 1 {
		t.Fatalf("t1 got %v, want map 2", attemptIDs(ls))
	}
}

// A restarted tracker (a new process under its name) starts with no
// faults.
func TestRestartedTrackerLeavesTheBlacklist(t *testing.T) {
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	jt, id := blacklistJT(t, 5, 3, &clock)
	failTwiceOnT1(t, jt)
	finishOn(t, jt, "t2", id)
	if !jt.trackerStatuses()[0].Blacklisted {
		t.Fatal("t1 is not blacklisted")
	}
	clock = clock.Add(jt.cfg.Duration("mapreduce.jobtracker.expire.trackers.interval") + time.Second)
	heartbeat(t, jt, &mrpb.HeartbeatRequest{Tracker: "t1", InitialContact: true, Instance: "restarted"})
	if jt.trackerStatuses()[0].Blacklisted || len(jt.faults["t1"]) != 0 {
		t.Fatal("the restarted t1 is still blacklisted")
	}
}

func attemptIDs(ls []*mrpb.LaunchTask) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = l.AttemptId
	}
	return out
}
