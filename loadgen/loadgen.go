// Package loadgen drives a real JobTracker with simulated TaskTrackers:
// thousands of them in one process, each heartbeating over gRPC as package
// tasktracker does, "running" the attempts they are given for durations
// taken from a workload (a simulator trace, docs/trace-format.md, or fixed
// durations) whose jobs it submits to the JobTracker as real jobs with
// synthetic splits. No task runs as a process: only the trackers are
// simulated, so the JobTracker's policies, speculator, history and HTTP
// pages work as in a cluster of that size.
//
// Run measures what a cluster of that size asks of the JobTracker: the
// heartbeats per second it sustains, the heartbeat latency the trackers
// see, the time from a slot freeing to a task launched on it, launches per
// second, the JobTracker's CPU and memory, and the trackers it declares
// lost. docs/scaling.md describes the figures; `mr loadgen` is the
// command and `make bench-scale` the sweep.
package loadgen

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"google.golang.org/grpc"

	_ "gomr/apps" // the job definition the synthetic jobs name
	"gomr/conf"
	_ "gomr/conf/all" // every policy's configuration keys, for an in-process JobTracker
	"gomr/jobtracker"
	"gomr/mr"
	"gomr/mrpb"
	"gomr/tasktracker"
)

// Config is a load generator run.
type Config struct {
	// JobTracker is the address (host:port) of a running JobTracker; empty
	// starts one in this process (or, with Spawn, as a child process).
	JobTracker string
	// JobTrackerPID is the process id of the JobTracker at JobTracker, on
	// this machine, for its CPU time and RSS (from /proc); 0 reads only its
	// heap and goroutines from JobTrackerHTTP's /metrics.
	JobTrackerPID int
	// JobTrackerHTTP is the host:port of that JobTracker's HTTP pages.
	JobTrackerHTTP string
	// Spawn starts the JobTracker as a child process (Executable
	// jobtracker, with ConfFile and Defines), so that its CPU and memory
	// are its own and not the generator's.
	Spawn      bool
	Executable string
	// GeneratorGCPercent is the garbage collector's target percentage
	// (debug.SetGCPercent) of this process while it runs, when the
	// JobTracker is not in this process (Spawn or JobTracker); 0 leaves the
	// runtime's setting (GOGC). The generator's 10,000 trackers allocate
	// fast, and at GOGC=100 its own collections' mark assists stall the
	// goroutines that time the heartbeats: the tail it reports is then its
	// own. Its memory is not what is measured, so it trades memory for
	// fewer collections. The spawned JobTracker keeps its own setting.
	GeneratorGCPercent int
	// GeneratorNice, if not 0, is the nice value of this process's
	// threads while it drives a spawned or remote JobTracker (nice.go):
	// with a positive one the JobTracker, at its own (0), gets the CPU it
	// asks for before the generator, as a JobTracker on a host of its own
	// does, instead of an even share of the cores with the 10,000
	// simulated trackers. The tracker-side latency then carries more of
	// the generator's own waits; the JobTracker-side one is the
	// JobTracker's. 0 (the default, and every figure measured before it
	// existed) shares the CPU evenly.
	GeneratorNice int
	// ConfFile and Defines configure a JobTracker the generator starts;
	// Policy, if set, is its scheduler.policy.
	ConfFile string
	Defines  map[string]string
	Policy   string

	// Trackers is the number of simulated TaskTrackers, each with
	// MapSlots and ReduceSlots slots, heartbeating every Heartbeat with
	// phases spread evenly over the interval.
	Trackers    int
	MapSlots    int
	ReduceSlots int
	Heartbeat   time.Duration
	// OutOfBand makes a tracker heartbeat at once when an attempt ends
	// and 50 ms after a launch, as a TaskTracker does with
	// mapreduce.tasktracker.outofband.heartbeat; off, trackers heartbeat
	// only every Heartbeat (Hadoop 1's default).
	OutOfBand bool
	// Pacing is from when a tracker counts the interval to its next
	// heartbeat, by the TaskTracker's own rule
	// (tasktracker.HeartbeatPacing, mapreduce.tasktracker.heartbeat.pacing):
	// from the send (the TaskTracker's default) or, as before that rule
	// and as Hadoop 1, from the reply.
	Pacing tasktracker.HeartbeatPacing
	// CountersInterval is how often a tracker's heartbeats carry the
	// counters of its running attempts, by the TaskTracker's own rule
	// (tasktracker.CounterReports, mapreduce.tasktracker.counters.update.interval);
	// 0: every heartbeat, as before that rule.
	CountersInterval time.Duration
	// FollowInterval makes a tracker wait the interval the JobTracker's
	// last reply asked for, as a TaskTracker does, instead of Heartbeat
	// (which is then only the interval until the first reply, and the
	// started JobTracker's minimum). When the asked interval changes by
	// more than a tenth, the tracker's next wait is a random part of it,
	// so that the trackers' heartbeats spread over the new interval as
	// those of a cluster whose trackers started at different times.
	FollowInterval bool
	// ExtraCounters is how many counters each status carries beyond the
	// few the generator reports by default (3 or 4, named as a task's),
	// in a group of their own ("loadgen"), each growing with the
	// attempt's progress: a real task's statuses carry 20 or more (file
	// system, framework, shuffle and the job's own), which is what the
	// JobTracker decodes for every running attempt whose counters a
	// heartbeat carries.
	ExtraCounters int
	// MapEvents makes every reduce in its shuffle ask for its job's map
	// events as a reduce task does (GetMapEvents, waiting up to a second
	// for new ones), until its job's maps are done.
	MapEvents bool
	// Conns is the number of gRPC connections the trackers share; 0 gives
	// each tracker its own up to MaxConns, and spreads them over MaxConns
	// connections beyond.
	Conns int

	// Duration is how long the trackers run; Warmup the part of it at the
	// start not measured (registration, the first launches).
	Duration time.Duration
	Warmup   time.Duration
	// StopWhenDone ends the run once every job of the workload is final.
	StopWhenDone bool

	// Jobs is the workload.
	Jobs []Job
	// Profiles gives the JobTracker this command starts a profile of
	// every job of the workload, as if each had run before (history.go):
	// the deadline policies need one to size a job's quota, and a
	// JobTracker builds it from its job history, which a started one's
	// temporary directory does not have. Without it a deadline job gets
	// every slot it can use, as under edf.
	Profiles bool
	// SubmitOnly submits the jobs without starting any tracker, measuring
	// each submission and the JobTracker's RSS around it.
	SubmitOnly bool
	// Input, with SubmitOnly, submits each job as a user's client does
	// (jobtracker.Client: the splits computed from this input path with
	// the job's input format, a file, a directory or a glob, local or
	// HDFS), instead of with synthetic splits: its maps are its splits,
	// and the client's side (split computation and encoding) is measured
	// apart from the SubmitJob call. The workload's map counts are not
	// used.
	Input string
	// SplitBytes, with Input, is the split size
	// (mapreduce.input.fileinputformat.split.maxsize); 0: the
	// configuration's.
	SplitBytes int64

	// OutputDir holds the jobs' output directories (on the JobTracker's
	// machine); empty: a new directory under the system's temporary one.
	OutputDir string
	// CPUProfile, if set, is written with a CPU profile of this process
	// over the measurement window (useful with an in-process JobTracker).
	CPUProfile string
	// JobTrackerProfiles, with Spawn, is a directory for profiles of the
	// spawned JobTracker over the measurement window (profile.go): its CPU,
	// mutex and block profiles, its allocations and an execution trace.
	JobTrackerProfiles string
	// JobTrackerTraceAt is when that execution trace starts, from the
	// trackers' start (0: with them, over the registrations and the first
	// launches of the warm-up); negative: in the measured window's middle.
	// It lasts JobTrackerTraceLength, cut at the run's end.
	JobTrackerTraceAt time.Duration
	// JobTrackerTraceLength is how long that execution trace lasts;
	// zero: DefaultTraceLength.
	JobTrackerTraceLength time.Duration
	// PollUI, if positive, has the JobTracker's web UI pages, /api,
	// /metrics and the client calls of mr job polled, each every PollUI,
	// during the run (poll.go); their response times are in the result.
	PollUI time.Duration
	Logger *slog.Logger
}

