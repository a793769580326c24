package jobtracker

import (
	"os"
	"path/filepath"
	"sort"

	"gomr/jobtracker/jobhistory"
	"gomr/partitions"
	"gomr/sim"
)

// Job profiles for the deadline policies: for every job name, the task
// durations of its earlier successful runs (average and maximum map,
// shuffle and reduce times, as the ARIA model needs), merged over runs.
// They are rebuilt from the job history directory when the JobTracker
// starts, so they survive restarts without a store of their own, and
// updated as jobs succeed. The computation is the simulator's
// (sim.ProfileFromHistory), so that a replayed history and the live
// cluster see the same profiles.

// loadProfiles reads every history file in dir.
func loadProfiles(dir string) (map[string]partitions.Profile, error) {
	profiles := map[string]partitions.Profile{}
	files, err := filepath.Glob(filepath.Join(dir, "job_*.jsonl"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		addProfiles(profiles, data)
	}
	return profiles, nil
}

// addProfiles merges the profiles of the successful jobs of a history file
// into profiles; unreadable files are skipped (a history file is advisory).
func addProfiles(profiles map[string]partitions.Profile, data []byte) {
	recs, err := jobhistory.ParseAll(data)
	if err != nil {
		return
	}
	for i := range recs {
		addProfile(profiles, &recs[i])
	}
}

// addProfile merges one job's profile into profiles if the job succeeded.
func addProfile(profiles map[string]partitions.Profile, rec *jobhistory.Record) {
	if rec.Job.State != StateSucceeded {
		return
	}
	h, err := sim.FromJobHistory(rec)
	if err != nil {
		return
	}
	profiles[h.Name] = partitions.MergeProfiles(profiles[h.Name], sim.ProfileFromHistory(&h))
}
