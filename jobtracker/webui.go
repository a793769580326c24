package jobtracker

// The web UI's pages beyond the cluster and job pages of http.go, the
// charts' data, the static assets and the Hadoop-style aliases:
//
//	GET /task?id=T             task page: its attempts
//	GET /attempt?id=A          attempt page: counters, diagnostic, logs
//	GET /trackers              the TaskTrackers, a page at a time, by
//	                           state (live, blacklisted, graylisted, lost)
//	GET /jobs                  the jobs, a page at a time, by state
//	GET /tracker?name=N        one TaskTracker: slots, running attempts,
//	                           blacklisting, faults, lost replies
//	GET /history               the finished jobs of the history
//	                           directory, a page at a time
//	GET /api/job/timeline?id=J Timeline as JSON: the job's attempts by
//	                           tracker slot and its progress over time
//	GET /api/cluster/occupancy Occupancy as JSON: slots in use by job over
//	                           time
//	GET /static/...            uPlot (package webassets) and webui.js
//	GET /jobtracker.jsp, /jobdetails.jsp?jobid=J, /jobhistory.jsp,
//	    /taskdetails.jsp?tipid=T: redirects to the pages above
//
// Pages of things that change refresh themselves every refreshSeconds
// (a meta refresh), a finished job's do not; ?refresh=0 turns it off.
// A retired job's pages are rendered from its history file.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"gomr/jobtracker/jobhistory"
	"gomr/mr"
	"gomr/mrpb"
	"gomr/partitions"
	"gomr/webassets"
)

// refreshSeconds is the period of the pages' auto-refresh.
const refreshSeconds = 5

// maxInlineLog is the most of a log the attempt page shows inline (its
// tail); the log link shows it whole.
const maxInlineLog = 64 << 10

// Timeline is the body of GET /api/job/timeline?id=J: the job's attempts as
// bars on rows, one row per tracker slot (attempts of one tracker and
// task type packed into the fewest rows, first fit by start time: the
// JobTracker does not know slot numbers, only that a tracker runs at
// most its slots at once), and the job's progress samples (samples.go;
// none for a retired job).
type Timeline struct {
	Job   string    `json:"job"`
	State string    `json:"state"`
	Now   time.Time `json:"now"`
	// Rows are labelled "<tracker> map|reduce <slot>", sorted by tracker,
	// maps first.
	Rows     []TimelineRow   `json:"rows"`
	Bars     []TimelineBar   `json:"bars"`
	Progress []ProgressPoint `json:"progress"`
}

// TimelineRow is one tracker slot.
type TimelineRow struct {
	Tracker string `json:"tracker"`
	Type    string `json:"type"`
	Slot    int    `json:"slot"`
}

// TimelineBar is one attempt: from start to finish (now while it runs).
type TimelineBar struct {
	Attempt     string    `json:"attempt"`
	Task        string    `json:"task"`
	Row         int       `json:"row"`
	Start       time.Time `json:"start"`
	Finish      time.Time `json:"finish"`
	Running     bool      `json:"running,omitempty"`
	State       string    `json:"state"`
	Speculative bool      `json:"speculative,omitempty"`
	Cloned      bool      `json:"cloned,omitempty"`
}

// ProgressPoint is one sample of a job's progress.
type ProgressPoint struct {
	Time   time.Time `json:"time"`
	Map    float64   `json:"map"`
	Reduce float64   `json:"reduce"`
}

// Occupancy is the body of GET /api/cluster/occupancy: at each sample
// time, the cluster's map and reduce slots and the attempts each job ran
// (zero where a job ran none). Jobs are in order of first appearance.
type Occupancy struct {
	Times       []time.Time       `json:"times"`
	MapSlots    []int             `json:"map_slots"`
	ReduceSlots []int             `json:"reduce_slots"`
	Jobs        []OccupancySeries `json:"jobs"`
	// Partitions are the attempts running in each partition of a
	// multi-queue policy (absent under other policies; zero where a
	// sample has no partitions).
	Partitions []PartitionOccupancy `json:"partitions,omitempty"`
}

// PartitionOccupancy is one partition's running maps and reduces over
// time; Partition is 0-based, as in the policy status.
type PartitionOccupancy struct {
	Partition int   `json:"partition"`
	Maps      []int `json:"maps"`
	Reduces   []int `json:"reduces"`
}

