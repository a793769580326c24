package loadgen

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"gomr/conf"
	"gomr/mr"
	"gomr/mrpb"
	"gomr/tasktracker"
)

// States of an attempt as a tracker reports them (the JobTracker's names).
const (
	stateRunning   = "RUNNING"
	stateSucceeded = "SUCCEEDED"
)

// tracker is one simulated TaskTracker: it speaks the heartbeat protocol
// as package tasktracker does (initial contact with an instance id, the
// incarnation on every later heartbeat, the id of the last reply received,
// every live attempt in every heartbeat, a map's final spill announced in
// the heartbeat that reports it SUCCEEDED), and "runs" what it is told to
// launch for the duration the workload gives the task.
type tracker struct {
	g        *generator
	name     string
	host     string
	client   mrpb.JobTrackerClient
	instance string
	slots    [2]int

	// ctx is the tracker's run; the map-event pollers of its reduces
	// live within it.
	ctx context.Context

	registered  bool
	incarnation string
	// interval is what the JobTracker's last reply asked for (0: none
	// yet); rephase, that it changed and the next wait is a random part
	// of it (Config.FollowInterval).
	interval   time.Duration
	rephase    bool
	responseID int64
	// readsPacked: the JobTracker's last reply said it reads spill
	// announcements' packed segments.
	readsPacked bool
	attempts    map[string]*attempt
	// freed are the slots of each type (0 maps, 1 reduces) that became
	// free and were not filled again yet, oldest first.
	freed [2][]freedSlot
	// finished are attempts that ended and whose end was not yet
	// delivered (a failed heartbeat sends them again).
	finished []*attempt
	// counterReports decides which heartbeats carry the running
	// attempts' counters, as a TaskTracker's do.
	counterReports *tasktracker.CounterReports
}

// freedSlot is a slot freed by an attempt's end: when the attempt ended
// and when the heartbeat that told the JobTracker was sent.
type freedSlot struct {
	ended, reported time.Time
}

// attempt is a launched attempt the tracker "runs".
type attempt struct {
	id      string
	job     string
	typ     int // 0 map, 1 reduce
	index   int
	reduces int
	// digests: announce the spill's digest, not its segments
	// (LaunchTask.spill_digests).
	digests bool
	start   time.Time
	// end is when the attempt finishes; zero until it is known (a
	// reduce waits for its job's maps; a launch may arrive before the
	// generator knows the job's id).
	end       time.Time
	shuffleAt time.Time
	// stopEvents ends a reduce's map-event poller.
	stopEvents context.CancelFunc
}

// stop ends what runs for the attempt besides the tracker.
func (a *attempt) stop() {
	if a.stopEvents != nil {
		a.stopEvents()
	}
}

// slotType gives a launch's slot type: 0 for a map, 1 for a reduce.
func slotType(t string) int {
	if t == "r" {
		return 1
	}
	return 0
}

// run heartbeats from the phase offset on until ctx ends.
func (t *tracker) run(ctx context.Context, phase time.Duration) {
	t.ctx = ctx
	timer := time.NewTimer(phase)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		soon, sent := t.heartbeat(ctx)
		next := t.g.cfg.Heartbeat
		follow := t.g.cfg.FollowInterval && t.interval > 0
		if follow {
			next = t.interval
		}
		if follow && t.rephase {
			next, t.rephase = rand.N(t.interval)+time.Millisecond, false
		} else if !sent.IsZero() {
			// Answered: as the TaskTracker, the next one is due by its
			// pacing rule.
			next = t.g.cfg.Pacing.Wait(next, sent, time.Now())
		}
		if t.g.cfg.OutOfBand {
			if soon {
				// As the TaskTracker: report soon after a launch that
				// left slots of its type free, or other orders.
				next = min(next, 50*time.Millisecond)
			}
			if e := t.earliestEnd(); !e.IsZero() {
				next = min(next, max(time.Until(e), 0))
			}
		}
		if !t.registered {
			next = min(next, time.Second)
		}
		timer.Reset(next)
	}
}

// earliestEnd is the soonest known end of a running attempt.
func (t *tracker) earliestEnd() time.Time {
	var e time.Time
	for _, a := range t.attempts {
		if !a.end.IsZero() && (e.IsZero() || a.end.Before(e)) {
			e = a.end
		}
	}
	return e
}

