package jobtracker

// Completed-job retirement, as Hadoop 1's JobTracker does it (its
// RetireJobs thread). A job that has ended (SUCCEEDED, FAILED or KILLED)
// and whose history file is written is retired
//
//   - mapred.jobtracker.retirejob.interval after it ended, or
//   - at once, oldest first, while its user has more than
//     mapred.jobtracker.completeuserjobs.maximum completed jobs in memory,
//
// by a pass that runs every mapred.jobtracker.retirejob.check. A retired
// job leaves every structure of the JobTracker (the job table and list,
// the trackers' attempt maps; the policy dropped it when the job ended)
// and its summary (state, times, task counts, counters; no tasks) goes to
// a cache of the latest mapred.job.tracker.retiredjobs.cache.size retired
// jobs, which job lists, job status and the status pages show. A retired
// job that has left the cache is answered from its history file. See
// docs/reliability.md.

import (
	"context"
	"errors"
	"io/fs"
	"slices"
	"sort"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"gomr/jobtracker/jobhistory"
	"gomr/mr"
	"gomr/mrpb"
	"gomr/partitions"
	"gomr/security"
)

// retiredInfo is the SchedulingInfo of a retired job's status: `mr job
// -list all` and `-status` show it.
const retiredInfo = "retired"

// maxInterned bounds the table of interned counter names (a job with
// counters of its own could otherwise grow it for ever).
const maxInterned = 4096

// retirement is the JobTracker's retirement state, guarded by jt.mu.
type retirement struct {
	interval   time.Duration // mapred.jobtracker.retirejob.interval
	check      time.Duration // mapred.jobtracker.retirejob.check
	maxPerUser int           // mapred.jobtracker.completeuserjobs.maximum
	cacheSize  int           // mapred.job.tracker.retiredjobs.cache.size

	// completed are the ended jobs still in memory, in the order they
	// ended; perUser counts them by user.
	completed []completedJob
	perUser   map[string]int

	// cache holds the summaries of the latest retired jobs, oldest first;
	// byID indexes it.
	cache []*retiredJob
	byID  map[string]*retiredJob
	// names interns counter group and counter names, which every job
	// repeats.
	names map[string]string

	// Totals over all retired jobs, so that /metrics counters do not
	// drop when a job is retired: jobs retired, and launched, failed and
	// killed attempts by type (0 map, 1 reduce).
	retired                 int64
	launched, failed, kills [2]int64
}

// completedJob is a job that has ended; written says whether its history
// file is written (a job is retired only then).
type completedJob struct {
	job *job
}

// retiredJob is the summary of a retired job, or of a job read back from
// its history file.
type retiredJob struct {
	// pool is the job's own pool (JobStatus.Pool), queue the pool the
	// policy saw (JobInfo.Pool: mapreduce.job.queuename when the job
	// names none).
	id, name, user, pool, queue, state, err, output string
	// viewACL and modifyACL are the job's ACLs (acl.go), as text.
	viewACL, modifyACL              string
	priority                        int
	submit, start, finish, deadline time.Time
	maps, reduces                   TaskCounts
	mapProgress, reduceProgress     float64
	counters                        []retiredCounter
}

type retiredCounter struct {
	group, name string
	value       int64
}

func newRetirement(interval, check time.Duration, maxPerUser, cacheSize int) retirement {
	return retirement{
		interval: interval, check: check, maxPerUser: maxPerUser, cacheSize: cacheSize,
		perUser: map[string]int{}, byID: map[string]*retiredJob{}, names: map[string]string{},
	}
}

// jobEndedLocked records a job that has just ended (endJobLocked's last
// step); written says whether its history file was written.
func (jt *JobTracker) jobEndedLocked(j *job) {
	j.sampleProgressLocked(j.finish, true)
	r := &jt.retire
	r.completed = append(r.completed, completedJob{job: j})
	r.perUser[j.spec.User]++
	if j.state != jobSucceeded {
		// Its output was aborted while its attempts may still run
		// (abort.go).
		trackers := make(map[string]bool, len(j.trackers))
		for name := range j.trackers {
			trackers[name] = true
		}
		jt.awaitPurgeLocked(j.id, j.spec.Output, trackers)
	}
}

