package main

import (
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"gomr/loadgen"
	"gomr/sim"
	"gomr/tasktracker"
)

// newLoadgenCmd is `mr loadgen`: simulated TaskTrackers against a real
// JobTracker (docs/scaling.md).
func newLoadgenCmd() *cobra.Command {
	var (
		cf                        confFlags
		cfg                       loadgen.Config
		trace, out                string
		traceJobs                 int
		speed                     float64
		seed                      uint64
		fixed                     loadgen.Fixed
		jobs                      int
		warmup                    time.Duration
		heartbeat, duration       time.Duration
		trackers, mapS, redS, cns int
	)
	cmd := &cobra.Command{
		Use:   "loadgen [--jobtracker HOST:PORT | --spawn] [--trackers N] [--heartbeat D] [--duration D] [--trace FILE | --jobs N --maps M ...] [--out FILE]",
		Short: "Drive a JobTracker with N simulated TaskTrackers over gRPC and measure it",
		Long: "loadgen runs N simulated TaskTrackers in this process, heartbeating a real JobTracker over gRPC,\n" +
			"and submits a workload's jobs to it as real jobs with synthetic splits; the trackers \"run\" the\n" +
			"attempts they are given for the workload's durations (no task process runs). It reports the\n" +
			"heartbeats per second sustained, heartbeat latency, time from a slot freeing to a launch on it,\n" +
			"launches per second, the JobTracker's CPU and RSS and the trackers it declared lost.\n\n" +
			"Without --jobtracker it starts a JobTracker in this process (-D and --policy configure it), or\n" +
			"with --spawn as a child process (`mr jobtracker`), whose CPU and memory are then its own.\n" +
			"The workload is a trace or built-in workload of `mr sim` (--trace), or --jobs identical jobs of\n" +
			"--maps maps and --reduces reduces (--maps 0: enough maps to keep every map slot busy).\n" +
			"See docs/scaling.md.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			defines, err := cf.overrides()
			if err != nil {
				return err
			}
			cfg.ConfFile, cfg.Defines = cf.file, defines
			cfg.Trackers, cfg.MapSlots, cfg.ReduceSlots, cfg.Conns = trackers, mapS, redS, cns
			cfg.Heartbeat, cfg.Duration = heartbeat, duration
			cfg.Warmup = warmup
			if !cmd.Flags().Changed("warmup") {
				cfg.Warmup = min(2*heartbeat, duration/3)
			}
			if trace != "" {
				// The trace gives the jobs: a fixed workload's flag beside it
				// would be ignored, so it is refused.
				var fixedOnly []string
				for _, name := range []string{"jobs", "maps", "reduces", "map-time", "reduce-time", "jitter", "pools", "every", "deadline"} {
					if cmd.Flags().Changed(name) {
						fixedOnly = append(fixedOnly, "--"+name)
					}
				}
				if len(fixedOnly) > 0 {
					return fmt.Errorf("%s describe the fixed workload, not --trace %s, whose jobs come from the trace", strings.Join(fixedOnly, ", "), trace)
				}
				w, err := sim.LoadWorkload(trace, sim.GenOptions{Seed: seed, Jobs: traceJobs})
				if err != nil {
					return fmt.Errorf("--trace: %w", err)
				}
				cfg.Jobs = loadgen.FromWorkload(w)
				if err := loadgen.Speed(cfg.Jobs, speed); err != nil {
					return fmt.Errorf("--speed: %w", err)
				}
			} else {
				if cfg.Input != "" && cmd.Flags().Changed("maps") {
					return fmt.Errorf("--maps with --input %s: the jobs' maps are the input's splits (--split-size cuts them)", cfg.Input)
				}
				fixed.Jobs, fixed.Seed = jobs, seed
				if fixed.Maps == 0 && fixed.Reduces == 0 {
					fixed.Maps = loadgen.BusyMaps(trackers*mapS, jobs, duration, fixed.MapTime)
				}
				if cfg.Jobs, err = fixed.Generate(); err != nil {
					return err
				}
			}
			cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
			ctx, cancel := signalContext()
			defer cancel()
			res, err := loadgen.Run(ctx, cfg)
			if err != nil {
				return err
			}
			if err := loadgen.WriteTable(os.Stdout, res); err != nil {
				return err
			}
			if out != "" {
				f, err := os.Create(out)
				if err != nil {
					return fmt.Errorf("--out: %w", err)
				}
				if err := loadgen.WriteJSON(f, res); err != nil {
					f.Close()
					return fmt.Errorf("--out: %w", err)
				}
				return f.Close()
			}
			return nil
		},
	}
	cf.add(cmd)
	f := cmd.Flags()
	f.StringVar(&cfg.JobTracker, "jobtracker", "", "address HOST:PORT of a running JobTracker (default: start one in this process)")
	f.IntVar(&cfg.JobTrackerPID, "jobtracker-pid", 0, "process id of that JobTracker, on this machine, for its CPU time and RSS")
	f.StringVar(&cfg.JobTrackerHTTP, "jobtracker-http", "", "HOST:PORT of that JobTracker's HTTP pages, for its heap and goroutines (/metrics)")
	f.StringVar(&cfg.Executable, "jobtracker-bin", "", "with --spawn, the mr binary to start the JobTracker from (default: this one), to compare builds under one generator")
	f.BoolVar(&cfg.Spawn, "spawn", false, "start the JobTracker as a child process (this binary's `jobtracker`) instead of in this process")
	f.IntVar(&cfg.GeneratorGCPercent, "generator-gogc", 400, "garbage collector percentage (GOGC) of this process while it drives a spawned or remote JobTracker, so that its own collections do not stall the goroutines timing the heartbeats (0: the runtime's; the JobTracker keeps its own)")
	f.IntVar(&cfg.GeneratorNice, "generator-nice", 0, "nice value of this process while it drives a spawned or remote JobTracker: with a positive one the JobTracker gets the CPU it asks for before the simulated trackers, as on a host of its own (0: both share the cores evenly, as every figure measured before this option)")
	f.StringVar(&cfg.Policy, "policy", "", "scheduler.policy of the JobTracker this command starts")
	f.IntVar(&trackers, "trackers", 100, "simulated TaskTrackers")
	f.IntVar(&mapS, "map-slots", 2, "map slots per tracker")
	f.IntVar(&redS, "reduce-slots", 2, "reduce slots per tracker")
	f.DurationVar(&heartbeat, "heartbeat", 3*time.Second, "heartbeat interval of every tracker (also the started JobTracker's mapreduce.tasktracker.heartbeat.interval)")
	f.BoolVar(&cfg.FollowInterval, "follow-interval", false, "trackers wait the interval the JobTracker's replies ask for (it grows with the cluster: mapreduce.jobtracker.heartbeats.in.second) instead of --heartbeat, as TaskTrackers do")
	f.BoolVar(&cfg.OutOfBand, "out-of-band", false, "heartbeat at once when an attempt ends and soon after a launch, as a TaskTracker with mapreduce.tasktracker.outofband.heartbeat")
	f.Var(pacingFlag{&cfg.Pacing}, "pacing", "from when a tracker counts the interval to its next heartbeat, as a TaskTracker with "+tasktracker.KeyHeartbeatPacing+": send (from the last send, the TaskTracker's default) or reply (from the reply, as Hadoop 1 and this generator before that key)")
	f.DurationVar(&cfg.CountersInterval, "counters-interval", tasktracker.DefaultCountersInterval, "how often heartbeats carry the running attempts' counters, as a TaskTracker with "+tasktracker.KeyCountersInterval+" (0: every heartbeat, the generator's behaviour before that key)")
	f.IntVar(&cfg.ExtraCounters, "extra-counters", 20, "counters each status carries beyond the generator's 3 or 4, so that a status weighs what a real task's does (20 or more counters); 0 gives the light statuses of the runs before 2026-11-26, late night")
	f.BoolVar(&cfg.MapEvents, "map-events", true, "shuffling reduces ask for their job's map events (GetMapEvents) as reduce tasks do")
	f.IntVar(&cns, "conns", 0, fmt.Sprintf("gRPC connections the trackers share (0: one per tracker up to %d)", loadgen.MaxConns))
	f.DurationVar(&duration, "duration", 60*time.Second, "how long the trackers run")
	f.DurationVar(&warmup, "warmup", 0, "the first part of the run, not measured (default: two heartbeats, at most a third of --duration)")
	f.BoolVar(&cfg.StopWhenDone, "until-done", false, "end the run when every job of the workload has ended")
	f.StringVar(&trace, "trace", "", "workload: a trace file or built-in workload of `mr sim` (docs/trace-format.md)")
	f.IntVar(&traceJobs, "trace-jobs", 0, "jobs of a built-in --trace workload (0: its default)")
	f.Float64Var(&speed, "speed", 1, "replay a --trace this many times faster (submissions and task durations divided by it)")
	f.Uint64Var(&seed, "seed", 1, "seed of the workload's durations")
	f.IntVar(&jobs, "jobs", 4, "fixed workload: number of jobs")
	f.IntVar(&fixed.Maps, "maps", 0, "fixed workload: maps per job (0 with no reduces: enough to keep every map slot busy for --duration)")
	f.IntVar(&fixed.Reduces, "reduces", 0, "fixed workload: reduces per job")
	f.DurationVar(&fixed.MapTime, "map-time", 10*time.Second, "fixed workload: map task duration")
	f.DurationVar(&fixed.ReduceTime, "reduce-time", 10*time.Second, "fixed workload: reduce-phase duration")
	f.Float64Var(&fixed.Jitter, "jitter", 0.2, "fixed workload: task durations drawn uniformly within this fraction of their time")
	f.IntVar(&fixed.Pools, "pools", 0, "fixed workload: spread the jobs over this many pools (pool-0, pool-1...)")
	f.DurationVar(&fixed.Every, "every", 0, "fixed workload: time between submissions (0: all at the start)")
	f.DurationVar(&fixed.Deadline, "deadline", 0, "fixed workload: every job's deadline, from its submission (0: none); edf, minedf and minedf-wc order the jobs by it, and minedf and minedf-wc size each job's quota to it from the job's profile (--profiles)")
	f.BoolVar(&cfg.Profiles, "profiles", false, "give the JobTracker this command starts a profile of every job of the workload, as if each had run before: an earlier successful run with the job's own task durations (at most 1,000 of each kind) written in its history directory before it starts; without one, a deadline job gets every slot it can use, as under edf")
	f.BoolVar(&cfg.SubmitOnly, "submit-only", false, "no trackers: submit each job, measuring SubmitJob and the JobTracker's RSS before and after, then kill it")
	f.StringVar(&cfg.Input, "input", "", "with --submit-only, submit each job as mr submit does, over this input (a file, directory or glob, local or hdfs://): its splits computed by the client with the job's input format, the client's time (splits and encoding) measured apart from SubmitJob; --maps is then not used")
	f.Int64Var(&cfg.SplitBytes, "split-size", 0, "with --input, the split size in bytes (mapreduce.input.fileinputformat.split.maxsize; 0: the configuration's, 128 MiB)")
	f.StringVar(&cfg.OutputDir, "output-dir", "", "directory, on the JobTracker's machine, for the jobs' output directories (default: a new temporary one)")
	f.StringVar(&out, "out", "", "write the result as JSON to this file")
	f.DurationVar(&cfg.PollUI, "poll-ui", 0, "poll the JobTracker's web UI pages, /api, /metrics and mr job's calls, each every this long, during the run, and report their response times (0: no polling)")
	f.StringVar(&cfg.JobTrackerProfiles, "jobtracker-pprof", "", "with --spawn, write profiles of the JobTracker over the measured window into this directory: cpu, mutex, block, allocs (pprof, each over the window), heap (at its end) and an execution trace (trace.out, --jobtracker-trace-length long, from the window's middle or at --jobtracker-trace-at); the JobTracker then samples mutex and block events, which costs it some CPU")
	f.DurationVar(&cfg.JobTrackerTraceLength, "jobtracker-trace-length", loadgen.DefaultTraceLength, "with --jobtracker-pprof, how long the execution trace lasts (cut at the run's end; about 1 MB a second at 10,000 trackers)")
	f.DurationVar(&cfg.JobTrackerTraceAt, "jobtracker-trace-at", -time.Second, "with --jobtracker-pprof, when the execution trace starts, from the trackers' start (0: over the registrations and first launches of the warm-up; negative: in the middle of the measured window)")
	f.StringVar(&cfg.CPUProfile, "cpuprofile", "", "write a CPU profile of this process over the measured window (with the in-process JobTracker)")
	cmd.AddCommand(&cobra.Command{
		Use:   "curves RESULT.json...",
		Short: "Print one line per loadgen result (by policy, trackers, then maps per job) and the submit-only results: the curves of make bench-scale",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			rs, err := loadgen.ReadResults(args)
			if err != nil {
				return err
			}
			return loadgen.WriteCurves(os.Stdout, rs)
		},
	})
	return cmd
}

// pacingFlag is --pacing: a tasktracker.HeartbeatPacing by its
// configuration value.
type pacingFlag struct{ p *tasktracker.HeartbeatPacing }

func (f pacingFlag) String() string {
	if f.p == nil {
		return tasktracker.PaceFromSend.String()
	}
	return f.p.String()
}

func (f pacingFlag) Set(s string) error {
	p, err := tasktracker.ParseHeartbeatPacing(s)
	if err != nil {
		return err
	}
	*f.p = p
	return nil
}

func (pacingFlag) Type() string { return "send|reply" }
