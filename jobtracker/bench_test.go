package jobtracker

import (
	"context"
	"fmt"
	"testing"

	"gomr/mrpb"
	"gomr/partitions"
)

// The cost of a heartbeat and of a job-status call against the size of
// the running job: the policy's view and the job's status are kept as
// states change, so both should cost the same for 1,000 and 100,000 maps
// (docs/scaling.md). Run: go test -run '^$' -bench 'Heartbeat|JobStatus' ./jobtracker/
func BenchmarkHeartbeatOffer(b *testing.B) {
	for _, maps := range []int{1000, 100000} {
		b.Run(fmt.Sprintf("maps=%d", maps), func(b *testing.B) {
			jt, id := newBenchJT(b, maps)
			// A full tracker: every heartbeat builds the view and asks
			// the policy, which assigns nothing.
			req := &mrpb.HeartbeatRequest{Tracker: "t1", Host: "h1", MapSlots: 2, ReduceSlots: 1, AcceptNewTasks: true}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				asTracker(jt, req)
				if _, err := jt.Heartbeat(context.Background(), req); err != nil {
					b.Fatal(err)
				}
			}
			_ = id
		})
	}
}

func BenchmarkJobStatus(b *testing.B) {
	for _, maps := range []int{1000, 100000} {
		b.Run(fmt.Sprintf("maps=%d", maps), func(b *testing.B) {
			jt, id := newBenchJT(b, maps)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := jt.GetJobStatus(context.Background(), &mrpb.JobStatusRequest{JobId: id}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// newBenchJT is a JobTracker with one tracker and a running word count of
// maps maps, half of them succeeded.
func newBenchJT(b testing.TB, maps int) (*JobTracker, string) {
	b.Helper()
	dir := b.TempDir()
	jt, _ := newTestJTAt(b, dir, 0, nil)
	id := submitWordCount(b, jt, dir, maps)
	heartbeat(b, jt, &mrpb.HeartbeatRequest{Tracker: "t1", Host: "h1", MapSlots: 2, ReduceSlots: 1, InitialContact: true})
	jt.mu.Lock()
	j := jt.jobs[id]
	for _, m := range j.maps[:maps/2] {
		m.successful = &attempt{id: attemptID(m, 0), task: m, state: attemptSucceeded}
		jt.taskToLocked(m, taskSucceeded)
		j.finishedMaps++
	}
	jt.unlock()
	return jt, id
}

// BenchmarkPickTask is the choice of a task for a free slot in a job of
// 100,000 maps, half of them done, on a tracker no split is local to (the
// common case on a large cluster): the scan starts at the first pending
// task and stops at the first the tracker may run.
func BenchmarkPickTask(b *testing.B) {
	jt, id := newBenchJT(b, 100000)
	jt.mu.Lock()
	defer jt.unlock()
	j := jt.jobs[id]
	t := &trackerState{name: "far", host: "far", mapSlots: 2}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if tk := jt.pickTaskLocked(j, partitions.Map, t); tk == nil || tk.index != 50000 {
			b.Fatalf("picked %v, want map 50000", tk)
		}
	}
}
