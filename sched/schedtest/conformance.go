package schedtest

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"gomr/partitions"
	"gomr/preempt"
	"gomr/sched"
)

// Conformance scenarios are data-driven tests of a policy host (in the
// style of etcd/raft's datadriven files): a scenario file states runtime
// facts (jobs submitted, trackers heartbeating, attempts succeeding,
// failing or speculated, trackers lost) and, after each, the transcript
// the policy driver records: every event the policy is told and every
// decision it makes, with the view and offer it answered. The same file is
// replayed through the reference host of this package (Cluster) and
// through a JobTracker driven by fake trackers over its RPC methods
// (jobtracker's conformance test); both must produce the transcript the
// file holds, so they feed the policy the same events with the same fields
// and carry its decisions out by the same rules.
//
// A file is a sequence of cases separated by blank lines. A case is one or
// more command lines, a line "----", and the expected transcript (possibly
// empty) up to the next blank line or the end of the file. Lines starting
// with # outside a case are comments. The commands:
//
//	policy NAME                       the policy (first case only)
//	set KEY=VALUE                     a policy or job configuration key
//	profile NAME map=S reduce=S       the profile the history holds for
//	                                  jobs named NAME (task seconds)
//	tracker NAME maps=M reduces=R     a tracker joins
//	at SECONDS                        the clock (seconds since the start)
//	submit JOB maps=M reduces=R [pool=P] [priority=N] [deadline=SECONDS]
//	heartbeat TRACKER                 the tracker offers its free slots
//	succeed JOB/m3.0                  an attempt succeeds
//	fail JOB/r0.1                     an attempt fails (counted)
//	speculate JOB/m3.0                a fresh speculative attempt of the
//	                                  attempt's task waits for a slot
//	lose TRACKER                      the tracker is declared lost
//	kill JOB                          a user kills the job
//
// and, for a runner that models checkpoints and splits (PreemptionRunner,
// the reference host; preemption.* keys set the planner):
//
//	criu TRACKER                      the tracker can checkpoint attempts
//	released JOB/m3.0                 its tracker counts its slot free
//	                                  before the dump ended (release-slot
//	                                  frozen or quiesced): the attempt ends
//	                                  for the policy; its task does not run
//	                                  again until it is dumped
//	dumped JOB/m3.0                   its checkpoint is on disk: the
//	                                  attempt ends, its task waits to resume
//	split-done JOB/m3.0 [pieces=N]    it stopped at a safe point: the
//	                                  attempt ends, the rest waits as a task;
//	                                  with pieces=N (a scale-up split) the
//	                                  rest is cut into N pieces, N-1 of them
//	                                  new tasks of the job (TasksAdded)
//
// submit then also takes rss=MiB (the attempts' memory) and splittable=1.
// A tracker's free slots are its slots less its live attempts and the
// attempts it has been told to kill but has not yet heard of: a kill order
// travels in the reply to the tracker's next heartbeat (a status report
// too), so a preempted attempt holds its slot until then, as on the
// runtime.

// Runner is a policy host under a conformance test. Job names in its
// arguments are the scenario's; JobName maps the ids its driver sees back
// to them.
type Runner interface {
	// Driver is the runner's policy driver, whose events and decisions make
	// the transcript.
	Driver() *sched.Driver
	// JobName is the scenario's name of the job the driver knows as id.
	JobName(id string) string
	// SetProfile makes jobs named name submitted from now on carry the
	// profile, as if the history held it.
	SetProfile(name string, p partitions.Profile) error
	AddTracker(name string, maps, reduces int) error
	Submit(at time.Time, job ScenarioJob) error
	Heartbeat(at time.Time, tracker string) error
	Succeed(at time.Time, a sched.Attempt) error
	Fail(at time.Time, a sched.Attempt) error
	Speculate(at time.Time, a sched.Attempt) error
	LoseTracker(at time.Time, tracker string) error
	KillJob(at time.Time, job string) error
}

