package shuffle

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"time"

	"gomr/mr"
	"gomr/spill"
)

// EventKind says what an Event announces.
type EventKind int

// Event kinds. They start at 1 so that a zero Event is refused rather than
// taken for an announcement.
const (
	// SpillReady: the spill in Event.Location can be fetched from now on.
	SpillReady EventKind = iota + 1
	// MapObsolete: the outputs of attempt Event.AttemptID of map
	// Event.MapTask are gone (its tracker was lost or the map is re-run).
	MapObsolete
	// MapsAdded: the job has Event.MapTask maps now (more than before: a
	// scale-up split cut a map's remainder into new maps, docs/split.md);
	// the shuffle waits for the new ones too.
	MapsAdded
)

// String returns the kind's name.
func (k EventKind) String() string {
	switch k {
	case SpillReady:
		return "SpillReady"
	case MapObsolete:
		return "MapObsolete"
	case MapsAdded:
		return "MapsAdded"
	}
	return fmt.Sprintf("EventKind(%d)", int(k))
}

// Event is one map-output event from the JobTracker.
type Event struct {
	Kind EventKind
	// Location (SpillReady) is where (MapTask, Spill) can be fetched from
	// now on.
	Location SpillLocation
	// MapTask and AttemptID (MapObsolete) name the attempt whose outputs are
	// gone; an empty AttemptID means every attempt of MapTask. MapTask
	// (MapsAdded) is the job's new number of maps.
	MapTask   int
	AttemptID string
}

// EventSource is the reducer's view of the JobTracker.
type EventSource interface {
	// MapEvents returns the events numbered from `from` on (possibly none),
	// waiting up to about a second for new ones; the caller passes
	// from+len(previous) next time. It must return when ctx is done.
	MapEvents(ctx context.Context, from int) ([]Event, error)
	// ReportFetchFailure tells the JobTracker a segment could not be
	// fetched.
	ReportFetchFailure(ctx context.Context, loc SpillLocation, cause error) error
}

// Options configure Run.
type Options struct {
	// Reduce is this reduce task's partition.
	Reduce int
	// NumMaps is the job's number of map tasks.
	NumMaps int
	// Parallel is the most fetch requests in flight
	// (mapreduce.reduce.shuffle.parallelcopies); at least 1.
	Parallel int
	// BatchSegments, if more than 1, makes each request fetch up to that
	// many segments from one host (Fetcher.FetchBatch, BatchPath); 0 or 1
	// fetches one segment per request (Fetcher.Fetch, Path).
	// (mapreduce.reduce.shuffle.batch.segments; at most MaxBatchSegments.)
	BatchSegments int
	// BatchBytes, if positive, bounds the announced bytes of the segments
	// of one batched request; a segment larger than it goes alone
	// (mapreduce.reduce.shuffle.batch.bytes).
	BatchBytes int64
	// Fetcher fetches and verifies segments; required.
	Fetcher *Fetcher
	// Merger receives every fetched segment; required.
	Merger *MergeManager
	// Counters receives REDUCE_SHUFFLE_BYTES (segment bytes fetched),
	// SHUFFLED_MAPS (map tasks all of whose spills were fetched) and
	// FAILED_SHUFFLE (fetches that failed after the Fetcher's own retries)
	// in group mr.TaskCounterGroup, and one count per failure by cause in
	// group mr.ShuffleErrorsGroup (CONNECTION, IO_ERROR, CHECKSUM,
	// WRONG_LENGTH, NOT_FOUND, AUTHENTICATION). May be nil.
	Counters *mr.Counters
	// Progress, if set, is called with the number of map tasks fully
	// fetched each time it grows (and once at the start).
	Progress func(fetchedMaps, totalMaps int)
	// Log may be nil.
	Log *slog.Logger
	// MaxFetchFailures, if positive, makes Run give up when one segment
	// has failed that many times in a row from the same attempt (a new
	// announcement from another attempt starts the count again). Zero
	// means keep retrying until the JobTracker announces a new location or
	// ctx ends.
	MaxFetchFailures int
}

// ErrNondeterministic: an attempt of a map task announced a spill that
// contradicts one this reduce fetched from another attempt of the map (a
// different segment, or another final spill index: the attempts cut the
// map's output differently), so the reduce cannot go on without mixing
// the two attempts' outputs. It is not the reduce's fault: a new attempt
// of the reduce, reading the event log from the start, fetches only the
// spills that were not withdrawn (the child reports it KILLED, which
// does not count against mapreduce.reduce.maxattempts while the
// JobTracker has seen as many map re-runs differ).
var ErrNondeterministic = errors.New("shuffle: map output is not deterministic")

// Names of the counters in group mr.ShuffleErrorsGroup.
const (
	ShuffleErrConnection = "CONNECTION"
	ShuffleErrIO         = "IO_ERROR"
	ShuffleErrChecksum   = "CHECKSUM"
	ShuffleErrWrongLen   = "WRONG_LENGTH"
	ShuffleErrNotFound   = "NOT_FOUND"
	ShuffleErrAuth       = "AUTHENTICATION"
)

// Back-off of Run's own retries: RetryDelay * 2^(failures-1), with this
// floor and at most maxBackoffShift doublings.
const (
	minRunBackoff   = 10 * time.Millisecond
	maxBackoffShift = 6
	// pollRetries is how many consecutive MapEvents failures Run tolerates.
	pollRetries   = 5
	pollBackoff   = 50 * time.Millisecond
	minPollPeriod = 10 * time.Millisecond
)

