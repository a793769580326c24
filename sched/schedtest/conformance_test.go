package schedtest_test

import (
	"flag"
	"testing"

	"gomr/sched/schedtest"
)

var rewrite = flag.Bool("rewrite", false, "write the reference host's transcripts into the scenario files")

// TestConformanceReference replays the conformance scenarios through the
// reference host; jobtracker's TestConformance replays the same files
// through a JobTracker.
func TestConformanceReference(t *testing.T) {
	schedtest.Replay(t, "../testdata/conformance/*.txt", schedtest.NewCluster, *rewrite)
}

// TestPreemptionReference replays the preemption scenarios (checkpoint and
// split choices of the planner) through the reference host, which models
// them; a JobTracker replays them in its own tests once its trackers
// checkpoint and split.
func TestPreemptionReference(t *testing.T) {
	schedtest.Replay(t, "../testdata/preemption/*.txt", schedtest.NewCluster, *rewrite)
}
