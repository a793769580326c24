package jobtracker

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"gomr/conf"
	"gomr/mr"
	"gomr/mrpb"
)

// The cost of one heartbeat at the scale of issue 17 (docs/scaling.md):
// N registered trackers of 2 map and 2 reduce slots, all of them busy with
// a job of 100,000 maps, and heartbeats that go round the trackers, each
// reporting its running attempts (progress, phase and counters as a task
// reports them) and the end of its oldest one, with the map's final spill
// announced; the JobTracker fills the freed slot in its reply. That is the
// heartbeat of a busy cluster with out-of-band heartbeats: one per task
// end. The direct variant calls the handler; the grpc one goes through a
// gRPC client and server on loopback (marshalling, HTTP/2, the server's
// goroutine per call). ns/op is the CPU of a heartbeat (the benchmark runs
// one at a time); 1 core at 3,333 heartbeats a second is 300 µs.
//
//	go test -run '^$' -bench HeartbeatScale -benchtime 20000x ./jobtracker/
//
// GOMR_BENCH_TRACKERS and GOMR_BENCH_POLICIES narrow the sweep
// ("10000", "fifo fair"). The gRPC server has the JobTracker's own
// options (jt.serverOptions); GOMR_BENCH_STREAM_WORKERS=N adds gRPC's
// NumStreamWorkers(N), to compare a pool of stream workers with a
// goroutine per call.
func BenchmarkHeartbeatScale(b *testing.B) {
	trackers := []int{1000, 10000}
	if s := os.Getenv("GOMR_BENCH_TRACKERS"); s != "" {
		trackers = nil
		for _, f := range splitFields(s) {
			var n int
			fmt.Sscan(f, &n)
			trackers = append(trackers, n)
		}
	}
	policies := []string{"fifo", "fair", "tyrex-static", "minedf-wc"}
	if s := os.Getenv("GOMR_BENCH_POLICIES"); s != "" {
		policies = splitFields(s)
	}
	for _, via := range []string{"direct", "grpc"} {
		for _, policy := range policies {
			for _, n := range trackers {
				b.Run(fmt.Sprintf("%s/%s/trackers=%d/maps=100000", via, policy, n), func(b *testing.B) {
					r := newHeartbeatRig(b, policy, n, 100000, via == "grpc")
					b.ReportAllocs()
					if f := os.Getenv("GOMR_BENCH_CPUPROFILE"); f != "" {
						// The measured loop's profile only (-cpuprofile
						// would hold the setup's registrations too).
						w, err := os.Create(fmt.Sprintf("%s.%s.%s.%d", f, via, policy, n))
						if err != nil {
							b.Fatal(err)
						}
						if err := pprof.StartCPUProfile(w); err != nil {
							b.Fatal(err)
						}
						defer func() { pprof.StopCPUProfile(); w.Close() }()
					}
					b.ResetTimer()
					cpu0 := processCPU()
					held0, wait0 := histogramSum(r.jt.prom.lockHeld), histogramSum(r.jt.prom.lockWait)
					for i := 0; i < b.N; i++ {
						r.beat(b, i%n, true)
					}
					b.StopTimer()
					// The process's CPU (both ends, for grpc; the GC
					// included): what a heartbeat costs when they queue.
					b.ReportMetric(float64((processCPU()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
					// The time under the JobTracker's lock: what bounds the
					// heartbeats it answers a second, whatever the cores.
					b.ReportMetric((histogramSum(r.jt.prom.lockHeld)-held0)*1e9/float64(b.N), "locked-ns/op")
					b.ReportMetric((histogramSum(r.jt.prom.lockWait)-wait0)*1e9/float64(b.N), "lockwait-ns/op")
					r.close()
				})
			}
		}
	}
}

// histogramSum is the sum of a histogram's observations.
func histogramSum(h prometheus.Histogram) float64 {
	var m dto.Metric
	if err := h.Write(&m); err != nil {
		return 0
	}
	return m.GetHistogram().GetSampleSum()
}

// processCPU is the process's user and system CPU time so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func splitFields(s string) []string {
	return strings.FieldsFunc(s, func(c rune) bool { return c == ' ' || c == ',' })
}

// heartbeatRig is a JobTracker with simulated trackers that answer its
// replies as TaskTrackers do.
type heartbeatRig struct {
	jt       *JobTracker
	dir      string
	maps     int
	reduces  int
	trackers []*rigTracker
	call     func(*mrpb.HeartbeatRequest) (*mrpb.HeartbeatResponse, error)
	closeFn  func()
	start    time.Time
}

type rigTracker struct {
	name, host, incarnation string
	replyID                 int64
	running                 []rigAttempt
}

type rigAttempt struct {
	id     string
	start  time.Time
	reduce bool
}

func newHeartbeatRig(b testing.TB, policy string, trackers, maps int, viaGRPC bool) *heartbeatRig {
	b.Helper()
	return newHeartbeatRigJobs(b, policy, trackers, 1, maps, 10, viaGRPC)
}

// newHeartbeatRigJobs is newHeartbeatRig with jobs jobs of maps maps and
// reduces reduces each submitted before the trackers register.
func newHeartbeatRigJobs(b testing.TB, policy string, trackers, jobs, maps, reduces int, viaGRPC bool) *heartbeatRig {
	b.Helper()
	return newHeartbeatRigConf(b, trackers, jobs, maps, reduces, viaGRPC, map[string]string{
		"scheduler.policy": policy,
		// No speculation: the attempts all run at one pace.
		"mapreduce.map.speculative":    "false",
		"mapreduce.reduce.speculative": "false",
	})
}

// newHeartbeatRigConf is newHeartbeatRigJobs with the JobTracker's
// configuration overrides given.
func newHeartbeatRigConf(b testing.TB, trackers, jobs, maps, reduces int, viaGRPC bool, overrides map[string]string) *heartbeatRig {
	b.Helper()
	dir := b.TempDir()
	jt, _ := newTestJTWith(b, dir, 0, nil, overrides)
	// Measured as it runs: without the tests' check of each cached view.
	jt.views.verify = false
	jt.log = slog.New(slog.DiscardHandler)
	r := &heartbeatRig{jt: jt, dir: dir, maps: maps, reduces: reduces, start: time.Now()}
	r.call = func(req *mrpb.HeartbeatRequest) (*mrpb.HeartbeatResponse, error) {
		return jt.Heartbeat(context.Background(), req)
	}
	r.closeFn = func() {}
	if viaGRPC {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		// The JobTracker's own server options (its stats handler
		// included), as Serve uses them.
		opts := jt.serverOptions()
		if s := os.Getenv("GOMR_BENCH_STREAM_WORKERS"); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil {
				b.Fatalf("GOMR_BENCH_STREAM_WORKERS=%q: %v", s, err)
			}
			opts = append(opts, grpc.NumStreamWorkers(uint32(n)))
		}
		srv := grpc.NewServer(opts...)
		mrpb.RegisterJobTrackerServer(srv, wireServer{jt})
		go srv.Serve(l)
		cc, err := grpc.NewClient(l.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			b.Fatal(err)
		}
		client := mrpb.NewJobTrackerClient(cc)
		r.call = func(req *mrpb.HeartbeatRequest) (*mrpb.HeartbeatResponse, error) {
			return client.Heartbeat(context.Background(), req)
		}
		r.closeFn = func() { cc.Close(); srv.Stop() }
	}
	for i := 0; i < trackers; i++ {
		r.trackers = append(r.trackers, &rigTracker{name: fmt.Sprintf("tracker_%d", i), host: fmt.Sprintf("host%d", i)})
	}
	for range jobs {
		r.submit(b)
	}
	for i := range r.trackers {
		r.beat(b, i, false) // registration: fills the tracker's slots
	}
	for i := range r.trackers {
		r.beat(b, i, false) // the launches acknowledged
	}
	return r
}

func (r *heartbeatRig) close() { r.closeFn() }

// submit submits a job of r.maps maps and r.reduces reduces whose splits
// are each on 3 of the trackers' hosts.
func (r *heartbeatRig) submit(b testing.TB) {
	in := filepath.Join(r.dir, "in.txt")
	if err := os.WriteFile(in, []byte("a b c\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	splits := make([]mr.Split, r.maps)
	n := len(r.trackers)
	for i := range splits {
		splits[i] = mr.Split{Path: in, Start: 0, Length: 6,
			Hosts: []string{r.trackers[i%n].host, r.trackers[(i+n/3)%n].host, r.trackers[(i+2*n/3)%n].host}}
	}
	spec, _ := json.Marshal(&mr.JobSpec{Def: "wordcount", Inputs: []string{in},
		Output: filepath.Join(r.dir, fmt.Sprintf("out%d", time.Now().UnixNano())), NumReduces: r.reduces})
	sj, _ := json.Marshal(splits)
	if _, err := r.jt.SubmitJob(context.Background(), &mrpb.SubmitJobRequest{SpecJson: spec, SplitsJson: sj}); err != nil {
		b.Fatal(err)
	}
}

var rigCounterNames = []string{mr.MapInputRecords, mr.MapOutputRecords, mr.MapOutputBytes, mr.CPUMilliseconds,
	mr.SpilledRecords, mr.CombineInputRecords, mr.CombineOutputRecords, "MAP_OUTPUT_MATERIALIZED_BYTES",
	"GC_TIME_MILLIS", "PHYSICAL_MEMORY_BYTES", "VIRTUAL_MEMORY_BYTES", "COMMITTED_HEAP_BYTES"}

// beat sends tracker i's heartbeat (tryBeat), and submits a new job when
// the running ones have no map left to launch.
func (r *heartbeatRig) beat(b testing.TB, i int, end bool) {
	ended, err := r.tryBeat(i, end)
	if err != nil {
		b.Fatal(err)
	}
	if end && !ended && r.pendingMaps() == 0 {
		// The job's maps are all launched: a new job keeps the slots busy.
		if tb, ok := b.(*testing.B); ok {
			tb.StopTimer()
			r.submit(b)
			tb.StartTimer()
		} else {
			r.submit(b)
		}
	}
}

// tryBeat sends tracker i's heartbeat: every running attempt reported,
// and, with end, the oldest one SUCCEEDED with its final spill announced;
// it tells whether an attempt ended. It may run beside the heartbeats of
// other trackers.
func (r *heartbeatRig) tryBeat(i int, end bool) (bool, error) {
	t := r.trackers[i]
	now := time.Now()
	req := &mrpb.HeartbeatRequest{Tracker: t.name, Host: t.host, ShuffleAddress: t.host + ":50060",
		MapSlots: 2, ReduceSlots: 2, AcceptNewTasks: true, Incarnation: t.incarnation, ResponseId: t.replyID,
		InitialContact: t.incarnation == "", Instance: t.name}
	if req.InitialContact {
		req.ConfDefaultsDigest = conf.DefaultsDigest()
	}
	ended := -1
	if end && len(t.running) > 0 {
		ended = 0
	}
	free := [2]int32{2, 2}
	for k, a := range t.running {
		st := &mrpb.AttemptStatus{AttemptId: a.id, State: StateRunning, StartMs: a.start.UnixMilli(), Phase: "MAP",
			Progress: 0.5, RssBytes: 200 << 20}
		if a.reduce {
			st.Phase = "SHUFFLE"
		}
		for c, name := range rigCounterNames {
			st.Counters = append(st.Counters, &mrpb.Counter{Group: mr.TaskCounterGroup, Name: name, Value: int64(1000 * (c + 1))})
		}
		if k == ended {
			st.State, st.Progress, st.FinishMs = StateSucceeded, 1, now.UnixMilli()
			if !a.reduce {
				sp := &mrpb.SpillAnnouncement{AttemptId: a.id, Spill: 0, Final: true}
				for p := 0; p < r.reduces; p++ {
					sp.Segments = append(sp.Segments, &mrpb.Segment{Length: 1000, RawLength: 2000, Records: 100, Crc: 7})
				}
				req.Spills = append(req.Spills, sp)
			}
		} else if a.reduce {
			free[1]--
		} else {
			free[0]--
		}
		req.Attempts = append(req.Attempts, st)
	}
	if ended >= 0 {
		t.running = t.running[1:]
	}
	req.FreeMapSlots, req.FreeReduceSlots = free[0], free[1]
	resp, err := r.call(req)
	if err != nil {
		return false, err
	}
	if resp.Incarnation != "" {
		t.incarnation = resp.Incarnation
	}
	t.replyID = resp.ResponseId
	for _, a := range resp.Actions {
		if l := a.GetLaunch(); l != nil {
			if !containsAttempt(t.running, l.AttemptId) {
				t.running = append(t.running, rigAttempt{id: l.AttemptId, start: now, reduce: l.Type == "r"})
			}
		}
		if k := a.GetKillAttempt(); k != "" {
			for x := range t.running {
				if t.running[x].id == k {
					t.running = append(t.running[:x], t.running[x+1:]...)
					break
				}
			}
		}
	}
	return ended >= 0, nil
}

func containsAttempt(as []rigAttempt, id string) bool {
	for _, a := range as {
		if a.id == id {
			return true
		}
	}
	return false
}

func (r *heartbeatRig) pendingMaps() int {
	r.jt.mu.Lock()
	defer r.jt.unlock()
	n := 0
	for _, j := range r.jt.order {
		if !j.done() {
			n += j.pending[0]
		}
	}
	return n
}

// BenchmarkLockHolders is the other holders of the JobTracker's lock that
// heartbeats wait behind, on the same cluster of 10,000 busy trackers and
// a 100,000-map job: the speculator's scan (every second), the tracker
// expiry pass (expiryLoop), a client's job-status poll and the web UI's
// sample (once a second).
//
//	go test -run '^$' -bench LockHolders ./jobtracker/
func BenchmarkLockHolders(b *testing.B) {
	r := newHeartbeatRig(b, "fifo", 10000, 100000, false)
	defer r.close()
	for i := 0; i < 20000; i++ {
		r.beat(b, i%10000, true)
	}
	jt := r.jt
	b.Run("speculate", func(b *testing.B) {
		jt.mu.Lock()
		defer jt.unlock()
		for i := 0; i < b.N; i++ {
			jt.speculateLocked(jt.now())
		}
	})
	b.Run("expiry", func(b *testing.B) {
		jt.mu.Lock()
		defer jt.unlock()
		for i := 0; i < b.N; i++ {
			jt.expirePassLocked(jt.now())
		}
	})
	b.Run("jobstatus", func(b *testing.B) {
		// A client's poll of the running job (mr submit polls every
		// 100 ms), which takes the lock itself.
		req := &mrpb.JobStatusRequest{JobId: jt.order[len(jt.order)-1].id}
		for i := 0; i < b.N; i++ {
			if _, err := jt.GetJobStatus(context.Background(), req); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("jobstatus-locked", func(b *testing.B) {
		// Its part under the lock.
		jt.mu.Lock()
		defer jt.unlock()
		j := jt.order[len(jt.order)-1]
		for i := 0; i < b.N; i++ {
			jt.jobStatusNoCountersLocked(j)
		}
	})
	b.Run("sample", func(b *testing.B) {
		jt.mu.Lock()
		defer jt.unlock()
		now := jt.now()
		for i := 0; i < b.N; i++ {
			now = now.Add(2 * sampleEvery)
			jt.sampleLocked(now)
		}
	})
}

// TestConcurrentHeartbeatsCombine sends heartbeats of different trackers
// at once, so that combiners answer them in batches (combineHeartbeat):
// every one is answered, as a tracker expects, and the job's counts stay
// those of its tasks (the rig's check at the end).
func TestConcurrentHeartbeatsCombine(t *testing.T) {
	const trackers, workers, beats = 200, 8, 40
	r := newHeartbeatRig(t, "fifo", trackers, 20000, false)
	defer r.close()
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		go func(w int) {
			for k := 0; k < beats; k++ {
				for i := w; i < trackers; i += workers {
					if _, err := r.tryBeat(i, true); err != nil {
						errs <- err
						return
					}
				}
			}
			errs <- nil
		}(w)
	}
	for w := 0; w < workers; w++ {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	r.jt.mu.Lock()
	defer r.jt.unlock()
	if n := r.jt.order[0].finishedMaps; n != trackers*beats {
		t.Errorf("%d maps finished, want %d (one a heartbeat)", n, trackers*beats)
	}
}

// BenchmarkJobEnd is the end of a map-only job of 37,500 maps on 10,000
// trackers (loadgen's jobs at 10,000 trackers): every map run to its end
// by heartbeats, then the job's commit and end, whose hold of the lock
// (holder job_end) heartbeats wait behind, and its history file written.
// job_end-ms/op is that hold's wall time; with -cpuprofile, the
// endJobLocked subtree is its CPU.
//
//	go test -run '^$' -bench JobEnd -benchtime 1x -cpuprofile /tmp/jobend.prof ./jobtracker/
func BenchmarkJobEnd(b *testing.B) {
	var held float64
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		r := newHeartbeatRigConf(b, 10000, 1, 37500, 0, false, map[string]string{"scheduler.policy": "fifo"})
		jt := r.jt
		job := func() (done bool, written bool) {
			jt.mu.Lock()
			defer jt.unlock()
			j := jt.order[0]
			return j.done(), j.history == historyWritten
		}
		for k := 0; ; k++ {
			if done, _ := job(); done {
				break
			}
			if _, err := r.tryBeat(k%len(r.trackers), true); err != nil {
				b.Fatal(err)
			}
		}
		for _, written := job(); !written; _, written = job() {
			time.Sleep(10 * time.Millisecond)
		}
		var m dto.Metric
		if err := jt.prom.holds[holderJobEnd].(prometheus.Metric).Write(&m); err != nil {
			b.Fatal(err)
		}
		held += m.GetHistogram().GetSampleSum()
		r.close()
	}
	b.ReportMetric(held*1000/float64(b.N), "job_end-ms/op")
}
