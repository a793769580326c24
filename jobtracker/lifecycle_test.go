package jobtracker

import (
	"errors"
	"fmt"
	"gomr/mr"
	"gomr/partitions"
	"maps"
	"math"
	"reflect"
	"slices"
	"testing"
	"time"
)

// noIllegalTransitions fails the test, at its end, if the JobTracker
// refused any state change as illegal (lifecycle.go): every path through
// the JobTracker must keep to the tables; or if the counts its views are
// made of (pending tasks, live attempts, pending maps by host, waiting
// speculative attempts) differ from a count over the tasks; or if a
// policy's cached view of a job differed from one built afresh at an
// offer (viewcache.go: a change without viewChanged). It first waits for
// the work heartbeats handed off their replies (history files), which may
// still write in the test's directory.
func noIllegalTransitions(t testing.TB, jt *JobTracker) {
	jt.views.verify = true
	t.Cleanup(func() {
		jt.waitBackground()
		jt.logq.flush(logFlushTimeout)
		jt.mu.Lock()
		n := jt.illegalTransitions
		var bad []error
		if err := jt.views.mismatch; err != nil {
			bad = append(bad, err)
		}
		for _, j := range jt.order {
			if err := viewCountsMatch(j); err != nil {
				bad = append(bad, err)
			}
		}
		if err := publishedMatch(jt); err != nil {
			bad = append(bad, err)
		}
		jt.unlock()
		if n > 0 {
			t.Errorf("the JobTracker refused %d illegal state changes (see its log)", n)
		}
		for _, err := range bad {
			t.Error(err)
		}
	})
}

// publishedMatch checks, under the lock, the trackers' published rows
// (publish.go), slot totals and the policies' capacity (addCapacityLocked)
// against the trackers.
func publishedMatch(jt *JobTracker) error {
	var slots [2]int
	var capacity [3]int
	for name, t := range jt.trackers {
		slots[0] += t.mapSlots
		slots[1] += t.reduceSlots
		if !t.blacklisted {
			capacity[0]++
			capacity[1] += t.mapSlots
			capacity[2] += t.reduceSlots
		}
		if got, want := jt.trackerRowNow(name), jt.trackerRowLocked(t); got == nil || !reflect.DeepEqual(*got, *want) {
			return fmt.Errorf("tracker %s: published %+v, is %+v", name, got, want)
		}
	}
	if slots != jt.slotTotals {
		return fmt.Errorf("trackers have %v slots, kept %v", slots, jt.slotTotals)
	}
	if capacity != jt.capacity {
		return fmt.Errorf("trackers not blacklisted, their map and reduce slots: %v, kept %v", capacity, jt.capacity)
	}
	rows := jt.trackerRowsNow()
	if len(rows) != len(jt.trackers) {
		return fmt.Errorf("%d trackers, %d published", len(jt.trackers), len(rows))
	}
	// The totals kept as rows change (publish.go), against a sum over the
	// rows; the lost trackers none of the live ones.
	var sum trackerTotals
	for _, r := range rows {
		sum.add(r, 1)
	}
	jt.published.lost.Range(func(name, _ any) bool {
		sum.counts.Lost++
		if jt.trackers[name.(string)] != nil {
			sum.counts.Lost = -1 << 30
		}
		return true
	})
	if got := jt.trackerTotalsNow(); got != sum {
		return fmt.Errorf("tracker totals kept %+v, summed %+v", got, sum)
	}
	if names := jt.trackerNamesNow(); len(names) != len(rows) || !slices.IsSorted(names) {
		return fmt.Errorf("index of %d names (sorted: %v) for %d trackers", len(names), slices.IsSorted(names), len(rows))
	}
	// The expiry's lists (expiry.go): every tracker that heartbeated, in
	// the order of its last heartbeat; the live attempts whose launch is
	// not acknowledged, in launch order.
	seen, pending := 0, 0
	var last time.Time
	for e := jt.seen.Front(); e != nil; e = e.Next() {
		t := e.Value.(*trackerState)
		if jt.trackers[t.name] != t || t.lastSeen.Before(last) {
			return fmt.Errorf("tracker %s is out of place in the expiry's list", t.name)
		}
		last = t.lastSeen
		seen++
	}
	for _, t := range jt.trackers {
		if t.seen == nil && !t.lastSeen.IsZero() {
			return fmt.Errorf("tracker %s heartbeated but is not in the expiry's list", t.name)
		}
		for _, a := range t.attempts {
			if due := a.live() && (a.sentIn == 0 || a.sentIn > t.acked); due != (a.unacked != nil) {
				return fmt.Errorf("attempt %s: launch unacknowledged %v, listed %v", a.id, due, a.unacked != nil)
			}
			if a.unacked != nil {
				pending++
			}
		}
	}
	if seen > len(jt.trackers) || pending != jt.launches.Len() {
		return fmt.Errorf("expiry's lists: %d trackers of %d, %d launches listed of %d", seen, len(jt.trackers), jt.launches.Len(), pending)
	}
	return nil
}

