package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"gomr/jobtracker"
	"gomr/jobtracker/jobhistory"
	"gomr/mr"
	"gomr/mrpb"
)

func newSubmitCmd() *cobra.Command {
	var cf confFlags
	var jtAddr string
	cmd := &cobra.Command{
		Use:   "submit [--jobtracker HOST:PORT] [--conf FILE] [-D key=value]... <app> <args...>",
		Short: "Run an app against a running JobTracker",
		Long:  "submit runs an app's jobs on a running cluster and waits for them.\n" + appDefinesHelp,
		Args:  cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				printApps(os.Stderr)
				return &mr.UsageError{App: "mr submit", Usage: "<app> <args...>", Problem: "no app given"}
			}
			app, err := mr.LookupApp(args[0])
			if err != nil {
				return err
			}
			appArgs, err := cf.takeAppDefines(args[1:])
			if err != nil {
				return err
			}
			if err := app.CheckArgs(appArgs); err != nil {
				return err
			}
			cfg, err := cf.load(nil)
			if err != nil {
				return err
			}
			if jtAddr == "" {
				jtAddr = cfg.String("mapreduce.jobtracker.address")
			}
			installLogger(cfg, os.Stderr)
			client, err := jobtracker.Dial(jtAddr, cfg)
			if err != nil {
				return err
			}
			defer client.Close()
			client.Out = os.Stdout
			client.TTY = isTerminal(os.Stdout)
			ctx, cancel := signalContext()
			defer cancel()
			return app.Run(ctx, client, appArgs)
		},
	}
	cf.add(cmd)
	cf.addJobFlags(cmd)
	cmd.Flags().StringVar(&jtAddr, "jobtracker", "", "JobTracker address (default mapreduce.jobtracker.address)")
	cmd.Flags().SetInterspersed(false)
	return cmd
}

const jobUsage = `mr job [--jobtracker HOST:PORT] <command>
  -list [all]                  running jobs (or all jobs)
  -status <job-id>             a job's state, progress and counters
  -kill <job-id>               kill a job
  -set-priority <job-id> <priority>  VERY_HIGH, HIGH, NORMAL, LOW or VERY_LOW
  -counter <job-id> <group> <name>  one counter's value
  -events <job-id> <from-event-#> <#-of-events>  task completion events
  -list-attempt-ids <job-id> <MAP|REDUCE> <running|completed|failed|killed>  attempt ids
  -logs <job-id> [<attempt-id>]  the stdout and stderr of an attempt, or of every attempt of the job
  -kill-task <attempt-id>      kill a task attempt (not counted as a failure)
  -fail-task <attempt-id>      fail a task attempt (counted against the task's attempts)
  -split-task <attempt-id>     split a running map attempt at its next record (docs/split.md)
  -history <job-id>            a finished job's history (JSON lines)
  -list-active-trackers        the live TaskTrackers
  -list-blacklisted-trackers   the TaskTrackers blacklisted across all jobs, and why`

// newJobCmd parses Hadoop's single-dash options itself.
func newJobCmd() *cobra.Command {
	return &cobra.Command{
		Use:                "job",
		Short:              "Query and control jobs and their tasks, as Hadoop's mapred job",
		Long:               jobUsage,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			var cf confFlags
			jtAddr := ""
			var rest []string
			for i := 0; i < len(args); i++ {
				a := args[i]
				switch {
				case a == "--jobtracker" && i+1 < len(args):
					jtAddr = args[i+1]
					i++
				case strings.HasPrefix(a, "--jobtracker="):
					jtAddr = strings.TrimPrefix(a, "--jobtracker=")
				case a == "--conf" && i+1 < len(args):
					cf.file = args[i+1]
					i++
				case a == "-D" && i+1 < len(args):
					cf.defines = append(cf.defines, args[i+1])
					i++
				case a == "-h" || a == "--help":
					fmt.Println(jobUsage)
					return nil
				default:
					rest = append(rest, a)
				}
			}
			if len(rest) == 0 {
				return &mr.UsageError{App: "mr job", Usage: jobVerbs, Problem: "no command given"}
			}
			cfg, err := cf.load(nil)
			if err != nil {
				return err
			}
			if jtAddr == "" {
				jtAddr = cfg.String("mapreduce.jobtracker.address")
			}
			client, err := jobtracker.Dial(jtAddr, cfg)
			if err != nil {
				return err
			}
			defer client.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			return runJobCommand(ctx, client, rest)
		},
	}
}

