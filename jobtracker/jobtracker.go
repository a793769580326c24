// Package jobtracker is the master of the runtime: it accepts jobs, keeps
// the job, task and attempt state machines, hands tasks to TaskTrackers in
// their heartbeat replies (asking the configured policy in package
// partitions which job gets a free slot), tracks spill announcements for
// the per-spill shuffle, detects lost trackers and re-runs the maps whose
// output was lost, commits job output, and writes job history.
package jobtracker

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"gomr/conf"
	"gomr/mr"
	"gomr/mrpb"
	"gomr/partitions"
	"gomr/sched"
	"gomr/speculator"
)

// JobTracker is the master. Create it with New, then Serve.
type JobTracker struct {
	mrpb.UnimplementedJobTrackerServer

	cfg    *conf.Config
	log    *slog.Logger
	policy partitions.Policy
	// driver feeds the policy and carries out its decisions (package
	// sched, shared with the simulator); it is used under mu.
	driver  *sched.Driver
	history *History
	staging *Staging
	now     func() time.Time
	ident   string
	// auth is the TLS and ACL configuration (acl.go); nil with TLS off.
	auth *auth

	mu       sync.Mutex
	jobs     map[string]*job
	order    []*job
	nextJob  int
	trackers map[string]*trackerState
	// profiles are the job profiles by job name (see profiles.go).
	profiles map[string]partitions.Profile
	// lostReplies counts heartbeat replies that trackers did not get.
	lostReplies int
	// faults are the times at which succeeded jobs that had blacklisted
	// a tracker ended, by tracker name (blacklist.go).
	faults map[string][]time.Time
	// retire is the completed-job retirement state (see retire.go).
	retire retirement
	// aborts are the ended jobs whose output is aborted again once their
	// trackers have killed their attempts (abort.go).
	aborts map[string]*pendingAbort

	// specParams are the cluster's speculation parameters (the scan
	// period); each job's speculator reads its own from the job's
	// configuration. cloneCost is the clone-cost estimator all jobs share.
	specParams speculator.Params
	cloneCost  *speculator.Estimator

	grpc     *grpc.Server
	listener net.Listener
	stop     chan struct{}
	stopOnce sync.Once
	wg       sync.WaitGroup
}

// Options are the optional parts of a JobTracker.
type Options struct {
	Logger *slog.Logger
	// Now replaces time.Now (tests).
	Now func() time.Time
}

// New builds a JobTracker from the cluster configuration.
func New(cfg *conf.Config, opts Options) (*JobTracker, error) {
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	policyName := cfg.String("scheduler.policy")
	policy, err := partitions.New(policyName, cfg)
	if err != nil {
		return nil, fmt.Errorf("configuration key scheduler.policy: %w", err)
	}
	histDir := cfg.String("mapreduce.jobtracker.jobhistory.location")
	hist, err := OpenHistory(histDir)
	if err != nil {
		return nil, err
	}
	sysDir := cfg.String("mapreduce.jobtracker.system.dir")
	if sysDir == "" {
		sysDir = filepath.Join(filepath.Dir(filepath.Clean(histDir)), "system")
	}
	staging, err := OpenStaging(sysDir)
	if err != nil {
		return nil, err
	}
	profiles, err := loadProfiles(cfg.String("mapreduce.jobtracker.jobhistory.location"))
	if err != nil {
		return nil, fmt.Errorf("reading job profiles from the history: %w", err)
	}
	specParams, err := speculator.FromConfig(cfg)
	if err != nil {
		return nil, err
	}
	auth, err := newAuth(cfg)
	if err != nil {
		return nil, err
	}
	ident := now().Format("200601021504")
	lastJob, err := lastJobNumber(ident, histDir, sysDir)
	if err != nil {
		return nil, err
	}
	jt := &JobTracker{
		auth:       auth,
		staging:    staging,
		nextJob:    lastJob,
		specParams: specParams,
		cloneCost:  speculator.NewEstimator(specParams.Estimator),
		profiles:   profiles,
		cfg:        cfg,
		log:        log.With("component", "jobtracker"),
		policy:     policy,
		driver:     sched.New(policy),
		history:    hist,
		now:        now,
		ident:      ident,
		jobs:       map[string]*job{},
		trackers:   map[string]*trackerState{},
		stop:       make(chan struct{}),
		retire: newRetirement(cfg.Duration("mapred.jobtracker.retirejob.interval"), cfg.Duration("mapred.jobtracker.retirejob.check"),
			cfg.Int("mapred.jobtracker.completeuserjobs.maximum"), cfg.Int("mapred.job.tracker.retiredjobs.cache.size")),
	}
	if cfg.Bool("mapreduce.jobtracker.restart.recover") {
		jt.mu.Lock()
		err = jt.recoverJobs()
		jt.mu.Unlock()
	} else {
		err = jt.failLostJobs()
	}
	if err != nil {
		return nil, err
	}
	return jt, nil
}

// Listen binds the RPC address (mapreduce.jobtracker.address, or addr if
// not empty) and returns the bound address.
func (jt *JobTracker) Listen(addr string) (string, error) {
	if addr == "" {
		addr = jt.cfg.String("mapreduce.jobtracker.address")
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return "", fmt.Errorf("jobtracker listen on %s: %w", addr, err)
	}
	jt.listener = l
	return l.Addr().String(), nil
}

// Serve runs the RPC server and the tracker-expiry loop until ctx ends or
// Stop is called. Listen must have been called.
func (jt *JobTracker) Serve(ctx context.Context) error {
	if jt.listener == nil {
		return errors.New("jobtracker: Serve before Listen")
	}
	if _, err := jt.StartHTTP(ctx, ""); err != nil {
		jt.listener.Close()
		return err
	}
	jt.grpc = grpc.NewServer(jt.serverOptions()...)
	mrpb.RegisterJobTrackerServer(jt.grpc, jt)
	jt.wg.Add(1)
	go func() {
		defer jt.wg.Done()
		jt.expiryLoop(ctx)
	}()
	jt.wg.Add(1)
	go func() {
		defer jt.wg.Done()
		jt.speculationLoop(ctx)
	}()
	jt.wg.Add(1)
	go func() {
		defer jt.wg.Done()
		jt.retireLoop(ctx)
	}()
	go func() {
		select {
		case <-ctx.Done():
		case <-jt.stop:
		}
		jt.grpc.Stop()
	}()
	jt.log.Info("jobtracker serving", "address", jt.listener.Addr().String(), "policy", jt.policy.Name())
	err := jt.grpc.Serve(jt.listener)
	jt.Stop()
	jt.wg.Wait()
	if errors.Is(err, grpc.ErrServerStopped) {
		return nil
	}
	return err
}

