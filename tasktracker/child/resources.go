package child

import (
	"os"
	"runtime/metrics"
	"strconv"
	"strings"

	"gomr/mr"
)

// resourceMetrics are the Go runtime metrics behind the GC and heap
// counters.
var resourceMetrics = []string{
	"/cpu/classes/gc/total:cpu-seconds", // GC_TIME_MILLIS
	"/memory/classes/heap/objects:bytes",
	"/memory/classes/heap/unused:bytes",
	"/memory/classes/heap/free:bytes", // with the two above: COMMITTED_HEAP_BYTES
}

// setResourceCounters sets the task's Hadoop resource counters: the
// garbage collector's CPU time (the runtime's estimate), the heap the
// runtime holds (in use or free, not released to the OS), and the
// process's resident and virtual sizes (from /proc/self/statm; left
// unset where it cannot be read).
func setResourceCounters(cs *mr.Counters) {
	samples := make([]metrics.Sample, len(resourceMetrics))
	for i, name := range resourceMetrics {
		samples[i].Name = name
	}
	metrics.Read(samples)
	value := func(i int) float64 {
		switch samples[i].Value.Kind() {
		case metrics.KindFloat64:
			return samples[i].Value.Float64()
		case metrics.KindUint64:
			return float64(samples[i].Value.Uint64())
		}
		return 0
	}
	cs.Get(mr.TaskCounterGroup, mr.GCTimeMillis).Set(int64(value(0) * 1000))
	cs.Get(mr.TaskCounterGroup, mr.CommittedHeapBytes).Set(int64(value(1) + value(2) + value(3)))
	if virt, rss, ok := statm(); ok {
		cs.Get(mr.TaskCounterGroup, mr.VirtualMemoryBytes).Set(virt)
		cs.Get(mr.TaskCounterGroup, mr.PhysicalMemoryBytes).Set(rss)
	}
}

// statm returns this process's virtual and resident sizes in bytes.
func statm() (virt, rss int64, ok bool) {
	data, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0, 0, false
	}
	f := strings.Fields(string(data))
	if len(f) < 2 {
		return 0, 0, false
	}
	size, err1 := strconv.ParseInt(f[0], 10, 64)
	res, err2 := strconv.ParseInt(f[1], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, 0, false
	}
	page := int64(os.Getpagesize())
	return size * page, res * page, true
}
