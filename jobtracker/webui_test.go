package jobtracker

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gomr/mr"
	"gomr/mrpb"
)

// TestWebUIPages checks the task, attempt, tracker and history pages, the
// aliases and the charts' JSON on the scenario of TestHTTPPages.
func TestWebUIPages(t *testing.T) {
	jt := httpScenario(t)
	h := jt.HTTPHandler()
	for _, tc := range []struct {
		path string
		code int
		want []string
	}{
		{"/task?id=task_202601020304_0002_m_000001", 200, []string{"<h1>Task task_202601020304_0002_m_000001</h1>",
			`<a href="/attempt?id=` + httpM1A0 + `">`, `<a href="/tracker?name=tt2">tt2</a>`, "MAP_INPUT_RECORDS=10",
			`<meta http-equiv="refresh" content="5">`}},
		{"/task?id=task_202601020304_0002_m_000001&refresh=0", 200, []string{"Auto-refresh off"}},
		{"/task?id=task_202601020304_0002_m_000009", 404, []string{"unknown task"}},
		{"/attempt?id=" + httpM1A0, 200, []string{"<h1>Attempt " + httpM1A0 + "</h1>", "<pre>boom\nat line 3</pre>",
			"<h2>stdout</h2>", "Not available: "}},
		{"/attempt?id=attempt_202601020304_0002_m_000001_7", 404, []string{"unknown task attempt"}},
		{"/trackers", 200, []string{`<a href="/tracker?name=tt1">tt1</a>`, "<h1>TaskTrackers: live (2)</h1>"}},
		{"/tracker?name=tt2", 200, []string{"<h1>TaskTracker tt2</h1>", `<a href="/attempt?id=` + httpM1A1 + `">`}},
		{"/tracker?name=nope", 404, []string{"no live TaskTracker nope"}},
		{"/history", 200, []string{`<a href="/job?id=` + httpJobEmpty + `">`, "1 finished jobs"}},
		{"/job?id=" + httpJobEmpty, 200, []string{"<h2>Task timeline</h2>"}},
	} {
		rec := httpGet(t, h, "GET", tc.path)
		if rec.Code != tc.code {
			t.Errorf("%s: status %d, want %d: %s", tc.path, rec.Code, tc.code, rec.Body)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(rec.Body.String(), w) {
				t.Errorf("%s lacks %q:\n%s", tc.path, w, rec.Body)
			}
		}
	}
	for path, loc := range map[string]string{"/jobtracker.jsp": "/", "/jobdetails.jsp?jobid=" + httpJobAlpha: "/job?id=" + httpJobAlpha,
		"/jobhistory.jsp": "/history", "/taskdetails.jsp?tipid=x": "/task?id=x"} {
		rec := httpGet(t, h, "GET", path)
		if rec.Code != 301 || rec.Header().Get("Location") != loc {
			t.Errorf("%s: %d to %q, want 301 to %q", path, rec.Code, rec.Header().Get("Location"), loc)
		}
	}

	// Marked as the speculator would have (speculation.go), for the bar.
	jt.mu.Lock()
	_, spec := jt.findAttempt(httpM1A1)
	spec.speculative = true
	jt.unlock()
	var tl Timeline
	if err := json.Unmarshal(httpGet(t, h, "GET", "/api/job/timeline?id="+httpJobAlpha).Body.Bytes(), &tl); err != nil {
		t.Fatal(err)
	}
	// m0 and m1 (failed) on tt1's two map slots, the reduce on tt1's
	// reduce slot, m1's second attempt on tt2.
	if len(tl.Bars) != 4 || len(tl.Rows) != 4 {
		t.Errorf("timeline: %d bars on %d rows, want 4 on 4: %+v", len(tl.Bars), len(tl.Rows), tl)
	}
	rows := map[string]bool{}
	for _, b := range tl.Bars {
		r := tl.Rows[b.Row]
		rows[r.Tracker+" "+r.Type] = true
		if b.Speculative != (b.Attempt == httpM1A1) || b.Cloned {
			t.Errorf("bar %+v: speculative only %s, none cloned", b, httpM1A1)
		}
		if b.Attempt == httpR0A0 && (!b.Running || r.Type != "reduce" || r.Tracker != "tt1") {
			t.Errorf("reduce bar %+v on row %+v", b, r)
		}
	}
	if len(rows) != 3 {
		t.Errorf("rows %v, want tt1 map, tt1 reduce, tt2 map", rows)
	}
	if len(tl.Progress) == 0 || tl.Progress[len(tl.Progress)-1].Map != 0.625 {
		t.Errorf("progress %+v, want samples ending at map 0.625", tl.Progress)
	}
	if rec := httpGet(t, h, "GET", "/api/job/timeline?id=job_202601020304_0099"); rec.Code != 404 {
		t.Errorf("timeline of an unknown job: %d", rec.Code)
	}

	var occ Occupancy
	if err := json.Unmarshal(httpGet(t, h, "GET", "/api/cluster/occupancy").Body.Bytes(), &occ); err != nil {
		t.Fatal(err)
	}
	n := len(occ.Times)
	if n != 5 || len(occ.MapSlots) != n || len(occ.Jobs) != 1 || occ.Jobs[0].Job != httpJobAlpha {
		t.Fatalf("occupancy %+v, want 5 samples of one job", occ)
	}
	if got := occ.Jobs[0].Maps[n-1] + occ.Jobs[0].Reduces[n-1]; got != 2 || occ.MapSlots[n-1] != 3 {
		t.Errorf("last occupancy sample: %d attempts of %d map slots, want 2 of 3", got, occ.MapSlots[n-1])
	}
}

