package child

import (
	"context"
	"log/slog"
	"os"
	"runtime/debug"
)

// Garbage collector settings of a task child, the Go counterpart of the
// heap Hadoop sizes with mapred.child.java.opts. A task's live data is
// mostly long-lived, pointer-free buffers (the sort buffer's ring and
// record index, a reduce's fetched segments) that the runtime's default
// GOGC=100 would let the heap grow to twice the size of before a
// collection; collecting at keyGCPercent costs a map little, since its
// buffers are not scanned and are reused rather than reallocated. A
// reduce's fetched segments are not reused: each fetch allocates its
// blocks, so a shuffle of many small segments collects about four times
// as often as at 100 (about 0.9 µs of CPU a segment of 825 bytes, issue
// 17's shuffle measurements in docs/scaling.md). The soft memory
// limit makes the collector work harder (and return memory to the
// system) as the heap nears the task's budget: mapreduce.map.memory.mb
// for a map (0: twice the sort buffer plus 64 MiB), mapreduce.reduce.memory.mb
// for a reduce. A TaskTracker with a memory budget
// (mapreduce.tasktracker.memory.mb, tasktracker/memory.go) writes both, and
// the sort buffer, into the child's configuration from its slot's share.
// GOGC or GOMEMLIMIT set in the child's environment win.
const (
	keyGCPercent      = "mapreduce.task.gc.percent"
	keyMapMemoryMB    = "mapreduce.map.memory.mb"
	keyReduceMemoryMB = "mapreduce.reduce.memory.mb"
	keySortMB         = "mapreduce.task.io.sort.mb"
)

// mapMemoryMB is the memory budget of a map child in MiB.
func (t *task) mapMemoryMB() int64 {
	if mb := t.conf.Int(keyMapMemoryMB); mb > 0 {
		return int64(mb)
	}
	return 2*int64(t.conf.Int(keySortMB)) + 64
}

// setGC applies the task's garbage collector settings and returns them
// (-1 where the environment's setting was kept).
func (t *task) setGC() (percent int, limitMiB int64) {
	percent, limitMiB = -1, -1
	if os.Getenv("GOGC") == "" {
		percent = t.conf.Int(keyGCPercent)
		debug.SetGCPercent(percent)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		if t.isMap {
			limitMiB = t.mapMemoryMB()
		} else {
			limitMiB = int64(t.conf.Int(keyReduceMemoryMB))
		}
		debug.SetMemoryLimit(limitMiB << 20)
	}
	return percent, limitMiB
}

// MemoryShareEnv carries to a child the share of its TaskTracker's memory
// budget its memory settings were sized from, in MiB (unset: no budget).
const MemoryShareEnv = "GOMR_MEMORY_SHARE_MB"

// logMemory logs the memory settings the child runs with: its soft memory
// limit as the runtime has it (whoever set it: the task's configuration,
// which a TaskTracker with a memory budget sizes, or GOMEMLIMIT), and its
// sort buffer (a map) or reduce memory and its shuffle buffer's share of
// it (a reduce). It logs at Info under a tracker's memory budget, with the
// slot's share, and at Debug otherwise (a task's log holds only what its
// own code writes, unless a budget changed its settings).
func (t *task) logMemory() {
	level, args := slog.LevelDebug, []any{}
	if share := os.Getenv(MemoryShareEnv); share != "" {
		level, args = slog.LevelInfo, append(args, "share_mib", share)
	}
	args = append(args, "memory_limit_mib", debug.SetMemoryLimit(-1)>>20)
	if t.isMap {
		args = append(args, "sort_mb", t.conf.Int(keySortMB), "map_memory_mb", t.mapMemoryMB())
	} else {
		args = append(args, "reduce_memory_mb", t.conf.Int(keyReduceMemoryMB),
			"shuffle_buffer_percent", t.conf.Float("mapreduce.reduce.shuffle.input.buffer.percent"))
	}
	t.log.Log(context.Background(), level, "task memory", args...)
}
