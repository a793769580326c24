package jobtracker

// The JobTracker's HTTP server (mapreduce.jobtracker.http.address): status
// pages for people, a JSON API for programs and Prometheus metrics.
//
//	GET /              cluster page (HTML): the trackers' counts by state,
//	                   the first running and latest finished jobs, the
//	                   scheduling policy and its view
//	GET /job?id=J      job page (HTML): state, progress, counters, tasks and
//	                   their attempts
//	GET /api/cluster   ClusterInfo as JSON; ?state=, sort=, order=, page=,
//	                   size= choose its trackers as on /trackers (whole
//	                   unless page or size is given)
//	GET /api/jobs      JobList as JSON; ?state=, sort=, order=, page=,
//	                   size= as on /jobs (whole unless page or size is
//	                   given; by default in submission order)
//	GET /api/job?id=J  JobDetail as JSON
//	GET /tasklog?attemptid=A&filter=stdout|stderr
//	                   an attempt's log, from its tracker
//	GET /metrics       Prometheus metrics (metrics.go, docs/metrics.md), in
//	                   the format the scraper negotiates: text 0.0.4 by
//	                   default
//
// JSON field names are snake_case and stable; every field is always present
// except those marked "omitted while zero". Times are RFC 3339 in UTC,
// progress is a fraction from 0 to 1 rounded to 4 decimals. The fields:
//
//	/api/cluster  {time, policy, trackers: [TrackerInfo],
//	              tracker_counts: {live, blacklisted, graylisted, lost},
//	              trackers_page: ListPage (omitted unless a page was
//	              asked for), map_slots, reduce_slots, running_maps,
//	              running_reduces,
//	              jobs: {RUNNING, SUCCEEDED, FAILED, KILLED: count},
//	              policy_status (partitions.PolicyStatus; omitted when the
//	              policy does not implement partitions.Describer)}
//	TrackerInfo   {name, host, shuffle_address, map_slots, reduce_slots,
//	              running_maps, running_reduces, running_attempts: [id],
//	              last_heartbeat, last_heartbeat_age_seconds, criu}
//	/api/jobs     {jobs: [JobInfo], page: ListPage (omitted unless a
//	              page was asked for)}, in submission order: the jobs in
//	              memory and the retired ones in the retired-jobs cache
//	ListPage      {page, pages, size, matching, total}: the page's number
//	              (from 1; past the last, the last) of pages, the page
//	              size, the rows that pass the state filter of all
//	JobInfo       {id, name, user, pool, priority, state, error, output,
//	              submit, start, finish (omitted while zero), deadline
//	              (omitted while zero), map_progress, reduce_progress,
//	              maps: TaskCounts, reduces: TaskCounts, retired (true for
//	              a job retired from memory, docs/reliability.md; omitted
//	              while false)}
//	TaskCounts    {total, pending, running, succeeded, failed, killed}
//	/api/job      JobInfo's fields and {counters: {group: {name: value}},
//	              tasks: [TaskInfo]}, maps then reduces by index, and
//	              speculations: [SpeculationInfo] (omitted when none); a
//	              retired job's come from the retired-jobs cache or its
//	              history file, with no tasks
//	SpeculationInfo {task, kind ("fresh" or "clone"), source_attempt,
//	              attempt (omitted until launched), decided, outcome
//	              (PENDING, RUNNING, WON, LOST, FAILED, KILLED, DROPPED),
//	              explanation (the estimates behind the choice), note}
//	TaskInfo      {id, type ("map" or "reduce"), index, state, progress,
//	              failures, error, attempts: [AttemptInfo]}
//	AttemptInfo   {id, tracker, state, progress, phase, start, finish,
//	              shuffle_finish, sort_finish (the last three omitted while
//	              zero), error}
//
// The task, attempt, tracker and history pages, the charts' JSON and the
// static assets are in webui.go.
//
// An unknown job is a 404, a missing id a 400, both with {"error": text}.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/url"
	"time"

	"gomr/mr"
	"gomr/mrpb"
	"gomr/partitions"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// ClusterInfo is the body of GET /api/cluster.
