package jobtracker

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"sync"
	"time"

	"gomr/conf"
	"gomr/mr"
	"gomr/mrpb"
	"gomr/partitions"
	"gomr/sched"
)

// Scheduling: the policy's view of jobs and trackers, and the host side of
// the policy driver (package sched): which task an assignment runs, and how
// attempts start and are preempted.

// jobViewLocked is the policy's view of a job, for an offer of tracker
// offer (nil: of no particular tracker).
func (jt *JobTracker) jobViewLocked(j *job, offer *trackerState) partitions.JobView {
	// Counts kept as states change (lifecycle.go): a view costs the same
	// however many tasks the job has.
	v := partitions.JobView{
		ID:              j.id,
		Name:            j.spec.Name,
		Pool:            j.viewPool,
		Priority:        j.priority,
		Submitted:       j.submit,
		Deadline:        j.viewDeadline,
		InputBytes:      j.viewInputBytes,
		Maps:            len(j.maps),
		Reduces:         len(j.reduces),
		FinishedMaps:    j.finishedMaps,
		FinishedReduces: j.finishedReduces,
		ReducesReady:    j.reducesReady(),
		PendingMaps:     j.pending[partitions.Map],
		PendingReduces:  j.pending[partitions.Reduce],
		RunningMaps:     j.live[partitions.Map],
		RunningReduces:  j.live[partitions.Reduce],
	}
	if len(j.localPending) > 0 {
		// Shared, not copied: policies only read a view.
		v.LocalPendingMaps = j.localPending
	}
	if p, ok := jt.profiles[j.spec.Name]; ok {
		v.Profile = &p
		v.EstimatedSize = p.EstimateSize(v.Maps, v.Reduces)
	}
	for tk := range j.specWaiting {
		if waitsFor(tk, offer) {
			// A speculative attempt waits for a slot it may take here.
			if tk.typ == partitions.Map {
				v.PendingMaps++
			} else {
				v.PendingReduces++
			}
		}
	}
	if offer != nil && jt.jobAvoidsLocked(j, offer.name) {
		// The job has blacklisted the offering tracker: it has nothing
		// to run there.
		v.PendingMaps, v.PendingReduces, v.LocalPendingMaps = 0, 0, nil
	}
	return v
}

// addCapacityLocked adds sign (1 or -1) times tracker t's part of the
// capacity the policies see: none for a blacklisted tracker (its slots run
// nothing), else the tracker and its slots. Every change of a tracker's
// membership, slots or blacklisting takes its part out before and puts it
// back after, so that the capacity is kept without a walk of the trackers
// (one per registration was O(trackers²) while a 10,000-tracker cluster
// registered).
func (jt *JobTracker) addCapacityLocked(t *trackerState, sign int) {
	if t.blacklisted {
		return
	}
	jt.capacity[0] += sign
	jt.capacity[1] += sign * t.mapSlots
	jt.capacity[2] += sign * t.reduceSlots
	if t.mapSlots > 0 {
		jt.typeTrackers[partitions.Map] += sign
	}
	if t.reduceSlots > 0 {
		jt.typeTrackers[partitions.Reduce] += sign
	}
}

// hasSlotsFor tells whether tracker t counts in jt.typeTrackers[typ]: it
// is live (in jt.trackers), not blacklisted, and has slots of type typ.
func (jt *JobTracker) hasSlotsFor(t *trackerState, typ partitions.TaskType) bool {
	if t == nil || t.blacklisted || jt.trackers[t.name] != t {
		return false
	}
	if typ == partitions.Map {
		return t.mapSlots > 0
	}
	return t.reduceSlots > 0
}

