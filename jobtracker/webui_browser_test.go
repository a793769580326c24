package jobtracker

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"gomr/mr"
	"gomr/mrpb"
)

// chromiumPath finds the browser of TestWebUIBrowser: GOMR_CHROMIUM, or
// chromium (Debian's package; make test installs it as root) or another
// Chrome on PATH. Without one the test is skipped, except in CI (CI=true),
// where it fails.
func chromiumPath(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("GOMR_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	msg := "no chromium: install it (apt-get install -y chromium; make test does as root) or set GOMR_CHROMIUM to a Chrome or Chromium binary"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// browserRig runs a job of five maps and one reduce to the end on two fake
// trackers over the JobTracker's RPC methods, on a fake clock a second
// per heartbeat round; the first attempt of map 1 fails. The trackers'
// log server serves every attempt's log.
func browserRig(t *testing.T) (*JobTracker, string, int) {
	t.Helper()
	logs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != mrpb.TaskLogPath {
			http.NotFound(w, r)
			return
		}
		fmt.Fprintf(w, "%s of %s\nline two <b>escaped</b>\n", r.URL.Query().Get("filter"), r.URL.Query().Get("attemptid"))
	}))
	t.Cleanup(logs.Close)
	shuffle := strings.TrimPrefix(logs.URL, "http://")

	// Retired only when the test calls retireJobs.
	jt, clk := newHTTPTestJT(t, map[string]string{"mapred.jobtracker.completeuserjobs.maximum": "0"})
	splits := make([]mr.Split, 5)
	for i := range splits {
		splits[i] = mr.Split{Path: fmt.Sprintf("/in/part-%d", i), Length: 100, Hosts: []string{"h1"}}
	}
	// A long name with no space, to check that the pages wrap it.
	id := httpSubmit(t, jt, mr.JobSpec{Name: "browser-" + strings.Repeat("verylongjobname", 16), Def: "wordcount", User: "ann",
		NumReduces: 1, Output: filepath.Join(t.TempDir(), "out")}, splits)

	type run struct {
		id   string
		left int
	}
	trackers := []struct {
		name          string
		maps, reduces int32
		running       []*run
	}{{name: "tt1", maps: 2, reduces: 1}, {name: "tt2", maps: 2, reduces: 0}}
	attempts := 0
	// The trackers' work must end in 60 rounds; the job's commit and
	// history file, written in goroutines of their own, get wall time
	// (a loaded machine took more than the rounds' few milliseconds).
	deadline := time.Now().Add(30 * time.Second)
	for round := 0; ; round++ {
		clk.at(time.Duration(round) * time.Second)
		for i := range trackers {
			tr := &trackers[i]
			req := &mrpb.HeartbeatRequest{Tracker: tr.name, Host: "h1", ShuffleAddress: shuffle, MapSlots: tr.maps,
				ReduceSlots: tr.reduces, InitialContact: round == 0, AcceptNewTasks: true, CriuAvailable: i == 1}
			var still []*run
			busy := [2]int32{}
			for _, r := range tr.running {
				r.left--
				isMap := strings.Contains(r.id, "_m_")
				st := &mrpb.AttemptStatus{AttemptId: r.id, State: StateRunning, Progress: 0.5, Phase: "MAP",
					Counters: []*mrpb.Counter{{Group: mr.TaskCounterGroup, Name: mr.MapInputRecords, Value: 7}}}
				if !isMap {
					st.Phase = "REDUCE"
				}
				switch {
				case r.left > 0:
					still = append(still, r)
					if isMap {
						busy[0]++
					} else {
						busy[1]++
					}
				case strings.HasSuffix(r.id, "_m_000001_0"):
					st.State, st.Diagnostic = StateFailed, "java.lang.RuntimeException: injected failure\n\tat Mapper.map"
				default:
					st.State, st.Progress = StateSucceeded, 1
					if isMap {
						req.Spills = append(req.Spills, &mrpb.SpillAnnouncement{AttemptId: r.id, Spill: 0, Final: true, Segments: seg(uint32(len(r.id)))})
					}
				}
				req.Attempts = append(req.Attempts, st)
			}
			tr.running = still
			req.FreeMapSlots, req.FreeReduceSlots = tr.maps-busy[0], tr.reduces-busy[1]
			for _, a := range httpHeartbeat(t, jt, req) {
				attempts++
				tr.running = append(tr.running, &run{id: a, left: 2 + attempts%3})
			}
		}
		jt.mu.Lock()
		j := jt.jobs[id]
		done := j.done() && j.history != historyWriting
		jt.unlock()
		if done {
			break
		}
		busy := false
		for _, tr := range trackers {
			busy = busy || len(tr.running) > 0
		}
		if round >= 60 && (busy || time.Now().After(deadline)) {
			t.Fatalf("the job did not end in 60 rounds (trackers still busy: %v), or its commit and history in 30 s", busy)
		}
		time.Sleep(2 * time.Millisecond) // the commit runs in its own goroutine
	}
	if st := jt.jobs[id].state.String(); st != StateSucceeded {
		t.Fatalf("job %s %s", id, st)
	}
	return jt, id, attempts
}

