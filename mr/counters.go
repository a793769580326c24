package mr

import (
	"sort"
	"sync"
	"sync/atomic"
)

// Counter groups, named as Hadoop names them so that users find the
// counters they know.
const (
	TaskCounterGroup       = "org.apache.hadoop.mapreduce.TaskCounter"
	JobCounterGroup        = "org.apache.hadoop.mapreduce.JobCounter"
	FileSystemCounterGroup = "org.apache.hadoop.mapreduce.FileSystemCounter"
	ShuffleErrorsGroup     = "Shuffle Errors"
	// FileInputFormatCounterGroup holds BytesRead: the bytes the maps'
	// record readers read from their splits.
	FileInputFormatCounterGroup = "org.apache.hadoop.mapreduce.lib.input.FileInputFormatCounter"
	// FileOutputFormatCounterGroup holds BytesWritten: the bytes the
	// tasks' record writers wrote to the job's output.
	FileOutputFormatCounterGroup = "org.apache.hadoop.mapreduce.lib.output.FileOutputFormatCounter"
	// SpeculationGroup holds the speculation and cloning counters, which
	// Hadoop has no group for.
	SpeculationGroup = "gomr.Speculation"
)

// Speculation counter names (group SpeculationGroup).
const (
	SpeculativeMaps     = "SPECULATIVE_MAPS"      // speculative map attempts launched (fresh or cloned)
	SpeculativeReduces  = "SPECULATIVE_REDUCES"   // speculative reduce attempts launched
	SpeculativeWins     = "SPECULATIVE_WINS"      // speculative attempts that finished before the original
	ClonesLaunched      = "CLONES_LAUNCHED"       // speculative attempts made by cloning the running process
	CloneFallbacks      = "CLONE_FALLBACKS"       // clones that could not be made and became fresh attempts
	CloneBytes          = "CLONE_BYTES"           // image plus file-set bytes of the clones made
	CloneDumpMillis     = "CLONE_DUMP_MILLIS"     // time to quiesce and dump the originals
	CloneTransferMillis = "CLONE_TRANSFER_MILLIS" // time to copy images and file sets to the target tracker
	CloneRestoreMillis  = "CLONE_RESTORE_MILLIS"
)

// Task counter names (group TaskCounterGroup).
const (
	MapInputRecords            = "MAP_INPUT_RECORDS"
	MapOutputRecords           = "MAP_OUTPUT_RECORDS"
	MapOutputBytes             = "MAP_OUTPUT_BYTES"
	MapOutputMaterializedBytes = "MAP_OUTPUT_MATERIALIZED_BYTES"
	CombineInputRecords        = "COMBINE_INPUT_RECORDS"
	CombineOutputRecords       = "COMBINE_OUTPUT_RECORDS"
	SpilledRecords             = "SPILLED_RECORDS"
	ReduceInputGroups          = "REDUCE_INPUT_GROUPS"
	ReduceInputRecords         = "REDUCE_INPUT_RECORDS"
	ReduceOutputRecords        = "REDUCE_OUTPUT_RECORDS"
	ReduceShuffleBytes         = "REDUCE_SHUFFLE_BYTES"
	ShuffledMaps               = "SHUFFLED_MAPS"
	FailedShuffle              = "FAILED_SHUFFLE"
	CPUMilliseconds            = "CPU_MILLISECONDS"
	MergedMapOutputs           = "MERGED_MAP_OUTPUTS"
	// GCTimeMillis is the CPU time the Go runtime estimates its garbage
	// collector took in the task (Hadoop: the JVM's GC time).
	GCTimeMillis = "GC_TIME_MILLIS"
	// PhysicalMemoryBytes and VirtualMemoryBytes are the task process's
	// resident and virtual sizes at its last report (snapshots, summed
	// over the job's tasks as in Hadoop).
	PhysicalMemoryBytes = "PHYSICAL_MEMORY_BYTES"
	VirtualMemoryBytes  = "VIRTUAL_MEMORY_BYTES"
	// CommittedHeapBytes is the heap the Go runtime holds for the task
	// (in use or free, not returned to the OS; Hadoop: the JVM's
	// committed heap).
	CommittedHeapBytes = "COMMITTED_HEAP_BYTES"
)

// File format counter names (groups FileInputFormatCounterGroup and
// FileOutputFormatCounterGroup).
const (
	BytesRead    = "BYTES_READ"
	BytesWritten = "BYTES_WRITTEN"
)