// TestSeriesBounded checks that a series keeps at most maxSamples samples
// spanning the whole run, and keeps a last sample.
func TestSeriesBounded(t *testing.T) {
	var s series[int]
	t0 := time.Unix(0, 0)
	for i := 0; i < 10*maxSamples; i++ {
		s.add(t0.Add(time.Duration(i)*500*time.Millisecond), i, false)
	}
	if len(s.times) > maxSamples || len(s.times) < maxSamples/4 {
		t.Fatalf("%d samples", len(s.times))
	}
	if !s.times[0].Equal(t0) || s.values[0] != 0 {
		t.Errorf("first sample %v %d, want the first added", s.times[0], s.values[0])
	}
	last := t0.Add(time.Duration(10*maxSamples) * 500 * time.Millisecond)
	s.add(last, -1, true)
	if n := len(s.times); !s.times[n-1].Equal(last) || s.values[n-1] != -1 {
		t.Errorf("last sample %v %d, want %v -1", s.times[n-1], s.values[n-1], last)
	}
	for i := 1; i < len(s.times); i++ {
		if !s.times[i].After(s.times[i-1]) {
			t.Fatalf("samples out of order at %d", i)
		}
	}
}

// TestWebUIRetiredJob: a retired job's pages and timeline come from its
// history file.
func TestWebUIRetiredJob(t *testing.T) {
	r := newRetireRig(t, map[string]string{
		"mapred.jobtracker.completeuserjobs.maximum": "0",
		"mapred.job.tracker.retiredjobs.cache.size":  "1",
	})
	id := r.runJob("alice")
	if n := r.jt.retireJobs(); n != 1 || r.inMemory(id) {
		t.Fatalf("retired %d jobs", n)
	}
	h := r.jt.HTTPHandler()
	short := strings.TrimPrefix(id, "job_")
	for path, want := range map[string][]string{
		"/job?id=" + id:                                {"its tasks are shown from its history file", `<a href="/task?id=task_` + short + `_r_000000">`},
		"/task?id=task_" + short + "_m_000000":         {`<a href="/attempt?id=attempt_` + short + `_m_000000_0">`, "MAP_INPUT_RECORDS=1", "<td>SUCCEEDED</td>"},
		"/attempt?id=attempt_" + short + "_r_000000_0": {"REDUCE_OUTPUT_RECORDS", `<a href="/tracker?name=t1">t1</a>`},
		"/history": {`<a href="/job?id=` + id + `">`, "<td>alice</td>"},
	} {
		rec := httpGet(t, h, "GET", path)
		if rec.Code != 200 {
			t.Errorf("%s: %d %s", path, rec.Code, rec.Body)
			continue
		}
		for _, w := range want {
			if !strings.Contains(rec.Body.String(), w) {
				t.Errorf("%s lacks %q:\n%s", path, w, rec.Body)
			}
		}
		if strings.Contains(rec.Body.String(), `http-equiv="refresh"`) {
			t.Errorf("%s of a finished job refreshes itself", path)
		}
	}
	var tl Timeline
	if err := json.Unmarshal(httpGet(t, h, "GET", "/api/job/timeline?id="+id).Body.Bytes(), &tl); err != nil {
		t.Fatal(err)
	}
	if len(tl.Bars) != 2 || len(tl.Rows) != 2 || len(tl.Progress) != 0 {
		t.Errorf("retired job's timeline: %d bars, %d rows, %d progress samples; want 2, 2, 0", len(tl.Bars), len(tl.Rows), len(tl.Progress))
	}
}

