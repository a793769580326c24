package jobtracker

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"gomr/mr"
	"gomr/mrpb"
)

func TestPageOf(t *testing.T) {
	items := func(n int) []int {
		out := make([]int, n)
		for i := range out {
			out[i] = i
		}
		return out
	}
	link := func(page int) string { return fmt.Sprint("p", page) }
	for _, tc := range []struct {
		name                  string
		n, page, size         int
		rows                  []int
		from, to, pg, pages   int
		first, prev, next, la string
	}{
		{"empty", 0, 1, 10, []int{}, 0, 0, 1, 1, "", "", "", ""},
		{"empty, page past the end", 0, 5, 10, []int{}, 0, 0, 1, 1, "", "", "", ""},
		{"first", 25, 1, 10, items(10), 1, 10, 1, 3, "", "", "p2", "p3"},
		{"middle", 25, 2, 10, []int{10, 11, 12, 13, 14, 15, 16, 17, 18, 19}, 11, 20, 2, 3, "p1", "p1", "p3", "p3"},
		{"last, short", 25, 3, 10, []int{20, 21, 22, 23, 24}, 21, 25, 3, 3, "p1", "p2", "", ""},
		{"past the end shows the last", 25, 99, 10, []int{20, 21, 22, 23, 24}, 21, 25, 3, 3, "p1", "p2", "", ""},
		{"exactly full", 20, 2, 10, []int{10, 11, 12, 13, 14, 15, 16, 17, 18, 19}, 11, 20, 2, 2, "p1", "p1", "", ""},
		{"one a page", 3, 2, 1, []int{1}, 2, 2, 2, 3, "p1", "p1", "p3", "p3"},
		{"whole", 7, 1, int(^uint(0) >> 1), items(7), 1, 7, 1, 1, "", "", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rows, pi := pageOf(items(tc.n), tc.n+1, paging{Page: tc.page, Size: tc.size}, link)
			if !slices.Equal(rows, tc.rows) {
				t.Errorf("rows %v, want %v", rows, tc.rows)
			}
			want := pageInfo{Matching: tc.n, Total: tc.n + 1, From: tc.from, To: tc.to, Page: tc.pg, Pages: tc.pages, Size: tc.size,
				First: tc.first, Prev: tc.prev, Next: tc.next, Last: tc.la}
			if pi != want {
				t.Errorf("got %+v\nwant %+v", pi, want)
			}
		})
	}
}

