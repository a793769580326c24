package jobtracker

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"sort"
	"sync"
	"time"

	"gomr/mr"
	"gomr/mrpb"
	"gomr/partitions"
)

// JobTracker restart recovery (mapreduce.jobtracker.restart.recover; Hadoop
// 1's mapred.jobtracker.restart.recover, MRv2's application-master
// recovery). Beside each staged job the JobTracker appends one line per
// task that succeeds (and one per completed map re-run because its output
// was lost, one per map attempt whose published spills were withdrawn, one
// per fragment a split reduce commits, and one per scale-up split's
// pieces) to
// <system dir>/<job id>.events. A restarted JobTracker
// rebuilds every staged job from its spec and splits and replays these
// lines:
//   - a reduce (or a map of a map-only job) that succeeded is kept when
//     its part file is in the output directory; otherwise it runs again;
//   - a split reduce's committed fragments (one "fragment" line each,
//     reduce_split.go) are kept while their files are in
//     _temporary/_fragments, in order: the reduce runs again only for the
//     key groups after the last kept one, and a split reduce that
//     succeeded is kept when its fragments all are;
//   - a scale-up split's pieces are maps of the job again, with the map
//     they were cut from as short as the split left it;
//   - a map's withdrawn spills ("withdrawn" lines) are what its re-run is
//     compared with again (noteRerunLocked), so that a re-run announced
//     after the restart that differs from them is still counted in
//     NONDETERMINISTIC_MAP_RERUNS;
//   - a line of another kind (a later version's) is skipped: a log
//     without some kind of line (an earlier version's) recovers as it did;
//   - a map that succeeded is kept, unpublished, until its tracker
//     registers again from the same shuffle address and still holds the
//     attempt's files (it lists them on initial contact); its spills are
//     then published to the reducers. A map whose tracker does not come
//     back within mapreduce.jobtracker.restart.tracker-wait runs again,
//     its logged spills withdrawn (a "withdrawn" line): a reduce that
//     succeeded before the restart may have read them, and the re-run is
//     compared with them, as is a split map's re-run with its remainder's;
//
// Attempts running at the restart are killed by their trackers (which the
// new JobTracker does not know, and so reinitializes) and run again. New
// attempts of a recovered job are numbered from 1000 times the number of
// restarts, so that no attempt id is given twice. The job's counters are
// those recorded with its last task event, plus what runs after.

// taskEvent is one line of a job's event log.
type taskEvent struct {
	// Kind is "succeeded", "rerun" (a succeeded map whose output was
	// lost), "withdrawn" (spills an attempt of a map published were
	// withdrawn: Spills are those, Final its final spill or -1),
	// "fragment" (a split reduce committed a fragment) or "pieces" (a
	// scale-up split added maps).
	Kind     string              `json:"kind"`
	Type     string              `json:"type"` // "m" or "r"
	Task     int                 `json:"task"`
	Attempt  string              `json:"attempt,omitempty"`
	Tracker  string              `json:"tracker,omitempty"`
	Shuffle  string              `json:"shuffle,omitempty"`
	Start    time.Time           `json:"start,omitzero"`
	Finish   time.Time           `json:"finish,omitzero"`
	Counters mr.PackedCounters   `json:"counters,omitzero"`
	Final    int                 `json:"final,omitempty"`
	Spills   map[int]packedSpill `json:"spills,omitempty"`
	// JobCounters are the job counters (launched, failed, killed,
	// millis) as of this event.
	JobCounters mr.CounterSet `json:"job_counters,omitempty"`
	// Cuts are a split map's split points (split.go).
	Cuts []loggedCut `json:"cuts,omitempty"`
	// Splits are, on a "pieces" line, a scale-up split's map's new split
	// and its pieces' (scaleup.go).
	Splits []mr.Split `json:"splits,omitempty"`
	// Fragment is the output fragment of a split reduce that a
	// "fragment" line records (with the last key it reduced, LastKey) or
	// a "succeeded" line's attempt wrote (reduce_split.go).
	Fragment int    `json:"fragment,omitempty"`
	LastKey  []byte `json:"last_key,omitempty"`
	// Bounds are, on a reduce's "pieces" line, the keys that cut the rest
	// of its key range into pieces (reduce_scaleup.go).
	Bounds [][]byte `json:"bounds,omitempty"`
	// SortMB is, on a map's "succeeded" line, the task's pinned sort
	// buffer (task.sortMB), which its attempts after a restart keep.
	SortMB int32 `json:"sort_mb,omitempty"`
}

