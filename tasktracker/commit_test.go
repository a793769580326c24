package tasktracker

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"gomr/mrpb"
)

// TestLateCommitAnswerAfterChildEnd: a child waits for the JobTracker's
// answer to its commit request when it is killed (a kill order for a
// speculative attempt that lost, the OOM killer). If the answer comes
// back after the tracker reaped the child, the attempt's final state must
// stand: the answer once turned it back to COMMIT_PENDING, so the
// attempt was never reported ended and its slot never freed. The test
// forces that interleaving: it calls the umbilical's CanCommit for the
// attempt after its child was killed and reaped, while the tracker cannot
// report it (its heartbeats fail).
func TestLateCommitAnswerAfterChildEnd(t *testing.T) {
	tr := startTracker(t, trackerOpts{maps: 1, reduces: 1})
	j := newTestJob(t, blockDef, 1)
	m0 := j.attempt("m", 0, 0)
	from := tr.jt.send(j.launch(t, "m", 0, 0))
	tr.jt.waitBeat(t, from, "reporting "+m0+" RUNNING", inState(m0, "RUNNING"))
	pid := tr.waitChild(t, m0)
	tr.waitStderr(t, j.id, m0, blockMarker)
	tr.tt.mu.Lock()
	a := tr.tt.attempts[m0]
	tr.tt.mu.Unlock()

	unavailable := status.Error(codes.Unavailable, "jobtracker unreachable")
	tr.jt.setRefuse(func(*mrpb.HeartbeatRequest) error { return unavailable })
	// A heartbeat refused after the hook was set: the tracker keeps
	// what it has to report from now on.
	tr.jt.waitBeat(t, tr.jt.send(), "refused", func(*mrpb.HeartbeatRequest) bool { return true })
	from = tr.jt.next()
	tr.jt.send(killAction(m0)) // delivered once heartbeats are answered again
	if err := killPID(pid); err != nil {
		t.Fatal(err)
	}
	select {
	case <-a.exited:
	case <-time.After(waitTimeout):
		t.Fatalf("the tracker did not reap the killed child of %s", m0)
	}
	a.mu.Lock()
	ended := terminal(a.state)
	a.mu.Unlock()
	if !ended {
		t.Fatalf("%s not ended after its child was reaped", m0)
	}

	// The commit answer arrives late.
	u := &umbilical{tt: tr.tt}
	ctx := context.WithValue(context.Background(), callerKey{}, m0)
	if _, err := u.CanCommit(ctx, &mrpb.CanCommitRequest{AttemptId: m0}); err != nil {
		t.Fatalf("CanCommit: %v", err)
	}

	tr.jt.setRefuse(nil)
	b, _ := tr.jt.waitBeat(t, from, "reporting the end of "+m0, func(b *mrpb.HeartbeatRequest) bool {
		a := attemptIn(b, m0)
		return a != nil && a.State != "RUNNING" && a.State != "COMMIT_PENDING"
	})
	if st := attemptIn(b, m0); st.State != "FAILED" || st.Diagnostic != "task child signal: killed\n"+blockMarker {
		t.Errorf("%s ended %s (%q), want FAILED by the signal", m0, st.State, st.Diagnostic)
	}
	if b.FreeMapSlots != 1 {
		t.Errorf("the heartbeat reporting the end has %d free map slots, want 1", b.FreeMapSlots)
	}
}
