package jobtracker

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	_ "gomr/apps" // registers the "wordcount" job definition SubmitJob checks
	"gomr/conf"
	"gomr/internal/promexport"
	"gomr/mr"
	"gomr/mrpb"
)

// httpT0 is the test clock's origin; the JobTracker's ident is 202601020304.
var httpT0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

type httpClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *httpClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// at sets the clock to httpT0+d.
func (c *httpClock) at(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = httpT0.Add(d)
}

func newHTTPTestJT(t *testing.T, overrides map[string]string) (*JobTracker, *httpClock) {
	t.Helper()
	m := map[string]string{"mapreduce.jobtracker.jobhistory.location": t.TempDir()}
	for k, v := range overrides {
		m[k] = v
	}
	cfg, err := conf.Default().With(m, conf.SourceFlag)
	if err != nil {
		t.Fatal(err)
	}
	clk := &httpClock{t: httpT0}
	jt, err := New(cfg, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	noIllegalTransitions(t, jt)
	return jt, clk
}

func httpSubmit(t *testing.T, jt *JobTracker, spec mr.JobSpec, splits []mr.Split) string {
	t.Helper()
	specJSON, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	splitsJSON, err := json.Marshal(splits)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := jt.SubmitJob(context.Background(), &mrpb.SubmitJobRequest{SpecJson: specJSON, SplitsJson: splitsJSON})
	if err != nil {
		t.Fatalf("submit %s: %v", spec.Name, err)
	}
	return resp.JobId
}

func httpHeartbeat(t *testing.T, jt *JobTracker, req *mrpb.HeartbeatRequest) []string {
	t.Helper()
	asTracker(jt, req)
	resp, err := jt.Heartbeat(context.Background(), req)
	if err != nil {
		t.Fatalf("heartbeat of %s: %v", req.Tracker, err)
	}
	var launched []string
	for _, a := range resp.Actions {
		if l := a.GetLaunch(); l != nil {
			launched = append(launched, l.AttemptId)
		}
	}
	return launched
}

func httpWaitDone(t *testing.T, jt *JobTracker, id string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		jt.mu.Lock()
		done := jt.jobs[id].done()
		jt.unlock()
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s did not finish", id)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func httpSameStrings(a, b []string) bool {
	return strings.Join(a, "|") == strings.Join(b, "|")
}

const (
	httpJobEmpty = "job_202601020304_0001"
	httpJobAlpha = "job_202601020304_0002"
	httpM0A0     = "attempt_202601020304_0002_m_000000_0"
	httpM1A0     = "attempt_202601020304_0002_m_000001_0"
	httpM1A1     = "attempt_202601020304_0002_m_000001_1"
	httpR0A0     = "attempt_202601020304_0002_r_000000_0"
)

// scenario builds a cluster at httpT0+16s: a finished empty job, and a running
// job "alpha <b>" with map 0 done on tt1, map 1 failed once on tt1 and
// running again on tt2, and its reduce running on tt1.
func httpScenario(t *testing.T) *JobTracker {
	t.Helper()
	jt, clk := newHTTPTestJT(t, nil)
	dir := t.TempDir()
	httpSubmit(t, jt, mr.JobSpec{Name: "empty", Def: "wordcount", Output: filepath.Join(dir, "empty")}, nil)
	httpWaitDone(t, jt, httpJobEmpty)
	splits := []mr.Split{
		{Path: "/in/a", Length: 100, Hosts: []string{"h1"}},
		{Path: "/in/b", Length: 50, Hosts: []string{"h1"}},
	}
	if id := httpSubmit(t, jt, mr.JobSpec{Name: "alpha <b>", Def: "wordcount", User: "ann", NumReduces: 1,
		Output: filepath.Join(dir, "alpha")}, splits); id != httpJobAlpha {
		t.Fatalf("job id %s, want %s", id, httpJobAlpha)
	}

	got := httpHeartbeat(t, jt, &mrpb.HeartbeatRequest{Tracker: "tt1", Host: "h1", ShuffleAddress: "h1:7000",
		MapSlots: 2, ReduceSlots: 1, FreeMapSlots: 2, FreeReduceSlots: 1, InitialContact: true, AcceptNewTasks: true})
	if want := []string{httpM0A0, httpM1A0}; !httpSameStrings(got, want) {
		t.Fatalf("first heartbeat launched %v, want %v", got, want)
	}

	clk.at(10 * time.Second)
	got = httpHeartbeat(t, jt, &mrpb.HeartbeatRequest{Tracker: "tt1", Host: "h1", ShuffleAddress: "h1:7000",
		MapSlots: 2, ReduceSlots: 1, FreeMapSlots: 1, FreeReduceSlots: 1, AcceptNewTasks: true,
		Spills: []*mrpb.SpillAnnouncement{{AttemptId: httpM0A0, Spill: 0, Final: true,
			Segments: []*mrpb.Segment{{Length: 10, RawLength: 20, Records: 5, Crc: 1}}}},
		Attempts: []*mrpb.AttemptStatus{
			{AttemptId: httpM0A0, State: StateSucceeded, Progress: 1, Phase: "MAP",
				Counters: []*mrpb.Counter{{Group: mr.TaskCounterGroup, Name: mr.MapInputRecords, Value: 100}}},
			{AttemptId: httpM1A0, State: StateRunning, Progress: 0.5, Phase: "MAP",
				Counters: []*mrpb.Counter{{Group: mr.TaskCounterGroup, Name: mr.MapInputRecords, Value: 40}}},
		}})
	if want := []string{httpR0A0}; !httpSameStrings(got, want) {
		t.Fatalf("second heartbeat launched %v, want %v", got, want)
	}

	clk.at(12 * time.Second)
	httpHeartbeat(t, jt, &mrpb.HeartbeatRequest{Tracker: "tt1", Host: "h1", ShuffleAddress: "h1:7000",
		MapSlots: 2, ReduceSlots: 1, FreeMapSlots: 2,
		Attempts: []*mrpb.AttemptStatus{
			{AttemptId: httpM1A0, State: StateFailed, Progress: 0.5, Phase: "MAP", Diagnostic: "boom\nat line 3"},
			{AttemptId: httpR0A0, State: StateRunning, Progress: 0.1, Phase: "SHUFFLE",
				Counters: []*mrpb.Counter{{Group: mr.TaskCounterGroup, Name: mr.ReduceShuffleBytes, Value: 10}}},
		}})

	clk.at(13 * time.Second)
	got = httpHeartbeat(t, jt, &mrpb.HeartbeatRequest{Tracker: "tt2", Host: "h2", ShuffleAddress: "h2:7000",
		MapSlots: 1, FreeMapSlots: 1, InitialContact: true, AcceptNewTasks: true, CriuAvailable: true})
	if want := []string{httpM1A1}; !httpSameStrings(got, want) {
		t.Fatalf("tt2's heartbeat launched %v, want %v", got, want)
	}

	clk.at(15 * time.Second)
	httpHeartbeat(t, jt, &mrpb.HeartbeatRequest{Tracker: "tt2", Host: "h2", ShuffleAddress: "h2:7000",
		MapSlots: 1, CriuAvailable: true,
		Attempts: []*mrpb.AttemptStatus{{AttemptId: httpM1A1, State: StateRunning, Progress: 0.25, Phase: "MAP",
			Counters: []*mrpb.Counter{{Group: mr.TaskCounterGroup, Name: mr.MapInputRecords, Value: 10}}}}})
	clk.at(16 * time.Second)
	return jt
}

func httpGet(t *testing.T, h http.Handler, method, path string) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, path, nil))
	return rec
}

