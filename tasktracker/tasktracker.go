// Package tasktracker is the worker of the runtime: it offers map and
// reduce slots, heartbeats to the JobTracker, launches each task attempt as
// a child process (the same binary in its hidden child mode) and watches
// it, serves the umbilical the children report on, and serves spill
// segments to reducers through the shuffle server.
package tasktracker

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"gomr/conf"
	"gomr/mrpb"
	"gomr/security"
	"gomr/shuffle"
)

// Options are the optional parts of a TaskTracker.
type Options struct {
	Logger *slog.Logger
	// Name overrides the tracker name (default tracker_<host>:<port>).
	Name string
	// LocalDir overrides mapreduce.cluster.local.dir.
	LocalDir string
	// Executable is the binary run as the task child (default: this one).
	Executable string
	// JobTracker overrides mapreduce.jobtracker.address.
	JobTracker string
}

// TaskTracker is a worker. Create it with New, then Run.
type TaskTracker struct {
	cfg      *conf.Config
	log      *slog.Logger
	name     string
	host     string
	localDir string
	// ckptDir holds the images of attempts checkpointed for preemption
	// (KeyCheckpointDir, under this tracker's name), "" for the job
	// directories.
	ckptDir string
	// dirtyWhy says why an incremental checkpoint order is dumped in full
	// (set by probeCRIU): the kernel cannot track dirty memory, or,
	// where it can, the attempt's process has no earlier image (a clone's
	// dump is not kept as one; spec §5.8).
	dirtyWhy string
	exe      string
	jtAddr   string

	mapSlots, reduceSlots int

	umbListener     net.Listener
	shuffleListener net.Listener
	umbAddr         string
	shuffleAddr     string
	jt              mrpb.JobTrackerClient
	jtConn          *grpc.ClientConn

	mu       sync.Mutex
	attempts map[string]*taskAttempt
	jobs     map[string]*localJob
	spills   []*mrpb.SpillAnnouncement
	// counterReports decides which heartbeats carry the counters of
	// running attempts (KeyCountersInterval).
	counterReports *CounterReports
	wake           chan struct{}
	// pidNamespaces is false once starting a child in its own PID
	// namespace failed (not root, or no permission): children then run in
	// their own session only.
	pidNamespaces bool
	// criuPath is the probed CRIU binary; empty when attempts cannot be
	// cloned here.
	criuPath string
	// forkMu is held for reading while a child starts and for writing
	// while CRIU restores a clone (see criu.Restore).
	forkMu sync.RWMutex

	// requestWindow is how far a signed shuffle or checkpoint request's
	// time may be from this tracker's clock.
	requestWindow time.Duration
	// tls is the tracker's TLS material (nil: TLS off); childConf is
	// what its children's configuration takes from it (security.ChildConf).
	tls       *security.TLS
	childConf map[string]string

	// instance is this process's random id, sent on initial contact.
	instance string
	// faults are the injected faults (FaultsEnv).
	faults *faults
	// prom is the tracker's metrics registry (metrics.go).
	prom *ttMetrics

	// cr runs the tracker's CRIU dumps and restores one at a time; images
	// holds the images of attempts checkpointed for preemption, by
	// attempt id (preempt.go).
	cr     *crQueue
	images map[string]*storedImage

	// memory is the budget for the task children (memory.go).
	memory memoryBudget
}

type localJob struct {
	secret []byte
	dir    string
	// clampsLogged are the memory budget's notes of the job's settings
	// it lowered that were logged already (once per job, not per attempt).
	clampsLogged map[string]bool
}