// OccupancySeries is one job's running maps and reduces over time.
type OccupancySeries struct {
	Job     string `json:"job"`
	Maps    []int  `json:"maps"`
	Reduces []int  `json:"reduces"`
}

// HistoryEntry is one finished job of the history directory.
type HistoryEntry struct {
	ID      string    `json:"id"`
	Name    string    `json:"name"`
	User    string    `json:"user"`
	Queue   string    `json:"queue"`
	State   string    `json:"state"`
	Submit  time.Time `json:"submit"`
	Start   time.Time `json:"start"`
	Finish  time.Time `json:"finish"`
	Maps    int       `json:"maps"`
	Reduces int       `json:"reduces"`
	Error   string    `json:"error,omitempty"`
}

// attemptExtra is what the task and attempt pages show of an attempt
// beyond AttemptInfo.
type attemptExtra struct {
	Counters    mr.CounterSet
	Speculative bool
	Cloned      bool
}

// jobView is a job as the pages show it: JobDetail, with each attempt's
// extras and the job's progress samples; a retired job's tasks come from
// its history file (FromHistory).
type jobView struct {
	JobDetail
	Extras      map[string]attemptExtra
	Progress    []ProgressPoint
	FromHistory bool
}

// jobView copies a job for the pages; false if there is no such job. The
// counters of attempts are copied for the attempts of task countersOf
// only ("" for none), so that a big job's page does not copy them all.
func (jt *JobTracker) jobView(id, countersOf string) (jobView, bool) {
	d, ok := jt.jobDetail(id)
	if !ok {
		return jobView{}, false
	}
	v := jobView{JobDetail: d, Extras: map[string]attemptExtra{}, Progress: []ProgressPoint{}}
	if !d.Retired {
		jt.lock(holderWebUI)
		if j := jt.jobs[id]; j != nil {
			for _, ts := range [][]*task{j.maps, j.reduces} {
				for _, t := range ts {
					withCounters := countersOf != "" && t.id() == countersOf
					for _, a := range t.attempts {
						if !a.speculative && !a.cloned && !withCounters {
							continue
						}
						x := attemptExtra{Speculative: a.speculative, Cloned: a.cloned}
						if withCounters {
							x.Counters = a.counters.Set()
						}
						v.Extras[a.id] = x
					}
				}
			}
			s := &j.progressSeries
			for i, t := range s.times {
				v.Progress = append(v.Progress, ProgressPoint{Time: utc(t), Map: round4(float64(s.values[i][0])), Reduce: round4(float64(s.values[i][1]))})
			}
		}
		jt.unlock()
		return v, true
	}
	rec, err := jt.history.Record(id)
	if err != nil {
		return v, true
	}
	v.FromHistory = true
	v.Tasks = historyTasks(rec, v.Extras)
	return v, true
}

// historyTasks rebuilds a finished job's tasks from its history's attempt
// lines: a task succeeded if an attempt of it did, otherwise it ended as
// its last attempt did (pending if it never ran).
func historyTasks(rec *jobhistory.Record, extras map[string]attemptExtra) []TaskInfo {
	h := &rec.Job
	tasks := make([]TaskInfo, 0, h.Maps+h.Reduces)
	prefix := strings.TrimPrefix(h.JobID, "job_")
	for _, tt := range []struct {
		letter, typ string
		n           int
	}{{"m", "map", h.Maps}, {"r", "reduce", h.Reduces}} {
		for i := 0; i < tt.n; i++ {
			tasks = append(tasks, TaskInfo{ID: fmt.Sprintf("task_%s_%s_%06d", prefix, tt.letter, i), Type: tt.typ, Index: i,
				State: StatePending, Attempts: []AttemptInfo{}})
		}
	}
	for _, a := range rec.Attempts {
		k := a.Task
		if a.TaskType == "r" {
			k += h.Maps
		} else if a.TaskType != "m" {
			continue
		}
		if a.Task < 0 || k >= len(tasks) {
			continue
		}
		t := &tasks[k]
		ai := AttemptInfo{ID: a.AttemptID, Tracker: a.Tracker, State: a.State, Start: utc(a.Start), Finish: utc(a.Finish), Error: a.Error}
		if a.ShuffleFinish != nil {
			ai.ShuffleFinish = utc(*a.ShuffleFinish)
		}
		if a.SortFinish != nil {
			ai.SortFinish = utc(*a.SortFinish)
		}
		if a.State == StateSucceeded {
			ai.Progress = 1
		}
		t.Attempts = append(t.Attempts, ai)
		extras[a.AttemptID] = attemptExtra{Counters: a.Counters.Set(), Speculative: a.Speculative, Cloned: a.Cloned}
		switch {
		case t.State == StateSucceeded:
		case a.State == StateSucceeded:
			t.State, t.Progress = StateSucceeded, 1
		default:
			t.State = a.State
		}
		if a.State == StateFailed {
			t.Failures++
			t.Error = a.Error
		}
	}
	return tasks
}

