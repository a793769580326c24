package jobtracker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"syscall"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"gomr/conf"
	"gomr/mrpb"
	"gomr/partitions"
)

// No heartbeat reply is assumed to arrive. Each reply carries an id that
// the tracker sends back in its next heartbeat (Hadoop 1's responseId); a
// heartbeat naming an older id than the last reply means that reply was
// lost, and every action not yet acknowledged goes out again in the next
// reply (a tracker ignores a launch it already runs). Once a tracker has
// acknowledged the reply that launched an attempt, every heartbeat it
// sends must report that attempt until the JobTracker knows it ended: an
// attempt it does not report has vanished (a launch that failed before the
// child existed, a tracker that lost track of it) and is failed and
// re-run. An attempt whose launch stays unacknowledged for the tracker
// expiry interval is failed too (Hadoop's expiry of launching tasks).
//
// A tracker's name is held by one process at a time: the initial contact
// of a process gets an incarnation that it must send on every later
// heartbeat, and another process registering under the name of a live
// tracker is refused, naming both processes.

// pendingAction is an action sent to a tracker and not yet acknowledged:
// firstSent is the id of the first reply that carried it.
type pendingAction struct {
	firstSent int64
	action    *mrpb.TaskAction
}

// Heartbeat is the TaskTracker's periodic report; the reply carries task
// launches and kill orders.
func (jt *JobTracker) Heartbeat(ctx context.Context, req *mrpb.HeartbeatRequest) (*mrpb.HeartbeatResponse, error) {
	// The one metric of the hot path: its latency (and so the count).
	arrived := time.Now()
	defer func() { jt.prom.heartbeat.Observe(sinceSeconds(arrived)) }()
	// Whether a previous holder of the name is gone is found out by
	// dialing it, which must not happen under the lock.
	previousGone := req.InitialContact && jt.previousTrackerGone(req)
	from := peerAddress(ctx)
	// What needs no lock is done before it: the statuses' attempt ids
	// taken apart, their counters decoded, the attempts reported, the
	// spills' segments copied out of their messages.
	decoded := decodeStatuses(req)
	spills := decodeSpills(req)
	var reported map[string]bool
	if !req.InitialContact {
		reported = reportedAttempts(req)
	}

	c := &heartbeatCall{req: req, from: from, previousGone: previousGone, decoded: decoded, spills: spills, reported: reported,
		queued: time.Now(), wake: make(chan struct{})}
	jt.combineHeartbeat(c)
	return c.resp, c.err
}

// heartbeatCall is a heartbeat waiting for, or taken by, a combiner
// (combineHeartbeat): what was worked out before the lock, and the reply.
type heartbeatCall struct {
	req          *mrpb.HeartbeatRequest
	from         string
	previousGone bool
	decoded      []decodedStatus
	spills       []decodedSpill
	reported     map[string]bool
	queued       time.Time

	resp *mrpb.HeartbeatResponse
	err  error
	// done is set, before wake is closed, once the call is answered; wake
	// closed with done unset hands the caller the combiner's role.
	done bool
	wake chan struct{}
}

// maxHeartbeatBatch is the most heartbeats a combiner answers under one
// hold of the lock. The replies of a batch go out when it is answered, so
// a heartbeat waits for the batch after it as well as for the queue before
// it: when heartbeats queue (the JobTracker short of CPU for a moment, on
// a busy machine thousands of them), an uncapped batch made each wait for
// the whole queue. 128 heartbeats are a few milliseconds of work on an
// idle machine, and the hand-over that a batch costs (the next combiner
// woken; it runs next on this P, readied last) is paid once for them.
const maxHeartbeatBatch = 128

