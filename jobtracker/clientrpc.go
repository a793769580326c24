package jobtracker

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"gomr/conf"
	"gomr/mr"
	"gomr/mrpb"
	"gomr/partitions"
	"gomr/speculator"
)

// The client RPCs: job submission, status, listing, kill and history.

// SubmitJob accepts a job with its splits.
func (jt *JobTracker) SubmitJob(ctx context.Context, req *mrpb.SubmitJobRequest) (*mrpb.SubmitJobResponse, error) {
	var spec mr.JobSpec
	if err := json.Unmarshal(req.SpecJson, &spec); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "bad job spec: %v", err)
	}
	var splits []mr.Split
	if len(req.SplitsJson) > 0 {
		if err := json.Unmarshal(req.SplitsJson, &splits); err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "bad splits: %v", err)
		}
	}
	if _, err := mr.LookupJob(spec.Def); err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	jcfg, err := jt.cfg.JobOverrides(spec.Conf)
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "job configuration: %v", err)
	}
	if spec.NumReduces < 0 {
		spec.NumReduces = jcfg.Int("mapreduce.job.reduces")
	}
	if spec.Name == "" {
		spec.Name = spec.Def
	}
	spec.User = jt.submitter(ctx, spec.User)
	committer, err := mr.NewCommitter(spec.Output)
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	if err := committer.CheckOutput(); err != nil {
		return nil, status.Error(codes.AlreadyExists, err.Error())
	}
	if err := committer.SetupJob(); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	spec8r, err := jt.newJobSpeculator(jcfg)
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "job configuration: %v", err)
	}
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		return nil, status.Errorf(codes.Internal, "job secret: %v", err)
	}

	// The job is on disk before its id is answered: a JobTracker
	// restarted later neither forgets it nor gives its id again.
	jt.lock(holderSubmit)
	jt.nextJob++
	id := fmt.Sprintf("job_%s_%04d", jt.ident, jt.nextJob)
	now := jt.now()
	jt.unlock()
	if err := jt.staging.Write(&stagedJob{ID: id, Spec: spec, Splits: splits, Secret: secret, Submit: now}); err != nil {
		return nil, status.Errorf(codes.Internal, "%v", err)
	}

	j := newJob(id, spec, splits, secret, now, jcfg, spec8r)
	j.spillsOnly = jt.spillsOnly(len(j.maps), len(j.reduces))
	jt.lock(holderSubmit)
	defer jt.unlock()
	jt.addJobLocked(j, now)
	jt.log.Info("job submitted", "job", j.id, "name", spec.Name, "maps", len(j.maps), "reduces", len(j.reduces), "output", spec.Output)
	jt.checkJobDoneLocked(j) // a job with no tasks at all is done at once
	return &mrpb.SubmitJobResponse{JobId: j.id, TrackingUrl: jt.trackingURL(j.id)}, nil
}