// announcement is the final spill of map attempt a, its segments packed
// as a TaskTracker's child packs them, or as messages to a JobTracker that
// has not said it reads them packed (another build's, --jobtracker-bin),
// or their digest alone if the launch asked for it.
func (t *tracker) announcement(a *attempt) *mrpb.SpillAnnouncement {
	segs := make([]mrpb.SpillSegment, a.reduces)
	for i := range segs {
		// Identical for every attempt of a map, as real map output is
		// (the JobTracker compares them).
		segs[i] = mrpb.SpillSegment{Length: 1 << 20, RawLength: 2 << 20, Records: 10000, CRC: uint32(a.index*7919 + i)}
	}
	ann := &mrpb.SpillAnnouncement{AttemptId: a.id, Final: true}
	switch {
	case a.digests:
		d := mrpb.PackSegments(segs).Digest()
		ann.Partitions, ann.SegmentsDigest = int32(len(segs)), d[:]
	case t.readsPacked:
		ann.PackedSegments = mrpb.AppendPackedSegments(nil, segs)
	default:
		ann.Segments = mrpb.PackSegments(segs).Messages()
	}
	return ann
}

// heartbeat sends one heartbeat and acts on its reply; it tells whether
// the next one should go soon (with out-of-band heartbeats): the reply
// launched a task of a type whose slots are not all busy, or gave other
// orders; and when it was sent, if it was answered (zero if not).
func (t *tracker) heartbeat(ctx context.Context) (soon bool, answeredSent time.Time) {
	g := t.g
	now := time.Now()
	req := &mrpb.HeartbeatRequest{
		Tracker: t.name, Host: t.host, ShuffleAddress: t.host + ":50060",
		MapSlots: int32(t.slots[0]), ReduceSlots: int32(t.slots[1]),
		InitialContact: !t.registered, AcceptNewTasks: true,
		ResponseId: t.responseID, Incarnation: t.incarnation, Instance: t.instance,
	}
	if !t.registered {
		// The generator is the JobTracker's build: launches carry only
		// the keys that differ from the defaults, as to a real tracker.
		req.ConfDefaultsDigest = conf.DefaultsDigest()
	}
	// Attempts that ended since the last heartbeat are reported final;
	// the others RUNNING with their progress.
	ids := make([]string, 0, len(t.attempts))
	for id := range t.attempts {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	withCounters := !t.registered || t.counterReports.Due(now)
	busy := [2]int{}
	for _, id := range ids {
		a := t.attempts[id]
		t.resolve(a, now)
		if !a.end.IsZero() && !a.end.After(now) {
			delete(t.attempts, id)
			a.stop()
			t.finished = append(t.finished, a)
			t.freed[a.typ] = append(t.freed[a.typ], freedSlot{ended: a.end, reported: now})
			continue
		}
		busy[a.typ]++
		st := t.status(a, now)
		if !withCounters {
			st.Counters = nil
		}
		req.Attempts = append(req.Attempts, st)
	}
	for _, a := range t.finished {
		st := t.status(a, now)
		st.State, st.Progress, st.FinishMs = stateSucceeded, 1, a.end.UnixMilli()
		req.Attempts = append(req.Attempts, st)
		if a.typ == 0 && a.reduces > 0 {
			req.Spills = append(req.Spills, t.announcement(a))
		}
	}
	req.FreeMapSlots = int32(max(t.slots[0]-busy[0], 0))
	req.FreeReduceSlots = int32(max(t.slots[1]-busy[1], 0))

	hctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	sent := time.Now()
	resp, err := t.client.Heartbeat(hctx, req)
	got := time.Now()
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return false, time.Time{}
		}
		g.heartbeatFailed(t, err)
		switch status.Code(err) {
		case codes.PermissionDenied, codes.AlreadyExists:
			// The JobTracker no longer takes this process's heartbeats:
			// register afresh, as the TaskTracker does.
			g.lost.Add(1)
			t.reset()
		}
		return false, time.Time{}
	}
	g.heartbeatDone(sent, got.Sub(sent))
	if withCounters {
		t.counterReports.Delivered(now)
	}
	for _, a := range t.finished {
		g.attemptEnded(a, a.end, true)
	}
	t.finished = t.finished[:0]
	if resp.Reinit {
		g.lost.Add(1)
		g.log.Warn("tracker told to reinitialize: the JobTracker had declared it lost", "tracker", t.name)
		t.reset()
		return false, time.Time{}
	}
	if !t.registered {
		t.registered, t.incarnation = true, resp.Incarnation
	}
	t.responseID = resp.ResponseId
	t.readsPacked = resp.ReadsPackedSegments
	if resp.HeartbeatIntervalMs > 0 {
		g.advertised.Store(int64(resp.HeartbeatIntervalMs))
		iv := time.Duration(resp.HeartbeatIntervalMs) * time.Millisecond
		if d := iv - t.interval; d > t.interval/10 || -d > t.interval/10 {
			t.rephase = true
		}
		t.interval = iv
	}
	var launched [2]bool
	other := false
	for _, act := range resp.Actions {
		switch {
		case act.GetLaunch() != nil:
			if t.launch(act.GetLaunch(), got) {
				launched[slotType(act.GetLaunch().Type)] = true
			}
		case act.GetClone() != nil:
			// A clone is a launch of a copy: it runs as a fresh attempt.
			if l := act.GetClone().GetLaunch(); t.launch(l, got) {
				launched[slotType(l.Type)] = true
			}
		case act.GetKillAttempt() != "":
			other = true
			if a := t.attempts[act.GetKillAttempt()]; a != nil {
				delete(t.attempts, a.id)
				a.stop()
				t.freed[a.typ] = append(t.freed[a.typ], freedSlot{ended: got, reported: got})
				g.attemptEnded(a, got, false)
			}
		case act.GetPurgeJob() != "":
			other = true
			for id, a := range t.attempts {
				if a.job == act.GetPurgeJob() {
					delete(t.attempts, id)
					a.stop()
					t.freed[a.typ] = append(t.freed[a.typ], freedSlot{ended: got, reported: got})
					g.attemptEnded(a, got, false)
				}
			}
		}
	}
	if other {
		return true, sent
	}
	// As the TaskTracker (reportSoonAfter): soon after a launch only when
	// slots of the launched type are still free.
	var used [2]int
	for _, a := range t.attempts {
		used[a.typ]++
	}
	return (launched[0] && used[0] < t.slots[0]) || (launched[1] && used[1] < t.slots[1]), sent
}