// MaxConns is the most gRPC connections the generator opens by default.
// One per tracker is what a cluster has, and is kept up to this many; past
// it the trackers share them: an in-process JobTracker holds both ends of
// every connection in one process (two descriptors each, against a usual
// limit of 20,000 here) and each HTTP/2 connection costs tens of kilobytes
// of buffers at both ends.
const MaxConns = 4000

// Result is what a run measured.
type Result struct {
	// Mode is "in-process", "spawned" or "remote"; JobTracker its address.
	Mode       string `json:"mode"`
	JobTracker string `json:"jobtracker"`
	Policy     string `json:"policy,omitempty"`

	Trackers    int     `json:"trackers"`
	MapSlots    int     `json:"map_slots"`
	ReduceSlots int     `json:"reduce_slots"`
	Connections int     `json:"connections"`
	HeartbeatS  float64 `json:"heartbeat_s"`
	// AdvertisedHeartbeatS is the interval the JobTracker's last reply
	// asked for (the trackers keep HeartbeatS unless FollowInterval).
	AdvertisedHeartbeatS float64 `json:"advertised_heartbeat_s"`
	FollowInterval       bool    `json:"follow_interval,omitempty"`
	OutOfBand            bool    `json:"out_of_band"`
	// Pacing is Config.Pacing's value ("send" or "reply").
	Pacing string `json:"pacing"`
	// CountersIntervalS is Config.CountersInterval.
	CountersIntervalS float64 `json:"counters_interval_s"`
	// ExtraCounters is Config.ExtraCounters.
	ExtraCounters int     `json:"extra_counters,omitempty"`
	DurationS     float64 `json:"duration_s"`
	// WindowS is the measured part of the run: from the end of the
	// warm-up to the end.
	WindowS float64 `json:"window_s"`

	// Heartbeats answered in the window, per second, and what the
	// trackers would send at their interval if every reply were instant.
	Heartbeats               int64   `json:"heartbeats"`
	HeartbeatsPerSec         float64 `json:"heartbeats_per_s"`
	ExpectedHeartbeatsPerSec float64 `json:"expected_heartbeats_per_s"`
	HeartbeatErrors          int64   `json:"heartbeat_errors"`
	// HeartbeatLatency is the time of a Heartbeat call as the tracker
	// sees it.
	HeartbeatLatency Dist `json:"heartbeat_latency"`
	// SlotToLaunch is the time from an attempt's end (its slot free) to
	// the launch of another attempt on that slot arriving;
	// ReportToLaunch from the heartbeat that reported the end.
	SlotToLaunch   Dist `json:"slot_to_launch"`
	ReportToLaunch Dist `json:"report_to_launch"`
	// Launches in the window, and per second; Kills of attempts (kill
	// and purge orders) over the run.
	Launches       int64   `json:"launches"`
	LaunchesPerSec float64 `json:"launches_per_s"`
	Kills          int64   `json:"kills"`
	// MapEventCallsPerSec are the GetMapEvents calls of the reduces'
	// shuffles answered in the window, per second; MapEventErrors the
	// failed ones over the run.
	MapEventCallsPerSec float64 `json:"map_event_calls_per_s"`
	MapEventErrors      int64   `json:"map_event_errors"`
	// MapSlotUtilization and ReduceSlotUtilization are the busy
	// slot-time over the slot-time of the window, by slot type (a slot
	// is busy from a launch's arrival to the attempt's end).
	MapSlotUtilization    float64 `json:"map_slot_utilization"`
	ReduceSlotUtilization float64 `json:"reduce_slot_utilization"`

	// TrackersLost counts trackers that learnt they had been declared
	// lost (a reinit order or a refused incarnation); TrackersLiveAtEnd
	// is the JobTracker's count of live trackers at the end;
	// LostLogged the "lost tracker" lines of its log (-1 unknown: a
	// remote JobTracker).
	TrackersLost      int64 `json:"trackers_lost"`
	TrackersLiveAtEnd int   `json:"trackers_live_at_end"`
	LostLogged        int64 `json:"lost_logged"`

	Process Process `json:"jobtracker_process"`
	// GeneratorCPUCores is this process's CPU over the window (the
	// trackers, and the JobTracker too when it is in this process): on a
	// shared machine, what the JobTracker competed with.
	GeneratorCPUCores float64 `json:"generator_cpu_cores"`
	// GeneratorGCPercent is the generator's GC percentage over the run
	// (Config.GeneratorGCPercent when applied, else the runtime's).
	GeneratorGCPercent int `json:"generator_gc_percent,omitempty"`
	// GeneratorNice is the generator's nice value over the run
	// (Config.GeneratorNice when applied).
	GeneratorNice int `json:"generator_nice,omitempty"`
	// Profiles is Config.Profiles: the JobTracker started with a profile
	// of every job of the workload.
	Profiles bool `json:"profiles,omitempty"`

	// PollUIS is Config.PollUI in seconds (0: no polling), and Polls the
	// polled pages' and calls' response times in the window.
	PollUIS float64      `json:"poll_ui_s,omitempty"`
	Polls   []PollResult `json:"polls,omitempty"`

	// SubmitLatency is the time of the SubmitJob calls.
	SubmitLatency Dist        `json:"submit_latency"`
	Jobs          []JobResult `json:"jobs"`
	// Submissions are the submit-only measurements.
	Submissions []Submission `json:"submissions,omitempty"`
}

