package jobtracker

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"gomr/conf"
	"gomr/jobtracker/jobhistory"
	"gomr/mrpb"
	"gomr/security"
)

// With mapreduce.cluster.tls.enabled the JobTracker's RPC server speaks
// TLS only and requires a client certificate of the cluster CA; each call
// is then authorized by the caller's certificate (docs/security.md):
//
//   - tracker calls (Heartbeat, GetMapEvents, ReportFetchFailure,
//     CanCommit) need a tasktracker certificate, and a tracker acts only
//     under its certificate's name: a heartbeat for another tracker, or a
//     call about an attempt that runs on another tracker, is refused;
//   - client calls (SubmitJob, GetJobStatus, ListJobs, KillJob,
//     GetJobHistory, ListTrackers) need a user certificate; a job's owner
//     is the user who submitted it, whatever its spec says;
//   - with mapreduce.cluster.acls.enabled, job ACLs apply: viewing a job's
//     status or history needs view access, killing it modify access (the
//     owner and mapreduce.cluster.administrators always have both), and
//     ListJobs lists every job but shows only the summary of those the
//     caller may not view (as Hadoop's job list shows every job);
//   - any other call is refused, so that an RPC added later is closed
//     until it is classified here.
//
// Refusals are PermissionDenied naming the caller, the call and what it
// lacks. With TLS off nothing here runs and the service is open, as
// Hadoop's without security.

// auth is the JobTracker's security configuration; nil when TLS is off.
type auth struct {
	tls    *security.TLS
	acls   bool
	admins security.ACL
}

// newAuth reads the security configuration: the JobTracker's certificate
// must carry the jobtracker role, and ACLs need TLS (without it the
// JobTracker does not know who calls).
func newAuth(cfg *conf.Config) (*auth, error) {
	sec, err := security.Load(cfg)
	if err != nil {
		return nil, err
	}
	if sec == nil {
		if cfg.Bool(security.KeyACLsEnabled) {
			return nil, fmt.Errorf("%s needs %s: without TLS the JobTracker does not know who calls", security.KeyACLsEnabled, security.KeyTLSEnabled)
		}
		return nil, nil
	}
	if id := sec.Identity(); id.Role != security.RoleJobTracker {
		return nil, fmt.Errorf("%s %s is the certificate of %s; the JobTracker needs a jobtracker certificate (mr certs issue --role jobtracker)", security.KeyTLSCert, sec.CertPath(), id)
	}
	return &auth{tls: sec, acls: cfg.Bool(security.KeyACLsEnabled), admins: security.ParseACL(cfg.String(security.KeyAdmins))}, nil
}

func (a *auth) describe() string {
	if a == nil {
		return "off"
	}
	return a.tls.Describe()
}

// serverOptions are the options of the JobTracker's gRPC server.
func (jt *JobTracker) serverOptions() []grpc.ServerOption {
	opts := []grpc.ServerOption{grpc.MaxRecvMsgSize(64 << 20), grpc.MaxSendMsgSize(64 << 20),
		grpc.StatsHandler(&rpcTimer{heartbeat: jt.prom.heartbeatServer}), newReplyCodec().serverCodecOption()}
	if jt.auth == nil {
		jt.log.Info("TLS off: the RPC service is open to anyone who can reach it", "tls", jt.auth.describe())
	} else {
		jt.log.Info("TLS on: callers are identified by their certificates", "tls", jt.auth.describe(), "acls", jt.auth.acls)
		opts = append(opts,
			grpc.Creds(credentials.NewTLS(jt.auth.tls.Server())),
			grpc.UnaryInterceptor(jt.authorize),
			grpc.StreamInterceptor(func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
				return status.Errorf(codes.PermissionDenied, "%s: streaming calls are not authorized", info.FullMethod)
			}))
	}
	return opts
}

// callerKey keys the caller's identity in an authorized call's context.
type callerKey struct{}

// submitter is the owner of a job submitted in ctx: with TLS, the caller's
// certificate name (a user cannot submit as another); without, what the
// spec says.
func (jt *JobTracker) submitter(ctx context.Context, specUser string) string {
	if id, ok := ctx.Value(callerKey{}).(security.Identity); ok {
		return id.Name
	}
	return specUser
}

