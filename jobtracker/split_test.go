package jobtracker

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"gomr/mr"
	"gomr/mrpb"
)

func TestTaskSplitInsert(t *testing.T) {
	tests := []struct {
		name    string
		cuts    []mapCut
		want    []mapCut
		wantErr string
	}{
		{"in order", []mapCut{{100, 2, 10}, {200, 4, 20}}, []mapCut{{100, 2, 10}, {200, 4, 20}}, ""},
		{"out of order", []mapCut{{200, 4, 20}, {100, 2, 10}}, []mapCut{{100, 2, 10}, {200, 4, 20}}, ""},
		{"the same twice", []mapCut{{100, 2, 10}, {100, 2, 10}}, []mapCut{{100, 2, 10}}, ""},
		{"another spill at the same offset", []mapCut{{100, 2, 10}, {100, 3, 10}}, nil, "was recorded before"},
		{"spills against offsets", []mapCut{{100, 4, 10}, {200, 3, 20}}, nil, "out of order"},
		{"records against offsets", []mapCut{{100, 2, 30}, {200, 4, 20}}, nil, "out of order"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := &taskSplit{}
			var err error
			for _, c := range tc.cuts {
				if err = s.insert(c); err != nil {
					break
				}
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(s.cuts, tc.want) {
				t.Fatalf("cuts %v, %v; want %v", s.cuts, err, tc.want)
			}
		})
	}
}

func TestTaskSplitResumePoint(t *testing.T) {
	s := &taskSplit{cuts: []mapCut{{100, 2, 10}, {200, 5, 20}}}
	tests := []struct {
		name      string
		published []int
		from      mapCut
		later     []mapCut
	}{
		{"nothing published", nil, mapCut{}, []mapCut{{100, 2, 10}, {200, 5, 20}}},
		{"first part published", []int{0, 1}, mapCut{100, 2, 10}, []mapCut{{200, 5, 20}}},
		{"first part half published", []int{0}, mapCut{}, []mapCut{{100, 2, 10}, {200, 5, 20}}},
		{"first two parts", []int{0, 1, 2, 3, 4}, mapCut{200, 5, 20}, nil},
		{"second part lost", []int{0, 1, 2, 4}, mapCut{100, 2, 10}, []mapCut{{200, 5, 20}}},
		{"only the last part's", []int{5, 6}, mapCut{}, []mapCut{{100, 2, 10}, {200, 5, 20}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pub := map[int]bool{}
			for _, k := range tc.published {
				pub[k] = true
			}
			from, later := s.resumePoint(func(k int) bool { return pub[k] })
			if from != tc.from || !reflect.DeepEqual(later, tc.later) {
				t.Fatalf("resume point %v then %v; want %v then %v", from, later, tc.from, tc.later)
			}
		})
	}
	var never *taskSplit
	if from, later := never.resumePoint(func(int) bool { return false }); from != (mapCut{}) || later != nil {
		t.Fatalf("a task never split resumes at %v then %v", from, later)
	}
}

func TestTaskSplitPrefixCounters(t *testing.T) {
	counted := func(n int64, cut mapCut) *attempt {
		return &attempt{counters: mr.PackSet(mr.CounterSet{mr.TaskCounterGroup: {mr.MapInputRecords: n}}), split: &attemptSplitInfo{cut: &cut}}
	}
	s := &taskSplit{chain: map[int]*attempt{
		0: counted(10, mapCut{100, 2, 10}),
		2: counted(7, mapCut{170, 4, 17}),
	}}
	tests := []struct {
		from mapCut
		want int64 // -1: no prefix
	}{
		{mapCut{}, -1},
		{mapCut{100, 2, 10}, 10},
		{mapCut{170, 4, 17}, 17},
		{mapCut{150, 3, 15}, -1}, // the chain does not reach it
	}
	for _, tc := range tests {
		got := s.prefixCounters(tc.from)
		if (got == nil) != (tc.want < 0) || (got != nil && got.Get(mr.TaskCounterGroup, mr.MapInputRecords) != tc.want) {
			t.Errorf("prefix before %v: %v, want %d records", tc.from, got, tc.want)
		}
	}
}

func TestTaskSplitLogRoundTrip(t *testing.T) {
	s := &taskSplit{cuts: []mapCut{{100, 2, 10}, {200, 5, 20}}}
	data, err := json.Marshal(s.logged())
	if err != nil {
		t.Fatal(err)
	}
	var back []loggedCut
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if got := splitFromLog(back); got == nil || !reflect.DeepEqual(got.cuts, s.cuts) {
		t.Fatalf("split points after the log: %v, want %v", got, s.cuts)
	}
	if splitFromLog(nil) != nil || splitFromLog([]loggedCut{{100, 2, 10}, {50, 3, 1}}) != nil {
		t.Fatal("no cuts or corrupt ones gave split points")
	}
}