// TestListQueries checks the lists' parameters: defaults, and a 400-style
// error naming the parameter and what it takes.
func TestListQueries(t *testing.T) {
	for _, tc := range []struct {
		q       string
		tracker listQuery
		job     listQuery
		err     string // of both parsers, when they share the parameter
	}{
		{q: "", tracker: listQuery{State: "live", Sort: sorting{Key: "name"}, paging: paging{Page: 1, Size: 50}},
			job: listQuery{State: "all", Sort: sorting{Key: "submit", Desc: true}, paging: paging{Page: 1, Size: 50}}},
		{q: "page=3&size=7&sort=faults", tracker: listQuery{State: "live", Sort: sorting{Key: "faults", Desc: true}, paging: paging{Page: 3, Size: 7, Asked: true}}},
		{q: "state=LOST&sort=heartbeat&order=desc", tracker: listQuery{State: "lost", Sort: sorting{Key: "heartbeat", Desc: true}, paging: paging{Page: 1, Size: 50}}},
		{q: "state=finished&sort=name&order=asc&size=1000", job: listQuery{State: "finished", Sort: sorting{Key: "name"}, paging: paging{Page: 1, Size: 1000, Asked: true}}},
		{q: "page=0", err: `bad page "0": want a page number from 1`},
		{q: "page=two", err: `bad page "two": want a page number from 1`},
		{q: "size=0", err: `bad size "0": want a page size from 1 to 1000`},
		{q: "size=1001", err: `bad size "1001": want a page size from 1 to 1000`},
		{q: "order=up", err: `unknown order "up": want asc or desc`},
		{q: "state=dead", err: "unknown state \"dead\": want "},
		{q: "sort=size", err: "unknown sort \"size\": want "},
	} {
		q, _ := url.ParseQuery(tc.q)
		tq, terr := parseTrackerQuery(q)
		jq, jerr := parseJobQuery(q, jobsPageDesc)
		if tc.err != "" {
			for _, err := range []error{terr, jerr} {
				if err == nil || !strings.HasPrefix(err.Error(), tc.err) {
					t.Errorf("%q: error %v, want %q", tc.q, err, tc.err)
				}
			}
			continue
		}
		if tc.tracker.State != "" && (terr != nil || !listQueryEqual(tq, tc.tracker)) {
			t.Errorf("%q: trackers %+v, %v; want %+v", tc.q, tq, terr, tc.tracker)
		}
		if tc.job.State != "" && (jerr != nil || !listQueryEqual(jq, tc.job)) {
			t.Errorf("%q: jobs %+v, %v; want %+v", tc.q, jq, jerr, tc.job)
		}
	}
	q, _ := url.ParseQuery("state=graylisted&sort=name&order=desc")
	if _, err := parseTrackerQuery(q); err != nil {
		t.Error(err)
	}
	if _, err := parseJobQuery(url.Values{"state": {"graylisted"}}, nil); err == nil ||
		err.Error() != `unknown state "graylisted": want all, running, finished, succeeded, failed or killed` {
		t.Errorf("jobs' state=graylisted: %v", err)
	}
	if _, err := parseTrackerQuery(url.Values{"state": {"running"}}); err == nil ||
		err.Error() != `unknown state "running": want live, blacklisted, graylisted or lost` {
		t.Errorf("trackers' state=running: %v", err)
	}
}

func listQueryEqual(a, b listQuery) bool {
	return a.State == b.State && a.Sort == b.Sort && a.paging == b.paging
}

// trackersRig is a JobTracker with twelve trackers t00-t11 on hosts h0-h2
// (by index mod 3), t11 with a running attempt, t03 blacklisted (four
// faults), t05 graylisted (one fault) and t07 lost.
func trackersRig(t *testing.T) *JobTracker {
	jt, clk := newHTTPTestJT(t, nil)
	httpSubmit(t, jt, mr.JobSpec{Name: "one", Def: "wordcount", Output: filepath.Join(t.TempDir(), "out")}, []mr.Split{{Path: "/in/a", Length: 10}})
	for i := range 12 {
		clk.at(time.Duration(i) * time.Second)
		name := fmt.Sprintf("t%02d", i)
		req := &mrpb.HeartbeatRequest{Tracker: name, Host: fmt.Sprintf("h%d", i%3), ShuffleAddress: name + ":7000",
			MapSlots: 2, ReduceSlots: 1, InitialContact: true}
		if i == 11 {
			req.AcceptNewTasks, req.FreeMapSlots, req.FreeReduceSlots = true, 2, 1
		}
		httpHeartbeat(t, jt, req)
	}
	jt.mu.Lock()
	now := jt.now()
	jt.faults = map[string][]time.Time{"t03": {now, now, now, now}, "t05": {now}}
	jt.trackerChangedLocked("t03")
	jt.refreshBlacklistLocked(now)
	jt.lostTrackerLocked(jt.trackers["t07"], "Lost task tracker: t07")
	jt.unlock()
	return jt
}