// Job counter names (group JobCounterGroup).
const (
	TotalLaunchedMaps    = "TOTAL_LAUNCHED_MAPS"
	TotalLaunchedReduces = "TOTAL_LAUNCHED_REDUCES"
	NumFailedMaps        = "NUM_FAILED_MAPS"
	NumFailedReduces     = "NUM_FAILED_REDUCES"
	NumKilledMaps        = "NUM_KILLED_MAPS"
	NumKilledReduces     = "NUM_KILLED_REDUCES"
	MillisMaps           = "MILLIS_MAPS"
	MillisReduces        = "MILLIS_REDUCES"
	DataLocalMaps        = "DATA_LOCAL_MAPS"
	// NondeterministicMapReruns counts map attempts whose output differs
	// from the output of an earlier attempt of their map that reducers were
	// told of and that was withdrawn (its tracker lost, or too many fetch
	// failures): the map is not deterministic (docs/architecture.md).
	NondeterministicMapReruns = "NONDETERMINISTIC_MAP_RERUNS"
	// Preemption by checkpoint (CRIU): attempts checkpointed, the bytes of
	// their images and working-file snapshots, the time their dumps and
	// the restores took, and the work saved: the run time a kill would
	// have thrown away.
	Checkpoints               = "CHECKPOINTS"
	CheckpointBytes           = "CHECKPOINT_BYTES"
	CheckpointDumpMillis      = "CHECKPOINT_DUMP_MILLIS"
	CheckpointRestores        = "CHECKPOINT_RESTORES"
	CheckpointRestoreMillis   = "CHECKPOINT_RESTORE_MILLIS"
	CheckpointWorkSavedMillis = "CHECKPOINT_WORK_SAVED_MILLIS"
)

// File system counter names (group FileSystemCounterGroup); Hadoop prefixes
// them with the scheme: FILE_BYTES_READ, HDFS_BYTES_WRITTEN.
const (
	FileBytesRead    = "FILE_BYTES_READ"
	FileBytesWritten = "FILE_BYTES_WRITTEN"
	HDFSBytesRead    = "HDFS_BYTES_READ"
	HDFSBytesWritten = "HDFS_BYTES_WRITTEN"
)

// GroupDisplayName returns the name Hadoop's client prints for a group.
func GroupDisplayName(group string) string {
	switch group {
	case TaskCounterGroup:
		return "Map-Reduce Framework"
	case JobCounterGroup:
		return "Job Counters"
	case FileSystemCounterGroup:
		return "File System Counters"
	case FileInputFormatCounterGroup:
		return "File Input Format Counters"
	case FileOutputFormatCounterGroup:
		return "File Output Format Counters"
	case SpeculationGroup:
		return "Speculation"
	case SplitGroup:
		return "Map Splits"
	}
	return group
}

// counterDisplayNames are the names Hadoop's client prints for the
// counters of its groups (its TaskCounter, JobCounter and format counter
// resource bundles), by group and name.
var counterDisplayNames = map[string]map[string]string{
	TaskCounterGroup: {
		MapInputRecords:            "Map input records",
		MapOutputRecords:           "Map output records",
		MapOutputBytes:             "Map output bytes",
		MapOutputMaterializedBytes: "Map output materialized bytes",
		"SPLIT_RAW_BYTES":          "Input split bytes",
		CombineInputRecords:        "Combine input records",
		CombineOutputRecords:       "Combine output records",
		ReduceInputGroups:          "Reduce input groups",
		ReduceShuffleBytes:         "Reduce shuffle bytes",
		ReduceInputRecords:         "Reduce input records",
		ReduceOutputRecords:        "Reduce output records",
		SpilledRecords:             "Spilled Records",
		ShuffledMaps:               "Shuffled Maps",
		FailedShuffle:              "Failed Shuffles",
		MergedMapOutputs:           "Merged Map outputs",
		GCTimeMillis:               "GC time elapsed (ms)",
		CPUMilliseconds:            "CPU time spent (ms)",
		PhysicalMemoryBytes:        "Physical memory (bytes) snapshot",
		VirtualMemoryBytes:         "Virtual memory (bytes) snapshot",
		CommittedHeapBytes:         "Total committed heap usage (bytes)",
	},
	JobCounterGroup: {
		TotalLaunchedMaps:    "Launched map tasks",
		TotalLaunchedReduces: "Launched reduce tasks",
		NumFailedMaps:        "Failed map tasks",
		NumFailedReduces:     "Failed reduce tasks",
		NumKilledMaps:        "Killed map tasks",
		NumKilledReduces:     "Killed reduce tasks",
		MillisMaps:           "Total time spent by all map tasks (ms)",
		MillisReduces:        "Total time spent by all reduce tasks (ms)",
		DataLocalMaps:        "Data-local map tasks",
		"RACK_LOCAL_MAPS":    "Rack-local map tasks",
		"OTHER_LOCAL_MAPS":   "Other local map tasks",

		// Which Hadoop does not count.
		NondeterministicMapReruns: "Non-deterministic map re-runs",

		// Preemption by checkpoint, which Hadoop does not have.
		Checkpoints:               "Checkpointed tasks",
		CheckpointBytes:           "Checkpoint bytes",
		CheckpointDumpMillis:      "Total time spent dumping checkpoints (ms)",
		CheckpointRestores:        "Restored tasks",
		CheckpointRestoreMillis:   "Total time spent restoring checkpoints (ms)",
		CheckpointWorkSavedMillis: "Work saved by checkpoints (ms)",
	},
	FileSystemCounterGroup: {
		FileBytesRead:    "FILE: Number of bytes read",
		FileBytesWritten: "FILE: Number of bytes written",
		HDFSBytesRead:    "HDFS: Number of bytes read",
		HDFSBytesWritten: "HDFS: Number of bytes written",
	},
	SplitGroup: {
		MapSplits:           "Map attempts split",
		SplitFragments:      "Spills committed by split attempts",
		RemainderBytes:      "Input bytes handed to remainders",
		RemainderRecords:    "Input records read by remainders",
		ReduceSplits:        "Reduce attempts split",
		OutputFragments:     "Output fragments committed by split reduces",
		ScaleUpSplits:       "Map splits for idle slots (scale-up)",
		ScaleUpMaps:         "Maps added by scale-up splits",
		ScaleUpReduceSplits: "Reduce splits for idle slots (scale-up)",
		ScaleUpReduces:      "Reduces added by scale-up splits",
	},
	FileInputFormatCounterGroup:  {BytesRead: "Bytes Read"},
	FileOutputFormatCounterGroup: {BytesWritten: "Bytes Written"},
}