// jobVerbs is the one-line form of mr job's commands.
const jobVerbs = "-list | -status ID | -kill ID | -set-priority ID PRIORITY | -counter ID GROUP NAME | -events ID FROM N | " +
	"-list-attempt-ids ID TYPE STATE | -logs ID [ATTEMPT] | -kill-task ATTEMPT | -fail-task ATTEMPT | -split-task ATTEMPT | -history ID | -list-active-trackers | -list-blacklisted-trackers"

func needArgs(cmd string, got []string, n int, what string) error {
	if len(got) != n {
		return &mr.UsageError{App: "mr job", Usage: cmd + " " + what, Problem: fmt.Sprintf("%s takes %d argument(s)", cmd, n)}
	}
	return nil
}

func runJobCommand(ctx context.Context, c *jobtracker.Client, args []string) error {
	cmd, rest := args[0], args[1:]
	out := os.Stdout
	switch cmd {
	case "-list":
		all := len(rest) == 1 && rest[0] == "all"
		jobs, err := c.List(ctx, all)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "Total jobs:%d\n", len(jobs))
		tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "JobId\tName\tState\tStartTime\tUserName\tPriority\tPool\tMaps\tReduces\tSchedulingInfo")
		for _, j := range jobs {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d%%\t%d%%\t%s\n", j.JobId, j.Name, j.State,
				time.UnixMilli(j.StartMs).Format(time.RFC3339), j.User, j.Priority, j.Pool,
				jobtracker.Percent(j.MapProgress), jobtracker.Percent(j.ReduceProgress), j.SchedulingInfo)
		}
		return tw.Flush()
	case "-status":
		if err := needArgs(cmd, rest, 1, "<job-id>"); err != nil {
			return err
		}
		st, err := c.Status(ctx, rest[0])
		if err != nil {
			return err
		}
		printStatus(st)
		return nil
	case "-kill":
		if err := needArgs(cmd, rest, 1, "<job-id>"); err != nil {
			return err
		}
		resp, err := c.Kill(ctx, rest[0])
		if err != nil {
			return err
		}
		if !resp.Killed {
			return fmt.Errorf("job %s not killed: it is already %s", rest[0], resp.State)
		}
		fmt.Fprintf(out, "Killed job %s\n", rest[0])
		return nil
	case "-counter":
		if err := needArgs(cmd, rest, 3, "<job-id> <group> <name>"); err != nil {
			return err
		}
		st, err := c.Status(ctx, rest[0])
		if err != nil {
			return err
		}
		cs := jobtracker.CountersOf(st)
		g, ok := cs[rest[1]]
		if !ok {
			return fmt.Errorf("job %s has no counter group %q (groups: %s)", rest[0], rest[1], strings.Join(cs.Groups(), ", "))
		}
		v, ok := g[rest[2]]
		if !ok {
			return fmt.Errorf("job %s has no counter %q in group %q", rest[0], rest[2], rest[1])
		}
		fmt.Fprintln(out, v)
		return nil
	case "-list-active-trackers", "-list-blacklisted-trackers":
		if err := needArgs(cmd, rest, 0, ""); err != nil {
			return err
		}
		trackers, err := c.Trackers(ctx)
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		if cmd == "-list-active-trackers" {
			fmt.Fprintln(tw, "Tracker\tHost\tShuffle\tMapSlots\tReduceSlots\tBlacklisted\tFaults\tLostReplies")
			for _, t := range trackers {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%v\t%d\t%d\n", t.Name, t.Host, t.ShuffleAddress, t.MapSlots, t.ReduceSlots, t.Blacklisted, t.Faults, t.LostReplies)
			}
			return tw.Flush()
		}
		fmt.Fprintln(tw, "BlackListedNode\tReason")
		for _, t := range trackers {
			if t.Blacklisted {
				fmt.Fprintf(tw, "%s\t%s\n", t.Name, t.BlacklistReason)
			}
		}
		return tw.Flush()
	case "-set-priority":
		if err := needArgs(cmd, rest, 2, "<job-id> <VERY_HIGH|HIGH|NORMAL|LOW|VERY_LOW>"); err != nil {
			return err
		}
		if err := c.SetPriority(ctx, rest[0], rest[1]); err != nil {
			return err
		}
		fmt.Fprintln(out, "Changed job priority.")
		return nil
	case "-split-task":
		if err := needArgs(cmd, rest, 1, "<attempt-id>"); err != nil {
			return err
		}
		if err := c.SplitTask(ctx, rest[0]); err != nil {
			return err
		}
		fmt.Fprintf(out, "Ordered task %s split\n", rest[0])
		return nil
	case "-kill-task", "-fail-task":
		if err := needArgs(cmd, rest, 1, "<attempt-id>"); err != nil {
			return err
		}
		fail := cmd == "-fail-task"
		resp, err := c.KillTask(ctx, rest[0], fail)
		if err != nil {
			return err
		}
		if !resp.Killed {
			return fmt.Errorf("task attempt %s not killed: it is already %s", rest[0], resp.State)
		}
		if fail {
			fmt.Fprintf(out, "Killed task %s by failing it\n", rest[0])
		} else {
			fmt.Fprintf(out, "Killed task %s\n", rest[0])
		}
		return nil
	case "-events":
		if err := needArgs(cmd, rest, 3, "<job-id> <from-event-#> <#-of-events>"); err != nil {
			return err
		}
		from, err1 := strconv.Atoi(rest[1])
		n, err2 := strconv.Atoi(rest[2])
		if err1 != nil || err2 != nil || from < 0 || n < 0 {
			return &mr.UsageError{App: "mr job", Usage: "-events <job-id> <from-event-#> <#-of-events>", Problem: fmt.Sprintf("event numbers %q and %q must be integers >= 0", rest[1], rest[2])}
		}
		atts, err := c.Attempts(ctx, rest[0])
		if err != nil {
			return err
		}
		events := completionEvents(atts)
		events = events[min(from, len(events)):]
		events = events[:min(n, len(events))]
		fmt.Fprintf(out, "Task completion events for %s\n", rest[0])
		fmt.Fprintf(out, "Number of events (from %d) are: %d\n", from, len(events))
		for _, a := range events {
			fmt.Fprintf(out, "%s %s %s\n", a.State, a.AttemptId, a.Tracker)
		}
		return nil
	case "-list-attempt-ids":
		if err := needArgs(cmd, rest, 3, "<job-id> <MAP|REDUCE> <running|completed|failed|killed>"); err != nil {
			return err
		}
		typ, ok := map[string]string{"MAP": "m", "REDUCE": "r"}[strings.ToUpper(rest[1])]
		if !ok {
			return &mr.UsageError{App: "mr job", Usage: "-list-attempt-ids <job-id> <MAP|REDUCE> <state>", Problem: fmt.Sprintf("task type %q: want MAP or REDUCE (this runtime has no SETUP or CLEANUP tasks)", rest[1])}
		}
		states, ok := map[string][]string{"running": {"RUNNING", "COMMIT_PENDING"}, "completed": {"SUCCEEDED"},
			"failed": {"FAILED"}, "killed": {"KILLED"}}[strings.ToLower(rest[2])]
		if !ok {
			return &mr.UsageError{App: "mr job", Usage: "-list-attempt-ids <job-id> <MAP|REDUCE> <state>", Problem: fmt.Sprintf("task state %q: want running, completed, failed or killed", rest[2])}
		}
		atts, err := c.Attempts(ctx, rest[0])
		if err != nil {
			return err
		}
		for _, a := range atts {
			if a.TaskType == typ && slices.Contains(states, a.State) {
				fmt.Fprintln(out, a.AttemptId)
			}
		}
		return nil
	case "-logs":
		if len(rest) != 1 && len(rest) != 2 {
			return &mr.UsageError{App: "mr job", Usage: "-logs <job-id> [<attempt-id>]", Problem: "-logs takes a job id and, optionally, an attempt id"}
		}
		var ids []string
		if len(rest) == 2 {
			if !strings.HasPrefix(rest[1], "attempt_"+strings.TrimPrefix(rest[0], "job_")+"_") {
				return fmt.Errorf("attempt %s is not of job %s", rest[1], rest[0])
			}
			ids = []string{rest[1]}
		} else {
			atts, err := c.Attempts(ctx, rest[0])
			if status.Code(err) == codes.NotFound {
				// A retired job: its attempts are in its history.
				data, herr := c.History(ctx, rest[0])
				if herr != nil {
					return err
				}
				rec, herr := jobhistory.Parse(data)
				if herr != nil {
					return fmt.Errorf("history of %s: %w", rest[0], herr)
				}
				for _, a := range rec.Attempts {
					ids = append(ids, a.AttemptID)
				}
			} else if err != nil {
				return err
			}
			for _, a := range atts {
				ids = append(ids, a.AttemptId)
			}
		}
		for _, id := range ids {
			for _, filter := range []string{"stdout", "stderr"} {
				resp, err := c.TaskLog(ctx, id, filter)
				if err != nil {
					return err
				}
				fmt.Fprintf(out, "==> %s %s (tracker %s) <==\n", id, filter, resp.Tracker)
				out.Write(resp.Data)
				if n := len(resp.Data); n > 0 && resp.Data[n-1] != '\n' {
					fmt.Fprintln(out)
				}
			}
		}
		return nil
	case "-history":
		if err := needArgs(cmd, rest, 1, "<job-id>"); err != nil {
			return err
		}
		data, err := c.History(ctx, rest[0])
		if err != nil {
			return err
		}
		_, err = out.Write(data)
		return err
	}
	return &mr.UsageError{App: "mr job", Usage: jobVerbs, Problem: "unknown command " + cmd}
}