// timeline lays a job's attempts out on tracker slots.
func timeline(v jobView, now time.Time) Timeline {
	tl := Timeline{Job: v.ID, State: v.State, Now: utc(now), Rows: []TimelineRow{}, Bars: []TimelineBar{}, Progress: v.Progress}
	type lane struct {
		tracker, typ string
	}
	type item struct {
		bar  TimelineBar
		lane lane
	}
	var items []item
	for _, t := range v.Tasks {
		for _, a := range t.Attempts {
			if a.Start.IsZero() {
				continue
			}
			b := TimelineBar{Attempt: a.ID, Task: t.ID, Start: a.Start, Finish: a.Finish, State: a.State,
				Speculative: v.Extras[a.ID].Speculative, Cloned: v.Extras[a.ID].Cloned}
			if b.Finish.IsZero() {
				b.Finish, b.Running = tl.Now, true
				if !v.Finish.IsZero() {
					b.Finish = v.Finish
				}
			}
			items = append(items, item{b, lane{a.Tracker, t.Type}})
		}
	}
	sort.SliceStable(items, func(i, j int) bool {
		a, b := items[i], items[j]
		if a.lane != b.lane {
			if a.lane.tracker != b.lane.tracker {
				return a.lane.tracker < b.lane.tracker
			}
			return a.lane.typ == "map"
		}
		return a.bar.Start.Before(b.bar.Start)
	})
	// First fit: each slot row ends when its last bar does.
	var ends []time.Time
	var cur lane
	first := 0
	for i := range items {
		it := &items[i]
		if i == 0 || it.lane != cur {
			cur, ends, first = it.lane, nil, len(tl.Rows)
		}
		slot := -1
		for s, e := range ends {
			if !e.After(it.bar.Start) {
				slot = s
				break
			}
		}
		if slot < 0 {
			slot = len(ends)
			ends = append(ends, time.Time{})
			tl.Rows = append(tl.Rows, TimelineRow{Tracker: cur.tracker, Type: cur.typ, Slot: slot})
		}
		ends[slot] = it.bar.Finish
		it.bar.Row = first + slot
		tl.Bars = append(tl.Bars, it.bar)
	}
	return tl
}

// occupancy copies the cluster's occupancy series.
//
// Under the lock only the series' samples are copied (O(samples): a
// sample's job and partition slices are never changed once added, so they
// are shared); the series per job, O(samples × jobs), is built after.
func (jt *JobTracker) occupancySeries() Occupancy {
	jt.lock(holderWebUI)
	s := &series[occupancySample]{times: slices.Clone(jt.occupancy.times), values: slices.Clone(jt.occupancy.values)}
	jt.unlock()
	o := Occupancy{Times: make([]time.Time, len(s.times)), MapSlots: make([]int, len(s.times)),
		ReduceSlots: make([]int, len(s.times)), Jobs: []OccupancySeries{}}
	index := map[string]int{}
	for i, t := range s.times {
		o.Times[i] = utc(t)
		v := s.values[i]
		o.MapSlots[i], o.ReduceSlots[i] = int(v.mapSlots), int(v.reduceSlots)
		for _, jo := range v.jobs {
			k, ok := index[jo.job]
			if !ok {
				k = len(o.Jobs)
				index[jo.job] = k
				o.Jobs = append(o.Jobs, OccupancySeries{Job: jo.job, Maps: make([]int, len(s.times)), Reduces: make([]int, len(s.times))})
			}
			o.Jobs[k].Maps[i], o.Jobs[k].Reduces[i] = int(jo.maps), int(jo.reduces)
		}
		for k, p := range v.partitions {
			for len(o.Partitions) <= k {
				o.Partitions = append(o.Partitions, PartitionOccupancy{Partition: len(o.Partitions),
					Maps: make([]int, len(s.times)), Reduces: make([]int, len(s.times))})
			}
			o.Partitions[k].Maps[i], o.Partitions[k].Reduces[i] = int(p[0]), int(p[1])
		}
	}
	return o
}

