package loadgen

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"gomr/jobtracker/jobhistory"
	"gomr/partitions"
)

// TestEarlierRunsAreTheJobsProfiles writes the earlier runs of a workload
// and reads them back as the JobTracker does at its start: each job name
// has the profile of its own task durations, maps and reduces sampled at
// profileSample.
func TestEarlierRunsAreTheJobsProfiles(t *testing.T) {
	s := time.Second
	big := make([]time.Duration, profileSample+500)
	for i := range big {
		big[i] = 2 * s
	}
	big[profileSample+10] = time.Hour // past the sample: not in the profile
	jobs := []Job{
		{Name: "maps-only", Maps: []time.Duration{s, 3 * s, 2 * s}, Deadline: time.Minute},
		{Name: "with-reduces", Maps: []time.Duration{4 * s, 2 * s}, Reduces: []time.Duration{5 * s, 7 * s},
			Shuffles: []time.Duration{s, 3 * s}},
		{Name: "large", Maps: big},
	}
	dir := t.TempDir()
	if err := writeEarlierRuns(dir, jobs); err != nil {
		t.Fatal(err)
	}
	got, err := jobhistory.LoadProfiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]partitions.Profile{
		"maps-only": {Runs: 1, MapAvg: 2 * s, MapMax: 3 * s},
		// Every reduce starts as the last map ends, so its shuffle is
		// first-wave, and the typical shuffle is the same (NewProfile).
		"with-reduces": {Runs: 1, MapAvg: 3 * s, MapMax: 4 * s, Shuffle1Avg: 2 * s, Shuffle1Max: 3 * s,
			ShuffleAvg: 2 * s, ShuffleMax: 3 * s, ReduceAvg: 6 * s, ReduceMax: 7 * s},
		"large": {Runs: 1, MapAvg: 2 * s, MapMax: 2 * s},
	}
	if len(got) != len(want) {
		t.Fatalf("profiles of %d job names, want %d: %+v", len(got), len(want), got)
	}
	for name, w := range want {
		if got[name] != w {
			t.Errorf("profile of %s:\n got %+v\nwant %+v", name, got[name], w)
		}
	}
}

// TestFixedDeadline checks that a fixed workload's deadline is every
// job's, and that a negative one is refused.
func TestFixedDeadline(t *testing.T) {
	f := Fixed{Jobs: 3, Maps: 2, MapTime: time.Second, Deadline: 90 * time.Second, Seed: 1}
	jobs, err := f.Generate()
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range jobs {
		if j.Deadline != 90*time.Second {
			t.Errorf("job %s: deadline %v, want 1m30s", j.Name, j.Deadline)
		}
	}
	f.Deadline = -time.Second
	if _, err := f.Generate(); err == nil || !strings.Contains(err.Error(), "deadline -1s") {
		t.Errorf("negative deadline: error %v, want one naming it", err)
	}
	cfg := Config{Trackers: 1, MapSlots: 1, Heartbeat: time.Second, Duration: time.Second, Jobs: jobs,
		JobTracker: "127.0.0.1:1", Profiles: true}
	if err := cfg.check(); err == nil || !strings.Contains(err.Error(), "--profiles") {
		t.Errorf("--profiles with a running JobTracker: error %v, want one naming --profiles", err)
	}
}

// TestProfilesGiveDeadlineJobsTheirQuota runs one job with a deadline
// under minedf, which gives a deadline job the fewest slots that meet its
// deadline by its profile and leaves the rest idle, against a JobTracker
// started with and without the job's profile: without one the job takes
// every slot it can use; with one it runs within its quota, about 5 of the
// 40 map slots (100 maps of 200 ms by a 4 s deadline), and still succeeds.
func TestProfilesGiveDeadlineJobsTheirQuota(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two loads of several seconds")
	}
	run := func(profiles bool) *Result {
		jobs, err := Fixed{Jobs: 1, Maps: 100, MapTime: 200 * time.Millisecond, Jitter: 0.1, Deadline: 4 * time.Second, Seed: 1}.Generate()
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		res, err := Run(ctx, Config{
			Trackers: 20, MapSlots: 2, ReduceSlots: 1, Heartbeat: 100 * time.Millisecond,
			Duration: 12 * time.Second, Warmup: 200 * time.Millisecond, StopWhenDone: true,
			Policy: "minedf", Jobs: jobs, Profiles: profiles, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Jobs) != 1 || res.Jobs[0].State != "SUCCEEDED" || res.Jobs[0].MapsDone != 100 || res.Jobs[0].DeadlineS != 4 {
			t.Fatalf("profiles %v: jobs %+v, want one that succeeded with its 100 maps and a 4 s deadline", profiles, res.Jobs)
		}
		if res.Profiles != profiles {
			t.Errorf("result's profiles %v, want %v", res.Profiles, profiles)
		}
		return res
	}
	without, with := run(false), run(true)
	if without.MapSlotUtilization < 0.3 {
		t.Errorf("without a profile the map slots were %.0f%% busy, want the job on every slot it could use (over 30%%)", 100*without.MapSlotUtilization)
	}
	if with.MapSlotUtilization > 0.2 {
		t.Errorf("with its profile the map slots were %.0f%% busy, want the job within its quota (about 12%%)", 100*with.MapSlotUtilization)
	}
}
