package tasktracker

import (
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"gomr/mrpb"
)

// TestHungChildTimedOut: an attempt that reports no progress for
// mapreduce.task.timeout (2 s here) is killed and reported FAILED with
// Hadoop's message, and its slot is freed; one that keeps reporting
// progress (here, a counter, which every heartbeat carries with the
// counters' interval at 0) runs on past the timeout.
func TestHungChildTimedOut(t *testing.T) {
	tr := startTracker(t, trackerOpts{maps: 1, reduces: 1, conf: map[string]string{KeyCountersInterval: "0s"}})
	j := newTestJob(t, blockDef, 1)
	j.conf = map[string]string{"mapreduce.task.timeout": "2000"}
	m0 := j.attempt("m", 0, 0)
	from := tr.jt.send(j.launch(t, "m", 0, 0))
	tr.jt.waitBeat(t, from, "reporting "+m0+" RUNNING", inState(m0, "RUNNING"))
	pid := tr.waitChild(t, m0)
	tr.waitStderr(t, j.id, m0, blockMarker)

	// Alive and counting: still running after one and a half timeouts.
	time.Sleep(3 * time.Second)
	b, _ := tr.jt.waitBeat(t, tr.jt.send(), "after 3 s", func(*mrpb.HeartbeatRequest) bool { return true })
	st := attemptIn(b, m0)
	if st == nil || st.State != "RUNNING" || counter(st, blockGroup, blockTicks) <= 0 {
		t.Fatalf("a map reporting progress, 3 s into a timeout of 2 s: %s; want it RUNNING, with ticks", describeBeat(b))
	}

	// Hung: stopped, it reports nothing.
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	from = tr.jt.next()
	b, _ = tr.jt.waitBeat(t, from, "reporting "+m0+" ended", func(b *mrpb.HeartbeatRequest) bool {
		a := attemptIn(b, m0)
		return a != nil && a.State != "RUNNING"
	})
	st = attemptIn(b, m0)
	want := fmt.Sprintf("Task %s failed to report status for 2 seconds. Killing!", m0)
	if st.State != "FAILED" || st.Diagnostic != want {
		t.Errorf("%s stopped: ended %s (%q); want FAILED (%q)", m0, st.State, st.Diagnostic, want)
	}
	if b.FreeMapSlots != 1 {
		t.Errorf("the heartbeat reporting the timeout has %d free map slots, want 1", b.FreeMapSlots)
	}
	if !processGone(pid) {
		t.Errorf("the hung child (pid %d) was not killed", pid)
	}
}

// TestLaunchFailure: an attempt whose child cannot be started is
// reported FAILED with the cause, and its slot is not held.
func TestLaunchFailure(t *testing.T) {
	cases := []struct {
		name   string
		exe    string // the child binary (empty: this one)
		faults string // FaultsEnv
		// wantDiag is the diagnostic after "launching the task child: ".
		wantDiag string
	}{
		{name: "no such binary", exe: "no-such-binary", wantDiag: "fork/exec %s: no such file or directory"},
		{name: "fault injection", faults: "fail-tasks=1", wantDiag: "fault injection: fail-tasks"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv(FaultsEnv, c.faults)
			o := trackerOpts{maps: 1, reduces: 1}
			want := c.wantDiag
			if c.exe != "" {
				o.exe = filepath.Join(t.TempDir(), c.exe)
				want = fmt.Sprintf(want, o.exe)
			}
			want = "launching the task child: " + want
			tr := startTracker(t, o)
			j := newTestJob(t, wordCountDef, 1)
			m0 := j.attempt("m", 0, 0)
			from := tr.jt.send(j.launch(t, "m", 0, 0))
			b, i := tr.jt.waitBeat(t, from, "reporting "+m0, func(b *mrpb.HeartbeatRequest) bool { return attemptIn(b, m0) != nil })
			st := attemptIn(b, m0)
			if st.State != "FAILED" || st.Diagnostic != want {
				t.Errorf("%s: %s (%q); want FAILED (%q)", m0, st.State, st.Diagnostic, want)
			}
			if b.FreeMapSlots != 1 {
				t.Errorf("the heartbeat reporting the failed launch has %d free map slots, want 1", b.FreeMapSlots)
			}
			next, _ := tr.jt.waitBeat(t, i+1, "after the failure", func(*mrpb.HeartbeatRequest) bool { return true })
			if attemptIn(next, m0) != nil {
				t.Errorf("%s reported again after its failure was reported", m0)
			}
		})
	}
}

