package jobtracker

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"gomr/conf"
	"gomr/mr"
	"gomr/mrpb"
	"gomr/security"
)

// secureJT is a JobTracker with TLS on whose RPCs the tests call through
// its authorization interceptor, as callers holding certificates of a
// test CA.
type secureJT struct {
	t     *testing.T
	jt    *JobTracker
	dir   string
	certs map[string]*x509.Certificate
}

func newSecureJT(t *testing.T, acls bool) *secureJT {
	t.Helper()
	dir := t.TempDir()
	pki := filepath.Join(dir, "pki")
	if _, err := security.WriteCA(pki, "test CA", time.Hour, false); err != nil {
		t.Fatal(err)
	}
	s := &secureJT{t: t, dir: dir, certs: map[string]*x509.Certificate{}}
	for _, o := range []security.IssueOptions{
		{Role: security.RoleJobTracker, Name: "jt", Hosts: []string{"127.0.0.1"}},
		{Role: security.RoleTaskTracker, Name: "t1", Hosts: []string{"127.0.0.1"}},
		{Role: security.RoleTaskTracker, Name: "t2", Hosts: []string{"127.0.0.1"}},
		{Role: security.RoleUser, Name: "alice"},
		{Role: security.RoleUser, Name: "bob"},
		{Role: security.RoleUser, Name: "carol", Groups: []string{"ops"}},
		{Role: security.RoleUser, Name: "root"},
	} {
		o.Validity = time.Hour
		certPath, _, err := security.IssueFiles(pki, pki, o, false)
		if err != nil {
			t.Fatal(err)
		}
		data, _ := os.ReadFile(certPath)
		block, _ := pem.Decode(data)
		if s.certs[o.Name], err = x509.ParseCertificate(block.Bytes); err != nil {
			t.Fatal(err)
		}
	}
	s.jt, _ = newTestJTWith(t, dir, 0, nil, map[string]string{
		security.KeyTLSEnabled: "true", security.KeyTLSCA: filepath.Join(pki, "ca.pem"),
		security.KeyTLSCert: filepath.Join(pki, "jt.pem"), security.KeyTLSKey: filepath.Join(pki, "jt-key.pem"),
		security.KeyACLsEnabled: map[bool]string{true: "true", false: "false"}[acls], security.KeyAdmins: "root",
	})
	return s
}

// ctx is the context of a call from the holder of name's certificate
// (as the TLS handshake leaves it); "" is a caller without TLS.
func (s *secureJT) ctx(name string) context.Context {
	p := &peer.Peer{Addr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40000}}
	if name != "" {
		p.AuthInfo = credentials.TLSInfo{State: tls.ConnectionState{VerifiedChains: [][]*x509.Certificate{{s.certs[name]}}}}
	}
	return peer.NewContext(context.Background(), p)
}

// call runs an RPC of the JobTracker as name, through the interceptor.
func (s *secureJT) call(name, method string, req any) (any, error) {
	s.t.Helper()
	jt := s.jt
	handlers := map[string]func(context.Context, any) (any, error){
		mrpb.JobTracker_SubmitJob_FullMethodName: func(ctx context.Context, r any) (any, error) {
			return jt.SubmitJob(ctx, r.(*mrpb.SubmitJobRequest))
		},
		mrpb.JobTracker_GetJobStatus_FullMethodName: func(ctx context.Context, r any) (any, error) {
			return jt.GetJobStatus(ctx, r.(*mrpb.JobStatusRequest))
		},
		mrpb.JobTracker_ListJobs_FullMethodName: func(ctx context.Context, r any) (any, error) {
			return jt.ListJobs(ctx, r.(*mrpb.ListJobsRequest))
		},
		mrpb.JobTracker_KillJob_FullMethodName: func(ctx context.Context, r any) (any, error) {
			return jt.KillJob(ctx, r.(*mrpb.KillJobRequest))
		},
		mrpb.JobTracker_GetJobHistory_FullMethodName: func(ctx context.Context, r any) (any, error) {
			return jt.GetJobHistory(ctx, r.(*mrpb.JobHistoryRequest))
		},
		mrpb.JobTracker_ListTrackers_FullMethodName: func(ctx context.Context, r any) (any, error) {
			return jt.ListTrackers(ctx, r.(*mrpb.ListTrackersRequest))
		},
		mrpb.JobTracker_Heartbeat_FullMethodName: func(ctx context.Context, r any) (any, error) {
			return jt.Heartbeat(ctx, r.(*mrpb.HeartbeatRequest))
		},
		mrpb.JobTracker_CanCommit_FullMethodName: func(ctx context.Context, r any) (any, error) {
			return jt.CanCommit(ctx, r.(*mrpb.CanCommitRequest))
		},
		"/gomr.JobTracker/SomethingNew": func(ctx context.Context, r any) (any, error) { return &mrpb.Empty{}, nil },
	}
	h, ok := handlers[method]
	if !ok {
		s.t.Fatalf("no handler for %s", method)
	}
	return jt.authorize(s.ctx(name), req, &grpc.UnaryServerInfo{FullMethod: method}, h)
}