// Run fetches, for every map task m in [0, NumMaps), every spill 0..final
// of m (the final index is known once the spill with Final=true has been
// seen), exactly once each, with at most Parallel requests in flight, and
// hands each to Merger.Add. Segments announced with no records and no bytes
// are handed over without a request.
//
// Segments wait in one queue per host. Each free fetcher takes the host
// with the fewest requests in flight (so fetchers spread over hosts) and,
// with BatchSegments > 1, as many of that host's waiting segments as
// BatchSegments and BatchBytes allow, in one request; a segment that fails
// in a batch is counted, reported and retried on its own, the others of
// the batch are kept.
//
// It returns nil when all are fetched, ctx's error when ctx ends, or an
// error on anything it cannot recover from: a Merger.Add failure, an
// announcement that contradicts a segment fetched (ErrNondeterministic,
// below), events out of range, MapEvents failing repeatedly, or
// MaxFetchFailures reached.
//
// A failed fetch is counted, reported with ReportFetchFailure, and retried
// later with back-off from the newest location announced for that (m, k).
// A MapObsolete event for attempt A withdraws A's announcements of the
// spills not fetched yet: they wait for a new announcement (the re-run's),
// and what only A announced (its final spill index, say) no longer binds.
// The spills fetched from A stay: a re-run's announcement of one of them
// must have the same segment (records, lengths, CRC32C, final mark), and
// its spills must end where the fetched ones say (not before a spill
// fetched, not after one fetched as final), or Run stops with
// ErrNondeterministic naming the map, the spill, both attempts and what
// differs: the reduce would otherwise drop or duplicate records. Once
// every spill of a map is fetched the reduce holds one complete output of
// the map, and later announcements for it are ignored (a differing one is
// logged), as in Hadoop, where each reduce fetches a map's whole output
// from one attempt. Run waits for the goroutines it started before it
// returns.
func Run(ctx context.Context, src EventSource, opts Options) error {
	switch {
	case src == nil:
		return errors.New("shuffle run: no event source")
	case opts.Fetcher == nil:
		return errors.New("shuffle run: Options.Fetcher is nil")
	case opts.Merger == nil:
		return errors.New("shuffle run: Options.Merger is nil")
	case opts.Parallel < 1:
		return fmt.Errorf("shuffle run: Options.Parallel=%d, must be at least 1", opts.Parallel)
	case opts.NumMaps < 0:
		return fmt.Errorf("shuffle run: Options.NumMaps=%d is negative", opts.NumMaps)
	case opts.Reduce < 0:
		return fmt.Errorf("shuffle run: Options.Reduce=%d is negative", opts.Reduce)
	case opts.BatchSegments < 0 || opts.BatchSegments > MaxBatchSegments:
		return fmt.Errorf("shuffle run: Options.BatchSegments=%d, want 0 to %d", opts.BatchSegments, MaxBatchSegments)
	case opts.BatchBytes < 0:
		return fmt.Errorf("shuffle run: Options.BatchBytes=%d is negative", opts.BatchBytes)
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.Counters == nil {
		opts.Counters = mr.NewCounters()
	}
	r := &runner{
		src:      src,
		opts:     opts,
		log:      opts.Log.With("reduce", opts.Reduce),
		maps:     make([]mapState, opts.NumMaps),
		hostIDs:  map[string]int{},
		origins:  make([]origin, 0, opts.NumMaps),
		epoch:    time.Now(),
		cBytes:   opts.Counters.Get(mr.TaskCounterGroup, mr.ReduceShuffleBytes),
		cMaps:    opts.Counters.Get(mr.TaskCounterGroup, mr.ShuffledMaps),
		cFailed:  opts.Counters.Get(mr.TaskCounterGroup, mr.FailedShuffle),
		debugLog: opts.Log.Enabled(context.Background(), slog.LevelDebug),
	}
	for i := range r.maps {
		r.maps[i] = mapState{final: -1, maxSeen: -1, origin: -1}
	}
	return r.run(ctx)
}

type segKey struct{ m, k int }

// origin is where spills come from: a map attempt of a job on a shuffle
// server. Run keeps the origins in runner.origins (about one per map) and
// names them in the segments' states by index, so that a segment's state
// holds no pointer for the garbage collector to follow.
type origin struct {
	job, attempt, host string
}

// segState is one (map, spill)'s segment, kept by value in its map's
// mapState.segs (indexed by spill): no allocation and no map lookup per
// segment, and no pointer (the collector does not scan the segs arrays).
// It holds one location: the newest usable announcement while the spill
// is not fetched (hasLoc), then the one it was fetched from (wasFetched;
// later announcements are checked against it and not kept).
type segState struct {
	seg        spill.SegmentInfo // the location's segment
	unknown    bool              // seg is not known (SpillLocation.SegmentUnknown)
	origin     int32             // r.origins index of the location
	host       int32             // r.hosts index of the location's host
	failures   int32             // failed fetches in a row from the location's attempt
	final      bool              // the location's final mark
	hasLoc     bool
	wasFetched bool
	inFlight   bool
	queued     bool
	notBefore  int64 // no retry before this r.clock time (ns); 0: none
}

// same reports whether the segment held is the one loc announces, as far
// as can be told: a segment not known (announced without it) is taken to
// agree, as the JobTracker compared the announcements of every partition.
func (st *segState) same(loc *SpillLocation) bool {
	return st.final == loc.Final && (st.unknown || loc.SegmentUnknown || sameInfo(st.seg, loc.Segment))
}

type mapState struct {
	final   int // index of the final spill; -1 while unknown
	maxSeen int // highest spill index announced
	fetched int // spills fetched
	// inFlight is the map's segments being fetched. The map is not done
	// while one is: a fetch from an attempt withdrawn meanwhile may yet
	// bring a spill the map's other spills contradict, and its bytes are
	// merged when it arrives.
	inFlight int
	done     bool
	segs     []segState // by spill index, up to maxSeen
	origin   int32      // r.origins id of the map's last announcement, -1 before
}

// hostQueue is the segments waiting to be fetched from one host, oldest
// first, and the requests in flight to it.
type hostQueue struct {
	keys     []segKey
	inFlight int
	active   bool // in runner.active
}

// fetchItem is one segment handed to a fetcher: the location it is
// fetched from (a segState's, at the time).
type fetchItem struct {
	key     segKey
	origin  int32
	final   bool
	unknown bool // seg is not known yet (SpillLocation.SegmentUnknown)
	seg     spill.SegmentInfo
}

// batchResult is what a fetcher reports for one request: one result per
// item (bufs.items, bufs.results).
type batchResult struct {
	host int
	bufs *requestBufs
}

// requestBufs are the slices of one request, one element per segment:
// what is fetched, the results, and the fetcher's data and errors. Run
// recycles them (runner.spare) once a request's results are applied: a
// reduce makes a few requests of up to 1,024 segments to each host, and
// these are ~140 bytes a segment.
type requestBufs struct {
	items   []fetchItem
	results []fetchResult
	data    [][]byte
	errs    []error
}

// sized returns bufs' slices of n elements each, grown if they are
// shorter; results, data and errs are zero (reset clears them).
func (bufs *requestBufs) sized(n int) {
	if cap(bufs.results) < n {
		bufs.results = make([]fetchResult, n)
		bufs.data = make([][]byte, n)
		bufs.errs = make([]error, n)
	}
	bufs.results, bufs.data, bufs.errs = bufs.results[:n], bufs.data[:n], bufs.errs[:n]
}

// reset drops what bufs refer to, for their next request.
func (bufs *requestBufs) reset() {
	clear(bufs.results)
	clear(bufs.data)
	clear(bufs.errs)
	bufs.items = bufs.items[:0]
}

type fetchResult struct {
	bytes int64
	err   error
	fatal bool // a Merger failure: stop
}

type pollResult struct {
	events []Event
	err    error
}

type runner struct {
	src  EventSource
	opts Options
	log  *slog.Logger

	maps    []mapState
	hosts   []*hostQueue   // by host id, in order of first announcement
	hostIDs map[string]int // host name to id
	// origins are the locations' (job, attempt, host), by id
	// (segState.origin), and originHosts their hosts' ids.
	origins     []origin
	originHosts []int32
	epoch       time.Time // r.clock's zero
	active      []int     // hosts with waiting segments or requests in flight
	delayed     retryHeap
	inFlight    int
	spare       []*requestBufs // of requests done, for the next ones
	doneMaps    int

	// The counters Run updates, resolved once.
	cBytes, cMaps, cFailed *mr.Counter
	debugLog               bool // r.log logs at debug level
	spillsHint             int  // the most spills announced for one map
}

// seg returns the state of spill k of map m, which must have been
// announced (k <= maxSeen). The pointer is valid until a later spill of m
// is announced.
func (r *runner) seg(key segKey) *segState { return &r.maps[key.m].segs[key.k] }

// clock is the time since the run started (monotonic), in nanoseconds: a
// retry's time without a time.Time's pointer.
func (r *runner) clock() int64 { return int64(time.Since(r.epoch)) + 1 }

// originOf returns an id of loc's (job, attempt, host) for the spills of
// map mp: the map's last one if loc's is the same (a map's spills mostly
// come from one attempt), else a new one. The same origin may so have
// several ids (a map whose attempts' announcements alternate): ids are
// compared by their strings, never by value.
func (r *runner) originOf(mp *mapState, loc *SpillLocation) int32 {
	if id := mp.origin; id >= 0 {
		if o := &r.origins[id]; o.attempt == loc.AttemptID && o.host == loc.Host && o.job == loc.JobID {
			return id
		}
	}
	id := int32(len(r.origins))
	r.origins = append(r.origins, origin{job: loc.JobID, attempt: loc.AttemptID, host: loc.Host})
	r.originHosts = append(r.originHosts, int32(r.hostID(loc.Host)))
	mp.origin = id
	return id
}

// location is the SpillLocation of spill key.k of map key.m from origin o
// with segment seg (not known if unknown).
func (r *runner) location(key segKey, o int32, final bool, seg spill.SegmentInfo, unknown bool) SpillLocation {
	or := &r.origins[o]
	return SpillLocation{JobID: or.job, MapTask: key.m, Spill: key.k, Final: final, AttemptID: or.attempt, Host: or.host, Segment: seg, SegmentUnknown: unknown}
}

// itemLocation is the location a fetch item is fetched from.
func (r *runner) itemLocation(it *fetchItem) SpillLocation {
	return r.location(it.key, it.origin, it.final, it.seg, it.unknown)
}

// stateLocation is the location a segment's state holds (hasLoc or
// wasFetched).
func (r *runner) stateLocation(key segKey, st *segState) SpillLocation {
	return r.location(key, st.origin, st.final, st.seg, st.unknown)
}

func (r *runner) run(parent context.Context) (err error) {
	if r.opts.Progress != nil {
		r.opts.Progress(0, r.opts.NumMaps)
	}
	if r.opts.NumMaps == 0 {
		return nil
	}
	ctx, cancel := context.WithCancel(parent)
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
	}()
	evCh := make(chan pollResult)
	resCh := make(chan batchResult, r.opts.Parallel)
	wg.Add(1)
	go func() {
		defer wg.Done()
		r.poll(ctx, evCh)
	}()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for r.doneMaps < r.opts.NumMaps {
		now := r.clock()
		r.promote(now)
		r.dispatch(ctx, &wg, resCh, now)
		var timerC <-chan time.Time
		if at, ok := r.delayed.next(); ok {
			timer.Reset(time.Duration(at - r.clock()))
			timerC = timer.C
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("shuffle of reduce %d: %d of %d maps fetched: %w", r.opts.Reduce, r.doneMaps, r.opts.NumMaps, parent.Err())
		case p := <-evCh:
			if p.err != nil {
				return fmt.Errorf("shuffle of reduce %d: %w", r.opts.Reduce, p.err)
			}
			for i := range p.events {
				if err := r.apply(&p.events[i]); err != nil {
					return fmt.Errorf("shuffle of reduce %d: %w", r.opts.Reduce, err)
				}
			}
		case br := <-resCh:
			r.inFlight--
			r.hosts[br.host].inFlight--
			var bytes int64
			items, results := br.bufs.items, br.bufs.results
			for i := range items {
				bytes += results[i].bytes
				if err := r.complete(ctx, &items[i], results[i]); err != nil {
					r.cBytes.Add(bytes)
					return fmt.Errorf("shuffle of reduce %d: %w", r.opts.Reduce, err)
				}
			}
			r.cBytes.Add(bytes)
			br.bufs.reset()
			r.spare = append(r.spare, br.bufs)
		case <-timerC:
		}
		timer.Stop() // since Go 1.23 no stale tick is left in timer.C
	}
	return nil
}

