// Package jobtracker is the master of the runtime: it accepts jobs, keeps
// the job, task and attempt state machines, hands tasks to TaskTrackers in
// their heartbeat replies (asking the configured policy in package
// partitions which job gets a free slot), tracks spill announcements for
// the per-spill shuffle, detects lost trackers and re-runs the maps whose
// output was lost, commits job output, and writes job history.
package jobtracker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"runtime/trace"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"

	"gomr/conf"
	"gomr/mrpb"
	"gomr/partitions"
	"gomr/preempt"
	"gomr/sched"
	"gomr/speculator"
)

// JobTracker is the master. Create it with New, then Serve.
type JobTracker struct {
	mrpb.UnimplementedJobTrackerServer

	cfg *conf.Config
	// log queues its records for a goroutine that writes them (logq,
	// logqueue.go): code under mu logs without waiting for the write.
	log    *slog.Logger
	logq   *logQueue
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

	// hbMu guards the heartbeats waiting for a combiner (hbQueue) and
	// whether one runs (combineHeartbeat); it is never held with mu.
	hbMu        sync.Mutex
	hbQueue     []*heartbeatCall
	hbCombining bool

	mu sync.Mutex
	// holder and lockedAt are who took mu with jt.lock and when
	// (lockholders.go); lockedAt is zero when mu was taken otherwise.
	holder   lockHolder
	lockedAt time.Time
	// region is the hold's execution trace region while a trace is
	// taken, nil otherwise (lockholders.go).
	region *trace.Region
	// batchSize is the number of heartbeats the current batch answers
	// under the lock (combineHeartbeat), for the log of a long hold.
	batchSize int
	jobs      map[string]*job
	order     []*job
	nextJob   int
	trackers  map[string]*trackerState
	// published is the trackers as readers see them without the lock
	// (publish.go), brought up to date at its release.
	published trackerRows
	// slotTotals are the map and reduce slots of the live trackers.
	slotTotals [2]int
	// dueLists order the trackers and launches by when they expire
	// (expiry.go).
	dueLists
	// blacklisted are the names of the trackers blacklisted across all
	// jobs (blacklist.go).
	blacklisted map[string]bool
	// profiles are the job profiles by job name (see profiles.go).
	profiles map[string]partitions.Profile
	// lostReplies counts heartbeat replies that trackers did not get.
	lostReplies int
	// illegalTransitions counts state changes refused as illegal
	// (lifecycle.go): bugs.
	illegalTransitions int
	// deferred is work to run once mu is released (afterUnlockLocked),
	// deferredLate such work that need not precede the replies of a
	// batch of heartbeats (afterRepliesLocked).
	deferred, deferredLate []func()
	// capacity is the live trackers that are not blacklisted and their
	// map and reduce slots (addCapacityLocked).
	capacity [3]int
	// typeTrackers[typ] is how many of those trackers have slots of
	// task type typ (addCapacityLocked), for the speculator's
	// NoOtherTracker.
	typeTrackers [2]int
	// views is the policy's view of the running jobs, kept between offers
	// (viewcache.go).
	views viewCache
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

	// occupancy is the cluster's slot occupancy by job over time, sampled
	// at lastSample at the latest (samples.go).
	occupancy  series[occupancySample]
	lastSample time.Time

	// prom is the JobTracker's metrics registry (metrics.go).
	prom *jtMetrics

	grpc     *grpc.Server
	listener net.Listener
	// httpAddr is the web UI's bound address, set once httpBound is
	// closed (empty if it could not be bound).
	httpAddr  string
	httpBound chan struct{}
	stop      chan struct{}
	stopOnce  sync.Once
	wg        sync.WaitGroup
	// background is the work a heartbeat's combiner hands off its reply
	// path (goBackground); Serve waits for it before it returns, and once
	// backgroundDone is set new work runs in its caller instead.
	bgMu           sync.Mutex
	background     sync.WaitGroup
	backgroundDone bool
}

// Options are the optional parts of a JobTracker.
type Options struct {
	Logger *slog.Logger
	// Now replaces time.Now (tests).
	Now func() time.Time
	// Ident, if set, is the JobTracker's identifier, the <ident> of its
	// job ids job_<ident>_<n>: digits only. The default is the start
	// time to the minute, yyyymmddhhmm, as Hadoop 1's; a JobTracker whose
	// history starts empty every time (mr local's) gives a finer one, so
	// that its job ids differ from run to run.
	Ident string
}