// historyEntries lists a page of the jobs of the history directory,
// newest (by job id) first, reading the job line of the page's files only
// (the directory is listed whole: its names only).
func (h *History) historyEntries(p paging) ([]HistoryEntry, pageInfo, error) {
	des, err := os.ReadDir(h.dir)
	if err != nil {
		return nil, pageInfo{Page: 1, Pages: 1}, fmt.Errorf("listing job history %s: %w", h.dir, err)
	}
	var ids []string
	for _, de := range des {
		id, ok := strings.CutSuffix(de.Name(), ".jsonl")
		if ok && !de.IsDir() && jobIDPattern.MatchString(id) {
			ids = append(ids, id)
		}
	}
	sort.Slice(ids, func(a, b int) bool { return jobIDLess(ids[b], ids[a]) })
	ids, pi := pageOf(ids, len(ids), p, pageLink("/history", "", nil, p, defaultPageSize))
	out := make([]HistoryEntry, 0, len(ids))
	for _, id := range ids {
		e := HistoryEntry{ID: id, State: "UNREADABLE"}
		if j, err := readHistoryJobLine(filepath.Join(h.dir, id+".jsonl")); err == nil {
			e = HistoryEntry{ID: id, Name: j.Name, User: j.User, Queue: j.Queue, State: j.State, Submit: utc(j.Submit),
				Start: utc(j.Start), Finish: utc(j.Finish), Maps: j.Maps, Reduces: j.Reduces, Error: j.Error}
			if e.Queue == "" {
				e.Queue = j.Pool
			}
		} else {
			e.Error = err.Error()
		}
		out = append(out, e)
	}
	return out, pi, nil
}

// readHistoryJobLine reads the first line of a history file: the job.
func readHistoryJobLine(path string) (*jobhistory.Job, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 64<<10)
	line, err := r.ReadBytes('\n')
	if err != nil && len(line) == 0 {
		return nil, fmt.Errorf("history file %s: %w", path, err)
	}
	var j jobhistory.Job
	if err := json.Unmarshal(line, &j); err != nil {
		return nil, fmt.Errorf("history file %s: job line: %w", path, err)
	}
	return &j, nil
}

// trackerDetail is one TaskTracker as its page shows it.
type trackerDetail struct {
	TrackerInfo
	// Faults are the tracker's faults within the blacklisting window.
	Faults   int
	Attempts []trackerAttempt
}

// trackerAttempt is one live attempt on a tracker.
type trackerAttempt struct {
	AttemptInfo
	Task, Job string
}

// trackerDetail copies one tracker; false if it is not live.
func (jt *JobTracker) trackerDetail(name string) (trackerDetail, bool) {
	var td trackerDetail
	r := jt.trackerRowNow(name)
	if r == nil {
		return td, false
	}
	jt.lock(holderWebUI)
	defer jt.unlock()
	td.TrackerInfo = r.info
	td.LastHeartbeatAgeSeconds = math.Round(jt.now().Sub(r.lastSeen).Seconds()*1e3) / 1e3
	td.Faults = len(jt.faults[name])
	if t := jt.trackers[name]; t != nil {
		for _, a := range t.attempts {
			if !a.live() {
				continue
			}
			td.Attempts = append(td.Attempts, trackerAttempt{
				AttemptInfo: AttemptInfo{ID: a.id, Tracker: a.tracker, State: a.state.String(), Progress: round4(float64(a.progress)),
					Phase: a.phase, Start: utc(a.start), Error: a.diag},
				Task: a.task.id(), Job: a.task.job.id,
			})
		}
	}
	sort.Slice(td.Attempts, func(a, b int) bool { return td.Attempts[a].ID < td.Attempts[b].ID })
	return td, true
}

// liveTrackers are the names of the live trackers.
func (jt *JobTracker) liveTrackers() map[string]bool {
	out := map[string]bool{}
	jt.published.rows.Range(func(name, _ any) bool {
		out[name.(string)] = true
		return true
	})
	return out
}

