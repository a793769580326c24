package main

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"gomr/conf"
	"gomr/jobtracker"
	"gomr/mrpb"
	"gomr/partitions"
	"gomr/sim"
	"gomr/workloads/replay"
)

// replayFlags are the flags replay and compare share.
type replayFlags struct {
	cf                              confFlags
	trace                           string
	timeScale                       float64
	trackers, mapSlots, reduceSlots int
	shuffleRatio, byteScale         float64
	keep                            bool
}

func (f *replayFlags) add(cmd *cobra.Command) {
	f.cf.add(cmd)
	fl := cmd.Flags()
	fl.StringVar(&f.trace, "trace", "", "trace file (docs/trace-format.md, or a job history), a built-in mix ("+strings.Join(replay.MixNames(), ", ")+") or a simulator workload")
	fl.Float64Var(&f.timeScale, "time-scale", 1, "multiply every time of the trace (submissions, tasks, deadlines) by this factor")
	fl.IntVar(&f.trackers, "trackers", replay.DefaultTrackers, "TaskTrackers of the embedded cluster")
	fl.IntVar(&f.mapSlots, "map-slots", replay.DefaultMapSlots, "map slots per TaskTracker")
	fl.IntVar(&f.reduceSlots, "reduce-slots", replay.DefaultReduceSlots, "reduce slots per TaskTracker")
	fl.Float64Var(&f.shuffleRatio, "shuffle-ratio", replay.DefaultShuffleRatio, "map output bytes per input byte of a job")
	fl.Float64Var(&f.byteScale, "byte-scale", replay.DefaultByteScale, "scale of the bytes a job moves: input_bytes × shuffle-ratio × byte-scale")
	fl.BoolVar(&f.keep, "keep", false, "keep the embedded cluster's work directory (logs, history)")
}

// check refuses flag values no run can use.
func (f *replayFlags) check() error {
	switch {
	case f.trace == "":
		return fmt.Errorf("name a trace with --trace (a file, or one of %s)", strings.Join(replay.MixNames(), ", "))
	case !(f.timeScale > 0):
		return fmt.Errorf("--time-scale %v: want a factor > 0", f.timeScale)
	case f.trackers < 1 || f.mapSlots < 1 || f.reduceSlots < 0:
		return fmt.Errorf("--trackers %d, --map-slots %d, --reduce-slots %d: want at least one tracker and one map slot", f.trackers, f.mapSlots, f.reduceSlots)
	case !(f.shuffleRatio >= 0) || !(f.byteScale >= 0):
		return fmt.Errorf("--shuffle-ratio %v and --byte-scale %v must be >= 0", f.shuffleRatio, f.byteScale)
	}
	return nil
}

// load reads (or generates) and scales the trace.
func (f *replayFlags) load(seed uint64) (*sim.Workload, error) {
	w, err := replay.Load(f.trace, seed)
	if err != nil {
		return nil, err
	}
	if f.timeScale != 1 {
		return replay.Scale(w, f.timeScale)
	}
	return w, nil
}

// config builds a run's configuration: the workload's policy settings,
// the cluster shape, the workload's reduce slow-start and speculation
// off (the simulator runs none), under the user's --conf, MR_ variables
// and -D, which win; policy, when set, is scheduler.policy.
func (f *replayFlags) config(policy string, w *sim.Workload) (*conf.Config, error) {
	extra := map[string]string{
		"mapreduce.tasktracker.map.tasks.maximum":      strconv.Itoa(f.mapSlots),
		"mapreduce.tasktracker.reduce.tasks.maximum":   strconv.Itoa(f.reduceSlots),
		"mapreduce.job.reduce.slowstart.completedmaps": strconv.FormatFloat(w.Slowstart, 'g', -1, 64),
		"mapreduce.map.speculative":                    "false",
		"mapreduce.reduce.speculative":                 "false",
		"log.level":                                    "error",
	}
	for k, v := range w.Conf {
		extra[k] = v
	}
	if policy != "" {
		extra["scheduler.policy"] = policy
	}
	cfg, err := f.cf.load(extra)
	if err != nil {
		return nil, err
	}
	if policy != "" && cfg.String("scheduler.policy") != policy {
		return nil, fmt.Errorf("--policy %s and -D scheduler.policy=%s disagree", policy, cfg.String("scheduler.policy"))
	}
	return cfg, nil
}

