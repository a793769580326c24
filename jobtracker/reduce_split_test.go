package jobtracker

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gomr/mr"
	"gomr/mrpb"
)

// The key-range bookkeeping of a reduce task's fragments: which fragment a
// new attempt writes and after which key, and which reported fragments are
// taken (fencing: the next fragment only, from an attempt launched to
// write it, ending after the previous one).
func TestReduceFragments(t *testing.T) {
	frags := func(keys ...string) *taskSplit {
		if keys == nil {
			return nil
		}
		s := &taskSplit{}
		for _, k := range keys {
			s.frags = append(s.frags, reduceFrag{lastKey: []byte(k), by: &attempt{counters: mr.PackSet(mr.CounterSet{"g": {"n": 1}})}})
		}
		return s
	}
	cut := func(key string, k int32) *mrpb.ReduceCut { return &mrpb.ReduceCut{LastKey: []byte(key), Fragment: k} }
	for _, tc := range []struct {
		name      string
		s         *taskSplit
		cut       *mrpb.ReduceCut
		launched  int
		wantErr   string
		wantNext  int
		wantAfter string
	}{
		{name: "never split: the first fragment", s: nil, cut: cut("m", 0), launched: 0, wantNext: 0},
		{name: "the empty key ends a first fragment", s: nil, cut: cut("", 0), launched: 0, wantNext: 0},
		{name: "second fragment after the first", s: frags("m"), cut: cut("t", 1), launched: 1, wantNext: 1, wantAfter: "m"},
		{name: "third fragment", s: frags("c", "m"), cut: cut("x", 2), launched: 2, wantNext: 2, wantAfter: "m"},
		{name: "no cut reported", s: frags("m"), cut: nil, launched: 1, wantErr: "no fragment", wantNext: 1, wantAfter: "m"},
		{name: "cut of another fragment than launched", s: frags("m"), cut: cut("t", 2), launched: 1, wantErr: "launched to write fragment 1", wantNext: 1, wantAfter: "m"},
		{name: "an attempt of an earlier range (duplicate)", s: frags("m"), cut: cut("m", 0), launched: 0, wantErr: "next fragment is 1", wantNext: 1, wantAfter: "m"},
		{name: "last key not after the previous fragment", s: frags("m"), cut: cut("m", 1), launched: 1, wantErr: "not after", wantNext: 1, wantAfter: "m"},
		{name: "last key before the previous fragment", s: frags("m"), cut: cut("a", 1), launched: 1, wantErr: "not after", wantNext: 1, wantAfter: "m"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			next, after := tc.s.nextFragment()
			if next != tc.wantNext || string(after) != tc.wantAfter {
				t.Errorf("nextFragment = %d, %q; want %d, %q", next, after, tc.wantNext, tc.wantAfter)
			}
			err := tc.s.checkFragment(tc.cut, tc.launched, bytes.Compare)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("checkFragment: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("checkFragment: %v, want an error with %q", err, tc.wantErr)
			}
			if got, want := tc.s.fragmentCounters().Get("g", "n"), int64(len(tcFrags(tc.s))); got != want {
				t.Errorf("fragment counters add up to %d, want %d", got, want)
			}
		})
	}
}

func tcFrags(s *taskSplit) []reduceFrag {
	if s == nil {
		return nil
	}
	return s.frags
}

func reduceCounters(in, out int64) []*mrpb.Counter {
	return []*mrpb.Counter{{Group: mr.TaskCounterGroup, Name: mr.ReduceInputRecords, Value: in},
		{Group: mr.TaskCounterGroup, Name: mr.ReduceOutputRecords, Value: out}}
}