// jobOfTask is the job id of a task id task_<ident>_<n>_<m|r>_<index>.
func jobOfTask(id string) string {
	parts := strings.Split(id, "_")
	if len(parts) != 5 || parts[0] != "task" || (parts[3] != "m" && parts[3] != "r") {
		return ""
	}
	return "job_" + parts[1] + "_" + parts[2]
}

// taskOfAttempt is the task id of an attempt id.
func taskOfAttempt(id string) string {
	parts := strings.Split(id, "_")
	if len(parts) != 6 || parts[0] != "attempt" {
		return ""
	}
	return "task_" + strings.Join(parts[1:5], "_")
}

// ---- page data ----

// pageMeta is what every page's head needs.
type pageMeta struct {
	Title string
	// Refresh is the auto-refresh period in seconds, 0 for none; NoRefresh
	// is the page's address with the refresh off, Refreshable whether it
	// has one to turn off.
	Refresh     int
	NoRefresh   string
	Refreshable bool
	Charts      bool
}

// meta builds a page's pageMeta: live pages refresh unless ?refresh=0.
func meta(r *http.Request, title string, live, charts bool) pageMeta {
	m := pageMeta{Title: title, Charts: charts}
	if !live {
		return m
	}
	m.Refreshable = true
	if r.URL.Query().Get("refresh") == "0" {
		return m
	}
	m.Refresh = refreshSeconds
	q := r.URL.Query()
	q.Set("refresh", "0")
	m.NoRefresh = r.URL.Path + "?" + q.Encode()
	return m
}

type taskPage struct {
	Meta pageMeta
	Job  JobInfo
	Task TaskInfo
	// Extras are the attempts' extras by attempt id.
	Extras map[string]attemptExtra
	Now    time.Time
	// Live are the live trackers: the others have no page to link to.
	Live map[string]bool
}

type attemptPage struct {
	Meta        pageMeta
	Job         JobInfo
	Task        TaskInfo
	Attempt     AttemptInfo
	Extra       attemptExtra
	Counters    []counterGroup
	Logs        []attemptLog
	FromHistory bool
	Live        map[string]bool
}

// attemptLog is one of an attempt's logs, or why it could not be read.
type attemptLog struct {
	Filter    string
	Text      string
	Truncated bool
	Error     string
}

type trackersPage struct {
	Meta pageMeta
	trackerList
	// States and Sorts are the filter's and the sort's links.
	States, Sorts []choiceLink
}

type jobsPage struct {
	Meta pageMeta
	jobList
	States, Sorts []choiceLink
}

type trackerPage struct {
	Meta pageMeta
	trackerDetail
}

type historyPage struct {
	Meta  pageMeta
	Jobs  []HistoryEntry
	Error string
	pageInfo
}

// counterGroups orders a counter set for a page.
func counterGroups(cs mr.CounterSet) []counterGroup {
	var out []counterGroup
	for _, g := range cs.Groups() {
		cg := counterGroup{Name: mr.GroupDisplayName(g)}
		for _, n := range cs.Names(g) {
			cg.Counters = append(cg.Counters, counterValue{n, cs[g][n]})
		}
		out = append(out, cg)
	}
	return out
}

// ---- handlers ----

// registerWebUI adds the handlers of this file to mux.
func (jt *JobTracker) registerWebUI(mux *http.ServeMux) {
	mux.HandleFunc("GET /task", jt.handleTaskPage)
	mux.HandleFunc("GET /attempt", jt.handleAttemptPage)
	mux.HandleFunc("GET /trackers", jt.handleTrackersPage)
	mux.HandleFunc("GET /jobs", jt.handleJobsPage)
	mux.HandleFunc("GET /tracker", jt.handleTrackerPage)
	mux.HandleFunc("GET /history", jt.handleHistoryPage)
	mux.HandleFunc("GET /api/job/timeline", jt.handleAPITimeline)
	mux.HandleFunc("GET /api/cluster/occupancy", jt.handleAPIOccupancy)
	static := func(typ, body string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", typ)
			w.Write([]byte(body))
		}
	}
	mux.HandleFunc("GET /static/uPlot.iife.min.js", static("text/javascript; charset=utf-8", webassets.UPlotJS))
	mux.HandleFunc("GET /static/uPlot.min.css", static("text/css; charset=utf-8", webassets.UPlotCSS))
	mux.HandleFunc("GET /static/LICENSE.uPlot", static("text/plain; charset=utf-8", webassets.UPlotLicense))
	mux.HandleFunc("GET /static/webui.js", static("text/javascript; charset=utf-8", webuiJS))
	redirect := func(path, from, to string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			u := path
			if from != "" {
				u += "?" + url.Values{to: {r.URL.Query().Get(from)}}.Encode()
			}
			http.Redirect(w, r, u, http.StatusMovedPermanently)
		}
	}
	mux.HandleFunc("GET /jobtracker.jsp", redirect("/", "", ""))
	mux.HandleFunc("GET /jobdetails.jsp", redirect("/job", "jobid", "id"))
	mux.HandleFunc("GET /jobhistory.jsp", redirect("/history", "", ""))
	mux.HandleFunc("GET /taskdetails.jsp", redirect("/task", "tipid", "id"))
}