// JobResult is a job of the run as the trackers and the JobTracker saw it.
type JobResult struct {
	ID      string `json:"id"`
	Name    string `json:"name"`
	Pool    string `json:"pool,omitempty"`
	State   string `json:"state"`
	Maps    int    `json:"maps"`
	Reduces int    `json:"reduces"`
	// DeadlineS is the job's deadline relative to its submission, in
	// seconds (0: none).
	DeadlineS float64 `json:"deadline_s,omitempty"`
	// Tasks of which an attempt was launched on, and reported done by,
	// the simulated trackers.
	MapsLaunched    int     `json:"maps_launched"`
	ReducesLaunched int     `json:"reduces_launched"`
	MapsDone        int     `json:"maps_done"`
	ReducesDone     int     `json:"reduces_done"`
	SubmitMs        float64 `json:"submit_ms"`
	Error           string  `json:"error,omitempty"`
}

// Submission is one measured SubmitJob of a submit-only run.
type Submission struct {
	Job  string `json:"job"`
	Maps int    `json:"maps"`
	// Input is the input path the splits were computed from (Config.Input),
	// PrepareMs the client's time computing them and encoding the request
	// (jobtracker.Client.PrepareSubmission), RequestBytes the request's
	// size; all empty with synthetic splits.
	Input        string  `json:"input,omitempty"`
	PrepareMs    float64 `json:"prepare_ms,omitempty"`
	RequestBytes int     `json:"request_bytes,omitempty"`
	SubmitMs     float64 `json:"submit_ms"`
	RSSBeforeMB  float64 `json:"rss_before_mb"`
	RSSAfterMB   float64 `json:"rss_after_mb"`
	HeapAfterMB  float64 `json:"heap_live_after_mb"`
}

// generator is a run under way.
type generator struct {
	cfg Config
	log *slog.Logger
	// extraNames are the names of the Config.ExtraCounters each status
	// carries.
	extraNames []string
	jt         *jobTracker

	mu     sync.Mutex
	jobs   map[string]*jobState
	byName []*jobState // in workload order; nil where not submitted

	winStart, winEnd atomic.Int64 // UnixNano; winEnd 0 while running
	heartbeats       atomic.Int64
	hbErrors         atomic.Int64
	launches         atomic.Int64
	kills            atomic.Int64
	lost             atomic.Int64
	advertised       atomic.Int64
	busyNanos        [2]atomic.Int64
	latency          samples
	slotToLaunch     samples
	reportToLaunch   samples
	submit           samples
	errLogged        atomic.Int64
	mapEventCalls    atomic.Int64
	mapEventErrors   atomic.Int64
	pollers          sync.WaitGroup
	// pollClient reads the JobTracker's pages for PollUI.
	pollClient http.Client
}