// retireLoop runs the retirement pass every
// mapred.jobtracker.retirejob.check until ctx ends or the JobTracker
// stops.
func (jt *JobTracker) retireLoop(ctx context.Context) {
	r := &jt.retire // its settings do not change
	jt.log.Info("retiring completed jobs", "after", r.interval, "per_user_maximum", r.maxPerUser,
		"check_every", r.check, "cache_size", r.cacheSize)
	tick := time.NewTicker(r.check)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-jt.stop:
			return
		case <-tick.C:
		}
		jt.retireJobs()
	}
}

// retireJobs runs one retirement pass and returns the number of jobs it
// retired. It holds jt.mu for one walk of the completed jobs, and for one
// of the job list when it retires any.
func (jt *JobTracker) retireJobs() int {
	jt.lock(holderRetire)
	defer jt.unlock()
	return jt.retireJobsLocked(jt.now())
}

func (jt *JobTracker) retireJobsLocked(now time.Time) int {
	r := &jt.retire
	if len(r.completed) == 0 {
		return 0
	}
	// Users over the limit lose their oldest completed jobs first.
	over := map[string]int{}
	for u, n := range r.perUser {
		if n > r.maxPerUser {
			over[u] = n - r.maxPerUser
		}
	}
	var retired []*job
	kept := r.completed[:0]
	for _, c := range r.completed {
		j := c.job
		if j.history == historyWriting {
			kept = append(kept, c) // its first write is under way
			continue
		}
		if j.history == historyUnwritten {
			// Its history could not be written when it ended: it is
			// written again once the lock is released (a write can
			// block, as at its end: jobend.go), and the job kept in
			// memory until it is; a later pass retires it.
			line := jt.historyJobLocked(j)
			j.history, j.historyDone = historyWriting, make(chan struct{})
			jt.afterUnlockLocked(func() {
				jt.writeHistory(j, jobhistory.Record{Job: line, Attempts: historyAttempts(j)}, true)
			})
			kept = append(kept, c)
			continue
		}
		u := j.spec.User
		if over[u] > 0 || now.Sub(j.finish) >= r.interval {
			if over[u] > 0 {
				over[u]--
			}
			if r.perUser[u]--; r.perUser[u] <= 0 {
				delete(r.perUser, u)
			}
			retired = append(retired, j)
			continue
		}
		kept = append(kept, c)
	}
	clear(r.completed[len(kept):])
	r.completed = kept
	if len(retired) == 0 {
		return 0
	}
	gone := make(map[*job]bool, len(retired))
	for _, j := range retired {
		gone[j] = true
		jt.retireJobLocked(j)
	}
	jt.order = slices.DeleteFunc(jt.order, func(j *job) bool { return gone[j] })
	if excess := len(r.cache) - r.cacheSize; excess > 0 {
		for _, s := range r.cache[:excess] {
			delete(r.byID, s.id)
		}
		n := copy(r.cache, r.cache[excess:])
		clear(r.cache[n:])
		r.cache = r.cache[:n]
	}
	return len(retired)
}

// retireJobLocked removes one ended job from the JobTracker's structures
// (but jt.order, which the caller filters once for all the pass's jobs)
// and caches its summary.
func (jt *JobTracker) retireJobLocked(j *job) {
	r := &jt.retire
	delete(jt.jobs, j.id)
	delete(jt.aborts, j.id)
	// Attempts normally leave their tracker's map when they end; sweep
	// any that did not (an attempt reported SUCCEEDED after its job ended
	// is marked KILLED in place).
	for _, ts := range [][]*task{j.maps, j.reduces} {
		for _, t := range ts {
			for _, a := range t.attempts {
				if tr := jt.trackers[a.tracker]; tr != nil && tr.attempts[a.id] == a {
					delete(tr.attempts, a.id)
				}
			}
		}
	}
	c := j.counters[mr.JobCounterGroup]
	r.launched[0] += c[mr.TotalLaunchedMaps]
	r.launched[1] += c[mr.TotalLaunchedReduces]
	r.failed[0] += c[mr.NumFailedMaps]
	r.failed[1] += c[mr.NumFailedReduces]
	r.kills[0] += c[mr.NumKilledMaps]
	r.kills[1] += c[mr.NumKilledReduces]
	r.retired++
	if r.cacheSize > 0 {
		s := jt.summaryLocked(j)
		r.cache = append(r.cache, s)
		r.byID[s.id] = s
	}
	jt.log.Info("retired job", "job", j.id, "user", j.spec.User, "state", j.state)
}