func (f *replayFlags) options(progress io.Writer) replay.Options {
	return replay.Options{ShuffleRatio: f.shuffleRatio, ByteScale: f.byteScale, Progress: progress, Bar: isTerminal(progress)}
}

func newWorkloadReplayCmd() *cobra.Command {
	var f replayFlags
	var policy, jt, historyOut string
	var seed uint64
	cmd := &cobra.Command{
		Use:   "replay --trace FILE|MIX [--policy P | -D key=value ...] [--time-scale X] [--jobtracker HOST:PORT]",
		Short: "Replay a workload trace on a real cluster with synthetic jobs, and print its metrics",
		Long: "replay submits one synthetic replay job per trace entry (apps/replay.go) at its submit time, with its name,\n" +
			"pool, priority and deadline; each map and reduce lasts what the trace says and the maps move input_bytes ×\n" +
			"--shuffle-ratio × --byte-scale bytes through the shuffle. It runs on an embedded cluster (as mr local) whose\n" +
			"policy is --policy (or -D scheduler.policy), or on a running JobTracker (--jobtracker) with that cluster's\n" +
			"policy; it shows progress, waits for every job, collects their job history (--history-out) and prints the\n" +
			"simulator's metrics of the run. The trace is checked as mr sim checks it, before anything runs.\n" +
			"Built-in mixes: " + strings.Join(replay.MixNames(), ", ") + " (docs/comparison.md).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := f.check(); err != nil {
				return err
			}
			if policy != "" && !slices.Contains(partitions.Names(), policy) {
				return fmt.Errorf("--policy %q: unknown policy (want one of %s)", policy, strings.Join(partitions.Names(), ", "))
			}
			if jt != "" && policy != "" {
				return fmt.Errorf("--policy sets the embedded cluster's policy; the JobTracker at %s runs its own (drop --policy or --jobtracker)", jt)
			}
			w, err := f.load(seed)
			if err != nil {
				return err
			}
			cfg, err := f.config(policy, w)
			if err != nil {
				return err
			}
			ctx, cancel := signalContext()
			defer cancel()
			stderr := cmd.ErrOrStderr()
			var client *jobtracker.Client
			var remotePolicy string
			trackers, mapSlots, reduceSlots := f.trackers, f.trackers*f.mapSlots, f.trackers*f.reduceSlots
			if jt != "" {
				if client, err = jobtracker.Dial(jt, cfg); err != nil {
					return err
				}
				defer client.Close()
				resp, err := client.RPC().ListTrackers(ctx, &mrpb.ListTrackersRequest{})
				if err != nil {
					return fmt.Errorf("asking the JobTracker at %s for its trackers and policy: %w", jt, err)
				}
				remotePolicy = resp.Policy
				trackers, mapSlots, reduceSlots = len(resp.Trackers), 0, 0
				for _, t := range resp.Trackers {
					mapSlots += int(t.MapSlots)
					reduceSlots += int(t.ReduceSlots)
				}
			} else {
				cl, err := replay.StartCluster(ctx, cfg, f.trackers, f.keep, func(c *conf.Config) *slog.Logger { return newLogger(c, stderr) }, stderr)
				if err != nil {
					return err
				}
				defer cl.Close()
				client = cl.Client
			}
			label, policyText := cfg.String("scheduler.policy"), "policy "+cfg.String("scheduler.policy")
			if jt != "" {
				// The JobTracker's policy is its own configuration's, which
				// its ListTrackers reply names (empty from an older one).
				label, policyText = remotePolicy, "policy "+remotePolicy+" of the JobTracker at "+jt
				if remotePolicy == "" {
					label, policyText = "remote", "the policy of the JobTracker at "+jt
				}
			}
			fmt.Fprintf(stderr, "replay: %s, %d jobs, %s\n", w.Description, len(w.Jobs), policyText)
			run, runErr := replay.Replay(ctx, client, w, f.options(stderr))
			if run != nil && historyOut != "" && len(run.HistoryJSONL) > 0 {
				if err := os.WriteFile(historyOut, run.HistoryJSONL, 0o644); err != nil {
					return fmt.Errorf("writing the job history: %w", err)
				}
			}
			if runErr != nil {
				return runErr
			}
			res, err := replay.ResultOf(run, label, trackers, mapSlots, reduceSlots, cfg.Float("mapreduce.job.reduce.slowstart.completedmaps"))
			if err != nil {
				return err
			}
			return sim.WriteTable(cmd.OutOrStdout(), w.Name+" (real run)", seed, []*sim.Result{res})
		},
	}
	f.add(cmd)
	fl := cmd.Flags()
	fl.StringVar(&policy, "policy", "", "scheduling policy of the embedded cluster ("+strings.Join(partitions.Names(), ", ")+"); default: the configuration's scheduler.policy")
	fl.StringVar(&jt, "jobtracker", "", "replay on the JobTracker at HOST:PORT instead of an embedded cluster")
	fl.StringVar(&historyOut, "history-out", "", "write the jobs' history (JSON lines, replayable by mr sim) to this file")
	fl.Uint64Var(&seed, "seed", 1, "seed of a generated mix")
	return cmd
}

