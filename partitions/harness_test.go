package partitions

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

func at(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }

func secs(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// harness drives a policy the way the JobTracker does, on a hand-made
// cluster, and applies its decisions.
type harness struct {
	t       *testing.T
	p       Policy
	now     time.Time
	mapS    int
	redS    int
	jobs    []*JobView
	running map[string]map[TaskType][]int // started tasks, oldest first
	next    map[string]map[TaskType]int
}

func newHarness(t *testing.T, name string, conf map[string]string, mapSlots, reduceSlots int) *harness {
	t.Helper()
	cfg, err := NewMapConfig(conf)
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	p, err := New(name, cfg)
	if err != nil {
		t.Fatalf("New(%s): %v", name, err)
	}
	return &harness{t: t, p: p, now: t0, mapS: mapSlots, redS: reduceSlots,
		running: map[string]map[TaskType][]int{}, next: map[string]map[TaskType]int{}}
}

func (h *harness) job(id string) *JobView {
	for _, j := range h.jobs {
		if j.ID == id {
			return j
		}
	}
	h.t.Fatalf("no job %s", id)
	return nil
}

// submit adds a job with all its tasks pending; reduces are ready.
func (h *harness) submit(v JobView) {
	if v.Submitted.IsZero() {
		v.Submitted = h.now
	}
	v.PendingMaps, v.PendingReduces = v.Maps, v.Reduces
	v.ReducesReady = true
	jv := v
	h.jobs = append(h.jobs, &jv)
	h.running[v.ID] = map[TaskType][]int{}
	h.next[v.ID] = map[TaskType]int{}
	cp := jv
	h.p.Observe(Event{Time: h.now, Kind: JobSubmitted, JobID: v.ID, Job: &cp})
}

func (h *harness) view() *ClusterView {
	v := &ClusterView{Now: h.now, Trackers: 1, MapSlots: h.mapS, ReduceSlots: h.redS}
	for _, j := range h.jobs {
		v.Jobs = append(v.Jobs, *j)
	}
	return v
}

// start launches one task of the job (as if assigned).
func (h *harness) start(id string, t TaskType) int {
	j := h.job(id)
	task := h.next[id][t]
	h.next[id][t]++
	if t == Map {
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
	h.running[id][t] = append(h.running[id][t], task)
	h.p.Observe(Event{Time: h.now, Kind: TaskStarted, JobID: id, Type: t, Task: task})
	return task
}

// finish completes the oldest running task of the type, which ran dur.
func (h *harness) finish(id string, t TaskType, dur time.Duration) {
	j := h.job(id)
	rs := h.running[id][t]
	if len(rs) == 0 {
		h.t.Fatalf("finish %s %v: nothing running", id, t)
	}
	task := rs[0]
	h.running[id][t] = rs[1:]
	if t == Map {
		j.RunningMaps--
		j.FinishedMaps++
	} else {
		j.RunningReduces--
		j.FinishedReduces++
	}
	h.p.Observe(Event{Time: h.now, Kind: TaskFinished, JobID: id, Type: t, Task: task, Duration: dur})
}

// kill fails the newest n running tasks of the type.
func (h *harness) kill(id string, t TaskType, n int) {
	j := h.job(id)
	for ; n > 0; n-- {
		rs := h.running[id][t]
		task := rs[len(rs)-1]
		h.running[id][t] = rs[:len(rs)-1]
		if t == Map {
			j.RunningMaps--
			j.PendingMaps++
		} else {
			j.RunningReduces--
			j.PendingReduces++
		}
		h.p.Observe(Event{Time: h.now, Kind: TaskFailed, JobID: id, Type: t, Task: task})
	}
}

func (h *harness) end(id string) {
	for i, j := range h.jobs {
		if j.ID == id {
			h.jobs = append(h.jobs[:i], h.jobs[i+1:]...)
			break
		}
	}
	h.p.Observe(Event{Time: h.now, Kind: JobFinished, JobID: id})
}

// offer asks the policy for a tracker's free slots, checks the decision
// against the offer, applies it, and returns it in a compact form:
// "A:m B:r* ..." (an asterisk marks a spare task), plus "kill:J:m:N".
func (h *harness) offer(freeMaps, freeReduces int) string {
	h.t.Helper()
	d := h.p.Offer(h.view(), SlotOffer{Tracker: "t1", Host: "h1", FreeMaps: freeMaps, FreeReduces: freeReduces})
	var parts []string
	for _, pr := range d.Preempt {
		h.kill(pr.JobID, pr.Type, pr.Count)
		parts = append(parts, fmt.Sprintf("kill:%s:%v:%d", pr.JobID, pr.Type, pr.Count))
	}
	nm, nr := 0, 0
	for _, a := range d.Assign {
		if a.Type == Map {
			nm++
		} else {
			nr++
		}
		h.start(a.JobID, a.Type)
		s := a.JobID + ":" + a.Type.String()[:1]
		if a.Spare {
			s += "*"
		}
		parts = append(parts, s)
	}
	if nm > freeMaps || nr > freeReduces {
		h.t.Fatalf("policy assigned %d maps and %d reduces for %d and %d free", nm, nr, freeMaps, freeReduces)
	}
	return strings.Join(parts, " ")
}

func (h *harness) advance(s float64) { h.now = h.now.Add(secs(s)) }
