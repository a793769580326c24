package jobtracker

import (
	"errors"
	iofs "io/fs"
	"path"
	"strings"

	"gomr/mr"
)

// Aborting the output of a job that ended without success, once its
// attempts are dead.
//
// A job that fails or is killed has its output aborted at once (its
// _temporary directory removed), but its attempts still running on
// trackers die only when the trackers act on the kill and purge orders of
// their next heartbeat replies, or, after a JobTracker restart, when they
// reinitialise; a reduce writing its part file meanwhile recreates
// _temporary/attempt_… under the output. So the abort is done again when
// each tracker that ran the job acknowledges the reply that carried the
// purge order (a tracker kills the job's children as it receives the order,
// before its next heartbeat), or registers again listing the job (a tracker
// kills all its children before it registers again). For a job lost in a
// JobTracker restart, who ran it is not known: the abort is done again
// whenever a registering tracker lists the job, for as long as the
// JobTracker runs. The repeated abort removes only the job's own attempt
// directories, and _temporary when that leaves it empty and no live job
// writes to the same output.

// pendingAbort is a job whose output is to be aborted again.
type pendingAbort struct {
	output string
	// waiting are the trackers whose purge is awaited; nil for a job lost
	// in a restart (any tracker that lists it).
	waiting map[string]bool
}

// awaitPurgeLocked arranges for the output of job id, just aborted, to be
// aborted again once the trackers have killed its attempts: the named ones
// (which were sent a purge order), or with trackers nil, any that lists
// the job when it registers.
func (jt *JobTracker) awaitPurgeLocked(id, output string, trackers map[string]bool) {
	if trackers != nil && len(trackers) == 0 {
		return
	}
	if jt.aborts == nil {
		jt.aborts = map[string]*pendingAbort{}
	}
	jt.aborts[id] = &pendingAbort{output: output, waiting: trackers}
}

// jobPurgedLocked takes word that tracker has killed whatever it ran of job
// id: it acknowledged the purge order, or registered again listing the job.
// The job's output is aborted again, in the background, once no tracker
// is awaited.
func (jt *JobTracker) jobPurgedLocked(tracker, id string) {
	pa := jt.aborts[id]
	if pa == nil {
		return
	}
	if pa.waiting != nil {
		if !pa.waiting[tracker] {
			return
		}
		delete(pa.waiting, tracker)
		if len(pa.waiting) > 0 {
			return
		}
		delete(jt.aborts, id)
	}
	keepTemp := false
	for _, j := range jt.jobs {
		if !j.done() && j.spec.Output == pa.output {
			keepTemp = true // the output path was reused by a new job
		}
	}
	log, output := jt.log, pa.output
	go func() {
		n, err := abortAttempts(id, output, keepTemp)
		if err != nil {
			log.Warn("abort job output after its purge", "job", id, "output", output, "error", err)
		} else if n > 0 {
			log.Warn("removed attempt output written after the job's abort", "job", id, "output", output, "attempts", n, "tracker", tracker)
		}
	}()
}

// purgeAcknowledgedLocked handles the acknowledgement by t of a reply that
// carried purge orders.
func (jt *JobTracker) purgeAcknowledgedLocked(t *trackerState, jobs []string) {
	for _, id := range jobs {
		jt.jobPurgedLocked(t.name, id)
	}
}

// abortAttempts removes the attempt directories of job id under output's
// _temporary, then _temporary itself if it is left empty and keepTemp is
// false. It returns how many attempt directories it removed.
func abortAttempts(id, output string, keepTemp bool) (int, error) {
	c, err := mr.NewCommitter(output)
	if err != nil {
		return 0, err
	}
	prefix := "attempt_" + trimJob(id) + "_"
	ents, err := c.FS.List(c.TempDir())
	if errors.Is(err, iofs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	n, others := 0, 0
	for _, e := range ents {
		if !strings.HasPrefix(path.Base(strings.TrimSuffix(e.Path, "/")), prefix) {
			others++
			continue
		}
		if err := c.FS.RemoveAll(e.Path); err != nil {
			return n, err
		}
		n++
	}
	if others == 0 && !keepTemp {
		if err := c.FS.RemoveAll(c.TempDir()); err != nil {
			return n, err
		}
	}
	return n, nil
}
