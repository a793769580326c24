package jobtracker

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"gomr/mrpb"
)

// mapEventLog is a job's map events, the log its reduces read (GetMapEvents),
// append-only. Each event is kept as its own fields already encoded as a
// MapEvent message (kind, map task, spill, final, attempt, shuffle
// address; never a segment), back to back in one byte slice, with its
// spill's packed segments beside it: a reply appends each event's bytes as
// they are and the asking reduce's segment (encodedMapEvents). Kept as
// messages, each event was a pointer to a message and two strings, three
// places in memory to load for each of the M x R deliveries of a job, and
// as many objects for the collector to scan.
//
// Each event is kept a second time in the compact form that reduces of
// this build ask for (MapEventsRequest.compact): without its kind when it
// is SPILL_READY, its attempt by number when its id is the JobTracker's
// usual one (mrpb.MapAttemptID), and its shuffle address by an index into
// the job's addresses, which a reply turns into an index into its own
// table (encodedCompactMapEvents). About 12 bytes an event instead of 80:
// every reduce reads every event, so that is most of the bytes a job of
// many maps and reduces sends its reduces.
type mapEventLog struct {
	wire []byte
	ends []int                 // ends[i] is where event i's bytes end in wire
	segs []mrpb.PackedSegments // segs[i] is all partitions' segments of event i's spill, or zero

	compact     []byte
	compactEnds []int   // compactEnds[i] is where event i's compact bytes end
	addrs       []int32 // addrs[i] is event i's index in addrNames, -1 for none
	addrNames   []string
	addrIndex   map[string]int32
	// addrTable numbers addrNames for the reduces that keep them between
	// replies (mrpb.JobAddresses): nonzero, and another for every log, so
	// that one built anew after a restart is not taken for this one.
	addrTable uint64

	// pages keeps the compact replies of full pages without segments.
	pages *compactPages
}

// compactPages are the compact replies (their encoded events) of a job's
// full pages of events that carry no segment: events [from,
// from+MaxMapEventsPerCall) with no spill's segments are the same reply
// for every reduce, and the log never changes them, so that a thousand
// reduces paging through a job of 100,000 maps announced by spills share
// one encoding of each page instead of making one each. Kept until the job
// retires, in each of the two forms asked for: about 12 bytes an event
// with the addresses numbered in the job's table, which the reply then
// sends apart (mrpb.JobAddresses); some 23 bytes an event with 10,000
// trackers in the form that lists in each page the addresses it names
// (reduces from before job tables).
type compactPages struct {
	mu     sync.Mutex
	byFrom map[pageKey]compactPage
}

// pageKey names a kept page: its first event and its form.
type pageKey struct {
	from int
	job  bool // addresses numbered in the job's table
}

// compactPage is a kept page: its encoded events (and, in the form
// without the job's table, its addresses), and in the job's form the
// job's addresses up to the last its events name.
type compactPage struct {
	b     []byte
	names int
}

// get returns the encoded page starting at from in the job's form or not,
// if kept.
func (p *compactPages) get(from int, job bool) (compactPage, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	pg, ok := p.byFrom[pageKey{from, job}]
	return pg, ok
}

// put keeps the encoded page starting at from in the job's form or not.
func (p *compactPages) put(from int, job bool, pg compactPage) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.byFrom == nil {
		p.byFrom = map[pageKey]compactPage{}
	}
	p.byFrom[pageKey{from, job}] = pg
}

// Len is the number of events.
func (l *mapEventLog) Len() int { return len(l.ends) }

// append adds ev, an event of job jobID whose spill's segments are segs
// (zero: none). ev's own Segment, if any, is not kept: a reply carries the
// asking reduce's.
func (l *mapEventLog) append(jobID string, ev *mrpb.MapEvent, segs packedSpill) {
	b := l.wire
	b = appendString(b, fieldEventKind, ev.Kind)
	b = appendPlace(b, ev)
	b = appendString(b, fieldEventAttemptID, ev.AttemptId)
	b = appendString(b, fieldEventShuffleAddress, ev.ShuffleAddress)
	l.wire = b
	l.ends = append(l.ends, len(b))
	l.segs = append(l.segs, segs.PackedSegments)

	c := l.compact
	if ev.Kind != "SPILL_READY" {
		c = appendString(c, fieldEventKind, ev.Kind)
	}
	c = appendPlace(c, ev)
	if n, ok := attemptNumber(jobID, ev); ok {
		c = appendInt(c, fieldEventAttempt, int64(n)+1)
	} else {
		c = appendString(c, fieldEventAttemptID, ev.AttemptId)
	}
	l.compact = c
	l.compactEnds = append(l.compactEnds, len(c))
	a := int32(-1)
	if ev.ShuffleAddress != "" {
		var ok bool
		if a, ok = l.addrIndex[ev.ShuffleAddress]; !ok {
			if l.addrIndex == nil {
				l.addrIndex = map[string]int32{}
			}
			a = int32(len(l.addrNames))
			l.addrNames = append(l.addrNames, ev.ShuffleAddress)
			l.addrIndex[ev.ShuffleAddress] = a
		}
	}
	l.addrs = append(l.addrs, a)
	if l.pages == nil {
		l.pages = &compactPages{}
		l.addrTable = rand.Uint64() | 1
	}
}