// intern returns the table's copy of s.
func (r *retirement) intern(s string) string {
	if v, ok := r.names[s]; ok {
		return v
	}
	if len(r.names) < maxInterned {
		s = strings.Clone(s)
		r.names[s] = s
	}
	return s
}

// summaryLocked is the summary of an ended job.
func (jt *JobTracker) summaryLocked(j *job) *retiredJob {
	info := jt.jobInfoLocked(j)
	progress := j.progresses()
	s := &retiredJob{
		id: j.id, name: j.spec.Name, user: j.spec.User, pool: j.spec.Pool, queue: info.Pool, state: j.state.String(), err: j.err,
		output: j.spec.Output, priority: j.priority,
		submit: j.submit, start: j.start, finish: j.finish, deadline: info.Deadline,
		maps: info.Maps, reduces: info.Reduces,
		mapProgress: progress[partitions.Map], reduceProgress: progress[partitions.Reduce],
	}
	if j.conf != nil {
		s.viewACL, s.modifyACL = j.conf.String(security.KeyJobViewACL), j.conf.String(security.KeyJobModifyACL)
	}
	s.counters = jt.retire.internCounters(jt.jobCountersLocked(j))
	return s
}

func (r *retirement) internCounters(cs mr.CounterSet) []retiredCounter {
	n := 0
	for _, g := range cs {
		n += len(g)
	}
	out := make([]retiredCounter, 0, n)
	for _, g := range cs.Groups() {
		for _, name := range cs.Names(g) {
			out = append(out, retiredCounter{group: r.intern(g), name: r.intern(name), value: cs[g][name]})
		}
	}
	return out
}

// summaryFromHistory is the summary of a job read from its history file.
func summaryFromHistory(rec *jobhistory.Record) *retiredJob {
	h := &rec.Job
	s := &retiredJob{
		id: h.JobID, name: h.Name, user: h.User, pool: h.Pool, queue: h.Queue, state: h.State, err: h.Error,
		output: h.Output, priority: h.Priority, submit: h.Submit, start: h.Start, finish: h.Finish,
		viewACL: h.ViewACL, modifyACL: h.ModifyACL,
	}
	if s.queue == "" {
		s.queue = h.Pool
	}
	if h.Deadline > 0 {
		s.deadline = h.Submit.Add(time.Duration(h.Deadline * float64(time.Second)))
	}
	mo, ro := rec.TaskOutcomes()
	s.maps = TaskCounts{Total: h.Maps, Succeeded: mo.Succeeded, Failed: mo.Failed, Killed: mo.Killed}
	s.reduces = TaskCounts{Total: h.Reduces, Succeeded: ro.Succeeded, Failed: ro.Failed, Killed: ro.Killed}
	// A finished job's progress is its share of succeeded tasks (a task
	// that did not succeed has no live attempt left), as for a job in
	// memory.
	s.mapProgress, s.reduceProgress = doneFraction(s.maps, partitions.Map, s.maps.Total), doneFraction(s.reduces, partitions.Reduce, s.maps.Total)
	for _, g := range h.Counters.Groups() {
		for _, name := range h.Counters.Names(g) {
			s.counters = append(s.counters, retiredCounter{group: g, name: name, value: h.Counters[g][name]})
		}
	}
	return s
}

func doneFraction(c TaskCounts, typ partitions.TaskType, maps int) float64 {
	if c.Total == 0 {
		return emptyPhaseProgress(typ, maps)
	}
	return float64(c.Succeeded) / float64(c.Total)
}