// peerIdentity is the identity of the certificate the caller's TLS
// handshake verified.
func peerIdentity(ctx context.Context) (security.Identity, error) {
	p, ok := peer.FromContext(ctx)
	if !ok {
		return security.Identity{}, fmt.Errorf("no peer")
	}
	info, ok := p.AuthInfo.(credentials.TLSInfo)
	if !ok {
		return security.Identity{}, fmt.Errorf("the connection from %s does not use TLS", p.Addr)
	}
	return security.PeerIdentity(&info.State)
}

func denied(format string, args ...any) error {
	return status.Errorf(codes.PermissionDenied, format, args...)
}

// authorize is the unary interceptor that authorizes every call (see the
// comment at the top of this file).
func (jt *JobTracker) authorize(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	id, err := peerIdentity(ctx)
	if err != nil {
		return nil, status.Errorf(codes.Unauthenticated, "%s: %v", path.Base(info.FullMethod), err)
	}
	ctx = context.WithValue(ctx, callerKey{}, id)
	call := path.Base(info.FullMethod)
	switch info.FullMethod {
	case mrpb.JobTracker_Heartbeat_FullMethodName, mrpb.JobTracker_GetMapEvents_FullMethodName,
		mrpb.JobTracker_ReportFetchFailure_FullMethodName, mrpb.JobTracker_CanCommit_FullMethodName:
		if err := jt.authorizeTracker(id, call, req); err != nil {
			return nil, err
		}
		return handler(ctx, req)
	case mrpb.JobTracker_SubmitJob_FullMethodName, mrpb.JobTracker_ListTrackers_FullMethodName,
		mrpb.JobTracker_GetJobStatus_FullMethodName, mrpb.JobTracker_GetJobHistory_FullMethodName,
		mrpb.JobTracker_KillJob_FullMethodName, mrpb.JobTracker_ListJobs_FullMethodName,
		mrpb.JobTracker_KillTaskAttempt_FullMethodName, mrpb.JobTracker_SetJobPriority_FullMethodName,
		mrpb.JobTracker_ListTaskAttempts_FullMethodName, mrpb.JobTracker_GetTaskLog_FullMethodName,
		mrpb.JobTracker_CheckpointTaskAttempt_FullMethodName, mrpb.JobTracker_SplitTaskAttempt_FullMethodName:
		if id.Role != security.RoleUser {
			return nil, denied("%s may not call %s: client calls need a user certificate", id, call)
		}
	default:
		return nil, denied("%s: not a call this JobTracker authorizes", call)
	}
	switch r := req.(type) {
	case *mrpb.JobStatusRequest:
		err = jt.checkJobAccess(id, r.JobId, security.ViewJob)
	case *mrpb.JobHistoryRequest:
		err = jt.checkJobAccess(id, r.JobId, security.ViewJob)
	case *mrpb.KillJobRequest:
		err = jt.checkJobAccess(id, r.JobId, security.ModifyJob)
	case *mrpb.SetJobPriorityRequest:
		err = jt.checkJobAccess(id, r.JobId, security.ModifyJob)
	case *mrpb.TaskAttemptsRequest:
		err = jt.checkJobAccess(id, r.JobId, security.ViewJob)
	case *mrpb.KillTaskAttemptRequest:
		err = jt.checkJobAccess(id, jobOfAttempt(r.AttemptId), security.ModifyJob)
	case *mrpb.CheckpointTaskAttemptRequest:
		err = jt.checkJobAccess(id, jobOfAttempt(r.AttemptId), security.ModifyJob)
	case *mrpb.SplitTaskAttemptRequest:
		err = jt.checkJobAccess(id, jobOfAttempt(r.AttemptId), security.ModifyJob)
	case *mrpb.TaskLogRequest:
		err = jt.checkJobAccess(id, jobOfAttempt(r.AttemptId), security.ViewJob)
	}
	if err != nil {
		return nil, err
	}
	resp, err := handler(ctx, req)
	if list, ok := resp.(*mrpb.ListJobsResponse); ok && err == nil {
		jt.redactJobList(id, list)
	}
	return resp, err
}