// TestTrackersPages checks /trackers and /api/cluster's tracker list: the
// rows of a page, of a state, in a sort, and the totals.
func TestTrackersPages(t *testing.T) {
	jt := trackersRig(t)
	h := jt.HTTPHandler()
	live := []string{"t00", "t01", "t02", "t03", "t04", "t05", "t06", "t08", "t09", "t10", "t11"}
	for _, tc := range []struct {
		query string
		code  int
		rows  []string // or the error's text
		page  *ListPage
	}{
		{"", 200, live, nil},
		{"size=5", 200, live[:5], &ListPage{Page: 1, Pages: 3, Size: 5, Matching: 11, Total: 12}},
		{"size=5&page=2", 200, live[5:10], &ListPage{Page: 2, Pages: 3, Size: 5, Matching: 11, Total: 12}},
		{"size=5&page=3", 200, live[10:], &ListPage{Page: 3, Pages: 3, Size: 5, Matching: 11, Total: 12}},
		{"size=5&page=9", 200, live[10:], &ListPage{Page: 3, Pages: 3, Size: 5, Matching: 11, Total: 12}},
		{"page=1", 200, live, &ListPage{Page: 1, Pages: 1, Size: 50, Matching: 11, Total: 12}},
		{"order=desc&size=3", 200, []string{"t11", "t10", "t09"}, &ListPage{Page: 1, Pages: 4, Size: 3, Matching: 11, Total: 12}},
		{"state=blacklisted", 200, []string{"t03"}, nil},
		{"state=graylisted", 200, []string{"t05"}, nil},
		{"state=lost", 200, []string{"t07"}, nil},
		{"state=lost&page=1", 200, []string{"t07"}, &ListPage{Page: 1, Pages: 1, Size: 50, Matching: 1, Total: 12}},
		{"sort=host&size=4", 200, []string{"t00", "t03", "t06", "t09"}, &ListPage{Page: 1, Pages: 3, Size: 4, Matching: 11, Total: 12}},
		{"sort=host&order=desc&size=2", 200, []string{"t11", "t08"}, &ListPage{Page: 1, Pages: 6, Size: 2, Matching: 11, Total: 12}},
		{"sort=heartbeat&size=2", 200, []string{"t00", "t01"}, &ListPage{Page: 1, Pages: 6, Size: 2, Matching: 11, Total: 12}},
		{"sort=running&size=1", 200, []string{"t11"}, &ListPage{Page: 1, Pages: 11, Size: 1, Matching: 11, Total: 12}},
		{"sort=faults&size=2", 200, []string{"t03", "t05"}, &ListPage{Page: 1, Pages: 6, Size: 2, Matching: 11, Total: 12}},
		{"page=0", 400, []string{`bad page "0": want a page number from 1`}, nil},
		{"size=x", 400, []string{`bad size "x"`}, nil},
		{"state=dead", 400, []string{`unknown state "dead": want live, blacklisted, graylisted or lost`}, nil},
		{"sort=load", 400, []string{`unknown sort "load"`}, nil},
	} {
		t.Run(tc.query, func(t *testing.T) {
			rec := httpGet(t, h, "GET", "/api/cluster?"+tc.query)
			page := httpGet(t, h, "GET", "/trackers?"+tc.query+"&refresh=0")
			if rec.Code != tc.code || page.Code != tc.code {
				t.Fatalf("status %d (JSON), %d (page), want %d: %s", rec.Code, page.Code, tc.code, rec.Body)
			}
			if tc.code != 200 {
				if msg := jsonErrorText(t, rec.Body.Bytes()); !strings.Contains(msg, tc.rows[0]) || !strings.Contains(page.Body.String(), tc.rows[0]) {
					t.Errorf("error %q / %q, want %q", msg, page.Body, tc.rows[0])
				}
				return
			}
			var ci ClusterInfo
			if err := json.Unmarshal(rec.Body.Bytes(), &ci); err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tr := range ci.Trackers {
				names = append(names, tr.Name)
			}
			if !slices.Equal(names, tc.rows) {
				t.Errorf("JSON rows %v, want %v", names, tc.rows)
			}
			if (ci.TrackersPage == nil) != (tc.page == nil) || (tc.page != nil && *ci.TrackersPage != *tc.page) {
				t.Errorf("JSON page %+v, want %+v", ci.TrackersPage, tc.page)
			}
			if want := (TrackerCounts{Live: 11, Blacklisted: 1, Graylisted: 1, Lost: 1}); ci.TrackerCounts != want {
				t.Errorf("counts %+v, want %+v", ci.TrackerCounts, want)
			}
			// The page: the same rows, a page of at most the size.
			rows := regexp.MustCompile(`<tr class="tracker"><td>(?:<a href="/tracker\?name=\w+">)?(\w+)`).FindAllStringSubmatch(page.Body.String(), -1)
			names = nil
			for _, m := range rows {
				names = append(names, m[1])
			}
			want := tc.rows
			if tc.page == nil {
				want = want[:min(len(want), defaultPageSize)]
			}
			if !slices.Equal(names, want) {
				t.Errorf("page rows %v, want %v", names, want)
			}
		})
	}
	body := httpGet(t, h, "GET", "/trackers?size=5&page=2").Body.String()
	for _, w := range []string{"<h1>TaskTrackers: live (11)</h1>", "Showing 6-10 of 11, page 2 of 3.",
		`<a href="/trackers?page=1&amp;size=5">first</a> <a href="/trackers?page=1&amp;size=5">previous</a>`,
		`<a href="/trackers?page=3&amp;size=5">next</a>`, `<a href="/trackers?state=lost">lost</a> (1)`} {
		if !strings.Contains(body, w) {
			t.Errorf("/trackers?size=5&page=2 lacks %q:\n%s", w, body)
		}
	}
	body = httpGet(t, h, "GET", "/trackers?state=lost").Body.String()
	if !strings.Contains(body, "<th>Lost at</th>") || strings.Contains(body, `href="/tracker?name=t07"`) {
		t.Errorf("lost trackers: want a Lost at column and no link to t07's page:\n%s", body)
	}
	// The lost tracker back: live again, no longer lost.
	httpHeartbeat(t, jt, &mrpb.HeartbeatRequest{Tracker: "t07", Host: "h1", MapSlots: 2, ReduceSlots: 1, InitialContact: true})
	var ci ClusterInfo
	if err := json.Unmarshal(httpGet(t, h, "GET", "/api/cluster?state=lost").Body.Bytes(), &ci); err != nil {
		t.Fatal(err)
	}
	if len(ci.Trackers) != 0 || ci.TrackerCounts != (TrackerCounts{Live: 12, Blacklisted: 1, Graylisted: 1}) {
		t.Errorf("t07 back: lost %v, counts %+v", ci.Trackers, ci.TrackerCounts)
	}
}