// reset forgets every attempt, for a fresh registration.
func (t *tracker) reset() {
	now := time.Now()
	for _, a := range t.attempts {
		a.stop()
		t.g.attemptEnded(a, now, false)
	}
	t.registered, t.incarnation, t.responseID = false, "", 0
	t.counterReports.Reset()
	t.attempts = map[string]*attempt{}
	t.finished = nil
	t.freed = [2][]freedSlot{}
}

// launch starts an attempt; a launch of an attempt already running (a
// reply sent again) is ignored.
func (t *tracker) launch(l *mrpb.LaunchTask, at time.Time) bool {
	if l == nil || t.attempts[l.AttemptId] != nil {
		return false
	}
	for _, a := range t.finished {
		if a.id == l.AttemptId {
			return false
		}
	}
	a := &attempt{id: l.AttemptId, job: l.JobId, typ: slotType(l.Type), index: int(l.Index), reduces: int(l.NumReduces), digests: l.SpillDigests, start: at}
	t.attempts[a.id] = a
	t.resolve(a, at)
	if a.typ == 1 && t.g.cfg.MapEvents && t.ctx != nil {
		ctx, cancel := context.WithCancel(t.ctx)
		a.stopEvents = cancel
		t.g.pollers.Add(1)
		go func() {
			defer t.g.pollers.Done()
			t.g.pollMapEvents(ctx, t.client, a)
		}()
	}
	if q := t.freed[a.typ]; len(q) > 0 {
		t.g.slotRefilled(q[0], at)
		t.freed[a.typ] = q[1:]
	}
	t.g.launched(a, at)
	return true
}