func (s *Staging) eventsPath(id string) (string, error) {
	p, err := s.path(id)
	if err != nil {
		return "", err
	}
	return p[:len(p)-len(".json")] + ".events", nil
}

// appendEvent queues one line for a job's event log; flushEvents writes
// it. The JobTracker queues under its lock, which orders the lines, and
// flushes once the lock is released (afterUnlockLocked): the marshalling
// and the file's system calls are not on the heartbeats' critical path, and
// the call that queued a line returns once it is written. The write is not
// synced: a JobTracker process that dies keeps it (the kernel has it); a
// machine that dies may lose the last lines, which only makes tasks run
// again.
func (s *Staging) appendEvent(id string, ev *taskEvent) error {
	p, err := s.eventsPath(id)
	if err != nil {
		return err
	}
	s.events.mu.Lock()
	s.events.queue = append(s.events.queue, queuedEvent{job: id, path: p, ev: ev})
	s.events.mu.Unlock()
	return nil
}

// eventLog writes the jobs' event logs, in the order appendEvent queued
// their lines, keeping each running job's file open.
type eventLog struct {
	// mu guards queue; write is held while lines are written and files
	// opened or closed (files).
	mu    sync.Mutex
	queue []queuedEvent
	write sync.Mutex
	files map[string]*os.File
}

type queuedEvent struct {
	job, path string
	ev        *taskEvent
}

// flushEvents writes every queued line. It returns once the lines queued
// before the call are written, by this call or by another under way; the
// first error names its job.
func (s *Staging) flushEvents() error {
	l := &s.events
	l.write.Lock()
	defer l.write.Unlock()
	l.mu.Lock()
	batch := l.queue
	l.queue = nil
	l.mu.Unlock()
	return l.writeLocked(batch)
}

// writeLocked writes batch's lines in the order they were queued, each
// job's in one write to its file (a write a line was a system call for
// every announced spill), and returns the first error, naming its job.
func (l *eventLog) writeLocked(batch []queuedEvent) error {
	var first error
	failed := func(job string, err error) {
		if first == nil {
			first = fmt.Errorf("event log of job %s: %w", job, err)
		}
	}
	type lines struct {
		path string
		buf  bytes.Buffer
		enc  *json.Encoder
	}
	var jobs []string
	byJob := map[string]*lines{}
	for _, q := range batch {
		ls := byJob[q.job]
		if ls == nil {
			ls = &lines{path: q.path}
			ls.enc = json.NewEncoder(&ls.buf) // as json.Marshal, with the newline
			byJob[q.job] = ls
			jobs = append(jobs, q.job)
		}
		if err := ls.enc.Encode(q.ev); err != nil {
			failed(q.job, err)
		}
	}
	for _, job := range jobs {
		ls := byJob[job]
		f := l.files[job]
		if f == nil {
			var err error
			if f, err = os.OpenFile(ls.path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600); err != nil {
				failed(job, err)
				continue
			}
			if l.files == nil {
				l.files = map[string]*os.File{}
			}
			l.files[job] = f
		}
		if _, err := f.Write(ls.buf.Bytes()); err != nil {
			f.Close()
			delete(l.files, job)
			failed(job, err)
		}
	}
	return first
}

// forget writes what is queued for the job and closes its file: the job
// ended, and its log is about to be removed.
func (l *eventLog) forget(id string) {
	l.write.Lock()
	defer l.write.Unlock()
	l.mu.Lock()
	batch := l.queue
	l.queue = nil
	l.mu.Unlock()
	_ = l.writeLocked(batch) // the other jobs' lines; this job's go with its file
	if f := l.files[id]; f != nil {
		f.Close()
		delete(l.files, id)
	}
}

// readEvents reads a job's event log; a torn last line (the process died
// writing it) is dropped.
func (s *Staging) readEvents(id string) ([]*taskEvent, error) {
	p, err := s.eventsPath(id)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(p)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("event log of job %s: %w", id, err)
	}
	defer f.Close()
	var out []*taskEvent
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() {
		var ev taskEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			break // torn last line
		}
		out = append(out, &ev)
	}
	return out, sc.Err()
}