// newJob builds a running job with all its tasks pending.
func newJob(id string, spec mr.JobSpec, splits []mr.Split, secret []byte, submit time.Time, jcfg *conf.Config, spec8r *speculator.Speculator) *job {
	j := &job{
		id:            id,
		spec:          spec,
		conf:          jcfg,
		confMap:       launchConf(jcfg),
		secret:        secret,
		splits:        shareSplitStrings(splits),
		priority:      priorityOf(spec.Priority, jcfg.String("mapreduce.job.priority")),
		state:         jobRunning,
		submit:        submit,
		start:         submit,
		counters:      mr.CounterSet{},
		winners:       map[spillKey]*attempt{},
		notify:        make(chan struct{}),
		fetchFailures: map[string]int{},
		trackers:      map[string]bool{},
		speculator:    spec8r,
		localPending:  map[string]int{},
		specWaiting:   map[*task]bool{},
		active:        map[*task]bool{},
		doneCounters:  mr.CounterSet{},
		viewPool:      spec.Pool,
	}
	if j.viewPool == "" {
		j.viewPool = jcfg.String("mapreduce.job.queuename")
	}
	if d := spec.DeadlineSeconds; d > 0 {
		j.viewDeadline = submit.Add(time.Duration(d * float64(time.Second)))
	} else if d := jcfg.Float("mapreduce.job.deadline.seconds"); d > 0 {
		j.viewDeadline = submit.Add(time.Duration(d * float64(time.Second)))
	}
	for i, s := range splits {
		if s.Path != "" {
			j.viewInputBytes += s.Length
		}
		j.maps = append(j.maps, &task{job: j, typ: partitions.Map, index: i, state: taskPending, failedOn: map[string]bool{}})
		j.pendingChanged(j.maps[i], 1)
	}
	for i := 0; i < spec.NumReduces; i++ {
		j.reduces = append(j.reduces, &task{job: j, typ: partitions.Reduce, index: i, state: taskPending, failedOn: map[string]bool{}})
		j.pendingChanged(j.reduces[i], 1)
	}
	j.byState[partitions.Map][taskPending] = len(j.maps)
	j.byState[partitions.Reduce][taskPending] = len(j.reduces)
	// The maps by host of their split, O(maps), are indexed here, before
	// the job is shared (and, at a submission, before the lock is taken),
	// instead of at the job's first data-local pick, in a heartbeat under
	// the lock (an execution trace of 10,000 trackers' warm-up: a single
	// heartbeat holding the lock 16 ms of CPU for a job of 37,500 maps).
	j.hostMapsLocked()
	return j
}

// addJobLocked makes the JobTracker run j and tells the policy.
func (jt *JobTracker) addJobLocked(j *job, now time.Time) {
	jt.jobs[j.id] = j
	jt.order = append(jt.order, j)
	jt.views.viewListChanged()
	jt.driver.Submitted(now, jt.jobViewLocked(j, nil))
}

// jobPriorities are Hadoop's job priorities (mapreduce.job.priority) as
// the policies weigh them.
var jobPriorities = map[string]int{"VERY_HIGH": 2, "HIGH": 1, "NORMAL": 0, "LOW": -1, "VERY_LOW": -2}

// priorityName is Hadoop's name of a priority (the nearest one for a
// number outside -2..2).
func priorityName(p int) string {
	names := [...]string{"VERY_LOW", "LOW", "NORMAL", "HIGH", "VERY_HIGH"}
	return names[min(max(p, -2), 2)+2]
}

// priorityOf is a job's priority: the spec's number, else its named
// priority (NORMAL when unknown).
func priorityOf(explicit int, named string) int {
	if explicit != 0 {
		return explicit
	}
	return jobPriorities[named]
}

// GetJobStatus reports a job's state, progress and counters; a retired
// job's come from the retired-jobs cache or its history (retire.go).
func (jt *JobTracker) GetJobStatus(ctx context.Context, req *mrpb.JobStatusRequest) (*mrpb.JobStatus, error) {
	jt.lock(holderClientStatus)
	j, ok := jt.jobs[req.JobId]
	if !ok {
		jt.unlock()
		return jt.retiredJobStatus(req.JobId)
	}
	st, counters := jt.jobStatusNoCountersLocked(j)
	jt.unlock()
	// The running tasks' counters are summed without the lock (a large
	// job's tens of thousands, polled every 100 ms by its client).
	st.Counters = countersToProto(counters.sum())
	return st, nil
}

