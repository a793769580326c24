package jobtracker

import (
	"fmt"
	"net/url"
	"testing"
)

func TestPageOfTasks(t *testing.T) {
	var tasks []TaskInfo
	for i := 0; i < 250; i++ {
		st := StateSucceeded
		if i%10 == 0 {
			st = StateRunning
		}
		tasks = append(tasks, TaskInfo{ID: fmt.Sprintf("m%d", i), Type: "map", State: st})
	}
	tasks = append(tasks, TaskInfo{ID: "r0", Type: "reduce", State: StatePending})
	base := url.Values{"id": {"job_1_0001"}}
	for _, tc := range []struct {
		f                  taskFilter
		matching, from, to int
		page, pages        int
		first, next        string
		firstTask          string
	}{
		{taskFilter{paging: pg(1)}, 251, 1, 100, 1, 3, "", "/job?id=job_1_0001&page=2#tasks", "m0"},
		{taskFilter{paging: pg(2)}, 251, 101, 200, 2, 3, "/job?id=job_1_0001&page=1#tasks", "/job?id=job_1_0001&page=3#tasks", "m100"},
		{taskFilter{paging: pg(9)}, 251, 201, 251, 3, 3, "/job?id=job_1_0001&page=1#tasks", "", "m200"},
		{taskFilter{Type: "map", State: StateRunning, paging: pg(1)}, 25, 1, 25, 1, 1, "", "", "m0"},
		{taskFilter{Type: "reduce", paging: pg(1)}, 1, 1, 1, 1, 1, "", "", "r0"},
		{taskFilter{Type: "reduce", State: StateFailed, paging: pg(1)}, 0, 0, 0, 1, 1, "", "", ""},
		{taskFilter{Type: "map", State: StateSucceeded, paging: pg(2)}, 225, 101, 200, 2, 3,
			"/job?id=job_1_0001&page=1&state=succeeded&type=map#tasks", "/job?id=job_1_0001&page=3&state=succeeded&type=map#tasks", "m112"},
	} {
		l := pageOfTasks(tasks, tc.f, base)
		if l.Matching != tc.matching || l.From != tc.from || l.To != tc.to || l.Page != tc.page || l.Pages != tc.pages ||
			l.First != tc.first || l.Next != tc.next || l.Total != 251 || len(l.Tasks) != tc.to-tc.from+min(1, tc.from) {
			t.Errorf("%+v: got matching %d, %d-%d, page %d of %d, first %q next %q, %d tasks of %d; want %+v",
				tc.f, l.Matching, l.From, l.To, l.Page, l.Pages, l.First, l.Next, len(l.Tasks), l.Total, tc)
			continue
		}
		if tc.firstTask != "" && l.Tasks[0].ID != tc.firstTask {
			t.Errorf("%+v: first task %s, want %s", tc.f, l.Tasks[0].ID, tc.firstTask)
		}
	}
}

func TestParseTaskFilter(t *testing.T) {
	for _, tc := range []struct {
		q    string
		want taskFilter
		err  string
	}{
		{"", taskFilter{paging: pg(1)}, ""},
		{"type=all&state=all", taskFilter{paging: pg(1)}, ""},
		{"type=reduce&state=COMPLETED&page=3", taskFilter{Type: "reduce", State: StateSucceeded, paging: paging{Page: 3, Size: tasksPerPage, Asked: true}}, ""},
		{"state=killed&size=10", taskFilter{State: StateKilled, paging: paging{Page: 1, Size: 10, Asked: true}}, ""},
		{"type=setup", taskFilter{}, `unknown task type "setup": want map, reduce or all`},
		{"state=lost", taskFilter{}, `unknown task state "lost": want pending, running, succeeded (or completed), failed, killed or all`},
		{"page=-1", taskFilter{}, `bad page "-1": want a page number from 1`},
		{"page=x", taskFilter{}, `bad page "x": want a page number from 1`},
		{"size=0", taskFilter{}, `bad size "0": want a page size from 1 to 1000`},
		{"size=1001", taskFilter{}, `bad size "1001": want a page size from 1 to 1000`},
	} {
		q, _ := url.ParseQuery(tc.q)
		f, err := parseTaskFilter(q)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("%q: error %v, want %q", tc.q, err, tc.err)
			}
			continue
		}
		if err != nil || f != tc.want {
			t.Errorf("%q: %+v, %v; want %+v", tc.q, f, err, tc.want)
		}
	}
}

// pg is page n of tasksPerPage tasks.
func pg(n int) paging { return paging{Page: n, Size: tasksPerPage} }