// combineHeartbeat answers a heartbeat under the JobTracker's lock,
// together with the heartbeats queued meanwhile: one goroutine at a time,
// the combiner, takes the queue (up to maxHeartbeatBatch heartbeats, its
// own the first), answers it under one hold of the lock, wakes the ones
// it answered and hands the role to the first heartbeat still queued (if
// any). With heartbeats arriving faster than one at a time, the lock is
// taken once a batch instead of once a heartbeat: its hand-over from a
// heartbeat to the next waiting one (a goroutine to wake and schedule,
// which on a busy machine takes longer than the heartbeat's work) is paid
// once a batch. A combiner answers one batch, its own heartbeat in it, so
// that no heartbeat waits for more than the batch before its own.
func (jt *JobTracker) combineHeartbeat(c *heartbeatCall) {
	jt.hbMu.Lock()
	jt.hbQueue = append(jt.hbQueue, c)
	if jt.hbCombining {
		jt.hbMu.Unlock()
		<-c.wake
		if c.done {
			return
		}
		// The combiner's role was handed to this heartbeat, the first
		// of the queue.
	} else {
		jt.hbCombining = true
		jt.hbMu.Unlock()
	}
	jt.hbMu.Lock()
	// This heartbeat is the queue's first: the role goes to the first
	// one, and a heartbeat that finds no combiner found the queue empty.
	n := min(len(jt.hbQueue), maxHeartbeatBatch)
	batch := jt.hbQueue[:n:n]
	if jt.hbQueue = jt.hbQueue[n:]; len(jt.hbQueue) == 0 {
		jt.hbQueue = nil
	}
	jt.hbMu.Unlock()

	jt.lock(holderHeartbeat)
	jt.batchSize = len(batch)
	for _, x := range batch {
		start := time.Now()
		jt.prom.lockWait.Observe(start.Sub(x.queued).Seconds())
		x.resp, x.err = jt.heartbeatLocked(x)
		jt.prom.lockHeld.Observe(sinceSeconds(start))
	}
	// The work queued under the lock that the replies wait for (the
	// recovery event log); the rest (history files of jobs that ended)
	// once the batch is answered, off every reply's path: this call's
	// own reply does not wait for a job's history file (megabytes for a
	// job of 37,500 tasks) either.
	late := jt.unlockEarly()
	jt.goBackground(late)
	for _, x := range batch {
		x.done = true
		if x != c {
			close(x.wake)
		}
	}
	// The next combiner is woken last: the goroutine readied last runs
	// next on this P, so the queue's next batch starts before the
	// answered heartbeats' replies are marshalled and written (readied
	// first, the next combiner waited behind all of them).
	jt.hbMu.Lock()
	if len(jt.hbQueue) > 0 {
		close(jt.hbQueue[0].wake)
	} else {
		jt.hbCombining = false
	}
	jt.hbMu.Unlock()
}

// heartbeatLocked answers one heartbeat.
func (jt *JobTracker) heartbeatLocked(c *heartbeatCall) (*mrpb.HeartbeatResponse, error) {
	req, from, previousGone, decoded, reported := c.req, c.from, c.previousGone, c.decoded, c.reported
	now := jt.now()
	// The interval grows with the cluster (interval.go).
	// Every reply says the announcements' segments may come packed, so
	// that a tracker knows it from its first reply on.
	resp := &mrpb.HeartbeatResponse{HeartbeatIntervalMs: int32(jt.heartbeatIntervalLocked().Milliseconds()), ReadsPackedSegments: true}
	t, known := jt.trackers[req.Tracker]
	switch {
	case req.InitialContact:
		if known {
			if err := jt.admitLocked(t, req, from, previousGone, now); err != nil {
				jt.log.Warn("tracker registration refused", "tracker", req.Tracker, "error", err)
				return nil, err
			}
			jt.lostTrackerLocked(t, "task tracker restarted: "+req.Tracker)
		}
		if !known || t.instance != req.Instance {
			// A new process: Hadoop's "healthy after a restart".
			delete(jt.faults, req.Tracker)
		}
		t = &trackerState{
			name:        req.Tracker,
			attempts:    map[string]*attempt{},
			instance:    req.Instance,
			incarnation: newIncarnation(),
			peer:        from,
			registered:  now,
			fullConf:    req.ConfDefaultsDigest != conf.DefaultsDigest(),
		}
		if t.fullConf {
			jt.log.Warn("tracker has other configuration defaults than the JobTracker (another build?): its launches carry every configuration key",
				"tracker", req.Tracker, "its_defaults", req.ConfDefaultsDigest, "ours", conf.DefaultsDigest())
		}
		jt.trackers[req.Tracker] = t
		jt.addCapacityLocked(t, 1)
		resp.Incarnation = t.incarnation
		// Queued, like every log record (logqueue.go): 10,000 trackers
		// register within a heartbeat interval of the JobTracker's start.
		jt.log.Info("tracker joined", "tracker", req.Tracker, "host", req.Host, "shuffle", req.ShuffleAddress, "from", from,
			"map_slots", req.MapSlots, "reduce_slots", req.ReduceSlots, "criu", req.CriuAvailable)
		for _, id := range req.HeldJobs {
			if j := jt.jobs[id]; j == nil || j.done() {
				t.actions = append(t.actions, &mrpb.TaskAction{Action: &mrpb.TaskAction_PurgeJob{PurgeJob: id}})
			}
			// A tracker kills all its children before it registers
			// again: none of the job's attempts runs there any more.
			jt.jobPurgedLocked(req.Tracker, id)
		}
		jt.confirmRecoveredLocked(t, req, now)
	case !known:
		resp.Reinit = true
		return resp, nil
	case req.Incarnation != t.incarnation:
		return nil, status.Errorf(codes.PermissionDenied,
			"heartbeat for tracker %s from %s does not carry the incarnation issued to the process that registered the name (from %s, shuffle %s, at %s)",
			req.Tracker, from, t.peer, t.shuffleAddr, t.registered.Format(time.RFC3339))
	default:
		jt.acknowledgeLocked(t, req.ResponseId)
	}
	t.host, t.shuffleAddr = req.Host, req.ShuffleAddress
	jt.trackerChangedLocked(t.name)
	if t.mapSlots != int(req.MapSlots) || t.reduceSlots != int(req.ReduceSlots) {
		jt.slotTotals[partitions.Map] += int(req.MapSlots) - t.mapSlots
		jt.slotTotals[partitions.Reduce] += int(req.ReduceSlots) - t.reduceSlots
		jt.addCapacityLocked(t, -1)
		t.mapSlots, t.reduceSlots = int(req.MapSlots), int(req.ReduceSlots)
		jt.addCapacityLocked(t, 1)
	}
	t.lastSeen = now
	jt.seenLocked(t)
	t.criu = req.CriuAvailable
	t.crQueue, t.crWait = int(req.CrQueueLength), time.Duration(req.CrQueueWaitMs)*time.Millisecond
	// The planner's mirror of the tracker's queue runs as many operations
	// at once as the tracker does (0, from a tracker that does not say: 1).
	jt.driver.Planner().Queue().SetConcurrency(t.name, int(req.CrQueueMaxConcurrent), now)

	for i, sp := range req.Spills {
		jt.spillAnnouncedLocked(t, sp, c.spills[i])
	}
	for i, st := range req.Attempts {
		jt.attemptStatusLocked(t, st, decoded[i], now)
	}
	if !req.InitialContact {
		jt.reconcileLocked(t, req.ResponseId, reported)
	}
	if req.AcceptNewTasks {
		// Launches of replies the tracker did not get go out again in
		// this one: their slots are not free, whatever the tracker says.
		resent := jt.unackedLaunchesLocked(t)
		jt.assignLocked(t, max(int(req.FreeMapSlots)-resent[partitions.Map], 0),
			max(int(req.FreeReduceSlots)-resent[partitions.Reduce], 0), now)
		jt.scaleUpLocked(t, now) // slots left idle: split a long map or reduce (scaleup.go)
	}
	resp.ResponseId, resp.Actions = jt.replyLocked(t)
	jt.sampleLocked(now)
	return resp, nil
}

