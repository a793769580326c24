package jobtracker

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os/user"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"gomr/conf"
	"gomr/mr"
	"gomr/mr/fs"
	"gomr/mrpb"
	"gomr/security"
)

// Client talks to a JobTracker: it submits jobs (computing their input
// splits on the client side, as Hadoop's JobClient does), waits for them
// while printing progress, and queries, kills and lists jobs. It implements
// mr.JobClient for app drivers.
type Client struct {
	cfg  *conf.Config
	conn *grpc.ClientConn
	jt   mrpb.JobTrackerClient
	tls  bool // the client speaks TLS
	// Out receives progress lines and counters; nil prints nothing.
	Out io.Writer
	// TTY says Out is a terminal: the progress is then one line, "map x%
	// reduce y%", redrawn in place, instead of a line per change.
	TTY bool
	// Poll is how often Wait asks for the job's status.
	Poll time.Duration
}

// Dial connects to the JobTracker at addr (host:port), over TLS with the
// configuration's certificate when mapreduce.cluster.tls.enabled is set.
func Dial(addr string, cfg *conf.Config) (*Client, error) {
	sec, err := security.Load(cfg)
	if err != nil {
		return nil, fmt.Errorf("connecting to jobtracker %s: %w", addr, err)
	}
	var tlsCfg *tls.Config
	if sec != nil {
		tlsCfg = sec.Client(security.RoleJobTracker)
	}
	conn, err := grpc.NewClient(addr, mrpb.DialOptions(tlsCfg)...)
	if err != nil {
		return nil, fmt.Errorf("connecting to jobtracker %s: %w", addr, err)
	}
	return &Client{cfg: cfg, conn: conn, jt: mrpb.NewJobTrackerClient(conn), tls: sec != nil, Poll: 100 * time.Millisecond}, nil
}

// Close closes the connection.
func (c *Client) Close() error { return c.conn.Close() }

// Conf returns the client's configuration value for key, or "" for a key
// the configuration does not define.
func (c *Client) Conf(key string) string {
	if _, ok := conf.Lookup(key); !ok {
		return ""
	}
	return c.cfg.String(key)
}

// RPC returns the raw JobTracker client.
func (c *Client) RPC() mrpb.JobTrackerClient { return c.jt }

// Submit computes the job's splits and submits it. Job-scoped configuration
// the client was given (file, environment, -D) travels with the job.
func (c *Client) Submit(ctx context.Context, spec *mr.JobSpec) (string, error) {
	resp, err := c.submit(ctx, spec)
	if err != nil {
		return "", err
	}
	return resp.JobId, nil
}

// submit is Submit, returning the JobTracker's whole answer (the job id
// and its tracking URL).
func (c *Client) submit(ctx context.Context, spec *mr.JobSpec) (*mrpb.SubmitJobResponse, error) {
	req, _, err := c.PrepareSubmission(ctx, spec)
	if err != nil {
		return nil, err
	}
	resp, err := c.jt.SubmitJob(ctx, req)
	if err != nil {
		return nil, c.rpcError("submitting job", err)
	}
	return resp, nil
}