// poll reads events from the source and passes them on until ctx ends or
// the source fails pollRetries+1 times in a row.
func (r *runner) poll(ctx context.Context, out chan<- pollResult) {
	from, fails, delay := 0, 0, pollBackoff
	for {
		start := time.Now()
		evs, err := r.src.MapEvents(ctx, from)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			fails++
			if fails > pollRetries {
				select {
				case out <- pollResult{err: fmt.Errorf("map events from %d: failed %d times, last: %w", from, fails, err)}:
				case <-ctx.Done():
				}
				return
			}
			r.log.Warn("shuffle: cannot get map events, retrying", "from", from, "delay", delay, "err", err)
			if !sleep(ctx, delay) {
				return
			}
			delay *= 2
			continue
		}
		fails, delay = 0, pollBackoff
		if len(evs) == 0 {
			// The source should wait for events itself; do not spin if it
			// does not.
			if d := minPollPeriod - time.Since(start); d > 0 && !sleep(ctx, d) {
				return
			}
			continue
		}
		from += len(evs)
		select {
		case out <- pollResult{events: evs}:
		case <-ctx.Done():
			return
		}
	}
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// sameInfo reports whether two announcements of a segment agree (its
// offset in the spill file aside).
func sameInfo(x, y spill.SegmentInfo) bool {
	return x.Length == y.Length && x.RawLength == y.RawLength && x.Records == y.Records && x.CRC == y.CRC
}

