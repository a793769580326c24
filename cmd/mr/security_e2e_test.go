package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"gomr/conf"
	"gomr/jobtracker"
	"gomr/mr"
	"gomr/mrpb"
	"gomr/security"
	"gomr/tasktracker"
)

// pki is a cluster CA and certificates made with mr certs.
type pki struct {
	t   *testing.T
	dir string
}

func (p pki) ca() string { return filepath.Join(p.dir, "ca.pem") }

// defines are the -D defines that make a process use name's certificate.
func (p pki) defines(name string) []string {
	return []string{
		"mapreduce.cluster.tls.enabled=true",
		"mapreduce.cluster.tls.ca=" + p.ca(),
		"mapreduce.cluster.tls.cert=" + filepath.Join(p.dir, name+".pem"),
		"mapreduce.cluster.tls.key=" + filepath.Join(p.dir, name+"-key.pem"),
	}
}

// args are defines as mr command-line arguments.
func args(defines []string) []string {
	var out []string
	for _, d := range defines {
		out = append(out, "-D", d)
	}
	return out
}

// client is a Go client of the cluster holding name's certificate.
func (p pki) client(c *cluster, name string) *jobtracker.Client {
	p.t.Helper()
	m := c.overrides()
	for _, d := range p.defines(name) {
		k, v, _ := conf.ParseDefine(d)
		m[k] = v
	}
	cfg, err := conf.Load(conf.LoadOptions{Overrides: m})
	if err != nil {
		p.t.Fatal(err)
	}
	cl, err := jobtracker.Dial(c.jtAddr, cfg)
	if err != nil {
		p.t.Fatal(err)
	}
	p.t.Cleanup(func() { cl.Close() })
	return cl
}

// transport is an HTTP transport holding name's certificate.
func (p pki) transport(name string) http.RoundTripper {
	p.t.Helper()
	cfg, err := conf.FromMap(map[string]string{})
	if err == nil {
		m := map[string]string{}
		for _, d := range p.defines(name) {
			k, v, _ := conf.ParseDefine(d)
			m[k] = v
		}
		cfg, err = cfg.With(m, "test")
	}
	if err != nil {
		p.t.Fatal(err)
	}
	rt, err := security.ClusterTransport(cfg, &http.Transport{})
	if err != nil {
		p.t.Fatal(err)
	}
	return rt
}

// newPKI makes, with mr certs, a CA and the certificates of a JobTracker
// "jt", of trackers and of users ("name" or "name:group,group").
func newPKI(t *testing.T, trackers []string, users ...string) pki {
	t.Helper()
	p := pki{t: t, dir: t.TempDir()}
	certs := func(a ...string) {
		t.Helper()
		if out, err := runMR(t, a...); err != nil {
			t.Fatalf("mr %v: %v\n%s", a, err, out)
		}
	}
	certs("certs", "ca", "--out", p.dir)
	certs("certs", "issue", "--ca", p.dir, "--role", "jobtracker", "--name", "jt", "--hosts", "localhost,127.0.0.1")
	for _, tr := range trackers {
		certs("certs", "issue", "--ca", p.dir, "--role", "tasktracker", "--name", tr, "--hosts", "localhost,127.0.0.1")
	}
	for _, u := range users {
		name, groups, _ := strings.Cut(u, ":")
		certs("certs", "issue", "--ca", p.dir, "--role", "user", "--name", name, "--groups", groups)
	}
	return p
}

func wantPermissionDenied(t *testing.T, what string, err error, want ...string) {
	t.Helper()
	if status.Code(err) != codes.PermissionDenied {
		t.Errorf("%s: %v, want PermissionDenied", what, err)
		return
	}
	for _, w := range want {
		if !strings.Contains(status.Convert(err).Message(), w) {
			t.Errorf("%s: %q does not name %q", what, status.Convert(err).Message(), w)
		}
	}
}