// LocalIdent is an identifier for a JobTracker that starts with an
// empty history every run: its start time t to the millisecond,
// yyyymmddhhmmssSSS, as Hadoop's local runner numbers its jobs by the
// time in ms.
func LocalIdent(t time.Time) string {
	return t.Format("20060102150405") + fmt.Sprintf("%03d", t.Nanosecond()/1e6)
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
	plan, err := preempt.FromConfig(cfg)
	if err != nil {
		return nil, err
	}
	// A preemption order reaches its tracker in the reply to its next
	// heartbeat (mapreduce.tasktracker.heartbeat.interval is in ms).
	plan.Heartbeat = time.Duration(cfg.Int("mapreduce.tasktracker.heartbeat.interval")) * time.Millisecond
	auth, err := newAuth(cfg)
	if err != nil {
		return nil, err
	}
	ident := opts.Ident
	if ident == "" {
		ident = now().Format("200601021504")
	} else if strings.Trim(ident, "0123456789") != "" {
		return nil, fmt.Errorf("jobtracker identifier %q: job ids are job_<identifier>_<n>, and the identifier must be digits only", ident)
	}
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
		policy:     policy,
		driver:     sched.New(policy),
		history:    hist,
		now:        now,
		ident:      ident,
		jobs:       map[string]*job{},
		trackers:   map[string]*trackerState{},
		stop:       make(chan struct{}),
		httpBound:  make(chan struct{}),
		retire: newRetirement(cfg.Duration("mapred.jobtracker.retirejob.interval"), cfg.Duration("mapred.jobtracker.retirejob.check"),
			cfg.Int("mapred.jobtracker.completeuserjobs.maximum"), cfg.Int("mapred.job.tracker.retiredjobs.cache.size")),
	}
	jt.log, jt.logq = newQueuedLog(log.With("component", "jobtracker").Handler())
	jt.driver.SetPlanner(preempt.New(plan))
	jt.prom = newJTMetrics(jt)
	if cfg.Bool("mapreduce.jobtracker.restart.recover") {
		jt.lock(holderRecovery)
		err = jt.recoverJobs()
		jt.unlock()
	} else {
		err = jt.failLostJobs()
	}
	if err != nil {
		// What the recovery logged is written before the error is
		// returned (the process exits then).
		jt.logq.flush(logFlushTimeout)
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

// HTTPAddress waits until Serve has bound the web UI
// (mapreduce.jobtracker.http.address), or ctx ends, and returns its
// address as a URL, http://host:port, with the host name in place of an
// unspecified address (0.0.0.0, ::); "" if it could not be bound.
func (jt *JobTracker) HTTPAddress(ctx context.Context) string {
	select {
	case <-jt.httpBound:
	case <-ctx.Done():
		return ""
	}
	return httpURL(jt.httpAddr)
}

// httpURL makes a bound listen address an http:// URL others can reach.
func httpURL(addr string) string {
	if addr == "" {
		return ""
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "http://" + addr
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		if h, err := os.Hostname(); err == nil {
			host = h
		}
	}
	return "http://" + net.JoinHostPort(host, port)
}

// trackingURL is a job's page on the web UI, or "" before the UI is
// bound.
func (jt *JobTracker) trackingURL(jobID string) string {
	select {
	case <-jt.httpBound:
	default:
		return ""
	}
	if jt.httpAddr == "" {
		return ""
	}
	return httpURL(jt.httpAddr) + "/job?id=" + url.QueryEscape(jobID)
}

// Serve runs the RPC server and the tracker-expiry loop until ctx ends or
// Stop is called. Listen must have been called.
func (jt *JobTracker) Serve(ctx context.Context) error {
	if jt.listener == nil {
		return errors.New("jobtracker: Serve before Listen")
	}
	httpAddr, err := jt.StartHTTP(ctx, "")
	if err != nil {
		close(jt.httpBound)
		jt.listener.Close()
		return err
	}
	jt.httpAddr = httpAddr
	close(jt.httpBound)
	jt.grpc = grpc.NewServer(jt.serverOptions()...)
	mrpb.RegisterJobTrackerServer(jt.grpc, wireServer{jt})
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
	err = jt.grpc.Serve(jt.listener)
	jt.Stop()
	jt.wg.Wait()
	jt.waitBackground()
	// The last records are written before Serve returns (a process
	// exits then), unless the log's writer is blocked.
	jt.logq.flush(logFlushTimeout)
	if errors.Is(err, grpc.ErrServerStopped) {
		return nil
	}
	return err
}

// logFlushTimeout is how long Serve waits for the log's last records.
const logFlushTimeout = 5 * time.Second

// Stop ends Serve.
func (jt *JobTracker) Stop() { jt.stopOnce.Do(func() { close(jt.stop) }) }

// goBackground runs work in a goroutine of its own, which Serve waits for
// before it returns (waitBackground); after that, in the caller.
func (jt *JobTracker) goBackground(work []func()) {
	if len(work) == 0 {
		return
	}
	jt.bgMu.Lock()
	if jt.backgroundDone {
		jt.bgMu.Unlock()
		for _, f := range work {
			f()
		}
		return
	}
	jt.background.Add(1)
	jt.bgMu.Unlock()
	go func() {
		defer jt.background.Done()
		for _, f := range work {
			f()
		}
	}()
}

// waitBackground waits for the work goBackground started; work handed
// to it later runs in its caller.
func (jt *JobTracker) waitBackground() {
	jt.bgMu.Lock()
	jt.backgroundDone = true
	jt.bgMu.Unlock()
	jt.background.Wait()
}

func (jt *JobTracker) expiryLoop(ctx context.Context) {
	expiry := jt.cfg.Duration("mapreduce.jobtracker.expire.trackers.interval")
	// Checked every heartbeat interval (at most a quarter of the expiry),
	// so that a silent tracker is declared lost within the expiry plus
	// one interval of its last heartbeat. The interval is the one the
	// replies ask for, which grows with the cluster (interval.go):
	// trackers heartbeating every 100 s need not be checked every 0.3 s.
	// A pass looks at what is due only (expiry.go).
	tick := func() time.Duration {
		jt.lock(holderExpiry)
		iv := jt.heartbeatIntervalLocked()
		jt.unlock()
		return max(min(expiry/4, iv), 20*time.Millisecond)
	}
	timer := time.NewTimer(tick())
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-jt.stop:
			return
		case <-timer.C:
		}
		jt.lock(holderExpiry)
		jt.expirePassLocked(jt.now())
		jt.unlock()
		timer.Reset(tick())
	}
}

// expirePassLocked declares lost the trackers silent for longer than the
// expiry, fails the launches never acknowledged for that long, and
// refreshes the blacklist and the recovered jobs' wait.
func (jt *JobTracker) expirePassLocked(now time.Time) {
	// O(what is due): expiry.go.
	jt.expireDueLocked(now, jt.cfg.Duration("mapreduce.jobtracker.expire.trackers.interval"))
	jt.refreshBlacklistLocked(now)
	jt.expireRecoveredLocked(now)
}
