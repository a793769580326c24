package schedtest

import (
	"fmt"
	"testing"
	"time"

	"gomr/partitions"
	"gomr/preempt"
	"gomr/sched"
)

// Cluster is the reference policy host of the conformance scenarios: a
// small, literal model of what the runtime does with each fact, driven
// through a sched.Driver. It follows the JobTracker's rules where the
// policy contract leaves the host a choice: a tracker runs a pending task
// of the assigned job (one that has not failed there while another
// tracker could take it, then the lowest index), else the job's
// speculative attempt waiting for a slot (a fresh one never beside its
// source); a job's reduces are ready once
// mapreduce.job.reduce.slowstart.completedmaps of its maps finished; a
// task fails the job after mapreduce.map.maxattempts (or .reduce.)
// counted failures; a lost tracker's live attempts end, and its finished
// maps lose their output while a reduce of their job still needs it.
//
// It models preemption by checkpoint and split too (PreemptionRunner):
// with preemption.* keys set, the driver's planner sees each attempt with
// its tracker, its job's memory (rss), its run time since launch and
// whether its tracker can checkpoint (criu) and its job be split; an
// ordered dump or split keeps the attempt's slot until the scenario
// reports it done (dumped, split-done), when the attempt ends and its task
// waits again (to resume from its image, or as the remainder).
type Cluster struct {
	t        testing.TB
	d        *sched.Driver
	conf     map[string]string
	trackers []*modelTracker
	jobs     []*modelJob
	profiles map[string]partitions.Profile
}

type modelTracker struct {
	name       string
	slots      [2]int
	live       map[sched.Attempt]bool
	dying      [2]int // attempts told to die, not yet heard by the tracker
	killOrders []sched.Attempt
	criu       bool
}

type modelJob struct {
	spec     ScenarioJob
	submit   time.Time
	tasks    [2][]*modelTask
	finished [2]int
	done     bool
}

type modelTask struct {
	typ      partitions.TaskType
	index    int
	attempts []*modelAttempt
	next     int
	failures int
	failedOn map[string]bool
	done     bool
	// successful is the attempt that made it succeed.
	successful *modelAttempt
	// spec is the source of a speculative attempt waiting for a slot.
	spec *modelAttempt
}

type modelAttempt struct {
	key     sched.Attempt
	tracker string
	start   time.Time
	live    bool
	// ordered is the mechanism the attempt was ordered to give its slot
	// back by ("checkpoint", "split"), until it has.
	ordered string
	// released: being checkpointed, its slot is free before its dump
	// ended (preemption.checkpoint.release-slot frozen or quiesced); it
	// stays live, its task not yet restorable, until dumped.
	released bool
}

// NewCluster builds the reference host for a policy (its keys in conf, the
// rest at their defaults).
func NewCluster(t testing.TB, policy string, conf map[string]string) Runner {
	t.Helper()
	// The policy gets its own keys; the job keys (slow start, attempt
	// limits) are the host's.
	pc := map[string]string{}
	for _, k := range partitions.Keys() {
		if v, ok := conf[k.Name]; ok {
			pc[k.Name] = v
		}
	}
	cfg, err := partitions.NewMapConfig(pc)
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	p, ok := TestPolicy(policy)
	if !ok {
		p, err = partitions.New(policy, cfg)
		if err != nil {
			t.Fatalf("policy %s: %v", policy, err)
		}
	}
	pcfg, err := preempt.FromConfig(mapGetter(conf))
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	d := sched.New(p)
	d.SetPlanner(preempt.New(pcfg))
	return &Cluster{t: t, d: d, conf: conf, profiles: map[string]partitions.Profile{}}
}

type mapGetter map[string]string

func (m mapGetter) String(k string) string { return m[k] }

// Driver implements Runner.
func (c *Cluster) Driver() *sched.Driver { return c.d }

// JobName implements Runner: the reference uses the scenario's names.
func (c *Cluster) JobName(id string) string { return id }

func (c *Cluster) num(key string, def float64) float64 {
	if v, ok := c.conf[key]; ok {
		var x float64
		if _, err := fmt.Sscan(v, &x); err == nil {
			return x
		}
	}
	return def
}

func (c *Cluster) tracker(name string) *modelTracker {
	for _, t := range c.trackers {
		if t.name == name {
			return t
		}
	}
	return nil
}