// PrepareSubmission is the client's side of Submit without the call: it
// qualifies the job's paths, gathers its job-scoped configuration, computes
// its input splits with the job's input format, and encodes the request,
// returning it and the number of splits. mr loadgen --input times it apart
// from the SubmitJob call.
func (c *Client) PrepareSubmission(ctx context.Context, spec *mr.JobSpec) (*mrpb.SubmitJobRequest, int, error) {
	def, err := mr.LookupJob(spec.Def)
	if err != nil {
		return nil, 0, err
	}
	s := *spec
	// Plain relative paths are taken against the client's working
	// directory, as Hadoop qualifies them: tasks run elsewhere.
	s.Inputs = make([]string, len(spec.Inputs))
	for i, in := range spec.Inputs {
		if s.Inputs[i], err = fs.Absolute(in); err != nil {
			return nil, 0, err
		}
	}
	if s.Output, err = fs.Absolute(spec.Output); err != nil {
		return nil, 0, err
	}
	s.Conf = map[string]string{}
	for _, e := range c.cfg.Entries() {
		if k, ok := conf.Lookup(e.Key); ok && k.Job && e.Source != "default" {
			s.Conf[e.Key] = e.Value
		}
	}
	for k, v := range spec.Conf {
		s.Conf[k] = v
	}
	jcfg, err := c.cfg.JobOverrides(s.Conf)
	if err != nil {
		return nil, 0, fmt.Errorf("job %s: %w", spec.Name, err)
	}
	if s.Name == "" {
		s.Name = jcfg.String("mapreduce.job.name")
	}
	if s.Pool == "" {
		s.Pool = jcfg.String("mapreduce.job.queuename")
	}
	if s.User == "" {
		// Without TLS the submitter is who the client runs as, as in
		// Hadoop without Kerberos; with TLS the JobTracker takes the
		// user from the client's certificate instead.
		if u, err := user.Current(); err == nil {
			s.User = u.Username
		}
	}
	if s.DeadlineSeconds == 0 {
		s.DeadlineSeconds = jcfg.Float("mapreduce.job.deadline.seconds")
	}
	splits, err := def.Input.Splits(mr.SplitContext{
		Ctx:          ctx,
		Inputs:       s.Inputs,
		Params:       s.Params,
		MaxSplitSize: jcfg.Int64("mapreduce.input.fileinputformat.split.maxsize"),
		MinSplitSize: jcfg.Int64("mapreduce.input.fileinputformat.split.minsize"),
	})
	if err != nil {
		return nil, 0, fmt.Errorf("computing input splits: %w", err)
	}
	specJSON, err := json.Marshal(&s)
	if err != nil {
		return nil, 0, err
	}
	splitsJSON, err := json.Marshal(splits)
	if err != nil {
		return nil, 0, err
	}
	return &mrpb.SubmitJobRequest{SpecJson: specJSON, SplitsJson: splitsJSON}, len(splits), nil
}

// rpcError turns a gRPC status into a plain error with its message, and
// a hint when the JobTracker and the client disagree about TLS.
func (c *Client) rpcError(what string, err error) error {
	if st, ok := status.FromError(err); ok {
		return &rpcError{text: fmt.Sprintf("%s: %s%s", what, st.Message(), c.tlsHint(st)), st: st}
	}
	return fmt.Errorf("%s: %w", what, err)
}

// rpcError is a failed call in words for a user, that keeps its gRPC
// status for callers (status.Code).
type rpcError struct {
	text string
	st   *status.Status
}

func (e *rpcError) Error() string { return e.text }

// GRPCStatus makes status.Code and status.FromError see the call's status.
func (e *rpcError) GRPCStatus() *status.Status { return e.st }

// tlsHint explains the connection errors of a client and a JobTracker of
// which one speaks TLS and the other does not.
func (c *Client) tlsHint(st *status.Status) string {
	if st.Code() != codes.Unavailable {
		return ""
	}
	msg := st.Message()
	switch {
	case !c.tls && strings.Contains(msg, "server preface"):
		return fmt.Sprintf(" (the JobTracker closed a plain connection: if it requires TLS, set %s=true with this user's certificate in %s, %s and %s; see docs/security.md)",
			security.KeyTLSEnabled, security.KeyTLSCA, security.KeyTLSCert, security.KeyTLSKey)
	case c.tls && strings.Contains(msg, "first record does not look like a TLS handshake"):
		return fmt.Sprintf(" (the JobTracker does not speak TLS: set %s=false, or turn TLS on for the cluster)", security.KeyTLSEnabled)
	}
	return ""
}

// Status returns a job's status.
func (c *Client) Status(ctx context.Context, jobID string) (*mrpb.JobStatus, error) {
	st, err := c.jt.GetJobStatus(ctx, &mrpb.JobStatusRequest{JobId: jobID})
	if err != nil {
		return nil, c.rpcError("job status", err)
	}
	return st, nil
}

// Trackers lists the live TaskTrackers.
func (c *Client) Trackers(ctx context.Context) ([]*mrpb.TrackerStatus, error) {
	resp, err := c.jt.ListTrackers(ctx, &mrpb.ListTrackersRequest{})
	if err != nil {
		return nil, c.rpcError("listing trackers", err)
	}
	return resp.Trackers, nil
}