func describe(l SpillLocation) string {
	if l.SegmentUnknown {
		return fmt.Sprintf("attempt %s (final=%t, segment not announced)", l.AttemptID, l.Final)
	}
	return fmt.Sprintf("attempt %s (final=%t, length %d, raw length %d, records %d, crc %08x)",
		l.AttemptID, l.Final, l.Segment.Length, l.Segment.RawLength, l.Segment.Records, l.Segment.CRC)
}

// segmentDiff names the fields in which two announcements of one spill
// differ.
func segmentDiff(a, b SpillLocation) string {
	x, y := a.Segment, b.Segment
	var d []string
	if a.Final != b.Final {
		d = append(d, fmt.Sprintf("final %t vs %t", a.Final, b.Final))
	}
	if x.Records != y.Records {
		d = append(d, fmt.Sprintf("records %d vs %d", x.Records, y.Records))
	}
	if x.Length != y.Length {
		d = append(d, fmt.Sprintf("length %d vs %d", x.Length, y.Length))
	}
	if x.RawLength != y.RawLength {
		d = append(d, fmt.Sprintf("raw length %d vs %d", x.RawLength, y.RawLength))
	}
	if x.CRC != y.CRC {
		d = append(d, fmt.Sprintf("crc32c %08x vs %08x", x.CRC, y.CRC))
	}
	if len(d) == 0 {
		return "identical"
	}
	return strings.Join(d, ", ")
}

