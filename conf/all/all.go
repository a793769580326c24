// Package all links every package that registers configuration keys with
// conf, so that a program importing it knows, accepts and lists every key,
// as a program using database/sql imports its drivers:
//
//	import _ "gomr/conf/all"
//
// cmd/mr imports it, and the reference table of docs/configuration.md is
// generated with it. A new package that registers keys adds one line here;
// TestEveryRegisteringPackageIsLinked fails until it does.
package all

import (
	// The job API's keys (mapreduce.job.split.safe).
	_ "gomr/mr"
	// The scheduling policies' keys (scheduler.*).
	_ "gomr/partitions"
	// The preemption planner's keys (preemption.*).
	_ "gomr/preempt"
	// The speculator's keys (speculation, the straggler injector).
	_ "gomr/speculator"
	// The shuffle's batched fetch keys (mapreduce.reduce.shuffle.batch.*).
	_ "gomr/shuffle"
	// The JobTracker's heartbeat pacing (mapreduce.jobtracker.heartbeats.*).
	_ "gomr/jobtracker"
	// The TaskTracker's checkpoint image directory.
	_ "gomr/tasktracker"
)