func newWorkloadCompareCmd() *cobra.Command {
	var f replayFlags
	var policies, seeds, out, from string
	var ideal bool
	var launchDist, reduceLaunch, launchFit, launchFitSeeds, aboveFit string
	var draws int
	var rankResolve float64
	var phases, afterLaunch, firstHeartbeat string
	costs := sim.MeasuredOverheads
	// launchOpts sets the model's launch cost per --sim-launch-dist.
	launchOpts := func(o *replay.CompareOptions) error {
		switch launchDist {
		case "constant":
			costs.LaunchDist = nil
		case "measured":
			costs.LaunchDist = sim.MeasuredLaunchDist()
		case "run":
			costs.LaunchDist, o.LaunchFromRun = nil, true
		case "load":
			// A run whose load was not recorded keeps the measured spread.
			costs.LaunchDist, o.LaunchLoad = sim.MeasuredLaunchDist(), &sim.MeasuredLaunchLoad
		default:
			return fmt.Errorf("--sim-launch-dist %q: want constant, measured, load or run", launchDist)
		}
		switch reduceLaunch {
		case "map":
		case "load":
			if launchDist != "load" {
				return fmt.Errorf("--sim-reduce-launch load needs --sim-launch-dist load")
			}
			o.ReduceLaunchLoad = &sim.MeasuredReduceLaunchLoad
		default:
			return fmt.Errorf("--sim-reduce-launch %q: want map or load", reduceLaunch)
		}
		if launchFit != "" {
			if launchDist != "load" {
				return fmt.Errorf("--sim-launch-fit needs --sim-launch-dist load")
			}
			maps, reduces, err := fitLaunchLoad(launchFit, launchFitSeeds, reduceLaunch == "load", aboveFit == "slope")
			if err != nil {
				return err
			}
			o.LaunchLoad, o.ReduceLaunchLoad = maps, reduces
		}
		switch aboveFit {
		case "slope":
		case "hold":
			for _, m := range []**sim.LaunchLoadModel{&o.LaunchLoad, &o.ReduceLaunchLoad} {
				if *m != nil {
					c := **m
					c.Slope = 0
					*m = &c
				}
			}
		default:
			return fmt.Errorf("--sim-launch-load-above %q: want slope or hold", aboveFit)
		}
		switch phases {
		case "even":
			costs.DrawPhases = false
		case "drawn":
			costs.DrawPhases = launchDist != "constant"
		default:
			return fmt.Errorf("--sim-phases %q: want drawn or even", phases)
		}
		switch afterLaunch {
		case "free":
			costs.AfterEveryLaunch = false
		case "every":
			costs.AfterEveryLaunch = true
		default:
			return fmt.Errorf("--sim-after-launch %q: want free or every", afterLaunch)
		}
		if rankResolve <= 0.5 || rankResolve > 1 {
			return fmt.Errorf("--sim-rank-resolve %v: want a share above 0.5 and at most 1", rankResolve)
		}
		switch firstHeartbeat {
		case "auto":
			o.FirstHeartbeat = replay.FirstHeartbeatAuto
		case "period":
			o.FirstHeartbeat = replay.FirstHeartbeatAtPeriod
		case "spread":
			o.FirstHeartbeat = replay.FirstHeartbeatSpread
		default:
			return fmt.Errorf("--sim-first-heartbeat %q: want auto, period or spread", firstHeartbeat)
		}
		o.Costs, o.LaunchDraws, o.RankResolve = &costs, draws, rankResolve
		return nil
	}
	cmd := &cobra.Command{
		Use:   "compare --policies P1,P2,... --trace NAME|FILE [--seeds 1,2,3] [--out DIR] | --from DIR [--out DIR]",
		Short: "Run a trace under each policy on a fresh embedded cluster and compare with the simulator",
		Long: "compare replays the trace (as mr workload replay) under each policy, each on a fresh embedded cluster whose\n" +
			"policy is set by configuration only, turns each run's job history into the simulator's metrics and prints\n" +
			"them beside the simulator's figures for the same trace, policy and cluster shape (sim.Run in-process),\n" +
			"with the ranking of the policies and the relative error of per-job response times. --out DIR receives the\n" +
			"table (text, CSV, JSON), the job histories and plots (slowdown CDF, slowdown vs size, timelines, slot\n" +
			"occupancy). Everything (trace, policies, configuration) is checked before the first run.\n" +
			"The simulator models the cluster's heartbeats and the runtime's per-task costs (sim.Overheads, measured;\n" +
			"--ideal-sim: an ideal cluster instead). --from DIR simulates again the real runs an earlier --out DIR holds\n" +
			"(its trace, seeds, policies and cluster), without running them again.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			stderr := cmd.ErrOrStderr()
			if from != "" {
				if cmd.Flags().Changed("trace") || cmd.Flags().Changed("policies") || cmd.Flags().Changed("seeds") {
					return fmt.Errorf("--from %s takes the trace, policies and seeds of its report; drop --trace, --policies and --seeds", from)
				}
				o := replay.CompareOptions{Config: f.config, Ideal: ideal}
				if err := launchOpts(&o); err != nil {
					return err
				}
				c, err := replay.Resimulate(from, o)
				if err != nil {
					return err
				}
				return writeComparison(cmd, c, out)
			}
			if err := f.check(); err != nil {
				return err
			}
			var ps []string
			for _, p := range strings.Split(policies, ",") {
				if p = strings.TrimSpace(p); p != "" && !slices.Contains(ps, p) {
					ps = append(ps, p)
				}
			}
			if len(ps) == 0 {
				return fmt.Errorf("name the policies to compare with --policies (from %s)", strings.Join(partitions.Names(), ", "))
			}
			var ss []uint64
			for _, s := range strings.Split(seeds, ",") {
				if s = strings.TrimSpace(s); s == "" {
					continue
				}
				v, err := strconv.ParseUint(s, 10, 64)
				if err != nil {
					return fmt.Errorf("--seeds: %q is not a seed (a non-negative integer)", s)
				}
				ss = append(ss, v)
			}
			o := replay.CompareOptions{
				Policies: ps, Trace: f.trace, Seeds: ss, TimeScale: f.timeScale,
				Trackers: f.trackers, MapSlots: f.mapSlots, ReduceSlots: f.reduceSlots,
				Replay: f.options(stderr),
				Config: f.config,
				NewLog: func(c *conf.Config) *slog.Logger { return newLogger(c, stderr) },
				Keep:   f.keep, Log: stderr, Ideal: ideal,
			}
			if err := launchOpts(&o); err != nil {
				return err
			}
			ctx, cancel := signalContext()
			defer cancel()
			c, err := replay.Compare(ctx, o)
			if err != nil {
				return err
			}
			return writeComparison(cmd, c, out)
		},
	}
	f.add(cmd)
	fl := cmd.Flags()
	fl.StringVar(&policies, "policies", "", "comma-separated policies to run ("+strings.Join(partitions.Names(), ", ")+")")
	fl.StringVar(&seeds, "seeds", "1", "comma-separated seeds of a generated mix (a file is run once)")
	fl.StringVar(&out, "out", "", "write the table (text, CSV, JSON), histories and plots to this directory")
	fl.StringVar(&from, "from", "", "simulate again the real runs of an earlier --out directory instead of running the trace")
	fl.BoolVar(&ideal, "ideal-sim", false, "simulate an ideal cluster (slots offered as they free, no per-task costs) instead of the model of the configured one")
	fl.DurationVar(&costs.Launch, "sim-launch", costs.Launch, "the model's task launch cost (from assignment to the task code starting)")
	fl.StringVar(&launchDist, "sim-launch-dist", "load", "the model's launch cost per attempt, drawn with the trace's seed: load (from the spread fitted for the machine's load average during the run, sim.MeasuredLaunchLoad, shifted by its slope above the loads it was fitted on; the measured spread for a run whose load was not recorded), measured (from one spread for every load, sim.MeasuredLaunchDist; the default before 2026-11-26 12:00 UTC), constant (--sim-launch for every attempt) or run (drawn from the spread the run's own history shows, after the run)")
	fl.StringVar(&reduceLaunch, "sim-reduce-launch", "map", "the model's reduce launch (its start to its reduce phase once its maps have ended: launch, fetch, merge): map (drawn as a map's launch) or load (from the reduce's own spread fitted for the run's load, sim.MeasuredReduceLaunchLoad; with --sim-launch-dist load)")
	fl.StringVar(&launchFit, "sim-launch-fit", "", "with --sim-launch-dist load: MAPS.tsv[,REDUCES.tsv], fit the load-matched launch model (and with --sim-reduce-launch load the reduce's, from the second file) on these samples (sim.ReadLaunchSamples' lines, as sim/testdata/*launch-load-samples.tsv) over sim.LaunchLoadFitEdges instead of the shipped tables: to judge a fit on runs it was not fitted on")
	fl.StringVar(&aboveFit, "sim-launch-load-above", "slope", "with --sim-launch-dist load, above the loads the model was fitted on: slope (its distributions shift by the fitted slope of the median launch on the load, sim.LaunchLoadModel.Slope) or hold (the busiest band's, the model before 2026-11-26 12:00 UTC)")
	fl.StringVar(&launchFitSeeds, "sim-launch-fit-seeds", "", "with --sim-launch-fit: fit on the samples of these comma-separated seeds only (default: all)")
	fl.IntVar(&draws, "sim-draws", 16, "with a launch spread (--sim-launch-dist measured, load or run): simulate each run this many times (launch seeds seed, seed+1000003, ...) and compare with each job's median over the draws; the table shows the spread of the draws' missed deadlines")
	fl.Float64Var(&rankResolve, "sim-rank-resolve", replay.DefaultRankResolve, "with several sim draws: the share of the draws that must order two policies alike for the simulator to resolve their order; the table then says, per ranking, how many of the real run's pairs the draws resolve, whether they agree, and which are unresolved (within the noise of launches and heartbeat phases)")
	fl.StringVar(&firstHeartbeat, "sim-first-heartbeat", "auto", "the trackers' first heartbeats in the model: period (all one period after the start, as the embedded cluster since it waits for every tracker's registration, 2026-11-26), spread (over the period, as --sim-phases says: runs made before), or auto (period for this command's own runs and for reports that say cluster_start registered, spread for older reports)")
	fl.StringVar(&phases, "sim-phases", "even", "the trackers' first heartbeats in the model: even (spread evenly over the period) or drawn (each launch draw places them at random in it; not with --sim-launch-dist constant)")
	fl.StringVar(&afterLaunch, "sim-after-launch", "free", "when the model's trackers heartbeat again 50 ms after a heartbeat that launched tasks: free (only when a slot of a launched type is still free, or tasks were preempted: the TaskTracker's rule) or every (after every launch: the TaskTracker before 2026-11-26 03:00 UTC, for --from on runs made with it)")
	fl.DurationVar(&costs.Report, "sim-report", costs.Report, "the model's task end report cost (from the task code's end to the JobTracker recording it)")
	fl.DurationVar(&costs.MapEvents, "sim-map-events", costs.MapEvents, "the model's delay from the last map's recorded end to a waiting reduce's reduce phase")
	return cmd
}

