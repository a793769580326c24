package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestTimingLine: the figures the preemption benchmark takes from the
// daemons' log lines (their formats are jobtracker/checkpoint.go's and
// tasktracker/preempt.go's).
func TestTimingLine(t *testing.T) {
	tests := []struct {
		name string
		line string
		want preemptRun
	}{
		{"reclaim", `time=2026-11-26T02:35:45.668Z level=INFO msg="attempt checkpointed" component=jobtracker attempt=a tracker=tt0 dump_ms=1674 reclaim_ms=1684 bytes=264005283`,
			preemptRun{ReclaimMs: []float64{1684}}},
		{"tracker's part", `time=x level=INFO msg="checkpoint for preemption made" component=tasktracker tracker=tt0 attempt=a quiesce=1.132s queued=0s criu_dump=121ms criu_frozen=40ms keep_files=1ms total=1.253s`,
			preemptRun{QuiesceMs: []float64{1132}, QueuedMs: []float64{0}, CriuDumpMs: []float64{121}, CriuFrozenMs: []float64{40}}},
		{"restorable", `time=x level=INFO msg="resuming a checkpointed task" component=jobtracker attempt=b local=true restorable_ms=11578`,
			preemptRun{RestorableMs: []float64{11578}}},
		{"failed", `time=x level=WARN msg="checkpoint failed; the attempt was killed and its task runs again from scratch" attempt=a`,
			preemptRun{CheckpointsFailed: 1}},
		{"other", `time=x level=INFO msg="checkpoint ordered" attempt=a`, preemptRun{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r preemptRun
			r.timingLine(tt.line)
			if !reflect.DeepEqual(r, tt.want) {
				t.Errorf("got %+v, want %+v", r, tt.want)
			}
		})
	}
}

// TestCheckSortOutput: a sort's output must hold the input's lines, in
// byte order.
func TestCheckSortOutput(t *testing.T) {
	want, err := sumLines(strings.NewReader("b x\na\nc\na\n"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, out string
		ok        bool
	}{
		{"sorted", "a\na\nb x\nc\n", true},
		{"out of order", "a\nb x\na\nc\n", false},
		{"a line lost", "a\nb x\nc\n", false},
		{"a line changed", "a\na\nb y\nc\n", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "part-r-00000"), []byte(tt.out), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := checkSortOutput(dir, want); (err == nil) != tt.ok {
				t.Errorf("checkSortOutput = %v, want ok %v", err, tt.ok)
			}
		})
	}
}
