package jobtracker

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"gomr/mrpb"
)

// BenchmarkClientCallsUnderLoad is issue 17's "web UI and /api response
// times with 10,000 trackers and 1,000 jobs", and what those calls do to
// the heartbeats: 10,000 trackers of 2 map + 2 reduce slots busy with
// 1,000 jobs of 40 maps and 2 reduces (a new one submitted when the maps
// run out), heartbeats sent without pause by 4 goroutines (each tracker's
// in turn, one attempt ending in each, as BenchmarkHeartbeatScale's), and
// one client calling the given call every 10 ms (load/CALL). call-ns/op
// is the call's time then, waits for the lock included; hb-p50-us,
// hb-p99-us and hb-max-us are the heartbeats' latencies meanwhile
// (load/none: no client). alone/CALL is the call's cost with no
// heartbeat running (ns/op). The calls go to the handlers, not through
// gRPC or HTTP (the pages' encoding is not what queues heartbeats).
//
//	go test -run '^$' -bench ClientCallsUnderLoad -benchtime 100x ./jobtracker/
func BenchmarkClientCallsUnderLoad(b *testing.B) {
	r := newClientCallsRig(b)
	defer r.close()
	jt := r.jt
	ctx := context.Background()
	// The job a client polls: the first still running.
	running := func() string {
		jt.mu.Lock()
		defer jt.unlock()
		for _, j := range jt.order {
			if !j.done() {
				return j.id
			}
		}
		return jt.order[len(jt.order)-1].id
	}
	calls := []struct {
		name string
		call func() error
	}{
		{"none", func() error { return nil }},
		{"ListTrackers", func() error { _, err := jt.ListTrackers(ctx, &mrpb.ListTrackersRequest{}); return err }},
		{"ListJobs", func() error { _, err := jt.ListJobs(ctx, &mrpb.ListJobsRequest{All: true}); return err }},
		{"GetJobStatus", func() error {
			_, err := jt.GetJobStatus(ctx, &mrpb.JobStatusRequest{JobId: running()})
			return err
		}},
		{"api-cluster", func() error {
			jt.clusterInfo(jt.jobsSnapshot(true))
			jt.listTrackers(listQuery{State: "live", Sort: sorting{Key: "name"}}, true, "/api/cluster")
			return nil
		}},
		{"api-jobs", func() error { jt.listJobs(jt.jobsSnapshot(false), allJobs, true, "/api/jobs"); return nil }},
		{"cluster-page", func() error { return serveOK(jt, "/") }},
		{"trackers-page", func() error { return serveOK(jt, "/trackers") }},
		{"metrics", func() error { jt.metrics(); return nil }},
		{"tracker-page", func() error {
			if _, ok := jt.trackerDetail(r.trackers[0].name); !ok {
				return fmt.Errorf("no tracker %s", r.trackers[0].name)
			}
			return nil
		}},
		{"expiry-pass", func() error {
			jt.mu.Lock()
			jt.expirePassLocked(jt.now())
			jt.unlock()
			return nil
		}},
		{"speculate", func() error {
			jt.mu.Lock()
			jt.speculateLocked(jt.now())
			jt.unlock()
			return nil
		}},
		{"sample", func() error {
			jt.mu.Lock()
			jt.lastSample = time.Time{}
			jt.sampleLocked(jt.now())
			jt.unlock()
			return nil
		}},
	}
	for _, c := range calls[1:] {
		b.Run("alone/"+c.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if err := c.call(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	const workers = 4
	for _, c := range calls {
		b.Run("load/"+c.name, func(b *testing.B) {
			stop := make(chan struct{})
			lat := make([][]time.Duration, workers)
			errs := make(chan error, workers)
			var wg sync.WaitGroup
			for w := range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for k := w; ; k += workers {
						select {
						case <-stop:
							return
						default:
						}
						i := k % len(r.trackers)
						t0 := time.Now()
						ended, err := r.tryBeat(i, true)
						lat[w] = append(lat[w], time.Since(t0))
						if err != nil {
							errs <- err
							return
						}
						if !ended && r.pendingMaps() == 0 {
							r.submit(b)
						}
					}
				}()
			}
			b.ResetTimer()
			var spent time.Duration
			for i := 0; i < b.N; i++ {
				t0 := time.Now()
				if err := c.call(); err != nil {
					b.Fatal(err)
				}
				spent += time.Since(t0)
				time.Sleep(10 * time.Millisecond)
			}
			b.StopTimer()
			close(stop)
			wg.Wait()
			select {
			case err := <-errs:
				b.Fatal(err)
			default:
			}
			all := slices.Concat(lat...)
			slices.Sort(all)
			if len(all) > 0 {
				b.ReportMetric(float64(all[len(all)/2].Microseconds()), "hb-p50-us")
				b.ReportMetric(float64(all[len(all)*99/100].Microseconds()), "hb-p99-us")
				b.ReportMetric(float64(all[len(all)-1].Microseconds()), "hb-max-us")
			}
			b.ReportMetric(float64(spent.Nanoseconds())/float64(b.N), "call-ns/op")
		})
	}
}

// BenchmarkSpeculateLastWave is the speculator's scan of a job in its last
// wave (no map pending: the scan looks at every map), every second under
// the lock: 2,000 trackers of 2 map slots, a job of 20,000 maps of which
// 16,000 have succeeded and 4,000 run, and 10,000 trackers with a job of
// 37,500 maps of which 20,000 run (mr loadgen's 10,000-tracker workload),
// speculation on.
//
//	go test -run '^$' -bench SpeculateLastWave ./jobtracker/
func BenchmarkSpeculateLastWave(b *testing.B) {
	for _, sz := range []struct{ trackers, maps int }{{2000, 20000}, {10000, 37500}} {
		b.Run(fmt.Sprintf("trackers=%d/maps=%d", sz.trackers, sz.maps), func(b *testing.B) {
			r := newHeartbeatRigConf(b, sz.trackers, 1, sz.maps, 2, false, map[string]string{"scheduler.policy": "fifo"})
			defer r.close()
			for k := 0; r.pendingMaps() > 0; k++ {
				if _, err := r.tryBeat(k%len(r.trackers), true); err != nil {
					b.Fatal(err)
				}
			}
			jt := r.jt
			jt.mu.Lock()
			defer jt.unlock()
			j := jt.order[0]
			b.Logf("maps: %d succeeded, %d running, %d pending", j.byState[0][taskSucceeded], j.byState[0][taskRunning], j.pending[0])
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := processCPU()
			for i := 0; i < b.N; i++ {
				jt.speculateLocked(jt.now())
			}
			b.StopTimer()
			b.ReportMetric(float64((processCPU()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
		})
	}
}

// allJobs is the query of every job in submission order (/api/jobs with
// no parameters).
var allJobs = listQuery{State: "all", Sort: sorting{Key: "submit"}}

// serveOK serves a GET of path by the JobTracker's HTTP handler, page
// rendering included, and wants a 200.
func serveOK(jt *JobTracker, path string) error {
	rec := httptest.NewRecorder()
	jt.HTTPHandler().ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
	if rec.Code != http.StatusOK {
		return fmt.Errorf("GET %s: status %d: %s", path, rec.Code, rec.Body)
	}
	return nil
}

// newClientCallsRig is the rig of the client calls' and pages'
// benchmarks: 10,000 trackers of 2 + 2 slots busy with 1,000 jobs of 40
// maps and 2 reduces under fifo (1,000 and 100 with GOMR_BENCH_SMALL set).
func newClientCallsRig(b *testing.B) *heartbeatRig {
	trackers, jobs := 10000, 1000
	if os.Getenv("GOMR_BENCH_SMALL") != "" {
		trackers, jobs = 1000, 100
	}
	return newHeartbeatRigJobs(b, "fifo", trackers, jobs, 40, 2, false)
}