// submitSplitJob submits a wordcount job of one map over a text file of
// 1000 bytes and one reduce, with conf.
func submitSplitJob(t *testing.T, jt *JobTracker, dir string, reduces int, conf map[string]string) string {
	t.Helper()
	in := filepath.Join(dir, "in.txt")
	if err := os.WriteFile(in, []byte(strings.Repeat("a b c d\n", 125)), 0o644); err != nil {
		t.Fatal(err)
	}
	spec, _ := json.Marshal(&mr.JobSpec{Def: "wordcount", Inputs: []string{in}, Output: filepath.Join(dir, fmt.Sprintf("out%d", time.Now().UnixNano())),
		NumReduces: reduces, Conf: conf})
	sj, _ := json.Marshal([]mr.Split{{Path: in, Start: 0, Length: 1000}})
	resp, err := jt.SubmitJob(context.Background(), &mrpb.SubmitJobRequest{SpecJson: spec, SplitsJson: sj})
	if err != nil {
		t.Fatal(err)
	}
	return resp.JobId
}

func splitOrders(resp *mrpb.HeartbeatResponse) []string {
	var out []string
	for _, a := range resp.Actions {
		if id := a.GetSplitAttempt(); id != "" {
			out = append(out, id)
		}
	}
	return out
}

func inputRecords(n int64) []*mrpb.Counter {
	return []*mrpb.Counter{{Group: mr.TaskCounterGroup, Name: mr.MapInputRecords, Value: n}}
}

// A map is split: the order goes out in a heartbeat reply, the attempt's
// last spill carries the split point and it ends SPLIT; the remainder is
// launched at the split point, continues the spill numbering, and the
// job's counters add both attempts'.
func TestSplitProtocol(t *testing.T) {
	dir := t.TempDir()
	jt, _ := newTestJTWith(t, dir, 0, nil, nil)
	id := submitSplitJob(t, jt, dir, 1, map[string]string{mr.KeySplitSafe: "true"})
	ctx := context.Background()
	first := launches(heartbeat(t, jt, &mrpb.HeartbeatRequest{InitialContact: true, FreeMapSlots: 1}))[0]
	if first.Resume != nil {
		t.Fatalf("the first attempt of a map never split has a resume point: %v", first.Resume)
	}
	if _, err := jt.SplitTaskAttempt(ctx, &mrpb.SplitTaskAttemptRequest{AttemptId: first.AttemptId}); err != nil {
		t.Fatal(err)
	}
	if _, err := jt.SplitTaskAttempt(ctx, &mrpb.SplitTaskAttemptRequest{AttemptId: first.AttemptId}); err == nil || !strings.Contains(err.Error(), "already ordered split") {
		t.Fatalf("a second split order: %v", err)
	}
	resp := heartbeat(t, jt, &mrpb.HeartbeatRequest{})
	if got := splitOrders(resp); !reflect.DeepEqual(got, []string{first.AttemptId}) {
		t.Fatalf("split orders %v, want [%s]", got, first.AttemptId)
	}
	resp = heartbeat(t, jt, &mrpb.HeartbeatRequest{
		Spills: []*mrpb.SpillAnnouncement{
			{AttemptId: first.AttemptId, Spill: 0, Segments: seg(1)},
			{AttemptId: first.AttemptId, Spill: 1, Segments: seg(2), SplitAt: &mrpb.MapCut{Offset: 400, Spill: 2, Records: 50}},
		},
		Attempts:     []*mrpb.AttemptStatus{{AttemptId: first.AttemptId, State: StateSplit, Counters: inputRecords(50)}},
		FreeMapSlots: 1,
	})
	if s, _ := attemptStateOf(jt, first.AttemptId); s != StateSplit {
		t.Fatalf("split attempt is %s", s)
	}
	ls := launches(resp)
	if len(ls) != 1 {
		t.Fatalf("launches after the split: %v", ls)
	}
	rem := ls[0]
	want := &mrpb.MapResume{Offset: 400, FirstSpill: 2, RecordsBefore: 50}
	if rem.Resume == nil || rem.Resume.Offset != want.Offset || rem.Resume.FirstSpill != want.FirstSpill || rem.Resume.RecordsBefore != want.RecordsBefore || len(rem.Resume.Cuts) != 0 {
		t.Fatalf("remainder launched with resume point %v, want %v", rem.Resume, want)
	}
	// While the remainder runs, the job's counters hold the split
	// attempt's and the remainder's so far.
	heartbeat(t, jt, &mrpb.HeartbeatRequest{Attempts: []*mrpb.AttemptStatus{{AttemptId: rem.AttemptId, State: StateRunning, Counters: inputRecords(20)}}})
	st, _ := jt.GetJobStatus(ctx, &mrpb.JobStatusRequest{JobId: id})
	if got := countersFromProto(st.Counters).Get(mr.TaskCounterGroup, mr.MapInputRecords); got != 70 {
		t.Errorf("MAP_INPUT_RECORDS while the remainder runs = %d, want 50 + 20", got)
	}
	heartbeat(t, jt, &mrpb.HeartbeatRequest{
		Spills:   []*mrpb.SpillAnnouncement{{AttemptId: rem.AttemptId, Spill: 2, Final: true, Segments: seg(3)}},
		Attempts: []*mrpb.AttemptStatus{{AttemptId: rem.AttemptId, State: StateSucceeded, Counters: inputRecords(75)}},
	})
	st, _ = jt.GetJobStatus(ctx, &mrpb.JobStatusRequest{JobId: id})
	if st.Maps.Succeeded != 1 {
		t.Fatalf("map not succeeded: %+v", st.Maps)
	}
	cs := countersFromProto(st.Counters)
	for _, c := range []struct {
		group, name string
		want        int64
	}{
		{mr.TaskCounterGroup, mr.MapInputRecords, 125},
		{mr.SplitGroup, mr.MapSplits, 1},
		{mr.SplitGroup, mr.SplitFragments, 2},
		{mr.SplitGroup, mr.RemainderBytes, 600},
		{mr.SplitGroup, mr.RemainderRecords, 75},
		{mr.JobCounterGroup, mr.NumFailedMaps, 0},
		{mr.JobCounterGroup, mr.NumKilledMaps, 0},
	} {
		if got := cs.Get(c.group, c.name); got != c.want {
			t.Errorf("%s %s = %d, want %d", c.group, c.name, got, c.want)
		}
	}
	ev, _ := jt.GetMapEvents(ctx, &mrpb.MapEventsRequest{JobId: id, Reduce: 0})
	var got []string
	for _, e := range ev.Events {
		got = append(got, fmt.Sprintf("%s %d %v", e.AttemptId, e.Spill, e.Final))
	}
	wantEv := []string{first.AttemptId + " 0 false", first.AttemptId + " 1 false", rem.AttemptId + " 2 true"}
	if !reflect.DeepEqual(got, wantEv) {
		t.Fatalf("map events %v, want %v", got, wantEv)
	}
}