func (g *generator) inWindow(t time.Time) bool {
	n := t.UnixNano()
	end := g.winEnd.Load()
	return n >= g.winStart.Load() && (end == 0 || n <= end)
}

func (g *generator) heartbeatDone(sent time.Time, took time.Duration) {
	if g.inWindow(sent) {
		g.heartbeats.Add(1)
		g.latency.add(took)
	}
}

func (g *generator) heartbeatFailed(t *tracker, err error) {
	g.hbErrors.Add(1)
	if g.errLogged.Add(1) <= 10 {
		g.log.Warn("heartbeat failed", "tracker", t.name, "error", err)
	}
}

func (g *generator) slotRefilled(f freedSlot, at time.Time) {
	if g.inWindow(at) {
		g.slotToLaunch.add(at.Sub(f.ended))
		g.reportToLaunch.add(at.Sub(f.reported))
	}
}

func (g *generator) launched(a *attempt, at time.Time) {
	if g.inWindow(at) {
		g.launches.Add(1)
	}
	if js := g.job(a.job); js != nil {
		js.taskLaunched(a.typ, a.index)
	}
}

// attemptEnded records an attempt's end: its busy time within the window,
// and its task done when it succeeded.
func (g *generator) attemptEnded(a *attempt, end time.Time, succeeded bool) {
	from, to := max(a.start.UnixNano(), g.winStart.Load()), end.UnixNano()
	if e := g.winEnd.Load(); e != 0 {
		to = min(to, e)
	}
	if to > from {
		g.busyNanos[a.typ].Add(to - from)
	}
	if !succeeded {
		g.kills.Add(1)
		return
	}
	if js := g.job(a.job); js != nil {
		js.taskDone(a.typ, a.index, end)
	}
}

func (g *generator) job(id string) *jobState {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.jobs[id]
}

// Run runs the load generator and returns what it measured.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	raiseFileLimit()
	g := &generator{cfg: cfg, log: cfg.Logger.With("component", "loadgen"), jobs: map[string]*jobState{}, byName: make([]*jobState, len(cfg.Jobs)),
		extraNames: extraCounterNames(cfg.ExtraCounters)}
	jt, err := startJobTracker(ctx, &cfg, g.log)
	if err != nil {
		return nil, err
	}
	g.jt = jt
	defer jt.close()
	gcPercent, restoreGC := generatorGC(jt.mode, cfg.GeneratorGCPercent)
	defer restoreGC()
	nice, restoreNice, err := generatorNice(jt.mode, cfg.GeneratorNice)
	if err != nil {
		return nil, err
	}
	defer restoreNice()
	outDir := cfg.OutputDir
	if outDir == "" {
		if outDir, err = os.MkdirTemp("", "gomr-loadgen-out-"); err != nil {
			return nil, fmt.Errorf("loadgen: output directory: %w", err)
		}
		if jt.mode != "remote" {
			defer os.RemoveAll(outDir)
		}
	}
	res := &Result{Mode: jt.mode, JobTracker: jt.addr, Policy: cfg.Policy, Trackers: cfg.Trackers, MapSlots: cfg.MapSlots,
		ReduceSlots: cfg.ReduceSlots, HeartbeatS: cfg.Heartbeat.Seconds(), OutOfBand: cfg.OutOfBand, Pacing: cfg.Pacing.String(), CountersIntervalS: cfg.CountersInterval.Seconds(), ExtraCounters: cfg.ExtraCounters, FollowInterval: cfg.FollowInterval, LostLogged: -1,
		GeneratorGCPercent: gcPercent, GeneratorNice: nice, Profiles: cfg.Profiles}
	if cfg.SubmitOnly {
		res.Trackers, res.MapSlots, res.ReduceSlots, res.HeartbeatS = 0, 0, 0, 0
		err = g.submitOnly(ctx, outDir, res)
		return res, err
	}
	err = g.run(ctx, outDir, res)
	return res, err
}

// generatorGC applies the generator's GC percentage pct for a JobTracker
// run in mode (Config.GeneratorGCPercent): only when the JobTracker is not
// in this process, whose collections are then the JobTracker's too, and
// only when pct > 0. It returns the percentage in effect and the function
// that restores the previous one.
func generatorGC(mode string, pct int) (int, func()) {
	cur := debug.SetGCPercent(-1)
	debug.SetGCPercent(cur)
	if pct <= 0 || mode == "in-process" {
		return cur, func() {}
	}
	old := debug.SetGCPercent(pct)
	return pct, func() { debug.SetGCPercent(old) }
}

