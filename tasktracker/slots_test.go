package tasktracker

import (
	"fmt"
	"strings"
	"syscall"
	"testing"

	"gomr/mrpb"
)

// TestSlotsFreedWhenAttemptsEnd runs an attempt in the only slot of its
// kind and ends it each way an attempt ends (success, its own failure, a
// kill order, a crash of the child): the heartbeat that reports the end
// counts the slot free again, with the final state and diagnostic, and
// the attempt is reported no more after that heartbeat.
func TestSlotsFreedWhenAttemptsEnd(t *testing.T) {
	cases := []struct {
		name string
		def  string
		typ  string
		// end ends the attempt (nil: it ends by itself); pid is its child.
		end       func(t *testing.T, tr *testTracker, id string, pid int)
		wantState string
		// wantDiag is the diagnostic's start; wantInDiag must be in it.
		wantDiag, wantInDiag string
	}{
		{name: "map succeeds", def: wordCountDef, typ: "m", wantState: "SUCCEEDED"},
		{name: "map fails", def: failDef, typ: "m", wantState: "FAILED", wantDiag: "map: " + failMessage},
		{name: "map killed", def: blockDef, typ: "m", end: killByJobTracker, wantState: "KILLED", wantDiag: "killed by the jobtracker"},
		{name: "map crashes", def: blockDef, typ: "m", end: crash, wantState: "FAILED",
			wantDiag: "task child signal: killed", wantInDiag: blockMarker},
		// A reduce of a job whose map never announces anything waits in
		// its shuffle until it is ended.
		{name: "reduce killed", def: wordCountDef, typ: "r", end: killByJobTracker, wantState: "KILLED", wantDiag: "killed by the jobtracker"},
		{name: "reduce crashes", def: wordCountDef, typ: "r", end: crash, wantState: "FAILED", wantDiag: "task child signal: killed"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr := startTracker(t, trackerOpts{maps: 1, reduces: 1})
			j := newTestJob(t, c.def, 1)
			id := j.attempt(c.typ, 0, 0)
			free := func(b *mrpb.HeartbeatRequest) (maps, reduces int32) { return b.FreeMapSlots, b.FreeReduceSlots }

			from := tr.jt.send(j.launch(t, c.typ, 0, 0))
			var pid int
			if c.end != nil {
				b, _ := tr.jt.waitBeat(t, from, "reporting "+id+" RUNNING", inState(id, "RUNNING"))
				wantMaps, wantReduces := int32(0), int32(1)
				if c.typ == "r" {
					wantMaps, wantReduces = 1, 0
				}
				if m, r := free(b); m != wantMaps || r != wantReduces {
					t.Fatalf("with %s running: free slots %d maps, %d reduces; want %d, %d", id, m, r, wantMaps, wantReduces)
				}
				pid = tr.waitChild(t, id)
				if c.def == blockDef {
					tr.waitStderr(t, j.id, id, blockMarker)
				}
				c.end(t, tr, id, pid)
			}
			b, i := tr.jt.waitBeat(t, from, "reporting the end of "+id, func(b *mrpb.HeartbeatRequest) bool {
				a := attemptIn(b, id)
				return a != nil && a.State != "RUNNING" && a.State != "COMMIT_PENDING"
			})
			st := attemptIn(b, id)
			if st.State != c.wantState {
				t.Fatalf("%s ended %s (%q), want %s", id, st.State, st.Diagnostic, c.wantState)
			}
			if !strings.HasPrefix(st.Diagnostic, c.wantDiag) || !strings.Contains(st.Diagnostic, c.wantInDiag) ||
				(c.wantDiag == "" && st.Diagnostic != "") {
				t.Errorf("%s diagnostic %q, want it to start with %q and contain %q", id, st.Diagnostic, c.wantDiag, c.wantInDiag)
			}
			if st.FinishMs < st.StartMs || st.StartMs == 0 {
				t.Errorf("%s start %d ms, finish %d ms", id, st.StartMs, st.FinishMs)
			}
			if m, r := free(b); m != 1 || r != 1 {
				t.Errorf("the heartbeat reporting %s %s has %d free maps, %d free reduces; want 1, 1", id, st.State, m, r)
			}
			next, _ := tr.jt.waitBeat(t, i+1, "after the end of "+id, func(*mrpb.HeartbeatRequest) bool { return true })
			if a := attemptIn(next, id); a != nil {
				t.Errorf("%s reported again after its end was reported: %s", id, a.State)
			}
			if m, r := free(next); m != 1 || r != 1 {
				t.Errorf("after %s ended: %d free maps, %d free reduces; want 1, 1", id, m, r)
			}
			if pid != 0 && !processGone(pid) {
				t.Errorf("the child of %s (pid %d) is still alive", id, pid)
			}
			if pids := tr.childPIDs(id); len(pids) > 0 {
				t.Errorf("%s still has child processes %v", id, pids)
			}
		})
	}
}

// killByJobTracker orders the tracker to kill attempt id.
func killByJobTracker(t *testing.T, tr *testTracker, id string, _ int) {
	tr.jt.send(killAction(id))
}