// PreemptionRunner is a Runner that models checkpoints and splits: its
// host describes attempts to the preemption planner and orders dumps and
// splits, whose ends the scenario reports.
type PreemptionRunner interface {
	Runner
	// EnableCheckpoint lets the tracker checkpoint attempts.
	EnableCheckpoint(tracker string) error
	// SlotReleased reports that an ordered checkpoint's tracker counts the
	// slot free before the dump ended.
	SlotReleased(at time.Time, a sched.Attempt) error
	// Dumped reports an ordered checkpoint done; SplitDone an ordered
	// split done, its remainder cut into pieces (1: one remainder; more:
	// pieces-1 new tasks of the job, as a scale-up split makes).
	Dumped(at time.Time, a sched.Attempt) error
	SplitDone(at time.Time, a sched.Attempt, pieces int) error
}

// ScenarioJob is a job a scenario submits.
type ScenarioJob struct {
	Name            string
	Maps, Reduces   int
	Pool            string
	Priority        int
	DeadlineSeconds float64
	// RSSMiB is the memory of the job's attempts and Splittable whether
	// they may be split, for hosts that model checkpoints and splits.
	RSSMiB     float64
	Splittable bool
}

// NewRunner makes a runner for a policy and its configuration (the
// scenario's set lines).
type NewRunner func(t testing.TB, policy string, conf map[string]string) Runner

// scenarioCase is one case of a scenario file.
type scenarioCase struct {
	comments []string // lines before it
	line     int
	cmds     []string
	want     []string
}

func parseScenario(path string) ([]scenarioCase, []string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("reading scenario: %w", err)
	}
	var cases []scenarioCase
	var pending []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			pending = append(pending, line)
			continue
		}
		c := scenarioCase{comments: pending, line: n}
		pending = nil
		for {
			if line == "----" {
				break
			}
			c.cmds = append(c.cmds, line)
			if !sc.Scan() {
				return nil, nil, fmt.Errorf("%s:%d: case without ----", path, c.line)
			}
			n++
			line = sc.Text()
		}
		for sc.Scan() {
			n++
			if strings.TrimSpace(sc.Text()) == "" {
				pending = append(pending, sc.Text())
				break
			}
			c.want = append(c.want, sc.Text())
		}
		cases = append(cases, c)
	}
	return cases, pending, sc.Err()
}

// Replay runs every scenario file matching glob through runners made by
// newRunner and checks each case's transcript. With rewrite set the files
// are written back with the transcripts this runner produced (use it with
// the reference runner only, and read the diff).
func Replay(t *testing.T, glob string, newRunner NewRunner, rewrite bool) {
	files, err := filepath.Glob(glob)
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenario files match %s (%v)", glob, err)
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".txt"), func(t *testing.T) {
			replayFile(t, f, newRunner, rewrite)
		})
	}
}