// Stop ends Serve.
func (jt *JobTracker) Stop() { jt.stopOnce.Do(func() { close(jt.stop) }) }

func (jt *JobTracker) expiryLoop(ctx context.Context) {
	expiry := jt.cfg.Duration("mapreduce.jobtracker.expire.trackers.interval")
	// Checked every heartbeat interval (at most a quarter of the expiry),
	// so that a silent tracker is declared lost within the expiry plus
	// one interval of its last heartbeat.
	tick := time.NewTicker(max(min(expiry/4, jt.cfg.Duration("mapreduce.tasktracker.heartbeat.interval")), 20*time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-jt.stop:
			return
		case <-tick.C:
		}
		jt.mu.Lock()
		now := jt.now()
		for name, t := range jt.trackers {
			if now.Sub(t.lastSeen) > expiry {
				jt.log.Warn("lost tracker", "tracker", name, "silent", now.Sub(t.lastSeen).Round(time.Millisecond))
				jt.lostTrackerLocked(t, "Lost task tracker: "+name)
				continue
			}
			jt.expireLaunchesLocked(t, now, expiry)
		}
		jt.refreshBlacklistLocked(now)
		jt.expireRecoveredLocked(now)
		jt.mu.Unlock()
	}
}

// ---- client RPCs ----

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
	jt.mu.Lock()
	jt.nextJob++
	id := fmt.Sprintf("job_%s_%04d", jt.ident, jt.nextJob)
	now := jt.now()
	jt.mu.Unlock()
	if err := jt.staging.Write(&stagedJob{ID: id, Spec: spec, Splits: splits, Secret: secret, Submit: now}); err != nil {
		return nil, status.Errorf(codes.Internal, "%v", err)
	}

	j := newJob(id, spec, splits, secret, now, jcfg, spec8r)
	jt.mu.Lock()
	defer jt.mu.Unlock()
	jt.addJobLocked(j, now)
	jt.log.Info("job submitted", "job", j.id, "name", spec.Name, "maps", len(j.maps), "reduces", len(j.reduces), "output", spec.Output)
	jt.checkJobDoneLocked(j) // a job with no tasks at all is done at once
	return &mrpb.SubmitJobResponse{JobId: j.id}, nil
}

// newJob builds a running job with all its tasks pending.
func newJob(id string, spec mr.JobSpec, splits []mr.Split, secret []byte, submit time.Time, jcfg *conf.Config, spec8r *speculator.Speculator) *job {
	j := &job{
		id:            id,
		spec:          spec,
		conf:          jcfg,
		confMap:       jcfg.Map(),
		secret:        secret,
		splits:        splits,
		priority:      priorityOf(spec.Priority, jcfg.String("mapreduce.job.priority")),
		state:         StateRunning,
		submit:        submit,
		start:         submit,
		counters:      mr.CounterSet{},
		winners:       map[spillKey]*attempt{},
		notify:        make(chan struct{}),
		fetchFailures: map[string]int{},
		trackers:      map[string]bool{},
		speculator:    spec8r,
	}
	for i := range splits {
		j.maps = append(j.maps, &task{job: j, typ: partitions.Map, index: i, state: StatePending, failedOn: map[string]bool{}})
	}
	for i := 0; i < spec.NumReduces; i++ {
		j.reduces = append(j.reduces, &task{job: j, typ: partitions.Reduce, index: i, state: StatePending, failedOn: map[string]bool{}})
	}
	return j
}

// addJobLocked makes the JobTracker run j and tells the policy.
func (jt *JobTracker) addJobLocked(j *job, now time.Time) {
	jt.jobs[j.id] = j
	jt.order = append(jt.order, j)
	jt.driver.Submitted(now, jt.jobViewLocked(j, nil))
}

func priorityOf(explicit int, named string) int {
	if explicit != 0 {
		return explicit
	}
	switch named {
	case "VERY_HIGH":
		return 2
	case "HIGH":
		return 1
	case "LOW":
		return -1
	case "VERY_LOW":
		return -2
	}
	return 0
}

// GetJobStatus reports a job's state, progress and counters; a retired
// job's come from the retired-jobs cache or its history (retire.go).
func (jt *JobTracker) GetJobStatus(ctx context.Context, req *mrpb.JobStatusRequest) (*mrpb.JobStatus, error) {
	jt.mu.Lock()
	j, ok := jt.jobs[req.JobId]
	if !ok {
		jt.mu.Unlock()
		return jt.retiredJobStatus(req.JobId)
	}
	defer jt.mu.Unlock()
	return jt.jobStatusLocked(j), nil
}

// ListJobs lists running jobs, or all jobs: those in memory and the
// retired ones still in the retired-jobs cache, by submission.
func (jt *JobTracker) ListJobs(ctx context.Context, req *mrpb.ListJobsRequest) (*mrpb.ListJobsResponse, error) {
	jt.mu.Lock()
	defer jt.mu.Unlock()
	resp := &mrpb.ListJobsResponse{}
	if req.All {
		resp.Jobs = jt.retiredStatusesLocked()
	}
	retired := len(resp.Jobs)
	for _, j := range jt.order {
		if req.All || !j.done() {
			resp.Jobs = append(resp.Jobs, jt.jobStatusLocked(j))
		}
	}
	if retired > 0 {
		sortStatuses(resp.Jobs)
	}
	return resp, nil
}