// authorizeTracker lets tracker calls through from tasktracker
// certificates only, and only for the certificate's own tracker: its own
// heartbeat, and calls about attempts running on it.
func (jt *JobTracker) authorizeTracker(id security.Identity, call string, req any) error {
	if id.Role != security.RoleTaskTracker {
		return denied("%s may not call %s: tracker calls need a tasktracker certificate", id, call)
	}
	var attempt string
	switch r := req.(type) {
	case *mrpb.HeartbeatRequest:
		if r.Tracker != id.Name {
			return denied("%s may not heartbeat as tracker %s: a tracker's name is the name in its certificate", id, r.Tracker)
		}
		return nil
	case *mrpb.MapEventsRequest:
		attempt = r.AttemptId
	case *mrpb.FetchFailureRequest:
		attempt = r.ReduceAttemptId
	case *mrpb.CanCommitRequest:
		attempt = r.AttemptId
	}
	if tracker, ok := jt.attemptTracker(attempt); ok && tracker != id.Name {
		return denied("%s may not call %s for attempt %s: it runs on tracker %s", id, call, attempt, tracker)
	}
	return nil
}

// attemptTracker is the tracker an attempt the JobTracker knows runs (or
// ran) on.
func (jt *JobTracker) attemptTracker(attemptID string) (string, bool) {
	if attemptID == "" {
		return "", false
	}
	jt.lock(holderClient)
	defer jt.unlock()
	_, a := jt.findAttempt(attemptID)
	if a == nil {
		return "", false
	}
	return a.tracker, true
}

// checkJobAccess applies the job's ACL for op when ACLs are enabled. An
// unknown job passes: the call itself answers NotFound.
func (jt *JobTracker) checkJobAccess(id security.Identity, jobID string, op security.JobOp) error {
	if !jt.auth.acls {
		return nil
	}
	owner, acl, ok := jt.jobACL(jobID, op)
	if !ok {
		return nil
	}
	if err := security.CheckJobAccess(id, op, jobID, owner, jt.auth.admins, acl); err != nil {
		return status.Error(codes.PermissionDenied, err.Error())
	}
	return nil
}

// jobACL is a job's owner and its ACL for op: from the job in memory, or
// the summary of a retired one (retire.go), or else from its history file.
func (jt *JobTracker) jobACL(jobID string, op security.JobOp) (owner string, acl security.ACL, ok bool) {
	jt.lock(holderClient)
	j := jt.jobs[jobID]
	if j != nil {
		owner = j.spec.User
		if j.conf != nil {
			acl = security.ParseACL(j.conf.String(op.Key))
		}
	}
	retired := jt.retire.byID[jobID]
	jt.unlock()
	if j != nil {
		return owner, acl, true
	}
	if retired != nil {
		text := retired.viewACL
		if op == security.ModifyJob {
			text = retired.modifyACL
		}
		return retired.user, security.ParseACL(text), true
	}
	data, err := jt.history.Read(jobID)
	if err != nil {
		return "", security.ACL{}, false
	}
	first, _, _ := bytes.Cut(data, []byte("\n"))
	var rec jobhistory.Job
	if err := json.Unmarshal(first, &rec); err != nil {
		// Unreadable: nobody but the administrators.
		return "", security.ACL{}, true
	}
	text := rec.ViewACL
	if op == security.ModifyJob {
		text = rec.ModifyACL
	}
	return rec.User, security.ParseACL(text), true
}

// redactJobList reduces the entries of the jobs id may not view to what
// Hadoop shows every user of every job: id, name, owner, pool, state,
// times, progress and task counts; not its counters, error, output path,
// scheduling details, speculations or blacklist.
func (jt *JobTracker) redactJobList(id security.Identity, list *mrpb.ListJobsResponse) {
	if !jt.auth.acls {
		return
	}
	for i, st := range list.Jobs {
		owner, acl, ok := jt.jobACL(st.JobId, security.ViewJob)
		if ok && security.CheckJobAccess(id, security.ViewJob, st.JobId, owner, jt.auth.admins, acl) == nil {
			continue
		}
		list.Jobs[i] = &mrpb.JobStatus{
			JobId: st.JobId, Name: st.Name, State: st.State, User: st.User, Pool: st.Pool,
			SubmitMs: st.SubmitMs, StartMs: st.StartMs, FinishMs: st.FinishMs,
			MapProgress: st.MapProgress, ReduceProgress: st.ReduceProgress, Maps: st.Maps, Reduces: st.Reduces,
		}
	}
}

// jobOfAttempt is the job id an attempt id names, or "".
func jobOfAttempt(id string) string {
	job, _ := mrpb.JobOfAttempt(id)
	return job
}
