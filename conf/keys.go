package conf

// keyTable lists the runtime's own configuration keys, those conf
// registers itself (registry.go): the map and reduce data path, task
// counts and attempts, job identity and ACLs, the client, the JobTracker
// and TaskTracker daemons, security and logging. Adding a key is adding
// one line: name, type, default (as text), description, optional Check
// (see checks.go), Job (may a job override it with -D), optional Unit ("ms"
// and "s" make Config.Duration convert the value). The scheduling
// policies' keys (scheduler.*) are declared in package partitions, the
// speculator's (speculation, the straggler injector) in package
// speculator.
var keyTable = []Key{
	// Map-side sort and spill.
	{Name: "mapreduce.task.io.sort.mb", Type: Int, Default: "100", Description: "map-side sort buffer size", Check: between(1, 2047), Job: true, Unit: "MiB"},
	{Name: "mapreduce.map.sort.spill.percent", Type: Float, Default: "0.80", Description: "sort buffer fill fraction that starts a spill", Check: aboveUpTo(0.0, 1.0), Job: true},
	{Name: "mapreduce.map.combine.table.percent", Type: Float, Default: "0.25", Description: "a map whose combiner runs in the sort buffer's combining table (a combiner, the default key order) cuts its spill once the table holds this fraction of mapreduce.task.io.sort.mb, so that keys that stop repeating cut smaller spills instead of taking several times the buffer; 0: the table grows to the whole buffer and then keeps records uncombined (docs/performance.md)", Check: between(0.0, 1.0), Job: true},
	{Name: "mapreduce.map.memory.mb", Type: Int, Default: "0", Description: "map task memory budget: the map child's soft memory limit (GOMEMLIMIT), near which its garbage collector works harder; 0: twice mapreduce.task.io.sort.mb plus 64 MiB; a TaskTracker with a memory budget sets it from its map slot's share", Check: atLeast(0), Job: true, Unit: "MiB"},
	{Name: "mapreduce.task.gc.percent", Type: Int, Default: "25", Description: "GOGC of task children: the heap grows by this percentage of the live data between collections (Go's default is 100; a task's live data is mostly long-lived, unscanned buffers, so collecting earlier costs little)", Check: atLeast(1), Job: true},
	{Name: "mapreduce.task.profile", Type: Bool, Default: "false", Description: "task children write a CPU profile of the attempt and a heap profile at its end (ATTEMPT.cpu.pprof, ATTEMPT.heap.pprof), and their peak RSS and GC figures (ATTEMPT.mem.txt)", Job: true},
	{Name: "mapreduce.task.profiledir", Type: String, Default: "", Description: "directory for the task profiles; empty: each attempt's own directory", Job: true},
	{Name: "mapreduce.task.io.sort.factor", Type: Int, Default: "10", Description: "number of streams merged at once; a reduce merges its disk runs' streams more at once when their buffers (144 KiB a stream) fit a quarter of its shuffle buffer", Check: atLeast(2), Job: true},

	// Task counts, attempts and input splits.
	{Name: "mapreduce.job.maps", Type: Int, Default: "2", Description: "number of map tasks for jobs that generate their input (teragen, sleep)", Check: atLeast(1), Job: true},
	{Name: "mapreduce.job.reduces", Type: Int, Default: "1", Description: "number of reduce tasks; 0 makes a map-only job", Check: atLeast(0), Job: true},
	{Name: "mapreduce.job.maxtaskfailures.per.tracker", Type: Int, Default: "4", Description: "failed attempts of a job on one tracker after which the job gives it no more tasks (Hadoop 1: mapred.max.tracker.failures)", Check: atLeast(1), Job: true},
	{Name: "mapreduce.job.blacklist.max.percent", Type: Float, Default: "0.25", Description: "a job ignores its tracker blacklist once it has blacklisted this fraction of the trackers (hard-coded in Hadoop)", Check: between(0.0, 1.0), Job: true},
	{Name: "mapreduce.map.maxattempts", Type: Int, Default: "4", Description: "attempts of a map task before the job fails", Check: atLeast(1), Job: true},
	{Name: "mapreduce.reduce.maxattempts", Type: Int, Default: "4", Description: "attempts of a reduce task before the job fails", Check: atLeast(1), Job: true},
	{Name: "mapreduce.input.fileinputformat.split.maxsize", Type: Int64, Default: "134217728", Description: "largest input split", Check: atLeast(int64(1)), Job: true, Unit: "bytes"},
	{Name: "mapreduce.input.fileinputformat.split.minsize", Type: Int64, Default: "1", Description: "smallest input split", Check: atLeast(int64(1)), Job: true, Unit: "bytes"},

	// Reduce-side shuffle and merge.
	{Name: "mapreduce.job.reduce.slowstart.completedmaps", Type: Float, Default: "0.05", Description: "fraction of maps done before reduces are scheduled", Check: between(0.0, 1.0), Job: true},
	{Name: "mapreduce.reduce.shuffle.parallelcopies", Type: Int, Default: "5", Description: "map outputs a reduce fetches at once", Check: atLeast(1), Job: true},
	{Name: "mapreduce.reduce.shuffle.fetch.retries", Type: Int, Default: "3", Description: "retries of one segment fetch before it is reported as failed", Check: atLeast(0), Job: true},
	{Name: "mapreduce.reduce.shuffle.retry.delay.ms", Type: Int, Default: "200", Description: "first back-off between fetch retries (doubles each retry)", Check: atLeast(0), Job: true, Unit: "ms"},
	{Name: "mapreduce.job.maxfetchfailures.per.map", Type: Int, Default: "3", Description: "fetch-failure reports from reducers after which a completed map is re-run", Check: atLeast(1), Job: true},
	{Name: "mapreduce.reduce.memory.mb", Type: Int, Default: "1024", Description: "reduce task memory budget (and the reduce child's soft memory limit, GOMEMLIMIT); a TaskTracker with a memory budget, mapreduce.tasktracker.memory.mb, sets it from its reduce slot's share", Check: atLeast(16), Job: true, Unit: "MiB"},
	{Name: "mapreduce.reduce.shuffle.input.buffer.percent", Type: Float, Default: "0.70", Description: "share of reduce memory for fetched segments", Check: between(0.0, 1.0), Job: true},
	{Name: "mapreduce.reduce.shuffle.memory.limit.percent", Type: Float, Default: "0.25", Description: "largest single segment kept in memory, as a share of the shuffle buffer", Check: between(0.0, 1.0), Job: true},
	{Name: "mapreduce.reduce.shuffle.merge.percent", Type: Float, Default: "0.66", Description: "shuffle buffer fill that starts an in-memory merge to disk", Check: between(0.0, 1.0), Job: true},
	{Name: "mapreduce.reduce.merge.inmem.threshold", Type: Int, Default: "1000", Description: "in-memory segments of a reduce that start their merge to disk whatever their bytes; 0: only mapreduce.reduce.shuffle.merge.percent does", Check: atLeast(0), Job: true},
	{Name: "mapreduce.reduce.input.buffer.percent", Type: Float, Default: "0.70", Description: "share of reduce memory that fetched segments may keep in memory through the reduce; the rest are merged to disk before it starts (Hadoop's default is 0.0, for the JVM heap of the reducer; here the segments are pointer-free buffers, and writing them out costs a decode and encode of every record: docs/performance.md)", Check: between(0.0, 1.0), Job: true},

	// Task liveness.
	{Name: "mapreduce.job.userlog.retain.hours", Type: Float, Default: "24", Description: "how long a TaskTracker keeps the logs (stdout, stderr) of a finished job's attempts, served by mr job -logs and the web UI; fractions of an hour allowed", Check: aboveUpTo(0, 1e6), Unit: "h"},
	{Name: "mapreduce.task.timeout", Type: Int, Default: "600000", Description: "an attempt reporting no progress for this long is failed; 0 disables", Check: atLeast(0), Job: true, Unit: "ms"},
	{Name: "mapreduce.task.progress.report.interval", Type: Int, Default: "500", Description: "how often a task child reports progress", Check: atLeast(10), Job: true, Unit: "ms"},

	// Job identity and scheduling.
	{Name: "mapreduce.job.name", Type: String, Default: "", Description: "job name override; empty keeps the app's name", Job: true},
	{Name: "mapreduce.job.priority", Type: String, Default: "NORMAL", Description: "job priority", Check: oneOf("VERY_HIGH", "HIGH", "NORMAL", "LOW", "VERY_LOW"), Job: true},
	{Name: "mapreduce.job.queuename", Type: String, Default: "default", Description: "pool/queue of the job", Check: nonEmpty, Job: true},
	{Name: "mapreduce.job.deadline.seconds", Type: Float, Default: "0", Description: "relative deadline for deadline policies; 0 means none", Check: atLeast(0.0), Job: true, Unit: "s"},

	// Job ACLs (enforced with mapreduce.cluster.acls.enabled). See docs/security.md.
	{Name: "mapreduce.job.acl-view-job", Type: String, Default: "", Description: `who besides the owner and the administrators may see the job's status, counters and history: "user1,user2 group1,group2", "*" for everyone; empty: nobody`, Job: true},
	{Name: "mapreduce.job.acl-modify-job", Type: String, Default: "", Description: `who besides the owner and the administrators may kill the job: "user1,user2 group1,group2", "*" for everyone; empty: nobody`, Job: true},

	// Built-in apps (Hadoop's TeraSort keys).
	{Name: "mapreduce.terasort.partitions.sample", Type: Int, Default: "100000", Description: "keys terasort samples to choose its reduce split points", Check: atLeast(1), Job: true},
	{Name: "mapreduce.terasort.num.partitions", Type: Int, Default: "10", Description: "input splits terasort samples from", Check: atLeast(1), Job: true},

	// Client.
	{Name: "mapreduce.jobclient.retry.timeout", Type: Int, Default: "120000", Description: "how long a client waiting for a job retries a JobTracker it cannot reach (a restart)", Check: atLeast(0), Job: true, Unit: "ms"},

	// JobTracker (cluster).
	{Name: "mapreduce.jobtracker.address", Type: String, Default: "127.0.0.1:8021", Description: "JobTracker RPC address (host:port)", Check: hostPort},
	{Name: "mapreduce.jobtracker.http.address", Type: String, Default: "127.0.0.1:50030", Description: "JobTracker status pages, JSON API and metrics (host:port)", Check: hostPort},
	{Name: "mapreduce.jobtracker.expire.trackers.interval", Type: Int, Default: "600000", Description: "a TaskTracker silent this long is declared lost", Check: atLeast(100), Unit: "ms"},
	{Name: "mapreduce.jobtracker.jobhistory.location", Type: String, Default: "/tmp/gomr/history", Description: "directory of job history files", Check: nonEmpty},
	{Name: "mapreduce.jobtracker.map-events.max-segments", Type: Int64, Default: "1000000", Description: "largest maps × reduces of a job whose spill events carry each reduce's segment of the spill; a larger job's events name the spill only, its reduces read their segments from the index of the tracker that serves it (one more small request a batch), and the JobTracker keeps a 20-byte digest a spill instead of about 13 bytes a segment, as Hadoop's JobTracker keeps nothing per reduce; 0: every job with reduces announces spills only; -1: no job does", Check: atLeast(int64(-1)), Unit: "segments"},
	{Name: "mapreduce.jobtracker.restart.recover", Type: Bool, Default: "true", Description: "a restarted JobTracker recovers the jobs that were running (Hadoop 1: mapred.jobtracker.restart.recover, default false); false records them as failed"},
	{Name: "mapreduce.jobtracker.restart.tracker-wait", Type: Int, Default: "30000", Description: "how long a recovered job's completed maps wait for their tracker to register again before they run again", Check: atLeast(0), Unit: "ms"},
	{Name: "mapreduce.jobtracker.system.dir", Type: String, Default: "", Description: "directory where the JobTracker keeps the jobs it has not finished (with their secrets, owner-only); empty: system beside the history directory"},
	{Name: "mapreduce.jobtracker.tasktracker.maxblacklists", Type: Int, Default: "4", Description: "faults (succeeded jobs that blacklisted it) after which a tracker gets no task of any job (Hadoop 1: mapred.max.tracker.blacklists)", Check: atLeast(1)},
	{Name: "mapreduce.jobtracker.blacklist.fault-timeout-window", Type: Int, Default: "180", Description: "how long a tracker's fault counts toward its blacklisting", Check: atLeast(1), Unit: "min"},
	{Name: "mapreduce.jobtracker.blacklist.max.percent", Type: Float, Default: "0.5", Description: "largest fraction of the trackers blacklisted across all jobs at once", Check: between(0.0, 1.0)},

	// JobTracker: completed-job retirement (Hadoop 1's keys and defaults;
	// docs/reliability.md).
	{Name: "mapred.jobtracker.retirejob.interval", Type: Int, Default: "86400000", Description: "a completed job is retired from the JobTracker's memory this long after it ended; a retired job is answered from the retired-jobs cache or its history file", Check: atLeast(0), Unit: "ms"},
	{Name: "mapred.jobtracker.retirejob.check", Type: Int, Default: "60000", Description: "how often the JobTracker looks for completed jobs to retire", Check: atLeast(10), Unit: "ms"},
	{Name: "mapred.jobtracker.completeuserjobs.maximum", Type: Int, Default: "100", Description: "completed jobs of one user kept in the JobTracker's memory; past it the user's oldest are retired at the next check", Check: atLeast(0)},
	{Name: "mapred.job.tracker.retiredjobs.cache.size", Type: Int, Default: "1000", Description: "retired jobs whose summary (state, times, task counts, counters) stays in memory for job lists and status; older ones are read from the job history", Check: atLeast(0)},

	// TaskTracker (cluster).
	{Name: "mapreduce.tasktracker.map.tasks.maximum", Type: Int, Default: "2", Description: "map slots per TaskTracker", Check: atLeast(0)},
	{Name: "mapreduce.tasktracker.reduce.tasks.maximum", Type: Int, Default: "2", Description: "reduce slots per TaskTracker", Check: atLeast(0)},
	{Name: "mapreduce.tasktracker.heartbeat.interval", Type: Int, Default: "300", Description: "TaskTracker heartbeat period until the JobTracker's first reply, and the least interval the JobTracker tells (it grows with the cluster: mapreduce.jobtracker.heartbeats.in.second)", Check: atLeast(10), Unit: "ms"},
	{Name: "mapreduce.tasktracker.heartbeat.pacing", Type: String, Default: "send", Description: "from when a TaskTracker counts the interval to its next heartbeat: send (from when the last one was sent, so a late reply does not move the tracker's place in the interval; at least half an interval after the reply) or reply (from when the reply arrived, as Hadoop 1; a JobTracker's stall then gathers the heartbeats that waited on it into one wave each interval)", Check: oneOf("send", "reply")},
	{Name: "mapreduce.tasktracker.outofband.heartbeat", Type: Bool, Default: "true", Description: "heartbeat at once when a task ends"},
	{Name: "mapreduce.tasktracker.http.address", Type: String, Default: "127.0.0.1:0", Description: "tracker HTTP server address: shuffle, task logs and metrics (host:port; port 0 = any)", Check: hostPort},
	{Name: "mapreduce.tasktracker.report.address", Type: String, Default: "127.0.0.1:0", Description: "umbilical address for task children (host:port; port 0 = any)", Check: hostPort},
	{Name: "mapreduce.shuffle.request.window", Type: Int, Default: "60000", Description: "how far the signed time of a shuffle or checkpoint request may be from the TaskTracker's clock; a captured request is refused after it", Check: atLeast(1000), Unit: "ms"},
	{Name: "mapreduce.tasktracker.host.name", Type: String, Default: "", Description: "host name the TaskTracker reports; empty uses os.Hostname"},
	{Name: "mapreduce.tasktracker.criu.path", Type: String, Default: "/opt/gomr/criu/criu.sh", Description: "CRIU binary (or the wrapper `make criu` installs) used to clone running attempts; empty disables cloning on this TaskTracker"},
	{Name: "mapreduce.cluster.local.dir", Type: String, Default: "/tmp/gomr/local", Description: "TaskTracker-local work directory: spills, attempt dirs, logs", Check: nonEmpty},

	// Security (cluster; clients set the TLS keys to their own certificate). See docs/security.md.
	{Name: "mapreduce.cluster.tls.enabled", Type: Bool, Default: "false", Description: "mutual TLS on every connection to the JobTracker and to the TaskTrackers' shuffle servers; the JobTracker then takes each caller's identity from its certificate"},
	{Name: "mapreduce.cluster.tls.ca", Type: String, Default: "", Description: "cluster CA certificate (PEM) every peer's certificate must chain to (mr certs ca)"},
	{Name: "mapreduce.cluster.tls.cert", Type: String, Default: "", Description: "this process's certificate (PEM; mr certs issue): a jobtracker, tasktracker or user certificate"},
	{Name: "mapreduce.cluster.tls.key", Type: String, Default: "", Description: "private key (PEM) of mapreduce.cluster.tls.cert"},
	{Name: "mapreduce.cluster.acls.enabled", Type: Bool, Default: "false", Description: "enforce job ACLs on job status, history and kill (Hadoop 1: mapred.acls.enabled); needs mapreduce.cluster.tls.enabled"},
	{Name: "mapreduce.cluster.administrators", Type: String, Default: "", Description: `users and groups who may view and modify every job: "user1,user2 group1,group2", "*" for everyone; empty: nobody`},

	// Logging (cluster).
	{Name: "log.level", Type: String, Default: "info", Description: "log level", Check: oneOf("debug", "info", "warn", "error")},
}