// crash kills the child process of an attempt from outside the tracker,
// as the kernel's OOM killer would.
func crash(t *testing.T, _ *testTracker, _ string, pid int) {
	if err := killPID(pid); err != nil {
		t.Fatal(err)
	}
}

// killPID sends SIGKILL to process pid.
func killPID(pid int) error {
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return fmt.Errorf("kill -9 %d: %w", pid, err)
	}
	return nil
}

// TestSlotAccounting launches up to every slot of both kinds and checks
// the slot counts each heartbeat reports, as attempts start and end.
func TestSlotAccounting(t *testing.T) {
	tr := startTracker(t, trackerOpts{maps: 2, reduces: 1})
	first := tr.jt.beatsFrom(0)[0]
	if first.MapSlots != 2 || first.ReduceSlots != 1 || first.FreeMapSlots != 2 || first.FreeReduceSlots != 1 ||
		!first.AcceptNewTasks || len(first.Attempts) != 0 {
		t.Fatalf("first heartbeat: %s; want 2 map and 1 reduce slots, all free, accepting tasks", describeBeat(first))
	}
	j := newTestJob(t, blockDef, 1)
	m0, m1, r0 := j.attempt("m", 0, 0), j.attempt("m", 0, 1), j.attempt("r", 0, 0)
	steps := []struct {
		name    string
		actions []*mrpb.TaskAction
		// running are the attempts then reported RUNNING (all of them),
		// with these free slots.
		running               []string
		freeMaps, freeReduces int32
	}{
		{"one map", []*mrpb.TaskAction{j.launch(t, "m", 0, 0)}, []string{m0}, 1, 1},
		{"a second map and a reduce", []*mrpb.TaskAction{j.launch(t, "m", 0, 1), j.launch(t, "r", 0, 0)}, []string{m0, m1, r0}, 0, 0},
		{"the first map killed", []*mrpb.TaskAction{killAction(m0)}, []string{m1, r0}, 1, 0},
		{"the reduce killed", []*mrpb.TaskAction{killAction(r0)}, []string{m1}, 1, 1},
		{"the second map killed", []*mrpb.TaskAction{killAction(m1)}, nil, 2, 1},
	}
	for _, s := range steps {
		from := tr.jt.send(s.actions...)
		b, _ := tr.jt.waitBeat(t, from, "after "+s.name, func(b *mrpb.HeartbeatRequest) bool {
			n := 0
			for _, a := range b.Attempts {
				if a.State == "RUNNING" {
					n++
				}
			}
			return n == len(s.running) && b.FreeMapSlots == s.freeMaps && b.FreeReduceSlots == s.freeReduces
		})
		for _, id := range s.running {
			if a := attemptIn(b, id); a == nil || a.State != "RUNNING" {
				t.Errorf("after %s: %s not reported RUNNING: %s", s.name, id, describeBeat(b))
			}
		}
		if b.MapSlots != 2 || b.ReduceSlots != 1 {
			t.Errorf("after %s: slots %d maps, %d reduces; want 2, 1", s.name, b.MapSlots, b.ReduceSlots)
		}
		for _, id := range s.running {
			tr.waitChild(t, id)
		}
	}
}

// TestSlotsOverSubscribed: the tracker trusts the JobTracker to launch
// only into free slots (docs/architecture.md: free slots are the
// configured slots minus the live attempts). It runs a launch beyond its
// slots as it is told, and reports no free slot, never a negative count,
// until enough attempts end.
func TestSlotsOverSubscribed(t *testing.T) {
	tr := startTracker(t, trackerOpts{maps: 1, reduces: 1})
	j := newTestJob(t, blockDef, 1)
	a0, a1 := j.attempt("m", 0, 0), j.attempt("m", 0, 1)
	from := tr.jt.send(j.launch(t, "m", 0, 0), j.launch(t, "m", 0, 1))
	b, _ := tr.jt.waitBeat(t, from, "reporting both maps RUNNING", func(b *mrpb.HeartbeatRequest) bool {
		return inState(a0, "RUNNING")(b) && inState(a1, "RUNNING")(b)
	})
	if b.FreeMapSlots != 0 || b.FreeReduceSlots != 1 {
		t.Errorf("two maps on one map slot: free %d maps, %d reduces; want 0, 1", b.FreeMapSlots, b.FreeReduceSlots)
	}
	pid0, pid1 := tr.waitChild(t, a0), tr.waitChild(t, a1)
	if pid0 == pid1 {
		t.Fatalf("both attempts run as pid %d", pid0)
	}
	from = tr.jt.send(killAction(a0))
	b, _ = tr.jt.waitBeat(t, from, "reporting "+a0+" KILLED", inState(a0, "KILLED"))
	if b.FreeMapSlots != 0 {
		t.Errorf("one of two maps left on one slot: %d free maps, want 0", b.FreeMapSlots)
	}
	from = tr.jt.send(killAction(a1))
	b, _ = tr.jt.waitBeat(t, from, "reporting "+a1+" KILLED", inState(a1, "KILLED"))
	if b.FreeMapSlots != 1 {
		t.Errorf("both maps ended: %d free maps, want 1", b.FreeMapSlots)
	}
}
