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

// jobProfile is the profile of an ended job (its name and profile; ok
// false when it did not succeed), computed from its history record
// without the lock: O(attempts).
func jobProfile(rec *jobhistory.Record) (name string, p partitions.Profile, ok bool) {
	return jobhistory.ProfileOf(rec)
}

// addProfileLocked merges a job's profile, from jobProfile, into the
// JobTracker's profiles.
func (jt *JobTracker) addProfileLocked(name string, p partitions.Profile) {
	jobhistory.MergeProfile(jt.profiles, name, p)
	jt.views.viewListChanged() // every job of that name shows the profile
}