// New prepares a TaskTracker: it binds the umbilical and shuffle ports.
func New(cfg *conf.Config, opts Options) (*TaskTracker, error) {
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	host := cfg.String("mapreduce.tasktracker.host.name")
	if host == "" {
		h, err := os.Hostname()
		if err != nil {
			return nil, fmt.Errorf("tracker host name: %w", err)
		}
		host = h
	}
	exe := opts.Executable
	if exe == "" {
		e, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("finding the task child binary: %w", err)
		}
		exe = e
	}
	local := opts.LocalDir
	if local == "" {
		local = cfg.String("mapreduce.cluster.local.dir")
	}
	jtAddr := opts.JobTracker
	if jtAddr == "" {
		jtAddr = cfg.String("mapreduce.jobtracker.address")
	}
	sec, err := security.Load(cfg)
	if err != nil {
		return nil, err
	}
	if sec != nil && sec.Identity().Role != security.RoleTaskTracker {
		return nil, fmt.Errorf("%s %s is the certificate of %s; a TaskTracker needs a tasktracker certificate (mr certs issue --role tasktracker)",
			security.KeyTLSCert, sec.CertPath(), sec.Identity())
	}
	crConcurrent := cfg.Int(KeyCheckpointMaxConcurrent)
	if crConcurrent < 1 {
		return nil, fmt.Errorf("%s = %d: want an integer >= 1", KeyCheckpointMaxConcurrent, crConcurrent)
	}
	umb, err := net.Listen("tcp", cfg.String("mapreduce.tasktracker.report.address"))
	if err != nil {
		return nil, fmt.Errorf("umbilical listen (mapreduce.tasktracker.report.address): %w", err)
	}
	sh, err := net.Listen("tcp", cfg.String("mapreduce.tasktracker.http.address"))
	if err != nil {
		umb.Close()
		return nil, fmt.Errorf("shuffle listen (mapreduce.tasktracker.http.address): %w", err)
	}
	flt, err := faultsFromEnv()
	if err != nil {
		umb.Close()
		sh.Close()
		return nil, err
	}
	tt := &TaskTracker{
		counterReports:  NewCounterReports(cfg.Duration(KeyCountersInterval)),
		faults:          flt,
		requestWindow:   cfg.Duration("mapreduce.shuffle.request.window"),
		tls:             sec,
		childConf:       security.ChildConf(sec),
		instance:        randomHex(8),
		cfg:             cfg,
		host:            host,
		localDir:        local,
		exe:             exe,
		jtAddr:          jtAddr,
		mapSlots:        cfg.Int("mapreduce.tasktracker.map.tasks.maximum"),
		reduceSlots:     cfg.Int("mapreduce.tasktracker.reduce.tasks.maximum"),
		umbListener:     umb,
		shuffleListener: sh,
		umbAddr:         umb.Addr().String(),
		shuffleAddr:     advertise(sh.Addr(), host),
		attempts:        map[string]*taskAttempt{},
		jobs:            map[string]*localJob{},
		wake:            make(chan struct{}, 1),
		pidNamespaces:   os.Geteuid() == 0,
		cr:              newCRQueue(crConcurrent),
		images:          map[string]*storedImage{},
	}
	if tt.memory, err = budgetFromConf(cfg, tt.mapSlots, tt.reduceSlots); err != nil {
		umb.Close()
		sh.Close()
		return nil, err
	}
	tt.prom = newTTMetrics(tt)
	tt.name = opts.Name
	if sec != nil {
		if err := tt.checkCertificate(); err != nil {
			umb.Close()
			sh.Close()
			return nil, err
		}
	}
	if tt.name == "" {
		tt.name = fmt.Sprintf("tracker_%s:%d", host, umb.Addr().(*net.TCPAddr).Port)
	}
	tt.log = log.With("component", "tasktracker", "tracker", tt.name)
	tt.localDir = filepath.Join(tt.localDir, sanitize(tt.name))
	if d := cfg.String(KeyCheckpointDir); d != "" {
		tt.ckptDir = filepath.Join(d, sanitize(tt.name))
	}
	if err := os.MkdirAll(tt.localDir, 0o755); err != nil {
		umb.Close()
		sh.Close()
		return nil, fmt.Errorf("local dir (mapreduce.cluster.local.dir): %w", err)
	}
	return tt, nil
}

// advertise turns a bound address into one others can dial: a wildcard
// host is replaced by the tracker's host name.
func advertise(a net.Addr, host string) string {
	ta := a.(*net.TCPAddr)
	if ta.IP.IsUnspecified() {
		return net.JoinHostPort(host, fmt.Sprint(ta.Port))
	}
	return ta.String()
}

func sanitize(s string) string {
	out := []byte(s)
	for i, c := range out {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == '_') {
			out[i] = '_'
		}
	}
	return string(out)
}

// Name is the tracker's name as the JobTracker knows it.
func (tt *TaskTracker) Name() string { return tt.name }

// ShuffleAddress is the host:port of the shuffle server.
func (tt *TaskTracker) ShuffleAddress() string { return tt.shuffleAddr }

