package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"gomr/jobtracker"
	"gomr/tasktracker"
)

func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

func newJobTrackerCmd() *cobra.Command {
	var cf confFlags
	var pprofAddr string
	cmd := &cobra.Command{
		Use:   "jobtracker",
		Short: "Run the JobTracker daemon (the master)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := cf.load(nil)
			if err != nil {
				return err
			}
			ctx, cancel := signalContext()
			defer cancel()
			log := installLogger(cfg, os.Stderr)
			if pprofAddr != "" {
				stop, err := servePprof(pprofAddr, log)
				if err != nil {
					return err
				}
				defer stop()
			}
			jt, err := jobtracker.New(cfg, jobtracker.Options{Logger: log})
			if err != nil {
				return err
			}
			if _, err := jt.Listen(""); err != nil {
				return err
			}
			return jt.Serve(ctx)
		},
	}
	cf.add(cmd)
	cmd.Flags().StringVar(&pprofAddr, "pprof", "", "serve Go's profiles (net/http/pprof: CPU, heap, allocs, mutex, block, goroutine, execution trace) at http://HOST:PORT/debug/pprof/, with mutex and block profiling on; for measurements, never on a port others reach (empty: off)")
	return cmd
}

func newTaskTrackerCmd() *cobra.Command {
	var cf confFlags
	var name string
	cmd := &cobra.Command{
		Use:   "tasktracker",
		Short: "Run a TaskTracker daemon (a worker with map and reduce slots)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := cf.load(nil)
			if err != nil {
				return err
			}
			ctx, cancel := signalContext()
			defer cancel()
			tt, err := tasktracker.New(cfg, tasktracker.Options{Logger: installLogger(cfg, os.Stderr), Name: name})
			if err != nil {
				return err
			}
			return tt.Run(ctx)
		},
	}
	cf.add(cmd)
	cmd.Flags().StringVar(&name, "name", "", "tracker name (default tracker_<host>:<port>)")
	return cmd
}