// completionEvents are the attempts that ended, in the order they ended
// (Hadoop's task completion events).
func completionEvents(atts []*mrpb.TaskAttemptInfo) []*mrpb.TaskAttemptInfo {
	var out []*mrpb.TaskAttemptInfo
	for _, a := range atts {
		if a.FinishMs > 0 {
			out = append(out, a)
		}
	}
	sort.SliceStable(out, func(i, k int) bool { return out[i].FinishMs < out[k].FinishMs })
	return out
}

func printStatus(st *mrpb.JobStatus) {
	out := os.Stdout
	fmt.Fprintf(out, "Job: %s\nName: %s\nState: %s\n", st.JobId, st.Name, st.State)
	if st.User != "" || st.Priority != "" {
		fmt.Fprintf(out, "User: %s\nPriority: %s\n", st.User, st.Priority)
	}
	if st.Error != "" {
		fmt.Fprintf(out, "Error: %s\n", st.Error)
	}
	fmt.Fprintf(out, "Output: %s\n", st.Output)
	if st.TrackingUrl != "" {
		fmt.Fprintf(out, "Tracking URL: %s\n", st.TrackingUrl)
	}
	fmt.Fprintf(out, "map %d%% reduce %d%%\n", jobtracker.Percent(st.MapProgress), jobtracker.Percent(st.ReduceProgress))
	for _, x := range []struct {
		name string
		s    *mrpb.TaskSummary
	}{{"Maps", st.Maps}, {"Reduces", st.Reduces}} {
		fmt.Fprintf(out, "%s: total %d, pending %d, running %d, succeeded %d, failed %d, killed %d\n",
			x.name, x.s.Total, x.s.Pending, x.s.Running, x.s.Succeeded, x.s.Failed, x.s.Killed)
	}
	if st.SchedulingInfo != "" {
		fmt.Fprintf(out, "Scheduling: %s\n", st.SchedulingInfo)
	}
	if len(st.BlacklistedTrackers) > 0 {
		fmt.Fprintf(out, "Blacklisted trackers: %s\n", strings.Join(st.BlacklistedTrackers, ", "))
	}
	if len(st.Speculations) > 0 {
		fmt.Fprintf(out, "Speculative attempts: %d\n", len(st.Speculations))
		for _, s := range st.Speculations {
			att := s.AttemptId
			if att == "" {
				att = "(not launched)"
			}
			fmt.Fprintf(out, "  %s %s %s -> %s %s\n    %s\n", s.TaskId, s.Kind, s.SourceAttempt, att, s.Outcome, s.Explanation)
			if s.Note != "" {
				fmt.Fprintf(out, "    note: %s\n", s.Note)
			}
		}
	}
	jobtracker.PrintCounters(out, jobtracker.CountersOf(st))
}