// sameJSON compares bodies modulo indentation.
func httpSameJSON(t *testing.T, what string, got []byte, want string) {
	t.Helper()
	var g, w bytes.Buffer
	if err := json.Compact(&g, got); err != nil {
		t.Fatalf("%s: body is not JSON: %v\n%s", what, err, got)
	}
	if err := json.Compact(&w, []byte(want)); err != nil {
		t.Fatalf("%s: expected text is not JSON: %v", what, err)
	}
	if g.String() != w.String() {
		t.Errorf("%s:\n got %s\nwant %s", what, g.String(), w.String())
	}
}

func TestHTTPJSON(t *testing.T) {
	jt := httpScenario(t)
	h := jt.HTTPHandler()
	outDir := func(job string) string {
		jt.mu.Lock()
		defer jt.unlock()
		b, _ := json.Marshal(jt.jobs[job].spec.Output)
		return string(b)
	}
	emptyJob := `{"id":"job_202601020304_0001","name":"empty","user":"","pool":"default","priority":0,
		"state":"SUCCEEDED","error":"","output":` + outDir(httpJobEmpty) + `,
		"submit":"2026-01-02T03:04:05Z","start":"2026-01-02T03:04:05Z","finish":"2026-01-02T03:04:05Z",
		"map_progress":1,"reduce_progress":1,
		"maps":{"total":0,"pending":0,"running":0,"succeeded":0,"failed":0,"killed":0},
		"reduces":{"total":0,"pending":0,"running":0,"succeeded":0,"failed":0,"killed":0}}`
	alphaInfo := `"id":"job_202601020304_0002","name":"alpha <b>","user":"ann","pool":"default","priority":0,
		"state":"RUNNING","error":"","output":` + outDir(httpJobAlpha) + `,
		"submit":"2026-01-02T03:04:05Z","start":"2026-01-02T03:04:05Z",
		"map_progress":0.625,"reduce_progress":0.1,
		"maps":{"total":2,"pending":0,"running":1,"succeeded":1,"failed":0,"killed":0},
		"reduces":{"total":1,"pending":0,"running":1,"succeeded":0,"failed":0,"killed":0}`

	tests := []struct {
		path string
		code int
		want string
	}{
		{"/api/cluster", 200, `{"time":"2026-01-02T03:04:21Z","policy":"fifo","trackers":[
			{"name":"tt1","host":"h1","shuffle_address":"h1:7000","map_slots":2,"reduce_slots":1,
			 "running_maps":0,"running_reduces":1,"running_attempts":["` + httpR0A0 + `"],
			 "last_heartbeat":"2026-01-02T03:04:17Z","last_heartbeat_age_seconds":4,"criu":false,
			 "blacklisted":false,"lost_replies":0},
			{"name":"tt2","host":"h2","shuffle_address":"h2:7000","map_slots":1,"reduce_slots":0,
			 "running_maps":1,"running_reduces":0,"running_attempts":["` + httpM1A1 + `"],
			 "last_heartbeat":"2026-01-02T03:04:20Z","last_heartbeat_age_seconds":1,"criu":true,
			 "blacklisted":false,"lost_replies":0}],
			"tracker_counts":{"live":2,"blacklisted":0,"graylisted":0,"lost":0},
			"map_slots":3,"reduce_slots":1,"running_maps":1,"running_reduces":1,
			"jobs":{"FAILED":0,"KILLED":0,"RUNNING":1,"SUCCEEDED":1}}`},
		{"/api/jobs", 200, `{"jobs":[` + emptyJob + `,{` + alphaInfo + `}]}`},
		{"/api/job?id=" + httpJobEmpty, 200, strings.TrimSuffix(emptyJob, "}") + `,"counters":{},"tasks":[]}`},
		{"/api/job?id=" + httpJobAlpha, 200, `{` + alphaInfo + `,
			"counters":{
				"org.apache.hadoop.mapreduce.JobCounter":{"DATA_LOCAL_MAPS":2,"MILLIS_MAPS":22000,"NUM_FAILED_MAPS":1,
					"TOTAL_LAUNCHED_MAPS":3,"TOTAL_LAUNCHED_REDUCES":1},
				"org.apache.hadoop.mapreduce.TaskCounter":{"MAP_INPUT_RECORDS":110,"REDUCE_SHUFFLE_BYTES":10}},
			"tasks":[
			{"id":"task_202601020304_0002_m_000000","type":"map","index":0,"state":"SUCCEEDED","progress":1,
			 "failures":0,"error":"","attempts":[
				{"id":"` + httpM0A0 + `","tracker":"tt1","state":"SUCCEEDED","progress":1,"phase":"MAP",
				 "start":"2026-01-02T03:04:05Z","finish":"2026-01-02T03:04:15Z","error":""}]},
			{"id":"task_202601020304_0002_m_000001","type":"map","index":1,"state":"RUNNING","progress":0.25,
			 "failures":1,"error":"boom\nat line 3","attempts":[
				{"id":"` + httpM1A0 + `","tracker":"tt1","state":"FAILED","progress":0.5,"phase":"MAP",
				 "start":"2026-01-02T03:04:05Z","finish":"2026-01-02T03:04:17Z","error":"boom\nat line 3"},
				{"id":"` + httpM1A1 + `","tracker":"tt2","state":"RUNNING","progress":0.25,"phase":"MAP",
				 "start":"2026-01-02T03:04:18Z","error":""}]},
			{"id":"task_202601020304_0002_r_000000","type":"reduce","index":0,"state":"RUNNING","progress":0.1,
			 "failures":0,"error":"","attempts":[
				{"id":"` + httpR0A0 + `","tracker":"tt1","state":"RUNNING","progress":0.1,"phase":"SHUFFLE",
				 "start":"2026-01-02T03:04:15Z","error":""}]}]}`},
		{"/api/job?id=job_202601020304_0099", 404, `{"error":"unknown job job_202601020304_0099"}`},
		{"/api/job", 400, `{"error":"missing query parameter id (a job id)"}`},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			rec := httpGet(t, h, "GET", tc.path)
			if rec.Code != tc.code {
				t.Fatalf("status %d, want %d: %s", rec.Code, tc.code, rec.Body)
			}
			if ct := rec.Header().Get("Content-Type"); ct != "application/json; charset=utf-8" {
				t.Errorf("Content-Type %q", ct)
			}
			httpSameJSON(t, tc.path, rec.Body.Bytes(), tc.want)
		})
	}
}