type ClusterInfo struct {
	Time   time.Time `json:"time"`
	Policy string    `json:"policy"`
	// Trackers are the live trackers sorted by name, or those of the
	// query's state in its sort: all of them unless the query asks for a
	// page (page or size; TrackersPage then says which).
	Trackers       []TrackerInfo `json:"trackers"`
	TrackerCounts  TrackerCounts `json:"tracker_counts"`
	TrackersPage   *ListPage     `json:"trackers_page,omitempty"`
	MapSlots       int           `json:"map_slots"`
	ReduceSlots    int           `json:"reduce_slots"`
	RunningMaps    int           `json:"running_maps"`
	RunningReduces int           `json:"running_reduces"`
	// Jobs counts the jobs by state; the four job states are always present.
	Jobs map[string]int `json:"jobs"`
	// PolicyStatus is the policy's own view, when it has one.
	PolicyStatus *partitions.PolicyStatus `json:"policy_status,omitempty"`
}

// TrackerInfo is one live TaskTracker, sorted by name in ClusterInfo.
type TrackerInfo struct {
	Name           string `json:"name"`
	Host           string `json:"host"`
	ShuffleAddress string `json:"shuffle_address"`
	MapSlots       int    `json:"map_slots"`
	ReduceSlots    int    `json:"reduce_slots"`
	RunningMaps    int    `json:"running_maps"`
	RunningReduces int    `json:"running_reduces"`
	// RunningAttempts are the ids of its live attempts, sorted.
	RunningAttempts         []string  `json:"running_attempts"`
	LastHeartbeat           time.Time `json:"last_heartbeat"`
	LastHeartbeatAgeSeconds float64   `json:"last_heartbeat_age_seconds"`
	CRIU                    bool      `json:"criu"`
	// Blacklisted across all jobs (it gets no task), and why.
	Blacklisted     bool   `json:"blacklisted"`
	BlacklistReason string `json:"blacklist_reason,omitempty"`
	// LostReplies counts heartbeat replies it did not get (sent again).
	LostReplies int `json:"lost_replies"`
}

// JobList is the body of GET /api/jobs.
type JobList struct {
	Jobs []JobInfo `json:"jobs"`
	// Page says which page Jobs is when the query asked for one.
	Page *ListPage `json:"page,omitempty"`
}

// JobInfo is the summary of one job.
type JobInfo struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	User string `json:"user"`
	// Pool is the job's pool or queue (mapreduce.job.queuename when the
	// job names none), as the policy sees it.
	Pool     string `json:"pool"`
	Priority int    `json:"priority"`
	State    string `json:"state"`
	// Error says why a job failed or was killed.
	Error  string    `json:"error"`
	Output string    `json:"output"`
	Submit time.Time `json:"submit"`
	Start  time.Time `json:"start"`
	Finish time.Time `json:"finish,omitzero"`
	// Deadline is the absolute deadline of a job that has one.
	Deadline       time.Time  `json:"deadline,omitzero"`
	MapProgress    float64    `json:"map_progress"`
	ReduceProgress float64    `json:"reduce_progress"`
	Maps           TaskCounts `json:"maps"`
	Reduces        TaskCounts `json:"reduces"`
	// Retired is set for a job retired from the JobTracker's memory: it
	// is shown from its summary, without tasks.
	Retired bool `json:"retired,omitempty"`
}

// TaskCounts counts a job's tasks of one type by state; a task is running
// while it has a live attempt.
type TaskCounts struct {
	Total     int `json:"total"`
	Pending   int `json:"pending"`
	Running   int `json:"running"`
	Succeeded int `json:"succeeded"`
	Failed    int `json:"failed"`
	Killed    int `json:"killed"`
}

// JobDetail is the body of GET /api/job?id=J.
type JobDetail struct {
	JobInfo
	// Counters are the job's counters (as `mr job -status` shows them).
	Counters mr.CounterSet `json:"counters"`
	Tasks    []TaskInfo    `json:"tasks"`
	// Speculations are the speculative attempts the speculator asked for,
	// with the estimates behind each choice.
	Speculations []SpeculationInfo `json:"speculations,omitempty"`
}

