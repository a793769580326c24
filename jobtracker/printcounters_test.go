package jobtracker

import (
	"bytes"
	"testing"

	"gomr/mr"
)

// TestPrintCountersDisplayNames: counters print as Hadoop's client
// prints them: its group display names in its order, its counter display
// names; counters and groups it has no names for keep their own.
func TestPrintCountersDisplayNames(t *testing.T) {
	cs := mr.CounterSet{}
	cs.Add(mr.TaskCounterGroup, mr.MapInputRecords, 4)
	cs.Add(mr.TaskCounterGroup, mr.GCTimeMillis, 3)
	cs.Add(mr.JobCounterGroup, mr.DataLocalMaps, 2)
	cs.Add(mr.FileSystemCounterGroup, mr.FileBytesRead, 38)
	cs.Add(mr.ShuffleErrorsGroup, "IO_ERROR", 0)
	cs.Add(mr.FileInputFormatCounterGroup, mr.BytesRead, 38)
	cs.Add(mr.FileOutputFormatCounterGroup, mr.BytesWritten, 30)
	cs.Add(mr.SpeculationGroup, mr.SpeculativeMaps, 1)
	var out bytes.Buffer
	PrintCounters(&out, cs)
	want := `Counters: 8
	File System Counters
		FILE: Number of bytes read=38
	Job Counters
		Data-local map tasks=2
	Map-Reduce Framework
		GC time elapsed (ms)=3
		Map input records=4
	Shuffle Errors
		IO_ERROR=0
	File Input Format Counters
		Bytes Read=38
	File Output Format Counters
		Bytes Written=30
	Speculation
		SPECULATIVE_MAPS=1
`
	if out.String() != want {
		t.Errorf("PrintCounters:\n%s\nwant\n%s", out.String(), want)
	}
}