func (jt *JobTracker) assignLocked(t *trackerState, freeMaps, freeReduces int, now time.Time) {
	if t.blacklisted {
		return
	}
	// Offer even with no free slot: a policy may answer an arrival with
	// preemptions (MinEDF-WC).
	view := jt.clusterViewLocked(now, t)
	if len(view.Jobs) == 0 {
		return
	}
	offer := partitions.SlotOffer{Tracker: t.name, Host: t.host, FreeMaps: freeMaps, FreeReduces: freeReduces}
	if _, err := jt.driver.Offer(view, offer, &trackerHost{jt: jt, t: t, now: now}); err != nil {
		// A refused decision is a policy's bug: nothing of it was carried
		// out, and the next heartbeat offers again.
		jt.log.Error("scheduling decision refused", "tracker", t.name, "error", err)
	}
}

// launchConf is the job's configuration as its launches carry it: the
// keys whose value is not the built-in default. A TaskTracker and a task
// rebuild the whole configuration with conf.FromMap, which starts from the
// defaults, so the result is the same; a launch then carries a few keys
// instead of every registered one (142, 5.8 KB, marshalled and parsed
// map entry by map entry at both ends of every launch).
func launchConf(jcfg *conf.Config) map[string]string {
	m := jcfg.Map()
	for k, v := range defaultConfMap() {
		if m[k] == v {
			delete(m, k)
		}
	}
	return m
}

// launchConfFor is the configuration a launch to tracker t carries: the
// job's non-default keys, or all of them when t's build has other defaults.
func (j *job) launchConfFor(t *trackerState) map[string]string {
	if t.fullConf {
		return j.conf.Map()
	}
	return j.confMap
}

// defaultConfMap is conf.Default().Map(), made once.
var defaultConfMap = sync.OnceValue(func() map[string]string { return conf.Default().Map() })

// trackerHost carries out the policy driver's decisions for an offer of
// tracker t.
type trackerHost struct {
	jt  *JobTracker
	t   *trackerState
	now time.Time
}

// Launch starts a pending task of the job on the tracker (the best one
// for it, pickTaskLocked), or else a speculative attempt of the job that
// waits for a slot there; with neither it drops the assignment.
func (h trackerHost) Launch(_ partitions.SlotOffer, as partitions.Assignment) (bool, error) {
	jt := h.jt
	j := jt.jobs[as.JobID]
	if j == nil || j.done() || jt.jobAvoidsLocked(j, h.t.name) {
		return false, nil
	}
	if tk := jt.pickTaskLocked(j, as.Type, h.t); tk != nil {
		jt.launchLocked(j, tk, h.t, h.now, false)
		return true, nil
	}
	if tk := speculativeTaskLocked(j, as.Type, h.t); tk != nil {
		jt.launchSpeculativeLocked(j, tk, h.t, h.now)
		return true, nil
	}
	return false, nil
}

// Kill kills a live attempt the driver chose as a preemption victim (not
// counted as a failure, as Hadoop counts preemptions).
func (h trackerHost) Kill(k sched.Attempt) error {
	a := h.jt.attemptOfLocked(k)
	if a == nil || !a.live() {
		return fmt.Errorf("attempt %s is not running", k)
	}
	h.jt.killAttemptLocked(a, "preempted by the scheduler")
	return nil
}

// attemptOfLocked finds the attempt the driver names.
func (jt *JobTracker) attemptOfLocked(k sched.Attempt) *attempt {
	j := jt.jobs[k.Job]
	if j == nil {
		return nil
	}
	ts := j.tasks(k.Type)
	if k.Task < 0 || k.Task >= len(ts) {
		return nil
	}
	for _, a := range ts[k.Task].attempts {
		if a.num == k.Attempt {
			return a
		}
	}
	return nil
}

// attemptKey names an attempt as the policy driver does.
func attemptKey(a *attempt) sched.Attempt {
	return sched.Attempt{Job: a.task.job.id, Type: a.task.typ, Task: a.task.index, Attempt: a.num}
}