func (c *Cluster) job(name string) *modelJob {
	for _, j := range c.jobs {
		if j.spec.Name == name {
			return j
		}
	}
	return nil
}

// SetProfile implements Runner.
func (c *Cluster) SetProfile(name string, p partitions.Profile) error {
	c.profiles[name] = p
	return nil
}

// AddTracker implements Runner.
func (c *Cluster) AddTracker(name string, maps, reduces int) error {
	if c.tracker(name) != nil {
		return fmt.Errorf("tracker %s already joined", name)
	}
	c.trackers = append(c.trackers, &modelTracker{name: name, slots: [2]int{maps, reduces}, live: map[sched.Attempt]bool{}})
	return nil
}

// Submit implements Runner.
func (c *Cluster) Submit(at time.Time, s ScenarioJob) error {
	if c.job(s.Name) != nil {
		return fmt.Errorf("job %s already submitted", s.Name)
	}
	j := &modelJob{spec: s, submit: at}
	for typ, n := range []int{s.Maps, s.Reduces} {
		for i := 0; i < n; i++ {
			j.tasks[typ] = append(j.tasks[typ], &modelTask{typ: partitions.TaskType(typ), index: i, failedOn: map[string]bool{}})
		}
	}
	c.jobs = append(c.jobs, j)
	c.d.Submitted(at, c.view(j, nil))
	if s.Maps+s.Reduces == 0 {
		c.finish(at, j)
	}
	return nil
}

func (t *modelTask) running() []*modelAttempt {
	var out []*modelAttempt
	for _, a := range t.attempts {
		if a.live {
			out = append(out, a)
		}
	}
	return out
}

func (j *modelJob) reducesReady(slowstart float64) bool {
	return len(j.tasks[partitions.Map]) == 0 || float64(j.finished[partitions.Map]) >= slowstart*float64(len(j.tasks[partitions.Map]))
}

// waitsFor tells whether the task's speculative attempt may start on t
// (on any tracker when t is nil).
func (tk *modelTask) waitsFor(t *modelTracker) bool {
	if tk.spec == nil {
		return false
	}
	return t == nil || (!tk.failedOn[t.name] && tk.spec.tracker != t.name)
}

func (c *Cluster) view(j *modelJob, offer *modelTracker) partitions.JobView {
	pool := j.spec.Pool
	if pool == "" {
		pool = "default"
	}
	v := partitions.JobView{ID: j.spec.Name, Name: j.spec.Name, Pool: pool, Priority: j.spec.Priority, Submitted: j.submit,
		Maps: len(j.tasks[partitions.Map]), Reduces: len(j.tasks[partitions.Reduce]), InputBytes: int64(j.spec.Maps),
		FinishedMaps: j.finished[partitions.Map], FinishedReduces: j.finished[partitions.Reduce],
		ReducesReady: j.reducesReady(c.num("mapreduce.job.reduce.slowstart.completedmaps", 0.05))}
	if p, ok := c.profiles[j.spec.Name]; ok {
		v.Profile = &p
	}
	if j.spec.DeadlineSeconds > 0 {
		v.Deadline = j.submit.Add(time.Duration(j.spec.DeadlineSeconds * float64(time.Second)))
	}
	for typ, ts := range j.tasks {
		pend, run := &v.PendingMaps, &v.RunningMaps
		if typ == int(partitions.Reduce) {
			pend, run = &v.PendingReduces, &v.RunningReduces
		}
		for _, tk := range ts {
			r := len(tk.running())
			switch {
			case tk.done:
			case r == 0:
				*pend++
			default:
				*run += r
				if tk.waitsFor(offer) {
					*pend++
				}
			}
		}
	}
	return v
}