// scrapeMetrics parses a /metrics body in the text format.
func scrapeMetrics(t *testing.T, body string) map[string]*dto.MetricFamily {
	t.Helper()
	fams, err := promexport.Parse(strings.NewReader(body))
	if err != nil {
		t.Fatalf("%v\n%s", err, body)
	}
	return fams
}

func TestHTTPMetrics(t *testing.T) {
	jt := httpScenario(t)
	runtime.GC() // so that there is a live heap figure
	rec := httpGet(t, jt.HTTPHandler(), "GET", "/metrics")
	if rec.Code != 200 {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4; charset=utf-8") {
		t.Errorf("Content-Type %q", ct)
	}
	fams := scrapeMetrics(t, rec.Body.String())
	gauge, counter, histogram := dto.MetricType_GAUGE, dto.MetricType_COUNTER, dto.MetricType_HISTOGRAM
	tests := []struct {
		name string
		typ  dto.MetricType
		help string // checked when set: the families served before the client library
		want map[string]float64
	}{
		{"gomr_jobs", gauge, "Jobs the JobTracker lists (in memory, or retired and cached), by state.",
			map[string]float64{"state=failed": 0, "state=killed": 0, "state=running": 1, "state=succeeded": 1}},
		{"gomr_jobs_retired_total", counter, "Completed jobs retired from the JobTracker's memory.", map[string]float64{"": 0}},
		{"gomr_trackers", gauge, "Live TaskTrackers.", map[string]float64{"": 2}},
		{"gomr_trackers_blacklisted", gauge, "Live TaskTrackers blacklisted across all jobs (they get no task).", map[string]float64{"": 0}},
		{"gomr_heartbeat_replies_lost_total", counter, "Heartbeat replies a TaskTracker did not get (their actions were sent again).",
			map[string]float64{"": 0}},
		{"gomr_policy_offers_total", counter, "Slot offers made to the scheduling policy.", map[string]float64{"": 3}},
		{"gomr_policy_decisions_refused_total", counter, "Policy decisions refused whole for breaking a rule (a policy bug; the log names the rule).",
			map[string]float64{"": 0}},
		{"gomr_policy_preempted_total", counter, "Attempts killed for the policy's preemptions, by task type.",
			map[string]float64{"type=map": 0, "type=reduce": 0}},
		{"gomr_policy_spare_launches_total", counter, "Attempts launched on slots lent beyond a job's quota (MinEDF-WC), by task type.",
			map[string]float64{"type=map": 0, "type=reduce": 0}},
		{"gomr_jobtracker_illegal_state_changes_total", counter,
			"State changes of jobs, tasks and attempts refused as illegal (a bug; the log names both states).", map[string]float64{"": 0}},
		{"gomr_slots", gauge, "Task slots of the live TaskTrackers, by task type.", map[string]float64{"type=map": 3, "type=reduce": 1}},
		{"gomr_running_attempts", gauge, "Live task attempts, by task type.", map[string]float64{"type=map": 1, "type=reduce": 1}},
		{"gomr_tasks_launched_total", counter, "Task attempts launched, by task type.", map[string]float64{"type=map": 3, "type=reduce": 1}},
		{"gomr_attempts_failed_total", counter, "Task attempts failed, by task type.", map[string]float64{"type=map": 1, "type=reduce": 0}},
		{"gomr_attempts_killed_total", counter, "Task attempts killed (preempted, lost, superseded), by task type.",
			map[string]float64{"type=map": 0, "type=reduce": 0}},
		// Added with the client library.
		{"gomr_heartbeats_received_total", counter, "", map[string]float64{"": 5}},
		{"gomr_heartbeat_duration_seconds", histogram, "", map[string]float64{"": 5}},
		{"gomr_heartbeat_lock_wait_seconds", histogram, "", map[string]float64{"": 5}},
		{"gomr_heartbeat_lock_held_seconds", histogram, "", map[string]float64{"": 5}},
		{"gomr_slots_by_state", gauge, "", map[string]float64{"state=occupied,type=map": 1, "state=free,type=map": 2,
			"state=occupied,type=reduce": 1, "state=free,type=reduce": 0}},
		{"gomr_pending_tasks", gauge, "", map[string]float64{"type=map": 0, "type=reduce": 0}},
		{"gomr_job_duration_seconds", histogram, "", map[string]float64{"state=succeeded": 1}},
		{"gomr_attempt_duration_seconds", histogram, "", map[string]float64{"state=succeeded,type=map": 1, "state=failed,type=map": 1}},
		{"gomr_fetch_failures_reported_total", counter, "", map[string]float64{"": 0}},
	}
	for _, tc := range tests {
		f := fams[tc.name]
		if f == nil {
			t.Errorf("no family %s", tc.name)
			continue
		}
		if f.GetType() != tc.typ {
			t.Errorf("%s is a %v, want %v", tc.name, f.GetType(), tc.typ)
		}
		if tc.help != "" && f.GetHelp() != tc.help {
			t.Errorf("%s help %q, want %q", tc.name, f.GetHelp(), tc.help)
		}
		if got := promexport.Samples(f); !maps.Equal(got, tc.want) {
			t.Errorf("%s = %v, want %v", tc.name, got, tc.want)
		}
	}
	// The attempts' durations on the test clock: m0 succeeded at 10 s,
	// m1's first attempt failed at 12 s.
	for _, m := range fams["gomr_attempt_duration_seconds"].GetMetric() {
		want := 10.0
		if m.Label[0].GetValue() == "failed" || m.Label[1].GetValue() == "failed" {
			want = 12
		}
		if got := m.GetHistogram().GetSampleSum(); got != want {
			t.Errorf("attempt duration %v sum %v, want %v", m.Label, got, want)
		}
	}
	// The process figures vary; fifo has no pools or partitions.
	for _, name := range []string{"gomr_jobtracker_heap_live_bytes", "gomr_jobtracker_goroutines", "go_goroutines",
		"process_resident_memory_bytes", "go_memstats_heap_alloc_bytes"} {
		f := fams[name]
		if f == nil || len(f.Metric) != 1 || f.Metric[0].GetGauge().GetValue() <= 0 {
			t.Errorf("%s: %v, want one positive gauge", name, f)
		}
	}
	for name := range fams {
		if strings.HasPrefix(name, "gomr_pool_") || strings.HasPrefix(name, "gomr_partition_") {
			t.Errorf("family %s for policy fifo", name)
		}
	}
}