// pickTaskLocked chooses a pending task of the job for the tracker:
// data-local maps first, tasks that have not failed on this tracker before
// others, then the lowest index.
func (jt *JobTracker) pickTaskLocked(j *job, typ partitions.TaskType, t *trackerState) *task {
	if typ == partitions.Map && j.images == 0 && j.localPending[t.host] > 0 {
		// A map local to the host is pending: the scan below would stop
		// at the first one that has not failed here, which the host's
		// own list finds without walking the maps of other hosts (a
		// walk of about maps / hosts tasks on a large cluster).
		if tk := jt.pickLocalMapLocked(j, t); tk != nil {
			return tk
		}
	}
	var best *task
	bestScore := math.MaxInt
	ts := j.tasks(typ)
	from := min(j.pendingFrom[typ], len(ts))
	// No task before the first pending one is pending: the next scan
	// starts there (pendingChanged lowers it when a task is pending again).
	first := len(ts)
	defer func() { j.pendingFrom[typ] = first }()
	floor := 0
	if typ == partitions.Map && j.localPending != nil && j.localPending[t.host] == 0 {
		floor = 1
	}
	for i := from; i < len(ts); i++ {
		tk := ts[i]
		if tk.state != taskPending {
			continue
		}
		first = min(first, i)
		score := 0
		if tk.image != nil {
			// A preempted task resumes from its image where the resume
			// rule says (checkpoint.go), first thing on the image's tracker.
			here, ok := jt.restoreHereLocked(tk, t)
			if !ok {
				continue
			}
			if here {
				score -= 4
			}
		}
		if tk.failedOn[t.name] {
			if jt.otherTrackerCanRunLocked(tk) {
				continue // another tracker can take it
			}
			score += 2
		}
		if typ == partitions.Map && !contains(j.splits[tk.index].Hosts, t.host) {
			score++
		}
		if score < bestScore {
			best, bestScore = tk, score
		}
		// Nothing scores below 0 but a task resuming on its image's
		// tracker, nor below 1 a map when no pending map is local to
		// this host: without images, the first task of the floor score
		// is the pick.
		if bestScore <= floor && j.images == 0 {
			break
		}
	}
	return best
}

// pickLocalMapLocked is the pending map of lowest index whose split is on
// t's host and that has not failed on t, or nil: with no checkpoint image
// pending, the task pickTaskLocked's scan picks when there is one.
func (jt *JobTracker) pickLocalMapLocked(j *job, t *trackerState) *task {
	list := j.hostMapsLocked()[t.host]
	from := j.hostFrom[t.host]
	k := sort.Search(len(list), func(k int) bool { return int(list[k]) >= from })
	first := math.MaxInt
	defer func() { j.hostFrom[t.host] = first }()
	for ; k < len(list); k++ {
		tk := j.maps[list[k]]
		if tk.state != taskPending {
			continue
		}
		first = min(first, tk.index)
		if !tk.failedOn[t.name] {
			return tk
		}
	}
	return nil
}

// hostMapsLocked is the job's maps by host of their split, in index order,
// built at its first use and extended with the maps added since (a
// scale-up split appends maps, scaleup.go).
func (j *job) hostMapsLocked() map[string][]int32 {
	if j.hostMaps == nil {
		j.hostMaps = map[string][]int32{}
		j.hostFrom = map[string]int{}
	}
	for ; j.hostMapsUpTo < len(j.maps) && j.hostMapsUpTo < len(j.splits); j.hostMapsUpTo++ {
		i := j.hostMapsUpTo
		for _, h := range j.splits[i].Hosts {
			l := j.hostMaps[h]
			if n := len(l); n == 0 || l[n-1] != int32(i) {
				j.hostMaps[h] = append(l, int32(i))
			}
		}
	}
	return j.hostMaps
}

