package jobtracker

// The jobs a page at a time: /jobs, the cluster page's job tables and
// /api/jobs (webui_paging.go for the parameters). Under the lock a list
// copies each job's key (its id, names, state and times: O(1) a job, 64
// jobs a hold, as the other lists); the rows of the page only are built
// after, a chunk of jobs a hold. So a page of 50 of 1,000 jobs builds 50
// JobInfos, not 1,000.

import (
	"math"
	"net/url"
	"slices"
	"sort"
	"strings"
	"time"

	"gomr/partitions"
)

// jobKey is what a job list filters and sorts a job by.
type jobKey struct {
	id, name, user, pool, state string
	submit, finish              time.Time
	// retired is the job's summary when it is in the retired-jobs cache,
	// nil for a job in memory.
	retired *retiredJob
}

// jobsSnapshot is the jobs as a list reads them: their keys in
// submission order, the counts by state, and the policy's view.
type jobsSnapshot struct {
	keys   []jobKey
	counts map[string]int
	policy string
	status *partitions.PolicyStatus
	now    time.Time
}

// jobsSnapshot copies every job's key (in memory, and in the retired-jobs
// cache), and with withPolicy the policy's view (O(jobs) under the lock:
// only for the pages that show it).
func (jt *JobTracker) jobsSnapshot(withPolicy bool) jobsSnapshot {
	s := jobsSnapshot{counts: map[string]int{StateRunning: 0, StateSucceeded: 0, StateFailed: 0, StateKilled: 0}}
	var retired []jobKey
	jt.jobsChunked(func(j *job) {
		st := j.state.String()
		s.counts[st]++
		s.keys = append(s.keys, jobKey{id: j.id, name: j.spec.Name, user: j.spec.User, pool: j.viewPool, state: st,
			submit: j.submit, finish: j.finish})
	}, func() {
		s.now = jt.now()
		s.policy = jt.policy.Name()
		for _, r := range jt.retire.cache {
			s.counts[r.state]++
			retired = append(retired, jobKey{id: r.id, name: r.name, user: r.user, pool: r.queue, state: r.state,
				submit: r.submit, finish: r.finish, retired: r})
		}
		if withPolicy {
			s.status = jt.describeLocked()
		}
	})
	if len(retired) > 0 {
		s.keys = append(retired, s.keys...)
		sort.SliceStable(s.keys, func(a, b int) bool {
			if !s.keys[a].submit.Equal(s.keys[b].submit) {
				return s.keys[a].submit.Before(s.keys[b].submit)
			}
			return jobIDLess(s.keys[a].id, s.keys[b].id)
		})
	}
	return s
}

// jobInfos builds the rows of keys, in their order: a retired job's from
// its summary, a job in memory under the lock, listChunk jobs a hold (a
// job retired meanwhile from the cache, one gone from it too is left out).
func (jt *JobTracker) jobInfos(keys []jobKey) []JobInfo {
	out := make([]JobInfo, 0, len(keys))
	for i := 0; i < len(keys); i += listChunk {
		chunk := keys[i:min(i+listChunk, len(keys))]
		jt.lock(holderWebUI)
		for _, k := range chunk {
			switch {
			case k.retired != nil:
				out = append(out, k.retired.info())
			case jt.jobs[k.id] != nil:
				out = append(out, jt.jobInfoLocked(jt.jobs[k.id]))
			case jt.retire.byID[k.id] != nil:
				out = append(out, jt.retire.byID[k.id].info())
			}
		}
		jt.unlock()
	}
	return out
}

// jobStateChoices are the values of ?state= of the job lists, the default
// first ("running" includes PREP; "finished" is succeeded, failed or
// killed).
var jobStateChoices = []string{"all", "running", "finished", "succeeded", "failed", "killed"}

// jobSortKeys are the values of ?sort= of the job lists, the default
// first.
var jobSortKeys = []string{"submit", "finish", "name", "user", "pool", "id"}

// parseJobQuery reads a job list's state, sort, order, page and size;
// desc are the keys whose default order is descending (the /jobs page
// lists the newest first, /api/jobs in submission order).
func parseJobQuery(q url.Values, desc map[string]bool) (listQuery, error) {
	return parseListQuery(q, jobStateChoices, jobSortKeys, desc)
}

// jobInState tells whether a job in state st is in a state of
// jobStateChoices.
func jobInState(st, state string) bool {
	switch state {
	case "all":
		return true
	case "running":
		return st == StateRunning || st == StatePrep
	case "finished":
		return finalJobState(st)
	}
	return strings.EqualFold(st, state)
}

// jobList is a page of jobs.
type jobList struct {
	Query listQuery
	Jobs  []JobInfo
	pageInfo
}

// listJobs picks the query's page of the snapshot's jobs (all that match
// when whole); path is the page the links point at.
func (jt *JobTracker) listJobs(s jobsSnapshot, jq listQuery, whole bool, path string) jobList {
	var match []jobKey
	for _, k := range s.keys {
		if jobInState(k.state, jq.State) {
			match = append(match, k)
		}
	}
	sortJobKeys(match, jq.Sort)
	p := jq.paging
	if whole {
		p = paging{Page: 1, Size: math.MaxInt}
	}
	l := jobList{Query: jq}
	var page []jobKey
	page, l.pageInfo = pageOf(match, len(s.keys), p, pageLink(path, "", jq.base(), jq.paging, defaultPageSize))
	l.Jobs = jt.jobInfos(page)
	return l
}

// sortJobKeys sorts keys by s, ties in submission order (stable).
func sortJobKeys(keys []jobKey, s sorting) {
	if s.Key == "submit" && !s.Desc {
		return // the snapshot's order
	}
	slices.SortStableFunc(keys, func(a, b jobKey) int {
		c := 0
		switch s.Key {
		case "submit":
			c = a.submit.Compare(b.submit)
		case "finish":
			c = a.finish.Compare(b.finish)
		case "name":
			c = strings.Compare(a.name, b.name)
		case "user":
			c = strings.Compare(a.user, b.user)
		case "pool":
			c = strings.Compare(a.pool, b.pool)
		case "id":
			c = jobIDRank(a.id, b.id)
		}
		if s.Desc {
			return -c
		}
		return c
	})
}

// jobIDRank compares job ids in jobIDLess's order.
func jobIDRank(a, b string) int {
	switch {
	case jobIDLess(a, b):
		return -1
	case jobIDLess(b, a):
		return 1
	}
	return 0
}