// Run serves the umbilical and the shuffle and heartbeats until ctx ends;
// then it kills its children.
func (tt *TaskTracker) Run(ctx context.Context) error {
	var tlsCfg *tls.Config
	if tt.tls != nil {
		tlsCfg = tt.tls.Client(security.RoleJobTracker)
	}
	conn, err := grpc.NewClient(tt.jtAddr, mrpb.DialOptions(tlsCfg)...)
	if err != nil {
		return fmt.Errorf("jobtracker %s: %w", tt.jtAddr, err)
	}
	tt.jtConn = conn
	tt.jt = mrpb.NewJobTrackerClient(conn)
	defer conn.Close()

	umb := &umbilical{tt: tt}
	umbSrv := grpc.NewServer(grpc.MaxRecvMsgSize(64<<20), grpc.MaxSendMsgSize(64<<20), grpc.UnaryInterceptor(umb.authenticate))
	mrpb.RegisterUmbilicalServer(umbSrv, umb)
	go umbSrv.Serve(tt.umbListener)
	defer umbSrv.Stop()

	httpSrv := &http.Server{Handler: tt.shuffleMux(), ReadHeaderTimeout: 10 * time.Second, ConnContext: shuffle.ConnContext}
	shuffleListener := tt.shuffleListener
	if tt.tls != nil {
		// HTTPS only, from other trackers and their children (a
		// tasktracker certificate), besides each request's HMAC; task
		// logs to the JobTracker only, which checks the job's ACL; the
		// metrics to either (an operator scrapes them with such a
		// certificate, docs/security.md).
		secured := http.NewServeMux()
		secured.Handle(mrpb.TaskLogPath, security.RequireRole(security.RoleJobTracker, httpSrv.Handler))
		secured.Handle(MetricsPath, security.RequireAnyRole(httpSrv.Handler, security.RoleJobTracker, security.RoleTaskTracker))
		secured.Handle("/", security.RequireRole(security.RoleTaskTracker, httpSrv.Handler))
		httpSrv.Handler = secured
		httpSrv.ErrorLog = slog.NewLogLogger(tt.log.Handler(), slog.LevelWarn)
		shuffleListener = tt.tls.Listener(shuffleListener)
	}
	go httpSrv.Serve(shuffleListener)
	defer httpSrv.Close()

	tt.log.Info("tasktracker started", "jobtracker", tt.jtAddr, "umbilical", tt.umbAddr, "shuffle", tt.shuffleAddr,
		"map_slots", tt.mapSlots, "reduce_slots", tt.reduceSlots, "local_dir", tt.localDir, "pid_namespaces", tt.pidNamespaces,
		"tls", tt.tls.Describe())

	tt.probeCRIU(ctx)
	go tt.watchTimeouts(ctx)
	go tt.cleanUserlogs(ctx, time.Duration(tt.cfg.Float("mapreduce.job.userlog.retain.hours")*float64(time.Hour)))
	err = tt.heartbeatLoop(ctx)
	tt.killAll("tasktracker shutting down")
	return err
}

func (tt *TaskTracker) shuffleMux() http.Handler {
	mux := http.NewServeMux()
	sh := shuffle.NewHandler(secretSource{tt}, locator{tt}, tt.log, shuffle.WithRequestWindow(tt.requestWindow),
		shuffle.WithDataCache(int64(tt.cfg.Int(shuffle.KeyDataCacheMB))<<20),
		shuffle.WithServedBytes(func(_ string, n int64) { tt.prom.shuffleBytes.Add(float64(n)) }),
		shuffle.WithIndexEntries(func(n int) { tt.prom.shuffleEntries.Add(float64(n)) }),
		shuffle.WithOutcome(func(o string) { tt.prom.shuffleRequests.WithLabelValues(o).Inc() }))
	mux.Handle(shuffle.Path, sh)
	mux.Handle(shuffle.BatchPath, sh)
	mux.HandleFunc(CheckpointPath, tt.serveCheckpoint)
	mux.HandleFunc(mrpb.TaskLogPath, tt.serveTaskLog)
	mux.Handle("GET "+MetricsPath, tt.prom.handler(tt))
	return mux
}

type secretSource struct{ tt *TaskTracker }

func (s secretSource) JobSecret(jobID string) ([]byte, bool) {
	s.tt.mu.Lock()
	defer s.tt.mu.Unlock()
	j, ok := s.tt.jobs[jobID]
	if !ok {
		return nil, false
	}
	return j.secret, true
}

type locator struct{ tt *TaskTracker }