func (c *Config) check() error {
	switch {
	case c.Trackers < 1 && !c.SubmitOnly:
		return fmt.Errorf("loadgen: %d trackers: want at least 1", c.Trackers)
	case c.MapSlots < 0 || c.ReduceSlots < 0 || c.MapSlots+c.ReduceSlots == 0:
		return fmt.Errorf("loadgen: %d map and %d reduce slots per tracker: want at least one slot", c.MapSlots, c.ReduceSlots)
	case c.Heartbeat < 10*time.Millisecond:
		return fmt.Errorf("loadgen: heartbeat interval %v: want at least 10ms", c.Heartbeat)
	case c.Duration <= 0 && !c.SubmitOnly:
		return fmt.Errorf("loadgen: duration %v: want a positive duration", c.Duration)
	case c.Warmup < 0 || (c.Warmup >= c.Duration && !c.SubmitOnly):
		return fmt.Errorf("loadgen: warm-up %v: want at least 0 and less than the duration %v", c.Warmup, c.Duration)
	case len(c.Jobs) == 0:
		return errors.New("loadgen: the workload has no job")
	case c.Conns < 0:
		return fmt.Errorf("loadgen: %d connections: want 0 (automatic) or more", c.Conns)
	case c.JobTracker != "" && c.Spawn:
		return errors.New("loadgen: --spawn starts a JobTracker: give it or --jobtracker, not both")
	case c.JobTrackerProfiles != "" && !c.Spawn:
		return errors.New("loadgen: --jobtracker-pprof profiles a JobTracker this command spawns: give --spawn too")
	case c.Input != "" && !c.SubmitOnly:
		return errors.New("loadgen: --input submits jobs over a real input with --submit-only; the simulated trackers run synthetic splits")
	case c.SplitBytes < 0:
		return fmt.Errorf("loadgen: split size %d: want 0 (the configuration's) or more", c.SplitBytes)
	case c.Profiles && c.JobTracker != "":
		return errors.New("loadgen: --profiles writes the history of a JobTracker this command starts, not of a running one (--jobtracker)")
	}
	return nil
}

// raiseFileLimit lifts the soft limit on open files to the hard one: every
// tracker connection is a descriptor (two with an in-process JobTracker).
func raiseFileLimit() {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err == nil && l.Cur < l.Max {
		l.Cur = l.Max
		_ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &l)
	}
}

