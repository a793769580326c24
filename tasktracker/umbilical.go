package tasktracker

import (
	"context"
	"crypto/subtle"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"gomr/mrpb"
	"gomr/tasktracker/child"
)

// umbilical is the service task children call on their tracker.
type umbilical struct {
	mrpb.UnimplementedUmbilicalServer
	tt *TaskTracker
}

// attempt returns attempt id, which must be the one the call authenticated
// as (see authenticate).
func (u *umbilical) attempt(ctx context.Context, id string) (*taskAttempt, error) {
	if who, _ := ctx.Value(callerKey{}).(string); who != id {
		return nil, status.Errorf(codes.PermissionDenied, "umbilical: attempt %s may not act for attempt %s", who, id)
	}
	u.tt.mu.Lock()
	defer u.tt.mu.Unlock()
	a, ok := u.tt.attempts[id]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "unknown attempt %s", id)
	}
	return a, nil
}

// callerKey is the context key of the attempt a call authenticated as.
type callerKey struct{}

// authenticate is the umbilical's interceptor: a call must name an attempt
// of this tracker and carry its token (child.AttemptMD, child.TokenMD).
func (u *umbilical) authenticate(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	first := func(k string) string {
		if v := md.Get(k); len(v) > 0 {
			return v[0]
		}
		return ""
	}
	id, token := first(child.AttemptMD), first(child.TokenMD)
	u.tt.mu.Lock()
	a := u.tt.attempts[id]
	u.tt.mu.Unlock()
	if a == nil || token == "" || subtle.ConstantTimeCompare([]byte(token), []byte(a.token)) != 1 {
		u.tt.log.Warn("umbilical call refused: no attempt token, or a wrong one", "method", info.FullMethod, "attempt", id)
		return nil, status.Errorf(codes.Unauthenticated, "umbilical: %s needs the token of a running attempt of this tracker", info.FullMethod)
	}
	return handler(context.WithValue(ctx, callerKey{}, id), req)
}

// GetTask gives a child its task.
func (u *umbilical) GetTask(ctx context.Context, req *mrpb.GetTaskRequest) (*mrpb.LaunchTask, error) {
	a, err := u.attempt(ctx, req.AttemptId)
	if err != nil {
		return nil, err
	}
	return a.launch, nil
}