// Heartbeat implements Runner: the tracker offers its free slots; kill
// orders for it go out in the reply.
func (c *Cluster) Heartbeat(at time.Time, name string) error {
	t := c.tracker(name)
	if t == nil {
		return fmt.Errorf("no tracker %s", name)
	}
	var free [2]int
	for typ := range free {
		free[typ] = t.slots[typ] - t.dying[typ]
	}
	for a := range t.live {
		free[a.Type]--
	}
	cv := &partitions.ClusterView{Now: at}
	for _, tr := range c.trackers {
		cv.Trackers++
		cv.MapSlots += tr.slots[partitions.Map]
		cv.ReduceSlots += tr.slots[partitions.Reduce]
	}
	for _, j := range c.jobs {
		if !j.done {
			cv.Jobs = append(cv.Jobs, c.view(j, t))
		}
	}
	if len(cv.Jobs) > 0 {
		offer := partitions.SlotOffer{Tracker: t.name, Host: "h-" + t.name, FreeMaps: free[partitions.Map], FreeReduces: free[partitions.Reduce]}
		if _, err := c.d.Offer(cv, offer, clusterHost{c, t, at}); err != nil {
			if _, ok := err.(*sched.DecisionError); !ok {
				return err
			}
		}
	}
	t.dying = [2]int{}
	return nil
}

type clusterHost struct {
	c  *Cluster
	t  *modelTracker
	at time.Time
}

func (h clusterHost) Launch(_ partitions.SlotOffer, as partitions.Assignment) (bool, error) {
	c := h.c
	j := c.job(as.JobID)
	if j == nil || j.done {
		return false, nil
	}
	if tk := c.pick(j, as.Type, h.t); tk != nil {
		c.start(h.at, j, tk, h.t)
		return true, nil
	}
	for _, tk := range j.tasks[as.Type] {
		if !tk.done && len(tk.running()) > 0 && tk.waitsFor(h.t) {
			tk.spec = nil
			c.start(h.at, j, tk, h.t)
			return true, nil
		}
	}
	return false, nil
}

// Describe implements sched.Describer.
func (h clusterHost) Describe(k sched.Attempt) preempt.Candidate {
	a := h.c.attempt(k)
	if a == nil {
		return preempt.Candidate{Remaining: -1}
	}
	j := h.c.job(k.Job)
	t := h.c.tracker(a.tracker)
	return preempt.Candidate{Node: a.tracker, RSSBytes: int64(j.spec.RSSMiB * preempt.MiB), Progressed: h.at.Sub(a.start), Remaining: -1,
		Splittable: j.spec.Splittable, CanCheckpoint: t != nil && t.criu}
}

// Checkpoint implements sched.Checkpointer: the dump is ordered; the
// scenario reports it done (dumped).
func (h clusterHost) Checkpoint(k sched.Attempt, incremental bool) error {
	return h.order(k, "checkpoint")
}

// Split implements sched.Splitter: the split is ordered; the scenario
// reports it done (split-done).
func (h clusterHost) Split(k sched.Attempt) error { return h.order(k, "split") }

func (h clusterHost) order(k sched.Attempt, what string) error {
	a := h.c.attempt(k)
	if a == nil || !a.live {
		return fmt.Errorf("attempt %s is not running", k)
	}
	if a.ordered != "" {
		return fmt.Errorf("attempt %s is already ordered to %s", k, a.ordered)
	}
	a.ordered = what
	return nil
}

// EnableCheckpoint implements PreemptionRunner.
func (c *Cluster) EnableCheckpoint(name string) error {
	t := c.tracker(name)
	if t == nil {
		return fmt.Errorf("no tracker %s", name)
	}
	t.criu = true
	return nil
}

// Dumped implements PreemptionRunner. For an attempt whose slot was
// released before (SlotReleased), the dump leaves its tracker's queue
// and the task waits to resume from its image.
func (c *Cluster) Dumped(at time.Time, k sched.Attempt) error {
	if a := c.attempt(k); a != nil && a.live && a.released {
		return c.report(k, func(a *modelAttempt) { c.end(at, a, false, false) })
	}
	return c.released(at, k, "checkpoint")
}

// SlotReleased implements PreemptionRunner: the tracker of an attempt
// being checkpointed counts its slot free before the dump ended, as the
// JobTracker takes a tracker's slot_released report.
func (c *Cluster) SlotReleased(at time.Time, k sched.Attempt) error {
	a := c.attempt(k)
	if a == nil || !a.live || a.released {
		return fmt.Errorf("attempt %s is not running, or its slot is released already", k)
	}
	if a.ordered != "checkpoint" {
		return fmt.Errorf("attempt %s was not ordered to checkpoint", k)
	}
	return c.report(k, func(a *modelAttempt) {
		a.released = true
		delete(c.tracker(a.tracker).live, k)
		c.d.CheckpointSlotReleased(at, k, at.Sub(a.start))
	})
}

