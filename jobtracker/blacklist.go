package jobtracker

import (
	"context"
	"fmt"
	"sort"
	"time"

	"gomr/mrpb"
)

// Tracker blacklisting, as Hadoop 1 does it (keys by their Hadoop 2
// names; Hadoop 1's in parentheses):
//
//   - Per job: a tracker on which mapreduce.job.maxtaskfailures.per.tracker
//     (mapred.max.tracker.failures, 4) attempts of the job failed gets no
//     more tasks of the job, as long as fewer than
//     mapreduce.job.blacklist.max.percent (25%, hard-coded in Hadoop) of
//     the cluster's trackers are blacklisted by the job; past that the job
//     ignores its blacklist, since the fault is more likely the job's.
//   - Cluster-wide: each job that succeeds having blacklisted a tracker
//     is a fault of the tracker. A tracker with
//     mapreduce.jobtracker.tasktracker.maxblacklists
//     (mapred.max.tracker.blacklists, 4) faults within
//     mapreduce.jobtracker.blacklist.fault-timeout-window
//     (mapred.jobtracker.blacklist.fault-timeout-window, 3 hours) gets no
//     task of any job, unless that would blacklist more than
//     mapreduce.jobtracker.blacklist.max.percent (50%) of the trackers. It
//     is given tasks again once its faults age out of the window, or when
//     it restarts (a new process registers under its name).
//
// Hadoop counts failures by host, since it runs one TaskTracker per host;
// here they count by tracker name, since one host may run several.

// noteTrackerFailureLocked counts a failed attempt of j on tracker name.
func (jt *JobTracker) noteTrackerFailureLocked(j *job, name string) {
	if j.trackerFailures == nil {
		j.trackerFailures = map[string]int{}
	}
	j.trackerFailures[name]++
	if j.trackerFailures[name] == j.settings().maxTrackerFailures {
		j.flakyTrackers++
		j.viewChanged()
		jt.log.Warn("tracker blacklisted for a job", "tracker", name, "job", j.id, "failures", j.trackerFailures[name])
	}
}

// jobAvoidsLocked tells whether job j gives no new task to tracker name.
func (jt *JobTracker) jobAvoidsLocked(j *job, name string) bool {
	if j.trackerFailures[name] < j.settings().maxTrackerFailures {
		return false
	}
	return float64(j.flakyTrackers) < j.settings().blacklistMaxShare*float64(len(jt.trackers))
}

// jobBlacklistLocked lists the trackers job j has blacklisted, sorted.
func jobBlacklistLocked(j *job) []string {
	var out []string
	limit := j.conf.Int("mapreduce.job.maxtaskfailures.per.tracker")
	for name, n := range j.trackerFailures {
		if n >= limit {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// recordFaultsLocked counts a fault against every tracker a succeeded job
// blacklisted, and blacklists the trackers that have too many.
func (jt *JobTracker) recordFaultsLocked(j *job, now time.Time) {
	for _, name := range jobBlacklistLocked(j) {
		if jt.faults == nil {
			jt.faults = map[string][]time.Time{}
		}
		jt.faults[name] = append(jt.faults[name], now)
		jt.trackerChangedLocked(name)
	}
	jt.refreshBlacklistLocked(now)
}

// refreshBlacklistLocked forgets faults older than the window, and
// blacklists or restores trackers by the faults left.
func (jt *JobTracker) refreshBlacklistLocked(now time.Time) {
	window := jt.cfg.Duration("mapreduce.jobtracker.blacklist.fault-timeout-window")
	limit := jt.cfg.Int("mapreduce.jobtracker.tasktracker.maxblacklists")
	for name, fs := range jt.faults {
		jt.trackerChangedLocked(name) // its count of faults may fall
		kept := fs[:0]
		for _, at := range fs {
			if now.Sub(at) < window {
				kept = append(kept, at)
			}
		}
		if len(kept) == 0 {
			delete(jt.faults, name)
		} else {
			jt.faults[name] = kept
		}
	}
	blacklisted := 0
	for name := range jt.blacklisted {
		t := jt.trackers[name]
		if t == nil || !t.blacklisted {
			delete(jt.blacklisted, name) // lost, or registered again
			continue
		}
		if n := len(jt.faults[t.name]); n < limit {
			t.blacklisted, t.blacklistReason = false, ""
			jt.addCapacityLocked(t, 1)
			delete(jt.blacklisted, name)
			jt.trackerChangedLocked(t.name)
			jt.log.Info("tracker no longer blacklisted", "tracker", t.name, "faults", n)
			continue
		}
		blacklisted++
	}
	names := make([]string, 0, len(jt.faults))
	for name := range jt.faults {
		names = append(names, name)
	}
	sort.Strings(names)
	maxBlacklisted := jt.cfg.Float("mapreduce.jobtracker.blacklist.max.percent") * float64(len(jt.trackers))
	for _, name := range names {
		t := jt.trackers[name]
		n := len(jt.faults[name])
		if t == nil || t.blacklisted || n < limit {
			continue
		}
		if float64(blacklisted+1) > maxBlacklisted {
			jt.log.Warn("tracker not blacklisted: too many trackers are", "tracker", name, "faults", n, "blacklisted", blacklisted)
			continue
		}
		jt.addCapacityLocked(t, -1)
		t.blacklisted = true
		if jt.blacklisted == nil {
			jt.blacklisted = map[string]bool{}
		}
		jt.blacklisted[name] = true
		jt.trackerChangedLocked(name)
		t.blacklistReason = fmt.Sprintf("blacklisted by %d jobs within %s", n, window)
		blacklisted++
		jt.log.Warn("tracker blacklisted across all jobs", "tracker", name, "reason", t.blacklistReason)
	}
}

// trackerStatuses lists the live trackers, sorted by name.
// They are the published rows (publish.go): no lock is taken.
func (jt *JobTracker) trackerStatuses() []*mrpb.TrackerStatus {
	rows := jt.trackerRowsNow()
	out := make([]*mrpb.TrackerStatus, 0, len(rows))
	for _, r := range rows {
		t := &r.info
		out = append(out, &mrpb.TrackerStatus{
			Name: t.Name, Host: t.Host, ShuffleAddress: t.ShuffleAddress,
			MapSlots: int32(t.MapSlots), ReduceSlots: int32(t.ReduceSlots),
			Blacklisted: t.Blacklisted, BlacklistReason: t.BlacklistReason,
			Faults: int32(r.faults), LastHeartbeatMs: r.lastSeen.UnixMilli(),
			LostReplies: int32(t.LostReplies),
		})
	}
	return out
}

// ListTrackers lists the live trackers, blacklisted ones marked (mr job
// -list-active-trackers, -list-blacklisted-trackers).
func (jt *JobTracker) ListTrackers(ctx context.Context, req *mrpb.ListTrackersRequest) (*mrpb.ListTrackersResponse, error) {
	return &mrpb.ListTrackersResponse{Trackers: jt.trackerStatuses(), Policy: jt.policy.Name()}, nil
}
