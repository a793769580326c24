package jobtracker

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"

	"gomr/mrpb"
	"gomr/partitions"
)

// statusSeq is a JobTracker client whose GetJobStatus answers a fixed
// sequence of statuses (the last one again once they run out).
type statusSeq struct {
	mrpb.JobTrackerClient
	sts []*mrpb.JobStatus
}

func (s *statusSeq) GetJobStatus(context.Context, *mrpb.JobStatusRequest, ...grpc.CallOption) (*mrpb.JobStatus, error) {
	st := s.sts[0]
	if len(s.sts) > 1 {
		s.sts = s.sts[1:]
	}
	return st, nil
}

func running(m, r float32, reduces int32) *mrpb.JobStatus {
	return &mrpb.JobStatus{JobId: "job_1_0001", State: StateRunning, MapProgress: m, ReduceProgress: r, Reduces: &mrpb.TaskSummary{Total: reduces}}
}

func succeeded(r float32, reduces int32) *mrpb.JobStatus {
	return &mrpb.JobStatus{JobId: "job_1_0001", State: StateSucceeded, MapProgress: 1, ReduceProgress: r, Reduces: &mrpb.TaskSummary{Total: reduces}}
}

func waitOutput(t *testing.T, tty bool, sts ...*mrpb.JobStatus) string {
	t.Helper()
	var out bytes.Buffer
	c := &Client{jt: &statusSeq{sts: sts}, Out: &out, TTY: tty, Poll: time.Millisecond}
	if _, err := c.Wait(context.Background(), "job_1_0001"); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

// TestWaitProgressOnTerminal: on a terminal the progress is one line
// redrawn in place, ended before the outcome; elsewhere, a line per
// change.
func TestWaitProgressOnTerminal(t *testing.T) {
	sts := []*mrpb.JobStatus{running(0, 0, 2), running(0.45, 0.1, 2), running(0.45, 0.1, 2), succeeded(1, 2)}
	got := waitOutput(t, true, sts...)
	want := "\r map 0% reduce 0%\x1b[K\r map 45% reduce 10%\x1b[K\r map 100% reduce 100%\x1b[K\nJob job_1_0001 completed successfully\n"
	if !strings.HasPrefix(got, want) {
		t.Errorf("terminal output:\n%q\nwant it to start with\n%q", got, want)
	}
	got = waitOutput(t, false, sts...)
	want = " map 0% reduce 0%\n map 45% reduce 10%\n map 100% reduce 100%\nJob job_1_0001 completed successfully\n"
	if !strings.HasPrefix(got, want) {
		t.Errorf("plain output:\n%q\nwant it to start with\n%q", got, want)
	}
}

// TestWaitMapOnlyProgress: a map-only job ends at "map 100% reduce 0%",
// as Hadoop's client shows it, not reduce 100%.
func TestWaitMapOnlyProgress(t *testing.T) {
	got := waitOutput(t, false, running(0.5, 0, 0), succeeded(0, 0))
	want := " map 50% reduce 0%\n map 100% reduce 0%\nJob job_1_0001 completed successfully\n"
	if !strings.HasPrefix(got, want) {
		t.Errorf("output:\n%q\nwant it to start with\n%q", got, want)
	}
}

// TestEmptyPhaseProgress: a map-only job's reduce progress is 0 (it was
// 1 from the start); a job without tasks is done in both phases.
func TestEmptyPhaseProgress(t *testing.T) {
	for _, c := range []struct {
		typ  partitions.TaskType
		maps int
		want float64
	}{{partitions.Reduce, 3, 0}, {partitions.Reduce, 0, 1}, {partitions.Map, 0, 1}} {
		if got := emptyPhaseProgress(c.typ, c.maps); got != c.want {
			t.Errorf("emptyPhaseProgress(%v, %d maps) = %v, want %v", c.typ, c.maps, got, c.want)
		}
		if got := doneFraction(TaskCounts{}, c.typ, c.maps); got != c.want {
			t.Errorf("doneFraction(none, %v, %d maps) = %v, want %v", c.typ, c.maps, got, c.want)
		}
	}
}

// TestPercent: whole percentages round down, past float32's error.
func TestPercent(t *testing.T) {
	for p, want := range map[float32]int{0: 0, 0.45: 45, 0.29: 29, 0.999: 99, 0.57: 57, 1: 100} {
		if got := Percent(p); got != want {
			t.Errorf("Percent(%v) = %d, want %d", p, got, want)
		}
	}
}
