package jobtracker

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"gomr/jobtracker/jobhistory"
	"gomr/mrpb"
	"gomr/security"
)

// maxTaskLog is the most of one log the JobTracker passes on: the last
// maxTaskLog bytes, after a line that says what was left out.
const maxTaskLog = 16 << 20

// GetTaskLog fetches one log (stdout or stderr) of an attempt from the
// tracker that ran it, which keeps it for mapreduce.job.userlog.retain.hours
// after the job (tasktracker/userlogs.go). The attempt is found in the
// job's memory, or in its history once it is retired; the caller needs the
// job's view access (acl.go).
func (jt *JobTracker) GetTaskLog(ctx context.Context, req *mrpb.TaskLogRequest) (*mrpb.TaskLogResponse, error) {
	filter := req.Filter
	if filter == "" {
		filter = "stderr"
	}
	if filter != "stdout" && filter != "stderr" {
		return nil, status.Errorf(codes.InvalidArgument, "log %q: want stdout or stderr", req.Filter)
	}
	tracker, err := jt.attemptTrackerForLog(req.AttemptId)
	if err != nil {
		return nil, err
	}
	jt.lock(holderClient)
	tr := jt.trackers[tracker]
	addr := ""
	if tr != nil {
		addr = tr.shuffleAddr
	}
	jt.unlock()
	if addr == "" {
		return nil, status.Errorf(codes.Unavailable, "attempt %s ran on tracker %s, which is not live: its logs are on that machine (%s)",
			req.AttemptId, tracker, "userlogs under its mapreduce.cluster.local.dir")
	}
	data, err := jt.fetchTaskLog(ctx, addr, req.AttemptId, filter)
	if err != nil {
		return nil, err
	}
	return &mrpb.TaskLogResponse{Data: data, Tracker: tracker}, nil
}

// attemptTrackerForLog is the tracker an attempt ran on, from memory or
// from its job's history.
func (jt *JobTracker) attemptTrackerForLog(attemptID string) (string, error) {
	job := jobOfAttempt(attemptID)
	if job == "" {
		return "", status.Errorf(codes.InvalidArgument, "%q is not a task attempt id (attempt_<jobtracker>_<job>_<m|r>_<task>_<n>)", attemptID)
	}
	jt.lock(holderClient)
	_, a := jt.findAttempt(attemptID)
	tracker := ""
	if a != nil {
		tracker = a.tracker
	}
	jt.unlock()
	if tracker != "" {
		return tracker, nil
	}
	data, err := jt.history.Read(job)
	if err != nil {
		return "", status.Errorf(codes.NotFound, "no task attempt %s: its job is neither running nor in the history", attemptID)
	}
	rec, err := jobhistory.Parse(data)
	if err != nil {
		return "", status.Errorf(codes.Internal, "history of %s: %v", job, err)
	}
	for _, ha := range rec.Attempts {
		if ha.AttemptID == attemptID {
			return ha.Tracker, nil
		}
	}
	return "", status.Errorf(codes.NotFound, "job %s has no task attempt %s", job, attemptID)
}

// fetchTaskLog reads a log from a tracker's HTTP server, over TLS with the
// JobTracker's certificate when the cluster uses TLS.
func (jt *JobTracker) fetchTaskLog(ctx context.Context, addr, attemptID, filter string) ([]byte, error) {
	rt, err := security.ClusterTransport(jt.cfg, nil)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "task log transport: %v", err)
	}
	client := &http.Client{Transport: rt, Timeout: 30 * time.Second}
	u := "http://" + addr + mrpb.TaskLogPath + "?" + url.Values{"attemptid": {attemptID}, "filter": {filter}}.Encode()
	hreq, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "task log request: %v", err)
	}
	resp, err := client.Do(hreq)
	if err != nil {
		return nil, status.Errorf(codes.Unavailable, "fetching %s of %s from %s: %v", filter, attemptID, addr, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		code := codes.Unavailable
		if resp.StatusCode == http.StatusNotFound {
			code = codes.NotFound
		}
		return nil, status.Errorf(code, "tracker at %s: %s", addr, string(msg))
	}
	// Keep the tail: a long log's end is what explains a failure.
	var buf tailBuffer
	buf.max = maxTaskLog
	if _, err := io.Copy(&buf, resp.Body); err != nil {
		return nil, status.Errorf(codes.Unavailable, "reading %s of %s from %s: %v", filter, attemptID, addr, err)
	}
	return buf.bytes(), nil
}

// tailBuffer keeps the last max bytes written to it, and how many it
// dropped.
type tailBuffer struct {
	max     int
	data    []byte
	dropped int64
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.data = append(t.data, p...)
	if over := len(t.data) - t.max; over > 0 {
		t.dropped += int64(over)
		t.data = append(t.data[:0], t.data[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) bytes() []byte {
	if t.dropped == 0 {
		return t.data
	}
	return append([]byte(fmt.Sprintf("[%d bytes left out; the last %d follow]\n", t.dropped, len(t.data))), t.data...)
}
