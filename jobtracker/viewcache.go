package jobtracker

import (
	"fmt"
	"reflect"
	"time"

	"gomr/partitions"
)

// The policy's view of the running jobs, kept between offers.
//
// Every offer gives the policy a ClusterView with one JobView per running
// job. Built afresh per offer, that was O(running jobs) under the lock for
// every heartbeat, whatever the heartbeat changed: with 1,000 jobs at
// 10,000 trackers a heartbeat's view alone took about 135 µs (a cache
// miss or two on each job), most of the JobTracker's budget. So the views
// are kept here and a job's is rebuilt only once something it shows
// changed: the job says so (job.viewChanged) wherever its counts change
// (pendingChanged, attempt and task transitions, launches, finished
// tasks, speculation waiting, priority, blacklisting, tasks added), and
// the list is rebuilt whole when jobs come or go or the profiles change.
//
// A job's view can depend on the offering tracker: a speculative attempt
// waits for a slot it may take there, or the job blacklisted trackers.
// Such jobs (offerDependent) are rebuilt for every offer.
//
// With verify set (the package's tests set it), every view is compared
// with one built afresh, and the first difference is kept in mismatch
// (and logged), naming the job and the fields: a change that forgot to
// call viewChanged.
type viewCache struct {
	jobs []partitions.JobView // the views, in jt.order's order of the jobs not done
	of   []*job               // of[i] is jobs[i]'s job
	// stale are the jobs whose view changed since it was built.
	stale []*job
	// perOffer are the jobs whose view depends on the offering tracker.
	perOffer []*job
	// all asks for the whole list to be rebuilt (a job came or went, the
	// profiles changed).
	all      bool
	verify   bool
	mismatch error
	view     partitions.ClusterView
}

// viewChanged tells the view cache that what j's view shows changed.
func (j *job) viewChanged() {
	if j.vc == nil || j.viewStale {
		return
	}
	j.viewStale = true
	j.vc.stale = append(j.vc.stale, j)
}

// viewListChanged tells the view cache that jobs came or went, or that
// something every view shows changed.
func (c *viewCache) viewListChanged() { c.all = true }

// offerDependent tells whether j's view depends on the offering tracker
// (jobViewLocked's last part).
func offerDependent(j *job) bool {
	return len(j.specWaiting) > 0 || j.flakyTrackers > 0 || j.settings().maxTrackerFailures <= 0
}

// clusterViewLocked is the policy's view of the cluster for a slot offer
// from tracker offer (nil: the view of no particular offer). The view and
// its jobs are the cache's: valid until the next call, and only read (as
// policies do).
func (jt *JobTracker) clusterViewLocked(now time.Time, offer *trackerState) *partitions.ClusterView {
	c := &jt.views
	if c.all {
		jt.rebuildViewsLocked()
	} else {
		for _, j := range c.stale {
			j.viewStale = false
			if i := j.viewIdx; i < len(c.of) && c.of[i] == j {
				c.jobs[i] = jt.jobViewLocked(j, nil)
				c.notePerOffer(j)
			}
		}
		c.stale = c.stale[:0]
	}
	keep := c.perOffer[:0]
	for _, j := range c.perOffer {
		i := j.viewIdx
		if i >= len(c.of) || c.of[i] != j {
			j.viewPerOffer = false
			continue
		}
		if !offerDependent(j) {
			j.viewPerOffer = false
			c.jobs[i] = jt.jobViewLocked(j, nil)
			continue
		}
		c.jobs[i] = jt.jobViewLocked(j, offer)
		keep = append(keep, j)
	}
	clear(c.perOffer[len(keep):])
	c.perOffer = keep
	c.view = partitions.ClusterView{Now: now, Trackers: jt.capacity[0], MapSlots: jt.capacity[1], ReduceSlots: jt.capacity[2], Jobs: c.jobs}
	if c.verify {
		jt.verifyViewLocked(offer)
	}
	return &c.view
}

// rebuildViewsLocked rebuilds the whole list of views.
func (jt *JobTracker) rebuildViewsLocked() {
	c := &jt.views
	for _, j := range c.stale {
		j.viewStale = false
	}
	for _, j := range c.perOffer {
		j.viewPerOffer = false
	}
	clear(c.of)
	c.jobs, c.of, c.stale, c.perOffer = c.jobs[:0], c.of[:0], c.stale[:0], c.perOffer[:0]
	for _, j := range jt.order {
		// A job committing its output is in the view (nothing pending or
		// running) until it ends, as a job running its cleanup task is in
		// the simulator's: the policy knows a job from JobSubmitted to
		// JobFinished.
		if j.done() {
			continue
		}
		j.vc, j.viewIdx, j.viewStale = c, len(c.of), false
		c.of = append(c.of, j)
		c.jobs = append(c.jobs, jt.jobViewLocked(j, nil))
		c.notePerOffer(j)
	}
	c.all = false
}

// notePerOffer adds j to the jobs rebuilt per offer if its view depends
// on the offering tracker.
func (c *viewCache) notePerOffer(j *job) {
	if !j.viewPerOffer && offerDependent(j) {
		j.viewPerOffer = true
		c.perOffer = append(c.perOffer, j)
	}
}

// verifyViewLocked compares the cached views with views built afresh.
func (jt *JobTracker) verifyViewLocked(offer *trackerState) {
	var fresh []partitions.JobView
	for _, j := range jt.order {
		if !j.done() {
			fresh = append(fresh, jt.jobViewLocked(j, offer))
		}
	}
	got := jt.views.jobs
	var err error
	if len(got) != len(fresh) {
		err = fmt.Errorf("the policy's cached view has %d jobs, a fresh one %d", len(got), len(fresh))
	}
	for i := 0; err == nil && i < len(fresh); i++ {
		if !reflect.DeepEqual(got[i], fresh[i]) {
			err = fmt.Errorf("the policy's cached view of job %s differs from a fresh one (a change without viewChanged):\ncached %+v\nfresh  %+v",
				fresh[i].ID, got[i], fresh[i])
		}
	}
	if err != nil && jt.views.mismatch == nil {
		jt.views.mismatch = err
		jt.log.Error("policy view check", "error", err)
	}
}
