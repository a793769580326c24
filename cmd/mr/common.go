package main

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"gomr/conf"
)

// confFlags are the configuration flags every daemon and client command
// takes: --conf FILE and -D key=value (repeatable).
type confFlags struct {
	file    string
	defines []string
	// Job submission shortcuts (submit and local only).
	deadline float64
	pool     string
}

func (f *confFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.file, "conf", "", "YAML configuration file")
	cmd.Flags().StringArrayVarP(&f.defines, "define", "D", nil, "configuration override key=value (repeatable)")
}

// addJobFlags adds --deadline and --pool, shortcuts for
// mapreduce.job.deadline.seconds and mapreduce.job.queuename.
func (f *confFlags) addJobFlags(cmd *cobra.Command) {
	cmd.Flags().Float64Var(&f.deadline, "deadline", 0, "relative deadline of the app's jobs in seconds (deadline policies)")
	cmd.Flags().StringVar(&f.pool, "pool", "", "pool (queue) of the app's jobs")
}

func (f *confFlags) overrides() (map[string]string, error) {
	m := map[string]string{}
	if f.deadline < 0 {
		return nil, fmt.Errorf("--deadline %g: must not be negative", f.deadline)
	}
	if f.deadline > 0 {
		m["mapreduce.job.deadline.seconds"] = strconv.FormatFloat(f.deadline, 'g', -1, 64)
	}
	if f.pool != "" {
		m["mapreduce.job.queuename"] = f.pool
	}
	for _, d := range f.defines {
		k, v, err := conf.ParseDefine(d)
		if err != nil {
			return nil, err
		}
		m[k] = v
	}
	return m, nil
}

// load builds the configuration: defaults, file, MR_ environment, -D.
func (f *confFlags) load(extra map[string]string) (*conf.Config, error) {
	m, err := f.overrides()
	if err != nil {
		return nil, err
	}
	for k, v := range extra {
		if _, set := m[k]; !set {
			m[k] = v
		}
	}
	return conf.Load(conf.LoadOptions{File: f.file, Env: true, Overrides: m})
}

// newLogger makes the process logger at the configured level.
func newLogger(cfg *conf.Config, w io.Writer) *slog.Logger {
	var lvl slog.Level
	switch strings.ToLower(cfg.String("log.level")) {
	case "debug":
		lvl = slog.LevelDebug
	case "warn":
		lvl = slog.LevelWarn
	case "error":
		lvl = slog.LevelError
	default:
		lvl = slog.LevelInfo
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: lvl}))
}

func newConfCmd() *cobra.Command {
	var cf confFlags
	cmd := &cobra.Command{
		Use:   "conf",
		Short: "Print every configuration key with its value, source and description",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := cf.load(nil)
			if err != nil {
				return err
			}
			return conf.Print(os.Stdout, cfg)
		},
	}
	cf.add(cmd)
	return cmd
}

func newAppsCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "apps",
		Short: "List the apps built into this binary",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, args []string) {
			printApps(os.Stdout)
		},
	}
}

func printApps(w io.Writer) {
	fmt.Fprintln(w, "Apps:")
	for _, a := range mrApps() {
		fmt.Fprintf(w, "  %-13s %s\n", a.Name, a.Usage)
		if a.Description != "" {
			fmt.Fprintf(w, "  %-13s   %s\n", "", a.Description)
		}
	}
}