// SplitDone implements PreemptionRunner: the attempt ends, and with
// pieces > 1 its job gets pieces-1 new pending tasks of its type (a
// scale-up split's pieces), which the driver tells the policy of
// (TasksAdded) before the attempt's end, as the JobTracker does. A split
// into pieces need not have been ordered by the planner: scale-up splits
// are the host's own.
func (c *Cluster) SplitDone(at time.Time, k sched.Attempt, pieces int) error {
	if pieces > 1 {
		// The host's own order (a scale-up split), unless the planner's.
		a := c.attempt(k)
		if a == nil || !a.live || (a.ordered != "" && a.ordered != "split") {
			return fmt.Errorf("attempt %s is not running, or was ordered to %s", k, a.ordered)
		}
		a.ordered = "split"
		j := c.job(k.Job)
		for range pieces - 1 {
			ts := j.tasks[k.Type]
			j.tasks[k.Type] = append(ts, &modelTask{typ: k.Type, index: len(ts), failedOn: map[string]bool{}})
		}
		c.d.TasksAdded(at, k.Job, k.Type, pieces-1)
	}
	return c.released(at, k, "split")
}

// released is the tracker's report that an ordered checkpoint or split is
// done: the attempt ends, uncounted, and its task waits again.
func (c *Cluster) released(at time.Time, k sched.Attempt, what string) error {
	a := c.attempt(k)
	if a == nil || !a.live {
		return fmt.Errorf("attempt %s is not running", k)
	}
	if a.ordered != what {
		return fmt.Errorf("attempt %s was not ordered to %s", k, what)
	}
	return c.report(k, func(a *modelAttempt) { c.end(at, a, false, false) })
}

func (h clusterHost) Kill(k sched.Attempt) error {
	a := h.c.attempt(k)
	if a == nil || !a.live {
		return fmt.Errorf("attempt %s is not running", k)
	}
	h.c.end(h.at, a, false, true)
	return nil
}

// pick is the JobTracker's choice of a pending task for a tracker.
func (c *Cluster) pick(j *modelJob, typ partitions.TaskType, t *modelTracker) *modelTask {
	var best *modelTask
	bestScore := 0
	for _, tk := range j.tasks[typ] {
		if tk.done || len(tk.running()) > 0 {
			continue
		}
		score := 0
		if tk.failedOn[t.name] {
			if c.otherTrackerCanRun(tk) {
				continue
			}
			score = 1
		}
		if best == nil || score < bestScore {
			best, bestScore = tk, score
		}
	}
	return best
}

func (c *Cluster) otherTrackerCanRun(tk *modelTask) bool {
	for _, tr := range c.trackers {
		if tr.slots[tk.typ] > 0 && !tk.failedOn[tr.name] {
			return true
		}
	}
	return false
}

func (c *Cluster) start(at time.Time, j *modelJob, tk *modelTask, t *modelTracker) {
	a := &modelAttempt{key: sched.Attempt{Job: j.spec.Name, Type: tk.typ, Task: tk.index, Attempt: tk.next}, tracker: t.name, start: at, live: true}
	tk.next++
	tk.attempts = append(tk.attempts, a)
	t.live[a.key] = true
	c.d.Started(at, a.key)
}

func (c *Cluster) attempt(k sched.Attempt) *modelAttempt {
	j := c.job(k.Job)
	if j == nil || k.Task < 0 || k.Task >= len(j.tasks[k.Type]) {
		return nil
	}
	for _, a := range j.tasks[k.Type][k.Task].attempts {
		if a.key == k {
			return a
		}
	}
	return nil
}

