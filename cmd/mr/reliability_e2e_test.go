package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"gomr/mr"
	"gomr/mrpb"
	"gomr/shuffle"
	"gomr/tasktracker"
	"gomr/tasktracker/child"
)

// waitWithin waits for a job like cluster.wait, but fails after d: the
// tests here are about jobs that used to hang.
func (c *cluster) waitWithin(id string, d time.Duration) *mr.JobResult {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	res, err := c.client.Wait(ctx, id)
	if err != nil {
		st := c.status(id)
		c.t.Fatalf("job %s: %v (state %s, maps %v, reduces %v)", id, err, st.State, st.Maps, st.Reduces)
	}
	return res
}

// The heartbeat replies that launch the reduces on t1 are lost (dropped by
// t1 after the JobTracker sent them, as a lost packet would). The
// JobTracker sends them again on t1's next heartbeat, which names the
// last reply it got; the job completes with exact output. Before response
// ids the reduces stayed RUNNING at the JobTracker, on a tracker running
// nothing, and the job hung at reduce 0%.
func TestE2ELostHeartbeatReplies(t *testing.T) {
	in := t.TempDir()
	genText(t, filepath.Join(in, "a.txt"), 2<<20, 7)
	c := startCluster(t, []trackerSpec{{"t2", 2, 0}})
	c.startTrackerEnv(trackerSpec{"t1", 0, 2}, []string{tasktracker.FaultsEnv + "=drop-replies=2"})
	waitFor(t, "t1 to join", 20*time.Second, func() bool {
		return c.logHas("jobtracker", `msg="tracker joined" component=jobtracker tracker=t1`)
	})
	out := filepath.Join(t.TempDir(), "out")
	id := c.submit(wordCountSpec(in, out, 2))
	c.waitWithin(id, time.Minute)
	checkWordCount(t, out, countWords(t, in))
	if !c.logHas("t1", "fault injection: dropping a heartbeat reply") {
		t.Fatal("t1 dropped no reply: the test tested nothing")
	}
	if !c.logHas("jobtracker", `msg="heartbeat reply lost; sending its actions again" component=jobtracker tracker=t1`) {
		t.Fatal("the jobtracker did not notice the lost replies")
	}
}

// A second process started with a live tracker's name is refused, with a
// message naming both processes, and exits; the first tracker's work goes
// on and the job's output is exact. Before, the second process took over
// the name and the first one's attempts were left RUNNING with nothing
// running them.
func TestE2EDuplicateTrackerNameRefused(t *testing.T) {
	in := bigText(t)
	c := startCluster(t, []trackerSpec{{"t1", 2, 2}})
	out := filepath.Join(t.TempDir(), "out")
	id := c.submit(wordCountSpec(in, out, 2))
	waitFor(t, "a map to run", 30*time.Second, func() bool { return c.status(id).Maps.Running > 0 })

	args := []string{"tasktracker", "--name", "t1"}
	for _, d := range c.defines {
		args = append(args, "-D", d)
	}
	dup := mrCmd(args...)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dup = exec.CommandContext(ctx, dup.Path, dup.Args[1:]...)
	dup.Env = mrCmd().Env
	outb, err := dup.CombinedOutput()
	if err == nil || ctx.Err() != nil {
		t.Fatalf("the second t1 did not exit with an error (err %v, ctx %v):\n%s", err, ctx.Err(), outb)
	}
	msg := string(outb)
	if !strings.Contains(msg, "the jobtracker refused this tracker: tracker name t1 is held by a live tracker") ||
		!strings.Contains(msg, "give each tracker its own --name") {
		t.Fatalf("the second t1's error does not say why:\n%s", msg)
	}
	c.waitWithin(id, 2*time.Minute)
	checkWordCount(t, out, countWords(t, in))
}

