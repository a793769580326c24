package main

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"gomr/internal/promexport"
	"gomr/mr"
)

// scrapeMetrics GETs a daemon's /metrics, checks it with promtool when
// that is installed, and returns every sample by family name and labels
// (name=value pairs joined by commas, sorted by name as the exposition
// has them); a histogram's value is its sample count.
func scrapeMetrics(t *testing.T, what, addr string) map[string]map[string]float64 {
	t.Helper()
	cl := http.Client{Timeout: 10 * time.Second}
	resp, err := cl.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatalf("scraping %s: %v", what, err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("scraping %s: %d %v\n%s", what, resp.StatusCode, err, body)
	}
	promtoolCheck(t, what, body)
	fams, err := promexport.Parse(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("metrics of %s: %v\n%s", what, err, body)
	}
	return promexport.AllSamples(fams)
}

// promtoolCheck runs `promtool check metrics` on an exposition when
// promtool is installed (Debian's prometheus package has it); the suite
// does not need it.
func promtoolCheck(t *testing.T, what string, body []byte) {
	t.Helper()
	path, err := exec.LookPath("promtool")
	if errors.Is(err, exec.ErrNotFound) {
		t.Logf("promtool is not installed: the metrics of %s are not linted (apt-get install prometheus)", what)
		return
	} else if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(path, "check", "metrics")
	cmd.Stdin = bytes.NewReader(body)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("promtool check metrics on the metrics of %s: %v\n%s", what, err, out)
	}
}

// TestE2EMetrics scrapes the JobTracker's and both TaskTrackers' /metrics
// after a word count (two maps, one reduce) and checks what they counted.
func TestE2EMetrics(t *testing.T) {
	c := startCluster(t, []trackerSpec{{"t1", 2, 1}, {"t2", 2, 1}})
	in := t.TempDir()
	os.WriteFile(filepath.Join(in, "1.txt"), []byte("the cat\tthe hat\r\n\nthe end\n"), 0o644)
	os.WriteFile(filepath.Join(in, "2.txt"), []byte("a cat a\fdog\n"), 0o644)
	out := filepath.Join(t.TempDir(), "out")
	res := c.wait(c.submit(wordCountSpec(in, out, 1)))
	checkWordCount(t, out, map[string]int{"the": 3, "cat": 2, "hat": 1, "end": 1, "a": 2, "dog": 1})
	shuffled := float64(res.Counters.Get(mr.TaskCounterGroup, mr.ReduceShuffleBytes))
	if shuffled <= 0 {
		t.Fatalf("REDUCE_SHUFFLE_BYTES = %v", shuffled)
	}

	jt := scrapeMetrics(t, "the jobtracker", c.logValue("jobtracker", "jobtracker http serving", "address"))
	exact := func(m map[string]map[string]float64, who, name, labels string, want float64) {
		t.Helper()
		if got, ok := m[name][labels]; !ok || got != want {
			t.Errorf("%s: %s{%s} = %v (present %v), want %v", who, name, labels, got, ok, want)
		}
	}
	for _, w := range []struct {
		name, labels string
		want         float64
	}{
		{"gomr_jobs", "state=succeeded", 1},
		{"gomr_jobs", "state=running", 0},
		{"gomr_trackers", "", 2},
		{"gomr_slots", "type=map", 4},
		{"gomr_slots_by_state", "state=free,type=map", 4},
		{"gomr_tasks_launched_total", "type=map", 2},
		{"gomr_tasks_launched_total", "type=reduce", 1},
		{"gomr_attempts_failed_total", "type=map", 0},
		{"gomr_attempts_killed_total", "type=reduce", 0},
		{"gomr_pending_tasks", "type=map", 0},
		{"gomr_job_duration_seconds", "state=succeeded", 1},
		{"gomr_attempt_duration_seconds", "state=succeeded,type=map", 2},
		{"gomr_attempt_duration_seconds", "state=succeeded,type=reduce", 1},
		{"gomr_fetch_failures_reported_total", "", 0},
	} {
		exact(jt, "jobtracker", w.name, w.labels, w.want)
	}
	if hb, n := jt["gomr_heartbeats_received_total"][""], jt["gomr_heartbeat_duration_seconds"][""]; hb < 2 || n < hb {
		t.Errorf("jobtracker: %v heartbeats received, %v timed; want several, all timed", hb, n)
	}
	if jt["process_resident_memory_bytes"][""] <= 0 || jt["go_goroutines"][""] <= 0 {
		t.Errorf("jobtracker: no process or Go runtime metrics")
	}

	// The trackers' counts add up to the job's.
	sum := map[string]float64{}
	add := func(name, labels string, v float64) { sum[name+"{"+labels+"}"] += v }
	for _, name := range []string{"t1", "t2"} {
		m := scrapeMetrics(t, "tracker "+name, c.trackerShuffleAddr(name))
		for _, k := range []string{"state=succeeded,type=map", "state=succeeded,type=reduce", "state=failed,type=map", "state=killed,type=map"} {
			add("gomr_tasktracker_attempts_ended_total", k, m["gomr_tasktracker_attempts_ended_total"][k])
		}
		add("gomr_tasktracker_attempts_started_total", "type=map", m["gomr_tasktracker_attempts_started_total"]["type=map"])
		for _, k := range []string{"gomr_tasktracker_shuffle_served_bytes_total", "gomr_tasktracker_shuffle_fetched_bytes_total",
			"gomr_tasktracker_spills_announced_total", "gomr_tasktracker_heartbeat_replies_lost_total"} {
			add(k, "", m[k][""])
		}
		add("gomr_tasktracker_shuffle_requests_total", "outcome=unauthorized", m["gomr_tasktracker_shuffle_requests_total"]["outcome=unauthorized"])
		exact(m, name, "gomr_tasktracker_slots", "state=occupied,type=map", 0)
		exact(m, name, "gomr_tasktracker_slots", "state=free,type=map", 2)
		exact(m, name, "gomr_tasktracker_running_attempts", "type=reduce", 0)
		if m["gomr_tasktracker_heartbeat_rtt_seconds"][""] < 2 || m["process_resident_memory_bytes"][""] <= 0 {
			t.Errorf("%s: heartbeat round trips %v, resident bytes %v; want several, and some", name,
				m["gomr_tasktracker_heartbeat_rtt_seconds"][""], m["process_resident_memory_bytes"][""])
		}
	}
	for k, want := range map[string]float64{
		"gomr_tasktracker_attempts_started_total{type=map}":                  2,
		"gomr_tasktracker_attempts_ended_total{state=succeeded,type=map}":    2,
		"gomr_tasktracker_attempts_ended_total{state=succeeded,type=reduce}": 1,
		"gomr_tasktracker_attempts_ended_total{state=failed,type=map}":       0,
		"gomr_tasktracker_attempts_ended_total{state=killed,type=map}":       0,
		"gomr_tasktracker_shuffle_served_bytes_total{}":                      shuffled,
		"gomr_tasktracker_shuffle_fetched_bytes_total{}":                     shuffled,
		"gomr_tasktracker_shuffle_requests_total{outcome=unauthorized}":      0,
		"gomr_tasktracker_heartbeat_replies_lost_total{}":                    0,
	} {
		if sum[k] != want {
			t.Errorf("trackers: %s sums to %v, want %v", k, sum[k], want)
		}
	}
	if n := sum["gomr_tasktracker_spills_announced_total{}"]; n < 2 {
		t.Errorf("trackers: %v spills announced, want one at least per map", n)
	}
}
