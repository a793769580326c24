package tasktracker

import (
	"context"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"gomr/mrpb"
	"gomr/tasktracker/child"
)

// TestUmbilicalAuthentication calls the umbilical of a tracker that runs
// two attempts as an intruder would: without the per-attempt token, with
// a wrong one, with another attempt's, for an unknown attempt, and for
// another attempt than the token's. Every call is refused, and none
// changes the attempts: they still run, and are killed as ordered rather
// than failed or done by a forged report.
func TestUmbilicalAuthentication(t *testing.T) {
	tr := startTracker(t, trackerOpts{maps: 2, reduces: 1})
	j := newTestJob(t, blockDef, 1)
	m0, m1 := j.attempt("m", 0, 0), j.attempt("m", 0, 1)
	from := tr.jt.send(j.launch(t, "m", 0, 0), j.launch(t, "m", 0, 1))
	tr.jt.waitBeat(t, from, "reporting both maps RUNNING", func(b *mrpb.HeartbeatRequest) bool {
		return inState(m0, "RUNNING")(b) && inState(m1, "RUNNING")(b)
	})
	tr.tt.mu.Lock()
	tok0, tok1 := tr.tt.attempts[m0].token, tr.tt.attempts[m1].token
	tr.tt.mu.Unlock()
	if tok0 == "" || tok0 == tok1 {
		t.Fatalf("attempt tokens %q and %q: want two different ones", tok0, tok1)
	}

	conn, err := grpc.NewClient(tr.tt.umbAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	umb := mrpb.NewUmbilicalClient(conn)
	// as is the metadata of a call made as attempt id with token (none
	// when both are empty, only what is given otherwise).
	as := func(id, token string) context.Context {
		md := metadata.MD{}
		if id != "" {
			md.Set(child.AttemptMD, id)
		}
		if token != "" {
			md.Set(child.TokenMD, token)
		}
		return metadata.NewOutgoingContext(context.Background(), md)
	}
	calls := []struct {
		name string
		call func(ctx context.Context) error
	}{
		{"GetTask", func(ctx context.Context) error {
			_, err := umb.GetTask(ctx, &mrpb.GetTaskRequest{AttemptId: m0})
			return err
		}},
		{"StatusUpdate", func(ctx context.Context) error {
			_, err := umb.StatusUpdate(ctx, &mrpb.StatusUpdateRequest{AttemptId: m0, Progress: 0.5, Phase: "MAP"})
			return err
		}},
		{"SpillReady", func(ctx context.Context) error {
			_, err := umb.SpillReady(ctx, &mrpb.SpillReadyRequest{Spill: &mrpb.SpillAnnouncement{AttemptId: m0, Final: true}})
			return err
		}},
		{"CanCommit", func(ctx context.Context) error {
			_, err := umb.CanCommit(ctx, &mrpb.CanCommitRequest{AttemptId: m0})
			return err
		}},
		{"Done", func(ctx context.Context) error {
			_, err := umb.Done(ctx, &mrpb.DoneRequest{AttemptId: m0})
			return err
		}},
		{"Failed", func(ctx context.Context) error {
			_, err := umb.Failed(ctx, &mrpb.FailedRequest{AttemptId: m0, Error: "forged failure"})
			return err
		}},
	}
	callers := []struct {
		name string
		ctx  context.Context
		want codes.Code
	}{
		{"no metadata", context.Background(), codes.Unauthenticated},
		{"no token", as(m0, ""), codes.Unauthenticated},
		{"token without attempt", as("", tok0), codes.Unauthenticated},
		{"wrong token", as(m0, "0123456789abcdef0123456789abcdef"), codes.Unauthenticated},
		{"another attempt's token", as(m0, tok1), codes.Unauthenticated},
		{"unknown attempt", as(j.attempt("m", 0, 7), tok0), codes.Unauthenticated},
		// Attempt m1, rightly authenticated, acting for m0.
		{"for another attempt", as(m1, tok1), codes.PermissionDenied},
	}
	for _, c := range callers {
		for _, call := range calls {
			err := call.call(c.ctx)
			if c.want == codes.PermissionDenied && call.name == "StatusUpdate" {
				// StatusUpdate answers every call it cannot take for
				// the attempt it names with "not known" (a killed
				// child exits on it), changing nothing.
				continue
			}
			if status.Code(err) != c.want {
				t.Errorf("%s, %s: %v; want code %v", c.name, call.name, err, c.want)
			}
		}
	}
	resp, err := umb.StatusUpdate(as(m1, tok1), &mrpb.StatusUpdateRequest{AttemptId: m0, Progress: 0.5, Phase: "MAP"})
	if err != nil || resp.Known {
		t.Errorf("StatusUpdate for %s as %s: %v, %v; want known=false", m0, m1, resp, err)
	}
	b, _ := tr.jt.waitBeat(t, tr.jt.send()+1, "after the refused calls", inState(m0, "RUNNING"))
	if st := attemptIn(b, m0); st.Progress != 0 || st.Phase != "MAP" || st.Diagnostic != "" {
		t.Errorf("after the refused calls: %s progress %v, phase %q, diagnostic %q; want 0, MAP, none (the blocked map reports no progress)",
			m0, st.Progress, st.Phase, st.Diagnostic)
	}

	// The rightful caller gets its task.
	l, err := umb.GetTask(as(m0, tok0), &mrpb.GetTaskRequest{AttemptId: m0})
	if err != nil || l.AttemptId != m0 || l.JobId != j.id || string(l.JobSecret) != string(j.secret) {
		t.Fatalf("GetTask as %s: %v, %v; want its launch", m0, l, err)
	}

	from = tr.jt.send(killAction(m0), killAction(m1))
	for _, id := range []string{m0, m1} {
		b, _ := tr.jt.waitBeat(t, from, "reporting the end of "+id, func(b *mrpb.HeartbeatRequest) bool {
			a := attemptIn(b, id)
			return a != nil && a.State != "RUNNING"
		})
		if st := attemptIn(b, id); st.State != "KILLED" || st.Diagnostic != "killed by the jobtracker" {
			t.Errorf("%s ended %s (%q); want KILLED by the jobtracker, untouched by the refused calls", id, st.State, st.Diagnostic)
		}
	}
	for _, hb := range tr.jt.beatsFrom(0) {
		if len(hb.Spills) > 0 {
			t.Errorf("a refused SpillReady reached the JobTracker: %v", hb.Spills)
		}
	}
	if got := tr.jt.commitRequests(); len(got) > 0 {
		t.Errorf("a refused CanCommit reached the JobTracker: %v", got)
	}
}