// logTaskLocked records that task tk succeeded with attempt a.
func (jt *JobTracker) logTaskLocked(a *attempt) {
	tk := a.task
	ev := &taskEvent{Kind: "succeeded", Type: typeLetter(tk.typ), Task: tk.index, Attempt: a.id, Tracker: a.tracker,
		Shuffle: a.shuffleAddr, Start: a.start, Finish: a.finish, Counters: a.counters, JobCounters: tk.job.counters}
	if tk.typ == partitions.Reduce && a.split != nil {
		ev.Fragment = a.split.fragment
	}
	if tk.typ == partitions.Map && len(tk.job.reduces) > 0 {
		ev.Final = a.final
		ev.Cuts = tk.split.logged()
		ev.SortMB = tk.sortMB
		ev.Spills = maps.Clone(a.spills)
	}
	jt.appendEventLocked(tk, ev)
}

// logWithdrawnLocked records that spills ks of map attempt a were
// withdrawn (obsoleteMapOutputLocked): a re-run's spills are compared with
// them (noteRerunLocked), after a restart of the JobTracker too.
func (jt *JobTracker) logWithdrawnLocked(a *attempt, ks []int) {
	tk := a.task
	spills := make(map[int]packedSpill, len(ks))
	for _, k := range ks {
		spills[k] = a.spills[k]
	}
	jt.appendEventLocked(tk, &taskEvent{Kind: "withdrawn", Type: "m", Task: tk.index, Attempt: a.id, Tracker: a.tracker,
		Final: a.final, Spills: spills, JobCounters: tk.job.counters})
}

// recoverWithdrawn puts back, from a "withdrawn" line, the spills of map
// tk that an attempt had published before they were withdrawn, where no
// earlier line put back the same spill (the first withdrawal of a spill is
// the one compared with, as before the restart).
func recoverWithdrawn(tk *task, ev *taskEvent) {
	w := &attempt{id: ev.Attempt, task: tk, tracker: ev.Tracker, state: attemptKilled, final: ev.Final,
		spills: ev.Spills, obsolete: true}
	for k := range w.spills {
		tk.withdraw(w, k)
	}
}

// withdrawRecoveredLocked withdraws the spills of a recovered map
// attempt whose output is gone (its tracker did not come back with it):
// the JobTracker before the restart published them, and a reduce that
// succeeded then may have read them, so the map's re-run is compared with
// them (noteRerunLocked), and a restart after this one knows them too.
func (jt *JobTracker) withdrawRecoveredLocked(a *attempt) {
	t := a.task
	var ks []int
	for _, k := range slices.Sorted(maps.Keys(a.spills)) {
		if t.withdraw(a, k) {
			ks = append(ks, k)
		}
	}
	if len(ks) > 0 {
		jt.logWithdrawnLocked(a, ks)
	}
}

// appendEventLocked queues a line of the task's job's event log, written
// once the lock is released. The event holds copies of what changes later
// (the job's counters); the attempt's counters are replaced, not changed,
// by its reports.
func (jt *JobTracker) appendEventLocked(tk *task, ev *taskEvent) {
	jc := mr.CounterSet{}
	jc.Merge(ev.JobCounters)
	ev.JobCounters = jc
	if err := jt.staging.appendEvent(tk.job.id, ev); err != nil {
		jt.log.Error("recording a task for recovery", "task", tk.id(), "error", err)
		return
	}
	jt.afterUnlockLocked(func() {
		if err := jt.staging.flushEvents(); err != nil {
			jt.log.Error("recording tasks for recovery", "error", err)
		}
	})
}

// logRerunLocked records that succeeded map m runs again.
func (jt *JobTracker) logRerunLocked(m *task) {
	jt.appendEventLocked(m, &taskEvent{Kind: "rerun", Type: "m", Task: m.index, JobCounters: m.job.counters})
}

// recoverJobs rebuilds the staged jobs of a previous JobTracker process.
func (jt *JobTracker) recoverJobs() error {
	staged, err := jt.staging.List()
	if err != nil {
		return err
	}
	sort.Slice(staged, func(a, b int) bool { return staged[a].Submit.Before(staged[b].Submit) })
	now := jt.now()
	for _, sj := range staged {
		if err := jt.recoverJob(sj, now); err != nil {
			return fmt.Errorf("recovering job %s: %w", sj.ID, err)
		}
	}
	return nil
}

