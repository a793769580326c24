package jobtracker

// The expiry pass (expirePassLocked) declares lost the trackers silent for
// longer than mapreduce.jobtracker.expire.trackers.interval and fails the
// launches not acknowledged for that long. It used to walk every tracker
// and every attempt on it, under the lock (about 10 ms of CPU at 10,000
// trackers), every heartbeat interval. Now both are kept in the order in
// which they become due, so that a pass looks at what is due and stops at
// the first that is not: O(expired), not O(trackers + attempts).
//
//   - seen lists the live trackers by their last heartbeat: a heartbeat
//     moves its tracker to the back, so the front is the one silent the
//     longest (with a clock that does not go back, the order of lastSeen).
//   - launches lists the attempts whose launch is not acknowledged yet, in
//     launch order (attempt start); an attempt leaves it when the tracker
//     acknowledges the reply that carried the launch, or when it ends.

import (
	"container/list"
	"fmt"
	"time"
)

// seenLocked records a heartbeat of t at its lastSeen.
func (jt *JobTracker) seenLocked(t *trackerState) {
	if t.seen == nil {
		t.seen = jt.seen.PushBack(t)
		return
	}
	jt.seen.MoveToBack(t.seen)
}

// forgetTrackerLocked takes a tracker that is no longer live off the list.
func (jt *JobTracker) forgetTrackerLocked(t *trackerState) {
	if t.seen != nil {
		jt.seen.Remove(t.seen)
		t.seen = nil
	}
}

// launchPendingLocked puts a new attempt on the unacknowledged launches.
func (jt *JobTracker) launchPendingLocked(a *attempt) {
	a.unacked = jt.launches.PushBack(a)
}

// launchDoneLocked takes a off the unacknowledged launches (acknowledged,
// or ended).
func (jt *JobTracker) launchDoneLocked(a *attempt) {
	if a.unacked != nil {
		jt.launches.Remove(a.unacked)
		a.unacked = nil
	}
}

// launchesAcknowledgedLocked takes off the list the attempts on t whose
// launch went out in a reply t has now acknowledged (O(t's attempts)).
func (jt *JobTracker) launchesAcknowledgedLocked(t *trackerState) {
	for _, a := range t.attempts {
		if a.unacked != nil && a.sentIn != 0 && a.sentIn <= t.acked {
			jt.launchDoneLocked(a)
		}
	}
}

// expireDueLocked declares lost the trackers silent for longer than the
// expiry and fails the launches unacknowledged for longer than it.
func (jt *JobTracker) expireDueLocked(now time.Time, expiry time.Duration) {
	for e := jt.seen.Front(); e != nil; e = jt.seen.Front() {
		t := e.Value.(*trackerState)
		if now.Sub(t.lastSeen) <= expiry {
			break
		}
		jt.log.Warn("lost tracker", "tracker", t.name, "silent", now.Sub(t.lastSeen).Round(time.Millisecond))
		jt.lostTrackerLocked(t, "Lost task tracker: "+t.name) // takes it off the list
		if t.seen != nil {
			jt.forgetTrackerLocked(t) // whatever lostTrackerLocked did
		}
	}
	for e := jt.launches.Front(); e != nil; e = jt.launches.Front() {
		a := e.Value.(*attempt)
		if now.Sub(a.start) <= expiry {
			break
		}
		jt.launchDoneLocked(a)
		t := jt.trackers[a.tracker]
		if !a.live() || t == nil || (a.sentIn != 0 && a.sentIn <= t.acked) {
			continue
		}
		jt.log.Warn("launch never acknowledged", "attempt", a.id, "tracker", t.name, "for", now.Sub(a.start).Round(time.Millisecond))
		jt.failAttemptLocked(a, fmt.Sprintf("Error launching task: tracker %s did not acknowledge the launch for %s", t.name, now.Sub(a.start).Round(time.Second)))
	}
}

// dueLists are the expiry pass's ordered lists (see above).
type dueLists struct {
	seen     list.List // of *trackerState
	launches list.List // of *attempt
}