// apply updates the state with one event.
func (r *runner) apply(ev *Event) error {
	switch ev.Kind {
	case SpillReady:
		return r.announce(&ev.Location)
	case MapsAdded:
		for len(r.maps) < ev.MapTask {
			r.maps = append(r.maps, mapState{final: -1, maxSeen: -1, origin: -1})
		}
		r.opts.NumMaps = len(r.maps)
		return nil
	case MapObsolete:
		m := ev.MapTask
		if m < 0 || m >= len(r.maps) {
			return fmt.Errorf("MapObsolete event for map %d, but the job has %d maps", m, len(r.maps))
		}
		mp := &r.maps[m]
		if mp.done {
			// Every spill of the map is here, from attempts that agree:
			// one complete output of the map, which is all a reduce needs.
			return nil
		}
		for k := range mp.segs {
			st := &mp.segs[k]
			if st.wasFetched || !st.hasLoc {
				continue
			}
			if ev.AttemptID == "" || r.origins[st.origin].attempt == ev.AttemptID {
				st.hasLoc = false
			}
		}
		r.recount(m)
		r.log.Info("shuffle: map output obsolete", "map", m, "attempt", ev.AttemptID, "spills_fetched", mp.fetched)
		return nil
	}
	return fmt.Errorf("unknown map event kind %v", ev.Kind)
}

func (r *runner) announce(loc *SpillLocation) error {
	m, k := loc.MapTask, loc.Spill
	if m < 0 || m >= len(r.maps) {
		return fmt.Errorf("spill %d announced for map %d, but the job has %d maps", k, m, len(r.maps))
	}
	if k < 0 {
		return fmt.Errorf("map %d: spill index %d announced by attempt %s is negative", m, k, loc.AttemptID)
	}
	mp := &r.maps[m]
	if mp.done {
		// A re-run of a map this reduce has fetched whole: the reduce keeps
		// the output it has (one attempt's, or identical ones'), as
		// Hadoop's does; the JobTracker counts a re-run that differs.
		switch {
		case k > mp.final:
			r.log.Warn("shuffle: a re-run of a map fetched whole announced a spill after the final one fetched; keeping the output fetched",
				"map", m, "spill", k, "final", r.claimedAs(m, mp.final), "announced", describe(*loc))
		case !mp.segs[k].same(loc):
			r.log.Warn("shuffle: a re-run of a map fetched whole announced a different spill; keeping the output fetched",
				"map", m, "spill", k, "fetched", describe(r.stateLocation(segKey{m, k}, &mp.segs[k])), "announced", describe(*loc))
		}
		return nil
	}
	if err := r.checkFinal(loc, "announced"); err != nil {
		return err
	}
	if k < len(mp.segs) {
		if st := &mp.segs[k]; st.wasFetched && !st.same(loc) {
			fetched := r.stateLocation(segKey{m, k}, st)
			return fmt.Errorf("map %d spill %d: fetched from attempt %s, now announced by attempt %s with another segment (%s): %w",
				m, k, fetched.AttemptID, loc.AttemptID, segmentDiff(fetched, *loc), ErrNondeterministic)
		}
	}
	r.claim(m, k, loc.Final)
	st := &mp.segs[k]
	if st.wasFetched {
		return nil
	}
	if st.hasLoc && !st.same(loc) {
		r.log.Warn("shuffle: spill re-announced with a different segment before it was fetched; using the newest",
			"map", m, "spill", k, "old", describe(r.stateLocation(segKey{m, k}, st)), "new", describe(*loc))
	}
	o := r.originOf(mp, loc)
	if !st.hasLoc || st.origin != o {
		if !st.hasLoc || r.origins[st.origin].attempt != loc.AttemptID {
			st.failures = 0
			st.notBefore = 0
		}
		st.host = r.originHosts[o]
	}
	st.seg, st.unknown, st.final, st.origin, st.hasLoc = loc.Segment, loc.SegmentUnknown, loc.Final, o, true
	r.enqueue(segKey{m, k}, st)
	return r.checkMap(m)
}

// checkFinal checks spill loc.Spill of map loc.MapTask, announced or
// fetched (how), against the final spill index the map's claims give:
// the segments fetched and the announcements not withdrawn. Spills of
// attempts that cut the map's output differently (more or fewer spills)
// cannot be mixed: ErrNondeterministic, naming the spill it contradicts.
func (r *runner) checkFinal(loc *SpillLocation, how string) error {
	m, k := loc.MapTask, loc.Spill
	mp := &r.maps[m]
	switch {
	case loc.Final && mp.final >= 0 && mp.final != k:
		return fmt.Errorf("map %d: attempt %s %s spill %d as final, but %s: %w", m, loc.AttemptID, how, k, r.claimedAs(m, mp.final), ErrNondeterministic)
	case loc.Final && mp.maxSeen > k:
		return fmt.Errorf("map %d: attempt %s %s spill %d as final, but %s: %w", m, loc.AttemptID, how, k, r.claimedAs(m, mp.maxSeen), ErrNondeterministic)
	case !loc.Final && mp.final >= 0 && k >= mp.final:
		return fmt.Errorf("map %d: attempt %s %s spill %d as not final, but %s: %w", m, loc.AttemptID, how, k, r.claimedAs(m, mp.final), ErrNondeterministic)
	}
	return nil
}