// With recovery off, the JobTracker is killed (SIGKILL) while a job runs
// and restarted at once, within the same minute. The lost job is recorded
// as FAILED with the reason; the next job gets a new id and completes with exact output.
// Before, the next job got the lost job's id, the trackers refused every
// shuffle fetch of it with the lost job's secret, and it failed with "Too
// many fetch-failures".
func TestE2EJobTrackerRestartKeepsIDsApart(t *testing.T) {
	in := bigText(t)
	c := startCluster(t, []trackerSpec{{"t1", 2, 1}, {"t2", 2, 1}}, "mapreduce.jobtracker.restart.recover=false")
	lost := c.submit(wordCountSpec(in, filepath.Join(t.TempDir(), "lost"), 2))
	waitFor(t, "a map of the first job to run", 30*time.Second, func() bool { return c.status(lost).Maps.Running > 0 })
	c.kill("jobtracker")
	c.start("jobtracker", "jobtracker")
	waitPort(t, c.jtAddr)
	waitFor(t, "both trackers to register again", 30*time.Second, func() bool {
		return c.logHas("jobtracker", "tracker=t1") && c.logHas("jobtracker", "tracker=t2")
	})
	hist, err := c.client.History(context.Background(), lost)
	if err != nil || !strings.Contains(string(hist), `"state":"FAILED"`) || !strings.Contains(string(hist), "lost: the JobTracker restarted while the job ran") {
		t.Fatalf("history of the job lost in the restart: %v\n%s", err, hist)
	}
	// The trackers held the lost job's files and secret; the new
	// JobTracker does not know the job, and has them purged.
	waitFor(t, "the trackers to purge the lost job", 30*time.Second, func() bool {
		m, _ := filepath.Glob(filepath.Join(c.dir, "local", "t*", "jobs", lost))
		return len(m) == 0
	})
	out := filepath.Join(t.TempDir(), "out")
	next := c.submit(wordCountSpec(in, out, 2))
	if next == lost {
		t.Fatalf("the restarted jobtracker gave the lost job's id %s again", lost)
	}
	c.waitWithin(next, 2*time.Minute)
	checkWordCount(t, out, countWords(t, in))
}

// A tracker that fails every task it gets (fault injection: fail-tasks) is
// blacklisted by the job after 2 failures there, and, once that job has
// succeeded, across all jobs (one fault allowed here): the next job runs
// no attempt on it, and mr job -list-blacklisted-trackers names it. Before,
// it kept getting tasks.
func TestE2EFaultyTrackerBlacklisted(t *testing.T) {
	in := t.TempDir()
	genText(t, filepath.Join(in, "a.txt"), 2<<20, 11)
	c := startCluster(t, []trackerSpec{{"t2", 2, 1}, {"t3", 2, 1}, {"t4", 2, 1}, {"t5", 2, 1}},
		"mapreduce.job.maxtaskfailures.per.tracker=2",
		"mapreduce.jobtracker.tasktracker.maxblacklists=1",
		"mapreduce.input.fileinputformat.split.maxsize=50000")
	c.startTrackerEnv(trackerSpec{"t1", 2, 1}, []string{tasktracker.FaultsEnv + "=fail-tasks=true"})
	waitFor(t, "t1 to join", 20*time.Second, func() bool {
		return c.logHas("jobtracker", `msg="tracker joined" component=jobtracker tracker=t1`)
	})
	first := filepath.Join(t.TempDir(), "first")
	id := c.submit(wordCountSpec(in, first, 2))
	res := c.waitWithin(id, 2*time.Minute)
	checkWordCount(t, first, countWords(t, in))
	// t1 fails what it got in its first heartbeat of the job (its 2 map
	// slots, maybe its reduce slot too), which blacklists it for the
	// job; without the blacklist it would fail a map of each heartbeat.
	if got := res.Counters.Get(mr.JobCounterGroup, mr.NumFailedMaps) + res.Counters.Get(mr.JobCounterGroup, mr.NumFailedReduces); got < 2 || got > 3 {
		t.Errorf("failed attempts %d, want 2 or 3 (t1 blacklisted for the job after its first heartbeat's tasks failed)", got)
	}
	if !c.logHas("jobtracker", `msg="tracker blacklisted across all jobs" component=jobtracker tracker=t1`) {
		t.Fatal("t1 was not blacklisted across all jobs")
	}
	outb, err := runMR(t, "job", "--jobtracker", c.jtAddr, "-list-blacklisted-trackers")
	if err != nil || !strings.Contains(outb, "t1") || !strings.Contains(outb, "blacklisted by 1 jobs within 3h0m0s") {
		t.Fatalf("mr job -list-blacklisted-trackers: %v\n%s", err, outb)
	}

	second := filepath.Join(t.TempDir(), "second")
	id2 := c.submit(wordCountSpec(in, second, 2))
	res2 := c.waitWithin(id2, 2*time.Minute)
	checkWordCount(t, second, countWords(t, in))
	hist, err := c.client.History(context.Background(), id2)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(hist), `"tracker":"t1"`) {
		t.Errorf("the blacklisted tracker ran attempts of the next job")
	}
	if n := res2.Counters.Get(mr.JobCounterGroup, mr.NumFailedMaps); n != 0 {
		t.Errorf("the next job had %d failed maps", n)
	}
}

