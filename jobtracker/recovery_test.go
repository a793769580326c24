package jobtracker

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gomr/mr"
	"gomr/mrpb"
)

// recoveryScenario runs, on a first JobTracker, a job of 2 maps and 2
// reduces until map 0 has succeeded on t1 (shuffle 127.0.0.1:7001) and map
// 1 runs, then starts a second JobTracker on the same directories, as a
// restart would. It returns the second JobTracker, the job id and map 0's
// attempt.
func recoveryScenario(t *testing.T, clock *time.Time, overrides map[string]string) (*JobTracker, string, string, string) {
	t.Helper()
	dir := t.TempDir()
	now := func() time.Time { return *clock }
	jt1, _ := newTestJTWith(t, dir, 0, now, overrides)
	in := filepath.Join(dir, "in.txt")
	if err := os.WriteFile(in, []byte("a b c\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	spec, _ := json.Marshal(&mr.JobSpec{Def: "wordcount", Inputs: []string{in}, Output: out, NumReduces: 2})
	sj, _ := json.Marshal([]mr.Split{{Path: in, Length: 6}, {Path: in, Length: 6}})
	resp, err := jt1.SubmitJob(context.Background(), &mrpb.SubmitJobRequest{SpecJson: spec, SplitsJson: sj})
	if err != nil {
		t.Fatal(err)
	}
	id := resp.JobId
	ls := launches(heartbeat(t, jt1, &mrpb.HeartbeatRequest{InitialContact: true, Instance: "p1", ShuffleAddress: "127.0.0.1:7001", FreeMapSlots: 2}))
	if len(ls) != 2 {
		t.Fatalf("launches %v", attemptIDs(ls))
	}
	heartbeat(t, jt1, &mrpb.HeartbeatRequest{ShuffleAddress: "127.0.0.1:7001",
		Spills: []*mrpb.SpillAnnouncement{{AttemptId: ls[0].AttemptId, Spill: 0, Final: true,
			Segments: []*mrpb.Segment{{Length: 10, RawLength: 20, Records: 3, Crc: 7}, {Length: 11, RawLength: 21, Records: 4, Crc: 8}}}},
		Attempts: []*mrpb.AttemptStatus{{AttemptId: ls[0].AttemptId, State: StateSucceeded}, {AttemptId: ls[1].AttemptId, State: StateRunning, Progress: 0.5}}})
	*clock = clock.Add(5 * time.Second)
	jt2, _ := newTestJTWith(t, dir, 0, now, overrides)
	return jt2, id, ls[0].AttemptId, ls[1].AttemptId
}

// The JobTracker restarts while map 0 is done and map 1 runs; t1, which
// holds map 0's output, registers again: map 0 is not re-run, its spill is
// published, map 1 runs again under a new attempt number, and the job
// completes with every attempt in its history.
func TestRecoveryKeepsCompletedMaps(t *testing.T) {
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	jt, id, m0, m1 := recoveryScenario(t, &clock, nil)
	st, err := jt.GetJobStatus(context.Background(), &mrpb.JobStatusRequest{JobId: id})
	if err != nil || st.State != StateRunning || st.Maps.Succeeded != 1 || st.Maps.Pending != 1 {
		t.Fatalf("recovered job: %v %+v", err, st)
	}
	ev, _ := jt.GetMapEvents(context.Background(), &mrpb.MapEventsRequest{JobId: id, Reduce: 1})
	if len(ev.Events) != 0 {
		t.Fatalf("map output published before its tracker confirmed it: %v", ev.Events)
	}
	// t1's next heartbeat is from its old registration: reinit, then it
	// registers again, listing what it holds.
	if r := heartbeat(t, jt, &mrpb.HeartbeatRequest{Incarnation: "old", ResponseId: 2}); !r.Reinit {
		t.Fatal("the restarted jobtracker did not reinitialize t1")
	}
	ls := launches(heartbeat(t, jt, &mrpb.HeartbeatRequest{InitialContact: true, Instance: "p1", ShuffleAddress: "127.0.0.1:7001",
		HeldJobs: []string{id}, HeldAttempts: []string{m0, m1}, FreeMapSlots: 2}))
	if len(ls) != 1 || ls[0].AttemptId != strings.TrimSuffix(m1, "_0")+"_1000" {
		t.Fatalf("launches after re-registration: %v, want map 1 as attempt 1000", attemptIDs(ls))
	}
	ev, _ = jt.GetMapEvents(context.Background(), &mrpb.MapEventsRequest{JobId: id, Reduce: 1})
	if len(ev.Events) != 1 || ev.Events[0].AttemptId != m0 || ev.Events[0].ShuffleAddress != "127.0.0.1:7001" || ev.Events[0].Segment.Crc != 8 {
		t.Fatalf("events after confirmation: %v", ev.Events)
	}
	// Run the rest.
	rs := launches(heartbeat(t, jt, &mrpb.HeartbeatRequest{ShuffleAddress: "127.0.0.1:7001", FreeReduceSlots: 1,
		Spills:   []*mrpb.SpillAnnouncement{{AttemptId: ls[0].AttemptId, Spill: 0, Final: true, Segments: seg2(9)}},
		Attempts: []*mrpb.AttemptStatus{{AttemptId: ls[0].AttemptId, State: StateSucceeded}}}))
	rs = append(rs, launches(heartbeat(t, jt, &mrpb.HeartbeatRequest{ShuffleAddress: "127.0.0.1:7001", FreeReduceSlots: 1,
		Attempts: []*mrpb.AttemptStatus{{AttemptId: rs[0].AttemptId, State: StateSucceeded}}}))...)
	heartbeat(t, jt, &mrpb.HeartbeatRequest{ShuffleAddress: "127.0.0.1:7001", Attempts: []*mrpb.AttemptStatus{{AttemptId: rs[1].AttemptId, State: StateSucceeded}}})
	waitJob(t, jt, id, StateSucceeded)
	waitHistoryWritten(t, jt, id)
	st, _ = jt.GetJobStatus(context.Background(), &mrpb.JobStatusRequest{JobId: id})
	if got := countersFromProto(st.Counters).Get(mr.JobCounterGroup, mr.TotalLaunchedMaps); got != 3 {
		t.Errorf("TOTAL_LAUNCHED_MAPS = %d, want 3 (2 before the restart, map 1 again after)", got)
	}
	hist, _ := jt.history.Read(id)
	for _, a := range []string{m0, ls[0].AttemptId, rs[0].AttemptId, rs[1].AttemptId} {
		if !strings.Contains(string(hist), `"attempt_id":"`+a+`"`) {
			t.Errorf("history lacks attempt %s", a)
		}
	}
	if staged, _ := jt.staging.List(); len(staged) != 0 {
		t.Errorf("the finished job is still staged: %v", staged)
	}
}

func seg2(crc uint32) []*mrpb.Segment {
	return []*mrpb.Segment{{Length: 10, RawLength: 20, Records: 3, Crc: crc}, {Length: 10, RawLength: 20, Records: 3, Crc: crc + 1}}
}

// A kept map whose tracker comes back from another shuffle address (it
// restarted too, and lost the job's secret) or not at all runs again.
func TestRecoveryRerunsMapsWhoseTrackerIsGone(t *testing.T) {
	t.Run("tracker restarted", func(t *testing.T) {
		clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		jt, id, m0, m1 := recoveryScenario(t, &clock, nil)
		ls := launches(heartbeat(t, jt, &mrpb.HeartbeatRequest{InitialContact: true, Instance: "p2", ShuffleAddress: "127.0.0.1:7002",
			HeldJobs: []string{id}, HeldAttempts: []string{m0, m1}, FreeMapSlots: 2}))
		if len(ls) != 2 {
			t.Fatalf("launches %v, want both maps", attemptIDs(ls))
		}
	})
	t.Run("tracker never back", func(t *testing.T) {
		clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		jt, id, _, _ := recoveryScenario(t, &clock, map[string]string{"mapreduce.jobtracker.restart.tracker-wait": "10000"})
		clock = clock.Add(11 * time.Second)
		jt.mu.Lock()
		jt.expireRecoveredLocked(clock)
		jt.unlock()
		st, _ := jt.GetJobStatus(context.Background(), &mrpb.JobStatusRequest{JobId: id})
		if st.Maps.Succeeded != 0 || st.Maps.Pending != 2 {
			t.Fatalf("maps after the wait: %+v", st.Maps)
		}
	})
}

// A reduce that committed before the restart (its part file is in the
// output) is not run again; one whose part file is missing is.
func TestRecoveryKeepsCommittedReduces(t *testing.T) {
	for _, committed := range []bool{true, false} {
		clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		dir := t.TempDir()
		now := func() time.Time { return clock }
		jt1, id := newTestJTWith(t, dir, 1, now, nil)
		m := launches(heartbeat(t, jt1, &mrpb.HeartbeatRequest{InitialContact: true, FreeMapSlots: 1}))[0].AttemptId
		r := launches(heartbeat(t, jt1, &mrpb.HeartbeatRequest{FreeReduceSlots: 1,
			Spills:   []*mrpb.SpillAnnouncement{{AttemptId: m, Spill: 0, Final: true, Segments: seg(1)}},
			Attempts: []*mrpb.AttemptStatus{{AttemptId: m, State: StateSucceeded}}}))[0].AttemptId
		jt1.mu.Lock()
		out := jt1.jobs[id].spec.Output
		jt1.jobs[id].committing = true // the JobTracker dies before it commits the job
		jt1.unlock()
		if committed {
			if err := os.WriteFile(filepath.Join(out, mr.PartName(false, 0)), []byte("a\t1\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		heartbeat(t, jt1, &mrpb.HeartbeatRequest{Attempts: []*mrpb.AttemptStatus{{AttemptId: r, State: StateSucceeded}}})
		jt2, _ := newTestJTWith(t, dir, 0, now, nil)
		if committed {
			waitJob(t, jt2, id, StateSucceeded)
			waitHistoryWritten(t, jt2, id)
			if data, err := os.ReadFile(filepath.Join(dir, "system", id+".events")); err == nil {
				t.Fatalf("the event log outlived the job:\n%s", data)
			}
			continue
		}
		st, _ := jt2.GetJobStatus(context.Background(), &mrpb.JobStatusRequest{JobId: id})
		if st.State != StateRunning || st.Reduces.Pending != 1 || st.Maps.Succeeded != 1 {
			t.Fatalf("recovered job whose reduce output is missing: %s maps %+v reduces %+v", st.State, st.Maps, st.Reduces)
		}
	}
}

// A map kept across the restart counts its tracker among the job's: when
// the job ends, that tracker is told to purge it, even if it ran nothing
// of the job after the restart (here t2 runs the rest). Before, only the
// trackers of attempts started by the new JobTracker were, and the job's
// directory stayed on t1.
func TestRecoveryPurgesTheTrackerOfAKeptMap(t *testing.T) {
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	jt, id, m0, m1 := recoveryScenario(t, &clock, nil)
	// t1 registers again holding map 0's output, with no free slot.
	heartbeat(t, jt, &mrpb.HeartbeatRequest{InitialContact: true, Instance: "p1", ShuffleAddress: "127.0.0.1:7001",
		HeldJobs: []string{id}, HeldAttempts: []string{m0, m1}})
	ls := launches(heartbeat(t, jt, &mrpb.HeartbeatRequest{Tracker: "t2", InitialContact: true, Instance: "q1",
		ShuffleAddress: "127.0.0.1:7002", FreeMapSlots: 2}))
	if len(ls) != 1 {
		t.Fatalf("t2 launched %v, want map 1", attemptIDs(ls))
	}
	rs := launches(heartbeat(t, jt, &mrpb.HeartbeatRequest{Tracker: "t2", ShuffleAddress: "127.0.0.1:7002", FreeReduceSlots: 1,
		Spills:   []*mrpb.SpillAnnouncement{{AttemptId: ls[0].AttemptId, Spill: 0, Final: true, Segments: seg2(9)}},
		Attempts: []*mrpb.AttemptStatus{{AttemptId: ls[0].AttemptId, State: StateSucceeded}}}))
	rs = append(rs, launches(heartbeat(t, jt, &mrpb.HeartbeatRequest{Tracker: "t2", ShuffleAddress: "127.0.0.1:7002", FreeReduceSlots: 1,
		Attempts: []*mrpb.AttemptStatus{{AttemptId: rs[0].AttemptId, State: StateSucceeded}}}))...)
	if len(rs) != 2 {
		t.Fatalf("t2 launched reduces %v, want 2", attemptIDs(rs))
	}
	heartbeat(t, jt, &mrpb.HeartbeatRequest{Tracker: "t2", ShuffleAddress: "127.0.0.1:7002",
		Attempts: []*mrpb.AttemptStatus{{AttemptId: rs[1].AttemptId, State: StateSucceeded}}})
	waitJob(t, jt, id, StateSucceeded)
	for _, tr := range []string{"t1", "t2"} {
		resp := heartbeat(t, jt, &mrpb.HeartbeatRequest{Tracker: tr})
		purged := false
		for _, a := range resp.Actions {
			purged = purged || a.GetPurgeJob() == id
		}
		if !purged {
			t.Errorf("%s was not told to purge %s after it ended: actions %v", tr, id, resp.Actions)
		}
	}
}

// The JobTracker dies after committing a job's output (_SUCCESS written)
// and before recording its end. The restarted JobTracker records the job
// SUCCEEDED, with or without restart recovery, and even when the event
// log lost the reduce's line (a machine crash): the commit is the point of
// no return. Before, it was recorded FAILED ("lost: the JobTracker
// restarted") without recovery, and its reduce ran again with recovery
// when the line was missing.
func TestRecoveryCommittedJobSucceeds(t *testing.T) {
	for _, tc := range []struct {
		name     string
		recover  string
		dropLast bool
	}{
		{"no recovery", "false", false},
		{"recovery", "true", false},
		{"recovery, reduce line lost", "true", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			dir := t.TempDir()
			now := func() time.Time { return clock }
			overrides := map[string]string{"mapreduce.jobtracker.restart.recover": tc.recover}
			jt1, id := newTestJTWith(t, dir, 1, now, overrides)
			m := launches(heartbeat(t, jt1, &mrpb.HeartbeatRequest{InitialContact: true, FreeMapSlots: 1}))[0].AttemptId
			r := launches(heartbeat(t, jt1, &mrpb.HeartbeatRequest{FreeReduceSlots: 1,
				Spills:   []*mrpb.SpillAnnouncement{{AttemptId: m, Spill: 0, Final: true, Segments: seg(1)}},
				Attempts: []*mrpb.AttemptStatus{{AttemptId: m, State: StateSucceeded}}}))[0].AttemptId
			jt1.mu.Lock()
			out := jt1.jobs[id].spec.Output
			jt1.jobs[id].committing = true // the test commits; the JobTracker dies before recording it
			jt1.unlock()
			heartbeat(t, jt1, &mrpb.HeartbeatRequest{Attempts: []*mrpb.AttemptStatus{{AttemptId: r, State: StateSucceeded}}})
			if err := os.WriteFile(filepath.Join(out, mr.PartName(false, 0)), []byte("a\t1\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			c, _ := mr.NewCommitter(out)
			if err := c.CommitJob(); err != nil {
				t.Fatal(err)
			}
			if tc.dropLast {
				p := filepath.Join(dir, "system", id+".events")
				data, err := os.ReadFile(p)
				if err != nil {
					t.Fatal(err)
				}
				lines := strings.SplitAfter(strings.TrimSuffix(string(data), "\n"), "\n")
				if len(lines) != 2 || !strings.Contains(lines[1], `"type":"r"`) {
					t.Fatalf("event log:\n%s", data)
				}
				if err := os.WriteFile(p, []byte(lines[0]), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			jt2, _ := newTestJTWith(t, dir, 0, now, overrides)
			st, err := jt2.GetJobStatus(context.Background(), &mrpb.JobStatusRequest{JobId: id})
			if err != nil || st.State != StateSucceeded {
				t.Fatalf("committed job after the restart: %v %+v", err, st)
			}
			if st.Maps.Succeeded != 1 || st.Reduces.Succeeded != 1 {
				t.Errorf("tasks of the committed job: maps %+v reduces %+v", st.Maps, st.Reduces)
			}
			rec, err := jt2.history.Record(id)
			if err != nil || rec.Job.State != StateSucceeded || rec.Job.Error != "" {
				t.Fatalf("history of the committed job: %v %+v", err, rec)
			}
			if staged, _ := jt2.staging.List(); len(staged) != 0 {
				t.Errorf("the committed job is still staged")
			}
			if _, err := os.Stat(filepath.Join(out, "_SUCCESS")); err != nil {
				t.Errorf("_SUCCESS: %v", err)
			}
		})
	}
}

// waitHistoryWritten waits for an ended job's history write: the history
// is written, and the job's files removed from the system directory, after
// the job ends, without the lock.
func waitHistoryWritten(t *testing.T, jt *JobTracker, id string) {
	t.Helper()
	jt.mu.Lock()
	done := jt.jobs[id].historyDone
	jt.unlock()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the job's history was not written")
	}
}

// TestMapEventsPaged: a reply carries at most MaxMapEventsPerCall events;
// a reduce asks again from where it ended and gets the rest.
func TestMapEventsPaged(t *testing.T) {
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	jt, id, _, _ := recoveryScenario(t, &clock, nil)
	jt.lock(holderTrackerRPC)
	j := jt.jobs[id]
	before := j.events.Len()
	n := MaxMapEventsPerCall + 5
	for i := 0; i < n; i++ {
		j.appendEvent(&mrpb.MapEvent{Kind: "SPILL_READY", MapTask: 0, Spill: int32(i)}, packedSpill{})
	}
	jt.unlock()
	total := before + n
	var got []*mrpb.MapEvent
	for calls := 1; len(got) < total; calls++ {
		ev, err := jt.GetMapEvents(context.Background(), &mrpb.MapEventsRequest{JobId: id, Reduce: 0, From: int32(len(got))})
		if err != nil {
			t.Fatal(err)
		}
		if len(ev.Events) == 0 || len(ev.Events) > MaxMapEventsPerCall {
			t.Fatalf("call %d from %d: %d events, want 1 to %d", calls, len(got), len(ev.Events), MaxMapEventsPerCall)
		}
		if calls == 1 && len(ev.Events) != MaxMapEventsPerCall {
			t.Fatalf("first call: %d events, want a full page of %d", len(ev.Events), MaxMapEventsPerCall)
		}
		got = append(got, ev.Events...)
		if calls > 2 {
			t.Fatalf("%d calls for %d events", calls, total)
		}
	}
	for i := before; i < total; i++ {
		if got[i].Spill != int32(i-before) {
			t.Fatalf("event %d is spill %d, want %d", i, got[i].Spill, i-before)
		}
	}
}

// TestEventLogFlush: the lines queued for several jobs, interleaved, are
// written to each job's file in their order, one write a job; a job whose
// file cannot be opened fails the flush with an error naming the job, and
// the other jobs' lines are written all the same; readEvents reads back
// what was written.
func TestEventLogFlush(t *testing.T) {
	dir := t.TempDir()
	s, err := OpenStaging(dir)
	if err != nil {
		t.Fatal(err)
	}
	const a, b, bad = "job_202611271600_0001", "job_202611271600_0002", "job_202611271600_0003"
	// A directory where the bad job's log would be: it cannot be opened
	// for writing.
	badPath, err := s.eventsPath(bad)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(badPath, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		for _, id := range []string{a, bad, b} {
			if err := s.appendEvent(id, &taskEvent{Kind: "succeeded", Type: "m", Task: i, Attempt: fmt.Sprintf("%s_m_%06d_0", id, i)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	err = s.flushEvents()
	if err == nil || !strings.Contains(err.Error(), "event log of job "+bad+": ") {
		t.Fatalf("flush: %v, want an error naming %s", err, bad)
	}
	for _, id := range []string{a, b} {
		evs, err := s.readEvents(id)
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) != 3 {
			t.Fatalf("%s: %d events read back, want 3", id, len(evs))
		}
		for i, ev := range evs {
			if ev.Task != i || ev.Attempt != fmt.Sprintf("%s_m_%06d_0", id, i) {
				t.Errorf("%s: event %d is task %d of %s, want task %d in order", id, i, ev.Task, ev.Attempt, i)
			}
		}
	}
	// Nothing is left queued: a flush with nothing to write succeeds.
	if err := s.flushEvents(); err != nil {
		t.Errorf("second flush: %v", err)
	}
}
