package main

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

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

// appDefinesHelp is the help text of the commands that use takeAppDefines.
const appDefinesHelp = "-D key=value may also be given among the app's arguments (anywhere after the app name),\n" +
	"as if given before it; a lone -- ends that scan, passing what follows to the app as is."

// takeAppDefines takes the -D definitions out of an app's arguments (what
// follows the app name), so that
//
//	mr local wordcount in out -D mapreduce.job.reduces=3
//
// works as Hadoop users expect and as if the -D came before the app name,
// rather than "-D" being read as an input path. The forms are those the
// command's own flag takes: "-D key=value", "-Dkey=value", "-D=key=value",
// "--define key=value" and "--define=key=value". They are appended to
// f.defines, after those given before the app name, so they win over them;
// their keys and values are checked with the rest. Every other argument is
// the app's, in order. A lone "--" ends the scan: it is dropped and what
// follows goes to the app verbatim (mr local grep in out -- -Dx). A -D
// that is not followed by key=value is an error, never an app argument.
func (f *confFlags) takeAppDefines(args []string) ([]string, error) {
	var rest, defines []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		var def string
		switch {
		case a == "--":
			rest = append(rest, args[i+1:]...)
			i = len(args)
			continue
		case a == "-D" || a == "--define":
			if i+1 == len(args) {
				return nil, fmt.Errorf("%s at the end of the app's arguments: want %s key=value", a, a)
			}
			i++
			def = args[i]
		case strings.HasPrefix(a, "--define="):
			def = strings.TrimPrefix(a, "--define=")
		case strings.HasPrefix(a, "-D"):
			def = strings.TrimPrefix(a[2:], "=")
		default:
			rest = append(rest, a)
			continue
		}
		if _, _, err := conf.ParseDefine(def); err != nil {
			return nil, fmt.Errorf("%s among the app's arguments: %w (put -- before app arguments that start with -D)", a, err)
		}
		defines = append(defines, def)
	}
	f.defines = append(f.defines, defines...)
	return rest, nil
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
// installLogger makes newLogger's logger the process's default, so that
// code logging through slog's default logger or the standard log
// package (apps' drivers, libraries) logs in the same format, and
// returns it.
func installLogger(cfg *conf.Config, w io.Writer) *slog.Logger {
	l := newLogger(cfg, w)
	slog.SetDefault(l)
	return l
}

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

// isTerminal tells whether w is a terminal (a tty), where the client
// redraws its progress line in place.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}
