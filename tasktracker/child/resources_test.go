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

// TestCounterProtoOrder: a status's counters go in (group, name) order,
// byte by byte, each once, whatever groups the task has (Shuffle Errors
// and a job's own come before the task counters so, not after them as in
// Hadoop's display order): the JobTracker packs them as they come.
func TestCounterProtoOrder(t *testing.T) {
	tk := &task{counters: mr.NewCounters()}
	tk.counters.Get(mr.TaskCounterGroup, mr.MapInputRecords).Set(3)
	tk.counters.Get(mr.ShuffleErrorsGroup, "IO_ERROR").Set(1)
	tk.counters.Get("MyJob", "BAD_LINES").Set(2)
	tk.counters.Get(mr.FileSystemCounterGroup, "FILE_BYTES_READ").Set(4)
	out := tk.counterProto()
	groups := map[string]bool{}
	for k, c := range out {
		groups[c.Group] = true
		if k == 0 {
			continue
		}
		if p := out[k-1]; p.Group > c.Group || p.Group == c.Group && p.Name >= c.Name {
			t.Errorf("counter %s/%s after %s/%s: not in (group, name) order", c.Group, c.Name, p.Group, p.Name)
		}
	}
	for _, g := range []string{mr.TaskCounterGroup, mr.ShuffleErrorsGroup, "MyJob", mr.FileSystemCounterGroup} {
		if !groups[g] {
			t.Errorf("group %s missing from %v", g, out)
		}
	}
}
