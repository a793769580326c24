package jobtracker

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"gomr/internal/promexport"
	"gomr/mrpb"
)

// TestServerTimeAndLockHolders serves a JobTracker's gRPC service with its
// own server options, sends heartbeats and other calls through a client,
// and checks that the server-side heartbeat histogram counted the
// heartbeats and nothing else, and that the lock's holds are counted under
// their holders.
func TestServerTimeAndLockHolders(t *testing.T) {
	jt, _ := newHTTPTestJT(t, nil)
	client := serveGRPC(t, jt)
	ctx := context.Background()

	req := &mrpb.HeartbeatRequest{Tracker: "tt1", Host: "h1", MapSlots: 2, ReduceSlots: 1,
		FreeMapSlots: 2, FreeReduceSlots: 1, InitialContact: true, AcceptNewTasks: true}
	asTracker(jt, req)
	const beats = 3
	for i := range beats {
		resp, err := client.Heartbeat(ctx, req)
		if err != nil {
			t.Fatalf("heartbeat %d: %v", i, err)
		}
		if i == 0 {
			req.InitialContact, req.Incarnation = false, resp.Incarnation
		}
		req.ResponseId = resp.ResponseId
	}
	if _, err := client.ListJobs(ctx, &mrpb.ListJobsRequest{}); err != nil {
		t.Fatalf("ListJobs: %v", err)
	}
	if _, err := client.GetJobStatus(ctx, &mrpb.JobStatusRequest{JobId: "job_none"}); err == nil {
		t.Fatal("GetJobStatus of an unknown job: no error")
	}

	// The server observes a call's end (stats.End) after its reply is
	// on the wire, so the client may see the last reply first: wait for
	// the count to come in, then check it is the heartbeats' only.
	var fams map[string]*dto.MetricFamily
	var got float64
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		fams = scrapeMetrics(t, httpGet(t, jt.HTTPHandler(), "GET", "/metrics").Body.String())
		if got = promexport.Samples(fams["gomr_heartbeat_server_seconds"])[""]; got >= beats || time.Now().After(deadline) {
			break
		}
	}
	if got != beats {
		t.Errorf("gomr_heartbeat_server_seconds counted %v calls, want the %d heartbeats only", got, beats)
	}
	holds := promexport.Samples(fams["gomr_jobtracker_lock_held_seconds"])
	for _, h := range []string{"heartbeat", "client_list", "client_status"} {
		if holds["holder="+h] < 1 {
			t.Errorf("no hold of the lock counted for %s: %v", h, holds)
		}
	}
	if len(holds) != int(numLockHolders) {
		t.Errorf("%d holders exported, want every one (%d), counted or not: %v", len(holds), numLockHolders, holds)
	}
}

// TestLongHoldIsLogged checks that a hold of the lock of longHold or more
// is logged with its holder and, for heartbeats, the batch's size, and a
// short one is not.
func TestLongHoldIsLogged(t *testing.T) {
	jt, _ := newHTTPTestJT(t, nil)
	var buf bytes.Buffer
	jt.log, jt.logq = newQueuedLog(slog.NewTextHandler(&buf, nil))
	jt.lock(holderHeartbeat)
	jt.batchSize = 7
	jt.lockedAt = jt.lockedAt.Add(-2 * longHold)
	jt.unlock()
	jt.lock(holderSpeculator)
	jt.unlock()
	jt.logq.flush(logFlushTimeout)
	got := buf.String()
	if !strings.Contains(got, "long hold of the JobTracker's lock") || !strings.Contains(got, "holder=heartbeat") ||
		!strings.Contains(got, "heartbeats=7") {
		t.Errorf("log of a long heartbeat hold: %q", got)
	}
	if strings.Contains(got, "speculator") {
		t.Errorf("a short hold was logged: %q", got)
	}
}