func replayFile(t *testing.T, path string, newRunner NewRunner, rewrite bool) {
	cases, trailer, err := parseScenario(path)
	if err != nil {
		t.Fatal(err)
	}
	var (
		r       Runner
		rec     *recorder
		policy  string
		conf    = map[string]string{}
		out     bytes.Buffer
		now     = Epoch
		started bool
	)
	begin := func(where string) {
		if started {
			return
		}
		if policy == "" {
			t.Fatalf("%s: a scenario names its policy first", where)
		}
		r = newRunner(t, policy, conf)
		rec = newRecorder(r)
		started = true
	}
	for _, c := range cases {
		for _, l := range c.comments {
			out.WriteString(l + "\n")
		}
		where := fmt.Sprintf("%s:%d", path, c.line)
		for _, cmd := range c.cmds {
			if err := runCommand(cmd, &policy, conf, &now, begin, func() Runner { return r }, where); err != nil {
				t.Fatalf("%s: %s: %v", where, cmd, err)
			}
		}
		var got []string
		if rec != nil {
			got = rec.take()
		}
		for _, cmd := range c.cmds {
			out.WriteString(cmd + "\n")
		}
		out.WriteString("----\n")
		for _, l := range got {
			out.WriteString(l + "\n")
		}
		if !rewrite && strings.Join(got, "\n") != strings.Join(c.want, "\n") {
			t.Errorf("%s: %s\ngot:\n%s\nwant:\n%s", where, strings.Join(c.cmds, "; "), indent(got), indent(c.want))
		}
	}
	for _, l := range trailer {
		out.WriteString(l + "\n")
	}
	if rewrite {
		if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func indent(ls []string) string {
	if len(ls) == 0 {
		return "  (nothing)"
	}
	return "  " + strings.Join(ls, "\n  ")
}

func runCommand(cmd string, policy *string, conf map[string]string, now *time.Time, begin func(string), runner func() Runner, where string) error {
	f := strings.Fields(cmd)
	args := map[string]string{}
	for _, a := range f[1:] {
		if k, v, ok := strings.Cut(a, "="); ok {
			args[k] = v
		}
	}
	num := func(k string, def float64) (float64, error) {
		v, ok := args[k]
		if !ok {
			return def, nil
		}
		x, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return 0, fmt.Errorf("%s=%q: %w", k, v, err)
		}
		return x, nil
	}
	arg := func(i int) (string, error) {
		if len(f) <= i {
			return "", fmt.Errorf("%s needs an argument", f[0])
		}
		return f[i], nil
	}
	switch f[0] {
	case "policy":
		p, err := arg(1)
		*policy = p
		return err
	case "set":
		kv, err := arg(1)
		if err != nil {
			return err
		}
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return fmt.Errorf("set wants KEY=VALUE")
		}
		conf[k] = v
		return nil
	case "at":
		s, err := arg(1)
		if err != nil {
			return err
		}
		x, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return err
		}
		if at := At(x); at.Before(*now) {
			return fmt.Errorf("the clock goes back from %v to %v", now.Sub(Epoch), at.Sub(Epoch))
		} else {
			*now = at
		}
		return nil
	}
	begin(where)
	r := runner()
	name, err := arg(1)
	if err != nil {
		return err
	}
	switch f[0] {
	case "profile":
		m, err1 := num("map", 0)
		rd, err2 := num("reduce", 0)
		if err1 != nil || err2 != nil {
			return fmt.Errorf("%v %v", err1, err2)
		}
		md, rdd := time.Duration(m*float64(time.Second)), time.Duration(rd*float64(time.Second))
		return r.SetProfile(name, partitions.Profile{Runs: 1, MapAvg: md, MapMax: md, Shuffle1Avg: rdd / 2, Shuffle1Max: rdd / 2,
			ShuffleAvg: rdd / 2, ShuffleMax: rdd / 2, ReduceAvg: rdd / 2, ReduceMax: rdd / 2})
	case "tracker":
		m, err1 := num("maps", 0)
		rd, err2 := num("reduces", 0)
		if err1 != nil || err2 != nil {
			return fmt.Errorf("%v %v", err1, err2)
		}
		return r.AddTracker(name, int(m), int(rd))
	case "submit":
		j := ScenarioJob{Name: name, Pool: args["pool"]}
		var m, rd, p, d float64
		var errs []error
		for _, x := range []struct {
			k string
			p *float64
		}{{"maps", &m}, {"reduces", &rd}, {"priority", &p}, {"deadline", &d}, {"rss", &j.RSSMiB}} {
			v, err := num(x.k, 0)
			errs = append(errs, err)
			*x.p = v
		}
		for _, e := range errs {
			if e != nil {
				return e
			}
		}
		j.Maps, j.Reduces, j.Priority, j.DeadlineSeconds = int(m), int(rd), int(p), d
		j.Splittable = args["splittable"] == "1" || args["splittable"] == "true"
		return r.Submit(*now, j)
	case "heartbeat":
		return r.Heartbeat(*now, name)
	case "lose":
		return r.LoseTracker(*now, name)
	case "kill":
		return r.KillJob(*now, name)
	case "criu", "released", "dumped", "split-done":
		pr, ok := r.(PreemptionRunner)
		if !ok {
			return fmt.Errorf("%s: this runner does not model checkpoints and splits", f[0])
		}
		if f[0] == "criu" {
			return pr.EnableCheckpoint(name)
		}
		a, err := ParseAttempt(name)
		if err != nil {
			return err
		}
		switch f[0] {
		case "released":
			return pr.SlotReleased(*now, a)
		case "dumped":
			return pr.Dumped(*now, a)
		}
		pieces, err := num("pieces", 1)
		if err != nil {
			return err
		}
		if pieces < 1 || pieces != float64(int(pieces)) {
			return fmt.Errorf("split-done %s: pieces=%v, want a whole number >= 1", name, pieces)
		}
		return pr.SplitDone(*now, a, int(pieces))
	case "succeed", "fail", "speculate":
		a, err := ParseAttempt(name)
		if err != nil {
			return err
		}
		switch f[0] {
		case "succeed":
			return r.Succeed(*now, a)
		case "fail":
			return r.Fail(*now, a)
		default:
			return r.Speculate(*now, a)
		}
	}
	return fmt.Errorf("unknown command %q", f[0])
}

