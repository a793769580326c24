package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gomr/mr"
)

// TestE2EJobTaskVerbs exercises mr job's task verbs, as Hadoop's mapred
// job has them, against a running cluster: -list-attempt-ids, -kill-task
// (not counted as a failure), -fail-task (counted), -events, and
// -set-priority (shown by -list and -status), with their error forms.
func TestE2EJobTaskVerbs(t *testing.T) {
	c := startCluster(t, []trackerSpec{{"t1", 2, 1}}, "scheduler.policy=fifo")
	job := func(args ...string) (string, error) {
		return runMR(t, append([]string{"job", "--jobtracker", c.jtAddr}, args...)...)
	}
	dir := t.TempDir()
	id := c.submit(sleepSpec("victim", filepath.Join(dir, "out"), 3, 2500))
	waitFor(t, "two maps to run", 20*time.Second, func() bool { return c.status(id).Maps.Running == 2 })

	text, err := job("-list-attempt-ids", id, "MAP", "running")
	if err != nil {
		t.Fatalf("-list-attempt-ids: %v\n%s", err, text)
	}
	running := strings.Fields(text)
	if len(running) != 2 {
		t.Fatalf("-list-attempt-ids MAP running: %q, want 2 attempt ids", text)
	}
	if text, err := job("-kill-task", running[0]); err != nil || strings.TrimSpace(text) != "Killed task "+running[0] {
		t.Fatalf("-kill-task: %v\n%s", err, text)
	}
	if text, err := job("-fail-task", running[1]); err != nil || strings.TrimSpace(text) != "Killed task "+running[1]+" by failing it" {
		t.Fatalf("-fail-task: %v\n%s", err, text)
	}
	// Again: the attempts have ended.
	if text, err := job("-kill-task", running[0]); err == nil || !strings.Contains(text, "not killed: it is already KILLED") {
		t.Errorf("-kill-task of a killed attempt: %v\n%s", err, text)
	}
	if text, err := job("-set-priority", id, "VERY_HIGH"); err != nil || strings.TrimSpace(text) != "Changed job priority." {
		t.Fatalf("-set-priority: %v\n%s", err, text)
	}
	if text, _ := job("-list"); !strings.Contains(text, "VERY_HIGH") {
		t.Errorf("-list does not show the new priority:\n%s", text)
	}
	if text, err := job("-set-priority", id, "URGENT"); err == nil || !strings.Contains(text, `priority "URGENT": want VERY_HIGH, HIGH, NORMAL, LOW or VERY_LOW`) {
		t.Errorf("-set-priority URGENT: %v\n%s", err, text)
	}

	r := c.wait(id)
	if r.State != "SUCCEEDED" {
		t.Fatalf("job %s after a killed and a failed attempt: %s (%s)", id, r.State, r.Error)
	}
	if got := r.Counters.Get(mr.JobCounterGroup, mr.NumKilledMaps); got != 1 {
		t.Errorf("NUM_KILLED_MAPS = %d, want 1 (the -kill-task)", got)
	}
	if got := r.Counters.Get(mr.JobCounterGroup, mr.NumFailedMaps); got != 1 {
		t.Errorf("NUM_FAILED_MAPS = %d, want 1 (the -fail-task)", got)
	}
	text, err = job("-events", id, "0", "100")
	if err != nil {
		t.Fatalf("-events: %v\n%s", err, text)
	}
	lines := strings.Split(strings.TrimSpace(text), "\n")
	// 3 maps succeeded, one killed, one failed; the reduce-less job has
	// no reduce attempt.
	if len(lines) != 2+5 || lines[0] != "Task completion events for "+id || lines[1] != "Number of events (from 0) are: 5" {
		t.Fatalf("-events:\n%s", text)
	}
	counts := map[string]int{}
	for _, l := range lines[2:] {
		counts[strings.Fields(l)[0]]++
	}
	if counts["SUCCEEDED"] != 3 || counts["KILLED"] != 1 || counts["FAILED"] != 1 {
		t.Errorf("-events states %v, want 3 SUCCEEDED, 1 KILLED, 1 FAILED:\n%s", counts, text)
	}
	if text, _ := job("-events", id, "4", "10"); !strings.Contains(text, "Number of events (from 4) are: 1") {
		t.Errorf("-events from 4:\n%s", text)
	}
	if text, _ := job("-list-attempt-ids", id, "MAP", "completed"); len(strings.Fields(text)) != 3 {
		t.Errorf("-list-attempt-ids MAP completed: %q, want 3", text)
	}
	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"-list-attempt-ids", id, "SETUP", "running"}, "no SETUP or CLEANUP tasks"},
		{[]string{"-list-attempt-ids", id, "MAP", "sleeping"}, `task state "sleeping"`},
		{[]string{"-kill-task", "attempt_000000000000_9999_m_000000_0"}, "no task attempt attempt_000000000000_9999_m_000000_0"},
		{[]string{"-events", id, "x", "1"}, "must be integers"},
		{[]string{"-list-attempt-ids", "job_000000000000_9999", "MAP", "running"}, "no job job_000000000000_9999"},
		{[]string{"-set-priority", id, "LOW"}, "can no longer change"},
	} {
		if text, err := job(bad.args...); err == nil || !strings.Contains(text, bad.want) {
			t.Errorf("mr job %s: %v\n%s\nwant an error with %q", strings.Join(bad.args, " "), err, text, bad.want)
		}
	}
}