func TestHTTPPages(t *testing.T) {
	jt := httpScenario(t)
	h := jt.HTTPHandler()
	tests := []struct {
		path string
		code int
		want []string
	}{
		{"/", 200, []string{
			"<title>gomr JobTracker</title>",
			"Scheduling policy: <b>fifo</b>",
			"Map slots: 3 (1 running). Reduce slots: 1 (1 running).",
			"Jobs: 1 running, 1 succeeded, 0 failed, 0 killed.",
			"<h2>TaskTrackers</h2>",
			`<tr><td class="n"><a href="/trackers">2</a></td><td class="n"><a href="/trackers?state=blacklisted">0</a></td>`,
			"<h2>Running jobs (1)</h2>",
			`<tr><td><a href="/job?id=job_202601020304_0002">job_202601020304_0002</a></td><td class="wrap">alpha &lt;b&gt;</td><td>ann</td><td>default</td>
<td>NORMAL</td><td>RUNNING</td><td>2026-01-02 03:04:05</td><td>-</td>
<td class="n">62.5%</td><td class="n">1/2</td>
<td class="n">10.0%</td><td class="n">0/1</td>`,
			"<h2>Finished jobs (1)</h2>",
			`<a href="/job?id=job_202601020304_0001">job_202601020304_0001</a></td><td class="wrap">empty</td>`,
			"<p>Policy fifo does not describe its state.</p>",
		}},
		{"/job?id=" + httpJobAlpha, 200, []string{
			"<title>job_202601020304_0002</title>",
			"<h1>Job job_202601020304_0002</h1>",
			"<tr><th>Name</th><td>alpha &lt;b&gt;</td></tr>",
			"<tr><th>State</th><td>RUNNING</td></tr>",
			"<tr><th>Elapsed</th><td>16s</td></tr>",
			"<tr><th>Map progress</th><td>62.5% (<a href=\"/job?id=" + httpJobAlpha + "&amp;state=succeeded&amp;type=map#tasks\">1</a>/<a href=\"/job?id=" + httpJobAlpha + "&amp;type=map#tasks\">2</a> done, <a href=\"/job?id=" + httpJobAlpha + "&amp;state=running&amp;type=map#tasks\">1 running</a>, ",
			`<tr><td>Job Counters</td><td>NUM_FAILED_MAPS</td><td class="n">1</td></tr>`,
			`<tr><td>Map-Reduce Framework</td><td>MAP_INPUT_RECORDS</td><td class="n">110</td></tr>`,
			"<h2 id=\"tasks\">Tasks (3 of 3)</h2>", "Showing 1-3 of 3, page 1 of 1.",
			`<tr class="task"><td><b><a href="/task?id=task_202601020304_0002_m_000001">task_202601020304_0002_m_000001</a></b></td><td></td><td>RUNNING</td><td class="n">25.0%</td><td></td><td></td><td></td>
<td title="boom
at line 3">1 failed: boom</td></tr>`,
			`<tr class="attempt"><td><a href="/attempt?id=` + httpM1A0 + `">` + httpM1A0 + `</a> <a href="/tasklog?attemptid=` + httpM1A0 + `&amp;filter=stdout">stdout</a> <a href="/tasklog?attemptid=` + httpM1A0 + `&amp;filter=stderr">stderr</a></td><td>tt1</td><td>FAILED</td><td class="n">50.0%</td><td>MAP</td>
<td>2026-01-02 03:04:05</td><td>2026-01-02 03:04:17</td><td title="boom
at line 3">boom</td></tr>`,
			`<tr class="attempt"><td><a href="/attempt?id=` + httpR0A0 + `">` + httpR0A0 + `</a> <a href="/tasklog?attemptid=` + httpR0A0 + `&amp;filter=stdout">stdout</a> <a href="/tasklog?attemptid=` + httpR0A0 + `&amp;filter=stderr">stderr</a></td><td>tt1</td><td>RUNNING</td><td class="n">10.0%</td><td>SHUFFLE</td>
<td>2026-01-02 03:04:15</td><td>-</td><td title=""></td></tr>`,
		}},
		{"/job?id=" + httpJobEmpty, 200, []string{
			"<tr><th>State</th><td>SUCCEEDED</td></tr>",
			"<h2>Counters</h2>\n<p>None.</p>",
			"<p>The job has no tasks.</p>",
		}},
		{"/job?id=" + httpJobAlpha + "&type=map&state=running", 200, []string{
			"<h2 id=\"tasks\">Tasks: running map tasks (1 of 3)</h2>", `<a href="/task?id=task_202601020304_0002_m_000001">`}},
		{"/job?id=" + httpJobAlpha + "&type=reduce&state=killed", 200, []string{"<p>No killed reduce tasks.</p>"}},
		{"/job?id=" + httpJobAlpha + "&state=completed&page=7", 200, []string{"Tasks: succeeded tasks (1 of 3)", "page 1 of 1."}},
		{"/job?id=" + httpJobAlpha + "&type=shuffle", 400, []string{`unknown task type "shuffle": want map, reduce or all`}},
		{"/job?id=" + httpJobAlpha + "&state=lost", 400, []string{`unknown task state "lost"`}},
		{"/job?id=" + httpJobAlpha + "&page=0", 400, []string{`bad page "0"`}},
		{"/job?id=job_202601020304_0099", 404, []string{"unknown job job_202601020304_0099"}},
		{"/job", 400, []string{"missing query parameter id"}},
		{"/nope", 404, []string{"404 page not found"}},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			rec := httpGet(t, h, "GET", tc.path)
			if rec.Code != tc.code {
				t.Fatalf("status %d, want %d: %s", rec.Code, tc.code, rec.Body)
			}
			if tc.code == 200 {
				if ct := rec.Header().Get("Content-Type"); ct != "text/html; charset=utf-8" {
					t.Errorf("Content-Type %q", ct)
				}
			}
			body := rec.Body.String()
			for _, w := range tc.want {
				if !strings.Contains(body, w) {
					t.Errorf("body lacks %q:\n%s", w, body)
				}
			}
		})
	}
}

