package tasktracker

import (
	"context"
	"slices"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"gomr/mrpb"
	"gomr/tasktracker/child"
)

// dialUmbilical connects to the tracker's umbilical as a child does,
// without credentials: each call gives its own (see as).
func dialUmbilical(t *testing.T, tr *testTracker) mrpb.UmbilicalClient {
	t.Helper()
	conn, err := grpc.NewClient(tr.tt.umbAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return mrpb.NewUmbilicalClient(conn)
}

// as is the context of an umbilical call made as attempt id with token:
// the metadata a child sends (none when both are empty, only what is
// given otherwise).
func as(id, token string) context.Context {
	md := metadata.MD{}
	if id != "" {
		md.Set(child.AttemptMD, id)
	}
	if token != "" {
		md.Set(child.TokenMD, token)
	}
	return metadata.NewOutgoingContext(context.Background(), md)
}

// token is the umbilical token of attempt id of the tracker.
func (tr *testTracker) token(t *testing.T, id string) string {
	t.Helper()
	tr.tt.mu.Lock()
	defer tr.tt.mu.Unlock()
	a := tr.tt.attempts[id]
	if a == nil {
		t.Fatalf("the tracker has no attempt %s", id)
	}
	return a.token
}

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
	tok0, tok1 := tr.token(t, m0), tr.token(t, m1)
	if tok0 == "" || tok0 == tok1 {
		t.Fatalf("attempt tokens %q and %q: want two different ones", tok0, tok1)
	}

	umb := dialUmbilical(t, tr)
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

// TestUmbilicalConfinedToOwnJob: a child, though rightly authenticated,
// may read the map events and report the fetch failures of its own job
// only. The JobTracker finds a reported map attempt by its id alone, so a
// report forwarded for another job's map would count against that map,
// and enough of them would have it re-run: any job's code could make any
// other job's maps run again.
func TestUmbilicalConfinedToOwnJob(t *testing.T) {
	tr := startTracker(t, trackerOpts{maps: 1, reduces: 1})
	ja, jb := newTestJob(t, wordCountDef, 1), newTestJob(t, wordCountDef, 1)
	// A reduce of job A waits in its shuffle (no map announces anything).
	r0, m0 := ja.attempt("r", 0, 0), ja.attempt("m", 0, 0)
	from := tr.jt.send(ja.launch(t, "r", 0, 0))
	tr.jt.waitBeat(t, from, "reporting "+r0+" RUNNING", inState(r0, "RUNNING"))
	umb := dialUmbilical(t, tr)
	ctx := as(r0, tr.token(t, r0))

	calls := []struct {
		name string
		call func() error
		want codes.Code
	}{
		{"events of its own job", func() error {
			_, err := umb.GetMapEvents(ctx, &mrpb.MapEventsRequest{JobId: ja.id, AttemptId: r0})
			return err
		}, codes.OK},
		{"events of another job", func() error {
			_, err := umb.GetMapEvents(ctx, &mrpb.MapEventsRequest{JobId: jb.id, AttemptId: r0})
			return err
		}, codes.PermissionDenied},
		{"fetch failure of its own job", func() error {
			_, err := umb.ReportFetchFailure(ctx, &mrpb.FetchFailureRequest{JobId: ja.id, ReduceAttemptId: r0, MapAttemptId: m0, Cause: "test"})
			return err
		}, codes.OK},
		{"fetch failure of another job", func() error {
			_, err := umb.ReportFetchFailure(ctx, &mrpb.FetchFailureRequest{JobId: jb.id, ReduceAttemptId: r0,
				MapAttemptId: jb.attempt("m", 0, 0), Cause: "forged"})
			return err
		}, codes.PermissionDenied},
		{"fetch failure of another job's map, named as its own job", func() error {
			_, err := umb.ReportFetchFailure(ctx, &mrpb.FetchFailureRequest{JobId: ja.id, ReduceAttemptId: r0,
				MapAttemptId: jb.attempt("m", 0, 0), Cause: "forged"})
			return err
		}, codes.PermissionDenied},
	}
	for _, c := range calls {
		if err := c.call(); status.Code(err) != c.want {
			t.Errorf("%s: %v, want code %v", c.name, err, c.want)
		}
	}
	got := tr.jt.fetchFailureReports()
	if len(got) != 1 || got[0].JobId != ja.id || got[0].MapAttemptId != m0 {
		t.Errorf("fetch failures the JobTracker got: %v; want only the one of %s's own job", got, r0)
	}
	if jobs := tr.jt.eventRequestJobs(); slices.Contains(jobs, jb.id) {
		t.Errorf("map events of job %s were asked of the JobTracker for a reduce of %s", jb.id, ja.id)
	}
}
