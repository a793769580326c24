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