// SpeculationInfo is one speculative attempt of a job.
type SpeculationInfo struct {
	Task          string    `json:"task"`
	Kind          string    `json:"kind"`
	SourceAttempt string    `json:"source_attempt"`
	Attempt       string    `json:"attempt,omitempty"`
	Decided       time.Time `json:"decided"`
	Outcome       string    `json:"outcome"`
	Explanation   string    `json:"explanation"`
	Note          string    `json:"note,omitempty"`
}

// TaskInfo is one map or reduce task.
type TaskInfo struct {
	ID       string  `json:"id"`
	Type     string  `json:"type"`
	Index    int     `json:"index"`
	State    string  `json:"state"`
	Progress float64 `json:"progress"`
	// Failures counts its failed attempts; Error is the last one's error.
	Failures int           `json:"failures"`
	Error    string        `json:"error"`
	Attempts []AttemptInfo `json:"attempts"`
}

// AttemptInfo is one attempt of a task.
type AttemptInfo struct {
	ID            string    `json:"id"`
	Tracker       string    `json:"tracker"`
	State         string    `json:"state"`
	Progress      float64   `json:"progress"`
	Phase         string    `json:"phase"`
	Start         time.Time `json:"start"`
	Finish        time.Time `json:"finish,omitzero"`
	ShuffleFinish time.Time `json:"shuffle_finish,omitzero"`
	SortFinish    time.Time `json:"sort_finish,omitzero"`
	Error         string    `json:"error"`
}

// StartHTTP binds addr (mapreduce.jobtracker.http.address when addr is
// empty), serves HTTPHandler on it in the background until ctx ends or the
// JobTracker is stopped, and returns the bound address. The server is
// shut down before Serve returns when ServeHTTP was called before or
// during Serve (it is counted in the JobTracker's wait group).
func (jt *JobTracker) StartHTTP(ctx context.Context, addr string) (string, error) {
	if addr == "" {
		addr = jt.cfg.String("mapreduce.jobtracker.http.address")
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return "", fmt.Errorf("jobtracker http listen on %s (mapreduce.jobtracker.http.address): %w", addr, err)
	}
	srv := &http.Server{
		Handler:           jt.HTTPHandler(),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(jt.log.Handler(), slog.LevelWarn),
	}
	bound := l.Addr().String()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	jt.wg.Add(1)
	go func() {
		defer jt.wg.Done()
		select {
		case <-ctx.Done():
		case <-jt.stop:
		case err := <-served:
			jt.log.Error("jobtracker http server stopped", "address", bound, "error", err)
			return
		}
		shutCtx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if err := srv.Shutdown(shutCtx); err != nil {
			srv.Close()
		}
		if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
			jt.log.Warn("jobtracker http server", "address", bound, "error", err)
		}
	}()
	jt.log.Info("jobtracker http serving", "address", bound)
	return bound, nil
}

// HTTPHandler returns the handler of the status pages, the JSON API and
// the metrics (see the list at the top of http.go). Only GET and HEAD are
// allowed.
func (jt *JobTracker) HTTPHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", jt.handleClusterPage)
	mux.HandleFunc("GET /job", jt.handleJobPage)
	mux.HandleFunc("GET /api/cluster", jt.handleAPICluster)
	mux.HandleFunc("GET /api/jobs", jt.handleAPIJobs)
	mux.HandleFunc("GET /api/job", jt.handleAPIJob)
	mux.Handle("GET /metrics", jt.prom.handler(jt))
	mux.HandleFunc("GET /tasklog", jt.handleTaskLog)
	jt.registerWebUI(mux)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Cache-Control", "no-store")
		mux.ServeHTTP(w, r)
	})
}