// ParseAttempt reads "JOB/m3.0" (attempt 0 of map 3 of JOB).
func ParseAttempt(s string) (sched.Attempt, error) {
	job, rest, ok := strings.Cut(s, "/")
	if !ok || len(rest) < 4 || (rest[0] != 'm' && rest[0] != 'r') {
		return sched.Attempt{}, fmt.Errorf("attempt %q: want JOB/m3.0 or JOB/r0.1", s)
	}
	task, att, ok := strings.Cut(rest[1:], ".")
	ti, err1 := strconv.Atoi(task)
	ai, err2 := strconv.Atoi(att)
	if !ok || err1 != nil || err2 != nil {
		return sched.Attempt{}, fmt.Errorf("attempt %q: want JOB/m3.0 or JOB/r0.1", s)
	}
	typ := partitions.Map
	if rest[0] == 'r' {
		typ = partitions.Reduce
	}
	return sched.Attempt{Job: job, Type: typ, Task: ti, Attempt: ai}, nil
}

// recorder writes a runner's transcript from its driver's hooks.
//
// Lines are written when the transcript is taken, not when the driver
// reports, so that a job is named as the scenario names it even in the
// event its submission makes (a JobTracker numbers the job first).
type recorder struct {
	r     Runner
	lines []func() string
}

func newRecorder(r Runner) *recorder {
	rec := &recorder{r: r}
	r.Driver().OnEvent(rec.event)
	r.Driver().OnDecision(rec.decision)
	r.Driver().OnPreempt(rec.preempt)
	return rec
}

func (rec *recorder) take() []string {
	out := make([]string, len(rec.lines))
	for i, f := range rec.lines {
		out[i] = f()
	}
	rec.lines = nil
	return out
}

func (rec *recorder) attempt(ev partitions.Event) string {
	return sched.Attempt{Job: rec.r.JobName(ev.JobID), Type: ev.Type, Task: ev.Task, Attempt: ev.Attempt}.String()
}

func (rec *recorder) event(ev partitions.Event) {
	if ev.Job != nil {
		j := *ev.Job
		ev.Job = &j
	}
	rec.lines = append(rec.lines, func() string { return rec.eventLine(ev) })
}

func (rec *recorder) eventLine(ev partitions.Event) string {
	var s string
	switch ev.Kind {
	case partitions.JobSubmitted:
		j := ev.Job
		s = fmt.Sprintf("submitted %s maps=%d reduces=%d pool=%s", rec.r.JobName(ev.JobID), j.Maps, j.Reduces, j.Pool)
		if j.Priority != 0 {
			s += fmt.Sprintf(" priority=%d", j.Priority)
		}
		if !j.Deadline.IsZero() {
			s += fmt.Sprintf(" deadline=%gs", j.Deadline.Sub(j.Submitted).Seconds())
		}
		if j.FinishedMaps+j.FinishedReduces > 0 {
			s += fmt.Sprintf(" finished=%d/%d", j.FinishedMaps, j.FinishedReduces)
		}
		if j.Profile != nil {
			s += " profile"
		}
	case partitions.TaskStarted:
		s = "started " + rec.attempt(ev)
	case partitions.TaskFinished:
		s = fmt.Sprintf("succeeded %s ran=%gs", rec.attempt(ev), ev.Duration.Seconds())
	case partitions.TaskFailed:
		s = fmt.Sprintf("ended %s ran=%gs", rec.attempt(ev), ev.Duration.Seconds())
		// A kill shows as the decision's preempt list; other mechanisms
		// end their victims later, so their ends say so.
		if ev.PreemptedBy != "" && ev.PreemptedBy != preempt.MechKill.String() {
			s += " by=" + ev.PreemptedBy
		}
	case partitions.MapOutputLost:
		s = fmt.Sprintf("map-output-lost %s/m%d", rec.r.JobName(ev.JobID), ev.Task)
	case partitions.JobFinished:
		s = "finished " + rec.r.JobName(ev.JobID)
	case partitions.TasksAdded:
		s = fmt.Sprintf("tasks-added %s %ss=+%d", rec.r.JobName(ev.JobID), ev.Type, ev.Count)
	default:
		s = fmt.Sprintf("event %d of %s", ev.Kind, rec.r.JobName(ev.JobID))
	}
	return s
}