// startBrowser starts headless Chromium with a 1,400 x 1,000 window for
// at most timeout, and collects its console errors and exceptions.
func startBrowser(t *testing.T, exe string, timeout time.Duration) (context.Context, *consoleErrors) {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.WindowSize(1400, 1000))
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox) // Chromium refuses to run as root with its sandbox
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	actx, cancelA := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(cancelA)
	bctx, cancelB := chromedp.NewContext(actx)
	t.Cleanup(cancelB)
	if err := chromedp.Do(bctx, chromedp.EmulateViewport(1400, 1000)); err != nil {
		t.Fatalf("starting %s: %v", exe, err)
	}
	c := &consoleErrors{t: t}
	go func() {
		for m, err := range chromedp.Console(bctx) {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.IsException() {
				c.mu.Lock()
				c.lines = append(c.lines, fmt.Sprintf("%s (%s:%d)", m, m.URL, m.Line))
				c.mu.Unlock()
			}
		}
	}()
	return bctx, c
}

// consoleErrors are the errors and exceptions a page logged.
type consoleErrors struct {
	t     *testing.T
	mu    sync.Mutex
	lines []string
}

// check fails the test with every console error so far, after a moment
// for the last events to arrive.
func (c *consoleErrors) check() {
	c.t.Helper()
	time.Sleep(100 * time.Millisecond)
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, l := range c.lines {
		c.t.Errorf("console: %s", l)
	}
}

// inMemory tells whether a job is in the JobTracker's memory (not retired).
func inMemory(jt *JobTracker, id string) bool {
	jt.mu.Lock()
	defer jt.unlock()
	return jt.jobs[id] != nil
}

// replacedContext tells whether err is Chromium's answer to an evaluation
// in a page's JavaScript context that a navigation replaced (the next try
// finds the new one).
func replacedContext(err error) bool {
	return err != nil && (strings.Contains(err.Error(), "Cannot find context with specified id") ||
		strings.Contains(err.Error(), "Execution context was destroyed"))
}

