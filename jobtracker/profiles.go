package jobtracker

import (
	"gomr/jobtracker/jobhistory"
	"gomr/partitions"
)

// Job profiles for the deadline policies: for every job name, the task
// durations of its earlier successful runs (average and maximum map,
// shuffle and reduce times, as the ARIA model needs), merged over runs.
// They are rebuilt from the job history directory when the JobTracker
// starts, so they survive restarts without a store of their own, and
// updated as jobs succeed. The computation is package jobhistory's
// (jobhistory.Profile), which the simulator uses too, so that a replayed
// history and the live cluster see the same profiles.

// loadProfiles reads every history file in dir.
func loadProfiles(dir string) (map[string]partitions.Profile, error) {
	return jobhistory.LoadProfiles(dir)
}

// addProfile merges one job's profile into profiles if the job succeeded.
func addProfile(profiles map[string]partitions.Profile, rec *jobhistory.Record) {
	jobhistory.AddProfile(profiles, rec)
}