// A reduce is split over the trackers' protocol: refused while it
// shuffles, ordered in its reduce phase, granted the commit of its
// fragment, ended SPLIT with its last key; the remainder is launched
// after that key as the next fragment; a remainder reporting a fragment
// that does not follow is failed (fencing) and retried from the same key;
// the job's commit joins the fragments into the part file, and the
// fragments' counters add up.
func TestReduceSplitProtocol(t *testing.T) {
	dir := t.TempDir()
	jt, _ := newTestJTWith(t, dir, 0, nil, nil)
	id := submitSplitJob(t, jt, dir, 1, map[string]string{mr.KeySplitSafe: "true"})
	ctx := context.Background()
	m := launches(heartbeat(t, jt, &mrpb.HeartbeatRequest{InitialContact: true, FreeMapSlots: 1}))[0]
	resp := heartbeat(t, jt, &mrpb.HeartbeatRequest{
		Spills:          []*mrpb.SpillAnnouncement{{AttemptId: m.AttemptId, Spill: 0, Final: true, Segments: seg(1)}},
		Attempts:        []*mrpb.AttemptStatus{{AttemptId: m.AttemptId, State: StateSucceeded}},
		FreeReduceSlots: 1,
	})
	r := launches(resp)[0]
	if r.Type != "r" || r.ReduceResume != nil {
		t.Fatalf("reduce launch %v", r)
	}
	split := func(a string) error {
		_, err := jt.SplitTaskAttempt(ctx, &mrpb.SplitTaskAttemptRequest{AttemptId: a})
		return err
	}
	heartbeat(t, jt, &mrpb.HeartbeatRequest{Attempts: []*mrpb.AttemptStatus{{AttemptId: r.AttemptId, State: StateRunning, Phase: "SHUFFLE"}}})
	if err := split(r.AttemptId); err == nil || !strings.Contains(err.Error(), "SHUFFLE phase") {
		t.Fatalf("split of a shuffling reduce: %v", err)
	}
	heartbeat(t, jt, &mrpb.HeartbeatRequest{Attempts: []*mrpb.AttemptStatus{{AttemptId: r.AttemptId, State: StateRunning, Phase: "REDUCE"}}})
	if err := split(r.AttemptId); err != nil {
		t.Fatal(err)
	}
	if got := splitOrders(heartbeat(t, jt, &mrpb.HeartbeatRequest{})); len(got) != 1 || got[0] != r.AttemptId {
		t.Fatalf("split orders %v", got)
	}
	if c, err := jt.CanCommit(ctx, &mrpb.CanCommitRequest{AttemptId: r.AttemptId}); err != nil || !c.CanCommit {
		t.Fatalf("the split reduce may not commit its fragment: %v %v", c, err)
	}
	resp = heartbeat(t, jt, &mrpb.HeartbeatRequest{
		Attempts: []*mrpb.AttemptStatus{{AttemptId: r.AttemptId, State: StateSplit, Phase: "REDUCE", Counters: reduceCounters(40, 4),
			ReduceCut: &mrpb.ReduceCut{LastKey: []byte("b"), Fragment: 0}}},
		FreeReduceSlots: 1,
	})
	if s, _ := attemptStateOf(jt, r.AttemptId); s != StateSplit {
		t.Fatalf("split reduce is %s", s)
	}
	rem := launches(resp)[0]
	if rr := rem.ReduceResume; rr == nil || string(rr.AfterKey) != "b" || rr.Fragment != 1 {
		t.Fatalf("remainder launched with %v, want after b, fragment 1", rem.ReduceResume)
	}
	// While it runs, the job's counters hold the fragment's and its own.
	heartbeat(t, jt, &mrpb.HeartbeatRequest{Attempts: []*mrpb.AttemptStatus{{AttemptId: rem.AttemptId, State: StateRunning, Phase: "REDUCE", Counters: reduceCounters(10, 1)}}})
	st, _ := jt.GetJobStatus(ctx, &mrpb.JobStatusRequest{JobId: id})
	if got := countersFromProto(st.Counters).Get(mr.TaskCounterGroup, mr.ReduceInputRecords); got != 50 {
		t.Errorf("REDUCE_INPUT_RECORDS while the remainder runs = %d, want 40 + 10", got)
	}
	// A fragment that does not end after the previous one: failed.
	if err := split(rem.AttemptId); err != nil {
		t.Fatal(err)
	}
	resp = heartbeat(t, jt, &mrpb.HeartbeatRequest{
		Attempts:        []*mrpb.AttemptStatus{{AttemptId: rem.AttemptId, State: StateSplit, ReduceCut: &mrpb.ReduceCut{LastKey: []byte("a"), Fragment: 1}}},
		FreeReduceSlots: 1,
	})
	if s, diag := attemptStateOf(jt, rem.AttemptId); s != StateFailed || !strings.Contains(diag, "not after") {
		t.Fatalf("a fragment ending before the previous one: %s %q", s, diag)
	}
	again := launches(resp)[0]
	if rr := again.ReduceResume; rr == nil || string(rr.AfterKey) != "b" || rr.Fragment != 1 {
		t.Fatalf("retry launched with %v, want after b, fragment 1", again.ReduceResume)
	}
	// The fragments the children would have committed.
	c := writeFragments(t, jt, id, "a\t1\nb\t2\n", "c\t3\n")
	heartbeat(t, jt, &mrpb.HeartbeatRequest{Attempts: []*mrpb.AttemptStatus{{AttemptId: again.AttemptId, State: StateSucceeded, Counters: reduceCounters(20, 2)}}})
	waitJob(t, jt, id, "SUCCEEDED")
	st, _ = jt.GetJobStatus(ctx, &mrpb.JobStatusRequest{JobId: id})
	got, err := os.ReadFile(filepath.Join(c.Output, mr.PartName(false, 0)))
	if err != nil || string(got) != "a\t1\nb\t2\nc\t3\n" {
		t.Fatalf("part file %q (%v)", got, err)
	}
	cs := countersFromProto(st.Counters)
	for _, w := range []struct {
		group, name string
		want        int64
	}{
		{mr.TaskCounterGroup, mr.ReduceInputRecords, 60},
		{mr.TaskCounterGroup, mr.ReduceOutputRecords, 6},
		{mr.SplitGroup, mr.ReduceSplits, 1},
		{mr.SplitGroup, mr.OutputFragments, 1},
		{mr.JobCounterGroup, mr.NumFailedReduces, 1},
	} {
		if got := cs.Get(w.group, w.name); got != w.want {
			t.Errorf("%s %s = %d, want %d", w.group, w.name, got, w.want)
		}
	}
}