// TestWebUIPolicyColumns: the policy's job table shows only the columns
// the active policy fills.
func TestWebUIPolicyColumns(t *testing.T) {
	for _, tc := range []struct {
		policy    string
		want, not []string
	}{
		{"tyrex-static", []string{"<th>Service</th>"}, []string{"<th>Fair share maps</th>", "<th>Deadline</th>", "<th>Min maps</th>"}},
		{"fair", []string{"<th>Pool</th>", "<th>Fair share maps</th>"}, []string{"<th>Service</th>", "<th>Deadline</th>", "<th>Min maps</th>"}},
	} {
		jt, _ := newHTTPTestJT(t, map[string]string{"scheduler.policy": tc.policy})
		httpSubmit(t, jt, mr.JobSpec{Name: "p", Def: "wordcount", Output: filepath.Join(t.TempDir(), "out")}, []mr.Split{{Path: "/in/a", Length: 10}})
		httpHeartbeat(t, jt, &mrpb.HeartbeatRequest{Tracker: "tt1", Host: "h1", MapSlots: 2, ReduceSlots: 1,
			FreeMapSlots: 2, FreeReduceSlots: 1, InitialContact: true, AcceptNewTasks: true})
		page := httpGet(t, jt.HTTPHandler(), "GET", "/").Body.String()
		i := strings.Index(page, "<h3>Jobs in the policy's order")
		if i < 0 {
			t.Errorf("%s: no policy job table:\n%s", tc.policy, page)
			continue
		}
		table := page[i:]
		for _, w := range tc.want {
			if !strings.Contains(table, w) {
				t.Errorf("%s: policy job table lacks %s:\n%s", tc.policy, w, table)
			}
		}
		for _, w := range tc.not {
			if strings.Contains(table, w) {
				t.Errorf("%s: policy job table has %s:\n%s", tc.policy, w, table)
			}
		}
	}
}

// TestOccupancyByPartition checks that under a multi-queue policy the
// occupancy samples carry each partition's running attempts as the policy
// counts them, and that the cluster page draws them; under FIFO neither.
func TestOccupancyByPartition(t *testing.T) {
	for _, policy := range []string{"tyrex-static", "fifo"} {
		t.Run(policy, func(t *testing.T) {
			jt, clk := newHTTPTestJT(t, map[string]string{"scheduler.policy": policy})
			splits := make([]mr.Split, 3)
			for i := range splits {
				splits[i] = mr.Split{Path: fmt.Sprintf("/in/part-%d", i), Length: 100, Hosts: []string{"h1"}}
			}
			httpSubmit(t, jt, mr.JobSpec{Name: "p", Def: "wordcount", NumReduces: 1, Output: filepath.Join(t.TempDir(), "out")}, splits)
			launched := 0
			for round := 0; round < 2; round++ {
				clk.at(time.Duration(round) * 2 * time.Second)
				launched += len(httpHeartbeat(t, jt, &mrpb.HeartbeatRequest{Tracker: "tt1", Host: "h1", MapSlots: 2, ReduceSlots: 1,
					FreeMapSlots: 2 - int32(min(launched, 2)), InitialContact: round == 0, AcceptNewTasks: true}))
			}
			if launched == 0 {
				t.Fatal("nothing launched")
			}
			occ := jt.occupancySeries()
			page := httpGet(t, jt.HTTPHandler(), "GET", "/?refresh=0").Body.String()
			hasChart := strings.Contains(page, `id="occupancy-partitions" data-chart="occupancy" data-by="partition"`)
			if policy == "fifo" {
				if occ.Partitions != nil || hasChart {
					t.Errorf("fifo: partitions %+v, chart %v; want none", occ.Partitions, hasChart)
				}
				return
			}
			if len(occ.Partitions) < 2 || !hasChart {
				t.Fatalf("partitions %+v, chart %v; want every partition and the chart", occ.Partitions, hasChart)
			}
			last := len(occ.Times) - 1
			sum := 0
			for k, p := range occ.Partitions {
				if p.Partition != k || len(p.Maps) != len(occ.Times) {
					t.Errorf("partition %d: %+v", k, p)
				}
				sum += p.Maps[last] + p.Reduces[last]
			}
			jobs := 0
			for _, j := range occ.Jobs {
				jobs += j.Maps[last] + j.Reduces[last]
			}
			if sum != jobs || sum == 0 {
				t.Errorf("last sample: %d attempts by partition, %d by job; want the same, > 0", sum, jobs)
			}
		})
	}
}