// ListJobs lists running jobs, or all jobs: those in memory and the
// retired ones still in the retired-jobs cache, by submission. The jobs
// are read a chunk at a time (jobsChunked): each job's status is
// consistent, and heartbeats wait for one chunk, not for the list.
func (jt *JobTracker) ListJobs(ctx context.Context, req *mrpb.ListJobsRequest) (*mrpb.ListJobsResponse, error) {
	resp := &mrpb.ListJobsResponse{}
	var counters []counterSources
	// The policy's view (O(jobs)) is taken once, at the list's start:
	// the scheduling info of every job is as of then.
	var ps *partitions.PolicyStatus
	described := false
	var retired []*mrpb.JobStatus
	jt.jobsChunked(func(j *job) {
		if !described {
			ps, described = jt.describeLocked(), true
		}
		if req.All || !j.done() {
			st, c := jt.jobStatusFromLocked(j, ps)
			resp.Jobs = append(resp.Jobs, st)
			counters = append(counters, c)
		}
	}, func() {
		if req.All {
			retired = jt.retiredStatusesLocked()
		}
	})
	for i, c := range counters {
		resp.Jobs[i].Counters = countersToProto(c.sum())
	}
	if len(retired) > 0 {
		resp.Jobs = append(retired, resp.Jobs...)
		sortStatuses(resp.Jobs)
	}
	return resp, nil
}

// listChunk is the most jobs a list reads under one hold of the lock.
const listChunk = 64

// jobsChunked calls each, under the lock, for every job in memory in
// submission order, releasing and taking the lock again every listChunk
// jobs; then last under the final hold. A job retired between two holds
// is skipped: it is then in the retired-jobs cache, which last reads.
func (jt *JobTracker) jobsChunked(each func(j *job), last func()) {
	jt.lock(holderClientList)
	order := slices.Clone(jt.order)
	for i := 0; ; i += listChunk {
		for _, j := range order[i:min(i+listChunk, len(order))] {
			if jt.jobs[j.id] == j {
				each(j)
			}
		}
		if i+listChunk >= len(order) {
			last()
			jt.unlock()
			return
		}
		jt.unlock()
		jt.lock(holderClientList)
	}
}

// KillJob kills a running job.
func (jt *JobTracker) KillJob(ctx context.Context, req *mrpb.KillJobRequest) (*mrpb.KillJobResponse, error) {
	jt.lock(holderClient)
	j, ok := jt.jobs[req.JobId]
	if !ok {
		jt.unlock()
		st, err := jt.retiredJobStatus(req.JobId)
		if err != nil {
			return nil, err
		}
		return &mrpb.KillJobResponse{Killed: false, State: st.State}, nil
	}
	defer jt.unlock()
	if j.done() || j.committing {
		return &mrpb.KillJobResponse{Killed: false, State: j.state.String()}, nil
	}
	jt.endJobLocked(j, jobKilled, "killed by user")
	return &mrpb.KillJobResponse{Killed: true, State: j.state.String()}, nil
}

// GetJobHistory returns a finished job's history record.
func (jt *JobTracker) GetJobHistory(ctx context.Context, req *mrpb.JobHistoryRequest) (*mrpb.JobHistoryResponse, error) {
	// A job that has just ended may still be having its file written.
	jt.lock(holderClient)
	var written chan struct{}
	if j := jt.jobs[req.JobId]; j != nil {
		written = j.historyDone
	}
	jt.unlock()
	if written != nil {
		select {
		case <-written:
		case <-ctx.Done():
			return nil, status.FromContextError(ctx.Err()).Err()
		}
	}
	data, err := jt.history.Read(req.JobId)
	if err != nil {
		return nil, status.Error(codes.NotFound, err.Error())
	}
	return &mrpb.JobHistoryResponse{JsonLines: data}, nil
}

// jobStatusNoCountersLocked is the job's status but its counters, and
// what they are summed from (counterSources.sum, which needs no lock).
func (jt *JobTracker) jobStatusNoCountersLocked(j *job) (*mrpb.JobStatus, counterSources) {
	return jt.jobStatusFromLocked(j, jt.describeLocked())
}