// fitLaunchLoad fits the load-matched launch models from --sim-launch-fit
// files (MAPS.tsv[,REDUCES.tsv]) on the samples of seeds (comma-separated;
// "" for all): the maps', and the reduces' when reduces is set, each with
// its slope above the fitted loads when slope is set.
func fitLaunchLoad(files, seeds string, reduces, slope bool) (*sim.LaunchLoadModel, *sim.LaunchLoadModel, error) {
	names := strings.Split(files, ",")
	if reduces != (len(names) == 2) || len(names) > 2 {
		return nil, nil, fmt.Errorf("--sim-launch-fit %q: want MAPS.tsv, or MAPS.tsv,REDUCES.tsv with --sim-reduce-launch load", files)
	}
	keep := map[uint64]bool{}
	if seeds != "" {
		for _, f := range strings.Split(seeds, ",") {
			n, err := strconv.ParseUint(strings.TrimSpace(f), 10, 64)
			if err != nil {
				return nil, nil, fmt.Errorf("--sim-launch-fit-seeds %q: %w", seeds, err)
			}
			keep[n] = true
		}
	}
	var models []*sim.LaunchLoadModel
	for _, name := range names {
		f, err := os.Open(name)
		if err != nil {
			return nil, nil, fmt.Errorf("--sim-launch-fit: %w", err)
		}
		all, err := sim.ReadLaunchSamples(f)
		f.Close()
		if err != nil {
			return nil, nil, fmt.Errorf("--sim-launch-fit %s: %w", name, err)
		}
		var samples []sim.LaunchSample
		for _, s := range all {
			if len(keep) == 0 || keep[s.Seed] {
				samples = append(samples, s)
			}
		}
		m, err := sim.FitLaunchLoad(samples, sim.LaunchLoadFitEdges)
		if err != nil {
			return nil, nil, fmt.Errorf("--sim-launch-fit %s: %w", name, err)
		}
		if slope {
			if m.Slope, err = sim.FitLaunchSlope(samples); err != nil {
				return nil, nil, fmt.Errorf("--sim-launch-fit %s: %w", name, err)
			}
		}
		models = append(models, &m)
	}
	if reduces {
		return models[0], models[1], nil
	}
	return models[0], nil, nil
}

// writeComparison prints the comparison's table and writes its folder.
func writeComparison(cmd *cobra.Command, c *replay.Comparison, out string) error {
	if err := c.WriteTable(cmd.OutOrStdout()); err != nil {
		return err
	}
	if out != "" {
		if err := c.WriteDir(out); err != nil {
			return err
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "compare: wrote %s (table.txt, metrics.csv, report.json, histories, plots)\n", out)
	}
	return nil
}