// The tracker holding a split attempt's spills is lost while the
// remainder runs elsewhere: the remainder is killed and the map runs
// again from its start, with the split point as a cut.
func TestSplitOutputLostRerunsFromStart(t *testing.T) {
	dir := t.TempDir()
	jt, _ := newTestJTWith(t, dir, 0, nil, nil)
	submitSplitJob(t, jt, dir, 1, map[string]string{mr.KeySplitSafe: "true"})
	ctx := context.Background()
	first := launches(heartbeat(t, jt, &mrpb.HeartbeatRequest{Tracker: "t1", InitialContact: true, FreeMapSlots: 1}))[0]
	if _, err := jt.SplitTaskAttempt(ctx, &mrpb.SplitTaskAttemptRequest{AttemptId: first.AttemptId}); err != nil {
		t.Fatal(err)
	}
	heartbeat(t, jt, &mrpb.HeartbeatRequest{Tracker: "t1",
		Spills:   []*mrpb.SpillAnnouncement{{AttemptId: first.AttemptId, Spill: 0, Segments: seg(1), SplitAt: &mrpb.MapCut{Offset: 400, Spill: 1, Records: 50}}},
		Attempts: []*mrpb.AttemptStatus{{AttemptId: first.AttemptId, State: StateSplit, Counters: inputRecords(50)}},
	})
	rem := launches(heartbeat(t, jt, &mrpb.HeartbeatRequest{Tracker: "t2", InitialContact: true, FreeMapSlots: 1}))[0]
	if rem.Resume.GetFirstSpill() != 1 {
		t.Fatalf("remainder resume point %v", rem.Resume)
	}
	jt.mu.Lock()
	jt.lostTrackerLocked(jt.trackers["t1"], "lost for the test")
	jt.unlock()
	if s, _ := attemptStateOf(jt, rem.AttemptId); s != StateKilled {
		t.Fatalf("the remainder is %s after the split attempt's output was lost, want KILLED", s)
	}
	resp := heartbeat(t, jt, &mrpb.HeartbeatRequest{Tracker: "t2", FreeMapSlots: 1,
		Attempts: []*mrpb.AttemptStatus{{AttemptId: rem.AttemptId, State: StateKilled}}})
	ls := launches(resp)
	if len(ls) != 1 {
		t.Fatalf("launches after the loss: %v", ls)
	}
	r := ls[0].Resume
	if r == nil || r.FirstSpill != 0 || r.Offset != 0 || len(r.Cuts) != 1 || r.Cuts[0].Offset != 400 || r.Cuts[0].Spill != 1 || r.Cuts[0].Records != 50 {
		t.Fatalf("re-run launched with %v, want from the start with the cut at 400", r)
	}
}