// claim records that spill k of map m exists, final or not (announced,
// or fetched from an attempt since withdrawn), growing the map's spill
// states to hold it; checkFinal has passed.
func (r *runner) claim(m, k int, final bool) {
	mp := &r.maps[m]
	if final {
		mp.final = k
	}
	mp.maxSeen = max(mp.maxSeen, k)
	if k >= len(mp.segs) {
		if k < cap(mp.segs) {
			mp.segs = mp.segs[:k+1]
		} else {
			// Room for as many spills as the most a map has had so far:
			// maps of a job mostly spill alike.
			segs := make([]segState, k+1, max(k+1, r.spillsHint))
			copy(segs, mp.segs)
			mp.segs = segs
		}
		r.spillsHint = max(r.spillsHint, k+1)
	}
}

// recount sets map m's final spill index and highest spill from its
// claims alone: the segments fetched and the announcements not withdrawn.
// After a MapObsolete, what only the withdrawn attempt announced (and this
// reduce did not fetch) no longer binds the re-run, which may cut the map's
// output into other spills if nothing was fetched from the withdrawn one.
// Claims agree with each other (each was checked when it was made).
func (r *runner) recount(m int) {
	mp := &r.maps[m]
	mp.final, mp.maxSeen = -1, -1
	for k := range mp.segs {
		// The claim on spill k: the segment fetched, or else the
		// announcement not withdrawn.
		st := &mp.segs[k]
		if !st.wasFetched && !st.hasLoc {
			continue
		}
		mp.maxSeen = k
		if st.final {
			mp.final = k
		}
	}
}

// claimedAs says what this reduce holds or was told of spill k of map m,
// for an error message.
func (r *runner) claimedAs(m, k int) string {
	st := &r.maps[m].segs[k]
	if st.wasFetched {
		return fmt.Sprintf("spill %d (final=%t) was fetched from attempt %s", k, st.final, r.origins[st.origin].attempt)
	}
	return fmt.Sprintf("spill %d (final=%t) was announced by attempt %s", k, st.final, r.origins[st.origin].attempt)
}

// hostID returns the id of host, adding it on first sight.
func (r *runner) hostID(host string) int {
	id, ok := r.hostIDs[host]
	if !ok {
		id = len(r.hosts)
		r.hostIDs[host] = id
		r.hosts = append(r.hosts, &hostQueue{})
	}
	return id
}

func (r *runner) enqueue(key segKey, st *segState) {
	if !st.queued && !st.inFlight && !st.wasFetched && st.hasLoc {
		st.queued = true
		hq := r.hosts[st.host]
		hq.keys = append(hq.keys, key)
		if !hq.active {
			hq.active = true
			r.active = append(r.active, int(st.host))
		}
	}
}

// promote moves retries that are due (now, r.clock) to the ready queue.
func (r *runner) promote(now int64) {
	for {
		at, ok := r.delayed.next()
		if !ok || at > now {
			return
		}
		it := heap.Pop(&r.delayed).(retryItem)
		if st := r.seg(it.key); now >= st.notBefore {
			r.enqueue(it.key, st)
		}
	}
}

func (r *runner) dispatch(ctx context.Context, wg *sync.WaitGroup, out chan<- batchResult, now int64) {
	for r.inFlight < r.opts.Parallel {
		host := r.pickHost()
		if host < 0 {
			return
		}
		hq := r.hosts[host]
		var bufs *requestBufs
		if n := len(r.spare); n > 0 {
			bufs, r.spare = r.spare[n-1], r.spare[:n-1]
		} else {
			bufs = &requestBufs{}
		}
		bufs.items = r.takeBatch(host, hq, now, bufs.items)
		if len(bufs.items) == 0 {
			r.spare = append(r.spare, bufs)
			continue
		}
		bufs.sized(len(bufs.items))
		// The fetcher's goroutine reads r.origins as it is now: later
		// origins are appended past its length, earlier ones never
		// change.
		batch := &batchSegs{origins: r.origins, items: bufs.items}
		hq.inFlight++
		r.inFlight++
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.fetchItems(ctx, batch, bufs)
			out <- batchResult{host: host, bufs: bufs}
		}()
	}
}

// pickHost returns the id of the host with waiting segments that has the
// fewest requests in flight (the first in r.active among equals), or -1,
// and drops idle hosts with nothing waiting from r.active.
func (r *runner) pickHost() int {
	best := -1
	for i := 0; i < len(r.active); {
		id := r.active[i]
		hq := r.hosts[id]
		if len(hq.keys) == 0 {
			if hq.inFlight == 0 {
				hq.active = false
				r.active[i] = r.active[len(r.active)-1]
				r.active = r.active[:len(r.active)-1]
				continue
			}
		} else if best < 0 || hq.inFlight < r.hosts[best].inFlight {
			best = id
		}
		i++
	}
	return best
}