func (g *generator) run(ctx context.Context, outDir string, res *Result) error {
	cfg := g.cfg
	nconns := cfg.Conns
	if nconns == 0 {
		nconns = min(cfg.Trackers, MaxConns)
	}
	nconns = min(nconns, cfg.Trackers)
	res.Connections = nconns
	conns := make([]*grpc.ClientConn, nconns)
	for i := range conns {
		c, err := grpc.NewClient(g.jt.addr, mrpb.DialOptions(nil)...)
		if err != nil {
			return fmt.Errorf("loadgen: connecting to the JobTracker at %s: %w", g.jt.addr, err)
		}
		defer c.Close()
		conns[i] = c
	}
	client := mrpb.NewJobTrackerClient(conns[0])

	// Jobs due at the start are submitted before the trackers register,
	// so that the first heartbeats find work.
	subCtx, stopSubmit := context.WithCancel(ctx)
	defer stopSubmit()
	start := time.Now()
	var submitWG sync.WaitGroup
	pending := make(chan int, len(cfg.Jobs))
	for i := range cfg.Jobs {
		if cfg.Jobs[i].Submit <= 0 {
			if err := g.submitJob(subCtx, client, outDir, i); err != nil {
				return err
			}
		} else {
			pending <- i
		}
	}
	close(pending)
	submitWG.Add(1)
	go func() {
		defer submitWG.Done()
		for i := range pending {
			select {
			case <-subCtx.Done():
				return
			case <-time.After(time.Until(start.Add(cfg.Jobs[i].Submit))):
			}
			if err := g.submitJob(subCtx, client, outDir, i); err != nil && subCtx.Err() == nil {
				g.log.Error("job submission failed", "job", cfg.Jobs[i].Name, "error", err)
			}
		}
	}()

	trackers := make([]*tracker, cfg.Trackers)
	for i := range trackers {
		trackers[i] = &tracker{g: g, name: trackerName(i), host: trackerHost(i), client: mrpb.NewJobTrackerClient(conns[i%nconns]),
			instance: fmt.Sprintf("loadgen-%d-%d-%d", os.Getpid(), start.UnixNano(), i), slots: [2]int{cfg.MapSlots, cfg.ReduceSlots},
			attempts: map[string]*attempt{}, counterReports: tasktracker.NewCounterReports(cfg.CountersInterval)}
	}
	t0 := time.Now()
	g.winStart.Store(t0.Add(cfg.Warmup).UnixNano())
	var traced <-chan error
	if cfg.JobTrackerProfiles != "" && g.jt.pprof != "" {
		length := cfg.JobTrackerTraceLength
		if length <= 0 {
			length = DefaultTraceLength
		}
		at := traceStart(t0, t0.Add(cfg.Warmup), t0.Add(cfg.Duration), cfg.JobTrackerTraceAt, length)
		traced = g.jt.fetchTrace(ctx, cfg.JobTrackerProfiles, at, t0.Add(cfg.Duration), length)
	}
	trCtx, stopTrackers := context.WithCancel(ctx)
	defer stopTrackers()
	var wg sync.WaitGroup
	for i, t := range trackers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t.run(trCtx, time.Duration(i)*cfg.Heartbeat/time.Duration(cfg.Trackers))
		}()
	}
	g.log.Info("trackers started", "trackers", cfg.Trackers, "connections", nconns, "heartbeat", cfg.Heartbeat, "jobtracker", g.jt.addr)
	var polls []PollResult
	pollCtx, stopPolling := context.WithCancel(ctx)
	defer stopPolling()
	polled := make(chan struct{})
	if cfg.PollUI > 0 {
		res.PollUIS = cfg.PollUI.Seconds()
		go func() {
			defer close(polled)
			polls = g.pollUI(pollCtx, client, cfg.PollUI)
		}()
	} else {
		close(polled)
	}

	// The measurement window.
	sampler := newProcSampler(g.jt)
	select {
	case <-ctx.Done():
	case <-time.After(time.Until(t0.Add(cfg.Warmup))):
	}
	var profFile *os.File
	if cfg.CPUProfile != "" && ctx.Err() == nil {
		f, err := os.Create(cfg.CPUProfile)
		if err != nil {
			return fmt.Errorf("loadgen: cpu profile: %w", err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return fmt.Errorf("loadgen: cpu profile: %w", err)
		}
		profFile = f
	}
	sampler.start()
	var profiled <-chan error
	if cfg.JobTrackerProfiles != "" && g.jt.pprof != "" && ctx.Err() == nil {
		profiled = g.jt.profileWindow(ctx, cfg.JobTrackerProfiles, t0.Add(cfg.Duration))
	}
	self, selfErr := readProc(os.Getpid())
	end := t0.Add(cfg.Duration)
	tick := time.NewTicker(500 * time.Millisecond)
	for wait := true; wait; {
		select {
		case <-ctx.Done():
			wait = false
		case now := <-tick.C:
			if !now.Before(end) || (cfg.StopWhenDone && g.allJobsFinal(ctx, client)) {
				wait = false
			}
		}
	}
	tick.Stop()
	winEnd := time.Now()
	g.winEnd.Store(winEnd.UnixNano())
	proc := sampler.stop()
	res.GeneratorCPUCores = -1
	if last, err := readProc(os.Getpid()); err == nil && selfErr == nil {
		res.GeneratorCPUCores = math.Round((last.cpu-self.cpu).Seconds()/last.at.Sub(self.at).Seconds()*1000) / 1000
	}
	if profFile != nil {
		pprof.StopCPUProfile()
		profFile.Close()
	}
	if profiled != nil || traced != nil {
		var errs []error
		if profiled != nil {
			errs = append(errs, <-profiled)
		}
		if traced != nil {
			errs = append(errs, <-traced)
		}
		if err := errors.Join(errs...); err != nil {
			g.log.Warn("profiles of the JobTracker", "error", err)
		} else {
			g.log.Info("profiles of the JobTracker written", "dir", cfg.JobTrackerProfiles)
		}
	}
	stopPolling()
	<-polled
	res.Polls = polls
	stopSubmit()
	submitWG.Wait()
	stopTrackers()
	wg.Wait()
	g.pollers.Wait()
	for _, t := range trackers {
		for _, a := range t.attempts {
			g.attemptEnded(a, winEnd, false)
			g.kills.Add(-1) // still running: not a kill
		}
	}

	window := winEnd.Sub(time.Unix(0, g.winStart.Load()))
	res.DurationS = winEnd.Sub(t0).Seconds()
	res.WindowS = window.Seconds()
	res.Heartbeats = g.heartbeats.Load()
	res.HeartbeatsPerSec = float64(res.Heartbeats) / window.Seconds()
	res.ExpectedHeartbeatsPerSec = float64(cfg.Trackers) / cfg.Heartbeat.Seconds()
	if adv := g.advertised.Load(); cfg.FollowInterval && adv > 0 {
		res.ExpectedHeartbeatsPerSec = float64(cfg.Trackers) / (float64(adv) / 1000)
	}
	res.HeartbeatErrors = g.hbErrors.Load()
	res.HeartbeatLatency = g.latency.dist()
	res.SlotToLaunch = g.slotToLaunch.dist()
	res.ReportToLaunch = g.reportToLaunch.dist()
	res.Launches = g.launches.Load()
	res.LaunchesPerSec = float64(res.Launches) / window.Seconds()
	res.Kills = g.kills.Load()
	res.MapEventCallsPerSec = float64(g.mapEventCalls.Load()) / window.Seconds()
	res.MapEventErrors = g.mapEventErrors.Load()
	if slots := float64(cfg.Trackers*cfg.MapSlots) * float64(window); slots > 0 {
		res.MapSlotUtilization = float64(g.busyNanos[0].Load()) / slots
	}
	if slots := float64(cfg.Trackers*cfg.ReduceSlots) * float64(window); slots > 0 {
		res.ReduceSlotUtilization = float64(g.busyNanos[1].Load()) / slots
	}
	res.TrackersLost = g.lost.Load()
	res.AdvertisedHeartbeatS = float64(g.advertised.Load()) / 1000
	res.Process = proc

	cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if lt, err := client.ListTrackers(cctx, &mrpb.ListTrackersRequest{}); err == nil {
		res.TrackersLiveAtEnd = len(lt.Trackers)
	} else {
		g.log.Warn("listing the JobTracker's trackers", "error", err)
		res.TrackersLiveAtEnd = -1
	}
	res.LostLogged = g.jt.lostLogged()
	res.SubmitLatency = g.submit.dist()
	res.Jobs = g.jobResults(cctx, client)
	return nil
}

func trackerName(i int) string { return fmt.Sprintf("loadgen_tracker_%05d", i) }
func trackerHost(i int) string { return fmt.Sprintf("lg-host-%05d", i) }

// submitJob submits job i of the workload: a wordcount job spec (the
// tasks never run) with one synthetic split per map, each on three
// trackers' hosts, so that locality-aware policies have something to go
// by.
func (g *generator) submitJob(ctx context.Context, client mrpb.JobTrackerClient, outDir string, i int) error {
	j := &g.cfg.Jobs[i]
	id, took, err := submit(ctx, client, j, outDir, i, max(g.cfg.Trackers, 1))
	if err != nil {
		return err
	}
	g.submit.add(took)
	js := newJobState(id, j)
	js.submitTook = took
	g.mu.Lock()
	g.jobs[id] = js
	g.byName[i] = js
	g.mu.Unlock()
	return nil
}

