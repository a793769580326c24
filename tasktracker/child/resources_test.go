package child

import (
	"testing"

	"gomr/mr"
)

// TestResourceCounters: the memory counters Hadoop's client prints are
// set from this process (a live Go process has a heap and a resident
// size); the GC time is set, whatever its value.
func TestResourceCounters(t *testing.T) {
	cs := mr.NewCounters()
	_ = make([]byte, 1<<20)
	setResourceCounters(cs)
	snap := cs.Snapshot()
	for _, name := range []string{mr.CommittedHeapBytes, mr.PhysicalMemoryBytes, mr.VirtualMemoryBytes} {
		if snap.Get(mr.TaskCounterGroup, name) <= 0 {
			t.Errorf("%s = %d, want > 0", name, snap.Get(mr.TaskCounterGroup, name))
		}
	}
	if _, ok := snap[mr.TaskCounterGroup][mr.GCTimeMillis]; !ok {
		t.Errorf("%s not set", mr.GCTimeMillis)
	}
	if v, p := snap.Get(mr.TaskCounterGroup, mr.VirtualMemoryBytes), snap.Get(mr.TaskCounterGroup, mr.PhysicalMemoryBytes); v < p {
		t.Errorf("virtual size %d < resident size %d", v, p)
	}
}