// viewCountsMatch recounts what jobViewLocked reads from counters.
func viewCountsMatch(j *job) error {
	var pending, live [2]int
	local := map[string]int{}
	waiting, images := 0, 0
	for _, ts := range [][]*task{j.maps, j.reduces} {
		for _, tk := range ts {
			if tk.image != nil {
				images++
			}
			if tk.state == taskPending {
				if tk.index < j.pendingFrom[tk.typ] {
					return fmt.Errorf("job %s: task %s is pending below the scan's start %d", j.id, tk.id(), j.pendingFrom[tk.typ])
				}
				pending[tk.typ]++
				if tk.typ == partitions.Map {
					for _, h := range j.splits[tk.index].Hosts {
						local[h]++
						if from, ok := j.hostFrom[h]; ok && tk.index < from {
							return fmt.Errorf("job %s: map %s is pending below host %s's scan start %d", j.id, tk.id(), h, from)
						}
					}
				}
			}
			live[tk.typ] += len(tk.running())
			if s := tk.specPending; s != nil && s.attempt == nil {
				waiting++
				if !j.specWaiting[tk] {
					return fmt.Errorf("job %s: task %s waits for a speculative slot but is not in specWaiting", j.id, tk.id())
				}
			}
		}
	}
	if images != j.images {
		return fmt.Errorf("job %s: %d tasks hold a checkpoint image, counted %d", j.id, images, j.images)
	}
	if pending != j.pending || live != j.live || !maps.Equal(local, j.localPending) || waiting != len(j.specWaiting) {
		return fmt.Errorf("job %s: counted pending %v live %v local %v waiting %d; kept pending %v live %v local %v waiting %d",
			j.id, pending, live, local, waiting, j.pending, j.live, j.localPending, len(j.specWaiting))
	}
	var byState [2][taskKilled + 1]int
	active := 0
	done := mr.CounterSet{}
	for _, ts := range [][]*task{j.maps, j.reduces} {
		for _, tk := range ts {
			byState[tk.typ][tk.state]++
			if tk.state == taskRunning {
				active++
				if !j.active[tk] {
					return fmt.Errorf("job %s: running task %s is not in active", j.id, tk.id())
				}
			}
			if tk.state == taskSucceeded && tk.successful != nil {
				tk.successful.counters.AddTo(done)
				if tk.split != nil {
					done.Merge(tk.split.prefix) // the split attempts it continues (split.go)
				}
			}
		}
	}
	if byState != j.byState || active != len(j.active) {
		return fmt.Errorf("job %s: counted by state %v active %d; kept %v and %d", j.id, byState, active, j.byState, len(j.active))
	}
	if !maps.EqualFunc(nonZero(done), nonZero(j.doneCounters), maps.Equal) {
		return fmt.Errorf("job %s: successful attempts' counters sum to %v; kept %v", j.id, done, j.doneCounters)
	}
	// The finished durations (speculation.go) are those of the succeeded
	// tasks.
	for typ, ts := range [][]*task{j.maps, j.reduces} {
		var want []time.Duration
		for _, tk := range ts {
			if a := tk.successful; tk.state == taskSucceeded && a != nil {
				if d, ok := fullTaskDuration(a.finish.Sub(a.start), a.cloneCost, a.startProgress); ok {
					want = append(want, d)
				}
			}
		}
		got := slices.Clone(j.finished[typ].d)
		slices.Sort(want)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			return fmt.Errorf("job %s: finished durations of type %d %v, kept %v", j.id, typ, want, got)
		}
		for i, tk := range j.finished[typ].tasks {
			if tk.finishedAt != i+1 {
				return fmt.Errorf("job %s: task %s at %d of the finished, says %d", j.id, tk.id(), i+1, tk.finishedAt)
			}
		}
	}
	// The running totals (running.go) are what a walk over the running
	// tasks gives.
	progress, running := j.runningTotalsByWalk()
	for typ := range progress {
		if math.Abs(progress[typ]-j.runProgress[typ]) > 1e-6 {
			return fmt.Errorf("job %s: running tasks' progress sums to %v; kept %v", j.id, progress, j.runProgress)
		}
	}
	if !maps.EqualFunc(nonZero(running), nonZero(j.runCounters), maps.Equal) {
		return fmt.Errorf("job %s: running tasks' counters sum to %v; kept %v", j.id, running, j.runCounters)
	}
	return nil
}

