// Package schedtest drives a scheduling policy through the policy driver
// (package sched) on a hand-made cluster of one tracker, without a
// JobTracker or a simulator: a test submits jobs, starts, finishes and kills
// tasks, and offers slots, and reads the decisions in a compact form. It is
// how this repository tests its policies, and how a user writing a policy
// can test one.
//
//	h := schedtest.New(t, "fifo", nil, 4, 2)
//	h.Submit(partitions.JobView{ID: "A", Maps: 10})
//	if got := h.Offer(4, 0); got != "A:m A:m A:m A:m" { ... }
package schedtest

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"gomr/partitions"
	"gomr/sched"
)

// Epoch is the harness clock's zero.
var Epoch = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// At is the instant s seconds after Epoch.
func At(s float64) time.Time { return Epoch.Add(Secs(s)) }

// Secs is s seconds.
func Secs(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// Harness is one policy on one tracker of MapSlots and ReduceSlots, driven
// through a sched.Driver.
type Harness struct {
	t testing.TB
	// Now is the harness clock; Advance moves it.
	Now         time.Time
	MapSlots    int
	ReduceSlots int

	d    *sched.Driver
	jobs []*partitions.JobView
	// running lists each job's started attempts per type, oldest first.
	running map[string]map[partitions.TaskType][]sched.Attempt
	next    map[string]map[partitions.TaskType]int
	started map[sched.Attempt]time.Time
}

// New builds the policy called name from conf (policy keys, the rest at
// their defaults) on a tracker with the given slots.
func New(t testing.TB, name string, conf map[string]string, mapSlots, reduceSlots int) *Harness {
	t.Helper()
	cfg, err := partitions.NewMapConfig(conf)
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	p, err := partitions.New(name, cfg)
	if err != nil {
		t.Fatalf("New(%s): %v", name, err)
	}
	return &Harness{t: t, d: sched.New(p), Now: Epoch, MapSlots: mapSlots, ReduceSlots: reduceSlots,
		running: map[string]map[partitions.TaskType][]sched.Attempt{},
		next:    map[string]map[partitions.TaskType]int{},
		started: map[sched.Attempt]time.Time{}}
}

// Policy returns the policy under test.
func (h *Harness) Policy() partitions.Policy { return h.d.Policy() }

// Driver returns the driver.
func (h *Harness) Driver() *sched.Driver { return h.d }

// Job returns the view of a running job; the test may change it (say,
// ReducesReady) between offers.
func (h *Harness) Job(id string) *partitions.JobView {
	h.t.Helper()
	for _, j := range h.jobs {
		if j.ID == id {
			return j
		}
	}
	h.t.Fatalf("no job %s", id)
	return nil
}

// Submit adds a job with all its tasks pending; its reduces are ready
// unless the test says otherwise through Job.
func (h *Harness) Submit(v partitions.JobView) {
	if v.Submitted.IsZero() {
		v.Submitted = h.Now
	}
	v.PendingMaps, v.PendingReduces = v.Maps, v.Reduces
	v.ReducesReady = true
	jv := v
	h.jobs = append(h.jobs, &jv)
	h.running[v.ID] = map[partitions.TaskType][]sched.Attempt{}
	h.next[v.ID] = map[partitions.TaskType]int{}
	h.d.Submitted(h.Now, jv)
}

func (h *Harness) view() *partitions.ClusterView {
	v := &partitions.ClusterView{Now: h.Now, Trackers: 1, MapSlots: h.MapSlots, ReduceSlots: h.ReduceSlots}
	for _, j := range h.jobs {
		v.Jobs = append(v.Jobs, *j)
	}
	return v
}

// Start launches one pending task of the job, as if assigned, and returns
// its index. Every start takes a new task index (attempt 0), so a task
// started again after Fail has a new index too.
func (h *Harness) Start(id string, t partitions.TaskType) int {
	h.t.Helper()
	j := h.Job(id)
	if t == partitions.Map {
		if j.PendingMaps <= 0 {
			h.t.Fatalf("start map of %s with none pending", id)
		}
		j.PendingMaps--
		j.RunningMaps++
	} else {
		if j.PendingReduces <= 0 {
			h.t.Fatalf("start reduce of %s with none pending", id)
		}
		j.PendingReduces--
		j.RunningReduces++
	}
	task := h.next[id][t]
	h.next[id][t]++
	a := sched.Attempt{Job: id, Type: t, Task: task}
	h.running[id][t] = append(h.running[id][t], a)
	h.started[a] = h.Now
	h.d.Started(h.Now, a)
	return task
}

// Finish completes the oldest running task of the type, which ran dur.
func (h *Harness) Finish(id string, t partitions.TaskType, dur time.Duration) {
	h.t.Helper()
	j := h.Job(id)
	rs := h.running[id][t]
	if len(rs) == 0 {
		h.t.Fatalf("finish %s %v: nothing running", id, t)
	}
	a := rs[0]
	h.running[id][t] = rs[1:]
	delete(h.started, a)
	if t == partitions.Map {
		j.RunningMaps--
		j.FinishedMaps++
	} else {
		j.RunningReduces--
		j.FinishedReduces++
	}
	h.d.Succeeded(h.Now, a, dur)
}

// Fail ends the newest n running tasks of the type without success; their
// tasks are pending again.
func (h *Harness) Fail(id string, t partitions.TaskType, n int) {
	h.t.Helper()
	for ; n > 0; n-- {
		rs := h.running[id][t]
		if len(rs) == 0 {
			h.t.Fatalf("fail %s %v: nothing running", id, t)
		}
		h.endAttempt(rs[len(rs)-1])
	}
}

// endAttempt takes a running attempt off and makes its task pending again.
func (h *Harness) endAttempt(a sched.Attempt) {
	j := h.Job(a.Job)
	rs := h.running[a.Job][a.Type]
	for i, x := range rs {
		if x == a {
			h.running[a.Job][a.Type] = append(rs[:i:i], rs[i+1:]...)
			break
		}
	}
	if a.Type == partitions.Map {
		j.RunningMaps--
		j.PendingMaps++
	} else {
		j.RunningReduces--
		j.PendingReduces++
	}
	ran := h.Now.Sub(h.started[a])
	delete(h.started, a)
	h.d.Ended(h.Now, a, ran)
}

// End finishes a job.
func (h *Harness) End(id string) {
	for i, j := range h.jobs {
		if j.ID == id {
			h.jobs = append(h.jobs[:i], h.jobs[i+1:]...)
			break
		}
	}
	delete(h.running, id)
	h.d.Finished(h.Now, id)
}

// Advance moves the clock s seconds on.
func (h *Harness) Advance(s float64) { h.Now = h.Now.Add(Secs(s)) }

// Offer offers the tracker's free slots, carries the decision out through
// the driver and returns it in a compact form: "kill:J:map:N" for each
// preemption, then "A:m B:r* ..." for the assignments (an asterisk marks a
// spare task). A decision the driver refuses fails the test.
func (h *Harness) Offer(freeMaps, freeReduces int) string {
	h.t.Helper()
	got, err := h.TryOffer(freeMaps, freeReduces)
	if err != nil {
		h.t.Fatalf("offer of %d maps and %d reduces: %v", freeMaps, freeReduces, err)
	}
	return got
}

// TryOffer is Offer that returns a refused decision's error (a
// *sched.DecisionError) instead of failing the test.
func (h *Harness) TryOffer(freeMaps, freeReduces int) (string, error) {
	host := &host{h: h}
	_, err := h.d.Offer(h.view(), partitions.SlotOffer{Tracker: "t1", Host: "h1", FreeMaps: freeMaps, FreeReduces: freeReduces}, host)
	host.flushKills()
	var de *sched.DecisionError
	if errors.As(err, &de) {
		return "", err
	}
	if err != nil {
		h.t.Fatalf("offer: %v", err)
	}
	return strings.Join(host.parts, " "), nil
}

type host struct {
	h     *Harness
	parts []string
	// killed counts the victims per job and type, for the compact form.
	killed []string
}

func (o *host) Launch(offer partitions.SlotOffer, as partitions.Assignment) (bool, error) {
	o.flushKills()
	o.h.Start(as.JobID, as.Type)
	s := as.JobID + ":" + as.Type.String()[:1]
	if as.Spare {
		s += "*"
	}
	o.parts = append(o.parts, s)
	return true, nil
}

func (o *host) Kill(a sched.Attempt) error {
	o.killed = append(o.killed, fmt.Sprintf("%s:%v", a.Job, a.Type))
	o.h.endAttempt(a)
	return nil
}

// flushKills writes the victims as "kill:J:type:N" runs.
func (o *host) flushKills() {
	for i := 0; i < len(o.killed); {
		k := i
		for k < len(o.killed) && o.killed[k] == o.killed[i] {
			k++
		}
		o.parts = append(o.parts, fmt.Sprintf("kill:%s:%d", o.killed[i], k-i))
		i = k
	}
	o.killed = nil
}