// recoverJob rebuilds one staged job from its spec and event log. A job
// whose output was committed (the _SUCCESS marker is there) is recorded as
// succeeded at once: its commit is the point of no return, as in Hadoop.
func (jt *JobTracker) recoverJob(sj *stagedJob, now time.Time) error {
	jcfg, err := jt.cfg.JobOverrides(sj.Spec.Conf)
	if err != nil {
		return err
	}
	spec8r, err := jt.newJobSpeculator(jcfg)
	if err != nil {
		return err
	}
	events, err := jt.staging.readEvents(sj.ID)
	if err != nil {
		return err
	}
	sj.Restarts++
	if err := jt.staging.Write(sj); err != nil {
		return err
	}
	committer, err := mr.NewCommitter(sj.Spec.Output)
	if err != nil {
		return err
	}
	j := newJob(sj.ID, sj.Spec, sj.Splits, sj.Secret, sj.Submit, jcfg, spec8r)
	j.spillsOnly = jt.spillsOnly(len(j.maps), len(j.reduces))
	for _, ts := range [][]*task{j.maps, j.reduces} {
		for _, tk := range ts {
			tk.nextAttempt = 1000 * sj.Restarts
		}
	}
	kept := [2]int{}
	pieces := 0
	for _, ev := range events {
		if ev.JobCounters != nil {
			j.counters = ev.JobCounters
		}
		ts := j.maps
		if ev.Type == "r" {
			ts = j.reduces
		}
		if ev.Kind == "pieces" && ev.Type == "r" {
			// A scale-up split cut a reduce's rest into key ranges
			// (reduce_scaleup.go): the pieces are reduces of the job.
			cmp, err := jobCompare(j)
			if err == nil {
				err = recoverReducePiecesLocked(j, ev, cmp)
			}
			if err != nil {
				return err
			}
			pieces += len(ev.Bounds)
			continue
		}
		if ev.Kind == "pieces" {
			// A scale-up split cut a map's remainder into pieces
			// (scaleup.go): the map's split is shorter, and the pieces
			// are maps of the job, whose logged successes follow.
			if err := recoverPiecesLocked(j, ev); err != nil {
				return err
			}
			pieces += len(ev.Splits) - 1
			continue
		}
		if ev.Task < 0 || ev.Task >= len(ts) {
			return fmt.Errorf("event log names %s task %d of %d", ev.Type, ev.Task, len(ts))
		}
		tk := ts[ev.Task]
		if ev.Kind == "fragment" {
			if tk.typ == partitions.Reduce && tk.state != taskSucceeded {
				jt.recoverFragmentLocked(tk, ev, committer)
			}
			continue
		}
		if ev.Kind == "rerun" {
			if tk.state == taskSucceeded {
				jt.taskToLocked(tk, taskPending)
				tk.successful = nil
				j.finishedMaps--
				j.mapsNotDoneLocked()
			}
			continue
		}
		if ev.Kind == "withdrawn" {
			if tk.typ == partitions.Map {
				recoverWithdrawn(tk, ev)
			}
			continue
		}
		if ev.Kind != "succeeded" {
			// A line of a later version: what it records is not known
			// here, and it is not a task's success.
			jt.log.Warn("event log line of an unknown kind skipped", "job", j.id, "kind", ev.Kind, "type", ev.Type, "task", ev.Task)
			continue
		}
		if tk.state == taskSucceeded {
			continue
		}
		a := &attempt{
			id: ev.Attempt, task: tk, tracker: ev.Tracker, state: attemptSucceeded, progress: 1,
			start: ev.Start, finish: ev.Finish, counters: ev.Counters, final: -1,
			shuffleAddr: ev.Shuffle,
		}
		if tk.typ == partitions.Map && len(j.reduces) > 0 {
			tk.split = splitFromLog(ev.Cuts)
			tk.sortMB = ev.SortMB
			if len(ev.Spills) != ev.Final+1 {
				// A split map (split.go): its attempt made only the
				// spills after the last split point, and the split
				// points are not logged. It runs again, compared with
				// the spills that attempt published, which a reduce
				// that succeeded before the restart may have read.
				recoverWithdrawn(tk, ev)
				continue
			}
			a.final = ev.Final
			a.spills = ev.Spills
			a.unconfirmed = true
		} else if committer.TaskCommitted(tk.typ == partitions.Map, tk.partition()) {
			if tk.split != nil {
				// Its fragments were joined into its part file before
				// the restart: nothing is left to join.
				tk.split.frags = nil
			}
		} else if tk.typ == partitions.Reduce && (ev.Fragment > 0 || (tk.split != nil && tk.split.piece)) && recoveredLastFragment(tk, ev.Fragment, committer) {
			// A split reduce whose fragments, its own last one
			// included, are all committed: the job commit joins them.
			a.split = &attemptSplitInfo{fragment: ev.Fragment}
			jt.splitSucceededLocked(a)
		} else {
			continue // its output is not there: it runs again
		}
		tk.attempts = append(tk.attempts, a)
		tk.successful = a
		jt.taskToLocked(tk, taskSucceeded)
		if a.tracker != "" {
			// Its tracker holds the attempt's files (a map's output): it
			// is told to purge the job when the job ends.
			j.trackers[a.tracker] = true
		}
		if tk.typ == partitions.Map {
			j.finishedMaps++
		} else {
			j.finishedReduces++
		}
		kept[tk.typ]++
	}
	committed, err := committer.JobCommitted()
	if err != nil {
		jt.log.Warn("cannot tell whether a recovered job's output was committed; recovering it", "job", j.id, "error", err)
	}
	if committed {
		// The JobTracker died between the job's commit and its record:
		// every task succeeded (the commit needs them all), including
		// any whose event line was lost with a machine.
		for _, ts := range [][]*task{j.maps, j.reduces} {
			for _, tk := range ts {
				if tk.successful != nil {
					tk.successful.unconfirmed = false
				}
				if tk.state != taskSucceeded {
					jt.taskToLocked(tk, taskSucceeded)
					if tk.typ == partitions.Map {
						j.finishedMaps++
					} else {
						j.finishedReduces++
					}
				}
			}
		}
		jt.addJobLocked(j, now)
		jt.log.Warn("job committed before a JobTracker restart: recorded as succeeded", "job", j.id, "name", j.spec.Name,
			"restarts", sj.Restarts, "output", j.spec.Output)
		jt.endJobLocked(j, jobSucceeded, "")
		return nil
	}
	jt.addJobLocked(j, now)
	if j.finishedMaps > 0 && len(j.reduces) > 0 {
		j.recoveryDeadline = now.Add(jt.cfg.Duration("mapreduce.jobtracker.restart.tracker-wait"))
	}
	jt.log.Warn("job recovered after a JobTracker restart", "job", j.id, "name", j.spec.Name, "restarts", sj.Restarts,
		"maps_kept", kept[partitions.Map], "reduces_kept", kept[partitions.Reduce], "maps", len(j.maps), "scale_up_maps", pieces, "reduces", len(j.reduces))
	jt.checkJobDoneLocked(j)
	return nil
}