func (s *retiredJob) status() *mrpb.JobStatus {
	st := &mrpb.JobStatus{
		JobId: s.id, Name: s.name, State: s.state, Priority: priorityName(s.priority), Error: s.err, User: s.user, Pool: s.pool, Output: s.output,
		SubmitMs: s.submit.UnixMilli(), StartMs: s.start.UnixMilli(),
		MapProgress: float32(s.mapProgress), ReduceProgress: float32(s.reduceProgress),
		Maps: taskSummary(s.maps), Reduces: taskSummary(s.reduces), SchedulingInfo: retiredInfo,
	}
	if !s.finish.IsZero() {
		st.FinishMs = s.finish.UnixMilli()
	}
	st.Counters = make([]*mrpb.Counter, 0, len(s.counters))
	for _, c := range s.counters {
		st.Counters = append(st.Counters, &mrpb.Counter{Group: c.group, Name: c.name, Value: c.value})
	}
	return st
}

func taskSummary(c TaskCounts) *mrpb.TaskSummary {
	return &mrpb.TaskSummary{Total: int32(c.Total), Pending: int32(c.Pending), Running: int32(c.Running),
		Succeeded: int32(c.Succeeded), Failed: int32(c.Failed), Killed: int32(c.Killed)}
}

func (s *retiredJob) info() JobInfo {
	return JobInfo{
		ID: s.id, Name: s.name, User: s.user, Pool: s.queue, Priority: s.priority, State: s.state,
		Error: s.err, Output: s.output, Submit: utc(s.submit), Start: utc(s.start), Finish: utc(s.finish),
		Deadline: utc(s.deadline), MapProgress: round4(s.mapProgress), ReduceProgress: round4(s.reduceProgress),
		Maps: s.maps, Reduces: s.reduces, Retired: true,
	}
}

func (s *retiredJob) counterSet() mr.CounterSet {
	cs := mr.CounterSet{}
	for _, c := range s.counters {
		cs.Add(c.group, c.name, c.value)
	}
	return cs
}

// retiredJob finds a job that is no longer in memory: in the retired-jobs
// cache, or else in the job history. It takes jt.mu for the cache lookup
// only. The error is a gRPC NotFound when there is no such job.
func (jt *JobTracker) retiredJob(id string) (*retiredJob, error) {
	jt.lock(holderRetire)
	s := jt.retire.byID[id]
	jt.unlock()
	if s != nil {
		return s, nil
	}
	rec, err := jt.history.Record(id)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || !jobIDPattern.MatchString(id) {
			return nil, status.Errorf(codes.NotFound, "unknown job %s", id)
		}
		return nil, status.Errorf(codes.Internal, "job %s is retired and its history is unreadable: %v", id, err)
	}
	return summaryFromHistory(rec), nil
}

// retiredJobStatus answers GetJobStatus for a job not in memory.
func (jt *JobTracker) retiredJobStatus(id string) (*mrpb.JobStatus, error) {
	s, err := jt.retiredJob(id)
	if err != nil {
		return nil, err
	}
	return s.status(), nil
}

// retiredStatusesLocked are the statuses of the cached retired jobs.
func (jt *JobTracker) retiredStatusesLocked() []*mrpb.JobStatus {
	out := make([]*mrpb.JobStatus, 0, len(jt.retire.cache))
	for _, s := range jt.retire.cache {
		out = append(out, s.status())
	}
	return out
}

// sortStatuses orders job statuses by submission, then job number, as
// jt.order lists the jobs in memory.
func sortStatuses(sts []*mrpb.JobStatus) {
	sort.SliceStable(sts, func(a, b int) bool {
		if sts[a].SubmitMs != sts[b].SubmitMs {
			return sts[a].SubmitMs < sts[b].SubmitMs
		}
		return jobIDLess(sts[a].JobId, sts[b].JobId)
	})
}

// jobIDLess orders job ids of one JobTracker by job number (the number
// grows past four digits, so a longer id is a later one).
func jobIDLess(a, b string) bool {
	if len(a) != len(b) {
		return len(a) < len(b)
	}
	return a < b
}

// retiredJobDetail is GET /api/job's answer for a job not in memory: its
// summary, with no tasks.
func (jt *JobTracker) retiredJobDetail(id string) (JobDetail, bool) {
	s, err := jt.retiredJob(id)
	if err != nil {
		return JobDetail{}, false
	}
	return JobDetail{JobInfo: s.info(), Counters: s.counterSet(), Tasks: []TaskInfo{}}, true
}
