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
	"gomr/partitions"
	"gomr/preempt"
)

// heartbeatSlots is heartbeat for a tracker of 2 map and reduces reduce
// slots.
func heartbeatSlots(t *testing.T, jt *JobTracker, reduces int32, req *mrpb.HeartbeatRequest) *mrpb.HeartbeatResponse {
	t.Helper()
	req.Tracker, req.Host, req.MapSlots, req.ReduceSlots, req.AcceptNewTasks = "t1", "h1", 2, reduces, true
	asTracker(jt, req)
	resp, err := jt.Heartbeat(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// The key-range bookkeeping of reduce scale-up splits: bounds must cut
// the rest of a task's range, and a partition's tasks must tile it.
func TestReduceScaleUpRanges(t *testing.T) {
	cmp := bytes.Compare
	b := func(ss ...string) [][]byte {
		out := make([][]byte, len(ss))
		for i, s := range ss {
			out[i] = []byte(s)
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		s       *taskSplit
		last    string
		bounds  [][]byte
		wantErr string
	}{
		{"unbounded task", nil, "b", b("d", "f"), ""},
		{"bounded task", &taskSplit{bounded: true, upper: []byte("g")}, "b", b("d", "f"), ""},
		{"bound at the last key", nil, "b", b("b", "f"), "bound 0"},
		{"bounds out of order", nil, "b", b("f", "d"), "bound 1"},
		{"bound at the upper key", &taskSplit{bounded: true, upper: []byte("f")}, "b", b("d", "f"), "upper"},
		{"the empty key reduced last", nil, "", b("", "f"), "bound 0"},
	} {
		err := checkBounds(tc.s, []byte(tc.last), true, tc.bounds, cmp)
		if (err == nil) != (tc.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("%s: checkBounds = %v, want an error with %q", tc.name, err, tc.wantErr)
		}
	}
	// A replayed line has no last key: the bounds alone are checked,
	// under the job's order (here reversed).
	rev := func(x, y []byte) int { return bytes.Compare(y, x) }
	if err := checkBounds(nil, nil, false, b("f", "d"), rev); err != nil {
		t.Errorf("replayed bounds f, d in reverse order: %v", err)
	}
	if err := checkBounds(nil, nil, false, b("d", "f"), rev); err == nil {
		t.Error("replayed bounds d, f in reverse order accepted")
	}

	// A piece's first fragment ends after its lower bound and not after
	// its upper key (fencing).
	ps := &taskSplit{piece: true, lower: []byte("d"), bounded: true, upper: []byte("f")}
	for _, tc := range []struct {
		last string
		ok   bool
	}{{"d", false}, {"e", true}, {"f", true}, {"g", false}} {
		if err := ps.checkFragment(&mrpb.ReduceCut{LastKey: []byte(tc.last)}, 0, cmp); (err == nil) != tc.ok {
			t.Errorf("a piece (d, f] reporting a fragment ending at %s: %v", tc.last, err)
		}
	}

	own := func(index, frags int, upper string) *task {
		s := &taskSplit{frags: make([]reduceFrag, frags)}
		if upper != "" {
			s.bounded, s.upper = true, []byte(upper)
		}
		return &task{job: &job{id: "job_x_0001"}, typ: partitions.Reduce, index: index, split: s}
	}
	piece := func(index, frags int, lower, upper string) *task {
		tk := own(index, frags, upper)
		tk.split.piece, tk.split.lower = true, []byte(lower)
		return tk
	}
	for _, tc := range []struct {
		name    string
		ts      []*task
		want    []mr.FragmentRun
		wantErr string
	}{
		{"a split reduce alone", []*task{own(0, 2, "")}, []mr.FragmentRun{{Task: 0, N: 3}}, ""},
		{"pieces in key order, not task order", []*task{piece(5, 0, "m", ""), own(0, 1, "d"), piece(7, 1, "d", "h"), piece(4, 0, "h", "m")},
			[]mr.FragmentRun{{Task: 0, N: 2}, {Task: 7, N: 2}, {Task: 4, N: 1}, {Task: 5, N: 1}}, ""},
		{"a gap", []*task{own(0, 1, "d"), piece(4, 0, "e", "")}, nil, "does not start"},
		{"the last piece bounded", []*task{own(0, 1, "d"), piece(4, 0, "d", "h")}, nil, "no piece follows"},
		{"no own task", []*task{piece(4, 0, "d", "")}, nil, "is a piece"},
	} {
		got, err := partitionRuns(tc.ts, cmp)
		if (err == nil) != (tc.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("%s: partitionRuns error %v, want %q", tc.name, err, tc.wantErr)
			continue
		}
		if len(got) != len(tc.want) {
			t.Errorf("%s: runs %v, want %v", tc.name, got, tc.want)
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("%s: runs %v, want %v", tc.name, got, tc.want)
				break
			}
		}
	}
}

// reduceScaleUpConf turns scale-up splits on at once for the tests.
var reduceScaleUpConf = map[string]string{
	preempt.KeyScaleUp: "true", preempt.KeySplitMinAge: "0s", preempt.KeySplitMinRemaining: "0s",
}

// startScaleUpReduce runs a one-map one-reduce split-safe job on jt up to
// its reduce's scale-up split for two idle reduce slots, the fragment
// committed and the bounds d and f reported, and returns the job id and
// the reduce's attempt.
func startScaleUpReduce(t *testing.T, jt *JobTracker, dir string) (string, string) {
	t.Helper()
	ctx := context.Background()
	id := submitSplitJob(t, jt, dir, 1, map[string]string{mr.KeySplitSafe: "true"})
	m := launches(heartbeatSlots(t, jt, 3, &mrpb.HeartbeatRequest{InitialContact: true, Instance: "p1", ShuffleAddress: "127.0.0.1:7001", FreeMapSlots: 1}))[0]
	r := launches(heartbeatSlots(t, jt, 3, &mrpb.HeartbeatRequest{ShuffleAddress: "127.0.0.1:7001",
		Spills:          []*mrpb.SpillAnnouncement{{AttemptId: m.AttemptId, Spill: 0, Final: true, Segments: seg(1)}},
		Attempts:        []*mrpb.AttemptStatus{{AttemptId: m.AttemptId, State: StateSucceeded}},
		FreeReduceSlots: 1}))[0]
	// Shuffling: no scale-up split (no key group to stop after).
	resp := heartbeatSlots(t, jt, 3, &mrpb.HeartbeatRequest{ShuffleAddress: "127.0.0.1:7001",
		Attempts: []*mrpb.AttemptStatus{{AttemptId: r.AttemptId, State: StateRunning, Phase: "SHUFFLE"}}, FreeReduceSlots: 2})
	if got := splitOrders(resp); len(got) != 0 {
		t.Fatalf("a shuffling reduce ordered split: %v", got)
	}
	resp = heartbeatSlots(t, jt, 3, &mrpb.HeartbeatRequest{ShuffleAddress: "127.0.0.1:7001",
		Attempts: []*mrpb.AttemptStatus{{AttemptId: r.AttemptId, State: StateRunning, Phase: "REDUCE", Progress: 0.7}}, FreeReduceSlots: 2})
	var fanout int32
	for _, a := range resp.Actions {
		if a.GetSplitAttempt() == r.AttemptId {
			fanout = a.SplitFanout
		}
	}
	if fanout != 3 {
		t.Fatalf("split orders %v with fanout %d, want the reduce's with fanout 3 (two idle slots + 1)", splitOrders(resp), fanout)
	}
	// One scale-up split at a time: none more while it is on the way.
	if got := splitOrders(heartbeatSlots(t, jt, 3, &mrpb.HeartbeatRequest{ShuffleAddress: "127.0.0.1:7001", FreeReduceSlots: 2})); len(got) != 0 {
		t.Fatalf("a second split order %v", got)
	}
	if c, err := jt.CanCommit(ctx, &mrpb.CanCommitRequest{AttemptId: r.AttemptId}); err != nil || !c.CanCommit {
		t.Fatalf("the split reduce may not commit its fragment: %v %v", c, err)
	}
	return id, r.AttemptId
}

// A reduce split for idle slots: the rest of its key range is cut at the
// bounds it reports, the task keeps the first piece (bounded) and each
// other becomes a reduce task of the same partition; the policy is told
// (TasksAdded); the pieces are launched with their ranges, write
// fragments of the partition, and the job commit joins them in key order
// into the partition's one part file.
func TestReduceScaleUpProtocol(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	jt, _ := newTestJTWith(t, dir, 0, nil, reduceScaleUpConf)
	var added []int
	jt.mu.Lock()
	jt.driver.OnEvent(func(ev partitions.Event) {
		if ev.Kind == partitions.TasksAdded && ev.Type == partitions.Reduce {
			added = append(added, ev.Count)
		}
	})
	jt.mu.Unlock()
	id, r := startScaleUpReduce(t, jt, dir)
	resp := heartbeatSlots(t, jt, 3, &mrpb.HeartbeatRequest{ShuffleAddress: "127.0.0.1:7001",
		Attempts: []*mrpb.AttemptStatus{{AttemptId: r, State: StateSplit, Phase: "REDUCE", Counters: reduceCounters(40, 4),
			ReduceCut: &mrpb.ReduceCut{LastKey: []byte("b"), Fragment: 0, Bounds: [][]byte{[]byte("d"), []byte("f")}}}},
		FreeReduceSlots: 3})
	if len(added) != 1 || added[0] != 2 {
		t.Errorf("TasksAdded events %v, want [2]", added)
	}
	ls := launches(resp)
	if len(ls) != 3 {
		t.Fatalf("%d launches after the split, want the three pieces", len(ls))
	}
	want := map[int32]struct {
		after, upper   string
		frag           int32
		bounded, piece bool
	}{
		0: {"b", "d", 1, true, false},
		1: {"d", "f", 0, true, true},
		2: {"f", "", 0, false, true},
	}
	for _, l := range ls {
		rr, w := l.ReduceResume, want[l.Index]
		if rr == nil || string(rr.AfterKey) != w.after || string(rr.UpperKey) != w.upper || rr.Fragment != w.frag ||
			rr.Bounded != w.bounded || rr.Piece != w.piece || rr.Partition != 0 || l.NumReduces != 1 {
			t.Errorf("reduce %d launched with %v (%d partitions), want %+v of partition 0 (1 partition)", l.Index, rr, l.NumReduces, w)
		}
	}
	// A piece is split only in its reduce phase, as any reduce.
	var p1 string
	for _, l := range ls {
		if l.Index == 1 {
			p1 = l.AttemptId
		}
	}
	if _, err := jt.SplitTaskAttempt(ctx, &mrpb.SplitTaskAttemptRequest{AttemptId: p1}); err == nil {
		t.Error("a piece not in its reduce phase was split")
	}
	// The fragments the children would have committed, and their ends.
	c := writeFragments(t, jt, id, "a\t1\nb\t2\n", "c\t3\nd\t4\n")
	for name, data := range map[string]string{
		mr.PieceFragmentName(0, 1, 0): "e\t5\nf\t6\n",
		mr.PieceFragmentName(0, 2, 0): "g\t7\n",
	} {
		if err := os.WriteFile(filepath.Join(c.FragmentDir(), name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// They end in reverse key order: the join follows the keys.
	for i := len(ls) - 1; i >= 0; i-- {
		heartbeatSlots(t, jt, 3, &mrpb.HeartbeatRequest{ShuffleAddress: "127.0.0.1:7001",
			Attempts: []*mrpb.AttemptStatus{{AttemptId: ls[i].AttemptId, State: StateSucceeded, Counters: reduceCounters(10, 1)}}})
	}
	waitJob(t, jt, id, StateSucceeded)
	got, err := os.ReadFile(filepath.Join(c.Output, mr.PartName(false, 0)))
	if err != nil || string(got) != "a\t1\nb\t2\nc\t3\nd\t4\ne\t5\nf\t6\ng\t7\n" {
		t.Fatalf("part file %q (%v), want the fragments joined in key order", got, err)
	}
	entries, _ := os.ReadDir(c.Output)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if strings.Join(names, " ") != "_SUCCESS part-r-00000" {
		t.Errorf("output directory holds %v, want _SUCCESS and part-r-00000 only", names)
	}
	st, _ := jt.GetJobStatus(ctx, &mrpb.JobStatusRequest{JobId: id})
	cs := countersFromProto(st.Counters)
	for _, w := range []struct {
		group, name string
		want        int64
	}{
		{mr.TaskCounterGroup, mr.ReduceInputRecords, 70},
		{mr.SplitGroup, mr.ReduceSplits, 1},
		{mr.SplitGroup, mr.OutputFragments, 1},
		{mr.SplitGroup, mr.ScaleUpReduceSplits, 1},
		{mr.SplitGroup, mr.ScaleUpReduces, 2},
		{mr.SplitGroup, mr.ScaleUpSplits, 0},
	} {
		if got := cs.Get(w.group, w.name); got != w.want {
			t.Errorf("%s %s = %d, want %d", w.group, w.name, got, w.want)
		}
	}
}

// A JobTracker restart keeps a reduce scale-up split's pieces: they are
// reduces of the partition again with their ranges, a piece that
// succeeded (its fragment committed) is kept, and the others run again
// from their ranges' starts.
func TestRecoveryKeepsReducePieces(t *testing.T) {
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := func() time.Time { return clock }
	dir := t.TempDir()
	jt1, _ := newTestJTWith(t, dir, 0, now, reduceScaleUpConf)
	id, r := startScaleUpReduce(t, jt1, dir)
	c := writeFragments(t, jt1, id, "a\t1\nb\t2\n")
	ls := launches(heartbeatSlots(t, jt1, 3, &mrpb.HeartbeatRequest{ShuffleAddress: "127.0.0.1:7001",
		Attempts: []*mrpb.AttemptStatus{{AttemptId: r, State: StateSplit, Phase: "REDUCE", Counters: reduceCounters(40, 4),
			ReduceCut: &mrpb.ReduceCut{LastKey: []byte("b"), Fragment: 0, Bounds: [][]byte{[]byte("d"), []byte("f")}}}},
		FreeReduceSlots: 3}))
	for _, l := range ls {
		if l.Index == 1 {
			if err := os.WriteFile(filepath.Join(c.FragmentDir(), mr.PieceFragmentName(0, 1, 0)), []byte("e\t5\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			heartbeatSlots(t, jt1, 3, &mrpb.HeartbeatRequest{ShuffleAddress: "127.0.0.1:7001",
				Attempts: []*mrpb.AttemptStatus{{AttemptId: l.AttemptId, State: StateSucceeded, Counters: reduceCounters(10, 1)}}})
		}
	}
	clock = clock.Add(5 * time.Second)
	jt2, _ := newTestJTWith(t, dir, 0, now, reduceScaleUpConf)
	jt2.mu.Lock()
	j := jt2.jobs[id]
	if j == nil || len(j.reduces) != 3 {
		jt2.mu.Unlock()
		t.Fatalf("job recovered with %v reduces, want 3", j)
	}
	states := []taskState{j.reduces[0].state, j.reduces[1].state, j.reduces[2].state}
	if got := j.counters.Get(mr.SplitGroup, mr.ScaleUpReduces); got != 2 {
		t.Errorf("SCALE_UP_REDUCES = %d after the restart, want 2", got)
	}
	jt2.mu.Unlock()
	if states[0] != taskPending || states[1] != taskSucceeded || states[2] != taskPending {
		t.Fatalf("reduce states after the restart %v, want pending, succeeded, pending", states)
	}
	m := launches(heartbeatSlots(t, jt2, 3, &mrpb.HeartbeatRequest{InitialContact: true, Instance: "p1", ShuffleAddress: "127.0.0.1:7001",
		HeldJobs: []string{id}, FreeMapSlots: 2, FreeReduceSlots: 3}))
	var rs []*mrpb.LaunchTask
	for _, l := range m {
		if l.Type == "r" {
			rs = append(rs, l)
		}
	}
	if len(rs) != 0 {
		// The map runs again first (its tracker did not keep it here).
		t.Fatalf("reduces launched before the map ran again: %v", attemptIDs(rs))
	}
	jt2.mu.Lock()
	s0, s2 := j.reduces[0].split, j.reduces[2].split
	jt2.mu.Unlock()
	if !s0.bounded || string(s0.upper) != "d" || len(s0.frags) != 1 || !s2.piece || string(s2.lower) != "f" || s2.bounded {
		t.Errorf("ranges after the restart: reduce 0 %+v, reduce 2 %+v", s0, s2)
	}
}