// TestWebUIBrowser loads the pages in headless Chromium, and a job's
// pages again once it is retired (from its history file): no console error
// or exception, the timeline has a bar per attempt, every link answers 200,
// and no page is wider than a 1,400 px window. It leaves a screenshot of
// the job page in /tmp/webui-job.png.
func TestWebUIBrowser(t *testing.T) {
	exe := chromiumPath(t)
	jt, id, attempts := browserRig(t)
	srv := httptest.NewServer(jt.HTTPHandler())
	defer srv.Close()
	task := "task_" + strings.TrimPrefix(id, "job_") + "_m_000001"
	attempt := "attempt_" + strings.TrimPrefix(id, "job_") + "_m_000001_0"

	bctx, console := startBrowser(t, exe, 60*time.Second)

	links := map[string]string{} // link -> the page it is on
	pages := []string{"/", "/job?id=" + id, "/task?id=" + task, "/attempt?id=" + attempt, "/trackers", "/tracker?name=tt1", "/history",
		"/jobs", "/trackers?state=lost&sort=heartbeat", "/history?size=1"}
	// Then the job retired: its pages from its history file.
	retiredPages := []string{"/job?id=" + id + "&retired", "/task?id=" + task + "&retired", "/attempt?id=" + attempt + "&retired"}
	for _, p := range append(pages, retiredPages...) {
		retired := strings.HasSuffix(p, "&retired")
		if retired && inMemory(jt, id) {
			if n := jt.retireJobs(); n != 1 {
				t.Fatalf("retired %d jobs, want %s", n, id)
			}
		}
		u := srv.URL + p
		if strings.Contains(p, "?") {
			u += "&refresh=0"
		} else {
			u += "?refresh=0"
		}
		if err := chromedp.Do(bctx, chromedp.Navigate(u)); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		// Charts drawn (or failed). The first evaluation after a
		// navigation may be sent to the old document's context (a loaded
		// machine: CI failed so once); it is retried in the new one.
		var err error
		for try := 0; try < 3; try++ {
			_, err = chromedp.Run(bctx, chromedp.Poll[bool](`document.querySelectorAll("div[data-chart]:not([data-ready]):not([data-error])").length === 0`,
				chromedp.WithPollingTimeout(10*time.Second)))
			if !replacedContext(err) {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if err != nil {
			t.Errorf("%s: charts not drawn: %v", p, err)
		}
		errs, err := chromedp.Run(bctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("div[data-chart][data-error]")].map(e => e.id + ": " + e.dataset.error)`))
		if err != nil || len(errs) > 0 {
			t.Errorf("%s: chart errors %v %v", p, errs, err)
		}
		width, err := chromedp.Run(bctx, chromedp.Evaluate[int](`document.body.scrollWidth`))
		if err != nil || width > 1400 {
			t.Errorf("%s: body %d px wide (%v), want at most 1400", p, width, err)
		}
		hrefs, err := chromedp.Run(bctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("a[href]")].map(a => a.href)`))
		if err != nil {
			t.Fatalf("%s: links: %v", p, err)
		}
		for _, h := range hrefs {
			if _, ok := links[h]; !ok {
				links[h] = p
			}
		}
		switch {
		case strings.HasPrefix(p, "/job?"):
			bars, err := chromedp.Run(bctx, chromedp.Evaluate[string](`document.getElementById("timeline").dataset.bars`))
			if err != nil || bars != fmt.Sprint(attempts) {
				t.Errorf("timeline: %q bars (%v), want one per attempt: %d", bars, err, attempts)
			}
			canvases, err := chromedp.Run(bctx, chromedp.Evaluate[int](`document.querySelectorAll("#progress canvas").length`))
			want := 1
			if retired {
				want = 0 // no progress samples once retired: a note instead
			}
			if err != nil || canvases != want {
				t.Errorf("progress chart: %d canvases (%v), want %d", canvases, err, want)
			}
			if retired {
				continue
			}
			png, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
			if err != nil {
				t.Errorf("screenshot: %v", err)
			} else if err := os.WriteFile("/tmp/webui-job.png", png, 0o644); err != nil {
				t.Logf("screenshot: %v", err)
			}
		case p == "/":
			n, err := chromedp.Run(bctx, chromedp.Evaluate[int](`document.querySelectorAll("#occupancy canvas").length`))
			if err != nil || n != 1 {
				t.Errorf("occupancy chart: %d canvases (%v), want 1", n, err)
			}
		case strings.HasPrefix(p, "/attempt?"):
			text, err := chromedp.Run(bctx, chromedp.Evaluate[string](`document.body.innerText`))
			if err != nil || !strings.Contains(text, "stdout of "+attempt) || !strings.Contains(text, "line two <b>escaped</b>") ||
				!strings.Contains(text, "injected failure") {
				t.Errorf("attempt page lacks its logs or diagnostic (%v):\n%s", err, text)
			}
		}
	}
	browsePages(t, bctx, srv.URL, id)
	console.check()

	for h, on := range links {
		u, err := url.Parse(h)
		if err != nil || u.Host != strings.TrimPrefix(srv.URL, "http://") {
			t.Errorf("link %q on %s leaves the server", h, on)
			continue
		}
		resp, err := http.Get(h)
		if err != nil {
			t.Errorf("link %s on %s: %v", h, on, err)
			continue
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("link %s on %s: status %d", h, on, resp.StatusCode)
		}
	}
	t.Logf("%d pages, %d links, %d attempts; screenshot of the job page in /tmp/webui-job.png", len(pages)+len(retiredPages), len(links), attempts)
}