// handleTaskLog shows an attempt's log (?attemptid=A&filter=stdout|stderr)
// from the tracker that ran it. The pages are not authenticated, so with
// job ACLs on it refuses: mr job -logs checks the job's view ACL.
func (jt *JobTracker) handleTaskLog(w http.ResponseWriter, r *http.Request) {
	if jt.auth != nil && jt.auth.acls {
		http.Error(w, "task logs are not shown on the unauthenticated status pages when job ACLs are on: use mr job -logs, which checks the job's view ACL", http.StatusForbidden)
		return
	}
	resp, err := jt.GetTaskLog(r.Context(), &mrpb.TaskLogRequest{AttemptId: r.URL.Query().Get("attemptid"), Filter: r.URL.Query().Get("filter")})
	if err != nil {
		code := http.StatusBadGateway
		switch status.Code(err) {
		case codes.NotFound:
			code = http.StatusNotFound
		case codes.InvalidArgument:
			code = http.StatusBadRequest
		}
		http.Error(w, status.Convert(err).Message(), code)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Write(resp.Data)
}

// ---- snapshots, taken under jt.mu ----

// round4 keeps progress readable in JSON (float32 progress widened to
// float64 shows noise digits).
func round4(p float64) float64 { return math.Round(p*1e4) / 1e4 }

// utc returns t in UTC, the zero time unchanged.
func utc(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return t.UTC()
}

func taskCounts(s *mrpb.TaskSummary) TaskCounts {
	return TaskCounts{Total: int(s.Total), Pending: int(s.Pending), Running: int(s.Running),
		Succeeded: int(s.Succeeded), Failed: int(s.Failed), Killed: int(s.Killed)}
}

func (jt *JobTracker) jobInfoLocked(j *job) JobInfo {
	progress := j.progresses()
	info := JobInfo{
		ID: j.id, Name: j.spec.Name, User: j.spec.User, Pool: j.spec.Pool, Priority: j.priority,
		State: j.state.String(), Error: j.err, Output: j.spec.Output,
		Submit: utc(j.submit), Start: utc(j.start), Finish: utc(j.finish),
		MapProgress:    round4(progress[partitions.Map]),
		ReduceProgress: round4(progress[partitions.Reduce]),
		Maps:           taskCounts(j.summary(partitions.Map)),
		Reduces:        taskCounts(j.summary(partitions.Reduce)),
	}
	if j.conf != nil {
		if info.Pool == "" {
			info.Pool = j.viewPool // mapreduce.job.queuename
		}
		if d := j.spec.DeadlineSeconds; d > 0 {
			info.Deadline = utc(j.submit.Add(time.Duration(d * float64(time.Second))))
		} else if d := j.settings().deadline; d > 0 {
			info.Deadline = utc(j.submit.Add(time.Duration(d * float64(time.Second))))
		}
	}
	return info
}

// clusterInfo is the cluster's summary from a jobs snapshot: the slot
// totals and tracker counts kept as trackers' rows change (publish.go), no
// tracker list.
func (jt *JobTracker) clusterInfo(s jobsSnapshot) ClusterInfo {
	tot := jt.trackerTotalsNow()
	return ClusterInfo{
		Time: utc(s.now), Policy: s.policy, Trackers: []TrackerInfo{}, TrackerCounts: tot.counts,
		MapSlots: tot.slots[0], ReduceSlots: tot.slots[1], RunningMaps: tot.running[0], RunningReduces: tot.running[1],
		Jobs: s.counts, PolicyStatus: s.status,
	}
}

// jobDetail copies one job's state; false if there is no such job. A
// retired job's comes from the retired-jobs cache or its history.
func (jt *JobTracker) jobDetail(id string) (JobDetail, bool) {
	jt.lock(holderWebUI)
	j, ok := jt.jobs[id]
	if !ok {
		jt.unlock()
		return jt.retiredJobDetail(id)
	}
	defer jt.unlock()
	d := JobDetail{
		JobInfo:  jt.jobInfoLocked(j),
		Counters: jt.jobCountersLocked(j),
		Tasks:    make([]TaskInfo, 0, len(j.maps)+len(j.reduces)),
	}
	for _, ts := range [][]*task{j.maps, j.reduces} {
		for _, t := range ts {
			ti := TaskInfo{
				ID: t.id(), Type: t.typ.String(), Index: t.index, State: t.state.String(),
				Progress: round4(t.progress()), Failures: t.failures, Error: t.lastError,
				Attempts: make([]AttemptInfo, 0, len(t.attempts)),
			}
			for _, a := range t.attempts {
				ti.Attempts = append(ti.Attempts, AttemptInfo{
					ID: a.id, Tracker: a.tracker, State: a.state.String(), Progress: round4(float64(a.progress)),
					Phase: a.phase, Start: utc(a.start), Finish: utc(a.finish),
					ShuffleFinish: utc(a.shuffleFinish), SortFinish: utc(a.sortFinish), Error: a.diag,
				})
			}
			d.Tasks = append(d.Tasks, ti)
		}
	}
	for _, s := range j.speculations {
		p := s.proto()
		d.Speculations = append(d.Speculations, SpeculationInfo{
			Task: p.TaskId, Kind: p.Kind, SourceAttempt: p.SourceAttempt, Attempt: p.AttemptId,
			Decided: utc(s.decided), Outcome: p.Outcome, Explanation: p.Explanation, Note: p.Note,
		})
	}
	return d, true
}

// ---- handlers ----

// writeJSON writes v indented, without escaping <, > and & (the body is
// served as application/json with nosniff, never as HTML).
func writeJSON(w http.ResponseWriter, code int, v any) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		http.Error(w, "encoding JSON: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(code)
	w.Write(b.Bytes())
}

func jsonError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, map[string]string{"error": msg})
}