// TestE2ESecurityTLSAndACLs runs a cluster with mutual TLS and job ACLs,
// with certificates made by mr certs: a job runs as its certificate's
// user, callers without a certificate, users posing as trackers and
// trackers posing as each other are refused, job ACLs hold, and the
// shuffle servers speak HTTPS to tracker certificates only.
func TestE2ESecurityTLSAndACLs(t *testing.T) {
	p := newPKI(t, []string{"t1", "t2"}, "alice", "bob", "root", "carol:auditors")
	mrOK := func(a ...string) string {
		t.Helper()
		out, err := runMR(t, a...)
		if err != nil {
			t.Fatalf("mr %v: %v\n%s", a, err, out)
		}
		return out
	}

	// The harness's own client is root, an administrator.
	// t1 runs the maps, t2 the reduces: every fetch crosses trackers.
	c := startClusterProcDefines(t, []trackerSpec{{"t1", 2, 0}, {"t2", 0, 2}},
		map[string][]string{"jobtracker": p.defines("jt"), "t1": p.defines("t1"), "t2": p.defines("t2")},
		append(p.defines("root"),
			"mapreduce.cluster.acls.enabled=true",
			"mapreduce.cluster.administrators=root",
			"mapreduce.reduce.shuffle.retry.delay.ms=20")...)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// A word count as alice, with mr submit: the reduces on t2 fetch every
	// map's output from t1 over HTTPS, with t2's certificate.
	in := t.TempDir()
	genText(t, filepath.Join(in, "a.txt"), 3<<20, 11)
	out := filepath.Join(t.TempDir(), "out")
	text := mrOK(append(append([]string{"submit", "--jobtracker", c.jtAddr}, args(p.defines("alice"))...),
		"-D", "mapreduce.input.fileinputformat.split.maxsize=800000", "-D", "mapreduce.job.reduces=2",
		"wordcount", in, out)...)
	if !strings.Contains(text, "completed successfully") {
		t.Fatalf("mr submit wordcount as alice:\n%s", text)
	}
	checkWordCount(t, out, countWords(t, in))
	jobs, err := c.client.List(ctx, true)
	if err != nil || len(jobs) != 1 || jobs[0].User != "alice" {
		t.Fatalf("jobs after alice's word count: %v %v; want one of user alice", jobs, err)
	}
	wc := jobs[0].JobId
	rec := c.history(wc)
	for _, a := range rec.Attempts {
		if want := map[string]string{"m": "t1", "r": "t2"}[a.TaskType]; a.Tracker != want || a.State != jobtracker.StateSucceeded {
			t.Errorf("attempt %s: %s on %s, want SUCCEEDED on %s", a.AttemptID, a.State, a.Tracker, want)
		}
	}

	// (a) No certificate, no entry: a plain client, and a TLS client
	// without a certificate.
	text, err = runMR(t, "job", "--jobtracker", c.jtAddr, "-list")
	if err == nil || !strings.Contains(text, "mapreduce.cluster.tls.enabled") {
		t.Errorf("plain client: err %v, output %q; want a refusal pointing at mapreduce.cluster.tls.enabled", err, text)
	}
	pool := x509.NewCertPool()
	caPEM, _ := os.ReadFile(p.ca())
	pool.AppendCertsFromPEM(caPEM)
	conn, err := grpc.NewClient(c.jtAddr, mrpb.DialOptions(&tls.Config{RootCAs: pool})...)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// (The server's alert, "certificate required", may or may not arrive
	// before the client's first write fails on the closed connection.)
	_, err = mrpb.NewJobTrackerClient(conn).SubmitJob(ctx, &mrpb.SubmitJobRequest{SpecJson: []byte(`{"def":"sleep"}`)})
	if status.Code(err) != codes.Unavailable {
		t.Errorf("TLS client without a certificate: %v; want the connection refused (Unavailable)", err)
	}
	if jobs, err := c.client.List(ctx, true); err != nil || len(jobs) != 1 {
		t.Errorf("jobs after the refused submissions: %v %v; want alice's word count only", jobs, err)
	}

	get := func(rt http.RoundTripper, url string) (int, string, error) {
		resp, err := (&http.Client{Transport: rt, Timeout: 10 * time.Second}).Get(url)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), nil
	}

	// (b) Job ACLs. alice runs a long job that carol's group may view.
	alice, bob, carol := p.client(c, "alice"), p.client(c, "bob"), p.client(c, "carol")
	spec := sleepSpec("alice-sleeps", filepath.Join(t.TempDir(), "sleep-out"), 1, 60000)
	spec.Conf = map[string]string{"mapreduce.job.acl-view-job": " auditors"}
	id, err := alice.Submit(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	_, err = bob.RPC().GetJobStatus(ctx, &mrpb.JobStatusRequest{JobId: id})
	wantPermissionDenied(t, "bob's status of alice's job", err, "user bob", id, "mapreduce.job.acl-view-job")
	_, err = bob.RPC().KillJob(ctx, &mrpb.KillJobRequest{JobId: id})
	wantPermissionDenied(t, "bob's kill of alice's job", err, "user bob", id, "mapreduce.job.acl-modify-job")
	text, err = runMR(t, append(append([]string{"job", "--jobtracker", c.jtAddr}, args(p.defines("bob"))...), "-kill", id)...)
	if err == nil || !strings.Contains(text, "user bob may not modify job "+id) || !strings.Contains(text, "mapreduce.job.acl-modify-job") {
		t.Errorf("mr job -kill as bob: err %v, output %q", err, text)
	}
	_, err = bob.RPC().GetJobHistory(ctx, &mrpb.JobHistoryRequest{JobId: wc})
	wantPermissionDenied(t, "bob's history of alice's word count", err, "user bob", wc, "mapreduce.job.acl-view-job")
	if _, err := alice.History(ctx, wc); err != nil {
		t.Errorf("alice's history of her word count: %v", err)
	}
	// bob's list shows alice's jobs without their details.
	list, err := bob.List(ctx, true)
	if err != nil || len(list) != 2 {
		t.Fatalf("bob's list: %v %v", list, err)
	}
	for _, st := range list {
		if st.User != "alice" || st.Output != "" || len(st.Counters) != 0 {
			t.Errorf("bob's list entry %s: user %q output %q %d counters; want alice's job without details", st.JobId, st.User, st.Output, len(st.Counters))
		}
	}
	// carol may view (her group is in the view ACL), not kill.
	if st, err := carol.Status(ctx, id); err != nil || st.State != jobtracker.StateRunning {
		t.Errorf("carol's status: %v %v", st, err)
	}
	_, err = carol.RPC().KillJob(ctx, &mrpb.KillJobRequest{JobId: id})
	wantPermissionDenied(t, "carol's kill", err, "user carol", id, "mapreduce.job.acl-modify-job")

	// The JobTracker's status pages stay plain HTTP: they must not show
	// the job's shuffle secret (read here from its system directory).
	var staged struct{ Secret []byte }
	data, err := os.ReadFile(filepath.Join(c.dir, "system", id+".json"))
	if err != nil || json.Unmarshal(data, &staged) != nil || len(staged.Secret) < 16 {
		t.Fatalf("the staged job %s: %v (%d bytes of secret)", id, err, len(staged.Secret))
	}
	ui := c.logValue("jobtracker", "jobtracker http serving", "address")
	pages := []string{"/", "/job?id=" + id, "/api/jobs", "/api/job?id=" + id, "/api/cluster", "/metrics",
		"/trackers", "/tracker?name=t1", "/history", "/api/job/timeline?id=" + id, "/api/cluster/occupancy"}
	// The task and attempt pages (rendered by the same code for every
	// job) of an attempt of alice's word count.
	_, body, err := get(http.DefaultTransport, "http://"+ui+"/api/job?id="+wc)
	m := regexp.MustCompile(`attempt_[0-9]+_[0-9]+_m_[0-9]+_[0-9]+`).FindString(body)
	if err != nil || m == "" {
		t.Fatalf("no map attempt of job %s in /api/job (%v)", wc, err)
	}
	pages = append(pages, "/task?id=task_"+strings.TrimPrefix(m[:strings.LastIndexByte(m, '_')], "attempt_"), "/attempt?id="+m)
	for _, page := range pages {
		code, body, err := get(http.DefaultTransport, "http://"+ui+page)
		if err != nil || code != 200 {
			t.Fatalf("status page %s: %d %v", page, code, err)
		}
		for _, enc := range []string{base64.StdEncoding.EncodeToString(staged.Secret), base64.RawURLEncoding.EncodeToString(staged.Secret),
			hex.EncodeToString(staged.Secret), string(staged.Secret)} {
			if strings.Contains(body, enc) {
				t.Errorf("status page %s shows job %s's secret", page, id)
			}
		}
	}

	// (c) A user certificate cannot pose as a tracker: no launches, no
	// job secrets. (d) Nor can a tracker pose as another.
	hb := &mrpb.HeartbeatRequest{Tracker: "t1", Host: "localhost", ShuffleAddress: "127.0.0.1:1", MapSlots: 4, ReduceSlots: 4,
		FreeMapSlots: 4, FreeReduceSlots: 4, AcceptNewTasks: true, InitialContact: true, Instance: "impostor"}
	_, err = alice.RPC().Heartbeat(ctx, hb)
	wantPermissionDenied(t, "alice heartbeating as t1", err, "user alice", "Heartbeat", "tasktracker certificate")
	t1 := p.client(c, "t1")
	hb.Tracker = "t2"
	_, err = t1.RPC().Heartbeat(ctx, hb)
	wantPermissionDenied(t, "t1 heartbeating as t2", err, "tasktracker t1", "tracker t2")
	_, err = t1.RPC().KillJob(ctx, &mrpb.KillJobRequest{JobId: id})
	wantPermissionDenied(t, "t1 killing a job", err, "tasktracker t1", "user certificate")
	for _, a := range rec.Attempts {
		if a.Tracker == "t2" {
			_, err = t1.RPC().CanCommit(ctx, &mrpb.CanCommitRequest{AttemptId: a.AttemptID})
			wantPermissionDenied(t, "t1 asking to commit t2's attempt", err, "tasktracker t1", a.AttemptID, "tracker t2")
			break
		}
	}

	// (e) The shuffle server speaks HTTPS to tracker certificates only;
	// behind TLS the request HMAC still holds.
	shuffle := c.trackerShuffleAddr("t1")
	url := fmt.Sprintf("http://%s/mapOutput?job=%s&attempt=x&spill=0&reduce=0", shuffle, id)
	if code, body, err := get(&http.Transport{}, url); err == nil && code < 400 {
		t.Errorf("plain HTTP fetch: %d %q, want a refusal", code, body)
	}
	if code, body, err := get(&http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}, strings.Replace(url, "http:", "https:", 1)); err == nil {
		t.Errorf("HTTPS fetch without a client certificate: %d %q, want the handshake refused", code, body)
	}
	if code, body, err := get(p.transport("alice"), url); err != nil || code != http.StatusForbidden || !strings.Contains(body, "user alice") {
		t.Errorf("fetch with alice's certificate: %d %q %v, want 403 naming her", code, body, err)
	}
	if code, body, err := get(p.transport("t2"), url); err != nil || code != http.StatusUnauthorized {
		t.Errorf("fetch with t2's certificate but no request hash: %d %q %v, want 401", code, body, err)
	}
	// The tracker's metrics: to jobtracker and tasktracker certificates
	// (a scraper holds one), not to a user's; over HTTPS only.
	metrics := "http://" + shuffle + "/metrics"
	for _, who := range []string{"jt", "t2"} {
		if code, body, err := get(p.transport(who), metrics); err != nil || code != 200 || !strings.Contains(body, "gomr_tasktracker_attempts_ended_total") {
			t.Errorf("t1's metrics with %s's certificate: %d %v\n%s", who, code, err, tail(body, 500))
		}
	}
	if code, body, err := get(p.transport("alice"), metrics); err != nil || code != http.StatusForbidden || !strings.Contains(body, "user alice") {
		t.Errorf("t1's metrics with alice's certificate: %d %q %v, want 403 naming her", code, body, err)
	}
	if code, body, err := get(&http.Transport{}, metrics); err == nil && code < 400 {
		t.Errorf("t1's metrics over plain HTTP: %d %q, want a refusal", code, tail(body, 200))
	}

	// A tracker must run under its certificate's name.
	text, err = runMR(t, append([]string{"tasktracker", "--name", "t9", "-D", "mapreduce.jobtracker.address=" + c.jtAddr,
		"-D", "mapreduce.cluster.local.dir=" + filepath.Join(c.dir, "local")}, args(p.defines("t1"))...)...)
	if err == nil || !strings.Contains(text, "tracker name t9 is not the name in its certificate") {
		t.Errorf("tracker t9 with t1's certificate: err %v, output %q", err, text)
	}

	// The administrator may kill alice's job.
	if resp, err := c.client.Kill(ctx, id); err != nil || !resp.Killed {
		t.Fatalf("root's kill of alice's job: %v %v", resp, err)
	}
	if st := c.status(id); st.State != jobtracker.StateKilled {
		t.Errorf("alice's job after root's kill: %s", st.State)
	}
}