// browsePages pages through the trackers and filters the jobs in the
// browser, by clicking the lists' links: a page of one tracker, the next
// page, a state with no tracker, the job among the succeeded jobs and none
// among the failed ones.
func browsePages(t *testing.T, bctx context.Context, base, id string) {
	t.Helper()
	texts := func(sel string) []string {
		out, err := chromedp.Run(bctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("`+sel+`")].map(e => e.innerText)`))
		if err != nil {
			t.Fatalf("%s: %v", sel, err)
		}
		return out
	}
	body := func() string { return strings.Join(texts("body"), "") }
	click := func(text string) {
		t.Helper()
		before, _ := chromedp.Run(bctx, chromedp.Evaluate[string](`location.href`))
		if err := chromedp.Do(bctx, chromedp.Click(`//a[normalize-space(.)="`+text+`"]`)); err != nil {
			t.Fatalf("clicking %q on %s: %v", text, before, err)
		}
		// The click navigates: wait for the new page, loaded (evaluating
		// fails while the old page's context goes).
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			ok, err := chromedp.Run(bctx, chromedp.Evaluate[bool](`location.href !== "`+before+`" && document.readyState === "complete"`))
			if err == nil && ok {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("clicking %q on %s: no new page (%v)", text, before, err)
			}
		}
	}
	if err := chromedp.Do(bctx, chromedp.Navigate(base+"/trackers?size=1&refresh=0")); err != nil {
		t.Fatal(err)
	}
	if rows := texts("tr.tracker td:first-child"); len(rows) != 1 || rows[0] != "tt1" {
		t.Errorf("/trackers?size=1: rows %v, want tt1", rows)
	}
	click("next")
	if rows := texts("tr.tracker td:first-child"); len(rows) != 1 || rows[0] != "tt2" || !strings.Contains(body(), "Showing 2-2 of 2, page 2 of 2.") {
		t.Errorf("the next page of trackers: rows %v, want tt2, page 2 of 2:\n%s", rows, body())
	}
	click("previous")
	if rows := texts("tr.tracker td:first-child"); len(rows) != 1 || rows[0] != "tt1" {
		t.Errorf("the previous page of trackers: rows %v, want tt1", rows)
	}
	click("blacklisted")
	if b := body(); !strings.Contains(b, "No blacklisted TaskTracker.") || !strings.Contains(b, "TaskTrackers: blacklisted (0)") {
		t.Errorf("blacklisted trackers, want none:\n%s", b)
	}
	if err := chromedp.Do(bctx, chromedp.Navigate(base+"/jobs?refresh=0")); err != nil {
		t.Fatal(err)
	}
	click("succeeded")
	if b := body(); !strings.Contains(b, id) || !strings.Contains(b, "Jobs: succeeded (1)") {
		t.Errorf("succeeded jobs, want %s:\n%s", id, b)
	}
	click("failed")
	if b := body(); !strings.Contains(b, "No failed job.") || strings.Contains(b, id) {
		t.Errorf("failed jobs, want none:\n%s", b)
	}
	if href, _ := chromedp.Run(bctx, chromedp.Evaluate[string](`location.href`)); !strings.Contains(href, "refresh=0") {
		t.Errorf("the lists' links lost refresh=0: %s", href)
	}
}