// confirmRecoveredLocked takes a registering tracker's word on the map
// outputs a recovered job kept on it: an attempt it still holds, from the
// shuffle address the attempt was served from, is published; any other
// kept map of that tracker runs again.
func (jt *JobTracker) confirmRecoveredLocked(t *trackerState, req *mrpb.HeartbeatRequest, now time.Time) {
	held := make(map[string]bool, len(req.HeldAttempts))
	for _, id := range req.HeldAttempts {
		held[id] = true
	}
	for _, j := range jt.order {
		if j.done() || j.recoveryDeadline.IsZero() {
			continue
		}
		for _, m := range j.maps {
			a := m.successful
			if a == nil || !a.unconfirmed || a.tracker != t.name {
				continue
			}
			if held[a.id] && a.shuffleAddr == req.ShuffleAddress {
				a.unconfirmed = false
				ks := make([]int, 0, len(a.spills))
				for k := range a.spills {
					ks = append(ks, k)
				}
				sort.Ints(ks)
				for _, k := range ks {
					jt.publishSpillLocked(j, a, k)
				}
				jt.log.Info("recovered map output confirmed", "attempt", a.id, "tracker", t.name)
				continue
			}
			jt.log.Warn("recovered map output gone", "attempt", a.id, "tracker", t.name)
			a.unconfirmed = false
			a.obsolete = true
			jt.withdrawRecoveredLocked(a)
			jt.rerunMapLocked(m, now)
		}
	}
}

// expireRecoveredLocked re-runs the kept maps whose trackers did not
// register again in time.
func (jt *JobTracker) expireRecoveredLocked(now time.Time) {
	for _, j := range jt.order {
		if j.done() || j.recoveryDeadline.IsZero() || now.Before(j.recoveryDeadline) {
			continue
		}
		j.recoveryDeadline = time.Time{}
		for _, m := range j.maps {
			if a := m.successful; a != nil && a.unconfirmed {
				jt.log.Warn("recovered map output not confirmed in time", "attempt", a.id, "tracker", a.tracker)
				a.unconfirmed = false
				a.obsolete = true
				jt.withdrawRecoveredLocked(a)
				jt.rerunMapLocked(m, now)
			}
		}
	}
}