// submit submits a wordcount job as name whose spec claims specUser.
func (s *secureJT) submit(name, specUser string, jobConf map[string]string) string {
	s.t.Helper()
	in := filepath.Join(s.dir, "in.txt")
	os.WriteFile(in, []byte("a b c\n"), 0o644)
	spec, _ := json.Marshal(&mr.JobSpec{Def: "wordcount", User: specUser, Inputs: []string{in},
		Output: filepath.Join(s.dir, "out-"+name+time.Now().Format("150405.000000000")), NumReduces: 1, Conf: jobConf})
	splits, _ := json.Marshal([]mr.Split{{Path: in, Length: 6}})
	resp, err := s.call(name, mrpb.JobTracker_SubmitJob_FullMethodName, &mrpb.SubmitJobRequest{SpecJson: spec, SplitsJson: splits})
	if err != nil {
		s.t.Fatalf("submit as %s: %v", name, err)
	}
	return resp.(*mrpb.SubmitJobResponse).JobId
}

// denied checks that err is PermissionDenied and names every one of want.
func wantDenied(t *testing.T, what string, err error, want ...string) {
	t.Helper()
	if status.Code(err) != codes.PermissionDenied {
		t.Errorf("%s: %v, want PermissionDenied", what, err)
		return
	}
	for _, w := range want {
		if !strings.Contains(status.Convert(err).Message(), w) {
			t.Errorf("%s: refusal %q does not name %q", what, status.Convert(err).Message(), w)
		}
	}
}