func TestHTTPMethods(t *testing.T) {
	jt, _ := newHTTPTestJT(t, nil)
	h := jt.HTTPHandler()
	for _, path := range []string{"/", "/api/cluster", "/api/jobs", "/metrics"} {
		if rec := httpGet(t, h, "POST", path); rec.Code != http.StatusMethodNotAllowed {
			t.Errorf("POST %s: status %d, want 405", path, rec.Code)
		}
		rec := httpGet(t, h, "HEAD", path)
		if rec.Code != 200 {
			t.Errorf("HEAD %s: status %d, want 200", path, rec.Code)
		}
		if got := rec.Header().Get("X-Content-Type-Options"); got != "nosniff" {
			t.Errorf("HEAD %s: X-Content-Type-Options %q", path, got)
		}
	}
	// An empty cluster still lists every job state and an empty tracker list.
	rec := httpGet(t, h, "GET", "/api/cluster")
	httpSameJSON(t, "empty cluster", rec.Body.Bytes(), `{"time":"2026-01-02T03:04:05Z","policy":"fifo","trackers":[],
		"tracker_counts":{"live":0,"blacklisted":0,"graylisted":0,"lost":0},"map_slots":0,"reduce_slots":0,"running_maps":0,"running_reduces":0,
		"jobs":{"FAILED":0,"KILLED":0,"RUNNING":0,"SUCCEEDED":0}}`)
	httpSameJSON(t, "no jobs", httpGet(t, h, "GET", "/api/jobs").Body.Bytes(), `{"jobs":[]}`)
}

