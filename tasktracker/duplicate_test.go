package tasktracker

import (
	"strings"
	"testing"

	"gomr/mrpb"
)

// TestDuplicateLaunchIgnored: the JobTracker sends the actions of a reply
// it believes lost again, so a tracker can be told to launch an attempt it
// already runs, in the same reply or a later one. It must keep the one
// child it started (same process, same attempt state and token) and count
// its slot once.
func TestDuplicateLaunchIgnored(t *testing.T) {
	tr := startTracker(t, trackerOpts{maps: 2, reduces: 1})
	j := newTestJob(t, blockDef, 1)
	m0 := j.attempt("m", 0, 0)

	from := tr.jt.send(j.launch(t, "m", 0, 0), j.launch(t, "m", 0, 0))
	tr.jt.waitBeat(t, from, "reporting "+m0+" RUNNING", inState(m0, "RUNNING"))
	pid := tr.waitChild(t, m0)
	tr.waitStderr(t, j.id, m0, blockMarker)
	tr.tt.mu.Lock()
	first := tr.tt.attempts[m0]
	tr.tt.mu.Unlock()

	from = tr.jt.send(j.launch(t, "m", 0, 0))
	// Two heartbeats after the one that carried the replay: the tracker
	// has acted on it and reported since.
	_, i := tr.jt.waitBeat(t, from, "after the replayed launch", func(*mrpb.HeartbeatRequest) bool { return true })
	b, _ := tr.jt.waitBeat(t, i+1, "after the replayed launch", func(*mrpb.HeartbeatRequest) bool { return true })
	n := 0
	for _, a := range b.Attempts {
		if a.AttemptId == m0 {
			n++
		}
	}
	if n != 1 || len(b.Attempts) != 1 || attemptIn(b, m0).State != "RUNNING" {
		t.Errorf("after the replays: %s; want %s RUNNING, once", describeBeat(b), m0)
	}
	if b.FreeMapSlots != 1 {
		t.Errorf("one attempt launched three times on 2 map slots: %d free, want 1", b.FreeMapSlots)
	}
	if pids := tr.childPIDs(m0); len(pids) != 1 || pids[0] != pid {
		t.Errorf("children of %s after the replays: %v, want only the first, %d", m0, pids, pid)
	}
	tr.tt.mu.Lock()
	now := tr.tt.attempts[m0]
	tr.tt.mu.Unlock()
	if now != first {
		t.Errorf("the replayed launch replaced the tracker's record of %s", m0)
	}
	if got := strings.Count(tr.log.String(), "launch of a known attempt ignored"); got != 2 {
		t.Errorf("the tracker logged %d ignored launches, want 2 (one in the first reply, one replayed)", got)
	}

	// The attempt is still the tracker's to kill.
	from = tr.jt.send(killAction(m0))
	tr.jt.waitBeat(t, from, "reporting "+m0+" KILLED", inState(m0, "KILLED"))
	if !processGone(pid) {
		t.Errorf("the child of %s (pid %d) outlived its kill", m0, pid)
	}
}