// jobStatusFromLocked is jobStatusNoCountersLocked with the policy's
// view ps (describeLocked) given: a list describes once for all its jobs.
func (jt *JobTracker) jobStatusFromLocked(j *job, ps *partitions.PolicyStatus) (*mrpb.JobStatus, counterSources) {
	st := &mrpb.JobStatus{
		JobId:    j.id,
		Name:     j.spec.Name,
		State:    j.state.String(),
		SubmitMs: j.submit.UnixMilli(),
		StartMs:  j.start.UnixMilli(),
		Error:    j.err,
		User:     j.spec.User,
		Pool:     j.spec.Pool,
		Output:   j.spec.Output,
		Priority: priorityName(j.priority),
		Maps:     j.summary(partitions.Map),
		Reduces:  j.summary(partitions.Reduce),
	}
	if !j.finish.IsZero() {
		st.FinishMs = j.finish.UnixMilli()
	}
	p := j.progresses()
	st.MapProgress, st.ReduceProgress = float32(p[partitions.Map]), float32(p[partitions.Reduce])
	st.SchedulingInfo = schedulingInfo(ps, j.id)
	st.TrackingUrl = jt.trackingURL(j.id)
	for _, s := range j.speculations {
		st.Speculations = append(st.Speculations, s.proto())
	}
	st.BlacklistedTrackers = jobBlacklistLocked(j)
	return st, jt.jobCounterSourcesLocked(j)
}

// jobCountersLocked sums the counters of each task's successful attempt
// (or, while it runs, its most advanced live attempt) with the job
// counters, as Hadoop's job counters are.
func (jt *JobTracker) jobCountersLocked(j *job) mr.CounterSet {
	return jt.jobCounterSourcesLocked(j).sum()
}

// counterSources are the counter sets a job's counters are the sum of.
// The job counters and the successful attempts' sum, which change under
// the lock, are copies; an attempt's counters are replaced by its reports,
// never changed, and a split prefix is made for the call, so those are
// shared: the sum needs no lock.
type counterSources []mr.CounterSet

// jobCounterSourcesLocked gathers the job's counter sources: copies of
// the job counters, of the successful attempts' sum (kept as tasks
// succeed, lifecycle.go) and of the running tasks' sum (kept as they
// report, running.go): O(counter names), whatever the number of tasks.
func (jt *JobTracker) jobCounterSourcesLocked(j *job) counterSources {
	job, done, run := mr.CounterSet{}, mr.CounterSet{}, mr.CounterSet{}
	job.Merge(j.counters)
	done.Merge(j.doneCounters)
	run.Merge(j.runCounters)
	return counterSources{job, done, run}
}

// sum adds the sources up.
func (cs counterSources) sum() mr.CounterSet {
	out := mr.CounterSet{}
	for _, c := range cs {
		out.Merge(c)
	}
	return out
}

// summary counts the job's tasks of a type by state, as kept by
// task.to (a running task is one with a live attempt).
func (j *job) summary(typ partitions.TaskType) *mrpb.TaskSummary {
	n := j.byState[typ]
	total := len(j.maps)
	if typ == partitions.Reduce {
		total = len(j.reduces)
	}
	return &mrpb.TaskSummary{Total: int32(total), Succeeded: int32(n[taskSucceeded]), Failed: int32(n[taskFailed]),
		Killed: int32(n[taskKilled]), Running: int32(n[taskRunning]), Pending: int32(n[taskPending])}
}

// emptyPhaseProgress is the progress of a phase without tasks, given
// the number of maps: a job without maps has done its map phase (100%),
// and a job without any task is done (Hadoop 1 sets both phases to 100%
// when a job has no splits); a map-only job reports reduce 0%
// throughout, as Hadoop's client shows it ("map 100% reduce 0%" at the
// end): it has no reduce phase to report.
func emptyPhaseProgress(typ partitions.TaskType, maps int) float64 {
	if typ == partitions.Reduce && maps > 0 {
		return 0
	}
	return 1
}