// appendPlace appends ev's map task, spill and final mark, as both of the
// log's forms have them.
func appendPlace(b []byte, ev *mrpb.MapEvent) []byte {
	b = appendInt(b, fieldEventMapTask, int64(ev.MapTask))
	b = appendInt(b, fieldEventSpill, int64(ev.Spill))
	if ev.Final {
		b = protowire.AppendTag(b, fieldEventFinal, protowire.VarintType)
		b = protowire.AppendVarint(b, 1)
	}
	return b
}

// attemptNumber is the number of ev's map attempt, if its id is the one
// mrpb.MapAttemptID gives that number (the JobTracker's usual id), so that
// a compact reply can name it by number.
func attemptNumber(jobID string, ev *mrpb.MapEvent) (int, bool) {
	id := ev.AttemptId
	i := strings.LastIndexByte(id, '_')
	if i < 0 {
		return 0, false
	}
	n, err := strconv.Atoi(id[i+1:])
	if err != nil || n < 0 || n >= math.MaxInt32 || mrpb.MapAttemptID(jobID, int(ev.MapTask), n) != id {
		return 0, false
	}
	return n, true
}

// slice is events [from, to): a view that stays valid, and unchanged, while
// later events are appended, so that a reply is built from it off the
// JobTracker's lock.
func (l *mapEventLog) slice(from, to int) mapEventSlice {
	s := mapEventSlice{from: from, pages: l.pages, addrTable: l.addrTable, ends: l.ends[from:to:to], segs: l.segs[from:to:to],
		compactEnds: l.compactEnds[from:to:to], addrs: l.addrs[from:to:to], addrNames: l.addrNames[:len(l.addrNames):len(l.addrNames)]}
	if from > 0 {
		s.start = l.ends[from-1]
		s.compactStart = l.compactEnds[from-1]
	}
	if to > 0 {
		s.wire = l.wire[:l.ends[to-1]:l.ends[to-1]]
		s.compact = l.compact[:l.compactEnds[to-1]:l.compactEnds[to-1]]
	}
	return s
}

// mapEventSlice is a run of an mapEventLog's events (mapEventLog.slice).
type mapEventSlice struct {
	wire  []byte // the log's bytes up to the run's last event's end
	start int    // where the run's first event begins in wire
	ends  []int
	segs  []mrpb.PackedSegments

	from  int           // the run's first event's index in the log
	pages *compactPages // the log's

	compact      []byte // the log's compact bytes up to the run's last event's end
	compactStart int
	compactEnds  []int
	addrs        []int32
	addrNames    []string // the job's addresses when the run was taken
	addrTable    uint64   // the log's
}

// Len is the number of events.
func (s mapEventSlice) Len() int { return len(s.ends) }

// fields is event i's own fields, encoded.
func (s mapEventSlice) fields(i int) []byte {
	start := s.start
	if i > 0 {
		start = s.ends[i-1]
	}
	return s.wire[start:s.ends[i]]
}

// compactFields is event i's own fields in the compact form, without its
// address.
func (s mapEventSlice) compactFields(i int) []byte {
	start := s.compactStart
	if i > 0 {
		start = s.compactEnds[i-1]
	}
	return s.compact[start:s.compactEnds[i]]
}

// event is event i as a message, without a segment.
func (s mapEventSlice) event(i int) *mrpb.MapEvent {
	ev := &mrpb.MapEvent{}
	if err := proto.Unmarshal(s.fields(i), ev); err != nil {
		// The log holds only what append encoded.
		panic(fmt.Sprintf("jobtracker: map event %d of the log does not decode: %v", i, err))
	}
	return ev
}
