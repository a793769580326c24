package tasktracker

import "gomr/conf"

// KeyCheckpointDir names the directory where a TaskTracker keeps the
// images of attempts it checkpointed for preemption (empty: under its job
// directories in mapreduce.cluster.local.dir). Images can be as large as
// the tasks' memory (spec/preemption-elasticity.md §6.1 item 6), so a
// deployment may want them on a medium of their own.
const KeyCheckpointDir = "mapreduce.tasktracker.checkpoint.dir"

func init() {
	conf.Register(conf.Key{Name: KeyCheckpointDir, Type: conf.String, Default: "",
		Description: "directory for the CRIU images of attempts checkpointed for preemption (under <dir>/<tracker>/<job>/); empty: in the job's directory under mapreduce.cluster.local.dir"})
}

// KeyCheckpointMaxConcurrent names the number of CRIU operations (dumps for
// preemption and for clones, restores) a TaskTracker runs at once
// (spec/preemption-elasticity.md §5.6, ckpt.maxConcurrentPerNode); the
// others wait in its checkpoint/restore queue. 1 is the spec's default
// (sequential, [002 §3.4.2.2]): two dumps at once share the disk and the
// CPU, but the second victim on a tracker no longer waits for the first's
// whole dump to free its slot.
const KeyCheckpointMaxConcurrent = "mapreduce.tasktracker.checkpoint.max-concurrent"

func init() {
	conf.Register(conf.Key{Name: KeyCheckpointMaxConcurrent, Type: conf.Int, Default: "1",
		Description: "CRIU operations (preemption dumps, restores, clone dumps) a tracker runs at once; the others wait in its checkpoint/restore queue, in the order preemption dumps, restores, clone dumps (spec ckpt.maxConcurrentPerNode)",
		Valid:       "an integer >= 1"})
}