func TestSplitRefusals(t *testing.T) {
	tests := []struct {
		name    string
		reduces int
		conf    map[string]string
		want    string
	}{
		{"not declared split-safe", 1, nil, mr.KeySplitSafe},
		{"map-only", 0, map[string]string{mr.KeySplitSafe: "true"}, "map-only"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			jt, _ := newTestJTWith(t, dir, 0, nil, nil)
			submitSplitJob(t, jt, dir, tc.reduces, tc.conf)
			a := launches(heartbeat(t, jt, &mrpb.HeartbeatRequest{InitialContact: true, FreeMapSlots: 1}))[0]
			_, err := jt.SplitTaskAttempt(context.Background(), &mrpb.SplitTaskAttemptRequest{AttemptId: a.AttemptId})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("split refused with %v, want an error naming %q", err, tc.want)
			}
			jt.mu.Lock()
			_, at := jt.findAttempt(a.AttemptId)
			ok := jt.splittableLocked(at)
			jt.unlock()
			if ok {
				t.Fatal("splittableLocked says yes")
			}
		})
	}
	jt, _ := newTestJT(t, 0)
	if _, err := jt.SplitTaskAttempt(context.Background(), &mrpb.SplitTaskAttemptRequest{AttemptId: "attempt_1_0001_m_000000_0"}); err == nil {
		t.Fatal("split of an unknown attempt accepted")
	}
}

// A remainder that fails is retried from its split point, and any other
// attempt of the task (a speculative one here) starts there too.
func TestSplitRemainderRetryAndSpeculation(t *testing.T) {
	dir := t.TempDir()
	jt, _ := newTestJTWith(t, dir, 0, nil, nil)
	id := submitSplitJob(t, jt, dir, 1, map[string]string{mr.KeySplitSafe: "true"})
	ctx := context.Background()
	first := launches(heartbeat(t, jt, &mrpb.HeartbeatRequest{InitialContact: true, FreeMapSlots: 1}))[0]
	if _, err := jt.SplitTaskAttempt(ctx, &mrpb.SplitTaskAttemptRequest{AttemptId: first.AttemptId}); err != nil {
		t.Fatal(err)
	}
	rem := launches(heartbeat(t, jt, &mrpb.HeartbeatRequest{FreeMapSlots: 1,
		Spills:   []*mrpb.SpillAnnouncement{{AttemptId: first.AttemptId, Spill: 0, Segments: seg(1), SplitAt: &mrpb.MapCut{Offset: 400, Spill: 1, Records: 50}}},
		Attempts: []*mrpb.AttemptStatus{{AttemptId: first.AttemptId, State: StateSplit, Counters: inputRecords(50)}},
	}))[0]
	retry := launches(heartbeat(t, jt, &mrpb.HeartbeatRequest{FreeMapSlots: 1,
		Attempts: []*mrpb.AttemptStatus{{AttemptId: rem.AttemptId, State: StateFailed, Diagnostic: "boom"}},
	}))
	if len(retry) != 1 || retry[0].Resume.GetOffset() != 400 || retry[0].Resume.GetFirstSpill() != 1 || retry[0].Resume.GetRecordsBefore() != 50 {
		t.Fatalf("retry of the failed remainder launched as %v", retry)
	}
	jt.mu.Lock()
	j := jt.jobs[id]
	spec := jt.startAttemptLocked(j, j.maps[0], jt.trackers["t1"], jt.now(), true, nil)
	var r *mrpb.MapResume
	for _, a := range jt.trackers["t1"].actions {
		if l := a.GetLaunch(); l != nil && l.AttemptId == spec.id {
			r = l.Resume
		}
	}
	err := jt.splitRefusalLocked(spec)
	jt.unlock()
	if r.GetOffset() != 400 || r.GetFirstSpill() != 1 {
		t.Fatalf("speculative attempt launched with resume point %v", r)
	}
	if err == nil || !strings.Contains(err.Error(), "speculative") {
		t.Fatalf("splitting a speculative attempt: %v", err)
	}
}