// TestLostTrackersBounded checks that at most maxLostTrackers lost
// trackers are kept, the latest.
func TestLostTrackersBounded(t *testing.T) {
	jt, _ := newHTTPTestJT(t, nil)
	n := maxLostTrackers + 5
	jt.mu.Lock()
	for i := range n {
		name := fmt.Sprintf("t%05d", i)
		tr := &trackerState{name: name, attempts: map[string]*attempt{}}
		jt.trackers[name] = tr
		jt.addCapacityLocked(tr, 1)
		jt.trackerChangedLocked(name)
	}
	jt.publishLocked()
	for i := range n {
		jt.lostTrackerLocked(jt.trackers[fmt.Sprintf("t%05d", i)], "lost")
		jt.publishLocked() // one at a time: the order they were lost in
	}
	jt.unlock()
	tot := jt.trackerTotalsNow()
	l := jt.listTrackers(listQuery{State: "lost", Sort: sorting{Key: "name"}, paging: paging{Page: 1, Size: 2}}, false, "/trackers")
	if tot.counts.Lost != maxLostTrackers || tot.counts.Live != 0 || l.Matching != maxLostTrackers || l.Rows[0].Name != "t00005" {
		t.Errorf("lost %d, live %d, listed %d from %s; want %d lost from t00005", tot.counts.Lost, tot.counts.Live, l.Matching, l.Rows[0].Name, maxLostTrackers)
	}
}