func (l locator) SpillDir(jobID, attemptID string) (string, error) {
	if !validID(jobID) || !validID(attemptID) {
		return "", fmt.Errorf("bad id")
	}
	dir := filepath.Join(l.tt.jobDir(jobID), attemptID, "spills")
	if _, err := os.Stat(dir); err != nil {
		return "", fmt.Errorf("no spills for attempt %s: %w", attemptID, err)
	}
	return dir, nil
}

func validID(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for _, c := range []byte(s) {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

func (tt *TaskTracker) jobDir(jobID string) string { return filepath.Join(tt.localDir, "jobs", jobID) }

// imageJobDir is the directory of a job's kept checkpoint images: under
// KeyCheckpointDir when set, else the job's directory.
func (tt *TaskTracker) imageJobDir(jobID string) string {
	if tt.ckptDir == "" {
		return tt.jobDir(jobID)
	}
	return filepath.Join(tt.ckptDir, jobID)
}

// heartbeatLoop reports to the JobTracker every interval, or at once when
// a task ends (out-of-band heartbeat), and carries out its orders. Each
// heartbeat names the last reply it got, so that the JobTracker sends the
// actions of a lost reply again; a reply is only taken as received when it
// arrives. It returns an error when the JobTracker refuses this tracker's
// registration (another live process holds its name).
func (tt *TaskTracker) heartbeatLoop(ctx context.Context) error {
	interval := tt.cfg.Duration("mapreduce.tasktracker.heartbeat.interval")
	oob := tt.cfg.Bool("mapreduce.tasktracker.outofband.heartbeat")
	pacing, err := ParseHeartbeatPacing(tt.cfg.String(KeyHeartbeatPacing))
	if err != nil {
		return fmt.Errorf("%s: %w", KeyHeartbeatPacing, err)
	}
	var reg registration
	reg.initial = true
	timer := time.NewTimer(0)
	defer timer.Stop()
	failures := 0
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-timer.C:
		case <-tt.wake:
			if !oob {
				continue
			}
		}
		req, sent := tt.buildHeartbeat(reg)
		hctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		sentAt := time.Now()
		resp, err := tt.jt.Heartbeat(hctx, req)
		cancel()
		if err == nil {
			tt.prom.heartbeat.Observe(time.Since(sentAt).Seconds())
		}
		if err == nil && tt.faults.dropReply(len(resp.Actions)) {
			tt.log.Warn("fault injection: dropping a heartbeat reply", "reply", resp.ResponseId, "actions", len(resp.Actions))
			resp, err = nil, errors.New("fault injection: reply dropped")
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			tt.requeue(sent)
			switch status.Code(err) {
			case codes.AlreadyExists:
				return fmt.Errorf("the jobtracker refused this tracker: %s", status.Convert(err).Message())
			case codes.PermissionDenied:
				// Another process registered this tracker's name after
				// this one expired: start afresh and register again.
				tt.log.Warn("jobtracker does not take this tracker's heartbeats: registering again", "error", status.Convert(err).Message())
				tt.reinit()
				reg = registration{initial: true}
				timer.Reset(interval)
				continue
			}
			failures++
			tt.prom.lostReplies.Inc()
			if failures == 1 || failures%20 == 0 {
				tt.log.Warn("heartbeat failed", "error", err, "failures", failures)
			}
			timer.Reset(interval)
			continue
		}
		failures = 0
		tt.heartbeatDone(sent)
		if resp.Reinit {
			tt.log.Warn("jobtracker does not know this tracker: reinitializing")
			tt.reinit()
			reg = registration{initial: true}
			timer.Reset(0)
			continue
		}
		if reg.initial {
			reg = registration{incarnation: resp.Incarnation}
		}
		reg.responseID = resp.ResponseId
		reg.readsPacked = resp.ReadsPackedSegments
		for _, a := range resp.Actions {
			tt.act(ctx, a)
		}
		if resp.HeartbeatIntervalMs > 0 {
			interval = time.Duration(resp.HeartbeatIntervalMs) * time.Millisecond
		}
		if tt.reportSoonAfter(resp.Actions) {
			// Just launched with slots of that type still free, or given
			// other orders: report soon, so that the scheduler sees the
			// slots used and may fill the rest. A reply that filled the slots of the types
			// it launched waits for the interval (or a task's end): on a
			// large cluster of busy trackers a report after every launch
			// would double the heartbeats.
			timer.Reset(min(interval, 50*time.Millisecond))
		} else {
			timer.Reset(pacing.Wait(interval, sentAt, time.Now()))
		}
	}
}

