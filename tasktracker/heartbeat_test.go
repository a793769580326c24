package tasktracker

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"gomr/mrpb"
)

// TestOutOfBandHeartbeat: with heartbeats 10 s apart, the end of an
// attempt is reported at once, not at the next regular heartbeat.
func TestOutOfBandHeartbeat(t *testing.T) {
	tr := startTracker(t, trackerOpts{maps: 1, reduces: 1})
	j := newTestJob(t, blockDef, 1)
	m0 := j.attempt("m", 0, 0)
	from := tr.jt.send(j.launch(t, "m", 0, 0))
	tr.jt.waitBeat(t, from, "reporting "+m0+" RUNNING", inState(m0, "RUNNING"))
	pid := tr.waitChild(t, m0)
	// The reply to the next heartbeat recorded, i, sets a 10 s interval.
	tr.jt.mu.Lock()
	tr.jt.intervalMs = 10000
	i := len(tr.jt.beats)
	tr.jt.mu.Unlock()
	tr.jt.waitBeat(t, i, "after the interval change", func(*mrpb.HeartbeatRequest) bool { return true })
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	tr.jt.waitBeat(t, i+1, "reporting "+m0+" FAILED", inState(m0, "FAILED"))
	if d := time.Since(killed); d > 5*time.Second {
		t.Errorf("the crash of %s was reported %v after it, not at once (heartbeats every 10 s)", m0, d.Round(time.Millisecond))
	}
}

// TestRegistrationRefused: a JobTracker that refuses the registration
// (another live process holds the tracker's name) stops the tracker:
// Run returns the JobTracker's reason.
func TestRegistrationRefused(t *testing.T) {
	const reason = "tracker name tracker_tttest is held by a live tracker"
	tr := startTracker(t, trackerOpts{maps: 1, reduces: 1, runErr: "the jobtracker refused this tracker: " + reason,
		refuse: func(*mrpb.HeartbeatRequest) error { return status.Error(codes.AlreadyExists, reason) },
	})
	select {
	case <-tr.runDone:
	case <-time.After(waitTimeout):
		t.Fatalf("Run did not return within %v of a refused registration", waitTimeout)
	}
	if n := len(tr.jt.beatsFrom(0)); n != 1 {
		t.Errorf("%d heartbeats, want only the refused initial contact", n)
	}
}

// TestPermissionDeniedRegistersAgain: a JobTracker that no longer takes
// the tracker's heartbeats (another process registered its name after it
// expired) makes it start afresh: its attempts are killed and forgotten,
// and it registers again with an initial contact.
func TestPermissionDeniedRegistersAgain(t *testing.T) {
	tr := startTracker(t, trackerOpts{maps: 1, reduces: 1})
	j := newTestJob(t, blockDef, 1)
	m0 := j.attempt("m", 0, 0)
	from := tr.jt.send(j.launch(t, "m", 0, 0))
	tr.jt.waitBeat(t, from, "reporting "+m0+" RUNNING", inState(m0, "RUNNING"))
	pid := tr.waitChild(t, m0)

	refused := false
	tr.jt.setRefuse(func(req *mrpb.HeartbeatRequest) error {
		if refused || req.InitialContact {
			return nil
		}
		refused = true
		return status.Error(codes.PermissionDenied, "heartbeat does not carry the incarnation")
	})
	b, _ := tr.jt.waitBeat(t, from, "registering again", func(b *mrpb.HeartbeatRequest) bool { return b.InitialContact })
	if len(b.Attempts) != 0 || b.FreeMapSlots != 1 || b.ResponseId != 0 || b.Incarnation != "" {
		t.Errorf("registering again: %s, reply %d, incarnation %q; want no attempt, every slot free, no reply or incarnation",
			describeBeat(b), b.ResponseId, b.Incarnation)
	}
	if !processGone(pid) {
		t.Errorf("the child of %s (pid %d) outlived the new registration", m0, pid)
	}
	if !strings.Contains(tr.log.String(), "registering again") {
		t.Errorf("the tracker did not log why it registered again")
	}
}