// TestE2ESecurityCloneMapOverTLS is TestE2ECloneMap on a cluster with
// TLS: the tracker that restores a clone fetches the checkpoint from the
// straggler's tracker over HTTPS with its certificate, and the clone
// (a reduce's fetches too) runs on.
func TestE2ESecurityCloneMapOverTLS(t *testing.T) {
	path := criuPath(t)
	p := newPKI(t, []string{"slow", "fast"}, "root")
	c := startClusterProcDefines(t, []trackerSpec{{"slow", 1, 0}, {"fast", 1, 1}},
		map[string][]string{"jobtracker": p.defines("jt"), "slow": p.defines("slow"), "fast": p.defines("fast")},
		append(p.defines("root"),
			"mapreduce.tasktracker.criu.path="+path,
			"mapreduce.job.speculative.retry-after-no-speculate=100ms",
			"mapreduce.job.speculative.retry-after-speculate=100ms",
			"speculation.clone.beta=0.0001")...)
	spec, in, out := cloneMapJob(t)
	id := c.submit(spec)
	res := c.wait(id)
	checkWordCount(t, out, countWords(t, in))
	clones := res.Counters.Get(mr.SpeculationGroup, mr.ClonesLaunched)
	if f := res.Counters.Get(mr.SpeculationGroup, mr.CloneFallbacks); clones < 1 || f != 0 {
		t.Fatalf("CLONES_LAUNCHED = %d, CLONE_FALLBACKS = %d; want a clone, no fallback", clones, f)
	}
	slowShuffle := c.trackerShuffleAddr("slow")
	data, _ := os.ReadFile(filepath.Join(c.dir, "fast.log"))
	if !strings.Contains(string(data), "from="+slowShuffle) {
		t.Errorf("no clone of an attempt of tracker slow (%s) was restored on tracker fast", slowShuffle)
	}
	// The checkpoint endpoint answers tracker certificates over HTTPS only.
	u := "http://" + slowShuffle + tasktracker.CheckpointPath + "?job=" + id + "&attempt=attempt_x_1_m_000000_0&clone=attempt_x_1_m_000000_9"
	for name, rt := range map[string]http.RoundTripper{"plain HTTP": &http.Transport{}, "a user certificate": p.transport("root")} {
		resp, err := (&http.Client{Transport: rt, Timeout: 10 * time.Second}).Post(u, "", nil)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode < 400 || (name == "a user certificate" && resp.StatusCode != http.StatusForbidden) {
				t.Errorf("checkpoint request with %s: %s, want a refusal", name, resp.Status)
			}
		}
	}
	resp, err := (&http.Client{Transport: p.transport("fast"), Timeout: 10 * time.Second}).Post(u, "", nil)
	if err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("checkpoint request with a tracker certificate but no signature: %v %v, want 401", resp, err)
	} else {
		resp.Body.Close()
	}
}