// TestRecoveryKeepsReduceFragments: a JobTracker restart keeps a split
// reduce's committed fragments (logged as "fragment" lines): its next
// attempt reduces only the key groups after the last kept one; a fragment
// whose file is gone is not kept, and the reduce runs whole; a split
// reduce that succeeded before the restart, its fragments all committed,
// is kept, and the job's commit joins them with the fragment counters
// added up.
func TestRecoveryKeepsReduceFragments(t *testing.T) {
	for _, tc := range []struct {
		name string
		// gone removes fragment 0's file before the restart; done makes
		// the remainder succeed (fragment 1) before it.
		gone, done bool
	}{
		{name: "fragment kept"},
		{name: "fragment file gone", gone: true},
		{name: "split reduce succeeded", done: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			now := func() time.Time { return clock }
			dir := t.TempDir()
			ctx := context.Background()
			jt1, _ := newTestJTWith(t, dir, 0, now, nil)
			id := submitSplitJob(t, jt1, dir, 1, map[string]string{mr.KeySplitSafe: "true"})
			m := launches(heartbeat(t, jt1, &mrpb.HeartbeatRequest{InitialContact: true, Instance: "p1", ShuffleAddress: "127.0.0.1:7001", FreeMapSlots: 1}))[0]
			r := launches(heartbeat(t, jt1, &mrpb.HeartbeatRequest{ShuffleAddress: "127.0.0.1:7001",
				Spills:          []*mrpb.SpillAnnouncement{{AttemptId: m.AttemptId, Spill: 0, Final: true, Segments: seg(1)}},
				Attempts:        []*mrpb.AttemptStatus{{AttemptId: m.AttemptId, State: StateSucceeded}},
				FreeReduceSlots: 1}))[0]
			heartbeat(t, jt1, &mrpb.HeartbeatRequest{ShuffleAddress: "127.0.0.1:7001", Attempts: []*mrpb.AttemptStatus{{AttemptId: r.AttemptId, State: StateRunning, Phase: "REDUCE"}}})
			if _, err := jt1.SplitTaskAttempt(ctx, &mrpb.SplitTaskAttemptRequest{AttemptId: r.AttemptId}); err != nil {
				t.Fatal(err)
			}
			if c, err := jt1.CanCommit(ctx, &mrpb.CanCommitRequest{AttemptId: r.AttemptId}); err != nil || !c.CanCommit {
				t.Fatalf("the split reduce may not commit its fragment: %v %v", c, err)
			}
			c := writeFragments(t, jt1, id, "a\t1\nb\t2\n", "c\t3\n")
			rem := launches(heartbeat(t, jt1, &mrpb.HeartbeatRequest{ShuffleAddress: "127.0.0.1:7001",
				Attempts: []*mrpb.AttemptStatus{{AttemptId: r.AttemptId, State: StateSplit, Phase: "REDUCE", Counters: reduceCounters(40, 4),
					ReduceCut: &mrpb.ReduceCut{LastKey: []byte("b"), Fragment: 0}}},
				FreeReduceSlots: 1}))[0]
			if tc.done {
				jt1.mu.Lock()
				jt1.jobs[id].committing = true // the JobTracker dies before it commits the job
				jt1.mu.Unlock()
				heartbeat(t, jt1, &mrpb.HeartbeatRequest{ShuffleAddress: "127.0.0.1:7001",
					Attempts: []*mrpb.AttemptStatus{{AttemptId: rem.AttemptId, State: StateSucceeded, Counters: reduceCounters(20, 2)}}})
			}
			if tc.gone {
				if err := os.Remove(filepath.Join(c.FragmentDir(), mr.FragmentName(0, 0))); err != nil {
					t.Fatal(err)
				}
			}
			clock = clock.Add(5 * time.Second)
			jt2, _ := newTestJTWith(t, dir, 0, now, nil)
			if tc.done {
				// The kept map's tracker registers again; the job commits.
				heartbeat(t, jt2, &mrpb.HeartbeatRequest{InitialContact: true, Instance: "p1", ShuffleAddress: "127.0.0.1:7001",
					HeldJobs: []string{id}, HeldAttempts: []string{m.AttemptId}})
				waitJob(t, jt2, id, StateSucceeded)
				got, err := os.ReadFile(filepath.Join(c.Output, mr.PartName(false, 0)))
				if err != nil || string(got) != "a\t1\nb\t2\nc\t3\n" {
					t.Fatalf("part file %q (%v), want the two fragments joined", got, err)
				}
				st, _ := jt2.GetJobStatus(ctx, &mrpb.JobStatusRequest{JobId: id})
				if got := countersFromProto(st.Counters).Get(mr.TaskCounterGroup, mr.ReduceInputRecords); got != 60 {
					t.Errorf("REDUCE_INPUT_RECORDS = %d, want 40 + 20 (the fragment's counters kept)", got)
				}
				return
			}
			rs := launches(heartbeat(t, jt2, &mrpb.HeartbeatRequest{InitialContact: true, Instance: "p1", ShuffleAddress: "127.0.0.1:7001",
				HeldJobs: []string{id}, HeldAttempts: []string{m.AttemptId}, FreeReduceSlots: 1}))
			if len(rs) != 1 || rs[0].Type != "r" {
				t.Fatalf("launches after the restart: %v, want the reduce", attemptIDs(rs))
			}
			rr := rs[0].ReduceResume
			switch {
			case tc.gone && rr != nil:
				t.Errorf("fragment 0's file is gone, but the reduce resumes with %v", rr)
			case !tc.gone && (rr == nil || string(rr.AfterKey) != "b" || rr.Fragment != 1):
				t.Errorf("the reduce resumes with %v, want after b, fragment 1", rr)
			}
			if !tc.gone {
				heartbeat(t, jt2, &mrpb.HeartbeatRequest{ShuffleAddress: "127.0.0.1:7001",
					Attempts: []*mrpb.AttemptStatus{{AttemptId: rs[0].AttemptId, State: StateRunning, Phase: "REDUCE", Counters: reduceCounters(10, 1)}}})
				st, _ := jt2.GetJobStatus(ctx, &mrpb.JobStatusRequest{JobId: id})
				if got := countersFromProto(st.Counters).Get(mr.TaskCounterGroup, mr.ReduceInputRecords); got != 50 {
					t.Errorf("REDUCE_INPUT_RECORDS while the remainder runs = %d, want 40 + 10", got)
				}
			}
		})
	}
}

// writeFragments writes the fragments of partition 0 of job id, one per
// text, as split reduces would have committed them, and returns the
// job's committer.
func writeFragments(t *testing.T, jt *JobTracker, id string, texts ...string) *mr.Committer {
	t.Helper()
	jt.mu.Lock()
	out := jt.jobs[id].spec.Output
	jt.mu.Unlock()
	c, err := mr.NewCommitter(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(c.FragmentDir(), 0o755); err != nil {
		t.Fatal(err)
	}
	for k, data := range texts {
		if err := os.WriteFile(filepath.Join(c.FragmentDir(), mr.FragmentName(0, k)), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return c
}