// resolve works out when a is to end once that is known: a map after its
// duration, a reduce after its shuffle, the end of its job's maps and its
// reduce phase.
func (t *tracker) resolve(a *attempt, now time.Time) {
	if !a.end.IsZero() {
		return
	}
	js := t.g.job(a.job)
	if js == nil {
		if now.Sub(a.start) > 30*time.Second {
			// Not a job of this run (a remote JobTracker's other jobs):
			// run it for a default time.
			a.end = a.start.Add(10 * time.Second)
		}
		return
	}
	if a.typ == 0 {
		a.end = a.start.Add(js.mapTime(a.index))
		return
	}
	shuffle, reduce := js.reduceTimes(a.index)
	a.shuffleAt = a.start.Add(shuffle)
	if done := js.mapsDoneAt(); !done.IsZero() {
		a.end = maxTime(a.shuffleAt, done).Add(reduce)
	}
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// status is a running attempt's report: progress, phase and counters that
// grow as it runs.
func (t *tracker) status(a *attempt, now time.Time) *mrpb.AttemptStatus {
	st := &mrpb.AttemptStatus{AttemptId: a.id, State: stateRunning, StartMs: a.start.UnixMilli(), Phase: "MAP"}
	var p float64
	if !a.end.IsZero() && a.end.After(a.start) {
		p = min(float64(now.Sub(a.start))/float64(a.end.Sub(a.start)), 1)
	}
	recs := int64(p * 100000)
	if a.typ == 0 {
		st.Counters = []*mrpb.Counter{
			{Group: mr.TaskCounterGroup, Name: mr.MapInputRecords, Value: recs},
			{Group: mr.TaskCounterGroup, Name: mr.MapOutputRecords, Value: recs},
			{Group: mr.TaskCounterGroup, Name: mr.MapOutputBytes, Value: recs * 100},
			{Group: mr.TaskCounterGroup, Name: mr.CPUMilliseconds, Value: now.Sub(a.start).Milliseconds()},
		}
	} else {
		switch {
		case a.end.IsZero() || now.Before(a.shuffleAt):
			// Shuffling until the job's maps are done: a third of the
			// progress, as Hadoop counts a reduce's phases.
			st.Phase, p = "SHUFFLE", 0.1
		default:
			st.Phase = "REDUCE"
			st.ShuffleFinishMs, st.SortFinishMs = a.shuffleAt.UnixMilli(), a.shuffleAt.UnixMilli()
			p = 2.0/3 + p/3
		}
		st.Counters = []*mrpb.Counter{
			{Group: mr.TaskCounterGroup, Name: mr.ReduceInputRecords, Value: recs},
			{Group: mr.TaskCounterGroup, Name: mr.ReduceOutputRecords, Value: recs},
			{Group: mr.TaskCounterGroup, Name: mr.CPUMilliseconds, Value: now.Sub(a.start).Milliseconds()},
		}
	}
	for i, name := range t.g.extraNames {
		st.Counters = append(st.Counters, &mrpb.Counter{Group: extraCounterGroup, Name: name, Value: recs * int64(i+1)})
	}
	// In (group, name) order, as a task's child reports them.
	slices.SortFunc(st.Counters, func(x, y *mrpb.Counter) int {
		if c := cmp.Compare(x.Group, y.Group); c != 0 {
			return c
		}
		return cmp.Compare(x.Name, y.Name)
	})
	st.Progress = float32(p)
	st.RssBytes = 200 << 20
	return st
}

// extraCounterGroup is the group of Config.ExtraCounters.
const extraCounterGroup = "loadgen"

// extraCounterNames names n extra counters (Config.ExtraCounters), made
// once a run rather than for every status.
func extraCounterNames(n int) []string {
	names := make([]string, max(n, 0))
	for i := range names {
		names[i] = fmt.Sprintf("EXTRA_%02d", i)
	}
	return names
}

// jobState is what the trackers share of a job of the run: its durations,
// which tasks were launched and done, when its maps were all done.
type jobState struct {
	id         string
	spec       *Job
	submitTook time.Duration

	mu          sync.Mutex
	launched    [2]map[int]bool
	done        [2]map[int]bool
	allMapsDone time.Time

	addresses sharedAddresses
}

// sharedAddresses is the job's shuffle addresses as its simulated reduces
// were sent them (mrpb.JobAddresses), kept once for all of them: a real
// reduce keeps its own, some 36 bytes an address in its own process,
// which for the thousand reduces of a generator would be hundreds of
// megabytes of its heap. Each reduce asks as if it held those it was sent
// itself (heldAddresses), so the JobTracker sends each reduce what it
// would send a real one.
type sharedAddresses struct {
	mu sync.Mutex
	a  mrpb.JobAddresses
}

// heldAddresses is what one simulated reduce was sent of its job's
// addresses: the table's number and how many of them.
type heldAddresses struct {
	table uint64
	known int32
}

// expand expands resp, a reply to a reduce that held h, by the job's
// addresses, adding those it sends, and sets h to what the reduce then
// holds.
func (s *sharedAddresses) expand(resp *mrpb.MapEventsResponse, jobID string, h *heldAddresses) error {
	table, sent := resp.AddressTable, resp.FirstAddress+int32(len(resp.Addresses))
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.a.Expand(resp, jobID); err != nil {
		return err
	}
	switch {
	case table == 0: // a JobTracker that numbers addresses in each reply
	case table != h.table:
		*h = heldAddresses{table: table, known: sent}
	default:
		h.known = max(h.known, sent)
	}
	return nil
}

func newJobState(id string, spec *Job) *jobState {
	js := &jobState{id: id, spec: spec,
		launched: [2]map[int]bool{{}, {}}, done: [2]map[int]bool{{}, {}}}
	if len(spec.Maps) == 0 {
		// A job of reduces only: its map stage is over at once.
		js.allMapsDone = time.Now()
	}
	return js
}

func (js *jobState) mapTime(i int) time.Duration {
	if i < len(js.spec.Maps) {
		return js.spec.Maps[i]
	}
	return 0
}

func (js *jobState) reduceTimes(i int) (shuffle, reduce time.Duration) {
	if i < len(js.spec.Reduces) {
		return js.spec.shuffle(i), js.spec.Reduces[i]
	}
	return 0, 0
}

func (js *jobState) mapsDoneAt() time.Time {
	js.mu.Lock()
	defer js.mu.Unlock()
	return js.allMapsDone
}

// taskDone records that an attempt of task (typ, index) ended at end and
// was reported done.
func (js *jobState) taskDone(typ, index int, end time.Time) {
	js.mu.Lock()
	defer js.mu.Unlock()
	js.done[typ][index] = true
	if typ == 0 && len(js.done[0]) == len(js.spec.Maps) && js.allMapsDone.IsZero() {
		js.allMapsDone = end
	}
}

func (js *jobState) taskLaunched(typ, index int) {
	js.mu.Lock()
	js.launched[typ][index] = true
	js.mu.Unlock()
}

func (js *jobState) counts() (launched, done [2]int) {
	js.mu.Lock()
	defer js.mu.Unlock()
	for i := range 2 {
		launched[i], done[i] = len(js.launched[i]), len(js.done[i])
	}
	return
}

func (a *attempt) String() string { return fmt.Sprintf("%s (%s)", a.id, a.job) }

// pollMapEvents asks for the job's map events as a reduce's shuffle does
// (package tasktracker/child: GetMapEvents waiting up to a second for new
// ones) until its job's maps are all done or the attempt ends.
func (g *generator) pollMapEvents(ctx context.Context, client mrpb.JobTrackerClient, a *attempt) {
	from := int32(0)
	var held heldAddresses
	var own sharedAddresses // for a job the generator did not submit
	for ctx.Err() == nil {
		js := g.job(a.job)
		if js != nil && !js.mapsDoneAt().IsZero() {
			return
		}
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		sent := time.Now()
		// Compact and expanded, as a reduce's child asks for them and reads
		// them: each reduce is sent the job's addresses it lacks.
		req := &mrpb.MapEventsRequest{JobId: a.job, Reduce: int32(a.index), From: from, WaitMs: 1000, AttemptId: a.id,
			Compact: true, JobAddresses: true, AddressTable: held.table, KnownAddresses: held.known}
		resp, err := client.GetMapEvents(cctx, req)
		cancel()
		if err == nil {
			store := &own
			if js != nil {
				store = &js.addresses
			}
			err = store.expand(resp, a.job, &held)
		}
		if err != nil {
			held = heldAddresses{}
			if ctx.Err() != nil {
				return
			}
			g.mapEventErrors.Add(1)
			// The JobTracker may not know the launch yet, or the attempt
			// ended: try again a second later, as long as it runs.
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
			continue
		}
		if g.inWindow(sent) {
			g.mapEventCalls.Add(1)
		}
		from += int32(len(resp.Events))
	}
}