func submit(ctx context.Context, client mrpb.JobTrackerClient, j *Job, outDir string, i, hosts int) (string, time.Duration, error) {
	input := "/loadgen/synthetic/" + j.Name
	spec, err := json.Marshal(&mr.JobSpec{Def: "wordcount", Name: j.Name, Inputs: []string{input},
		Output: filepath.Join(outDir, fmt.Sprintf("job-%04d", i)), NumReduces: len(j.Reduces), Pool: j.Pool, Priority: j.Priority,
		DeadlineSeconds: j.Deadline.Seconds()})
	if err != nil {
		return "", 0, err
	}
	per := max(j.InputBytes/int64(max(len(j.Maps), 1)), 1)
	splits := make([]mr.Split, len(j.Maps))
	for k := range splits {
		h := (i*7 + k) % hosts
		splits[k] = mr.Split{Path: input, Start: int64(k) * per, Length: per,
			Hosts: []string{trackerHost(h), trackerHost((h + 1) % hosts), trackerHost((h + 2) % hosts)}}
	}
	sj, err := json.Marshal(splits)
	if err != nil {
		return "", 0, err
	}
	cctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	began := time.Now()
	resp, err := client.SubmitJob(cctx, &mrpb.SubmitJobRequest{SpecJson: spec, SplitsJson: sj})
	took := time.Since(began)
	if err != nil {
		return "", 0, fmt.Errorf("loadgen: submitting job %s (%d maps, %d reduces): %w", j.Name, len(j.Maps), len(j.Reduces), err)
	}
	return resp.JobId, took, nil
}

// allJobsFinal tells whether every job of the workload was submitted and
// has ended.
func (g *generator) allJobsFinal(ctx context.Context, client mrpb.JobTrackerClient) bool {
	g.mu.Lock()
	ids := make([]string, 0, len(g.byName))
	for _, js := range g.byName {
		if js == nil {
			g.mu.Unlock()
			return false
		}
		ids = append(ids, js.id)
	}
	g.mu.Unlock()
	for _, id := range ids {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		st, err := client.GetJobStatus(cctx, &mrpb.JobStatusRequest{JobId: id})
		cancel()
		if err != nil || !finalState(st.State) {
			return false
		}
	}
	return true
}

func finalState(s string) bool { return s == "SUCCEEDED" || s == "FAILED" || s == "KILLED" }

func (g *generator) jobResults(ctx context.Context, client mrpb.JobTrackerClient) []JobResult {
	g.mu.Lock()
	states := append([]*jobState(nil), g.byName...)
	g.mu.Unlock()
	var out []JobResult
	for i, js := range states {
		j := &g.cfg.Jobs[i]
		r := JobResult{Name: j.Name, Pool: j.Pool, State: "NOT SUBMITTED", Maps: len(j.Maps), Reduces: len(j.Reduces), DeadlineS: j.Deadline.Seconds()}
		if js != nil {
			r.ID = js.id
			r.SubmitMs = msOf(js.submitTook)
			l, d := js.counts()
			r.MapsLaunched, r.ReducesLaunched, r.MapsDone, r.ReducesDone = l[0], l[1], d[0], d[1]
			if st, err := client.GetJobStatus(ctx, &mrpb.JobStatusRequest{JobId: js.id}); err == nil {
				r.State, r.Error = st.State, st.Error
			} else {
				r.State, r.Error = "UNKNOWN", err.Error()
			}
		}
		out = append(out, r)
	}
	return out
}

// submitOnly submits the workload's jobs one by one, each measured with
// the JobTracker's RSS before and after, and kills each after.
func (g *generator) submitOnly(ctx context.Context, outDir string, res *Result) error {
	conn, err := grpc.NewClient(g.jt.addr, mrpb.DialOptions(nil)...)
	if err != nil {
		return fmt.Errorf("loadgen: connecting to the JobTracker at %s: %w", g.jt.addr, err)
	}
	defer conn.Close()
	client := mrpb.NewJobTrackerClient(conn)
	var user *jobtracker.Client
	if g.cfg.Input != "" {
		if user, err = jobtracker.Dial(g.jt.addr, conf.Default()); err != nil {
			return fmt.Errorf("loadgen: %w", err)
		}
		defer user.Close()
	}
	for i := range g.cfg.Jobs {
		j := &g.cfg.Jobs[i]
		before := g.jt.rss()
		s := Submission{Maps: len(j.Maps)}
		var id string
		var took time.Duration
		if user != nil {
			if id, took, err = g.submitInput(ctx, user, j, outDir, i, &s); err != nil {
				return err
			}
		} else if id, took, err = submit(ctx, client, j, outDir, i, 1000); err != nil {
			return err
		}
		g.submit.add(took)
		// The RSS once the submission's garbage is collected: a second
		// for the JobTracker's runtime to settle.
		time.Sleep(time.Second)
		s.Job, s.SubmitMs, s.RSSBeforeMB, s.RSSAfterMB, s.HeapAfterMB = id, msOf(took), mb(before), mb(g.jt.rss()), -1
		if m, err := g.jt.metrics(); err == nil {
			if v, ok := m["gomr_jobtracker_heap_live_bytes"]; ok {
				s.HeapAfterMB = v / (1 << 20)
			}
		}
		res.Submissions = append(res.Submissions, s)
		cctx, cancel := context.WithTimeout(ctx, time.Minute)
		if _, err := client.KillJob(cctx, &mrpb.KillJobRequest{JobId: id}); err != nil {
			g.log.Warn("killing a submitted job", "job", id, "error", err)
		}
		cancel()
	}
	res.SubmitLatency = g.submit.dist()
	res.Process = Process{Source: g.jt.procSource(), CPUCores: -1, RSSStartMB: -1, RSSPeakMB: -1, RSSEndMB: mb(g.jt.rss()), HeapLiveMB: -1, Goroutines: -1}
	return nil
}