// TestHTTPPolicyStatus checks that a policy implementing
// partitions.Describer has its view in /api/cluster and on the page.
func TestHTTPPolicyStatus(t *testing.T) {
	jt, _ := newHTTPTestJT(t, map[string]string{"scheduler.policy": "fair"})
	id := httpSubmit(t, jt, mr.JobSpec{Name: "f", Def: "wordcount", Pool: "etl", Output: filepath.Join(t.TempDir(), "out")},
		[]mr.Split{{Path: "/in/a", Length: 10}})
	httpHeartbeat(t, jt, &mrpb.HeartbeatRequest{Tracker: "tt1", Host: "h1", MapSlots: 2, ReduceSlots: 1,
		FreeMapSlots: 2, FreeReduceSlots: 1, InitialContact: true, AcceptNewTasks: true})
	h := jt.HTTPHandler()
	var ci ClusterInfo
	if err := json.Unmarshal(httpGet(t, h, "GET", "/api/cluster").Body.Bytes(), &ci); err != nil {
		t.Fatal(err)
	}
	ps := ci.PolicyStatus
	if ps == nil {
		t.Fatal("no policy_status for policy fair")
	}
	if ci.Policy != "fair" || ps.Policy != "fair" {
		t.Errorf("policy %q, policy_status.policy %q, want fair", ci.Policy, ps.Policy)
	}
	var pools []string
	for _, p := range ps.Pools {
		pools = append(pools, p.Name)
	}
	if want := []string{"default", "etl"}; !httpSameStrings(pools, want) {
		t.Errorf("pools %v, want %v", pools, want)
	}
	if len(ps.Jobs) != 1 || ps.Jobs[0].ID != id || ps.Jobs[0].Pool != "etl" {
		t.Errorf("policy jobs %+v, want one job %s in pool etl", ps.Jobs, id)
	}
	page := httpGet(t, h, "GET", "/").Body.String()
	for _, w := range []string{"<h3>Pools</h3>", "<tr><td>etl</td>", "<h3>Jobs in the policy's order (1)</h3>",
		`<tr><td><a href="/job?id=` + id + `">` + id + `</a></td><td>etl</td>`} {
		if !strings.Contains(page, w) {
			t.Errorf("page lacks %q:\n%s", w, page)
		}
	}
}

