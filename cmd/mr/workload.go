package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/spf13/cobra"

	"gomr/jobtracker"
	"gomr/workloads"
)

// workloadFlags are the options every mr workload subcommand takes.
type workloadFlags struct {
	profile, confDir, jobtracker, report string
	defines                              []string
}

// newWorkloadCmd returns the mr workload command, HiBench's suite over the
// built-in apps (docs/workloads.md). Its subcommands are prepare, run and
// suite; more are added with AddCommand on the result. A subcommand reads
// the shared options (persistent flags) with workloadFlagsOf and gets a
// Runner on the configured cluster from withWorkloads.
func newWorkloadCmd() *cobra.Command {
	f := &workloadFlags{} // bound to the flags; subcommands read them through workloadFlagsOf
	cmd := &cobra.Command{
		Use:   "workload",
		Short: "HiBench-style workloads (prepare, run, suite) and trace replays comparing policies with the simulator (replay, compare)",
		Long: "workload runs the workload suite of workloads/ (docs/workloads.md): the conf files in --conf\n" +
			"(workloads.conf, <name>.conf, benchmarks.lst) say the scale profile and sizes; each run appends\n" +
			"HiBench report lines to --report and writes a folder beside it with the job ids, configuration,\n" +
			"counters, histories, log and a monitor chart. Without --jobtracker (or gomr.cluster in\n" +
			"workloads.conf) an embedded cluster is started once for the command, as mr local does.",
	}
	// The suite's options are flags of prepare, run and suite (replay
	// and compare, whose --conf is a configuration file, have their own).
	suiteFlags := func(c *cobra.Command) *cobra.Command {
		pf := c.Flags()
		pf.StringVar(&f.profile, "profile", "", "scale profile: tiny, small, large, huge or gigantic (default hibench.scale.profile of workloads.conf)")
		pf.StringVar(&f.confDir, "conf", "workloads/conf", "directory of the workload conf files")
		pf.StringVar(&f.jobtracker, "jobtracker", "", "JobTracker address HOST:PORT (default gomr.cluster of workloads.conf; \"embedded\" starts one)")
		pf.StringVar(&f.report, "report", "", "report file (default hibench.report.dir/hibench.report.name of workloads.conf); run folders go beside it")
		pf.StringArrayVarP(&f.defines, "define", "D", nil, "runtime configuration override key=value for the cluster and the jobs (repeatable)")
		return c
	}

	one := func(use, short string, run func(ctx context.Context, r *workloads.Runner, name string) error) *cobra.Command {
		return &cobra.Command{
			Use:   use + " NAME",
			Short: short,
			Args:  cobra.ExactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				f, err := workloadFlagsOf(cmd)
				if err != nil {
					return err
				}
				ctx, cancel := signalContext()
				defer cancel()
				return withWorkloads(ctx, f, []string{args[0]}, cmd.OutOrStdout(), cmd.ErrOrStderr(), func(r *workloads.Runner) error {
					return run(ctx, r, args[0])
				})
			},
		}
	}
	cmd.AddCommand(
		suiteFlags(one("prepare", "Write a workload's input at the profile's size", func(ctx context.Context, r *workloads.Runner, name string) error {
			return r.Prepare(ctx, name)
		})),
		suiteFlags(one("run", "Run a workload on its prepared input, check its output and report it", func(ctx context.Context, r *workloads.Runner, name string) error {
			_, err := r.Run(ctx, name)
			return err
		})),
		suiteFlags(&cobra.Command{
			Use:   "suite",
			Short: "Prepare and run every workload of benchmarks.lst (those whose apps are not built in are skipped)",
			Args:  cobra.NoArgs,
			RunE: func(cmd *cobra.Command, args []string) error {
				f, err := workloadFlagsOf(cmd)
				if err != nil {
					return err
				}
				ctx, cancel := signalContext()
				defer cancel()
				return withWorkloads(ctx, f, nil, cmd.OutOrStdout(), cmd.ErrOrStderr(), func(r *workloads.Runner) error {
					return r.Suite(ctx)
				})
			},
		}),
		newWorkloadReplayCmd(),
		newWorkloadCompareCmd(),
	)
	return cmd
}

// workloadFlagsOf returns the suite's options as given to cmd, one of
// prepare, run and suite.
func workloadFlagsOf(cmd *cobra.Command) (*workloadFlags, error) {
	fl := cmd.Flags()
	f := &workloadFlags{}
	var errs []error
	for name, dst := range map[string]*string{"profile": &f.profile, "conf": &f.confDir, "jobtracker": &f.jobtracker, "report": &f.report} {
		v, err := fl.GetString(name)
		errs = append(errs, err)
		*dst = v
	}
	d, err := fl.GetStringArray("define")
	f.defines = d
	if err := errors.Join(append(errs, err)...); err != nil {
		return nil, fmt.Errorf("mr workload %s: %w", cmd.Name(), err)
	}
	return f, nil
}

// withWorkloads loads and checks the conf files (refusing unknown
// workloads in names, keys and profiles before anything runs), checks the
// apps of the named workloads, connects to the cluster (starting the
// embedded one if so configured) and calls fn with a Runner on it.
func withWorkloads(ctx context.Context, f *workloadFlags, names []string, stdout, stderr io.Writer, fn func(*workloads.Runner) error) error {
	c, err := workloads.Load(f.confDir, workloads.Overrides{Profile: f.profile, Cluster: f.jobtracker, Report: f.report})
	if err != nil {
		return err
	}
	for _, n := range names {
		w := workloads.Lookup(n)
		if w == nil {
			return fmt.Errorf("unknown workload %q (workloads: %v)", n, workloads.Names())
		}
		if !c.Has(n) {
			return fmt.Errorf("workload %s has no conf file in %s", n, f.confDir)
		}
		if err := w.CheckApps(); err != nil {
			return err
		}
	}
	cf := confFlags{defines: f.defines}
	cfg, err := cf.load(map[string]string{"mapreduce.job.reduces": strconv.Itoa(c.Global.Reduces)})
	if err != nil {
		return err
	}
	r := &workloads.Runner{Config: c, Out: stdout, Defines: f.defines}
	if c.Global.Cluster == "embedded" {
		r.DaemonLog = &workloads.Tee{W: stderr}
		lc, err := startLocalCluster(ctx, cfg, c.Global.Trackers, false, r.DaemonLog)
		if err != nil {
			return err
		}
		defer lc.close()
		r.Cluster = workloads.Cluster{Client: workloads.ProgressClient{Client: lc.client}, Embedded: true}
	} else {
		client, err := jobtracker.Dial(c.Global.Cluster, cfg)
		if err != nil {
			return err
		}
		defer client.Close()
		r.Cluster = workloads.Cluster{Client: workloads.ProgressClient{Client: client}}
	}
	fmt.Fprintf(stdout, "workloads: profile %s, cluster %s, report %s\n", c.Global.Profile, c.Global.Cluster, c.Global.Report)
	return fn(r)
}
