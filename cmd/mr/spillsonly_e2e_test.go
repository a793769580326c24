package main

import (
	"os"
	"path/filepath"
	"testing"

	"gomr/mr"
)

// TestE2ESpillsWithoutSegments: a JobTracker that announces every job's
// spills without their segments (mapreduce.jobtracker.map-events.
// max-segments=0: by default only jobs of over a million maps × reduces
// do, as Hadoop's JobTracker keeps one event per map output)
// runs WordCount with three reduces on two trackers: the output is exact,
// and the trackers' shuffle servers sent each reduce's index entry of
// every spill exactly once (the reduces read them there, as the events
// carried none).
func TestE2ESpillsWithoutSegments(t *testing.T) {
	const reduces = 3
	c := startCluster(t, []trackerSpec{{"t1", 2, 2}, {"t2", 2, 1}},
		"mapreduce.jobtracker.map-events.max-segments=0",
		"mapreduce.input.fileinputformat.split.maxsize=2000000",
		"mapreduce.task.io.sort.mb=1")
	in := t.TempDir()
	genText(t, filepath.Join(in, "a.txt"), 6<<20, 5)
	genText(t, filepath.Join(in, "b.txt"), 1<<20, 6)
	out := filepath.Join(t.TempDir(), "out")
	res := c.wait(c.submit(wordCountSpec(in, out, reduces)))
	checkWordCount(t, out, countWords(t, in))

	var spills, entries, unauthorized float64
	for _, name := range []string{"t1", "t2"} {
		m := scrapeMetrics(t, "tracker "+name, c.trackerShuffleAddr(name))
		spills += m["gomr_tasktracker_spills_announced_total"][""]
		entries += m["gomr_tasktracker_shuffle_index_entries_total"][""]
		unauthorized += m["gomr_tasktracker_shuffle_requests_total"]["outcome=unauthorized"]
	}
	maps := res.Counters.Get(mr.JobCounterGroup, mr.TotalLaunchedMaps)
	t.Logf("%d maps announced %v spills; %v index entries served", maps, spills, entries)
	if spills <= float64(maps) {
		t.Fatalf("%v spills announced by %d maps: the test wants maps of several spills", spills, maps)
	}
	if entries != spills*reduces {
		t.Errorf("%v index entries served, want %v (%v spills × %d reduces, each once)", entries, spills*reduces, spills, reduces)
	}
	if got := res.Counters.Get(mr.TaskCounterGroup, mr.FailedShuffle); got != 0 || unauthorized != 0 {
		t.Errorf("FAILED_SHUFFLE = %d, unauthorized requests %v; want none", got, unauthorized)
	}
	if _, err := os.Stat(filepath.Join(out, "_SUCCESS")); err != nil {
		t.Errorf("no _SUCCESS: %v", err)
	}
}