// TestHTTPMetricsWhileHeartbeating scrapes while heartbeats launch and
// end attempts (for the race detector: the collector reads the state
// under the lock, the histograms are observed under it).
func TestHTTPMetricsWhileHeartbeating(t *testing.T) {
	jt, clk := newHTTPTestJT(t, map[string]string{"scheduler.policy": "fair"})
	splits := make([]mr.Split, 20)
	for i := range splits {
		splits[i] = mr.Split{Path: fmt.Sprintf("/in/%d", i), Length: 10}
	}
	httpSubmit(t, jt, mr.JobSpec{Name: "w", Def: "wordcount", Output: filepath.Join(t.TempDir(), "out")}, splits)
	h := jt.HTTPHandler()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 20 {
			if rec := httpGet(t, h, "GET", "/metrics"); rec.Code != 200 {
				t.Errorf("status %d", rec.Code)
				return
			}
		}
	}()
	req := &mrpb.HeartbeatRequest{Tracker: "tt1", Host: "h1", MapSlots: 2, ReduceSlots: 1,
		FreeMapSlots: 2, FreeReduceSlots: 1, InitialContact: true, AcceptNewTasks: true}
	var running []string
	for i := range 20 {
		clk.at(time.Duration(i) * time.Second)
		req.Attempts = nil
		for _, id := range running {
			req.Attempts = append(req.Attempts, &mrpb.AttemptStatus{AttemptId: id, State: StateFailed, Diagnostic: "boom"})
		}
		asTracker(jt, req)
		resp, err := jt.Heartbeat(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			req.InitialContact, req.Incarnation = false, resp.Incarnation
		}
		req.ResponseId = resp.ResponseId
		running = running[:0]
		for _, a := range resp.Actions {
			if l := a.GetLaunch(); l != nil {
				running = append(running, l.AttemptId)
			}
		}
	}
	<-done
	fams := scrapeMetrics(t, httpGet(t, h, "GET", "/metrics").Body.String())
	if got := promexport.Samples(fams["gomr_heartbeats_received_total"])[""]; got != 20 {
		t.Errorf("gomr_heartbeats_received_total = %v, want 20", got)
	}
	failed := promexport.Samples(fams["gomr_attempts_failed_total"])["type=map"]
	if timed := promexport.Samples(fams["gomr_attempt_duration_seconds"])["state=failed,type=map"]; failed < 10 || timed != failed {
		t.Errorf("%v map attempts failed, %v timed; want many, all timed", failed, timed)
	}
}

