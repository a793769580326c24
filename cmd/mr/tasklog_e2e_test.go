package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gomr/apps"
	"gomr/mr"
)

// logwriterJob is a test job whose one map writes a line to its stdout
// and one to its stderr, naming its map (the test binary is the task
// child, so the job is known there too).
const logwriterJob = "test-logwriter"

func init() {
	mr.RegisterJob(&mr.JobDef{
		Name:   logwriterJob,
		Input:  apps.RowRangeInput{},
		Output: apps.NullOutput{},
		Mapper: func(tc mr.TaskContext) (mr.Mapper, error) {
			return mr.MapperFunc(func(tc mr.TaskContext, k, _ []byte, out mr.Emitter) error {
				fmt.Fprintf(os.Stdout, "hello stdout from map %d\n", tc.TaskIndex())
				fmt.Fprintf(os.Stderr, "hello stderr from map %d\n", tc.TaskIndex())
				return nil
			}), nil
		},
	})
}

// TestE2ETaskLogsKeptAndServed: an attempt's stdout and stderr outlive its
// job: mr job -logs reads them (with the attempt, and for the whole job)
// and the JobTracker's page serves them, from the tracker that ran it,
// until mapreduce.job.userlog.retain.hours (here 7.2 s) after the job;
// then they are gone, and asking for them says so.
func TestE2ETaskLogsKeptAndServed(t *testing.T) {
	c := startCluster(t, []trackerSpec{{"t1", 1, 1}}, "mapreduce.job.userlog.retain.hours=0.002")
	dir := t.TempDir()
	id := c.submit(&mr.JobSpec{Name: "logs", Def: logwriterJob, Output: filepath.Join(dir, "out"), Params: map[string]string{"rows": "1", "maps": "1"}})
	if r := c.wait(id); r.State != "SUCCEEDED" {
		t.Fatalf("job %s: %s (%s)", id, r.State, r.Error)
	}
	attempt := "attempt_" + strings.TrimPrefix(id, "job_") + "_m_000000_0"
	job := func(args ...string) (string, error) {
		return runMR(t, append([]string{"job", "--jobtracker", c.jtAddr}, args...)...)
	}
	var text string
	// The job's directory is removed, and its logs kept, once the tracker
	// has its purge order (a heartbeat or two after the job).
	waitFor(t, "the logs to be kept", 10*time.Second, func() bool {
		_, err := os.Stat(filepath.Join(c.dir, "local", "t1", "userlogs", id, attempt, "stdout"))
		return err == nil
	})
	text, err := job("-logs", id, attempt)
	if err != nil {
		t.Fatalf("-logs: %v\n%s", err, text)
	}
	for _, want := range []string{
		"==> " + attempt + " stdout (tracker t1) <==\nhello stdout from map 0\n",
		"==> " + attempt + " stderr (tracker t1) <==\nhello stderr from map 0\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("-logs %s %s:\n%s\nwant %q", id, attempt, text, want)
		}
	}
	if all, err := job("-logs", id); err != nil || all != text {
		t.Errorf("-logs %s (every attempt): %v\n%s\nwant what the one attempt gave", id, err, all)
	}
	httpAddr := c.logValue("jobtracker", "jobtracker http serving", "address")
	resp, err := http.Get("http://" + httpAddr + "/tasklog?attemptid=" + attempt + "&filter=stderr")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(body) != "hello stderr from map 0\n" {
		t.Errorf("page /tasklog: %d %q", resp.StatusCode, body)
	}
	if text, err := job("-logs", id, "attempt_"+strings.TrimPrefix(id, "job_")+"_m_000007_0"); err == nil || !strings.Contains(text, "has no task attempt") {
		t.Errorf("-logs of an attempt the job never had: %v\n%s", err, text)
	}
	waitFor(t, "the logs to pass their retention", 20*time.Second, func() bool {
		_, err := os.Stat(filepath.Join(c.dir, "local", "t1", "userlogs", id))
		return os.IsNotExist(err)
	})
	if text, err := job("-logs", id, attempt); err == nil || !strings.Contains(text, "its logs were removed after mapreduce.job.userlog.retain.hours") {
		t.Errorf("-logs after the retention: %v\n%s", err, text)
	}
}