// nonZero is the counters without the zero values and empty groups.
func nonZero(s mr.CounterSet) map[string]map[string]int64 {
	out := map[string]map[string]int64{}
	for g, m := range s {
		for n, v := range m {
			if v != 0 {
				if out[g] == nil {
					out[g] = map[string]int64{}
				}
				out[g][n] = v
			}
		}
	}
	return out
}

func TestAttemptTransitions(t *testing.T) {
	all := []attemptState{attemptRunning, attemptCommitPending, attemptSucceeded, attemptFailed, attemptKilled}
	legal := map[[2]attemptState]bool{
		{attemptRunning, attemptCommitPending}: true, {attemptRunning, attemptSucceeded}: true,
		{attemptRunning, attemptFailed}: true, {attemptRunning, attemptKilled}: true,
		{attemptCommitPending, attemptSucceeded}: true, {attemptCommitPending, attemptFailed}: true,
		{attemptCommitPending, attemptKilled}: true,
		{attemptSucceeded, attemptFailed}:     true, // its map output could not be fetched
	}
	for _, from := range all {
		for _, to := range all {
			a := &attempt{id: "attempt_x_0001_m_000000_0", state: from, task: &task{job: &job{}}}
			err := a.to(to)
			if legal[[2]attemptState{from, to}] {
				if err != nil || a.state != to {
					t.Errorf("%v -> %v: %v, state %v", from, to, err, a.state)
				}
				continue
			}
			var te *TransitionError
			if !errors.As(err, &te) || a.state != from {
				t.Errorf("%v -> %v: got %v, state %v; want a TransitionError and no change", from, to, err, a.state)
				continue
			}
			want := "attempt attempt_x_0001_m_000000_0: illegal state change from " + from.String() + " to " + to.String()
			if err.Error() != want {
				t.Errorf("error %q, want %q", err, want)
			}
		}
	}
}

func TestTaskAndJobTransitions(t *testing.T) {
	j := &job{id: "job_x_0001"}
	tk := &task{job: j, index: 3}
	steps := []struct {
		to taskState
		ok bool
	}{
		{taskRunning, true}, {taskRunning, false}, {taskPending, true}, {taskRunning, true},
		{taskSucceeded, true}, {taskKilled, false}, {taskPending, true}, // a lost map output
		{taskFailed, true}, {taskPending, false}, {taskKilled, false},
	}
	for i, s := range steps {
		from := tk.state
		err := tk.to(s.to)
		if (err == nil) != s.ok {
			t.Errorf("step %d: task %v -> %v: %v, want ok=%v", i, from, s.to, err, s.ok)
		}
	}
	if err := j.to(jobKilled); err != nil {
		t.Fatal(err)
	}
	if err := j.to(jobSucceeded); err == nil || err.Error() != "job job_x_0001: illegal state change from KILLED to SUCCEEDED" {
		t.Errorf("a killed job succeeding: %v", err)
	}
	if !j.done() {
		t.Error("a killed job is not done")
	}
}