// TestHTTPPolicyMetrics checks the per-pool gauges of a policy with pools
// and the per-partition gauges of one with partitions.
func TestHTTPPolicyMetrics(t *testing.T) {
	spec := func() mr.JobSpec {
		return mr.JobSpec{Name: "f", Def: "wordcount", Pool: "etl", Output: filepath.Join(t.TempDir(), "out")}
	}
	hb := &mrpb.HeartbeatRequest{Tracker: "tt1", Host: "h1", MapSlots: 2, ReduceSlots: 1,
		FreeMapSlots: 2, FreeReduceSlots: 1, InitialContact: true, AcceptNewTasks: true}

	// Each JobTracker in a subtest of its own: JobTrackers of one test
	// share a system directory, and the second would recover the
	// first's job.
	t.Run("fair", func(t *testing.T) {
		jt, _ := newHTTPTestJT(t, map[string]string{"scheduler.policy": "fair"})
		httpSubmit(t, jt, spec(), []mr.Split{{Path: "/in/a", Length: 10}})
		if got := httpHeartbeat(t, jt, hb); len(got) != 1 {
			t.Fatalf("launched %v, want one map", got)
		}
		fams := scrapeMetrics(t, httpGet(t, jt.HTTPHandler(), "GET", "/metrics").Body.String())
		want := map[string]float64{"pool=default,type=map": 0, "pool=default,type=reduce": 0, "pool=etl,type=map": 1, "pool=etl,type=reduce": 0}
		if got := promexport.Samples(fams["gomr_pool_running_tasks"]); !maps.Equal(got, want) {
			t.Errorf("gomr_pool_running_tasks = %v, want %v", got, want)
		}
		for _, name := range []string{"gomr_pool_fair_share", "gomr_pool_min_share"} {
			if got := promexport.Samples(fams[name]); len(got) != 4 {
				t.Errorf("%s = %v, want the two pools by type", name, got)
			}
		}
		if got := promexport.Samples(fams["gomr_pool_weight"]); len(got) != 2 || got["pool=etl"] <= 0 {
			t.Errorf("gomr_pool_weight = %v, want both pools weighed", got)
		}
		if f := fams["gomr_partition_jobs"]; f != nil {
			t.Errorf("fair has partitions: %v", f)
		}

	})
	t.Run("fbq", func(t *testing.T) {
		jt, _ := newHTTPTestJT(t, map[string]string{"scheduler.policy": "fbq"})
		httpSubmit(t, jt, spec(), []mr.Split{{Path: "/in/a", Length: 10}})
		httpHeartbeat(t, jt, hb)
		fams := scrapeMetrics(t, httpGet(t, jt.HTTPHandler(), "GET", "/metrics").Body.String())
		jobs := promexport.Samples(fams["gomr_partition_jobs"])
		if len(jobs) < 2 || jobs["partition=0"] != 1 {
			t.Errorf("gomr_partition_jobs = %v, want the job in partition 0 of several", jobs)
		}
		running := promexport.Samples(fams["gomr_partition_running_tasks"])
		if running["partition=0,type=map"] != 1 || len(running) != 2*len(jobs) {
			t.Errorf("gomr_partition_running_tasks = %v, want one map in partition 0", running)
		}
		for _, name := range []string{"gomr_partition_capacity_ratio", "gomr_partition_timer_seconds"} {
			if got := promexport.Samples(fams[name]); len(got) != len(jobs) {
				t.Errorf("%s = %v, want one per partition", name, got)
			}
		}
		if got := promexport.Samples(fams["gomr_partition_slots"]); len(got) != 2*len(jobs) {
			t.Errorf("gomr_partition_slots = %v, want one per partition and type", got)
		}
		if f := fams["gomr_pool_running_tasks"]; f != nil {
			t.Errorf("fbq has pools: %v", f)
		}
	})
}

func TestStartHTTP(t *testing.T) {
	jt, _ := newHTTPTestJT(t, map[string]string{"mapreduce.jobtracker.http.address": "127.0.0.1:0"})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addr, err := jt.StartHTTP(ctx, "") // the configuration key
	if err != nil {
		t.Fatal(err)
	}
	if _, port, _ := net.SplitHostPort(addr); port == "0" || port == "" {
		t.Fatalf("bound address %q has no port", addr)
	}
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), "gomr_trackers 0\n") {
		t.Fatalf("GET /metrics: %d\n%s", resp.StatusCode, body)
	}

	// A second server on the same address fails, naming it.
	if _, err := jt.StartHTTP(ctx, addr); err == nil || !strings.Contains(err.Error(), addr) {
		t.Errorf("second bind on %s: error %v, want one naming the address", addr, err)
	}

	cancel()
	jt.wg.Wait()
	if resp, err := http.Get("http://" + addr + "/metrics"); err == nil {
		resp.Body.Close()
		t.Errorf("server still answers after its context ended")
	}

	// Stop ends it too.
	addr, err = jt.StartHTTP(context.Background(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	jt.Stop()
	jt.wg.Wait()
	if resp, err := http.Get("http://" + addr + "/"); err == nil {
		resp.Body.Close()
		t.Errorf("server still answers after Stop")
	}
}