// preempt writes "checkpoint JOB/m3.0 release=855ms waste=1.709s" for a victim
// the driver had preempted by another mechanism than a kill (a kill shows
// in the decision and its end), and "kill JOB/m3.0 (checkpoint failed: ...)"
// for a fallback.
func (rec *recorder) preempt(act sched.PreemptAction) {
	if act.Mech == preempt.MechKill && act.Err == nil {
		return
	}
	rec.lines = append(rec.lines, func() string {
		a := act.Attempt
		a.Job = rec.r.JobName(a.Job)
		if act.Err != nil {
			return fmt.Sprintf("%s %s (planned %s: %v)", act.Mech, a, act.Planned, act.Err)
		}
		return fmt.Sprintf("%s %s release=%v waste=%v", act.Mech, a, act.Cost.Release.Round(time.Millisecond), act.Cost.Waste.Round(time.Millisecond))
	})
}

// decision writes "offer T free=M/R slots=M/R trackers=N | JOB p1/0 r2/0
// f0/0 ready ... -> JOB:m JOB:r! ; preempt JOB:m*2" (p pending, r running, f
// finished maps/reduces; ! a spare assignment, @Q its queue when not 0).
func (rec *recorder) decision(v *partitions.ClusterView, o partitions.SlotOffer, d partitions.Decision, err error) {
	vc := *v
	vc.Jobs = append([]partitions.JobView(nil), v.Jobs...)
	dc := partitions.Decision{Assign: append([]partitions.Assignment(nil), d.Assign...), Preempt: append([]partitions.Preemption(nil), d.Preempt...)}
	rec.lines = append(rec.lines, func() string { return rec.decisionLine(&vc, o, dc, err) })
}

func (rec *recorder) decisionLine(v *partitions.ClusterView, o partitions.SlotOffer, d partitions.Decision, err error) string {
	var b strings.Builder
	fmt.Fprintf(&b, "offer %s free=%d/%d slots=%d/%d trackers=%d |", o.Tracker, o.FreeMaps, o.FreeReduces, v.MapSlots, v.ReduceSlots, v.Trackers)
	for _, j := range v.Jobs {
		fmt.Fprintf(&b, " %s p%d/%d r%d/%d f%d/%d", rec.r.JobName(j.ID), j.PendingMaps, j.PendingReduces, j.RunningMaps, j.RunningReduces, j.FinishedMaps, j.FinishedReduces)
		if j.ReducesReady {
			b.WriteString(" ready")
		}
		b.WriteString(";")
	}
	b.WriteString(" ->")
	for _, a := range d.Assign {
		fmt.Fprintf(&b, " %s:%s", rec.r.JobName(a.JobID), a.Type.String()[:1])
		if a.Spare {
			b.WriteString("!")
		}
		if a.Queue != 0 {
			fmt.Fprintf(&b, "@%d", a.Queue)
		}
	}
	if len(d.Preempt) > 0 {
		ps := make([]string, 0, len(d.Preempt))
		for _, p := range d.Preempt {
			ps = append(ps, fmt.Sprintf("%s:%s*%d", rec.r.JobName(p.JobID), p.Type.String()[:1], p.Count))
		}
		sort.Strings(ps)
		b.WriteString(" ; preempt " + strings.Join(ps, " "))
	}
	if err != nil {
		if de, ok := err.(*sched.DecisionError); ok {
			fmt.Fprintf(&b, " ; refused: %s", de.Problem)
		} else {
			fmt.Fprintf(&b, " ; refused: %v", err)
		}
	}
	return b.String()
}
