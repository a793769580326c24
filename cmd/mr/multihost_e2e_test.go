package main

// The closest this machine gets to several hosts: a JobTracker on a
// bridge and four TaskTrackers, each in its own network namespace with its
// own address (the netns lab of the link-cut test), so that every shuffle
// fetch between two trackers crosses veth pairs and the bridge. Root and
// iproute2 only; otherwise skipped with a message (newNetnsLab).

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestE2EMultiHostNamespaces runs WordCount and TeraSort (teragen,
// terasort, teravalidate, with terasum's checksum before and after) on four
// trackers in four network namespaces, and checks the outputs exactly and,
// from the job histories, that maps ran on several trackers and that every
// reduce fetched map output from another namespace.
func TestE2EMultiHostNamespaces(t *testing.T) {
	lab := newNetnsLab(t, 4)
	names := []string{"n1", "n2", "n3", "n4"}
	var trackers []trackerSpec
	for _, n := range names {
		trackers = append(trackers, trackerSpec{n, 2, 1})
	}
	c := startLabCluster(t, lab, nil, trackers, "mapreduce.reduce.shuffle.retry.delay.ms=20")
	if !c.waitJoined(30*time.Second, names...) {
		t.Fatal("the trackers did not join (is the bridge forwarding?)")
	}
	for i, n := range names {
		if addr := c.trackerShuffleAddr(n); !strings.HasPrefix(addr, lab.ports[i].ip+":") {
			t.Fatalf("tracker %s serves its shuffle on %s, want its namespace's address %s", n, addr, lab.ports[i].ip)
		}
	}
	t.Logf("JobTracker on %s; trackers n1-n4 on %s-%s", c.jtAddr, lab.ports[0].ip, lab.ports[3].ip)
	jt := []string{"submit", "--jobtracker", c.jtAddr}
	run := func(args ...string) {
		t.Helper()
		text, err := runMREnv(t, 3*time.Minute, nil, append(append([]string{}, jt...), args...)...)
		if err != nil || !strings.Contains(text, "completed successfully") {
			t.Fatalf("mr %s: %v\n%s", strings.Join(args, " "), err, text)
		}
	}

	in := t.TempDir()
	genText(t, filepath.Join(in, "a.txt"), 6<<20, 31)
	genText(t, filepath.Join(in, "b.txt"), 2<<20, 32)
	out := filepath.Join(t.TempDir(), "wc")
	run("-D", "mapreduce.input.fileinputformat.split.maxsize=1000000", "-D", "mapreduce.job.reduces=4", "wordcount", in, out)
	checkWordCount(t, out, countWords(t, in))

	dir := t.TempDir()
	gen, sum, sorted, report := filepath.Join(dir, "gen"), filepath.Join(dir, "sum"), filepath.Join(dir, "sorted"), filepath.Join(dir, "report")
	const rows = 200000
	run("-D", "mapreduce.job.maps=8", "teragen", strconv.Itoa(rows), gen)
	run("terasum", gen, sum)
	run("-D", "mapreduce.job.reduces=4", "-D", "mapreduce.input.fileinputformat.split.maxsize=2500000", "terasort", gen, sorted)
	run("teravalidate", sorted, report)
	if got := reportValue(t, report, "records"); got != strconv.Itoa(rows) {
		t.Errorf("teravalidate counted %s records, want %d", got, rows)
	}
	if before, after := reportValue(t, sum, "checksum"), reportValue(t, report, "checksum"); before != after {
		t.Errorf("checksum before the sort %s, after %s", before, after)
	}

	jobs, err := c.client.List(t.Context(), true)
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, j := range jobs {
		if j.Name != "wordcount" && j.Name != "terasort" {
			continue
		}
		rec := c.history(j.JobId)
		mapTrackers, reduceTrackers := map[string]bool{}, map[string]bool{}
		for _, a := range rec.Attempts {
			if a.State != "SUCCEEDED" {
				continue
			}
			if a.TaskType == "m" {
				mapTrackers[a.Tracker] = true
			} else {
				reduceTrackers[a.Tracker] = true
			}
		}
		if len(mapTrackers) < 2 {
			t.Errorf("%s (%s): maps ran on %v only, want several namespaces", j.JobId, j.Name, mapTrackers)
		}
		for r := range reduceTrackers {
			remote := false
			for m := range mapTrackers {
				remote = remote || m != r
			}
			if !remote {
				t.Errorf("%s (%s): the reduces on %s fetched no map output from another namespace (maps on %v)", j.JobId, j.Name, r, mapTrackers)
			}
		}
		checked++
	}
	if checked != 2 {
		t.Errorf("checked %d job histories, want the word count's and the sort's", checked)
	}
}