// StatusUpdate records progress; it tells a killed attempt to stop.
func (u *umbilical) StatusUpdate(ctx context.Context, req *mrpb.StatusUpdateRequest) (*mrpb.StatusUpdateResponse, error) {
	a, err := u.attempt(ctx, req.AttemptId)
	if err != nil {
		return &mrpb.StatusUpdateResponse{Known: false}, nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.killReason != "" || a.failReported != "" {
		return &mrpb.StatusUpdateResponse{Known: false}, nil
	}
	now := time.Now()
	if req.Progress != a.progress || req.Phase != a.phase || !sameCounters(req.Counters, a.counters) {
		a.lastProgress = now
	}
	if req.Phase != a.phase {
		switch {
		case a.phase == "SHUFFLE":
			a.shuffleDone = now
			if req.Phase == "REDUCE" {
				a.sortDone = now
			}
		case a.phase == "SORT":
			a.sortDone = now
		}
	}
	a.progress, a.phase, a.counters = req.Progress, req.Phase, req.Counters
	a.childCloneable = req.Cloneable
	return &mrpb.StatusUpdateResponse{Known: true, Split: a.splitOrdered, SplitFanout: int32(a.splitFanout)}, nil
}

func sameCounters(x, y []*mrpb.Counter) bool {
	return slices.EqualFunc(x, y, func(a, b *mrpb.Counter) bool {
		return a.Group == b.Group && a.Name == b.Name && a.Value == b.Value
	})
}

// SpillReady queues a spill announcement for the next heartbeat.
func (u *umbilical) SpillReady(ctx context.Context, req *mrpb.SpillReadyRequest) (*mrpb.Empty, error) {
	a, err := u.attempt(ctx, req.Spill.GetAttemptId())
	if err != nil {
		return nil, err
	}
	a.mu.Lock()
	a.lastProgress = time.Now()
	a.mu.Unlock()
	u.tt.mu.Lock()
	u.tt.spills = append(u.tt.spills, req.Spill)
	u.tt.mu.Unlock()
	u.tt.prom.spills.Inc()
	u.tt.poke()
	return &mrpb.Empty{}, nil
}

// GetMapEvents forwards a reduce's request for the spill events of its
// job.
func (u *umbilical) GetMapEvents(ctx context.Context, req *mrpb.MapEventsRequest) (*mrpb.MapEventsResponse, error) {
	a, err := u.attempt(ctx, req.AttemptId)
	if err != nil {
		return nil, err
	}
	if err := reduceOf(a, req.JobId); err != nil {
		return nil, err
	}
	return u.tt.jt.GetMapEvents(ctx, req)
}

// ReportFetchFailure forwards a reduce's failure to fetch the output of a
// map of its job. The JobTracker finds the map attempt by its id alone:
// a report about another job's map would count against it.
func (u *umbilical) ReportFetchFailure(ctx context.Context, req *mrpb.FetchFailureRequest) (*mrpb.Empty, error) {
	a, err := u.attempt(ctx, req.ReduceAttemptId)
	if err != nil {
		return nil, err
	}
	if err := reduceOf(a, req.JobId); err != nil {
		return nil, err
	}
	if job, ok := mapAttemptJob(req.MapAttemptId); !ok || job != req.JobId {
		return nil, status.Errorf(codes.PermissionDenied, "umbilical: attempt %s may not report fetch failures of %s, not a map of its job %s",
			req.ReduceAttemptId, req.MapAttemptId, req.JobId)
	}
	return u.tt.jt.ReportFetchFailure(ctx, req)
}

// reduceOf refuses a call about job jobID unless attempt a is a reduce of
// that job: a child's code may only follow its own job's map output.
func reduceOf(a *taskAttempt, jobID string) error {
	if a.launch.Type != "r" || a.launch.JobId != jobID {
		return status.Errorf(codes.PermissionDenied, "umbilical: attempt %s is not a reduce of job %s", a.launch.AttemptId, jobID)
	}
	return nil
}

// mapAttemptJob is the job of a map attempt id, as the JobTracker names
// them (attempt_<ident>_<n>_m_<task>_<k> is of job_<ident>_<n>); false
// for anything else.
func mapAttemptJob(id string) (string, bool) {
	parts := strings.Split(id, "_")
	if len(parts) != 6 || parts[0] != "attempt" || parts[3] != "m" {
		return "", false
	}
	return "job_" + parts[1] + "_" + parts[2], true
}

// CanCommit forwards a commit request to the JobTracker.
func (u *umbilical) CanCommit(ctx context.Context, req *mrpb.CanCommitRequest) (*mrpb.CanCommitResponse, error) {
	a, err := u.attempt(ctx, req.AttemptId)
	if err != nil {
		return nil, err
	}
	resp, err := u.tt.jt.CanCommit(ctx, req)
	if err != nil {
		return nil, err
	}
	a.mu.Lock()
	// The child may have ended while the JobTracker answered (killed as
	// a speculative attempt that lost, say): its final state stands.
	if a.state == "RUNNING" {
		a.state = "COMMIT_PENDING"
	}
	a.lastProgress = time.Now()
	a.mu.Unlock()
	return resp, nil
}

// Done records that the child finished its work.
func (u *umbilical) Done(ctx context.Context, req *mrpb.DoneRequest) (*mrpb.Empty, error) {
	a, err := u.attempt(ctx, req.AttemptId)
	if err != nil {
		return nil, err
	}
	a.mu.Lock()
	a.doneReported = true
	a.splitReported = req.Split && a.splitOrdered
	if a.splitReported {
		a.reduceCut = req.ReduceCut
	}
	a.counters = req.Counters
	a.progress = 1
	a.mu.Unlock()
	return &mrpb.Empty{}, nil
}

// Failed records the child's own error report.
func (u *umbilical) Failed(ctx context.Context, req *mrpb.FailedRequest) (*mrpb.Empty, error) {
	a, err := u.attempt(ctx, req.AttemptId)
	if err != nil {
		return nil, err
	}
	a.mu.Lock()
	if a.failReported == "" {
		a.failReported, a.failNotOwn = req.Error, req.Killed
	}
	if len(req.Counters) > 0 {
		a.counters = req.Counters
	}
	a.mu.Unlock()
	return &mrpb.Empty{}, nil
}

// Quiet is a child's report that it reached the quiet point its tracker
// asked for: the tracker dumps it now.
func (u *umbilical) Quiet(ctx context.Context, req *mrpb.QuietRequest) (*mrpb.Empty, error) {
	a, err := u.attempt(ctx, req.AttemptId)
	if err != nil {
		return nil, err
	}
	a.mu.Lock()
	ch := a.quiet
	if req.Refused == "" {
		a.progress = req.Progress
	}
	a.mu.Unlock()
	if ch == nil {
		return nil, status.Errorf(codes.FailedPrecondition, "attempt %s was not asked to quiesce", req.AttemptId)
	}
	select {
	case ch <- quietReport{progress: req.Progress, refused: req.Refused}:
	default:
	}
	return &mrpb.Empty{}, nil
}

// quietReport is a child's answer to a quiesce request.
type quietReport struct {
	progress float32
	refused  string
}
