package loadgen

import (
	"fmt"
	"time"

	"gomr/jobtracker"
	"gomr/jobtracker/jobhistory"
)

// profileSample is the most maps, and the most reduces, of a job that its
// earlier run (writeEarlierRuns) records. A profile is averages and maxima
// of task durations (partitions.Profile), so a sample gives it; a job of
// 100,000 maps recorded whole would be a history file of some 20 MB for the
// JobTracker to read at its start.
const profileSample = 1000

// earlierRunEpoch is when the earlier runs start: long before any job the
// JobTracker runs, so their ids (job_200001010000_NNNN) are not those of
// its own jobs.
var earlierRunEpoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// writeEarlierRuns writes into the history directory dir, before the
// JobTracker starts, one successful earlier run of every job of the
// workload, under the job's name, with the job's own task durations (at
// most profileSample of each kind, the first ones): the JobTracker reads
// its profiles from its job history at its start (jobhistory.LoadProfiles),
// so each job then has the profile a cluster that ran it before would
// have. In the earlier run every map starts at once, and every reduce
// starts as the last map ends, shuffles for its shuffle time and reduces
// for its reduce time, so that the profile's map, shuffle and reduce
// figures are those durations' (jobhistory.Profile).
func writeEarlierRuns(dir string, jobs []Job) error {
	h, err := jobtracker.OpenHistory(dir)
	if err != nil {
		return fmt.Errorf("loadgen: profiles: %w", err)
	}
	for i := range jobs {
		if err := h.Write(earlierRun(&jobs[i], i+1)); err != nil {
			return fmt.Errorf("loadgen: profile of job %s: %w", jobs[i].Name, err)
		}
	}
	return nil
}

// earlierRun is the history record of job j's earlier run, the n-th
// written.
func earlierRun(j *Job, n int) jobhistory.Record {
	id := fmt.Sprintf("job_%s_%04d", earlierRunEpoch.Format("200601021504"), n)
	t0 := earlierRunEpoch
	maps := j.Maps[:min(len(j.Maps), profileSample)]
	reduces := j.Reduces[:min(len(j.Reduces), profileSample)]
	rec := jobhistory.Record{Job: jobhistory.Job{Type: "job", JobID: id, Name: j.Name, User: "loadgen", Pool: j.Pool,
		State: "SUCCEEDED", Submit: t0, Start: t0, Maps: len(maps), Reduces: len(reduces),
		Deadline: j.Deadline.Seconds(), SucceededMaps: len(maps), SucceededReduces: len(reduces)}}
	attempt := func(kind string, i int) string { return fmt.Sprintf("attempt_%s_%s_%06d_0", id[len("job_"):], kind, i) }
	lastMap := t0
	for i, d := range maps {
		end := t0.Add(d)
		if end.After(lastMap) {
			lastMap = end
		}
		rec.Attempts = append(rec.Attempts, jobhistory.Attempt{Type: "attempt", AttemptID: attempt("m", i), TaskType: "m",
			Task: i, Tracker: "loadgen", State: "SUCCEEDED", Start: t0, Finish: end})
	}
	finish := lastMap
	for i, d := range reduces {
		sorted := lastMap.Add(j.shuffle(i))
		end := sorted.Add(d)
		if end.After(finish) {
			finish = end
		}
		rec.Attempts = append(rec.Attempts, jobhistory.Attempt{Type: "attempt", AttemptID: attempt("r", i), TaskType: "r",
			Task: i, Tracker: "loadgen", State: "SUCCEEDED", Start: lastMap, Finish: end, ShuffleFinish: &sorted, SortFinish: &sorted})
	}
	rec.Job.Finish = finish
	return rec
}