// TestJobsPages checks /jobs, /api/jobs and the cluster page's job tables:
// 25 jobs, each submitted a second after the last, j02 and j05 killed.
func TestJobsPages(t *testing.T) {
	jt, clk := newHTTPTestJT(t, nil)
	var ids []string
	for i := range 25 {
		clk.at(time.Duration(i) * time.Second)
		ids = append(ids, httpSubmit(t, jt, mr.JobSpec{Name: fmt.Sprintf("j%02d", i), Def: "wordcount", User: []string{"ann", "bob"}[i%2],
			Output: filepath.Join(t.TempDir(), "out")}, []mr.Split{{Path: "/in/a", Length: 10}}))
	}
	for k, i := range []int{5, 2} { // j05 ends first
		clk.at(time.Duration(31+k) * time.Second)
		if _, err := jt.KillJob(context.Background(), &mrpb.KillJobRequest{JobId: ids[i]}); err != nil {
			t.Fatal(err)
		}
	}
	jt.waitBackground()
	h := jt.HTTPHandler()
	names := func(jobs []JobInfo) []string {
		var out []string
		for _, j := range jobs {
			out = append(out, j.Name)
		}
		return out
	}
	all := make([]string, 25)
	for i := range all {
		all[i] = fmt.Sprintf("j%02d", i)
	}
	running := slices.DeleteFunc(slices.Clone(all), func(s string) bool { return s == "j02" || s == "j05" })
	for _, tc := range []struct {
		query string
		code  int
		rows  []string
		page  *ListPage
	}{
		{"", 200, all, nil},
		{"size=10", 200, all[:10], &ListPage{Page: 1, Pages: 3, Size: 10, Matching: 25, Total: 25}},
		{"size=10&page=3", 200, all[20:], &ListPage{Page: 3, Pages: 3, Size: 10, Matching: 25, Total: 25}},
		{"size=10&page=4", 200, all[20:], &ListPage{Page: 3, Pages: 3, Size: 10, Matching: 25, Total: 25}},
		{"state=killed", 200, []string{"j02", "j05"}, nil},
		{"state=killed&sort=finish", 200, []string{"j02", "j05"}, nil},
		{"state=killed&sort=finish&order=asc", 200, []string{"j05", "j02"}, nil},
		{"state=finished&page=1", 200, []string{"j02", "j05"}, &ListPage{Page: 1, Pages: 1, Size: 50, Matching: 2, Total: 25}},
		{"state=failed", 200, nil, nil},
		{"state=succeeded&page=2", 200, nil, &ListPage{Page: 1, Pages: 1, Size: 50, Matching: 0, Total: 25}},
		{"state=running&size=2&sort=name&order=desc", 200, []string{"j24", "j23"}, &ListPage{Page: 1, Pages: 12, Size: 2, Matching: 23, Total: 25}},
		{"state=running", 200, running, nil},
		{"sort=user&size=3", 200, []string{"j00", "j02", "j04"}, &ListPage{Page: 1, Pages: 9, Size: 3, Matching: 25, Total: 25}},
		{"page=-2", 400, []string{`bad page "-2": want a page number from 1`}, nil},
		{"state=lost", 400, []string{`unknown state "lost"`}, nil},
	} {
		t.Run(tc.query, func(t *testing.T) {
			rec := httpGet(t, h, "GET", "/api/jobs?"+tc.query)
			if rec.Code != tc.code {
				t.Fatalf("status %d, want %d: %s", rec.Code, tc.code, rec.Body)
			}
			if tc.code != 200 {
				if msg := jsonErrorText(t, rec.Body.Bytes()); !strings.Contains(msg, tc.rows[0]) {
					t.Errorf("error %q, want %q", msg, tc.rows[0])
				}
				return
			}
			var l JobList
			if err := json.Unmarshal(rec.Body.Bytes(), &l); err != nil {
				t.Fatal(err)
			}
			if got := names(l.Jobs); !slices.Equal(got, tc.rows) || l.Jobs == nil {
				t.Errorf("rows %v, want %v (never null)", got, tc.rows)
			}
			if (l.Page == nil) != (tc.page == nil) || (tc.page != nil && *l.Page != *tc.page) {
				t.Errorf("page %+v, want %+v", l.Page, tc.page)
			}
		})
	}
	jobRows := regexp.MustCompile(`<td class="wrap">(j\d\d)</td>`)
	pageRows := func(path string) []string {
		rec := httpGet(t, h, "GET", path)
		if rec.Code != 200 {
			t.Fatalf("%s: status %d: %s", path, rec.Code, rec.Body)
		}
		var out []string
		for _, m := range jobRows.FindAllStringSubmatch(rec.Body.String(), -1) {
			out = append(out, m[1])
		}
		return out
	}
	// The page lists the newest first.
	if got := pageRows("/jobs?size=3"); !slices.Equal(got, []string{"j24", "j23", "j22"}) {
		t.Errorf("/jobs?size=3: %v", got)
	}
	if got := pageRows("/jobs?state=killed"); !slices.Equal(got, []string{"j05", "j02"}) {
		t.Errorf("/jobs?state=killed: %v", got)
	}
	if body := httpGet(t, h, "GET", "/jobs?state=failed").Body.String(); !strings.Contains(body, "<p>No failed job.</p>") {
		t.Errorf("/jobs?state=failed:\n%s", body)
	}
	// The cluster page: the first 20 running jobs, the finished ones.
	if got := pageRows("/"); !slices.Equal(got, append(running[:clusterJobRows:clusterJobRows], "j02", "j05")) {
		t.Errorf("cluster page rows %v", got)
	}
	body := httpGet(t, h, "GET", "/").Body.String()
	for _, w := range []string{"<h2>Running jobs (23)</h2>", `The first 20 by submission: <a href="/jobs?order=asc&amp;state=running">all 23</a>.`,
		"<h2>Finished jobs (2)</h2>", "Jobs: 23 running, 0 succeeded, 0 failed, 2 killed."} {
		if !strings.Contains(body, w) {
			t.Errorf("cluster page lacks %q", w)
		}
	}
}