// admitLocked decides whether an initial contact may take over the name of
// a tracker the JobTracker knows: the same process retrying its
// registration, or a new process after the previous one expired or no
// longer listens. Anything else is a second live process under one name.
func (jt *JobTracker) admitLocked(t *trackerState, req *mrpb.HeartbeatRequest, from string, previousGone bool, now time.Time) error {
	switch {
	case req.Instance != "" && req.Instance == t.instance:
		return nil // its registration reply was lost
	case previousGone:
		return nil
	case now.Sub(t.lastSeen) > jt.cfg.Duration("mapreduce.jobtracker.expire.trackers.interval"):
		return nil
	}
	return status.Errorf(codes.AlreadyExists,
		"tracker name %s is held by a live tracker (process at %s, shuffle %s, last heartbeat %s ago); refusing the registration of the process at %s (shuffle %s): give each tracker its own --name",
		t.name, t.peer, t.shuffleAddr, now.Sub(t.lastSeen).Round(time.Millisecond), from, req.ShuffleAddress)
}

// previousTrackerGone tells whether the process that holds req's tracker
// name under another instance is certainly gone: its shuffle address is now
// the new process's own (one process binds a port at a time), or nothing
// listens there any more.
func (jt *JobTracker) previousTrackerGone(req *mrpb.HeartbeatRequest) bool {
	jt.lock(holderHeartbeat)
	t := jt.trackers[req.Tracker]
	var addr string
	if t != nil && t.instance != req.Instance {
		addr = t.shuffleAddr
	}
	jt.unlock()
	if addr == "" {
		return false
	}
	if addr == req.ShuffleAddress {
		return true
	}
	conn, err := net.DialTimeout("tcp", addr, 500*time.Millisecond)
	if err == nil {
		conn.Close()
		return false
	}
	return errors.Is(err, syscall.ECONNREFUSED)
}

func peerAddress(ctx context.Context) string {
	if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
		return p.Addr.String()
	}
	return "unknown"
}

