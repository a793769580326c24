package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"gomr/conf"
	"gomr/jobtracker"
	"gomr/mr"
	"gomr/security"
	"gomr/tasktracker"
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

// runLocal runs app on an embedded cluster.
func runLocal(ctx context.Context, cfg *conf.Config, trackers int, keep bool, app *mr.App, args []string, stdout, stderr io.Writer) error {
	lc, err := startLocalCluster(ctx, cfg, trackers, keep, stderr)
	if err != nil {
		return err
	}
	lc.client.Out = stdout
	lc.client.TTY = isTerminal(stdout)
	if lc.ui != "" {
		fmt.Fprintf(stdout, "JobTracker web UI: %s\n", lc.ui)
	}
	runErr := app.Run(ctx, lc.client, args)
	lc.close()
	return runErr
}

// localCluster is an embedded cluster: a JobTracker and TaskTrackers
// serving from goroutines of this process on loopback, in a temporary
// work directory, and a client connected to it.
type localCluster struct {
	client   *jobtracker.Client
	ui       string // the JobTracker's web UI, http://host:port ("" if none)
	trackers int
	cancel   context.CancelFunc
	wg       *sync.WaitGroup
	work     string
	keep     bool
}

// close closes the client, stops the daemons and removes the work
// directory (unless kept).
func (lc *localCluster) close() {
	lc.client.Close()
	lc.cancel()
	lc.wg.Wait()
	if !lc.keep {
		os.RemoveAll(lc.work)
	}
}

// startLocalCluster starts an embedded cluster of the given number of
// TaskTrackers with cfg (addresses and directories the user left at their
// defaults are replaced by loopback ones and a temporary work directory);
// close stops it.
func startLocalCluster(ctx context.Context, cfg *conf.Config, trackers int, keep bool, stderr io.Writer) (*localCluster, error) {
	if cfg.Bool(security.KeyTLSEnabled) {
		return nil, fmt.Errorf("mr local does not use TLS (%s): its daemons and client share one configuration, so one certificate; "+
			"start mr jobtracker and mr tasktracker, each with its own certificate (docs/security.md)", security.KeyTLSEnabled)
	}
	work, err := os.MkdirTemp("", "gomr-local-")
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*localCluster, error) {
		if !keep {
			os.RemoveAll(work)
		}
		return nil, err
	}
	if keep {
		fmt.Fprintln(stderr, "work directory:", work)
	}
	// Loopback addresses on free ports, and private directories, unless the
	// user chose them.
	set := map[string]string{
		"mapreduce.jobtracker.address":             "127.0.0.1:0",
		"mapreduce.jobtracker.http.address":        "127.0.0.1:0",
		"mapreduce.tasktracker.http.address":       "127.0.0.1:0",
		"mapreduce.tasktracker.report.address":     "127.0.0.1:0",
		"mapreduce.jobtracker.jobhistory.location": filepath.Join(work, "history"),
		"mapreduce.cluster.local.dir":              filepath.Join(work, "local"),
		"mapreduce.tasktracker.host.name":          "localhost",
		"log.level":                                "warn",
	}
	sources := map[string]string{}
	for _, e := range cfg.Entries() {
		sources[e.Key] = e.Source
	}
	over := map[string]string{}
	for k, v := range set {
		if sources[k] == "default" || k == "mapreduce.jobtracker.address" {
			over[k] = v
		}
	}
	cfg, err = cfg.With(over, "local")
	if err != nil {
		return fail(err)
	}
	log := newLogger(cfg, stderr)

	ctx, cancel := context.WithCancel(ctx)
	// A fresh history every run: the JobTracker's identifier is its start
	// time to the millisecond, so that job ids differ across runs.
	jt, err := jobtracker.New(cfg, jobtracker.Options{Logger: log, Ident: jobtracker.LocalIdent(time.Now())})
	if err != nil {
		cancel()
		return fail(err)
	}
	addr, err := jt.Listen("")
	if err != nil {
		cancel()
		return fail(err)
	}
	wg := &sync.WaitGroup{}
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := jt.Serve(ctx); err != nil {
			log.Error("jobtracker", "error", err)
		}
	}()
	for i := 0; i < trackers; i++ {
		tt, err := tasktracker.New(cfg, tasktracker.Options{Logger: log, Name: fmt.Sprintf("tracker_local_%d", i), JobTracker: addr})
		if err != nil {
			cancel()
			wg.Wait()
			return fail(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := tt.Run(ctx); err != nil {
				log.Error("tasktracker", "error", err)
			}
		}()
	}
	client, err := jobtracker.Dial(addr, cfg)
	if err != nil {
		cancel()
		wg.Wait()
		return fail(err)
	}
	uiCtx, uiCancel := context.WithTimeout(ctx, 10*time.Second)
	ui := jt.HTTPAddress(uiCtx)
	uiCancel()
	return &localCluster{client: client, ui: ui, trackers: trackers, cancel: cancel, wg: wg, work: work, keep: keep}, nil
}