// TestWebUIJobAtScale loads the job page of a job of 100,000 maps run on
// 1,000 trackers of 4 map slots (every tenth map with a second, killed
// speculative attempt) in headless Chromium: the timeline draws every
// attempt with no console error, the task list shows one page of 100
// tasks, and the page fits a 1,400 px window. It logs the sizes and times
// (not asserted: the machine is shared).
func TestWebUIJobAtScale(t *testing.T) {
	if testing.Short() {
		t.Skip("a 100,000-map job page in a browser: not in -short")
	}
	exe := chromiumPath(t)
	const maps, trackers, slots = 100000, 1000, 4
	jt, _ := newHTTPTestJT(t, nil)
	splits := make([]mr.Split, maps)
	for i := range splits {
		splits[i] = mr.Split{Path: fmt.Sprintf("/in/part-%d", i), Length: 100, Hosts: []string{"h1"}}
	}
	id := httpSubmit(t, jt, mr.JobSpec{Name: "big", Def: "wordcount", User: "ann", NumReduces: 0,
		Output: filepath.Join(t.TempDir(), "out")}, splits)
	attempts := 0
	jt.mu.Lock()
	j := jt.jobs[id]
	for i, m := range j.maps {
		wave := i / (trackers * slots)
		start := httpT0.Add(time.Duration(wave) * 10 * time.Second)
		a := &attempt{id: attemptID(m, 0), num: 0, task: m, tracker: fmt.Sprintf("tt%04d", i%trackers),
			state: attemptSucceeded, start: start, finish: start.Add(9 * time.Second), progress: 1, final: 0}
		m.attempts = append(m.attempts, a)
		attempts++
		if i%10 == 0 {
			s := &attempt{id: attemptID(m, 1), num: 1, task: m, tracker: fmt.Sprintf("tt%04d", (i+1)%trackers),
				state: attemptKilled, start: start.Add(5 * time.Second), finish: start.Add(9 * time.Second), speculative: true, final: -1}
			m.attempts = append(m.attempts, s)
			attempts++
		}
		m.nextAttempt = len(m.attempts)
		m.successful = a
		jt.taskToLocked(m, taskSucceeded)
		j.finishedMaps++
	}
	jt.unlock()

	srv := httptest.NewServer(jt.HTTPHandler())
	defer srv.Close()
	t0 := time.Now()
	resp, err := http.Get(srv.URL + "/api/job/timeline?id=" + id)
	if err != nil {
		t.Fatal(err)
	}
	var tl Timeline
	err = json.NewDecoder(resp.Body).Decode(&tl)
	resp.Body.Close()
	if err != nil || len(tl.Bars) != attempts {
		t.Fatalf("timeline JSON: %d bars (%v), want %d", len(tl.Bars), err, attempts)
	}
	t.Logf("timeline JSON of %d bars on %d rows: %s", len(tl.Bars), len(tl.Rows), time.Since(t0).Round(time.Millisecond))

	bctx, console := startBrowser(t, exe, 120*time.Second)
	t0 = time.Now()
	if err := chromedp.Do(bctx, chromedp.Navigate(srv.URL+"/job?id="+id+"&refresh=0")); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(bctx, chromedp.Poll[bool](`document.querySelectorAll("div[data-chart]:not([data-ready]):not([data-error])").length === 0`,
		chromedp.WithPollingTimeout(90*time.Second))); err != nil {
		t.Fatalf("charts not drawn: %v", err)
	}
	t.Logf("job page with its charts drawn in %s", time.Since(t0).Round(time.Millisecond))
	errs, err := chromedp.Run(bctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("div[data-chart][data-error]")].map(e => e.id + ": " + e.dataset.error)`))
	if err != nil || len(errs) > 0 {
		t.Errorf("chart errors %v %v", errs, err)
	}
	bars, err := chromedp.Run(bctx, chromedp.Evaluate[string](`document.getElementById("timeline").dataset.bars`))
	if err != nil || bars != fmt.Sprint(attempts) {
		t.Errorf("timeline: %q bars (%v), want %d", bars, err, attempts)
	}
	rows, err := chromedp.Run(bctx, chromedp.Evaluate[int](`document.querySelectorAll("tr.task").length`))
	if err != nil || rows != tasksPerPage {
		t.Errorf("task list: %d tasks (%v), want a page of %d", rows, err, tasksPerPage)
	}
	width, err := chromedp.Run(bctx, chromedp.Evaluate[int](`document.body.scrollWidth`))
	if err != nil || width > 1400 {
		t.Errorf("body %d px wide (%v), want at most 1400", width, err)
	}
	console.check()
}