// KillJob kills a running job.
func (jt *JobTracker) KillJob(ctx context.Context, req *mrpb.KillJobRequest) (*mrpb.KillJobResponse, error) {
	jt.mu.Lock()
	j, ok := jt.jobs[req.JobId]
	if !ok {
		jt.mu.Unlock()
		st, err := jt.retiredJobStatus(req.JobId)
		if err != nil {
			return nil, err
		}
		return &mrpb.KillJobResponse{Killed: false, State: st.State}, nil
	}
	defer jt.mu.Unlock()
	if j.done() || j.committing {
		return &mrpb.KillJobResponse{Killed: false, State: j.state}, nil
	}
	jt.endJobLocked(j, StateKilled, "killed by user")
	return &mrpb.KillJobResponse{Killed: true, State: j.state}, nil
}

// GetJobHistory returns a finished job's history record.
func (jt *JobTracker) GetJobHistory(ctx context.Context, req *mrpb.JobHistoryRequest) (*mrpb.JobHistoryResponse, error) {
	data, err := jt.history.Read(req.JobId)
	if err != nil {
		return nil, status.Error(codes.NotFound, err.Error())
	}
	return &mrpb.JobHistoryResponse{JsonLines: data}, nil
}

func (jt *JobTracker) jobStatusLocked(j *job) *mrpb.JobStatus {
	st := &mrpb.JobStatus{
		JobId:    j.id,
		Name:     j.spec.Name,
		State:    j.state,
		SubmitMs: j.submit.UnixMilli(),
		StartMs:  j.start.UnixMilli(),
		Error:    j.err,
		User:     j.spec.User,
		Pool:     j.spec.Pool,
		Output:   j.spec.Output,
		Maps:     summarize(j.maps),
		Reduces:  summarize(j.reduces),
	}
	if !j.finish.IsZero() {
		st.FinishMs = j.finish.UnixMilli()
	}
	st.MapProgress = float32(avgProgress(j.maps))
	st.ReduceProgress = float32(avgProgress(j.reduces))
	st.Counters = countersToProto(jt.jobCountersLocked(j))
	st.SchedulingInfo = jt.schedulingInfoLocked(j.id)
	for _, s := range j.speculations {
		st.Speculations = append(st.Speculations, s.proto())
	}
	st.BlacklistedTrackers = jobBlacklistLocked(j)
	return st
}

func avgProgress(ts []*task) float64 {
	if len(ts) == 0 {
		return 1
	}
	sum := 0.0
	for _, t := range ts {
		sum += t.progress()
	}
	return sum / float64(len(ts))
}

func summarize(ts []*task) *mrpb.TaskSummary {
	s := &mrpb.TaskSummary{Total: int32(len(ts))}
	for _, t := range ts {
		switch {
		case t.state == StateSucceeded:
			s.Succeeded++
		case t.state == StateFailed:
			s.Failed++
		case t.state == StateKilled:
			s.Killed++
		case len(t.running()) > 0:
			s.Running++
		default:
			s.Pending++
		}
	}
	return s
}

// jobCountersLocked sums the counters of each task's successful attempt
// (or, while it runs, its most advanced live attempt) with the job
// counters, as Hadoop's job counters are.
func (jt *JobTracker) jobCountersLocked(j *job) mr.CounterSet {
	out := mr.CounterSet{}
	out.Merge(j.counters)
	for _, ts := range [][]*task{j.maps, j.reduces} {
		for _, t := range ts {
			if t.successful != nil {
				out.Merge(t.successful.counters)
				continue
			}
			var best *attempt
			for _, a := range t.running() {
				if best == nil || a.progress > best.progress {
					best = a
				}
			}
			if best != nil {
				out.Merge(best.counters)
			}
		}
	}
	return out
}

// ---- tracker RPCs ----

func (jt *JobTracker) findAttempt(id string) (*job, *attempt) {
	// attempt_<ident>_<n>_<m|r>_<task>_<k>
	parts := strings.Split(id, "_")
	if len(parts) != 6 || parts[0] != "attempt" {
		return nil, nil
	}
	j := jt.jobs["job_"+parts[1]+"_"+parts[2]]
	if j == nil {
		return nil, nil
	}
	var idx int
	if _, err := fmt.Sscanf(parts[4], "%d", &idx); err != nil {
		return j, nil
	}
	ts := j.maps
	if parts[3] == "r" {
		ts = j.reduces
	}
	if idx < 0 || idx >= len(ts) {
		return j, nil
	}
	for _, a := range ts[idx].attempts {
		if a.id == id {
			return j, a
		}
	}
	return j, nil
}

func (jt *JobTracker) attemptStatusLocked(t *trackerState, st *mrpb.AttemptStatus, now time.Time) {
	j, a := jt.findAttempt(st.AttemptId)
	if a == nil || a.tracker != t.name {
		// An attempt we do not know (purged job, or from before a reinit).
		t.actions = append(t.actions, &mrpb.TaskAction{Action: &mrpb.TaskAction_KillAttempt{KillAttempt: st.AttemptId}})
		return
	}
	if !a.live() {
		// Already final here (killed by us, or lost). A tracker that still
		// runs it has not got the kill order: it is sent again.
		if (st.State == StateRunning || st.State == StateCommitPending) && !killOrderPendingLocked(t, a.id) {
			t.actions = append(t.actions, &mrpb.TaskAction{Action: &mrpb.TaskAction_KillAttempt{KillAttempt: a.id}})
		}
		return
	}
	// A report counts for the runtime estimate once the attempt has made
	// progress: before that it has nothing to extrapolate from (an
	// attempt still at 0 is judged by the stagnation rule instead).
	if st.Progress > 0 {
		if st.Progress != a.progress || a.progressChanged.IsZero() {
			a.progressChanged = now
		}
		a.reportAt = now
		if j.speculator != nil {
			prevP, prevAt := a.rateP, a.rateAt
			if prevAt.IsZero() {
				prevP, prevAt = a.startProgress, a.start
			}
			a.rate = speculator.SmoothRate(a.rate, prevP, prevAt, float64(st.Progress), now, j.speculator.Params().SmoothLambda)
			a.rateP, a.rateAt = float64(st.Progress), now
		}
	}
	a.rssBytes, a.fileSetBytes, a.cloneable = st.RssBytes, st.FileSetBytes, st.Cloneable
	a.progress = st.Progress
	a.phase = st.Phase
	a.counters = countersFromProto(st.Counters)
	if st.ShuffleFinishMs > 0 {
		a.shuffleFinish = time.UnixMilli(st.ShuffleFinishMs)
	}
	if st.SortFinishMs > 0 {
		a.sortFinish = time.UnixMilli(st.SortFinishMs)
	}
	if st.Clone != nil {
		if jt.cloneStatusLocked(a, st.Clone, now) {
			return
		}
	}
	switch st.State {
	case StateRunning:
	case StateCommitPending:
		a.state = StateCommitPending
	case StateSucceeded:
		if j.done() {
			a.state, a.finish = StateKilled, now
			return
		}
		jt.attemptSucceededLocked(a, now)
	case StateFailed:
		jt.attemptFailedLocked(a, st.Diagnostic, now, true)
	case StateKilled:
		jt.attemptFailedLocked(a, st.Diagnostic, now, false)
	}
}

