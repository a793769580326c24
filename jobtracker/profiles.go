package jobtracker

import (
	"os"
	"path/filepath"
	"sort"

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
	jobs, err := sim.ParseJobTrackerHistory(data)
	if err != nil {
		return
	}
	for i := range jobs {
		if jobs[i].State != StateSucceeded {
			continue
		}
		profiles[jobs[i].Name] = partitions.MergeProfiles(profiles[jobs[i].Name], sim.ProfileFromHistory(&jobs[i]))
	}
}
