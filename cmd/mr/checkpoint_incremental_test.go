package main

import (
	"context"
	"strings"
	"testing"

	"gomr/mrpb"
)

// An incremental checkpoint order (spec §5.8) where no same-process parent
// image exists, and on these machines no memory tracking either (the
// kernel lacks soft-dirty bits): the tracker dumps in full, says why, and
// the checkpoint works as a full one: CHECKPOINTED, not incremental,
// restored, the output byte for byte that of an undisturbed run.
func TestE2ECheckpointIncrementalFallsBackToFull(t *testing.T) {
	skipUnderRace(t, "TestE2ECheckpointResume/local")
	path := criuPath(t)
	c := startCluster(t, []trackerSpec{{"slow", 1, 0}, {"fast", 0, 2}},
		"mapreduce.tasktracker.criu.path="+path)
	spec, in, out := checkpointJob(t)
	id := c.submit(spec)
	victim := c.runningMapAt(id, 0.05)
	resp, err := c.client.RPC().CheckpointTaskAttempt(context.Background(),
		&mrpb.CheckpointTaskAttemptRequest{AttemptId: victim, Incremental: true})
	if err != nil || !resp.Ordered {
		t.Fatalf("incremental checkpoint order: %v %v", resp, err)
	}
	res := c.wait(id)
	checkResumed(t, c, id, victim, res, "")
	why := c.logValue("slow", "incremental checkpoint ordered; dumping in full", "why")
	lines := c.logLines("slow", "incremental checkpoint ordered; dumping in full")
	t.Log(lines)
	tracking := !c.logHas("slow", "CRIU cannot track memory on this kernel")
	if !tracking && !strings.Contains(lines[0], "CONFIG_MEM_SOFT_DIRTY") {
		t.Errorf("the full dump of an incremental order does not say the kernel cannot track memory: %s", why)
	}
	checkWordCount(t, out, countWords(t, in))
	checkSameAsPlainRun(t, c, spec, out)
}
