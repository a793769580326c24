package jobtracker

import (
	"fmt"

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
type mapEventLog struct {
	wire []byte
	ends []int                 // ends[i] is where event i's bytes end in wire
	segs []mrpb.PackedSegments // segs[i] is all partitions' segments of event i's spill, or zero
}

// Len is the number of events.
func (l *mapEventLog) Len() int { return len(l.ends) }

// append adds ev, whose spill's segments are segs (zero: none). ev's own
// Segment, if any, is not kept: a reply carries the asking reduce's.
func (l *mapEventLog) append(ev *mrpb.MapEvent, segs packedSpill) {
	b := l.wire
	b = appendString(b, fieldEventKind, ev.Kind)
	b = appendInt(b, fieldEventMapTask, int64(ev.MapTask))
	b = appendInt(b, fieldEventSpill, int64(ev.Spill))
	if ev.Final {
		b = protowire.AppendTag(b, fieldEventFinal, protowire.VarintType)
		b = protowire.AppendVarint(b, 1)
	}
	b = appendString(b, fieldEventAttemptID, ev.AttemptId)
	b = appendString(b, fieldEventShuffleAddress, ev.ShuffleAddress)
	l.wire = b
	l.ends = append(l.ends, len(b))
	l.segs = append(l.segs, segs.PackedSegments)
}

// slice is events [from, to): a view that stays valid, and unchanged, while
// later events are appended, so that a reply is built from it off the
// JobTracker's lock.
func (l *mapEventLog) slice(from, to int) mapEventSlice {
	s := mapEventSlice{ends: l.ends[from:to:to], segs: l.segs[from:to:to]}
	if from > 0 {
		s.start = l.ends[from-1]
	}
	if to > 0 {
		s.wire = l.wire[:l.ends[to-1]:l.ends[to-1]]
	}
	return s
}

// mapEventSlice is a run of an mapEventLog's events (mapEventLog.slice).
type mapEventSlice struct {
	wire  []byte // the log's bytes up to the run's last event's end
	start int    // where the run's first event begins in wire
	ends  []int
	segs  []mrpb.PackedSegments
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

// event is event i as a message, without a segment.
func (s mapEventSlice) event(i int) *mrpb.MapEvent {
	ev := &mrpb.MapEvent{}
	if err := proto.Unmarshal(s.fields(i), ev); err != nil {
		// The log holds only what append encoded.
		panic(fmt.Sprintf("jobtracker: map event %d of the log does not decode: %v", i, err))
	}
	return ev
}
