package jobtracker

import (
	"fmt"
	"net/url"
	"strings"
)

// tasksPerPage is how many tasks the job page lists at once: a job of
// 100,000 maps is listed a page at a time, as Hadoop's jobtasks.jsp does,
// filtered by type and state.
const tasksPerPage = 100

// taskFilter is the job page's choice of tasks: a type ("map", "reduce"
// or "" for both), a state (a task state name, "" for any) and a page
// (webui_paging.go: ?page= from 1, ?size= tasksPerPage by default).
type taskFilter struct {
	Type, State string
	paging
}

// taskStates are the task states the filter accepts, by their names in
// the query (Hadoop's jobtasks.jsp says "completed" for succeeded).
var taskStates = map[string]string{
	"pending": StatePending, "running": StateRunning, "succeeded": StateSucceeded,
	"completed": StateSucceeded, "failed": StateFailed, "killed": StateKilled,
}

// parseTaskFilter reads type, state and page from the job page's query;
// an unknown value is an error naming it and what is accepted.
func parseTaskFilter(q url.Values) (taskFilter, error) {
	f := taskFilter{paging: paging{Page: 1, Size: tasksPerPage}}
	switch t := q.Get("type"); t {
	case "", "all":
	case "map", "reduce":
		f.Type = t
	default:
		return f, fmt.Errorf("unknown task type %q: want map, reduce or all", t)
	}
	if s := strings.ToLower(q.Get("state")); s != "" && s != "all" {
		st, ok := taskStates[s]
		if !ok {
			return f, fmt.Errorf("unknown task state %q: want pending, running, succeeded (or completed), failed, killed or all", q.Get("state"))
		}
		f.State = st
	}
	p, err := parsePaging(q, tasksPerPage)
	f.paging = p
	return f, err
}

// match tells whether a task passes the filter's type and state.
func (f taskFilter) match(t TaskInfo) bool {
	return (f.Type == "" || t.Type == f.Type) && (f.State == "" || t.State == f.State)
}

// String says what the filter shows, for the page: "running map tasks".
func (f taskFilter) String() string {
	s := "tasks"
	if f.Type != "" {
		s = f.Type + " tasks"
	}
	if f.State != "" {
		s = strings.ToLower(f.State) + " " + s
	}
	return s
}

// taskList is one page of a job's tasks as the job page shows it.
type taskList struct {
	Filter taskFilter
	Tasks  []TaskInfo
	pageInfo
}

// pageOfTasks picks the filter's page of tasks; a page past the last shows
// the last. base is the job page's path and query without the filter.
func pageOfTasks(tasks []TaskInfo, f taskFilter, base url.Values) taskList {
	var match []TaskInfo
	for _, t := range tasks {
		if f.match(t) {
			match = append(match, t)
		}
	}
	q := url.Values{}
	for k, v := range base {
		q[k] = v
	}
	if f.Type != "" {
		q.Set("type", f.Type)
	}
	if f.State != "" {
		q.Set("state", strings.ToLower(f.State))
	}
	l := taskList{Filter: f}
	l.Tasks, l.pageInfo = pageOf(match, len(tasks), f.paging, pageLink("/job", "#tasks", q, f.paging, tasksPerPage))
	return l
}

// taskListLink is the job page's link to the tasks of a type in a state
// ("" for any), first page.
func taskListLink(id, typ, state string) string {
	q := url.Values{"id": {id}}
	if typ != "" {
		q.Set("type", typ)
	}
	if state != "" {
		q.Set("state", state)
	}
	return "/job?" + q.Encode() + "#tasks"
}