// reportSoonAfter tells whether a reply's actions launched a task of
// a type of which this tracker still has a free slot, or carried orders
// other than launches (kills, purges, checkpoints, splits: their outcome
// is reported soon, as before).
func (tt *TaskTracker) reportSoonAfter(actions []*mrpb.TaskAction) bool {
	var launched [2]bool // map, reduce
	for _, a := range actions {
		l := a.GetLaunch()
		if l == nil {
			l = a.GetClone().GetLaunch()
		}
		if l == nil {
			return true
		}
		launched[boolIndex(l.Type != "m")] = true
	}
	if !launched[0] && !launched[1] {
		return false
	}
	tt.mu.Lock()
	defer tt.mu.Unlock()
	var used [2]int
	for _, a := range tt.attempts {
		if a.holdsSlot() {
			used[boolIndex(a.launch.Type != "m")]++
		}
	}
	return (launched[0] && used[0] < tt.mapSlots) || (launched[1] && used[1] < tt.reduceSlots)
}

func boolIndex(b bool) int {
	if b {
		return 1
	}
	return 0
}

// registration is where the tracker stands with the JobTracker: before
// its initial contact is answered, or registered with an incarnation and
// the id of the last reply received.
type registration struct {
	initial     bool
	incarnation string
	responseID  int64
	// readsPacked: the last reply said the JobTracker reads spill
	// announcements' packed segments.
	readsPacked bool
}

// reinit kills every attempt and forgets them, for a fresh registration.
func (tt *TaskTracker) reinit() {
	tt.killAll("tasktracker reinitialized")
	tt.mu.Lock()
	tt.attempts = map[string]*taskAttempt{}
	tt.spills = nil
	tt.counterReports.Reset()
	tt.mu.Unlock()
}

// sentState is what one heartbeat carried, so that it can be requeued on
// failure or forgotten on success.
type sentState struct {
	spills   []*mrpb.SpillAnnouncement
	finished []string
	// countersAt is when the heartbeat was built if it carried the
	// counters of the running attempts (zero if not).
	countersAt time.Time
}

func (tt *TaskTracker) buildHeartbeat(reg registration) (*mrpb.HeartbeatRequest, sentState) {
	var held, heldAttempts []string
	if reg.initial {
		held, heldAttempts = tt.heldJobs()
	}
	tt.mu.Lock()
	defer tt.mu.Unlock()
	req := &mrpb.HeartbeatRequest{
		Tracker:        tt.name,
		Host:           tt.host,
		ShuffleAddress: tt.shuffleAddr,
		MapSlots:       int32(tt.mapSlots),
		ReduceSlots:    int32(tt.reduceSlots),
		InitialContact: reg.initial,
		AcceptNewTasks: true,
		CriuAvailable:  tt.cloneable(),
		ResponseId:     reg.responseID,
		Incarnation:    reg.incarnation,
		Instance:       tt.instance,
		HeldJobs:       held,
		HeldAttempts:   heldAttempts,
	}
	if reg.initial {
		req.ConfDefaultsDigest = conf.DefaultsDigest()
	}
	req.CrQueueLength, req.CrQueueWaitMs = tt.cr.stats()
	req.CrQueueMaxConcurrent = int32(tt.cr.limit())
	usedMaps, usedReduces := 0, 0
	var sent sentState
	now := time.Now()
	withCounters := reg.initial || tt.counterReports.Due(now)
	if withCounters {
		sent.countersAt = now
	}
	for id, a := range tt.attempts {
		st := a.status()
		if !withCounters && st.State == "RUNNING" {
			st.Counters = nil // the JobTracker keeps the last ones it got
		}
		req.Attempts = append(req.Attempts, st)
		// Whether it ended is read from the status sent: an attempt
		// that ends meanwhile is forgotten only once its end is reported.
		if terminal(st.State) {
			sent.finished = append(sent.finished, id)
			continue
		}
		if st.GetCheckpoint().GetSlotReleased() {
			continue // its slot was freed at its checkpoint's freeze
		}
		if a.launch.Type == "m" {
			usedMaps++
		} else {
			usedReduces++
		}
	}
	req.FreeMapSlots = int32(max(0, tt.mapSlots-usedMaps))
	req.FreeReduceSlots = int32(max(0, tt.reduceSlots-usedReduces))
	req.Spills = announcementsFor(tt.spills, reg.readsPacked)
	sent.spills = tt.spills
	tt.spills = nil
	return req, sent
}