// end ends a live attempt without success: failed (counted) or killed.
// A kill order goes to its tracker when ordered (the tracker does not
// know yet); a failure is the tracker's own report.
func (c *Cluster) end(at time.Time, a *modelAttempt, counted, ordered bool) {
	j := c.job(a.key.Job)
	tk := j.tasks[a.key.Type][a.key.Task]
	a.live = false
	if t := c.tracker(a.tracker); t != nil && t.live[a.key] {
		delete(t.live, a.key)
		if ordered {
			t.dying[a.key.Type]++
		}
	}
	if tk.spec == a {
		tk.spec = nil // its speculation dies with it
	}
	if counted {
		tk.failures++
		tk.failedOn[a.tracker] = true
	}
	if a.released {
		// Its slot was free already (the driver ended it then); its dump
		// leaves the tracker's queue, kept or not.
		c.d.DumpEnded(at, a.key)
	}
	c.d.Ended(at, a.key, at.Sub(a.start))
	if j.done || tk.done || len(tk.running()) > 0 {
		return
	}
	tk.spec = nil
	limit := c.num("mapreduce.map.maxattempts", 4)
	if tk.typ == partitions.Reduce {
		limit = c.num("mapreduce.reduce.maxattempts", 4)
	}
	if float64(tk.failures) >= limit {
		c.finish(at, j)
	}
}

// finish ends a job: its live attempts are killed, then the policy is
// told.
func (c *Cluster) finish(at time.Time, j *modelJob) {
	for _, ts := range j.tasks {
		for _, tk := range ts {
			for _, a := range tk.running() {
				c.end(at, a, false, true)
			}
		}
	}
	j.done = true
	c.d.Finished(at, j.spec.Name)
}

// report is a status heartbeat of the attempt's tracker: the facts it
// carries are applied by apply, then the kill orders for the tracker go
// out in the reply.
func (c *Cluster) report(k sched.Attempt, apply func(a *modelAttempt)) error {
	a := c.attempt(k)
	if a == nil || !a.live {
		return fmt.Errorf("attempt %s is not running", k)
	}
	t := c.tracker(a.tracker)
	apply(a)
	if t != nil {
		t.dying = [2]int{}
	}
	return nil
}

// Succeed implements Runner.
func (c *Cluster) Succeed(at time.Time, k sched.Attempt) error {
	return c.report(k, func(a *modelAttempt) {
		j := c.job(k.Job)
		tk := j.tasks[k.Type][k.Task]
		a.live = false
		delete(c.tracker(a.tracker).live, k)
		tk.done, tk.successful, tk.spec = true, a, nil
		j.finished[k.Type]++
		c.d.Succeeded(at, k, at.Sub(a.start))
		for _, o := range tk.running() {
			c.end(at, o, false, true)
		}
		if j.finished[partitions.Map] == len(j.tasks[partitions.Map]) && j.finished[partitions.Reduce] == len(j.tasks[partitions.Reduce]) {
			c.finish(at, j)
		}
	})
}

// Fail implements Runner.
func (c *Cluster) Fail(at time.Time, k sched.Attempt) error {
	return c.report(k, func(a *modelAttempt) { c.end(at, a, true, false) })
}

// Speculate implements Runner.
func (c *Cluster) Speculate(at time.Time, k sched.Attempt) error {
	a := c.attempt(k)
	if a == nil || !a.live {
		return fmt.Errorf("attempt %s is not running", k)
	}
	c.job(k.Job).tasks[k.Type][k.Task].spec = a
	return nil
}

// LoseTracker implements Runner.
func (c *Cluster) LoseTracker(at time.Time, name string) error {
	t := c.tracker(name)
	if t == nil {
		return fmt.Errorf("no tracker %s", name)
	}
	for i, tr := range c.trackers {
		if tr == t {
			c.trackers = append(c.trackers[:i:i], c.trackers[i+1:]...)
			break
		}
	}
	for _, j := range c.jobs {
		if j.done {
			continue
		}
		needMaps := j.finished[partitions.Reduce] < len(j.tasks[partitions.Reduce])
		for _, m := range j.tasks[partitions.Map] {
			for _, a := range m.attempts {
				if a.tracker != name {
					continue
				}
				if a.live {
					c.end(at, a, false, false)
				} else if needMaps && m.done && m.successful == a {
					m.done, m.successful = false, nil
					j.finished[partitions.Map]--
					c.d.MapOutputLost(at, j.spec.Name, m.index)
				}
			}
		}
		for _, r := range j.tasks[partitions.Reduce] {
			for _, a := range r.running() {
				if a.tracker == name {
					c.end(at, a, false, false)
				}
			}
		}
	}
	return nil
}

// KillJob implements Runner.
func (c *Cluster) KillJob(at time.Time, name string) error {
	j := c.job(name)
	if j == nil || j.done {
		return fmt.Errorf("job %s is not running", name)
	}
	c.finish(at, j)
	return nil
}