// Wait polls the job until it ends, printing Hadoop-style progress
// (" map x% reduce y%") when it changes: a line per change, or with TTY
// one line redrawn in place; then the outcome and the counters. A
// JobTracker that cannot be reached (restarting) is retried for
// mapreduce.jobclient.retry.timeout.
func (c *Client) Wait(ctx context.Context, jobID string) (*mr.JobResult, error) {
	prog := &progressPrinter{w: c.Out, tty: c.TTY}
	defer prog.end()
	tick := time.NewTicker(c.Poll)
	defer tick.Stop()
	var unreachable time.Time
	for {
		st, err := c.jt.GetJobStatus(ctx, &mrpb.JobStatusRequest{JobId: jobID})
		if status.Code(err) == codes.Unavailable && ctx.Err() == nil {
			limit := c.cfg.Duration("mapreduce.jobclient.retry.timeout")
			if unreachable.IsZero() {
				unreachable = time.Now()
				prog.end()
				if c.Out != nil {
					fmt.Fprintf(c.Out, "JobTracker unreachable (%s); retrying for up to %s\n", status.Convert(err).Message(), limit)
				}
			}
			if time.Since(unreachable) < limit {
				select {
				case <-ctx.Done():
					return nil, ctx.Err()
				case <-tick.C:
				}
				continue
			}
			return nil, fmt.Errorf("job %s: the JobTracker has been unreachable for %s (mapreduce.jobclient.retry.timeout): %s",
				jobID, time.Since(unreachable).Round(time.Second), status.Convert(err).Message())
		}
		if err != nil {
			return nil, c.rpcError("job status", err)
		}
		unreachable = time.Time{}
		if st.State == StateRunning {
			prog.show(progressLine(st.MapProgress, st.ReduceProgress))
		}
		switch st.State {
		case StateSucceeded, StateFailed, StateKilled:
			if st.State == StateSucceeded {
				// The last poll may have missed the end; a map-only
				// job ends at reduce 0%, as in Hadoop.
				reduce := float32(1)
				if st.Reduces.GetTotal() == 0 {
					reduce = st.ReduceProgress
				}
				prog.show(progressLine(1, reduce))
			}
			prog.end()
			if c.Out != nil {
				PrintFinal(c.Out, st)
			}
			res := &mr.JobResult{ID: st.JobId, State: st.State, Error: st.Error, Counters: countersFromProto(st.Counters)}
			if st.State != StateSucceeded {
				return res, fmt.Errorf("job %s %s: %s", st.JobId, st.State, st.Error)
			}
			return res, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-tick.C:
		}
	}
}

// progressLine is Hadoop's client progress line.
func progressLine(mapProgress, reduceProgress float32) string {
	return fmt.Sprintf(" map %d%% reduce %d%%", Percent(mapProgress), Percent(reduceProgress))
}

// progressPrinter prints a job's progress lines when they change: each
// on its own line, or on a terminal one line redrawn in place (carriage
// return, the line, erase to its end) and ended by end before anything
// else is printed.
type progressPrinter struct {
	w     io.Writer // nil prints nothing
	tty   bool
	last  string
	drawn bool // a line is drawn and not yet ended
}

func (p *progressPrinter) show(line string) {
	if p.w == nil || line == p.last {
		return
	}
	p.last = line
	if p.tty {
		fmt.Fprintf(p.w, "\r%s\x1b[K", line)
		p.drawn = true
		return
	}
	fmt.Fprintln(p.w, line)
}

// end ends a line drawn in place.
func (p *progressPrinter) end() {
	if p.drawn {
		fmt.Fprintln(p.w)
		p.drawn = false
	}
}

// Percent is a progress as a whole percentage, rounded down (100% only
// when done) past float32's error (0.45 is 45%, not 44%).
func Percent(p float32) int { return int(math.Floor(float64(p)*100 + 1e-4)) }

// PrintFinal prints the job's outcome and counters as Hadoop's client does.
func PrintFinal(w io.Writer, st *mrpb.JobStatus) {
	switch st.State {
	case StateSucceeded:
		fmt.Fprintf(w, "Job %s completed successfully\n", st.JobId)
	default:
		fmt.Fprintf(w, "Job %s %s: %s\n", st.JobId, st.State, st.Error)
	}
	PrintCounters(w, countersFromProto(st.Counters))
}

// PrintCounters prints counters grouped, as Hadoop's client does:
// "Counters: N", then each group's display name and one line per counter
// with its display name ("Map input records=10"; see
// mr.CounterDisplayName).
func PrintCounters(w io.Writer, cs mr.CounterSet) {
	n := 0
	for _, g := range cs {
		n += len(g)
	}
	fmt.Fprintf(w, "Counters: %d\n", n)
	for _, g := range cs.Groups() {
		fmt.Fprintf(w, "\t%s\n", mr.GroupDisplayName(g))
		for _, name := range cs.Names(g) {
			fmt.Fprintf(w, "\t\t%s=%d\n", mr.CounterDisplayName(g, name), cs[g][name])
		}
	}
}

