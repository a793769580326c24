package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/spf13/cobra"

	"gomr/conf"
	"gomr/jobtracker"
	"gomr/mr"
	"gomr/workloads/replay"
)

func mrApps() []*mr.App { return mr.Apps() }

func newLocalCmd() *cobra.Command {
	var cf confFlags
	var trackers int
	var keep bool
	cmd := &cobra.Command{
		Use:   "local [--trackers N] [--conf FILE] [-D key=value]... <app> <args...>",
		Short: "Start a JobTracker and N TaskTrackers on loopback, run an app on them, and clean up",
		Long: "local runs a real cluster in one command: a JobTracker and N TaskTrackers on 127.0.0.1,\n" +
			"each task attempt a child process, in a temporary work directory that is removed afterwards.\n" +
			appDefinesHelp,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				printApps(os.Stderr)
				return &mr.UsageError{App: "mr local", Usage: "[--trackers N] <app> <args...>", Problem: "no app given"}
			}
			app, err := mr.LookupApp(args[0])
			if err != nil {
				return err
			}
			if trackers < 1 {
				return fmt.Errorf("--trackers must be at least 1, got %d", trackers)
			}
			appArgs, err := cf.takeAppDefines(args[1:])
			if err != nil {
				return err
			}
			// The app's arguments are checked before the cluster starts.
			if err := app.CheckArgs(appArgs); err != nil {
				return err
			}
			cfg, err := cf.load(nil)
			if err != nil {
				return err
			}
			// The app's driver logs at the user's level; the embedded
			// daemons at warn unless log.level is given.
			installLogger(cfg, os.Stderr)
			ctx, cancel := signalContext()
			defer cancel()
			return runLocal(ctx, cfg, trackers, keep, app, appArgs, os.Stdout, os.Stderr)
		},
	}
	cf.add(cmd)
	cf.addJobFlags(cmd)
	cmd.Flags().IntVar(&trackers, "trackers", 2, "number of TaskTrackers")
	cmd.Flags().BoolVar(&keep, "keep", false, "keep the work directory (logs, local dirs, history) after the run")
	cmd.Flags().SetInterspersed(false)
	return cmd
}

// runLocal runs app on an embedded cluster (replay.StartCluster, which
// mr workload replay and compare start too).
func runLocal(ctx context.Context, cfg *conf.Config, trackers int, keep bool, app *mr.App, args []string, stdout, stderr io.Writer) error {
	lc, err := startLocalCluster(ctx, cfg, trackers, keep, stderr)
	if err != nil {
		return err
	}
	defer lc.close()
	lc.client.Out = stdout
	lc.client.TTY = isTerminal(stdout)
	if lc.ui != "" {
		fmt.Fprintf(stdout, "JobTracker web UI: %s\n", lc.ui)
	}
	return app.Run(ctx, lc.client, args)
}

// localCluster is an embedded cluster (replay.StartCluster, which mr
// workload replay and compare start too) and a client connected to it.
type localCluster struct {
	client   *jobtracker.Client
	ui       string // the JobTracker's web UI, http://host:port ("" if none)
	trackers int
	c        *replay.Cluster
}

// close closes the client, stops the daemons and removes the work
// directory (unless kept).
func (lc *localCluster) close() { lc.c.Close() }

// startLocalCluster starts an embedded cluster of the given number of
// TaskTrackers with cfg (addresses and directories the user left at their
// defaults are replaced by loopback ones and a temporary work directory);
// close stops it.
func startLocalCluster(ctx context.Context, cfg *conf.Config, trackers int, keep bool, stderr io.Writer) (*localCluster, error) {
	c, err := replay.StartCluster(ctx, cfg, trackers, keep, func(c *conf.Config) *slog.Logger { return newLogger(c, stderr) }, stderr)
	if err != nil {
		return nil, err
	}
	return &localCluster{client: c.Client, ui: c.UI, trackers: c.Trackers, c: c}, nil
}
