package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"gomr/mr"
	"gomr/mrpb"
)

// A restored attempt checkpointed again (a low-priority map preempted at
// every high-priority arrival): its image is restored with the paths its
// process sees, those of the chain's first attempt, bound over the new
// attempt's directories. Bound over the restored attempt's own instead,
// the second copy wrote its spills into the first attempt's directory, its
// tracker could not serve them, and the map failed on fetch failures after
// it had finished (seen in mrbench preemption's priority run).
func TestE2ECheckpointTwice(t *testing.T) {
	path := criuPath(t)
	skipUnderRace(t, "TestE2ECheckpointResume/local")
	c := startCluster(t, []trackerSpec{{"slow", 1, 0}, {"fast", 0, 2}},
		"mapreduce.tasktracker.criu.path="+path)
	spec, in, out := checkpointJob(t)
	id := c.submit(spec)
	first := c.runningMapAt(id, 0.05)
	waitFor(t, "a spill of "+first, 30*time.Second, func() bool { return len(c.spillsOf("slow", id, first)) >= 1 })
	if resp, err := c.client.CheckpointTask(context.Background(), first, false); err != nil || !resp.Ordered {
		t.Fatalf("checkpoint order: %v %v", resp, err)
	}
	waitFor(t, first+" checkpointed", 30*time.Second, func() bool { return c.attemptState(id, first) == "CHECKPOINTED" })
	second := c.runningMapAt(id, 0)
	if second == first {
		t.Fatalf("the restored attempt is %s, the checkpointed one", second)
	}
	// Checkpointed again once the restored attempt has spilled, so that
	// the reduces take spills of all three attempts.
	// The restored process may spill before the heartbeat that tells the
	// JobTracker it is restored: until then an order is refused by design
	// (spec §5.10), and asked again.
	waitFor(t, "a spill of "+second, 30*time.Second, func() bool { return len(c.spillsOf("slow", id, second)) >= 1 })
	var resp *mrpb.CheckpointTaskAttemptResponse
	var err error
	waitFor(t, "the JobTracker to take a checkpoint order of "+second, 30*time.Second, func() bool {
		resp, err = c.client.CheckpointTask(context.Background(), second, false)
		return err == nil || !strings.Contains(err.Error(), "is still being restored")
	})
	if err != nil || !resp.Ordered {
		t.Fatalf("second checkpoint order: %v %v", resp, err)
	}
	res := c.wait(id)
	if res.State != "SUCCEEDED" {
		t.Fatalf("job %s: %s", res.State, res.Error)
	}
	for _, a := range []string{first, second} {
		if st := c.attemptState(id, a); st != "CHECKPOINTED" {
			t.Errorf("attempt %s is %s, want CHECKPOINTED", a, st)
		}
	}
	checkCheckpointCounters(t, res, 2, 2) // and no failed map
	if n := res.Counters.Get(mr.JobCounterGroup, mr.TotalLaunchedMaps); n != 3 {
		t.Errorf("TOTAL_LAUNCHED_MAPS = %d, want 3 (the map and its two restores)", n)
	}
	checkWordCount(t, out, countWords(t, in))
	checkSameAsPlainRun(t, c, spec, out)
}
