package jobtracker

import (
	"context"
	"math"
	"reflect"
	"testing"
	"time"

	"gomr/mrpb"
	"gomr/partitions"
)

func TestFullTaskDuration(t *testing.T) {
	s := time.Second
	cases := []struct {
		name      string
		wall      time.Duration
		cost      time.Duration
		p0        float64
		want      time.Duration
		wantCount bool
	}{
		{"fresh attempt: its wall time", 40 * s, 0, 0, 40 * s, true},
		{"clone from half way: twice its run", 21 * s, 1 * s, 0.5, 40 * s, true},
		{"clone from 0.8: five times its run", 9 * s, 1 * s, 0.8, 40 * s, true},
		{"clone whose cost exceeds its wall time", 1 * s, 2 * s, 0.5, 0, true},
		{"clone from 0.96: no sample", 3 * s, 1 * s, 0.96, 0, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := fullTaskDuration(c.wall, c.cost, c.p0)
			if ok != c.wantCount || (ok && (got-c.want).Abs() > time.Millisecond) {
				t.Errorf("fullTaskDuration(%v, %v, %v) = %v, %v; want %v, %v", c.wall, c.cost, c.p0, got, ok, c.want, c.wantCount)
			}
		})
	}
}

func TestCloneMeasurementSplitsTheCopy(t *testing.T) {
	cases := []struct {
		name                  string
		cs                    *mrpb.CloneStats
		restore, transfer     time.Duration
		transferBytes, images int64
	}{
		{"no file set: the whole copy moves the image",
			&mrpb.CloneStats{DumpMs: 300, CopyMs: 150, RestoreMs: 100, ImageBytes: 120e6},
			250 * time.Millisecond, 0, 0, 120e6},
		{"a quarter of the bytes is file set",
			&mrpb.CloneStats{DumpMs: 300, CopyMs: 400, RestoreMs: 100, ImageBytes: 150e6, FileSetBytes: 50e6},
			400 * time.Millisecond, 100 * time.Millisecond, 50e6, 150e6},
		{"nothing copied",
			&mrpb.CloneStats{DumpMs: 300, RestoreMs: 100},
			100 * time.Millisecond, 0, 0, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := cloneMeasurement(c.cs)
			if m.Dump != time.Duration(c.cs.DumpMs)*time.Millisecond || m.Restore != c.restore || m.Transfer != c.transfer ||
				m.TransferBytes != c.transferBytes || m.ImageBytes != c.images {
				t.Errorf("cloneMeasurement(%+v) = %+v; want restore %v, transfer %v of %d bytes", c.cs, m, c.restore, c.transfer, c.transferBytes)
			}
		})
	}
}

// TestAttemptRateIsSmoothedOverReports: every progress report of a running
// attempt folds into its smoothed progress rate (the smoothed runtime
// estimator's input), starting from its launch.
func TestAttemptRateIsSmoothedOverReports(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := t0
	jt, _ := newTestJTAt(t, t.TempDir(), 1, func() time.Time { return now })
	ls := launches(heartbeat(t, jt, &mrpb.HeartbeatRequest{InitialContact: true, FreeMapSlots: 1}))
	if len(ls) != 1 {
		t.Fatalf("launched %d maps, want 1", len(ls))
	}
	id := ls[0].AttemptId
	report := func(at time.Duration, p float32) {
		now = t0.Add(at)
		heartbeat(t, jt, &mrpb.HeartbeatRequest{Attempts: []*mrpb.AttemptStatus{{AttemptId: id, State: StateRunning, Progress: p}}})
	}
	rate := func() float64 {
		jt.mu.Lock()
		defer jt.unlock()
		_, a := jt.findAttempt(id)
		return jt.attemptViewLocked(a).Rate
	}
	report(2*time.Second, 0.2) // first read from the launch: 0.1/s
	if got := rate(); math.Abs(got-0.1) > 1e-6 {
		t.Fatalf("rate after the first report %.6f, want 0.1", got)
	}
	report(12*time.Second, 0.3) // read 0.01/s, w = exp(-10 s / 60 s)
	w := math.Exp(-10.0 / 60)
	if got, want := rate(), 0.1*w+0.01*(1-w); math.Abs(got-want) > 1e-6 {
		t.Fatalf("rate after the second report %.6f, want %.6f", got, want)
	}
}