// spillAnnouncedLocked records spill k of a map attempt. The first
// announcement of each (map, spill) is the one reducers are told of; a later
// one from another attempt must agree with it (same records, lengths and
// checksums in every partition), or that attempt is failed: mixing spills of
// attempts is only correct when they are identical.
func (jt *JobTracker) spillAnnouncedLocked(t *trackerState, sp *mrpb.SpillAnnouncement) {
	j, a := jt.findAttempt(sp.AttemptId)
	if a == nil || a.task.typ != partitions.Map || j.done() || !a.live() {
		return
	}
	k := int(sp.Spill)
	if len(sp.Segments) != len(j.reduces) {
		jt.failAttemptLocked(a, fmt.Sprintf("spill %d has %d partitions, job has %d reduces", k, len(sp.Segments), len(j.reduces)))
		return
	}
	a.spills[k] = sp.Segments
	a.shuffleAddr = t.shuffleAddr
	if sp.Final {
		a.final = k
	}
	key := spillKey{a.task.index, k}
	if w, ok := j.winners[key]; ok {
		if w != a && !sameSegments(w.spills[k], sp.Segments) {
			jt.failAttemptLocked(a, fmt.Sprintf("non-deterministic map output: spill %d differs from the one %s announced", k, w.id))
		}
		return
	}
	jt.publishSpillLocked(j, a, k)
}

func (jt *JobTracker) publishSpillLocked(j *job, a *attempt, k int) {
	j.winners[spillKey{a.task.index, k}] = a
	j.appendEvent(&mrpb.MapEvent{
		Kind:           "SPILL_READY",
		MapTask:        int32(a.task.index),
		Spill:          int32(k),
		Final:          a.final == k,
		AttemptId:      a.id,
		ShuffleAddress: a.shuffleAddr,
	}, a.spills[k])
}

// obsoleteMapOutputLocked withdraws a map attempt's spills: reducers are
// told, and any other attempt that announced the same spills takes over.
func (jt *JobTracker) obsoleteMapOutputLocked(a *attempt) {
	if a.obsolete || len(a.spills) == 0 {
		a.obsolete = true
		return
	}
	a.obsolete = true
	j := a.task.job
	j.appendEvent(&mrpb.MapEvent{Kind: "MAP_OBSOLETE", MapTask: int32(a.task.index), AttemptId: a.id}, nil)
	ks := make([]int, 0, len(a.spills))
	for k := range a.spills {
		ks = append(ks, k)
	}
	sort.Ints(ks)
	for _, k := range ks {
		key := spillKey{a.task.index, k}
		if j.winners[key] != a {
			continue
		}
		delete(j.winners, key)
		for _, other := range a.task.attempts {
			if other != a && !other.obsolete && other.spills[k] != nil && jt.trackers[other.tracker] != nil {
				jt.publishSpillLocked(j, other, k)
				break
			}
		}
	}
}

func (jt *JobTracker) attemptSucceededLocked(a *attempt, now time.Time) {
	t := a.task
	j := t.job
	a.state, a.finish, a.progress = StateSucceeded, now, 1
	if tr := jt.trackers[a.tracker]; tr != nil {
		delete(tr.attempts, a.id)
	}
	jt.addMillisLocked(a)
	if t.state == StateSucceeded {
		// Another attempt won the task: for the policy this one ended
		// without making it succeed.
		jt.driver.Ended(now, attemptKey(a), a.finish.Sub(a.start))
		return
	}
	if t.typ == partitions.Map && len(j.reduces) > 0 && a.final < 0 {
		jt.attemptFailedLocked(a, "map attempt finished without announcing its final spill", now, true)
		return
	}
	t.state = StateSucceeded
	t.successful = a
	jt.logTaskLocked(a)
	if a.speculative {
		j.counters.Add(mr.SpeculationGroup, mr.SpeculativeWins, 1)
	}
	endSpeculationLocked(t, "the task finished first")
	if t.typ == partitions.Map {
		j.finishedMaps++
	} else {
		j.finishedReduces++
	}
	jt.driver.Succeeded(now, attemptKey(a), a.finish.Sub(a.start))
	for _, other := range t.running() {
		jt.killAttemptLocked(other, "another attempt of the task succeeded")
	}
	jt.checkJobDoneLocked(j)
}

func (jt *JobTracker) addMillisLocked(a *attempt) {
	name := mr.MillisMaps
	if a.task.typ == partitions.Reduce {
		name = mr.MillisReduces
	}
	a.task.job.counters.Add(mr.JobCounterGroup, name, a.finish.Sub(a.start).Milliseconds())
}