// submitInput submits job i of the workload as a user's client does,
// over Config.Input: the client's side (splits, encoding) timed into s,
// then the SubmitJob call, whose id and time it returns.
func (g *generator) submitInput(ctx context.Context, c *jobtracker.Client, j *Job, outDir string, i int, s *Submission) (string, time.Duration, error) {
	spec := &mr.JobSpec{Def: "wordcount", Name: j.Name, Inputs: []string{g.cfg.Input},
		Output: filepath.Join(outDir, fmt.Sprintf("job-%04d", i)), NumReduces: len(j.Reduces), Pool: j.Pool, Priority: j.Priority,
		DeadlineSeconds: j.Deadline.Seconds()}
	if g.cfg.SplitBytes > 0 {
		spec.Conf = map[string]string{keySplitMaxSize: strconv.FormatInt(g.cfg.SplitBytes, 10)}
	}
	began := time.Now()
	req, n, err := c.PrepareSubmission(ctx, spec)
	if err != nil {
		return "", 0, fmt.Errorf("loadgen: job %s over %s: %w", j.Name, g.cfg.Input, err)
	}
	s.Input, s.Maps, s.PrepareMs, s.RequestBytes = g.cfg.Input, n, msOf(time.Since(began)), len(req.SpecJson)+len(req.SplitsJson)
	cctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	began = time.Now()
	resp, err := c.RPC().SubmitJob(cctx, req)
	took := time.Since(began)
	if err != nil {
		return "", 0, fmt.Errorf("loadgen: submitting job %s (%d splits of %s): %w", j.Name, n, g.cfg.Input, err)
	}
	// The JobTracker must hold a map for each split the client sent.
	st, err := c.RPC().GetJobStatus(cctx, &mrpb.JobStatusRequest{JobId: resp.JobId})
	if err != nil {
		return "", 0, fmt.Errorf("loadgen: status of submitted job %s: %w", resp.JobId, err)
	}
	if got := int(st.GetMaps().GetTotal()); got != n {
		return "", 0, fmt.Errorf("loadgen: job %s has %d maps at the JobTracker for the %d splits the client computed", resp.JobId, got, n)
	}
	return resp.JobId, took, nil
}

// keySplitMaxSize is the split size key a --input submission sets.
const keySplitMaxSize = "mapreduce.input.fileinputformat.split.maxsize"

func mb(b int64) float64 {
	if b < 0 {
		return -1
	}
	return math.Round(float64(b)/(1<<20)*10) / 10
}

// procSampler samples the JobTracker's process every second over the
// measurement window.
type procSampler struct {
	jt    *jobTracker
	first procSample
	// metrics0 is the JobTracker's /metrics at the window's start.
	metrics0 map[string]float64
	peak     int64
	ok       bool
	done     chan struct{}
	wg       sync.WaitGroup
	mu       sync.Mutex
}

func newProcSampler(jt *jobTracker) *procSampler {
	return &procSampler{jt: jt, done: make(chan struct{})}
}

func (s *procSampler) start() {
	if m, err := s.jt.metrics(); err == nil {
		s.metrics0 = m
	}
	if s.jt.pid == 0 {
		return
	}
	first, err := readProc(s.jt.pid)
	if err != nil {
		s.jt.log.Warn("reading the JobTracker's process", "error", err)
		return
	}
	s.first, s.peak, s.ok = first, first.rss, true
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-s.done:
				return
			case <-tick.C:
			}
			if p, err := readProc(s.jt.pid); err == nil {
				s.mu.Lock()
				s.peak = max(s.peak, p.rss)
				s.mu.Unlock()
			}
		}
	}()
}

func (s *procSampler) stop() Process {
	close(s.done)
	s.wg.Wait()
	p := Process{Source: s.jt.procSource(), CPUCores: -1, RSSStartMB: -1, RSSPeakMB: -1, RSSEndMB: -1, HeapLiveMB: -1, Goroutines: -1}
	if s.ok {
		if last, err := readProc(s.jt.pid); err == nil {
			p.CPUCores = math.Round((last.cpu-s.first.cpu).Seconds()/last.at.Sub(s.first.at).Seconds()*1000) / 1000
			p.RSSStartMB, p.RSSPeakMB, p.RSSEndMB = mb(s.first.rss), mb(max(s.peak, last.rss)), mb(last.rss)
		}
	}
	if m, err := s.jt.metrics(); err == nil {
		if v, ok := m["gomr_jobtracker_heap_live_bytes"]; ok {
			p.HeapLiveMB = math.Round(v/(1<<20)*10) / 10
		}
		if v, ok := m["gomr_jobtracker_goroutines"]; ok {
			p.Goroutines = int(v)
		}
		if s.metrics0 != nil {
			p.Lock = lockFigures(s.metrics0, m)
		}
	} else {
		s.jt.log.Warn("reading the JobTracker's metrics", "error", err)
	}
	return p
}

// metricsFrom reads metrics from h in process or from the page at url.
func metricsFrom(h http.Handler, url string) (map[string]float64, error) {
	if h == nil && url == "" {
		return nil, errors.New("no address for the JobTracker's HTTP pages (--jobtracker-http)")
	}
	return scrapeMetrics(h, url)
}