func TestACLJobTrackerClientCalls(t *testing.T) {
	s := newSecureJT(t, true)
	// The owner is the certificate's user, whatever the spec says.
	id := s.submit("alice", "mallory", map[string]string{security.KeyJobViewACL: " ops"})
	resp, err := s.call("alice", mrpb.JobTracker_GetJobStatus_FullMethodName, &mrpb.JobStatusRequest{JobId: id})
	if err != nil {
		t.Fatalf("owner's status: %v", err)
	}
	if u := resp.(*mrpb.JobStatus).User; u != "alice" {
		t.Errorf("job owner %q, want alice (from the certificate, not the spec's mallory)", u)
	}

	// View: bob is refused, carol's group is in the view ACL, root is an
	// administrator.
	_, err = s.call("bob", mrpb.JobTracker_GetJobStatus_FullMethodName, &mrpb.JobStatusRequest{JobId: id})
	wantDenied(t, "bob's status", err, "user bob", id, "alice", security.KeyJobViewACL)
	for _, who := range []string{"carol", "root"} {
		if _, err := s.call(who, mrpb.JobTracker_GetJobStatus_FullMethodName, &mrpb.JobStatusRequest{JobId: id}); err != nil {
			t.Errorf("%s's status: %v", who, err)
		}
	}

	// ListJobs shows bob the summary only; alice sees all of it.
	list := func(who string) *mrpb.JobStatus {
		t.Helper()
		r, err := s.call(who, mrpb.JobTracker_ListJobs_FullMethodName, &mrpb.ListJobsRequest{All: true})
		if err != nil {
			t.Fatalf("%s lists: %v", who, err)
		}
		jobs := r.(*mrpb.ListJobsResponse).Jobs
		if len(jobs) != 1 || jobs[0].JobId != id {
			t.Fatalf("%s lists %v, want job %s", who, jobs, id)
		}
		return jobs[0]
	}
	if st := list("bob"); st.Output != "" || st.Counters != nil || st.User != "alice" || st.State != StateRunning || st.Maps.GetTotal() != 1 {
		t.Errorf("bob's list entry: %v; want the summary without output or counters", st)
	}
	if st := list("alice"); st.Output == "" {
		t.Errorf("alice's list entry: %v; want it whole", st)
	}

	// Modify: carol may view but not kill; bob neither; root may.
	for _, who := range []string{"bob", "carol"} {
		_, err = s.call(who, mrpb.JobTracker_KillJob_FullMethodName, &mrpb.KillJobRequest{JobId: id})
		wantDenied(t, who+"'s kill", err, "user "+who, id, security.KeyJobModifyACL)
	}
	kr, err := s.call("root", mrpb.JobTracker_KillJob_FullMethodName, &mrpb.KillJobRequest{JobId: id})
	if err != nil || !kr.(*mrpb.KillJobResponse).Killed {
		t.Fatalf("administrator's kill: %v %v", kr, err)
	}

	// History: the ACLs live on in the history file once the job is no
	// longer in memory.
	s.jt.mu.Lock()
	delete(s.jt.jobs, id)
	s.jt.unlock()
	_, err = s.call("bob", mrpb.JobTracker_GetJobHistory_FullMethodName, &mrpb.JobHistoryRequest{JobId: id})
	wantDenied(t, "bob's history", err, "user bob", id, security.KeyJobViewACL)
	for _, who := range []string{"alice", "carol", "root"} {
		if _, err := s.call(who, mrpb.JobTracker_GetJobHistory_FullMethodName, &mrpb.JobHistoryRequest{JobId: id}); err != nil {
			t.Errorf("%s's history: %v", who, err)
		}
	}

	// Client calls need a user certificate.
	_, err = s.call("t1", mrpb.JobTracker_ListJobs_FullMethodName, &mrpb.ListJobsRequest{})
	wantDenied(t, "tracker listing jobs", err, "tasktracker t1", "ListJobs", "user certificate")
	_, err = s.call("jt", mrpb.JobTracker_ListTrackers_FullMethodName, &mrpb.ListTrackersRequest{})
	wantDenied(t, "jobtracker listing trackers", err, "jobtracker jt", "ListTrackers")
	// A call without TLS, or one nobody classified, is refused.
	if _, err = s.call("", mrpb.JobTracker_ListJobs_FullMethodName, &mrpb.ListJobsRequest{}); status.Code(err) != codes.Unauthenticated {
		t.Errorf("call without TLS: %v, want Unauthenticated", err)
	}
	_, err = s.call("root", "/gomr.JobTracker/SomethingNew", &mrpb.Empty{})
	wantDenied(t, "unclassified call", err, "SomethingNew")
}

func TestACLDisabledLetsUsersModify(t *testing.T) {
	s := newSecureJT(t, false)
	id := s.submit("alice", "", nil)
	if _, err := s.call("bob", mrpb.JobTracker_GetJobStatus_FullMethodName, &mrpb.JobStatusRequest{JobId: id}); err != nil {
		t.Errorf("ACLs off: bob's status: %v", err)
	}
	if _, err := s.call("bob", mrpb.JobTracker_KillJob_FullMethodName, &mrpb.KillJobRequest{JobId: id}); err != nil {
		t.Errorf("ACLs off: bob's kill: %v", err)
	}
	// Roles still hold with ACLs off.
	_, err := s.call("alice", mrpb.JobTracker_Heartbeat_FullMethodName, &mrpb.HeartbeatRequest{Tracker: "t1", InitialContact: true})
	wantDenied(t, "user heartbeat", err, "user alice", "Heartbeat", "tasktracker certificate")
}