// TestHistoryPages checks the history page's pages: the newest job first,
// a job line read for the page's jobs only.
func TestHistoryPages(t *testing.T) {
	jt, _ := newHTTPTestJT(t, nil)
	for i := range 7 {
		id := fmt.Sprintf("job_202601020304_%04d", i+1)
		line := fmt.Sprintf(`{"type":"job","job_id":%q,"name":"h%d","state":"SUCCEEDED"}`+"\n", id, i+1)
		if i == 2 {
			line = "not json\n" // unreadable: listed as such, on its page only
		}
		if err := os.WriteFile(filepath.Join(jt.history.dir, id+".jsonl"), []byte(line), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	h := jt.HTTPHandler()
	for _, tc := range []struct {
		query string
		code  int
		want  []string
	}{
		{"", 200, []string{"7 finished jobs", "Showing 1-7 of 7, page 1 of 1.", "UNREADABLE"}},
		{"size=3", 200, []string{"Showing 1-3 of 7, page 1 of 3.", ">h7<", ">h5<", `<a href="/history?page=2&amp;size=3">next</a>`}},
		{"size=3&page=3", 200, []string{"Showing 7-7 of 7, page 3 of 3.", ">h1<"}},
		{"size=3&page=30", 200, []string{"page 3 of 3.", ">h1<"}},
		{"size=2&page=3", 200, []string{"Showing 5-6 of 7", "UNREADABLE"}},
		{"page=x", 400, []string{`bad page "x"`}},
		{"size=5000", 400, []string{`bad size "5000": want a page size from 1 to 1000`}},
	} {
		rec := httpGet(t, h, "GET", "/history?"+tc.query)
		if rec.Code != tc.code {
			t.Errorf("%s: status %d, want %d", tc.query, rec.Code, tc.code)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(rec.Body.String(), w) {
				t.Errorf("/history?%s lacks %q:\n%s", tc.query, w, rec.Body)
			}
		}
		if tc.query == "size=3" && (strings.Contains(rec.Body.String(), ">h4<") || strings.Contains(rec.Body.String(), "UNREADABLE")) {
			t.Errorf("/history?size=3 shows more than its page:\n%s", rec.Body)
		}
	}
}

// jsonErrorText is the error of a JSON error body.
func jsonErrorText(t *testing.T, body []byte) string {
	t.Helper()
	var e struct {
		Error string `json:"error"`
	}
	if err := json.Unmarshal(body, &e); err != nil {
		t.Fatalf("error body %s: %v", body, err)
	}
	return e.Error
}