// takeBatch takes from host's queue the segments of one request: one
// without batching, else up to BatchSegments of at most BatchBytes
// announced bytes (at least one), appended to items (empty; its array is
// reused if it is large enough). Entries that are stale (fetched, in
// flight, obsolete), moved to another host, or not due yet are dropped
// from the queue on the way (the latter two re-queued where they belong).
func (r *runner) takeBatch(host int, hq *hostQueue, now int64, items []fetchItem) []fetchItem {
	limit := max(r.opts.BatchSegments, 1)
	if n := min(limit, len(hq.keys)); cap(items) < n {
		items = make([]fetchItem, 0, n)
	}
	var bytes int64
	for len(hq.keys) > 0 && len(items) < limit {
		key := hq.keys[0]
		st := r.seg(key)
		if !st.wasFetched && !st.inFlight && st.hasLoc && int(st.host) == host && now >= st.notBefore &&
			len(items) > 0 && r.opts.BatchBytes > 0 && bytes+st.seg.Length > r.opts.BatchBytes {
			break
		}
		hq.keys = hq.keys[1:]
		st.queued = false
		switch {
		case st.wasFetched || st.inFlight || !st.hasLoc:
			continue
		case int(st.host) != host:
			r.enqueue(key, st)
			continue
		case now < st.notBefore:
			heap.Push(&r.delayed, retryItem{at: st.notBefore, key: key})
			continue
		}
		st.inFlight = true
		r.maps[key.m].inFlight++
		items = append(items, fetchItem{key: key, origin: st.origin, final: st.final, unknown: st.unknown, seg: st.seg})
		bytes += st.seg.Length
	}
	if len(hq.keys) == 0 {
		hq.keys = nil // let the backing array go
	}
	return items
}

// fetchItems runs in its own goroutine: it fetches the segments of one
// request (one at a time without batching, else in one batch), hands
// them to the merger in order, and reports each failure to the JobTracker.
// It sets one result per item of b in bufs.results; bufs.data and
// bufs.errs (as long as b.items, nil) are its scratch. Segments announced
// without theirs are first read from the server's index (one request for
// all of them); as their sizes were not known when the request was made
// up, the items are then fetched in runs of at most BatchBytes.
func (r *runner) fetchItems(ctx context.Context, b *batchSegs, bufs *requestBufs) {
	items := b.items
	r.opts.Fetcher.resolveUnknown(ctx, b, r.opts.Reduce, bufs.errs)
	fatal := false
	for lo := 0; lo < len(items); {
		hi, bytes := lo+1, items[lo].seg.Length
		for hi < len(items) && (r.opts.BatchBytes <= 0 || bytes+items[hi].seg.Length <= r.opts.BatchBytes) {
			bytes += items[hi].seg.Length
			hi++
		}
		fatal = r.fetchRun(ctx, b, bufs, lo, hi, fatal)
		lo = hi
	}
}

// fetchRun is fetchItems of items lo to hi (excluded), after the segments'
// resolution: an item whose error is set already (it could not be
// resolved) is not fetched. fatal says an earlier run's merge failed; it
// returns whether one has now.
func (r *runner) fetchRun(ctx context.Context, b *batchSegs, bufs *requestBufs, lo, hi int, fatal bool) bool {
	items := b.items[lo:hi]
	res := bufs.results[lo:hi]
	data, errs := bufs.data[lo:hi], bufs.errs[lo:hi]
	if fatal {
		for i := range res {
			res[i].err, res[i].fatal = errors.New("not merged: an earlier segment's merge failed"), true
		}
		return true
	}
	fetchable := func(i int) bool {
		seg := &items[i].seg
		return errs[i] == nil && (seg.Records != 0 || seg.Length != 0)
	}
	// What each fetched segment holds: as announced, or a range fetch's
	// (set below where it differs).
	var segs []spill.SegmentInfo
	var announced int64
	want := 0 // items that need a request
	for i := range items {
		if fetchable(i) {
			announced += items[i].seg.Length
			want++
		}
	}
	// The fetched bytes count against the reduce's shuffle buffer from
	// the request on, until they are merged.
	release, err := r.opts.Merger.Reserve(ctx, announced)
	if err != nil {
		for i := range res {
			res[i].err, res[i].fatal = err, ctx.Err() == nil
		}
		return ctx.Err() == nil
	}
	defer release()
	switch {
	case want == 0:
	case r.opts.Fetcher.After != nil:
		segs = make([]spill.SegmentInfo, len(items))
		for i := range items {
			if fetchable(i) {
				data[i], segs[i], errs[i] = r.opts.Fetcher.FetchRange(ctx, b.loc(lo+i), r.opts.Reduce)
			} else {
				segs[i] = items[i].seg
			}
		}
	case r.opts.BatchSegments <= 1:
		for i := range items {
			if fetchable(i) {
				data[i], errs[i] = r.opts.Fetcher.Fetch(ctx, b.loc(lo+i), r.opts.Reduce)
			}
		}
	case want == len(items):
		sub := b
		if lo > 0 || hi < len(b.items) {
			sub = &batchSegs{origins: b.origins, items: items}
		}
		r.opts.Fetcher.fetchBatch(ctx, sub, r.opts.Reduce, data, errs)
	default:
		sub := batchSegs{origins: b.origins, items: make([]fetchItem, 0, want)}
		for i := range items {
			if fetchable(i) {
				sub.items = append(sub.items, items[i])
			}
		}
		d, e := make([][]byte, want), make([]error, want)
		r.opts.Fetcher.fetchBatch(ctx, &sub, r.opts.Reduce, d, e)
		n := 0
		for i := range items {
			if fetchable(i) {
				data[i], errs[i] = d[n], e[n]
				n++
			}
		}
	}
	for i := range items {
		it := &items[i]
		switch {
		case fatal:
			res[i].err, res[i].fatal = errors.New("not merged: an earlier segment's merge failed"), true
		case errs[i] != nil:
			res[i].err = errs[i]
			if ctx.Err() == nil {
				if err := r.src.ReportFetchFailure(ctx, b.loc(lo+i), errs[i]); err != nil && ctx.Err() == nil {
					r.log.Warn("shuffle: cannot report fetch failure", "map", it.key.m, "spill", it.key.k, "err", err)
				}
			}
		default:
			seg := it.seg
			if segs != nil {
				seg = segs[i]
			}
			if err := r.opts.Merger.Add(data[i], seg); err != nil {
				res[i].err, res[i].fatal = fmt.Errorf("merge map %d spill %d: %w", it.key.m, it.key.k, err), true
				fatal = true
				continue
			}
			res[i].bytes = int64(len(data[i]))
			data[i] = nil
		}
	}
	return fatal
}