func newIncarnation() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // crypto/rand.Read does not fail (Go 1.24+)
	return hex.EncodeToString(b)
}

// acknowledgeLocked takes a heartbeat's response id: the actions first
// sent in that reply or earlier arrived; if a later reply was sent, it was
// lost, and what it carried goes out again.
func (jt *JobTracker) acknowledgeLocked(t *trackerState, id int64) {
	if id > t.replyID || id < t.acked {
		// A heartbeat from before an acknowledged one, delayed on the
		// way; or an id never issued. Nothing to learn from it.
		return
	}
	t.acked = id
	jt.launchesAcknowledgedLocked(t)
	kept := t.unacked[:0]
	var purged []string
	for _, p := range t.unacked {
		if p.firstSent > id {
			kept = append(kept, p)
		} else if job := p.action.GetPurgeJob(); job != "" {
			purged = append(purged, job)
		}
	}
	jt.purgeAcknowledgedLocked(t, purged)
	clear(t.unacked[len(kept):])
	t.unacked = kept
	if id < t.replyID {
		t.lostReplies++
		jt.lostReplies++
		jt.log.Warn("heartbeat reply lost; sending its actions again", "tracker", t.name,
			"acknowledged", id, "last_reply", t.replyID, "actions", len(t.unacked))
	}
}

// replyLocked numbers the next reply to t and gives its actions: the ones
// not yet acknowledged, then the new ones. A launch of an attempt that
// ended meanwhile is dropped (its kill order, if any, still goes).
func (jt *JobTracker) replyLocked(t *trackerState) (int64, []*mrpb.TaskAction) {
	t.replyID++
	for _, a := range t.actions {
		t.unacked = append(t.unacked, pendingAction{firstSent: t.replyID, action: a})
	}
	t.actions = nil
	kept := t.unacked[:0]
	out := make([]*mrpb.TaskAction, 0, len(t.unacked))
	for _, p := range t.unacked {
		if id := launchedAttempt(p.action); id != "" {
			a := t.attempts[id]
			if a == nil || !a.live() {
				continue
			}
			if a.sentIn == 0 {
				a.sentIn = p.firstSent
			}
		}
		kept = append(kept, p)
		out = append(out, p.action)
	}
	clear(t.unacked[len(kept):])
	t.unacked = kept
	return t.replyID, out
}

// unackedLaunchesLocked counts, by task type, the launches of live
// attempts sent to t in replies it has not acknowledged.
func (jt *JobTracker) unackedLaunchesLocked(t *trackerState) [2]int {
	var n [2]int
	for _, p := range t.unacked {
		if id := launchedAttempt(p.action); id != "" {
			if a := t.attempts[id]; a != nil && a.live() {
				n[a.task.typ]++
			}
		}
	}
	return n
}

// launchedAttempt is the attempt a launch or clone action starts, or "".
func launchedAttempt(a *mrpb.TaskAction) string {
	switch x := a.Action.(type) {
	case *mrpb.TaskAction_Launch:
		return x.Launch.GetAttemptId()
	case *mrpb.TaskAction_Clone:
		return x.Clone.GetLaunch().GetAttemptId()
	}
	return ""
}

// reconcileLocked fails the attempts the JobTracker has on t, whose launch
// t acknowledged, and that t's heartbeat does not report: the tracker was
// told to run them, acted on it, and runs nothing of the kind.
func (jt *JobTracker) reconcileLocked(t *trackerState, responseID int64, reported map[string]bool) {
	for id, a := range t.attempts {
		if !a.live() || a.sentIn == 0 || a.sentIn > responseID || reported[id] {
			continue
		}
		jt.log.Warn("attempt vanished", "attempt", id, "tracker", t.name, "launched_in_reply", a.sentIn)
		jt.failAttemptLocked(a, fmt.Sprintf("Lost task attempt: tracker %s acknowledged its launch (heartbeat reply %d) but does not report it", t.name, a.sentIn))
	}
}

// reportedAttempts is the set of attempts a heartbeat reports.
func reportedAttempts(req *mrpb.HeartbeatRequest) map[string]bool {
	reported := make(map[string]bool, len(req.Attempts))
	for _, st := range req.Attempts {
		reported[st.AttemptId] = true
	}
	return reported
}

// killOrderPendingLocked tells whether a kill of attempt id is on its way
// to t.
func killOrderPendingLocked(t *trackerState, id string) bool {
	for _, a := range t.actions {
		if a.GetKillAttempt() == id {
			return true
		}
	}
	for _, p := range t.unacked {
		if p.action.GetKillAttempt() == id {
			return true
		}
	}
	return false
}