// progresses is the mean progress of the job's maps and of its reduces:
// 1 for a task that succeeded, its best live attempt's for a running one,
// 0 otherwise (emptyPhaseProgress for a type without tasks). The running
// tasks' part is the running total (running.go): O(1).
func (j *job) progresses() [2]float64 {
	sum := j.runProgress
	var out [2]float64
	for typ, total := range [2]int{len(j.maps), len(j.reduces)} {
		if total == 0 {
			out[typ] = emptyPhaseProgress(partitions.TaskType(typ), len(j.maps))
			continue
		}
		out[typ] = (float64(j.byState[typ][taskSucceeded]) + sum[typ]) / float64(total)
	}
	return out
}

// KillTaskAttempt ends a running attempt at a user's request: killed
// (not counted against the task's attempts) or, with Fail, failed
// (counted), as Hadoop's -kill-task and -fail-task.
func (jt *JobTracker) KillTaskAttempt(ctx context.Context, req *mrpb.KillTaskAttemptRequest) (*mrpb.KillTaskAttemptResponse, error) {
	jt.lock(holderClient)
	defer jt.unlock()
	j, a := jt.findAttempt(req.AttemptId)
	if a == nil {
		return nil, status.Errorf(codes.NotFound, "no task attempt %s (an attempt id is attempt_<jobtracker>_<job>_<m|r>_<task>_<n>)", req.AttemptId)
	}
	if j.done() || !a.live() {
		return &mrpb.KillTaskAttemptResponse{Killed: false, State: a.state.String()}, nil
	}
	if req.Fail {
		jt.failAttemptLocked(a, "failed by user")
	} else {
		jt.killAttemptLocked(a, "killed by user")
	}
	return &mrpb.KillTaskAttemptResponse{Killed: true, State: a.state.String()}, nil
}

// SetJobPriority changes a running job's priority; policies read it from
// the view of the next offer (FIFO orders by it, FAIR weighs by it).
func (jt *JobTracker) SetJobPriority(ctx context.Context, req *mrpb.SetJobPriorityRequest) (*mrpb.SetJobPriorityResponse, error) {
	p, ok := jobPriorities[req.Priority]
	if !ok {
		return nil, status.Errorf(codes.InvalidArgument, "priority %q: want VERY_HIGH, HIGH, NORMAL, LOW or VERY_LOW", req.Priority)
	}
	jt.lock(holderClient)
	defer jt.unlock()
	j, ok := jt.jobs[req.JobId]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "no running job %s", req.JobId)
	}
	if j.done() {
		return nil, status.Errorf(codes.FailedPrecondition, "job %s is %s: its priority can no longer change", j.id, j.state)
	}
	j.priority = p
	j.viewChanged()
	jt.log.Info("job priority changed", "job", j.id, "priority", req.Priority)
	return &mrpb.SetJobPriorityResponse{Priority: int32(p)}, nil
}

// ListTaskAttempts lists a job's task attempts, in the order they
// started.
func (jt *JobTracker) ListTaskAttempts(ctx context.Context, req *mrpb.TaskAttemptsRequest) (*mrpb.TaskAttemptsResponse, error) {
	jt.lock(holderClient)
	defer jt.unlock()
	j, ok := jt.jobs[req.JobId]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "no job %s in the JobTracker's memory (a retired job's attempts are in its history: mr job -history)", req.JobId)
	}
	var out []*mrpb.TaskAttemptInfo
	for _, ts := range [][]*task{j.maps, j.reduces} {
		for _, t := range ts {
			for _, a := range t.attempts {
				info := &mrpb.TaskAttemptInfo{AttemptId: a.id, TaskType: typeLetter(t.typ), Task: int32(t.index), State: a.state.String(),
					Tracker: a.tracker, StartMs: a.start.UnixMilli(), Diagnostic: a.diag}
				if tr := jt.trackers[a.tracker]; tr != nil {
					info.Host = tr.host
				}
				if !a.finish.IsZero() {
					info.FinishMs = a.finish.UnixMilli()
				}
				out = append(out, info)
			}
		}
	}
	sort.SliceStable(out, func(i, k int) bool { return out[i].StartMs < out[k].StartMs })
	return &mrpb.TaskAttemptsResponse{Attempts: out}, nil
}
