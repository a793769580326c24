package jobtracker

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

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
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(jt.serverOptions()...)
	mrpb.RegisterJobTrackerServer(srv, jt)
	go srv.Serve(l)
	defer srv.Stop()
	cc, err := grpc.NewClient(l.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	client := mrpb.NewJobTrackerClient(cc)
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
	jt.log = slog.New(slog.NewTextHandler(&buf, nil))
	jt.lock(holderHeartbeat)
	jt.batchSize = 7
	jt.lockedAt = jt.lockedAt.Add(-2 * longHold)
	jt.unlock()
	jt.lock(holderSpeculator)
	jt.unlock()
	got := buf.String()
	if !strings.Contains(got, "long hold of the JobTracker's lock") || !strings.Contains(got, "holder=heartbeat") ||
		!strings.Contains(got, "heartbeats=7") {
		t.Errorf("log of a long heartbeat hold: %q", got)
	}
	if strings.Contains(got, "speculator") {
		t.Errorf("a short hold was logged: %q", got)
	}
}

// lockCheckingWriter records each log line written while the
// JobTracker's lock is held (a write can block: it must not hold the lock).
type lockCheckingWriter struct {
	jt      *JobTracker
	mu      sync.Mutex
	lines   []string
	underMu []string
}

func (w *lockCheckingWriter) Write(p []byte) (int, error) {
	free := w.jt.mu.TryLock()
	if free {
		w.jt.mu.Unlock()
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.lines = append(w.lines, string(p))
	if !free {
		w.underMu = append(w.underMu, string(p))
	}
	return len(p), nil
}

// TestHeartbeatLogsAreOffTheLock: a tracker's registration and a long
// hold of the lock are logged once the lock is released.
func TestHeartbeatLogsAreOffTheLock(t *testing.T) {
	jt, _ := newTestJT(t, 1)
	w := &lockCheckingWriter{jt: jt}
	jt.log = slog.New(slog.NewTextHandler(w, nil))
	heartbeat(t, jt, &mrpb.HeartbeatRequest{Tracker: "t9", InitialContact: true, FreeMapSlots: 1})
	jt.lock(holderHeartbeat)
	jt.lockedAt = jt.lockedAt.Add(-2 * longHold)
	jt.unlock()
	jt.waitBackground()
	w.mu.Lock()
	defer w.mu.Unlock()
	all := strings.Join(w.lines, "")
	for _, msg := range []string{"tracker joined", "long hold of the JobTracker's lock"} {
		if !strings.Contains(all, msg) {
			t.Errorf("no %q line in the log: %q", msg, all)
		}
	}
	if len(w.underMu) > 0 {
		t.Errorf("lines logged under the JobTracker's lock: %q", w.underMu)
	}
}
