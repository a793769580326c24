package child

import (
	"os"
	"runtime/debug"
)

// Garbage collector settings of a task child, the Go counterpart of the
// heap Hadoop sizes with mapred.child.java.opts. A task's live data is
// mostly long-lived, pointer-free buffers (the sort buffer's ring and
// record index, a reduce's fetched segments) that the runtime's default
// GOGC=100 would let the heap grow to twice the size of before a
// collection; collecting at keyGCPercent costs little, since such buffers
// are not scanned and are reused rather than reallocated. The soft memory
// limit makes the collector work harder (and return memory to the
// system) as the heap nears the task's budget: mapreduce.map.memory.mb
// for a map (0: twice the sort buffer plus 64 MiB), mapreduce.reduce.memory.mb
// for a reduce. GOGC or GOMEMLIMIT set in the child's environment win.
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