// TestLostReplyNotAcknowledged: every heartbeat names the last reply the
// tracker received. A reply lost on its way (fault injection drops the
// first one that carries actions, after the JobTracker sent it) is not
// acknowledged and its launch not carried out, so that the JobTracker
// sends it again; the launch sent again runs.
func TestLostReplyNotAcknowledged(t *testing.T) {
	t.Setenv(FaultsEnv, "drop-replies=1")
	tr := startTracker(t, trackerOpts{maps: 1, reduces: 1})
	j := newTestJob(t, blockDef, 1)
	m0 := j.attempt("m", 0, 0)

	lost := tr.jt.send(j.launch(t, "m", 0, 0)) - 1 // the heartbeat whose reply carries it
	tr.jt.waitBeat(t, lost+1, "after the lost reply", func(*mrpb.HeartbeatRequest) bool { return true })
	again := tr.jt.send(j.launch(t, "m", 0, 0)) - 1
	b, last := tr.jt.waitBeat(t, again+1, "reporting "+m0+" RUNNING", inState(m0, "RUNNING"))
	if b.FreeMapSlots != 0 {
		t.Errorf("the launch sent again: %d free map slots, want 0", b.FreeMapSlots)
	}
	// The reply to heartbeat i has id i+1 (the fake numbers its replies
	// from 1): heartbeat i names reply i, but for the one after the lost
	// reply, which names the reply before it.
	for i, hb := range tr.jt.beatsFrom(0)[:last+1] {
		want := int64(i)
		if i == lost+1 {
			want = int64(lost)
		}
		if hb.ResponseId != want {
			t.Errorf("heartbeat %d names reply %d, want %d (reply %d was lost)", i, hb.ResponseId, want, lost+1)
		}
		if i > lost && i <= again && attemptIn(hb, m0) != nil {
			t.Errorf("heartbeat %d reports %s, whose launch was lost", i, m0)
		}
	}
	if n := len(tr.childPIDs(m0)); n != 1 {
		t.Errorf("%s has %d children, want 1", m0, n)
	}
	if !strings.Contains(tr.log.String(), "fault injection: dropping a heartbeat reply") {
		t.Errorf("the tracker did not log the dropped reply")
	}
}

// TestCloneWithoutCRIU: a clone order reaches a tracker that cannot
// clone (no CRIU): the new attempt is reported FAILED at once, with the
// reason in its diagnostic and clone stats (the JobTracker then falls back
// to a fresh attempt), and holds no slot; its source runs on.
func TestCloneWithoutCRIU(t *testing.T) {
	tr := startTracker(t, trackerOpts{maps: 2, reduces: 1})
	if b := tr.jt.beatsFrom(0)[0]; b.CriuAvailable {
		t.Fatalf("a tracker with mapreduce.tasktracker.criu.path empty says it can clone")
	}
	j := newTestJob(t, blockDef, 1)
	src, clone := j.attempt("m", 0, 0), j.attempt("m", 0, 1)
	from := tr.jt.send(j.launch(t, "m", 0, 0))
	tr.jt.waitBeat(t, from, "reporting "+src+" RUNNING", inState(src, "RUNNING"))
	from = tr.jt.send(&mrpb.TaskAction{Action: &mrpb.TaskAction_Clone{Clone: &mrpb.CloneAttempt{
		SourceAttempt: src, SourceAddress: tr.tt.ShuffleAddress(), Launch: j.launch(t, "m", 0, 1).GetLaunch(),
	}}})
	b, _ := tr.jt.waitBeat(t, from, "reporting "+clone+" FAILED", inState(clone, "FAILED"))
	st := attemptIn(b, clone)
	reason := "CRIU is not available on tracker " + testTrackerName
	if st.Diagnostic != "clone failed: "+reason || st.Clone == nil || st.Clone.Error != reason || st.Clone.SourceAttempt != src {
		t.Errorf("%s: diagnostic %q, clone stats %v; want %q, with the error and source %s", clone, st.Diagnostic, st.Clone, "clone failed: "+reason, src)
	}
	if a := attemptIn(b, src); a == nil || a.State != "RUNNING" || a.Cloneable {
		t.Errorf("the source after the failed clone: %v; want RUNNING, not cloneable", a)
	}
	if b.FreeMapSlots != 1 {
		t.Errorf("with the clone failed: %d free map slots, want 1", b.FreeMapSlots)
	}
	if pids := tr.childPIDs(clone); len(pids) != 0 {
		t.Errorf("the failed clone has child processes %v", pids)
	}
}