// announcementsFor is spills as a JobTracker that reads packed segments,
// or not, takes them: for one that does not (a JobTracker from before
// them, or one that has not replied yet), an announcement with packed
// segments is copied with them as messages. Packed segments that do not
// parse are sent as they are, for the JobTracker to refuse by name.
func announcementsFor(spills []*mrpb.SpillAnnouncement, readsPacked bool) []*mrpb.SpillAnnouncement {
	if readsPacked {
		return spills
	}
	out, copied := spills, false
	for i, sp := range spills {
		if len(sp.PackedSegments) == 0 {
			continue
		}
		p, err := mrpb.ParsePackedSegments(string(sp.PackedSegments), false)
		if err != nil {
			continue
		}
		if !copied {
			out, copied = slices.Clone(spills), true
		}
		c := proto.CloneOf(sp)
		c.PackedSegments, c.Segments = nil, p.Messages()
		out[i] = c
	}
	return out
}

// heldJobs lists the jobs this tracker has state of (known secrets and job
// directories on disk, a previous process's too), and the attempts of
// those jobs that have map output here (a spills directory), sorted.
func (tt *TaskTracker) heldJobs() (jobs, attempts []string) {
	seen := map[string]bool{}
	for _, dir := range []string{filepath.Join(tt.localDir, "jobs"), tt.ckptDir} {
		if dir == "" {
			continue
		}
		if ents, err := os.ReadDir(dir); err == nil {
			for _, e := range ents {
				if e.IsDir() && validID(e.Name()) {
					seen[e.Name()] = true
				}
			}
		}
	}
	tt.mu.Lock()
	for id := range tt.jobs {
		seen[id] = true
	}
	tt.mu.Unlock()
	for id := range seen {
		jobs = append(jobs, id)
		ents, _ := os.ReadDir(tt.jobDir(id))
		for _, e := range ents {
			if !e.IsDir() || !validID(e.Name()) {
				continue
			}
			if st, err := os.Stat(filepath.Join(tt.jobDir(id), e.Name(), "spills")); err == nil && st.IsDir() {
				attempts = append(attempts, e.Name())
			}
		}
	}
	sort.Strings(jobs)
	sort.Strings(attempts)
	return jobs, attempts
}

func (tt *TaskTracker) requeue(s sentState) {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	tt.spills = append(s.spills, tt.spills...)
}