// RunJob submits a job and waits for it; it implements mr.JobClient.
func (c *Client) RunJob(ctx context.Context, spec *mr.JobSpec) (*mr.JobResult, error) {
	resp, err := c.submit(ctx, spec)
	if err != nil {
		return nil, err
	}
	if c.Out != nil {
		name := spec.Name
		if name == "" {
			name = spec.Def
		}
		if resp.TrackingUrl != "" {
			fmt.Fprintf(c.Out, "The url to track the job: %s\n", resp.TrackingUrl)
		}
		fmt.Fprintf(c.Out, "Running job: %s (%s)\n", resp.JobId, name)
	}
	return c.Wait(ctx, resp.JobId)
}

// Kill kills a job.
func (c *Client) Kill(ctx context.Context, jobID string) (*mrpb.KillJobResponse, error) {
	resp, err := c.jt.KillJob(ctx, &mrpb.KillJobRequest{JobId: jobID})
	if err != nil {
		return nil, c.rpcError("killing job", err)
	}
	return resp, nil
}

// KillTask kills a running task attempt, or with fail fails it (the
// failure counts against the task's attempts).
func (c *Client) KillTask(ctx context.Context, attemptID string, fail bool) (*mrpb.KillTaskAttemptResponse, error) {
	resp, err := c.jt.KillTaskAttempt(ctx, &mrpb.KillTaskAttemptRequest{AttemptId: attemptID, Fail: fail})
	if err != nil {
		return nil, c.rpcError("killing task attempt", err)
	}
	return resp, nil
}

// CheckpointTask preempts a running task attempt by checkpoint: its
// tracker dumps it with CRIU and the task resumes from the image, on the
// same tracker or, with migrate, on another one.
func (c *Client) CheckpointTask(ctx context.Context, attemptID string, migrate bool) (*mrpb.CheckpointTaskAttemptResponse, error) {
	resp, err := c.jt.CheckpointTaskAttempt(ctx, &mrpb.CheckpointTaskAttemptRequest{AttemptId: attemptID, Migrate: migrate})
	if err != nil {
		return nil, c.rpcError("checkpointing task attempt", err)
	}
	return resp, nil
}

// SetPriority changes a running job's priority (VERY_HIGH, HIGH, NORMAL,
// LOW or VERY_LOW).
func (c *Client) SetPriority(ctx context.Context, jobID, priority string) error {
	if _, err := c.jt.SetJobPriority(ctx, &mrpb.SetJobPriorityRequest{JobId: jobID, Priority: priority}); err != nil {
		return c.rpcError("setting the job's priority", err)
	}
	return nil
}

// Attempts lists a job's task attempts in the order they started.
func (c *Client) Attempts(ctx context.Context, jobID string) ([]*mrpb.TaskAttemptInfo, error) {
	resp, err := c.jt.ListTaskAttempts(ctx, &mrpb.TaskAttemptsRequest{JobId: jobID})
	if err != nil {
		return nil, c.rpcError("listing task attempts", err)
	}
	return resp.Attempts, nil
}

// TaskLog returns an attempt's stdout or stderr and the tracker that ran
// it.
func (c *Client) TaskLog(ctx context.Context, attemptID, filter string) (*mrpb.TaskLogResponse, error) {
	resp, err := c.jt.GetTaskLog(ctx, &mrpb.TaskLogRequest{AttemptId: attemptID, Filter: filter})
	if err != nil {
		return nil, c.rpcError("reading the task log", err)
	}
	return resp, nil
}

// List lists running jobs, or all.
func (c *Client) List(ctx context.Context, all bool) ([]*mrpb.JobStatus, error) {
	resp, err := c.jt.ListJobs(ctx, &mrpb.ListJobsRequest{All: all})
	if err != nil {
		return nil, c.rpcError("listing jobs", err)
	}
	return resp.Jobs, nil
}

// History returns a finished job's history file.
func (c *Client) History(ctx context.Context, jobID string) ([]byte, error) {
	resp, err := c.jt.GetJobHistory(ctx, &mrpb.JobHistoryRequest{JobId: jobID})
	if err != nil {
		return nil, c.rpcError("job history", err)
	}
	return resp.JsonLines, nil
}

// CountersOf converts a status's counters.
func CountersOf(st *mrpb.JobStatus) mr.CounterSet { return countersFromProto(st.Counters) }