// TestSpeculatorViewIsTheJobsRunningTasks checks the speculator's view of a
// job in its last wave, built in buffers reused from scan to scan: every
// running task in index order with its live attempts, and taskOf finding
// each task by its id; again after heartbeats ended and launched attempts
// (the buffers then hold the previous scan's views).
func TestSpeculatorViewIsTheJobsRunningTasks(t *testing.T) {
	r := newHeartbeatRigConf(t, 50, 1, 400, 2, false, map[string]string{"scheduler.policy": "fifo"})
	defer r.close()
	for k := 0; r.pendingMaps() > 0; k++ {
		if _, err := r.tryBeat(k%len(r.trackers), true); err != nil {
			t.Fatal(err)
		}
	}
	check := func(round int) {
		t.Helper()
		jt := r.jt
		jt.mu.Lock()
		defer jt.unlock()
		j := jt.order[0]
		view := jt.speculatorViewLocked(j, jt.now())
		var want []*task
		for _, tk := range j.maps {
			if len(tk.running()) > 0 {
				want = append(want, tk)
			}
		}
		got := view.Map.Tasks
		if len(got) != len(want) || len(want) == 0 {
			t.Fatalf("round %d: %d tasks in the view, want %d (> 0)", round, len(got), len(want))
		}
		for i, tk := range want {
			live := tk.running()
			if got[i].ID != tk.id() || len(got[i].Attempts) != len(live) {
				t.Fatalf("round %d: view task %d is %s with %d attempts, want %s with %d", round, i, got[i].ID, len(got[i].Attempts), tk.id(), len(live))
			}
			for k, a := range live {
				if got[i].Attempts[k].ID != a.id || got[i].Attempts[k].Tracker != a.tracker {
					t.Fatalf("round %d: task %s attempt %d is %s on %s, want %s on %s", round, tk.id(), k, got[i].Attempts[k].ID, got[i].Attempts[k].Tracker, a.id, a.tracker)
				}
			}
			if j.specScan.taskOf(partitions.Map, tk.id()) != tk {
				t.Fatalf("round %d: taskOf(%s) is not the task", round, tk.id())
			}
		}
		if view.Map.Pending != 0 || view.Map.Total != len(j.maps) || len(view.Map.Finished) != j.finishedMaps {
			t.Fatalf("round %d: pending %d total %d finished %d, want 0, %d, %d", round, view.Map.Pending, view.Map.Total, len(view.Map.Finished), len(j.maps), j.finishedMaps)
		}
	}
	check(1)
	for k := 0; k < 30; k++ {
		if _, err := r.tryBeat(k%len(r.trackers), true); err != nil {
			t.Fatal(err)
		}
	}
	check(2)
}