// otherTrackerCanRunLocked tells whether a live tracker with slots of the
// task's type exists on which no attempt of the task has failed and that
// may get the task (not blacklisted across jobs or by the task's job).
func (jt *JobTracker) otherTrackerCanRunLocked(tk *task) bool {
	for name, tr := range jt.trackers {
		if tr.blacklisted || jt.jobAvoidsLocked(tk.job, name) {
			continue // it gets no task of this job
		}
		slots := tr.mapSlots
		if tk.typ == partitions.Reduce {
			slots = tr.reduceSlots
		}
		if slots > 0 && !tk.failedOn[name] {
			return true
		}
	}
	return false
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

func (jt *JobTracker) launchLocked(j *job, tk *task, t *trackerState, now time.Time, speculative bool) *attempt {
	return jt.startAttemptLocked(j, tk, t, now, speculative, nil)
}

// startAttemptLocked creates an attempt of tk on tracker t and orders its
// start: a launch, or with cloneOf set, a clone of that running attempt.
func (jt *JobTracker) startAttemptLocked(j *job, tk *task, t *trackerState, now time.Time, speculative bool, cloneOf *attempt) *attempt {
	a := &attempt{
		speculative: speculative,
		id:          attemptID(tk, tk.nextAttempt),
		num:         tk.nextAttempt,
		task:        tk,
		tracker:     t.name,
		state:       attemptRunning,
		phase:       "MAP",
		start:       now,
		final:       -1,
	}
	if tk.typ == partitions.Reduce {
		a.phase = "SHUFFLE"
	}
	tk.nextAttempt++
	tk.attempts = append(tk.attempts, a)
	// Once the launch is set up (a restored or split attempt's progress
	// and counters prefix): the task's part of the running totals.
	defer j.refreshRunning(tk, true)
	j.live[tk.typ]++
	j.viewChanged()
	if tk.state == taskPending {
		jt.taskToLocked(tk, taskRunning)
	}
	t.attempts[a.id] = a
	jt.trackerChangedLocked(t.name)
	jt.launchPendingLocked(a)
	j.trackers[t.name] = true
	launch := &mrpb.LaunchTask{
		AttemptId:   a.id,
		JobId:       j.id,
		Type:        typeLetter(tk.typ),
		Index:       int32(tk.index),
		Conf:        j.launchConfFor(t),
		NumMaps:     int32(len(j.maps)),
		NumReduces:  int32(j.partitions()),
		JobSecret:   j.secret,
		Speculative: speculative,
		Tracker:     t.name,
	}
	if j.specJSON == nil {
		// The spec does not change once submitted: marshalled once.
		j.specJSON, _ = json.Marshal(j.spec)
	}
	launch.SpecJson = j.specJSON
	if tk.typ == partitions.Map {
		launch.SplitJson, _ = json.Marshal(j.splits[tk.index])
		// A job that announces spills only wants no segment of them.
		launch.SpillDigests = j.spillsOnly
		j.counters.Add(mr.JobCounterGroup, mr.TotalLaunchedMaps, 1)
		if contains(j.splits[tk.index].Hosts, t.host) {
			j.counters.Add(mr.JobCounterGroup, mr.DataLocalMaps, 1)
		}
	} else {
		j.counters.Add(mr.JobCounterGroup, mr.TotalLaunchedReduces, 1)
	}
	if cloneOf == nil && !speculative {
		jt.restoreSourceLocked(tk, a, launch) // a preempted task resumes
	}
	jt.mapLaunchLocked(tk, a, launch, cloneOf)
	if cloneOf != nil {
		src := ""
		if st := jt.trackers[cloneOf.tracker]; st != nil {
			src = st.shuffleAddr
		}
		t.actions = append(t.actions, &mrpb.TaskAction{Action: &mrpb.TaskAction_Clone{Clone: &mrpb.CloneAttempt{
			SourceAttempt: cloneOf.id, SourceAddress: src, Launch: launch}}})
	} else {
		t.actions = append(t.actions, &mrpb.TaskAction{Action: &mrpb.TaskAction_Launch{Launch: launch}})
	}
	jt.driver.Started(now, attemptKey(a))
	jt.log.Debug("launch", "attempt", a.id, "tracker", t.name)
	return a
}
