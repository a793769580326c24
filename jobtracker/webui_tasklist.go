package jobtracker

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// tasksPerPage is how many tasks the job page lists at once: a job of
// 100,000 maps is listed a page at a time, as Hadoop's jobtasks.jsp does,
// filtered by type and state.
const tasksPerPage = 100

// taskFilter is the job page's choice of tasks: a type ("map", "reduce"
// or "" for both), a state (a task state name, "" for any) and a page
// (from 1).
type taskFilter struct {
	Type, State string
	Page        int
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
	f := taskFilter{Page: 1}
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
	if p := q.Get("page"); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 {
			return f, fmt.Errorf("bad page %q: want a page number from 1", p)
		}
		f.Page = n
	}
	return f, nil
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
	// Tasks are the page's tasks; Matching how many tasks pass the
	// filter, of Total; From and To the 1-based positions shown.
	Tasks                   []TaskInfo
	Matching, Total         int
	From, To, Page, Pages   int
	First, Prev, Next, Last string // links, "" where there is none
}

// pageOfTasks picks the filter's page of tasks; a page past the last shows
// the last. base is the job page's path and query without the filter.
func pageOfTasks(tasks []TaskInfo, f taskFilter, base url.Values) taskList {
	l := taskList{Filter: f, Total: len(tasks)}
	var match []TaskInfo
	for _, t := range tasks {
		if f.match(t) {
			match = append(match, t)
		}
	}
	l.Matching = len(match)
	l.Pages = max(1, (len(match)+tasksPerPage-1)/tasksPerPage)
	l.Page = min(f.Page, l.Pages)
	lo := (l.Page - 1) * tasksPerPage
	hi := min(lo+tasksPerPage, len(match))
	l.Tasks = match[lo:hi]
	if hi > lo {
		l.From, l.To = lo+1, hi
	}
	link := func(page int) string {
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
		q.Set("page", strconv.Itoa(page))
		return "/job?" + q.Encode() + "#tasks"
	}
	if l.Page > 1 {
		l.First, l.Prev = link(1), link(l.Page-1)
	}
	if l.Page < l.Pages {
		l.Next, l.Last = link(l.Page+1), link(l.Pages)
	}
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