// jobParam returns the id query parameter, or an error status and text.
func jobParam(r *http.Request) (string, int, string) {
	id := r.URL.Query().Get("id")
	if id == "" {
		return "", http.StatusBadRequest, "missing query parameter id (a job id)"
	}
	return id, 0, ""
}

func (jt *JobTracker) handleAPICluster(w http.ResponseWriter, r *http.Request) {
	tq, err := parseTrackerQuery(r.URL.Query())
	if err != nil {
		jsonError(w, http.StatusBadRequest, err.Error())
		return
	}
	ci := jt.clusterInfo(jt.jobsSnapshot(true))
	l := jt.listTrackers(tq, !tq.Asked, "/api/cluster")
	ci.Trackers = make([]TrackerInfo, len(l.Rows))
	for i, row := range l.Rows {
		ci.Trackers[i] = row.TrackerInfo
	}
	if tq.Asked {
		ci.TrackersPage = l.listPage()
	}
	writeJSON(w, http.StatusOK, ci)
}

// apiJobsDesc are the /api/jobs sorts that are descending by default:
// finish (the newest first); by submission (the default) the list is in
// submission order, as it always was.
var apiJobsDesc = map[string]bool{"finish": true}

func (jt *JobTracker) handleAPIJobs(w http.ResponseWriter, r *http.Request) {
	jq, err := parseJobQuery(r.URL.Query(), apiJobsDesc)
	if err != nil {
		jsonError(w, http.StatusBadRequest, err.Error())
		return
	}
	l := jt.listJobs(jt.jobsSnapshot(false), jq, !jq.Asked, "/api/jobs")
	list := JobList{Jobs: l.Jobs}
	if jq.Asked {
		list.Page = l.listPage()
	}
	writeJSON(w, http.StatusOK, list)
}

func (jt *JobTracker) handleAPIJob(w http.ResponseWriter, r *http.Request) {
	id, code, msg := jobParam(r)
	if code != 0 {
		jsonError(w, code, msg)
		return
	}
	d, ok := jt.jobDetail(id)
	if !ok {
		jsonError(w, http.StatusNotFound, fmt.Sprintf("unknown job %s", id))
		return
	}
	writeJSON(w, http.StatusOK, d)
}

// ---- HTML ----

// counterGroup is one group of counters as the job page shows it.
type counterGroup struct {
	Name     string
	Counters []counterValue
}

type counterValue struct {
	Name  string
	Value int64
}

// clusterJobRows is how many running and finished jobs, and jobs in the
// policy's order, the cluster page shows (the newest finished; /jobs
// lists them all, a page at a time).
const clusterJobRows = 20