// An attempt killed after it announced its split point (before it ended
// SPLIT) leaves the split point to the task: its last spill is published
// and ends there, so the next attempt starts at it.
func TestSplitPointStandsWhenTheAttemptIsKilled(t *testing.T) {
	dir := t.TempDir()
	jt, _ := newTestJTWith(t, dir, 0, nil, nil)
	submitSplitJob(t, jt, dir, 1, map[string]string{mr.KeySplitSafe: "true"})
	ctx := context.Background()
	first := launches(heartbeat(t, jt, &mrpb.HeartbeatRequest{InitialContact: true, FreeMapSlots: 1}))[0]
	if _, err := jt.SplitTaskAttempt(ctx, &mrpb.SplitTaskAttemptRequest{AttemptId: first.AttemptId}); err != nil {
		t.Fatal(err)
	}
	heartbeat(t, jt, &mrpb.HeartbeatRequest{
		Spills:   []*mrpb.SpillAnnouncement{{AttemptId: first.AttemptId, Spill: 0, Segments: seg(1), SplitAt: &mrpb.MapCut{Offset: 400, Spill: 1, Records: 50}}},
		Attempts: []*mrpb.AttemptStatus{{AttemptId: first.AttemptId, State: StateRunning, Counters: inputRecords(50)}},
	})
	if _, err := jt.KillTaskAttempt(ctx, &mrpb.KillTaskAttemptRequest{AttemptId: first.AttemptId}); err != nil {
		t.Fatal(err)
	}
	next := launches(heartbeat(t, jt, &mrpb.HeartbeatRequest{FreeMapSlots: 1,
		Attempts: []*mrpb.AttemptStatus{{AttemptId: first.AttemptId, State: StateKilled}}}))
	if len(next) != 1 || next[0].Resume.GetOffset() != 400 || next[0].Resume.GetFirstSpill() != 1 {
		t.Fatalf("after the kill the map was launched as %v, want from the split point", next)
	}
}

// A map attempt behind spills of its map that another attempt published
// (a failed attempt's stay published) is not split: its last spill before
// the split point would end early, differ from the published one, and
// fail it as non-deterministic. Once it has caught up with them it may be.
func TestSplitRefusedBehindPublishedSpills(t *testing.T) {
	dir := t.TempDir()
	jt, _ := newTestJTWith(t, dir, 0, nil, nil)
	submitSplitJob(t, jt, dir, 1, map[string]string{mr.KeySplitSafe: "true"})
	ctx := context.Background()
	first := launches(heartbeat(t, jt, &mrpb.HeartbeatRequest{InitialContact: true, FreeMapSlots: 1}))[0].AttemptId
	heartbeat(t, jt, &mrpb.HeartbeatRequest{
		Spills:   []*mrpb.SpillAnnouncement{{AttemptId: first, Spill: 0, Segments: seg(1)}, {AttemptId: first, Spill: 1, Segments: seg(2)}},
		Attempts: []*mrpb.AttemptStatus{{AttemptId: first, State: StateFailed, Diagnostic: "boom"}}})
	retry := launches(heartbeat(t, jt, &mrpb.HeartbeatRequest{FreeMapSlots: 1}))[0].AttemptId
	heartbeat(t, jt, &mrpb.HeartbeatRequest{Spills: []*mrpb.SpillAnnouncement{{AttemptId: retry, Spill: 0, Segments: seg(1)}},
		Attempts: []*mrpb.AttemptStatus{{AttemptId: retry, State: StateRunning}}})
	_, err := jt.SplitTaskAttempt(ctx, &mrpb.SplitTaskAttemptRequest{AttemptId: retry})
	if err == nil || !strings.Contains(err.Error(), "spill 1 of its map is published, by") {
		t.Fatalf("split of an attempt behind a published spill: %v", err)
	}
	heartbeat(t, jt, &mrpb.HeartbeatRequest{Spills: []*mrpb.SpillAnnouncement{{AttemptId: retry, Spill: 1, Segments: seg(2)}},
		Attempts: []*mrpb.AttemptStatus{{AttemptId: retry, State: StateRunning}}})
	if _, err := jt.SplitTaskAttempt(ctx, &mrpb.SplitTaskAttemptRequest{AttemptId: retry}); err != nil {
		t.Fatalf("split of an attempt past the published spills: %v", err)
	}
}