// TestChunkedViewIsTheLockedView checks that the speculation loop's view,
// built a chunk of tasks per hold of the lock (speculateChunked), is the
// view built under one hold when nothing changes between the chunks: the
// same tasks in the same order with the same attempt views; and that a
// scan of the loop runs on it.
func TestChunkedViewIsTheLockedView(t *testing.T) {
	defer func(n int) { specChunk = n }(specChunk)
	specChunk = 7
	r := newHeartbeatRigConf(t, 50, 1, 400, 2, false, map[string]string{"scheduler.policy": "fifo"})
	defer r.close()
	for k := 0; r.pendingMaps() > 0; k++ {
		if _, err := r.tryBeat(k%len(r.trackers), true); err != nil {
			t.Fatal(err)
		}
	}
	jt := r.jt
	views := map[*job]*specScratch{}
	for round := 1; round <= 2; round++ {
		jt.mu.Lock()
		j := jt.order[0]
		jt.unlock()
		sc := &specScratch{}
		if v := views[j]; v != nil {
			sc = v // the second round reuses the first's buffers
		}
		views[j] = sc
		jt.buildViewChunked(j, sc)
		jt.mu.Lock()
		want := jt.speculatorViewLocked(j, jt.now())
		got := sc.view.Map.Tasks
		if len(got) != len(want.Map.Tasks) || len(got) == 0 {
			jt.unlock()
			t.Fatalf("round %d: %d tasks in the chunked view, want %d (> 0)", round, len(got), len(want.Map.Tasks))
		}
		for i := range got {
			if !reflect.DeepEqual(got[i], want.Map.Tasks[i]) {
				jt.unlock()
				t.Fatalf("round %d: task %d of the chunked view is %+v, want %+v", round, i, got[i], want.Map.Tasks[i])
			}
			if sc.tasks[partitions.Map][i] != j.specScan.tasks[partitions.Map][i] {
				jt.unlock()
				t.Fatalf("round %d: task %d of the chunked view is not the job's", round, i)
			}
		}
		jt.unlock()
		jt.speculateChunked(views)
		for k := 0; k < 30; k++ {
			if _, err := r.tryBeat(k%len(r.trackers), true); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestNoOtherTrackerForAFreshAttempt: the speculator is told that a fresh
// attempt could run nowhere while no live tracker but the attempt's own
// has slots of its type and is neither blacklisted by the job nor one the
// task failed on, as trackers join (with and without such slots), are
// excluded, and are lost.
func TestNoOtherTrackerForAFreshAttempt(t *testing.T) {
	jt, _ := newTestJT(t, 1)
	ls := launches(heartbeat(t, jt, &mrpb.HeartbeatRequest{InitialContact: true, FreeMapSlots: 1}))
	if len(ls) != 1 {
		t.Fatalf("launched %d maps, want 1", len(ls))
	}
	join := func(name string, maps, reduces int32) {
		t.Helper()
		req := &mrpb.HeartbeatRequest{Tracker: name, Host: "h-" + name, MapSlots: maps, ReduceSlots: reduces, InitialContact: true}
		asTracker(jt, req)
		if _, err := jt.Heartbeat(context.Background(), req); err != nil {
			t.Fatal(err)
		}
	}
	check := func(step string, want bool) {
		t.Helper()
		jt.mu.Lock()
		defer jt.unlock()
		_, a := jt.findAttempt(ls[0].AttemptId)
		if got := jt.attemptViewLocked(a).NoOtherTracker; got != want {
			t.Errorf("%s: NoOtherTracker = %v, want %v", step, got, want)
		}
	}
	check("one tracker", true)
	join("t2", 0, 1)
	check("a second tracker without map slots", true)
	join("t3", 2, 0)
	check("a second tracker with map slots", false)
	set := func(f func(j *job, tk *task)) {
		jt.mu.Lock()
		defer jt.unlock()
		_, a := jt.findAttempt(ls[0].AttemptId)
		f(a.task.job, a.task)
	}
	set(func(j *job, tk *task) { tk.failedOn = map[string]bool{"t3": true} })
	check("the task failed on that tracker", true)
	set(func(j *job, tk *task) {
		tk.failedOn = nil
		j.trackerFailures = map[string]int{"t3": j.settings().maxTrackerFailures}
	})
	check("the job blacklisted that tracker", true)
	join("t4", 1, 0)
	check("a third tracker with map slots", false)
	set(func(j *job, tk *task) { tk.failedOn = map[string]bool{"t4": true, "t1": true} })
	check("failed on the third and on its own tracker too", true)
	set(func(j *job, tk *task) { tk.failedOn, j.trackerFailures = nil, nil })
	jt.mu.Lock()
	jt.lostTrackerLocked(jt.trackers["t4"], "test")
	jt.unlock()
	check("the third tracker lost", false)
	jt.mu.Lock()
	jt.lostTrackerLocked(jt.trackers["t3"], "test")
	jt.unlock()
	check("that tracker lost", true)
}
