package jobtracker

// Trackers as client calls and pages read them. ListTrackers, the web UI's
// cluster and tracker pages, /api/cluster and the /metrics gauges used to
// walk every tracker and its attempts under the lock (about 10 ms at
// 10,000 trackers), and heartbeats queued behind them. Now each tracker's
// row (trackerRow: what those readers show of it) is published by the
// writers: whatever changes a tracker under the lock (its heartbeat, an
// attempt of it changing state, a launch on it, its blacklisting or its
// faults, its loss) marks it, and the lock's release (jt.unlock) rebuilds
// the rows of the marked trackers, O(their attempts), and stores them in a
// concurrent map that readers range over without the lock.
//
// Staleness: none beyond the lock. A row is the tracker as of the last
// release of the lock that followed a change of it; each row is
// consistent (built under one hold), and rows of different trackers may
// be of different releases (a reader ranging while a batch publishes sees
// some trackers before it and some after), as trackers heartbeating at
// different times are anyway.

import (
	"sort"
	"sync"
	"time"

	"gomr/partitions"
)

// trackerRow is one tracker as readers see it; immutable once stored.
type trackerRow struct {
	// info has everything but LastHeartbeatAgeSeconds, which depends on
	// the reader's time.
	info     TrackerInfo
	lastSeen time.Time
	// faults are its faults within the blacklist window (blacklist.go).
	faults int
	// busy counts its live attempts that hold their slot, by task type
	// (not a checkpointed victim that freed its slot before its dump
	// ended: holdsSlot).
	busy [2]int
}

// trackerRows is the published rows, by tracker name.
type trackerRows struct {
	rows  sync.Map // string -> *trackerRow
	dirty map[string]struct{}
}

// trackerChangedLocked marks a tracker's row for publication at the
// lock's release.
func (jt *JobTracker) trackerChangedLocked(name string) {
	if jt.published.dirty == nil {
		jt.published.dirty = map[string]struct{}{}
	}
	jt.published.dirty[name] = struct{}{}
}

// publishLocked stores the rows of the trackers changed since the last
// call (deletes those of trackers gone); jt.unlock calls it before
// releasing the lock.
func (jt *JobTracker) publishLocked() {
	for name := range jt.published.dirty {
		if t := jt.trackers[name]; t != nil {
			jt.published.rows.Store(name, jt.trackerRowLocked(t))
		} else {
			jt.published.rows.Delete(name)
		}
	}
	clear(jt.published.dirty)
}

// trackerRowLocked builds t's row.
func (jt *JobTracker) trackerRowLocked(t *trackerState) *trackerRow {
	r := &trackerRow{
		info: TrackerInfo{
			Name: t.name, Host: t.host, ShuffleAddress: t.shuffleAddr,
			MapSlots: t.mapSlots, ReduceSlots: t.reduceSlots,
			RunningAttempts: []string{},
			LastHeartbeat:   utc(t.lastSeen),
			CRIU:            t.criu,
			Blacklisted:     t.blacklisted,
			BlacklistReason: t.blacklistReason,
			LostReplies:     t.lostReplies,
		},
		lastSeen: t.lastSeen,
		faults:   len(jt.faults[t.name]),
	}
	for id, a := range t.attempts {
		if !a.live() {
			continue
		}
		r.info.RunningAttempts = append(r.info.RunningAttempts, id)
		if a.holdsSlot() {
			r.busy[a.task.typ]++
		}
		if a.task.typ == partitions.Map {
			r.info.RunningMaps++
		} else {
			r.info.RunningReduces++
		}
	}
	sort.Strings(r.info.RunningAttempts)
	return r
}

// trackerRowsNow is every live tracker's row, sorted by name; it takes
// no lock.
func (jt *JobTracker) trackerRowsNow() []*trackerRow {
	var out []*trackerRow
	jt.published.rows.Range(func(_, v any) bool {
		out = append(out, v.(*trackerRow))
		return true
	})
	sort.Slice(out, func(a, b int) bool { return out[a].info.Name < out[b].info.Name })
	return out
}

// trackerRow is one tracker's row (nil if it is not live); no lock.
func (jt *JobTracker) trackerRowNow(name string) *trackerRow {
	v, ok := jt.published.rows.Load(name)
	if !ok {
		return nil
	}
	return v.(*trackerRow)
}