func TestSecurityTrackerCalls(t *testing.T) {
	s := newSecureJT(t, true)
	id := s.submit("alice", "", nil)
	hb := func(as, tracker string) (*mrpb.HeartbeatResponse, error) {
		r, err := s.call(as, mrpb.JobTracker_Heartbeat_FullMethodName, &mrpb.HeartbeatRequest{
			Tracker: tracker, Host: "h1", ShuffleAddress: "127.0.0.1:1", MapSlots: 2, ReduceSlots: 1,
			FreeMapSlots: 2, FreeReduceSlots: 1, AcceptNewTasks: true, InitialContact: true, Instance: as})
		if err != nil {
			return nil, err
		}
		return r.(*mrpb.HeartbeatResponse), nil
	}
	// A user certificate cannot pose as a tracker and get launches (with
	// the job's secret).
	_, err := hb("alice", "t1")
	wantDenied(t, "user heartbeat", err, "user alice", "Heartbeat", "tasktracker certificate")
	// A tracker heartbeats under its own name only.
	_, err = hb("t1", "t2")
	wantDenied(t, "t1 heartbeating as t2", err, "tasktracker t1", "tracker t2")
	resp, err := hb("t1", "t1")
	if err != nil {
		t.Fatalf("t1's own heartbeat: %v", err)
	}
	var attempt string
	for _, a := range resp.Actions {
		if l := a.GetLaunch(); l != nil && l.JobId == id {
			attempt = l.AttemptId
		}
	}
	if attempt == "" {
		t.Fatalf("t1 got no launch of job %s: %v", id, resp.Actions)
	}
	// Calls about an attempt are its tracker's.
	_, err = s.call("t2", mrpb.JobTracker_CanCommit_FullMethodName, &mrpb.CanCommitRequest{AttemptId: attempt})
	wantDenied(t, "t2 committing t1's attempt", err, "tasktracker t2", attempt, "tracker t1")
	if _, err := s.call("t1", mrpb.JobTracker_CanCommit_FullMethodName, &mrpb.CanCommitRequest{AttemptId: attempt}); err != nil {
		t.Errorf("t1 committing its attempt: %v", err)
	}
}

func TestACLNeedsTLSAndAJobTrackerCertificate(t *testing.T) {
	dir := t.TempDir()
	cfg, err := conf.Default().With(map[string]string{
		"mapreduce.jobtracker.jobhistory.location": filepath.Join(dir, "history"),
		security.KeyACLsEnabled:                    "true",
	}, "test")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New(cfg, Options{}); err == nil || !strings.Contains(err.Error(), security.KeyTLSEnabled) {
		t.Errorf("ACLs without TLS: New = %v, want an error naming %s", err, security.KeyTLSEnabled)
	}
	pki := filepath.Join(dir, "pki")
	if _, err := security.WriteCA(pki, "test CA", time.Hour, false); err != nil {
		t.Fatal(err)
	}
	if _, _, err := security.IssueFiles(pki, pki, security.IssueOptions{Role: security.RoleUser, Name: "alice", Validity: time.Hour}, false); err != nil {
		t.Fatal(err)
	}
	cfg, err = cfg.With(map[string]string{security.KeyTLSEnabled: "true", security.KeyTLSCA: filepath.Join(pki, "ca.pem"),
		security.KeyTLSCert: filepath.Join(pki, "alice.pem"), security.KeyTLSKey: filepath.Join(pki, "alice-key.pem")}, "test")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New(cfg, Options{}); err == nil || !strings.Contains(err.Error(), "needs a jobtracker certificate") {
		t.Errorf("JobTracker with a user certificate: New = %v", err)
	}
}