// queryParam returns a required query parameter, or writes a 400.
func queryParam(w http.ResponseWriter, r *http.Request, name, what string) (string, bool) {
	v := r.URL.Query().Get(name)
	if v == "" {
		http.Error(w, fmt.Sprintf("missing query parameter %s (%s)", name, what), http.StatusBadRequest)
		return "", false
	}
	return v, true
}

func (jt *JobTracker) handleAPITimeline(w http.ResponseWriter, r *http.Request) {
	id, code, msg := jobParam(r)
	if code != 0 {
		jsonError(w, code, msg)
		return
	}
	v, ok := jt.jobView(id, "")
	if !ok {
		jsonError(w, http.StatusNotFound, fmt.Sprintf("unknown job %s", id))
		return
	}
	writeJSON(w, http.StatusOK, timeline(v, jt.now()))
}

func (jt *JobTracker) handleAPIOccupancy(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, jt.occupancySeries())
}

// findTask finds a task of a job view.
func findTask(v jobView, id string) (TaskInfo, bool) {
	for _, t := range v.Tasks {
		if t.ID == id {
			return t, true
		}
	}
	return TaskInfo{}, false
}

func (jt *JobTracker) handleTaskPage(w http.ResponseWriter, r *http.Request) {
	id, ok := queryParam(w, r, "id", "a task id")
	if !ok {
		return
	}
	v, ok := jt.jobView(jobOfTask(id), id)
	var t TaskInfo
	if ok {
		t, ok = findTask(v, id)
	}
	if !ok {
		http.Error(w, fmt.Sprintf("unknown task %s", id), http.StatusNotFound)
		return
	}
	renderHTML(w, "task", taskPage{Meta: meta(r, id, !finalJobState(v.State), false), Job: v.JobInfo, Task: t, Extras: v.Extras, Now: utc(jt.now()), Live: jt.liveTrackers()})
}

func (jt *JobTracker) handleAttemptPage(w http.ResponseWriter, r *http.Request) {
	id, ok := queryParam(w, r, "id", "a task attempt id")
	if !ok {
		return
	}
	taskID := taskOfAttempt(id)
	v, ok := jt.jobView(jobOfTask(taskID), taskID)
	var p attemptPage
	if ok {
		p.Task, ok = findTask(v, taskID)
	}
	found := false
	for _, a := range p.Task.Attempts {
		if a.ID == id {
			p.Attempt, found = a, true
		}
	}
	if !ok || !found {
		http.Error(w, fmt.Sprintf("unknown task attempt %s", id), http.StatusNotFound)
		return
	}
	p.Job, p.Extra, p.FromHistory = v.JobInfo, v.Extras[id], v.FromHistory
	p.Counters = counterGroups(p.Extra.Counters)
	p.Live = jt.liveTrackers()
	live := p.Attempt.Finish.IsZero() && !finalJobState(v.State)
	p.Meta = meta(r, id, live, false)
	if jt.auth != nil && jt.auth.acls {
		p.Logs = []attemptLog{{Filter: "logs", Error: "task logs are not shown on the unauthenticated status pages when job ACLs are on: use mr job -logs"}}
	} else {
		ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
		defer cancel()
		for _, f := range []string{"stdout", "stderr"} {
			l := attemptLog{Filter: f}
			resp, err := jt.GetTaskLog(ctx, &mrpb.TaskLogRequest{AttemptId: id, Filter: f})
			if err != nil {
				l.Error = err.Error()
			} else {
				data := resp.Data
				if len(data) > maxInlineLog {
					data, l.Truncated = data[len(data)-maxInlineLog:], true
				}
				l.Text = string(data)
			}
			p.Logs = append(p.Logs, l)
		}
	}
	renderHTML(w, "attempt", p)
}

