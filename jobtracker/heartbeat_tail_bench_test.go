package jobtracker

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// BenchmarkHeartbeatTail is the distribution of a heartbeat's time at the
// JobTracker on the workload of mr loadgen's 10,000-tracker runs
// (docs/scaling.md, "The heartbeat tail at 10,000 trackers"): 4 map-only
// jobs of 37,500 maps that keep every map slot busy, heartbeats going
// round the trackers one at a time, each ending its tracker's oldest
// attempt; the jobs end one after another on the way. With one heartbeat
// at a time, its time is its hold of the lock, so a long one is a hold
// every heartbeat queued behind it would wait for. p50/p99/p999/max-ns
// are the wall times of single heartbeats (on a loaded machine, mostly the
// machine's); cpu-p99/p999/max-ns the CPU time of the thread that ran
// them (the goroutine is locked to it: the handler's own work and its GC
// mark assists, not the background GC's), which the load does not
// inflate; the benchmark's ns/op is their mean.
//
//	go test -run '^$' -bench HeartbeatTail -benchtime 60000x ./jobtracker/
//
// GOMR_BENCH_POLICIES narrows the policies; GOMR_BENCH_JOBS=JxM runs J
// jobs of M maps instead (1000x100: issue 17's 1,000 jobs, where the
// policy's view of every running job is built per offer);
// GOMR_BENCH_CPUPROFILE=PREFIX profiles the measured loop of each.
func BenchmarkHeartbeatTail(b *testing.B) {
	policies := []string{"fifo", "fair", "tyrex-static", "minedf-wc"}
	if s := os.Getenv("GOMR_BENCH_POLICIES"); s != "" {
		policies = splitFields(s)
	}
	const trackers = 10000
	jobs, maps := 4, 37500
	if s := os.Getenv("GOMR_BENCH_JOBS"); s != "" {
		if _, err := fmt.Sscanf(s, "%dx%d", &jobs, &maps); err != nil || jobs < 1 || maps < 1 {
			b.Fatalf("GOMR_BENCH_JOBS=%q: want JOBSxMAPS, e.g. 1000x100", s)
		}
	}
	for _, policy := range policies {
		b.Run(fmt.Sprintf("%s/trackers=%d/jobs=%dx%d", policy, trackers, jobs, maps), func(b *testing.B) {
			r := newHeartbeatRigJobs(b, policy, trackers, jobs, maps, 0, false)
			defer r.close()
			b.ReportAllocs()
			if f := os.Getenv("GOMR_BENCH_CPUPROFILE"); f != "" {
				w, err := os.Create(fmt.Sprintf("%s.tail.%s", f, policy))
				if err != nil {
					b.Fatal(err)
				}
				if err := pprof.StartCPUProfile(w); err != nil {
					b.Fatal(err)
				}
				defer func() { pprof.StopCPUProfile(); w.Close() }()
			}
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			times := make([]time.Duration, 0, b.N)
			cpus := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			cpu0 := processCPU()
			for i := 0; i < b.N; i++ {
				c0 := threadCPU()
				t0 := time.Now()
				r.beat(b, i%trackers, true)
				times = append(times, time.Since(t0))
				cpus = append(cpus, threadCPU()-c0)
			}
			b.StopTimer()
			b.ReportMetric(float64((processCPU()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
			slices.Sort(times)
			q := func(p float64) float64 {
				return float64(times[min(int(p*float64(len(times))), len(times)-1)].Nanoseconds())
			}
			b.ReportMetric(q(0.5), "p50-ns")
			b.ReportMetric(q(0.99), "p99-ns")
			b.ReportMetric(q(0.999), "p999-ns")
			b.ReportMetric(float64(times[len(times)-1].Nanoseconds()), "max-ns")
			slices.Sort(cpus)
			c := func(p float64) float64 {
				return float64(cpus[min(int(p*float64(len(cpus))), len(cpus)-1)].Nanoseconds())
			}
			b.ReportMetric(c(0.99), "cpu-p99-ns")
			b.ReportMetric(c(0.999), "cpu-p999-ns")
			b.ReportMetric(float64(cpus[len(cpus)-1].Nanoseconds()), "cpu-max-ns")
		})
	}
}

// threadCPU is the CPU time of the calling thread so far.
func threadCPU() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}