// complete applies the result of one fetched item. The caller adds the
// fetched bytes to REDUCE_SHUFFLE_BYTES.
func (r *runner) complete(ctx context.Context, it *fetchItem, res fetchResult) error {
	st := r.seg(it.key)
	st.inFlight = false
	m, k := it.key.m, it.key.k
	r.maps[m].inFlight--
	if res.fatal {
		return res.err
	}
	if res.err != nil {
		if ctx.Err() != nil {
			return nil // the loop sees ctx next
		}
		r.cFailed.Increment()
		r.opts.Counters.Get(mr.ShuffleErrorsGroup, classify(res.err)).Increment()
		attempt := r.origins[it.origin].attempt
		r.log.Warn("shuffle: fetch failed", "map", m, "spill", k, "attempt", attempt, "host", r.origins[it.origin].host, "err", res.err)
		if !st.hasLoc {
			// Withdrawn: wait for a new announcement. The map may be
			// complete without this spill now (its re-run cut fewer).
			return r.checkMap(m)
		}
		if r.origins[st.origin].attempt != attempt {
			r.enqueue(it.key, st) // a newer location came while this one failed
			return nil
		}
		st.failures++
		if n := r.opts.MaxFetchFailures; n > 0 && int(st.failures) >= n {
			return fmt.Errorf("map %d spill %d: giving up after %d failed fetches from attempt %s: %w", m, k, st.failures, attempt, res.err)
		}
		base := max(r.opts.Fetcher.RetryDelay, minRunBackoff)
		st.notBefore = r.clock() + int64(base<<min(st.failures-1, maxBackoffShift))
		heap.Push(&r.delayed, retryItem{at: st.notBefore, key: it.key})
		return nil
	}
	if r.debugLog {
		r.log.Debug("shuffle: fetched", "map", m, "spill", k, "attempt", r.origins[it.origin].attempt, "bytes", res.bytes)
	}
	if st.hasLoc && (st.final != it.final || !st.unknown && !sameInfo(st.seg, it.seg)) {
		got, now := r.itemLocation(it), r.stateLocation(it.key, st)
		return fmt.Errorf("map %d spill %d: fetched from attempt %s, but announced since by attempt %s with another segment (%s): %w",
			m, k, got.AttemptID, now.AttemptID, segmentDiff(got, now), ErrNondeterministic)
	}
	if !st.hasLoc {
		// Fetched from an attempt withdrawn meanwhile: the segment is
		// merged, so it binds the map's spills like an announcement.
		got := r.itemLocation(it)
		if err := r.checkFinal(&got, "(withdrawn) had cut"); err != nil {
			return err
		}
		r.claim(m, k, it.final)
	}
	// The state holds the location fetched from from now on.
	st.seg, st.unknown, st.final, st.origin, st.wasFetched = it.seg, false, it.final, it.origin, true
	r.maps[m].fetched++
	return r.checkMap(m)
}

// checkMap counts map m as shuffled once all its spills are fetched.
func (r *runner) checkMap(m int) error {
	mp := &r.maps[m]
	if mp.done || mp.final < 0 || mp.fetched < mp.final+1 || mp.inFlight > 0 {
		return nil
	}
	if mp.fetched > mp.final+1 {
		return fmt.Errorf("map %d: fetched %d spills but its final spill is %d (internal error)", m, mp.fetched, mp.final)
	}
	mp.done = true
	r.doneMaps++
	r.cMaps.Increment()
	if r.opts.Progress != nil {
		r.opts.Progress(r.doneMaps, r.opts.NumMaps)
	}
	return nil
}

// classify names the Shuffle Errors counter for a failed fetch.
func classify(err error) string {
	var netErr net.Error
	switch {
	case errors.Is(err, ErrChecksum):
		return ShuffleErrChecksum
	case errors.Is(err, ErrSegmentMismatch):
		return ShuffleErrWrongLen
	case errors.Is(err, ErrNotFound):
		return ShuffleErrNotFound
	case errors.Is(err, ErrUnauthorized):
		return ShuffleErrAuth
	case errors.As(err, &netErr):
		return ShuffleErrConnection
	}
	return ShuffleErrIO
}

type retryItem struct {
	at  int64 // r.clock time
	key segKey
}

// retryHeap orders delayed retries by time.
type retryHeap []retryItem

func (h retryHeap) Len() int           { return len(h) }
func (h retryHeap) Less(i, j int) bool { return h[i].at < h[j].at }
func (h retryHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *retryHeap) Push(x any)        { *h = append(*h, x.(retryItem)) }
func (h *retryHeap) Pop() any {
	old := *h
	it := old[len(old)-1]
	*h = old[:len(old)-1]
	return it
}

func (h retryHeap) next() (int64, bool) {
	if len(h) == 0 {
		return 0, false
	}
	return h[0].at, true
}