func (jt *JobTracker) handleTrackersPage(w http.ResponseWriter, r *http.Request) {
	tq, err := parseTrackerQuery(r.URL.Query())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	p := trackersPage{Meta: meta(r, "TaskTrackers", true, false), trackerList: jt.listTrackers(tq, false, "/trackers")}
	c := p.Counts
	counts := map[string]int{"live": c.Live, "blacklisted": c.Blacklisted, "graylisted": c.Graylisted, "lost": c.Lost}
	p.States = tq.stateLinks("/trackers", func(st string) int { return counts[st] })
	p.Sorts = tq.sortLinks("/trackers")
	renderHTML(w, "trackers", p)
}

// jobsPageDesc are the /jobs sorts that are descending by default: the
// newest first.
var jobsPageDesc = map[string]bool{"submit": true, "finish": true}

func (jt *JobTracker) handleJobsPage(w http.ResponseWriter, r *http.Request) {
	jq, err := parseJobQuery(r.URL.Query(), jobsPageDesc)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	snap := jt.jobsSnapshot(false)
	p := jobsPage{Meta: meta(r, "Jobs", true, false), jobList: jt.listJobs(snap, jq, false, "/jobs")}
	p.States = jq.stateLinks("/jobs", func(state string) int {
		n := 0
		for st, c := range snap.counts {
			if jobInState(st, state) {
				n += c
			}
		}
		return n
	})
	p.Sorts = jq.sortLinks("/jobs")
	renderHTML(w, "jobspage", p)
}

func (jt *JobTracker) handleTrackerPage(w http.ResponseWriter, r *http.Request) {
	name, ok := queryParam(w, r, "name", "a TaskTracker's name")
	if !ok {
		return
	}
	td, ok := jt.trackerDetail(name)
	if !ok {
		http.Error(w, fmt.Sprintf("no live TaskTracker %s", name), http.StatusNotFound)
		return
	}
	renderHTML(w, "tracker", trackerPage{Meta: meta(r, "TaskTracker "+name, true, false), trackerDetail: td})
}

func (jt *JobTracker) handleHistoryPage(w http.ResponseWriter, r *http.Request) {
	pg, err := parsePaging(r.URL.Query(), defaultPageSize)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	p := historyPage{Meta: meta(r, "Job history", false, false)}
	p.Jobs, p.pageInfo, err = jt.history.historyEntries(pg)
	if err != nil {
		p.Error = err.Error()
	}
	renderHTML(w, "history", p)
}

// finalJobState tells a finished job's state.
func finalJobState(s string) bool {
	return s == StateSucceeded || s == StateFailed || s == StateKilled
}

// policyColumns says which columns of the policy's job table have
// something to show under the active policy: a multi-queue policy's
// queues and service, the fair scheduler's pools and shares, a deadline
// policy's deadlines and quotas.
type policyColumns struct {
	Queue, Service, Pool, FairShare, Deadline, Quota bool
	// Partition table: capacities and slot caps, timers.
	Capacity, Timer bool
}

// columnsOf finds the columns st uses.
func columnsOf(st *partitions.PolicyStatus) policyColumns {
	var c policyColumns
	if st == nil {
		return c
	}
	c.Queue = len(st.Partitions) > 1
	c.Pool = len(st.Pools) > 0
	c.FairShare = len(st.Pools) > 0
	for _, p := range st.Partitions {
		c.Capacity = c.Capacity || p.Capacity != 0 || p.MapSlots != 0 || p.ReduceSlots != 0
		c.Timer = c.Timer || p.Timer != 0
	}
	for _, j := range st.Jobs {
		c.Queue = c.Queue || j.Queue != 0
		c.Service = c.Service || j.Service != 0 || j.PartialSize != 0 || len(st.Partitions) > 0
		c.Pool = c.Pool || j.Pool != ""
		c.FairShare = c.FairShare || j.FairShareMaps != 0 || j.FairShareReduces != 0
		c.Deadline = c.Deadline || !j.Deadline.IsZero()
		c.Quota = c.Quota || j.MinMaps != 0 || j.MinReduces != 0
	}
	return c
}
