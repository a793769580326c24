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
	"slices"
	"sort"
	"sync"
	"sync/atomic"
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

// trackerRows is the published rows, by tracker name, and what the pages
// need to show a page of them without walking them all: the totals, the
// lost trackers, and a generation that changes with the set of live
// trackers (for the sorted index of names, trackerNamesNow).
type trackerRows struct {
	rows  sync.Map // string -> *trackerRow
	dirty map[string]struct{}

	// lost are the trackers declared lost (or gone otherwise) and not
	// back, by name (string -> *lostRow), at most maxLostTrackers, the
	// oldest forgotten first; lostOrder is the order they were lost in
	// (an entry whose seq is not the map's is stale), lostSeq numbers
	// them. lostOrder and lostSeq are guarded by jt.mu.
	lost      sync.Map
	lostOrder []lostRef
	lostSeq   uint64

	// totals are summed as rows change, under jt.mu; published is the
	// copy readers load (immutable once stored).
	totals    trackerTotals
	published atomic.Pointer[trackerTotals]

	// gen changes when a tracker joins or leaves the rows; index caches
	// the names sorted, tagged with the gen they were read at.
	gen   atomic.Uint64
	index atomic.Pointer[nameIndex]
}

// maxLostTrackers bounds the lost trackers the JobTracker remembers for
// the pages (/trackers?state=lost): a cluster's worth.
const maxLostTrackers = 10000

// lostRow is a tracker that is no longer live: its last row and when it
// left.
type lostRow struct {
	row *trackerRow
	at  time.Time
	seq uint64
}

// lostRef is an entry of trackerRows.lostOrder.
type lostRef struct {
	name string
	seq  uint64
}

// nameIndex is the live trackers' names, sorted, as of generation gen.
type nameIndex struct {
	gen   uint64
	names []string
}

// trackerTotals are the sums over the live trackers' rows (and the count
// of lost ones) that the cluster page, /api/cluster and /metrics show.
type trackerTotals struct {
	counts TrackerCounts
	// slots, running and occupied are by task type: the slots, the live
	// attempts, and the slots held by live attempts (at most a tracker's
	// slots).
	slots, running, occupied [2]int
}

// add adds a row's part to the totals (sign -1 takes it away).
func (s *trackerTotals) add(r *trackerRow, sign int) {
	s.counts.Live += sign
	switch {
	case r.info.Blacklisted:
		s.counts.Blacklisted += sign
	case r.faults > 0:
		s.counts.Graylisted += sign
	}
	s.slots[0] += sign * r.info.MapSlots
	s.slots[1] += sign * r.info.ReduceSlots
	s.running[0] += sign * r.info.RunningMaps
	s.running[1] += sign * r.info.RunningReduces
	s.occupied[0] += sign * min(r.busy[0], r.info.MapSlots)
	s.occupied[1] += sign * min(r.busy[1], r.info.ReduceSlots)
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
//
// It keeps the totals (a row's old part out, its new part in), moves a
// tracker that left to the lost ones (and one that comes back out of
// them), and advances the generation when the set of live trackers
// changed.
func (jt *JobTracker) publishLocked() {
	p := &jt.published
	if len(p.dirty) == 0 {
		return
	}
	joinedOrLeft := false
	for name := range p.dirty {
		if t := jt.trackers[name]; t != nil {
			r := jt.trackerRowLocked(t)
			p.totals.add(r, 1)
			if old, loaded := p.rows.Swap(name, r); loaded {
				p.totals.add(old.(*trackerRow), -1)
				continue
			}
			joinedOrLeft = true
			if _, was := p.lost.LoadAndDelete(name); was {
				p.totals.counts.Lost--
			}
		} else if old, loaded := p.rows.LoadAndDelete(name); loaded {
			joinedOrLeft = true
			r := old.(*trackerRow)
			p.totals.add(r, -1)
			p.lostSeq++
			p.lost.Store(name, &lostRow{row: r, at: jt.now(), seq: p.lostSeq})
			p.lostOrder = append(p.lostOrder, lostRef{name, p.lostSeq})
			p.totals.counts.Lost++
		}
	}
	clear(p.dirty)
	for p.totals.counts.Lost > maxLostTrackers {
		ref := p.lostOrder[0]
		p.lostOrder = p.lostOrder[1:]
		if v, ok := p.lost.Load(ref.name); ok && v.(*lostRow).seq == ref.seq {
			p.lost.Delete(ref.name)
			p.totals.counts.Lost--
		}
	}
	if len(p.lostOrder) > 2*max(p.totals.counts.Lost, 64) {
		p.lostOrder = compactLost(p)
	}
	totals := p.totals
	p.published.Store(&totals)
	if joinedOrLeft {
		p.gen.Add(1)
	}
}

// compactLost drops the stale entries of the lost trackers' order (those
// of trackers that came back, or were lost again since).
func compactLost(p *trackerRows) []lostRef {
	out := make([]lostRef, 0, p.totals.counts.Lost)
	for _, ref := range p.lostOrder {
		if v, ok := p.lost.Load(ref.name); ok && v.(*lostRow).seq == ref.seq {
			out = append(out, ref)
		}
	}
	return out
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

// trackerTotalsNow are the published totals; no lock.
func (jt *JobTracker) trackerTotalsNow() trackerTotals {
	if t := jt.published.published.Load(); t != nil {
		return *t
	}
	return trackerTotals{}
}

// trackerNamesNow is the live trackers' names, sorted; no lock. The sorted
// index is rebuilt (O(trackers log trackers)) only after a tracker joined
// or left since the last reader built it, so that a page of the trackers
// by name costs O(page) while the cluster's membership holds still. The
// slice is shared: callers must not change it.
func (jt *JobTracker) trackerNamesNow() []string {
	p := &jt.published
	gen := p.gen.Load()
	if ix := p.index.Load(); ix != nil && ix.gen == gen {
		return ix.names
	}
	var names []string
	p.rows.Range(func(name, _ any) bool {
		names = append(names, name.(string))
		return true
	})
	slices.Sort(names)
	// Tagged with the generation read before the walk: a change during
	// the walk makes the next reader build it again.
	p.index.Store(&nameIndex{gen: gen, names: names})
	return names
}
