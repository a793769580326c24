package main

import (
	"path/filepath"
	"testing"
	"time"

	"gomr/apps"
	"gomr/mr"
)

// replayTolerance is how much longer than asked a replay task may be
// recorded: the attempt's start and end in the history are the
// JobTracker's, so they include the child's start (a process exec) and
// the report of its end (a heartbeat, 100 ms here).
const replayTolerance = 1500 * time.Millisecond

// TestE2EReplayJobTimesAndBytes runs one replay job on a real cluster and
// checks, from its job history, that every map and reduce attempt lasted
// what it was asked (never less, at most replayTolerance more), and from
// its counters that the bytes went through the spill and the shuffle.
func TestE2EReplayJobTimesAndBytes(t *testing.T) {
	c := startCluster(t, []trackerSpec{{"t1", 3, 2}})
	task := apps.ReplayTask{
		Maps:        []time.Duration{300 * time.Millisecond, 1200 * time.Millisecond, 600 * time.Millisecond},
		Reduces:     []time.Duration{700 * time.Millisecond, 200 * time.Millisecond},
		Shuffles:    []time.Duration{2500 * time.Millisecond, 0},
		InputBytes:  3 << 20,
		OutputBytes: 300_000,
	}
	spec, err := task.Spec("replay-e2e", filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	id := c.submit(spec)
	res := c.wait(id)
	rec := c.history(id)
	if rec.Job.InputBytes != task.InputBytes {
		t.Errorf("history input bytes %d, want %d", rec.Job.InputBytes, task.InputBytes)
	}
	var mapsEnd time.Time
	for _, a := range rec.Attempts {
		if a.TaskType == "m" && a.Finish.After(mapsEnd) {
			mapsEnd = a.Finish
		}
	}
	for _, a := range rec.Attempts {
		if a.State != "SUCCEEDED" {
			t.Errorf("attempt %s ended %s: %s", a.AttemptID, a.State, a.Error)
			continue
		}
		took := a.Finish.Sub(a.Start)
		var want, most time.Duration
		if a.TaskType == "m" {
			want = task.Maps[a.Task]
			most = want
		} else {
			// The reduce phase starts at the end of the sort, which the
			// reduce holds until its shuffle time has passed; the shuffle
			// also waits for the last map, as in the simulator.
			want = task.Shuffles[a.Task] + task.Reduces[a.Task]
			most = max(task.Shuffles[a.Task], mapsEnd.Sub(a.Start)) + task.Reduces[a.Task]
			if a.SortFinish != nil {
				if rp := a.Finish.Sub(*a.SortFinish); rp < task.Reduces[a.Task] {
					t.Errorf("reduce %d: reduce phase %v, asked at least %v", a.Task, rp, task.Reduces[a.Task])
				}
			}
		}
		t.Logf("%s %d: %v (asked %v, at most %v)", a.TaskType, a.Task, took.Round(time.Millisecond), want, most)
		if took < want || took > most+replayTolerance {
			t.Errorf("%s task %d lasted %v in the history, asked %v..%v (tolerance +%v)", a.TaskType, a.Task, took, want, most, replayTolerance)
		}
	}
	if got := res.Counters.Get(apps.ReplayCounterGroup, apps.ReplayMapBytes); got != task.OutputBytes {
		t.Errorf("%s = %d, want %d", apps.ReplayMapBytes, got, task.OutputBytes)
	}
	if got := res.Counters.Get(apps.ReplayCounterGroup, apps.ReplayReduceBytes); got != task.OutputBytes {
		t.Errorf("%s = %d, want %d", apps.ReplayReduceBytes, got, task.OutputBytes)
	}
	if got := res.Counters.Get(mr.TaskCounterGroup, mr.ReduceShuffleBytes); got < task.OutputBytes*9/10 {
		t.Errorf("%s = %d: want at least 90%% of the %d bytes the maps emitted (random values: compression keeps little)", mr.ReduceShuffleBytes, got, task.OutputBytes)
	}
	if got := res.Counters.Get(mr.TaskCounterGroup, mr.MapOutputBytes); got < task.OutputBytes {
		t.Errorf("%s = %d, want at least %d", mr.MapOutputBytes, got, task.OutputBytes)
	}
}