type clusterPage struct {
	Meta pageMeta
	ClusterInfo
	// Running are the first running jobs in submission order, Finished
	// the latest finished, each with its totals.
	Running, Finished jobList
	// PolicyJobs are the first of the policy's jobs, of PolicyJobsTotal.
	PolicyJobs      []partitions.JobStatus
	PolicyJobsTotal int
	// Columns are the policy's columns with something to show.
	Columns policyColumns
}

type jobPage struct {
	Meta pageMeta
	JobDetail
	Now         time.Time
	Counters    []counterGroup
	FromHistory bool
	// List is the page of tasks the query asks for (all the job's tasks
	// are in JobDetail.Tasks).
	List taskList
}

func (jt *JobTracker) handleClusterPage(w http.ResponseWriter, r *http.Request) {
	snap := jt.jobsSnapshot(true)
	ci := jt.clusterInfo(snap)
	p := clusterPage{Meta: meta(r, "gomr JobTracker", true, true), ClusterInfo: ci, Columns: columnsOf(ci.PolicyStatus)}
	// The first page of /jobs?state=running&order=asc, and of
	// /jobs?state=finished&sort=finish: the newest finished job first, as
	// Hadoop's page lists them.
	lq := listQuery{State: "running", Sort: sorting{Key: "submit"}, paging: paging{Page: 1, Size: clusterJobRows},
		states: jobStateChoices, keys: jobSortKeys, desc: jobsPageDesc}
	p.Running = jt.listJobs(snap, lq, false, "/jobs")
	lq.State, lq.Sort = "finished", sorting{Key: "finish", Desc: true}
	p.Finished = jt.listJobs(snap, lq, false, "/jobs")
	if st := ci.PolicyStatus; st != nil {
		p.PolicyJobsTotal = len(st.Jobs)
		p.PolicyJobs = st.Jobs[:min(len(st.Jobs), clusterJobRows)]
	}
	renderHTML(w, "cluster", p)
}

func (jt *JobTracker) handleJobPage(w http.ResponseWriter, r *http.Request) {
	id, code, msg := jobParam(r)
	if code != 0 {
		http.Error(w, msg, code)
		return
	}
	f, err := parseTaskFilter(r.URL.Query())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	v, ok := jt.jobView(id, "")
	if !ok {
		http.Error(w, fmt.Sprintf("unknown job %s", id), http.StatusNotFound)
		return
	}
	base := url.Values{"id": {id}}
	if r.URL.Query().Get("refresh") == "0" {
		base.Set("refresh", "0")
	}
	p := jobPage{Meta: meta(r, id, !finalJobState(v.State), true), JobDetail: v.JobDetail, Now: utc(jt.now()),
		Counters: counterGroups(v.Counters), FromHistory: v.FromHistory, List: pageOfTasks(v.Tasks, f, base)}
	renderHTML(w, "job", p)
}

// renderHTML executes a page into a buffer first, so that a template error
// is a clean 500 rather than half a page.
func renderHTML(w http.ResponseWriter, name string, data any) {
	var b bytes.Buffer
	if err := pages.ExecuteTemplate(&b, name, data); err != nil {
		http.Error(w, fmt.Sprintf("rendering page %s: %v", name, err), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Write(b.Bytes())
}

var pageFuncs = template.FuncMap{
	"pct": func(p float64) string { return fmt.Sprintf("%.1f%%", p*100) },
	// priority is Hadoop's name of a job priority (VERY_HIGH..VERY_LOW).
	"priority": priorityName,
	"when": func(t time.Time) string {
		if t.IsZero() {
			return "-"
		}
		return t.Format("2006-01-02 15:04:05")
	},
	"secs":      func(s float64) string { return fmt.Sprintf("%.1fs", s) },
	"dur":       func(d time.Duration) string { return d.Round(time.Millisecond).String() },
	"firstLine": firstLine,
	"tasks":     taskListLink,
	"states":    func() []string { return []string{"pending", "running", "succeeded", "failed", "killed"} },
	"elapsed": func(from, to, now time.Time) string {
		if from.IsZero() {
			return "-"
		}
		if to.IsZero() {
			to = now
		}
		return to.Sub(from).Round(time.Second).String()
	},
}