func (tt *TaskTracker) heartbeatDone(s sentState) {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	if !s.countersAt.IsZero() {
		tt.counterReports.Delivered(s.countersAt)
	}
	for _, id := range s.finished {
		delete(tt.attempts, id)
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read does not fail (Go 1.24+)
	return hex.EncodeToString(b)
}

func (tt *TaskTracker) poke() {
	select {
	case tt.wake <- struct{}{}:
	default:
	}
}

// checkCertificate checks the tracker's certificate against what others
// will check: its name is the tracker's (the JobTracker refuses a
// heartbeat for another name; without --name the tracker takes the
// certificate's), and it is valid for the host of the advertised shuffle
// address (fetchers verify it).
func (tt *TaskTracker) checkCertificate() error {
	id := tt.tls.Identity()
	switch {
	case tt.name == "":
		tt.name = id.Name
	case tt.name != id.Name:
		return fmt.Errorf("tracker name %s is not the name in its certificate (%s %s is the certificate of %s): give --name %s, or none",
			tt.name, security.KeyTLSCert, tt.tls.CertPath(), id, id.Name)
	}
	host, _, err := net.SplitHostPort(tt.shuffleAddr)
	if err != nil {
		return err
	}
	return tt.tls.CheckHost(host)
}

// withChildConf gives a launch the tracker's own settings for its child
// (security.ChildConf) over the job's configuration, which carries the
// JobTracker's.
func (tt *TaskTracker) withChildConf(l *mrpb.LaunchTask) {
	if l == nil {
		return
	}
	m := make(map[string]string, len(l.Conf)+len(tt.childConf))
	maps.Copy(m, l.Conf)
	maps.Copy(m, tt.childConf)
	l.Conf = m
}

func (tt *TaskTracker) act(ctx context.Context, a *mrpb.TaskAction) {
	switch x := a.Action.(type) {
	case *mrpb.TaskAction_Launch:
		tt.withChildConf(x.Launch)
		if x.Launch.Restore != nil {
			tt.restoreLaunch(ctx, x.Launch)
			return
		}
		if err := tt.launch(ctx, x.Launch); errors.Is(err, errKnownAttempt) {
			// The action of a reply thought lost, sent again.
			tt.log.Debug("launch of a known attempt ignored", "attempt", x.Launch.AttemptId)
		} else if err != nil {
			tt.log.Error("launch failed", "attempt", x.Launch.AttemptId, "error", err)
		}
	case *mrpb.TaskAction_KillAttempt:
		tt.kill(x.KillAttempt, "killed by the jobtracker")
	case *mrpb.TaskAction_PurgeJob:
		tt.purge(x.PurgeJob)
	case *mrpb.TaskAction_Clone:
		tt.withChildConf(x.Clone.GetLaunch())
		tt.clone(ctx, x.Clone)
	case *mrpb.TaskAction_Checkpoint:
		tt.checkpointForPreemption(ctx, x.Checkpoint)
	case *mrpb.TaskAction_DropImage:
		if img := tt.storedImage(x.DropImage.JobId, x.DropImage.AttemptId); img != nil {
			tt.dropImage(img)
			tt.log.Info("checkpoint image dropped", "attempt", img.attempt)
		}
	case *mrpb.TaskAction_SplitAttempt:
		tt.split(x.SplitAttempt, int(a.SplitFanout))
	}
}

// split passes the JobTracker's split order to a running attempt: its
// child learns it from the answer to its next status report and stops
// after its current record (a map) or key group (a reduce) (docs/split.md).
// A reduce split for idle slots (fanout > 1) also reports the keys that cut
// the rest of its key range into fanout pieces.
func (tt *TaskTracker) split(attemptID string, fanout int) {
	tt.mu.Lock()
	a := tt.attempts[attemptID]
	tt.mu.Unlock()
	if a == nil {
		tt.log.Warn("split order for an attempt that does not run here", "attempt", attemptID)
		return
	}
	a.mu.Lock()
	a.splitOrdered = true
	a.splitFanout = fanout
	a.mu.Unlock()
	tt.log.Info("split ordered", "attempt", attemptID, "fanout", fanout)
}

func (tt *TaskTracker) kill(attemptID, why string) {
	tt.mu.Lock()
	a := tt.attempts[attemptID]
	tt.mu.Unlock()
	if a != nil {
		a.kill(why)
	}
}

func (tt *TaskTracker) killAll(why string) {
	tt.mu.Lock()
	as := make([]*taskAttempt, 0, len(tt.attempts))
	for _, a := range tt.attempts {
		as = append(as, a)
	}
	tt.mu.Unlock()
	for _, a := range as {
		a.kill(why)
	}
	for _, a := range as {
		a.waitExit(5 * time.Second)
	}
}

// purge kills what is left of a finished job and removes its local files.
func (tt *TaskTracker) purge(jobID string) {
	tt.mu.Lock()
	var as []*taskAttempt
	for _, a := range tt.attempts {
		if a.launch.JobId == jobID {
			as = append(as, a)
		}
	}
	delete(tt.jobs, jobID)
	for id, img := range tt.images {
		if img.job == jobID {
			delete(tt.images, id) // its files go with the job's directory
		}
	}
	tt.mu.Unlock()
	for _, a := range as {
		a.kill("job is over")
	}
	go func() {
		for _, a := range as {
			a.waitExit(10 * time.Second)
		}
		tt.keepLogs(jobID)
		if err := os.RemoveAll(tt.jobDir(jobID)); err != nil && !errors.Is(err, os.ErrNotExist) {
			tt.log.Warn("removing job files", "job", jobID, "error", err)
		}
		if tt.ckptDir != "" {
			if err := os.RemoveAll(tt.imageJobDir(jobID)); err != nil && !errors.Is(err, os.ErrNotExist) {
				tt.log.Warn("removing the job's checkpoint images", "job", jobID, "error", err)
			}
		}
	}()
}

// watchTimeouts fails attempts that report no progress for
// mapreduce.task.timeout.
func (tt *TaskTracker) watchTimeouts(ctx context.Context) {
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		now := time.Now()
		tt.mu.Lock()
		var late []*taskAttempt
		for _, a := range tt.attempts {
			if a.timedOut(now) {
				late = append(late, a)
			}
		}
		tt.mu.Unlock()
		for _, a := range late {
			a.failTimeout()
		}
	}
}