// attemptFailedLocked ends a live attempt as FAILED (counted against the
// task's attempt limit) or KILLED (not counted), and reschedules or fails
// the task.
func (jt *JobTracker) attemptFailedLocked(a *attempt, diag string, now time.Time, counts bool) {
	t := a.task
	j := t.job
	if tr := jt.trackers[a.tracker]; tr != nil {
		delete(tr.attempts, a.id)
	}
	a.finish = now
	a.diag = diag
	if t.commitGrant == a {
		t.commitGrant = nil
	}
	if sp := t.specPending; sp != nil && (sp.source == a || sp.attempt == a) {
		endSpeculationLocked(t, "attempt "+a.id+" ended first")
	}
	if counts {
		a.state = StateFailed
		t.failures++
		t.failedOn[a.tracker] = true
		t.lastError = diag
		jt.noteTrackerFailureLocked(j, a.tracker)
		name := mr.NumFailedMaps
		if t.typ == partitions.Reduce {
			name = mr.NumFailedReduces
		}
		j.counters.Add(mr.JobCounterGroup, name, 1)
		jt.log.Warn("attempt failed", "attempt", a.id, "tracker", a.tracker, "error", firstLine(diag))
	} else {
		a.state = StateKilled
		name := mr.NumKilledMaps
		if t.typ == partitions.Reduce {
			name = mr.NumKilledReduces
		}
		j.counters.Add(mr.JobCounterGroup, name, 1)
	}
	jt.addMillisLocked(a)
	// Every end of an attempt is told, a losing speculative attempt's
	// too: the policy counts attempts, not tasks.
	jt.driver.Ended(now, attemptKey(a), a.finish.Sub(a.start))
	if j.done() || t.state == StateSucceeded {
		return
	}
	if len(t.running()) > 0 {
		return
	}
	maxAttempts := j.conf.Int("mapreduce.map.maxattempts")
	if t.typ == partitions.Reduce {
		maxAttempts = j.conf.Int("mapreduce.reduce.maxattempts")
	}
	if t.failures >= maxAttempts {
		t.state = StateFailed
		jt.endJobLocked(j, StateFailed, fmt.Sprintf("Task %s failed %d times; last error: %s", t.id(), t.failures, t.lastError))
		return
	}
	t.state = StatePending
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// failAttemptLocked fails a live attempt on the JobTracker's own decision
// and tells its tracker to kill it.
func (jt *JobTracker) failAttemptLocked(a *attempt, diag string) {
	if !a.live() {
		return
	}
	if tr := jt.trackers[a.tracker]; tr != nil {
		tr.actions = append(tr.actions, &mrpb.TaskAction{Action: &mrpb.TaskAction_KillAttempt{KillAttempt: a.id}})
	}
	jt.attemptFailedLocked(a, diag, jt.now(), true)
}

func (jt *JobTracker) killAttemptLocked(a *attempt, why string) {
	if !a.live() {
		return
	}
	if tr := jt.trackers[a.tracker]; tr != nil {
		tr.actions = append(tr.actions, &mrpb.TaskAction{Action: &mrpb.TaskAction_KillAttempt{KillAttempt: a.id}})
	}
	jt.attemptFailedLocked(a, why, jt.now(), false)
}

// lostTrackerLocked handles a tracker that stopped heartbeating: its live
// attempts are killed (not counted as failures, as in Hadoop), and the map
// outputs it held are withdrawn; completed maps whose output lived only
// there are re-run while a reduce of their job still needs them.
func (jt *JobTracker) lostTrackerLocked(t *trackerState, why string) {
	delete(jt.trackers, t.name)
	now := jt.now()
	for _, j := range jt.order {
		if j.done() {
			continue
		}
		needMaps := j.finishedReduces < len(j.reduces)
		for _, m := range j.maps {
			for _, a := range m.attempts {
				if a.tracker != t.name {
					continue
				}
				if a.live() {
					jt.attemptFailedLocked(a, why, now, false)
				}
				if needMaps {
					jt.obsoleteMapOutputLocked(a)
					if m.successful == a {
						jt.rerunMapLocked(m, now)
					}
				}
			}
		}
		for _, r := range j.reduces {
			for _, a := range r.running() {
				if a.tracker == t.name {
					jt.attemptFailedLocked(a, why, now, false)
				}
			}
		}
	}
}

// rerunMapLocked puts a completed map back to pending because its output
// is lost.
func (jt *JobTracker) rerunMapLocked(m *task, now time.Time) {
	j := m.job
	if m.state != StateSucceeded {
		return
	}
	m.state = StatePending
	m.successful = nil
	m.commitGrant = nil
	j.finishedMaps--
	jt.logRerunLocked(m)
	j.counters.Add(mr.JobCounterGroup, mr.NumKilledMaps, 1)
	jt.driver.MapOutputLost(now, j.id, m.index)
	jt.log.Info("re-running map whose output was lost", "task", m.id())
}

// GetMapEvents gives a reduce the spill events of its job from index From,
// waiting up to WaitMs for new ones.
func (jt *JobTracker) GetMapEvents(ctx context.Context, req *mrpb.MapEventsRequest) (*mrpb.MapEventsResponse, error) {
	wait := time.Duration(req.WaitMs) * time.Millisecond
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	for {
		jt.mu.Lock()
		j, ok := jt.jobs[req.JobId]
		if !ok {
			jt.mu.Unlock()
			return nil, status.Errorf(codes.NotFound, "unknown job %s", req.JobId)
		}
		if req.AttemptId != "" {
			if _, a := jt.findAttempt(req.AttemptId); a == nil || !a.live() {
				jt.mu.Unlock()
				return nil, status.Errorf(codes.FailedPrecondition, "attempt %s is not running", req.AttemptId)
			}
		}
		if int(req.Reduce) < 0 || int(req.Reduce) >= len(j.reduces) {
			jt.mu.Unlock()
			return nil, status.Errorf(codes.InvalidArgument, "job %s has no reduce %d", req.JobId, req.Reduce)
		}
		from := int(req.From)
		if from < 0 || from > len(j.events) {
			jt.mu.Unlock()
			return nil, status.Errorf(codes.InvalidArgument, "event index %d out of range", from)
		}
		if from < len(j.events) || j.done() {
			resp := &mrpb.MapEventsResponse{}
			for i := from; i < len(j.events); i++ {
				ev := j.events[i]
				out := &mrpb.MapEvent{Kind: ev.Kind, MapTask: ev.MapTask, Spill: ev.Spill, Final: ev.Final, AttemptId: ev.AttemptId, ShuffleAddress: ev.ShuffleAddress}
				if segs := j.evSegs[i]; segs != nil {
					out.Segment = segs[req.Reduce]
				}
				resp.Events = append(resp.Events, out)
			}
			jt.mu.Unlock()
			return resp, nil
		}
		ch := j.notify
		jt.mu.Unlock()
		select {
		case <-ch:
		case <-deadline.C:
			return &mrpb.MapEventsResponse{}, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// ReportFetchFailure counts a reducer's failure to fetch a map's output;
// after mapreduce.job.maxfetchfailures.per.map reports the map attempt's
// output is declared lost and the map re-run.
func (jt *JobTracker) ReportFetchFailure(ctx context.Context, req *mrpb.FetchFailureRequest) (*mrpb.Empty, error) {
	jt.mu.Lock()
	defer jt.mu.Unlock()
	j, a := jt.findAttempt(req.MapAttemptId)
	if a == nil || j.done() || a.obsolete {
		return &mrpb.Empty{}, nil
	}
	j.fetchFailures[a.id]++
	n := j.fetchFailures[a.id]
	jt.log.Warn("fetch failure reported", "map_attempt", a.id, "spill", req.Spill, "by", req.ReduceAttemptId, "reports", n, "cause", req.Cause)
	if n < j.conf.Int("mapreduce.job.maxfetchfailures.per.map") {
		return &mrpb.Empty{}, nil
	}
	now := jt.now()
	m := a.task
	jt.obsoleteMapOutputLocked(a)
	if a.live() {
		jt.failAttemptLocked(a, "Too many fetch-failures")
	} else if m.successful == a {
		a.state = StateFailed
		a.diag = "Too many fetch-failures"
		m.failures++
		j.counters.Add(mr.JobCounterGroup, mr.NumFailedMaps, 1)
		jt.rerunMapLocked(m, now)
		if m.failures >= j.conf.Int("mapreduce.map.maxattempts") {
			m.state = StateFailed
			jt.endJobLocked(j, StateFailed, fmt.Sprintf("Task %s failed %d times; last error: Too many fetch-failures", m.id(), m.failures))
		}
	}
	return &mrpb.Empty{}, nil
}

// CanCommit grants the output commit of a task to exactly one attempt.
func (jt *JobTracker) CanCommit(ctx context.Context, req *mrpb.CanCommitRequest) (*mrpb.CanCommitResponse, error) {
	jt.mu.Lock()
	defer jt.mu.Unlock()
	j, a := jt.findAttempt(req.AttemptId)
	if a == nil || j.done() || !a.live() {
		return &mrpb.CanCommitResponse{CanCommit: false}, nil
	}
	t := a.task
	if t.state == StateSucceeded {
		return &mrpb.CanCommitResponse{CanCommit: false}, nil
	}
	if t.commitGrant == nil || !t.commitGrant.live() {
		t.commitGrant = a
	}
	a.state = StateCommitPending
	return &mrpb.CanCommitResponse{CanCommit: t.commitGrant == a}, nil
}

// ---- scheduling ----

func (jt *JobTracker) jobViewLocked(j *job, offer *trackerState) partitions.JobView {
	v := partitions.JobView{
		ID:              j.id,
		Name:            j.spec.Name,
		Pool:            j.spec.Pool,
		Priority:        j.priority,
		Submitted:       j.submit,
		Maps:            len(j.maps),
		Reduces:         len(j.reduces),
		FinishedMaps:    j.finishedMaps,
		FinishedReduces: j.finishedReduces,
		ReducesReady:    j.reducesReady(),
	}
	if v.Pool == "" {
		v.Pool = j.conf.String("mapreduce.job.queuename")
	}
	if p, ok := jt.profiles[j.spec.Name]; ok {
		v.Profile = &p
		v.EstimatedSize = p.EstimateSize(v.Maps, v.Reduces)
	}
	for _, s := range j.splits {
		if s.Path != "" {
			v.InputBytes += s.Length
		}
	}
	if d := j.spec.DeadlineSeconds; d > 0 {
		v.Deadline = j.submit.Add(time.Duration(d * float64(time.Second)))
	} else if d := j.conf.Float("mapreduce.job.deadline.seconds"); d > 0 {
		v.Deadline = j.submit.Add(time.Duration(d * float64(time.Second)))
	}
	for _, m := range j.maps {
		switch {
		case m.state == StatePending:
			v.PendingMaps++
			for _, h := range j.splits[m.index].Hosts {
				if v.LocalPendingMaps == nil {
					v.LocalPendingMaps = map[string]int{}
				}
				v.LocalPendingMaps[h]++
			}
		case m.state != StateSucceeded:
			v.RunningMaps += len(m.running())
			if waitsFor(m, offer) {
				v.PendingMaps++ // a speculative attempt waits for a slot
			}
		}
	}
	for _, r := range j.reduces {
		switch {
		case r.state == StatePending:
			v.PendingReduces++
		case r.state != StateSucceeded:
			v.RunningReduces += len(r.running())
			if waitsFor(r, offer) {
				v.PendingReduces++
			}
		}
	}
	if offer != nil && jt.jobAvoidsLocked(j, offer.name) {
		// The job has blacklisted the offering tracker: it has nothing
		// to run there.
		v.PendingMaps, v.PendingReduces, v.LocalPendingMaps = 0, 0, nil
	}
	return v
}

// clusterViewLocked is the policy's view of the cluster for a slot offer
// from tracker offer (nil: the view of no particular offer).
func (jt *JobTracker) clusterViewLocked(now time.Time, offer *trackerState) *partitions.ClusterView {
	view := &partitions.ClusterView{Now: now}
	for _, t := range jt.trackers {
		if t.blacklisted {
			continue // its slots run nothing
		}
		view.Trackers++
		view.MapSlots += t.mapSlots
		view.ReduceSlots += t.reduceSlots
	}
	for _, j := range jt.order {
		// A job committing its output is in the view (nothing pending or
		// running) until it ends, as a job running its cleanup task is in
		// the simulator's: the policy knows a job from JobSubmitted to
		// JobFinished.
		if j.done() {
			continue
		}
		view.Jobs = append(view.Jobs, jt.jobViewLocked(j, offer))
	}
	return view
}

func (jt *JobTracker) assignLocked(t *trackerState, freeMaps, freeReduces int, now time.Time) {
	if t.blacklisted {
		return
	}
	// Offer even with no free slot: a policy may answer an arrival with
	// preemptions (MinEDF-WC).
	view := jt.clusterViewLocked(now, t)
	if len(view.Jobs) == 0 {
		return
	}
	offer := partitions.SlotOffer{Tracker: t.name, Host: t.host, FreeMaps: freeMaps, FreeReduces: freeReduces}
	if _, err := jt.driver.Offer(view, offer, trackerHost{jt: jt, t: t, now: now}); err != nil {
		// A refused decision is a policy's bug: nothing of it was carried
		// out, and the next heartbeat offers again.
		jt.log.Error("scheduling decision refused", "tracker", t.name, "error", err)
	}
}

// trackerHost carries out the policy driver's decisions for an offer of
// tracker t.
type trackerHost struct {
	jt  *JobTracker
	t   *trackerState
	now time.Time
}

// Launch starts a pending task of the job on the tracker (the best one
// for it, pickTaskLocked), or else a speculative attempt of the job that
// waits for a slot there; with neither it drops the assignment.
func (h trackerHost) Launch(_ partitions.SlotOffer, as partitions.Assignment) (bool, error) {
	jt := h.jt
	j := jt.jobs[as.JobID]
	if j == nil || j.done() || jt.jobAvoidsLocked(j, h.t.name) {
		return false, nil
	}
	if tk := jt.pickTaskLocked(j, as.Type, h.t); tk != nil {
		jt.launchLocked(j, tk, h.t, h.now, false)
		return true, nil
	}
	if tk := speculativeTaskLocked(j, as.Type, h.t); tk != nil {
		jt.launchSpeculativeLocked(j, tk, h.t, h.now)
		return true, nil
	}
	return false, nil
}

// Kill kills a live attempt the driver chose as a preemption victim (not
// counted as a failure, as Hadoop counts preemptions).
func (h trackerHost) Kill(k sched.Attempt) error {
	a := h.jt.attemptOfLocked(k)
	if a == nil || !a.live() {
		return fmt.Errorf("attempt %s is not running", k)
	}
	h.jt.killAttemptLocked(a, "preempted by the scheduler")
	return nil
}

// attemptOfLocked finds the attempt the driver names.
func (jt *JobTracker) attemptOfLocked(k sched.Attempt) *attempt {
	j := jt.jobs[k.Job]
	if j == nil {
		return nil
	}
	ts := j.tasks(k.Type)
	if k.Task < 0 || k.Task >= len(ts) {
		return nil
	}
	for _, a := range ts[k.Task].attempts {
		if a.num == k.Attempt {
			return a
		}
	}
	return nil
}

// attemptKey names an attempt as the policy driver does.
func attemptKey(a *attempt) sched.Attempt {
	return sched.Attempt{Job: a.task.job.id, Type: a.task.typ, Task: a.task.index, Attempt: a.num}
}

// pickTaskLocked chooses a pending task of the job for the tracker:
// data-local maps first, tasks that have not failed on this tracker before
// others, then the lowest index.
func (jt *JobTracker) pickTaskLocked(j *job, typ partitions.TaskType, t *trackerState) *task {
	var best *task
	bestScore := math.MaxInt
	for _, tk := range j.tasks(typ) {
		if tk.state != StatePending {
			continue
		}
		score := 0
		if tk.failedOn[t.name] {
			if jt.otherTrackerCanRunLocked(tk) {
				continue // another tracker can take it
			}
			score += 2
		}
		if typ == partitions.Map && !contains(j.splits[tk.index].Hosts, t.host) {
			score++
		}
		if score < bestScore {
			best, bestScore = tk, score
		}
	}
	return best
}

// otherTrackerCanRunLocked tells whether a live tracker with slots of the
// task's type exists on which no attempt of the task has failed and that
// may get the task (not blacklisted across jobs or by the task's job).
func (jt *JobTracker) otherTrackerCanRunLocked(tk *task) bool {
	for name, tr := range jt.trackers {
		if tr.blacklisted || jt.jobAvoidsLocked(tk.job, name) {
			continue // it gets no task of this job
		}
		slots := tr.mapSlots
		if tk.typ == partitions.Reduce {
			slots = tr.reduceSlots
		}
		if slots > 0 && !tk.failedOn[name] {
			return true
		}
	}
	return false
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

func (jt *JobTracker) launchLocked(j *job, tk *task, t *trackerState, now time.Time, speculative bool) *attempt {
	return jt.startAttemptLocked(j, tk, t, now, speculative, nil)
}

// startAttemptLocked creates an attempt of tk on tracker t and orders its
// start: a launch, or with cloneOf set, a clone of that running attempt.
func (jt *JobTracker) startAttemptLocked(j *job, tk *task, t *trackerState, now time.Time, speculative bool, cloneOf *attempt) *attempt {
	a := &attempt{
		speculative: speculative,
		id:          attemptID(tk, tk.nextAttempt),
		num:         tk.nextAttempt,
		task:        tk,
		tracker:     t.name,
		state:       StateRunning,
		phase:       "MAP",
		start:       now,
		spills:      map[int][]*mrpb.Segment{},
		final:       -1,
	}
	if tk.typ == partitions.Reduce {
		a.phase = "SHUFFLE"
	}
	tk.nextAttempt++
	tk.attempts = append(tk.attempts, a)
	tk.state = StateRunning
	t.attempts[a.id] = a
	j.trackers[t.name] = true
	launch := &mrpb.LaunchTask{
		AttemptId:   a.id,
		JobId:       j.id,
		Type:        typeLetter(tk.typ),
		Index:       int32(tk.index),
		Conf:        j.confMap,
		NumMaps:     int32(len(j.maps)),
		NumReduces:  int32(len(j.reduces)),
		JobSecret:   j.secret,
		Speculative: speculative,
		Tracker:     t.name,
	}
	launch.SpecJson, _ = json.Marshal(j.spec)
	if tk.typ == partitions.Map {
		launch.SplitJson, _ = json.Marshal(j.splits[tk.index])
		j.counters.Add(mr.JobCounterGroup, mr.TotalLaunchedMaps, 1)
		if contains(j.splits[tk.index].Hosts, t.host) {
			j.counters.Add(mr.JobCounterGroup, mr.DataLocalMaps, 1)
		}
	} else {
		j.counters.Add(mr.JobCounterGroup, mr.TotalLaunchedReduces, 1)
	}
	if cloneOf != nil {
		src := ""
		if st := jt.trackers[cloneOf.tracker]; st != nil {
			src = st.shuffleAddr
		}
		t.actions = append(t.actions, &mrpb.TaskAction{Action: &mrpb.TaskAction_Clone{Clone: &mrpb.CloneAttempt{
			SourceAttempt: cloneOf.id, SourceAddress: src, Launch: launch}}})
	} else {
		t.actions = append(t.actions, &mrpb.TaskAction{Action: &mrpb.TaskAction_Launch{Launch: launch}})
	}
	jt.driver.Started(now, attemptKey(a))
	jt.log.Debug("launch", "attempt", a.id, "tracker", t.name)
	return a
}

// ---- job end ----

func (jt *JobTracker) checkJobDoneLocked(j *job) {
	if j.done() || j.committing {
		return
	}
	if j.finishedMaps < len(j.maps) || j.finishedReduces < len(j.reduces) {
		return
	}
	j.committing = true
	go func() {
		c, err := mr.NewCommitter(j.spec.Output)
		if err == nil {
			err = c.CommitJob()
		}
		jt.mu.Lock()
		defer jt.mu.Unlock()
		j.committing = false
		if err != nil {
			jt.endJobLocked(j, StateFailed, "job commit: "+err.Error())
			return
		}
		jt.endJobLocked(j, StateSucceeded, "")
	}()
}

// endJobLocked moves a job to a final state: live attempts are killed, the
// trackers told to purge the job, history written.
func (jt *JobTracker) endJobLocked(j *job, state, why string) {
	if j.done() {
		return
	}
	for _, ts := range [][]*task{j.maps, j.reduces} {
		for _, t := range ts {
			for _, a := range t.running() {
				jt.killAttemptLocked(a, "job "+strings.ToLower(state))
			}
			if t.state != StateSucceeded && t.state != StateFailed {
				t.state = StateKilled
			}
		}
	}
	j.state, j.err, j.finish = state, why, jt.now()
	close(j.notify)
	j.notify = make(chan struct{})
	for name := range j.trackers {
		if tr := jt.trackers[name]; tr != nil {
			tr.actions = append(tr.actions, &mrpb.TaskAction{Action: &mrpb.TaskAction_PurgeJob{PurgeJob: j.id}})
		}
	}
	if state != StateSucceeded {
		if c, err := mr.NewCommitter(j.spec.Output); err == nil {
			go func() {
				if err := c.AbortJob(); err != nil {
					jt.log.Warn("abort job output", "job", j.id, "error", err)
				}
			}()
		}
	}
	if state == StateSucceeded {
		jt.recordFaultsLocked(j, j.finish)
	}
	jt.driver.Finished(j.finish, j.id)
	rec := jt.historyRecordLocked(j)
	err := jt.history.Write(rec)
	if err != nil {
		// The job stays in the system directory: the next JobTracker
		// process records it as lost rather than not at all.
		jt.log.Error("writing job history", "job", j.id, "error", err)
	} else if err := jt.staging.Remove(j.id); err != nil {
		jt.log.Error("removing the job from the system directory", "job", j.id, "error", err)
	}
	addProfile(jt.profiles, &rec)
	jt.log.Info("job ended", "job", j.id, "state", state, "error", why, "seconds", j.finish.Sub(j.submit).Seconds())
	jt.jobEndedLocked(j, err == nil) // to be retired (retire.go)
}

// schedulingInfoLocked describes, in one line, how the policy sees a job:
// its partition and timer (multi-queue policies), pool and fair share
// (fair), deadline and slot quota (deadline policies).
func (jt *JobTracker) schedulingInfoLocked(jobID string) string {
	d, ok := jt.policy.(partitions.Describer)
	if !ok {
		return ""
	}
	ps := d.Describe(jt.now())
	for _, js := range ps.Jobs {
		if js.ID != jobID {
			continue
		}
		var parts []string
		if len(ps.Partitions) > 0 && js.Queue >= 0 && js.Queue < len(ps.Partitions) {
			p := ps.Partitions[js.Queue]
			s := fmt.Sprintf("partition %d of %d, partial size %s", js.Queue+1, len(ps.Partitions), js.PartialSize.Round(time.Millisecond))
			if p.Timer > 0 {
				s += ", timer " + p.Timer.Round(time.Millisecond).String()
			}
			parts = append(parts, s)
		}
		if js.Pool != "" {
			parts = append(parts, fmt.Sprintf("pool %s, fair share %.1f maps %.1f reduces", js.Pool, js.FairShareMaps, js.FairShareReduces))
		}
		if !js.Deadline.IsZero() {
			s := fmt.Sprintf("deadline %s, quota %d maps %d reduces", js.Deadline.Format(time.RFC3339), js.MinMaps, js.MinReduces)
			if !js.Feasible {
				s += " (no allocation meets it, or no profile)"
			}
			parts = append(parts, s)
		}
		return strings.Join(parts, "; ")
	}
	return ""
}