// A shuffle request captured on the wire is served while it is fresh and
// refused once it is older than mapreduce.shuffle.request.window. Before,
// a captured request hash was served whenever it was replayed.
func TestE2EShuffleRequestReplayRefused(t *testing.T) {
	c := startCluster(t, []trackerSpec{{"t1", 1, 0}}, "mapreduce.shuffle.request.window=1000")
	in := t.TempDir()
	genText(t, filepath.Join(in, "x.txt"), 256<<10, 5)
	id := c.submit(wordCountSpec(in, filepath.Join(t.TempDir(), "out"), 1))
	waitFor(t, "the map to finish", time.Minute, func() bool { return c.status(id).Maps.Succeeded == 1 })
	att := "attempt_" + strings.TrimPrefix(id, "job_") + "_m_000000_0"

	// The job's secret, as the JobTracker keeps it (owner-only).
	data, err := os.ReadFile(filepath.Join(c.dir, "system", id+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var staged struct{ Secret []byte }
	if err := json.Unmarshal(data, &staged); err != nil || len(staged.Secret) == 0 {
		t.Fatalf("staged job: %v", err)
	}
	at := time.Now().UnixMilli()
	req, _ := http.NewRequest("GET", fmt.Sprintf("http://%s%s?job=%s&attempt=%s&spill=0&reduce=0", c.trackerShuffleAddr("t1"), shuffle.Path, id, att), nil)
	req.Header.Set(shuffle.HashHeader, shuffle.RequestHash(staged.Secret, id, att, 0, 0, at))
	req.Header.Set(shuffle.TimeHeader, strconv.FormatInt(at, 10))
	send := func() int {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := send(); code != http.StatusOK {
		t.Fatalf("fresh signed request: status %d, want 200", code)
	}
	time.Sleep(1500 * time.Millisecond)
	if code := send(); code != http.StatusUnauthorized {
		t.Fatalf("the same request 1.5 s later: status %d, want 401", code)
	}
	if !c.logHas("t1", "shuffle request outside its time window refused") {
		t.Error("the tracker did not log why it refused the replay")
	}
}

// childToken reads an attempt child's umbilical token from its environment.
func childToken(t *testing.T, attemptID string) string {
	t.Helper()
	pid := childPID(attemptID)
	if pid == 0 {
		t.Fatalf("no child process for %s", attemptID)
	}
	env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range strings.Split(string(env), "\x00") {
		if v, ok := strings.CutPrefix(kv, child.TokenEnv+"="); ok {
			return v
		}
	}
	t.Fatalf("child of %s has no %s", attemptID, child.TokenEnv)
	return ""
}

// The umbilical answers only the attempt whose token a call carries. Before,
// any local process could ask a tracker's umbilical for any running
// attempt's task, job secret included (attempt ids are public in
// /api/cluster).
func TestE2EUmbilicalAuthenticatesChildren(t *testing.T) {
	c := startCluster(t, []trackerSpec{{"t1", 2, 0}})
	id := c.submit(sleepSpec("sleepy", filepath.Join(t.TempDir(), "out"), 2, 20000))
	prefix := "attempt_" + strings.TrimPrefix(id, "job_") + "_m_00000"
	a0, a1 := prefix+"0_0", prefix+"1_0"
	waitFor(t, "both maps to run", 30*time.Second, func() bool { return childPID(a0) != 0 && childPID(a1) != 0 })
	var umbAddr string
	waitFor(t, "t1 to log its umbilical", 10*time.Second, func() bool {
		data, _ := os.ReadFile(filepath.Join(c.dir, "t1.log"))
		if i := strings.Index(string(data), " umbilical="); i >= 0 {
			umbAddr = strings.Fields(string(data)[i+len(" umbilical="):])[0]
			return true
		}
		return false
	})
	conn, err := grpc.NewClient(umbAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	umb := mrpb.NewUmbilicalClient(conn)
	call := func(as, token, want string) error {
		ctx := context.Background()
		if as != "" {
			ctx = metadata.AppendToOutgoingContext(ctx, child.AttemptMD, as, child.TokenMD, token)
		}
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		_, err := umb.GetTask(ctx, &mrpb.GetTaskRequest{AttemptId: want})
		return err
	}
	if err := call("", "", a0); status.Code(err) != codes.Unauthenticated {
		t.Errorf("GetTask without a token: %v, want Unauthenticated", err)
	}
	if err := call(a0, "0123456789abcdef0123456789abcdef", a0); status.Code(err) != codes.Unauthenticated {
		t.Errorf("GetTask with a wrong token: %v, want Unauthenticated", err)
	}
	tok0 := childToken(t, a0)
	if err := call(a0, tok0, a1); status.Code(err) != codes.PermissionDenied {
		t.Errorf("attempt 0 asking for attempt 1's task: %v, want PermissionDenied", err)
	}
	if err := call(a0, tok0, a0); err != nil {
		t.Errorf("attempt 0 asking for its own task with its token: %v", err)
	}
	if _, err := c.client.Kill(context.Background(), id); err != nil {
		t.Fatal(err)
	}
}

// The JobTracker is killed (SIGKILL) while the job's reduces run, every map
// done, and restarted. The client's wait carries on across the restart,
// the job completes with exact output, and no map runs again: the trackers
// that hold the map output register again and the restarted JobTracker
// keeps it. Before, the job was lost (the client exited with a connection
// error, the output kept _temporary).
func TestE2EJobTrackerRestartRecoversJob(t *testing.T) {
	in := bigText(t)
	c := startCluster(t, []trackerSpec{{"t1", 2, 1}, {"t2", 2, 1}},
		"mapreduce.job.reduce.slowstart.completedmaps=1",
		"mapreduce.input.fileinputformat.split.maxsize=4000000")
	out := filepath.Join(t.TempDir(), "out")
	id := c.submit(wordCountSpec(in, out, 2))
	maps := 0
	waitFor(t, "every map done and a reduce running", 2*time.Minute, func() bool {
		st := c.status(id)
		maps = int(st.Maps.Total)
		return st.Maps.Succeeded == st.Maps.Total && st.Reduces.Running > 0
	})
	c.kill("jobtracker")
	c.start("jobtracker", "jobtracker")
	res := c.waitWithin(id, 2*time.Minute)
	checkWordCount(t, out, countWords(t, in))
	if got := res.Counters.Get(mr.JobCounterGroup, mr.TotalLaunchedMaps); got != int64(maps) {
		t.Errorf("TOTAL_LAUNCHED_MAPS = %d, want %d: a map ran again although its tracker came back", got, maps)
	}
	if !c.logHas("jobtracker", "job recovered after a JobTracker restart") {
		t.Error("the jobtracker did not log the recovery")
	}
	hist, err := c.client.History(context.Background(), id)
	if err != nil || !strings.Contains(string(hist), "_r_000000_100") {
		t.Errorf("history of the recovered job lacks the reduce attempts numbered after the restart: %v", err)
	}
}

// A task child outlives its SIGKILLed tracker by no more than a moment,
// even when it missed the parent-death signal: GOMR_FAULTS=no-pdeathsig
// starts the children without it, as a child forked in the instant of the
// kill misses it (and Go's getppid check cannot catch that in a PID
// namespace). The child reads EOF on its lifeline pipe, whose write end
// died with the tracker, and exits. Before, such a child ran on until its
// umbilical had failed for 30 s (known gap 5 of make chaos).
func TestE2ETaskChildExitsWithKilledTracker(t *testing.T) {
	t.Run("lifeline", func(t *testing.T) { childExitsWithKilledTracker(t) })
	// A tracker that can clone gives its children a control pipe, which
	// is their lifeline.
	t.Run("control pipe", func(t *testing.T) { childExitsWithKilledTracker(t, "mapreduce.tasktracker.criu.path="+criuPath(t)) })
}

func childExitsWithKilledTracker(t *testing.T, defines ...string) {
	c := startCluster(t, nil, defines...)
	c.startTrackerEnv(trackerSpec{"t1", 2, 1}, []string{tasktracker.FaultsEnv + "=no-pdeathsig=true"})
	if len(defines) > 0 {
		waitFor(t, "t1 to join", 20*time.Second, func() bool { return c.logHas("jobtracker", joinedLine("t1")) })
		if !c.logHas("jobtracker", "criu=true") {
			t.Fatal("t1 cannot clone: the test tests nothing")
		}
	}
	id := c.submit(sleepSpec("sleep", filepath.Join(c.dir, "out"), 2, 60000))
	var children []string
	if !until(30*time.Second, func() bool {
		children = c.orphansOf("t1")
		return len(children) == 2
	}) {
		t.Fatalf("job %s: the two map children never ran on t1 (%v)", id, children)
	}
	t.Cleanup(func() { // a failed run leaves no sleeping child behind
		for _, p := range c.orphansOf("t1") {
			pid, _, _ := strings.Cut(p, ":")
			if n, err := strconv.Atoi(pid); err == nil {
				_ = syscallKill(n)
			}
		}
	})
	killed := time.Now()
	c.kill("t1")
	if !until(3*time.Second, func() bool { return len(c.orphansOf("t1")) == 0 }) {
		t.Fatalf("task children of the killed tracker still run %v after the kill: %v",
			time.Since(killed).Round(time.Millisecond), describeProcs(c.orphansOf("t1")))
	}
	t.Logf("the children exited %v after their tracker was killed", time.Since(killed).Round(time.Millisecond))
}

// syscallKill sends SIGKILL to pid.
func syscallKill(pid int) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	return p.Kill()
}