// CounterDisplayName returns the name Hadoop's client prints for a
// counter ("Map input records" for MAP_INPUT_RECORDS); a counter Hadoop
// has no display name for keeps its own.
func CounterDisplayName(group, name string) string {
	if d, ok := counterDisplayNames[group][name]; ok {
		return d
	}
	return name
}

// Counter is a named 64-bit count, safe for concurrent use.
type Counter struct{ v atomic.Int64 }

// Add adds n to the counter.
func (c *Counter) Add(n int64) { c.v.Add(n) }

// Increment adds one.
func (c *Counter) Increment() { c.v.Add(1) }

// Value returns the current count.
func (c *Counter) Value() int64 { return c.v.Load() }

// Set replaces the count (used for gauges such as CPU time).
func (c *Counter) Set(n int64) { c.v.Store(n) }

// Counters is a live set of counters, grouped, safe for concurrent use.
type Counters struct {
	mu     sync.Mutex
	groups map[string]map[string]*Counter
}

// NewCounters returns an empty set.
func NewCounters() *Counters { return &Counters{groups: map[string]map[string]*Counter{}} }

// Get returns the counter (group, name), creating it at zero.
func (cs *Counters) Get(group, name string) *Counter {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	g, ok := cs.groups[group]
	if !ok {
		g = map[string]*Counter{}
		cs.groups[group] = g
	}
	c, ok := g[name]
	if !ok {
		c = &Counter{}
		g[name] = c
	}
	return c
}

// Snapshot returns the current values.
func (cs *Counters) Snapshot() CounterSet {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	out := CounterSet{}
	for g, m := range cs.groups {
		for n, c := range m {
			out.Add(g, n, c.Value())
		}
	}
	return out
}

// CounterSet is a plain snapshot of counter values: group -> name -> value.
type CounterSet map[string]map[string]int64

// Add adds v to (group, name).
func (s CounterSet) Add(group, name string, v int64) {
	g, ok := s[group]
	if !ok {
		g = map[string]int64{}
		s[group] = g
	}
	g[name] += v
}

// Get returns the value of (group, name), zero if absent.
func (s CounterSet) Get(group, name string) int64 { return s[group][name] }

// Merge adds every value of o into s.
func (s CounterSet) Merge(o CounterSet) {
	for g, m := range o {
		for n, v := range m {
			s.Add(g, n, v)
		}
	}
}

// Subtract takes every value of o out of s (the inverse of Merge); a
// counter that comes to 0 is removed, and so is a group left empty.
func (s CounterSet) Subtract(o CounterSet) {
	for g, m := range o {
		for n, v := range m {
			s.Sub(g, n, v)
		}
	}
}

// Sub takes v from (group, name); a counter that comes to 0 is removed,
// and so is a group left empty.
func (s CounterSet) Sub(group, name string, v int64) {
	s.Add(group, name, -v)
	if g := s[group]; g[name] == 0 {
		delete(g, name)
		if len(g) == 0 {
			delete(s, group)
		}
	}
}

// Groups returns the group names in a stable order: Hadoop's own groups
// first, in the order its client prints them, then the rest
// alphabetically.
func (s CounterSet) Groups() []string {
	rank := map[string]int{FileSystemCounterGroup: 0, JobCounterGroup: 1, TaskCounterGroup: 2, ShuffleErrorsGroup: 3,
		FileInputFormatCounterGroup: 4, FileOutputFormatCounterGroup: 5}
	out := make([]string, 0, len(s))
	for g := range s {
		out = append(out, g)
	}
	sort.Slice(out, func(i, j int) bool {
		ri, iok := rank[out[i]]
		rj, jok := rank[out[j]]
		switch {
		case iok && jok:
			return ri < rj
		case iok != jok:
			return iok
		}
		return out[i] < out[j]
	})
	return out
}

// Names returns the counter names of a group, sorted.
func (s CounterSet) Names(group string) []string {
	out := make([]string, 0, len(s[group]))
	for n := range s[group] {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
