package loadgen

import (
	"context"
	"io"
	"log/slog"
	"math"
	"runtime/debug"
	"testing"
	"time"
)

// TestRunInProcess drives an in-process JobTracker with 20 simulated
// trackers and a small job of maps and reduces: every task must be
// launched and reported done, the job must succeed, and the figures must
// be filled in.
func TestRunInProcess(t *testing.T) {
	jobs, err := Fixed{Jobs: 1, Maps: 60, Reduces: 5, MapTime: 300 * time.Millisecond, ReduceTime: 200 * time.Millisecond, Jitter: 0.2, Seed: 1}.Generate()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := Run(ctx, Config{
		Trackers: 20, MapSlots: 2, ReduceSlots: 1, Heartbeat: 100 * time.Millisecond,
		Duration: 15 * time.Second, Warmup: 200 * time.Millisecond, StopWhenDone: true,
		Policy: "fifo", MapEvents: true, Jobs: jobs, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Jobs) != 1 {
		t.Fatalf("%d job results, want 1", len(res.Jobs))
	}
	j := res.Jobs[0]
	if j.State != "SUCCEEDED" {
		t.Errorf("job %s is %s (%s), want SUCCEEDED", j.ID, j.State, j.Error)
	}
	if j.MapsLaunched != 60 || j.MapsDone != 60 || j.ReducesLaunched != 5 || j.ReducesDone != 5 {
		t.Errorf("job %s: maps %d launched, %d done; reduces %d launched, %d done; want 60 and 5 of each",
			j.ID, j.MapsLaunched, j.MapsDone, j.ReducesLaunched, j.ReducesDone)
	}
	if res.Mode != "in-process" || res.Connections != 20 || res.Heartbeats == 0 || res.HeartbeatsPerSec <= 0 ||
		res.HeartbeatLatency.N == 0 || res.HeartbeatLatency.P99Ms <= 0 || res.Launches == 0 || res.LaunchesPerSec <= 0 ||
		res.SlotToLaunch.N == 0 || res.ReportToLaunch.N == 0 || res.MapSlotUtilization <= 0 || res.ReduceSlotUtilization <= 0 || res.SubmitLatency.N != 1 || res.MapEventCallsPerSec <= 0 {
		t.Errorf("figures not filled in: %+v", res)
	}
	if res.Process.CPUCores < 0 || res.Process.RSSPeakMB <= 0 || res.Process.HeapLiveMB <= 0 || res.Process.Goroutines <= 0 {
		t.Errorf("JobTracker process figures not filled in: %+v", res.Process)
	}
	if res.TrackersLost != 0 || res.LostLogged != 0 || res.TrackersLiveAtEnd != 20 || res.HeartbeatErrors != 0 {
		t.Errorf("trackers lost %d (logged %d), %d live at the end, %d heartbeat errors: want 0, 0, 20, 0",
			res.TrackersLost, res.LostLogged, res.TrackersLiveAtEnd, res.HeartbeatErrors)
	}
}

// TestGeneratorGC checks that the generator's GC percentage is applied
// only when the JobTracker runs in another process, and restored after.
func TestGeneratorGC(t *testing.T) {
	before := debug.SetGCPercent(-1)
	debug.SetGCPercent(before)
	for _, c := range []struct {
		mode string
		pct  int
		want int
	}{
		{"spawned", 400, 400},
		{"remote", 250, 250},
		{"in-process", 400, before},
		{"spawned", 0, before},
	} {
		got, restore := generatorGC(c.mode, c.pct)
		now := debug.SetGCPercent(-1)
		debug.SetGCPercent(now)
		restore()
		after := debug.SetGCPercent(-1)
		debug.SetGCPercent(after)
		if got != c.want || now != c.want || after != before {
			t.Errorf("generatorGC(%q, %d): reported %d, in effect %d, after restore %d; want %d, %d, %d",
				c.mode, c.pct, got, now, after, c.want, c.want, before)
		}
	}
}

// TestBusyMaps checks the map count that keeps every slot busy.
func TestBusyMaps(t *testing.T) {
	// 100 slots, 40 s of 10 s maps: 5 waves, half again, over 2 jobs.
	if got := BusyMaps(100, 2, 40*time.Second, 10*time.Second); got != 375 {
		t.Errorf("BusyMaps = %d, want 375", got)
	}
}

// TestSpeed checks that a trace replayed faster has its times divided.
func TestSpeed(t *testing.T) {
	jobs := []Job{{Submit: 10 * time.Second, Maps: []time.Duration{4 * time.Second}, Reduces: []time.Duration{2 * time.Second},
		Shuffles: []time.Duration{time.Second}, Deadline: 20 * time.Second}}
	if err := Speed(jobs, 2); err != nil {
		t.Fatal(err)
	}
	j := jobs[0]
	if j.Submit != 5*time.Second || j.Maps[0] != 2*time.Second || j.Reduces[0] != time.Second || j.Shuffles[0] != time.Second/2 || j.Deadline != 10*time.Second {
		t.Errorf("after Speed(2): %+v", j)
	}
	if err := Speed(jobs, 0); err == nil {
		t.Error("Speed(0) did not fail")
	}
}

// TestFollowInterval: 40 trackers following the JobTracker's adaptive
// interval (20 heartbeats a second: 2 s for 40 trackers, over the 100 ms
// minimum) heartbeat at about 20 a second in all, not at the 400 a second
// of the minimum.
func TestFollowInterval(t *testing.T) {
	jobs, err := Fixed{Jobs: 1, Maps: 20, MapTime: 100 * time.Millisecond, Seed: 1}.Generate()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := Run(ctx, Config{
		Jobs: jobs, Trackers: 40, MapSlots: 1, ReduceSlots: 0, Heartbeat: 100 * time.Millisecond, FollowInterval: true,
		Duration: 7 * time.Second, Warmup: 2 * time.Second, Policy: "fifo",
		Defines: map[string]string{"mapreduce.jobtracker.heartbeats.in.second": "20"},
		Logger:  slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.AdvertisedHeartbeatS != 2 || !res.FollowInterval {
		t.Errorf("advertised interval %gs (followed %v), want 2s followed", res.AdvertisedHeartbeatS, res.FollowInterval)
	}
	if res.ExpectedHeartbeatsPerSec != 20 {
		t.Errorf("expected %g heartbeats/s, want 20 (40 trackers / 2 s)", res.ExpectedHeartbeatsPerSec)
	}
	if res.HeartbeatsPerSec < 10 || res.HeartbeatsPerSec > 35 {
		t.Errorf("%g heartbeats/s measured, want about 20", res.HeartbeatsPerSec)
	}
}

func TestLockFigures(t *testing.T) {
	const w, h = "gomr_heartbeat_lock_wait_seconds", "gomr_heartbeat_lock_held_seconds"
	before := map[string]float64{w + "_count": 10, w + "_sum": 0.01, h + "_count": 10, h + "_sum": 0.5,
		w + `_bucket{le="0.001"}`: 10, w + `_bucket{le="0.002"}`: 10, w + `_bucket{le="+Inf"}`: 10,
		h + `_bucket{le="0.001"}`: 0, h + `_bucket{le="0.1"}`: 10, h + `_bucket{le="+Inf"}`: 10}
	// 100 heartbeats more: 98 waited under 1 ms and 2 under 2 ms; all
	// held it under 1 ms.
	after := map[string]float64{w + "_count": 110, w + "_sum": 0.11, h + "_count": 110, h + "_sum": 0.55,
		w + `_bucket{le="0.001"}`: 108, w + `_bucket{le="0.002"}`: 110, w + `_bucket{le="+Inf"}`: 110,
		h + `_bucket{le="0.001"}`: 100, h + `_bucket{le="0.1"}`: 110, h + `_bucket{le="+Inf"}`: 110}
	got := lockFigures(before, after)
	want := &LockFigures{WaitMeanMs: 1, WaitP99Ms: 2, HeldMeanMs: 0.5, HeldP99Ms: 1, Heartbeats: 100}
	if got == nil || math.Abs(got.WaitMeanMs-want.WaitMeanMs) > 1e-9 || math.Abs(got.HeldMeanMs-want.HeldMeanMs) > 1e-9 ||
		got.WaitP99Ms != want.WaitP99Ms || got.HeldP99Ms != want.HeldP99Ms || got.Heartbeats != want.Heartbeats {
		t.Errorf("lockFigures = %+v, want %+v", got, want)
	}
	if got.GCCycles != -1 || got.GCPauseMs != -1 || got.HandlerMeanMs != 0 {
		t.Errorf("handler and GC figures without their metrics: %+v", got)
	}
	// The handler's histogram (all 100 under 4 ms, 2 ms each) and 3 GCs
	// pausing 1.5 ms in all.
	const hd, gc = "gomr_heartbeat_duration_seconds", "go_gc_duration_seconds"
	before[hd+"_count"], before[hd+"_sum"], before[hd+`_bucket{le="0.004"}`] = 10, 0.02, 10
	after[hd+"_count"], after[hd+"_sum"], after[hd+`_bucket{le="0.004"}`] = 110, 0.22, 110
	before[gc+"_count"], before[gc+"_sum"] = 7, 0.01
	after[gc+"_count"], after[gc+"_sum"] = 10, 0.0115
	got = lockFigures(before, after)
	if math.Abs(got.HandlerMeanMs-2) > 1e-9 || got.HandlerP99Ms != 4 || got.GCCycles != 3 || math.Abs(got.GCPauseMs-1.5) > 1e-9 {
		t.Errorf("handler and GC figures: %+v, want mean 2 ms, p99 4 ms, 3 cycles, 1.5 ms", got)
	}
	if lockFigures(map[string]float64{}, map[string]float64{}) != nil {
		t.Error("lock figures without the histograms")
	}
}

// TestPollUI polls the pages and calls during a short run of many small
// jobs: every target answered, each with response times in the window and
// no failed request.
func TestPollUI(t *testing.T) {
	jobs, err := Fixed{Jobs: 30, Maps: 4, MapTime: 200 * time.Millisecond, Seed: 1}.Generate()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := Run(ctx, Config{
		Trackers: 10, MapSlots: 2, ReduceSlots: 1, Heartbeat: 100 * time.Millisecond,
		Duration: 2 * time.Second, Warmup: 200 * time.Millisecond, PollUI: 50 * time.Millisecond,
		Policy: "fifo", Jobs: jobs, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for _, name := range []string{"GET /", "GET /trackers", "GET /tracker", "GET /job", "GET /api/cluster", "GET /api/cluster/occupancy", "GET /api/jobs",
		"GET /api/job", "GET /metrics", "rpc ListJobs", "rpc GetJobStatus", "rpc ListTrackers"} {
		want[name] = true
	}
	for _, p := range res.Polls {
		if !want[p.Name] {
			t.Errorf("polled %q, not a target", p.Name)
		}
		delete(want, p.Name)
		if p.Errors != 0 || p.Latency.N == 0 || p.Latency.P99Ms <= 0 {
			t.Errorf("%s: %d errors, response times %+v", p.Name, p.Errors, p.Latency)
		}
	}
	for name := range want {
		t.Errorf("%s not polled", name)
	}
	if res.PollUIS != 0.05 {
		t.Errorf("poll interval %gs, want 0.05", res.PollUIS)
	}
}

// TestServerAndHolderFigures reads the JobTracker-side latency (quantiles
// interpolated in its buckets) and the lock's holds by holder between two
// scrapes.
func TestServerAndHolderFigures(t *testing.T) {
	const w, s, h = "gomr_heartbeat_lock_wait_seconds", "gomr_heartbeat_server_seconds", "gomr_jobtracker_lock_held_seconds"
	before := map[string]float64{w + "_count": 0, s + "_count": 0}
	// 1,000 heartbeats: 900 in (0, 1 ms], 90 in (1, 2 ms], 10 in (49, 50 ms].
	after := map[string]float64{w + "_count": 1000, w + `_bucket{le="+Inf"}`: 1000,
		s + "_count": 1000, s + "_sum": 2,
		s + `_bucket{le="0.001"}`: 900, s + `_bucket{le="0.002"}`: 990, s + `_bucket{le="0.049"}`: 990,
		s + `_bucket{le="0.05"}`: 1000, s + `_bucket{le="+Inf"}`: 1000,
		// The speculator held it twice, 30 ms in all, once under 10 us
		// and once in (20, 40 ms]; heartbeats 100 times, 5 ms in all.
		h + `_count{holder="speculator"}`: 2, h + `_sum{holder="speculator"}`: 0.030,
		h + `_bucket{holder="speculator",le="1e-05"}`: 1, h + `_bucket{holder="speculator",le="0.02"}`: 1,
		h + `_bucket{holder="speculator",le="0.04"}`: 2, h + `_bucket{holder="speculator",le="+Inf"}`: 2,
		h + `_count{holder="heartbeat"}`: 100, h + `_sum{holder="heartbeat"}`: 0.005,
		h + `_bucket{holder="heartbeat",le="0.0001"}`: 100, h + `_bucket{holder="heartbeat",le="+Inf"}`: 100,
		h + `_count{holder="expiry"}`: 0, h + `_sum{holder="expiry"}`: 0,
	}
	f := lockFigures(before, after)
	if f == nil || f.Server == nil {
		t.Fatalf("lockFigures = %+v, want server figures", f)
	}
	sv := f.Server
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	// p50: the 500th of 900 in (0, 1 ms]; p99: the 990th, at 2 ms; p99.9:
	// the 999th, 9/10 of the way through (49, 50 ms].
	if sv.Heartbeats != 1000 || !near(sv.MeanMs, 2) || !near(sv.P50Ms, 500.0/900) || !near(sv.P99Ms, 2) ||
		!near(sv.P999Ms, 49.9) || !near(sv.MaxMs, 50) {
		t.Errorf("server figures %+v", sv)
	}
	want := []HolderFigures{
		{Holder: "speculator", Holds: 2, TotalMs: 30, MeanMs: 15, P99Ms: 40, MaxMs: 40},
		{Holder: "heartbeat", Holds: 100, TotalMs: 5, MeanMs: 0.05, P99Ms: 0.1, MaxMs: 0.1},
	}
	if len(f.Holders) != len(want) {
		t.Fatalf("holders %+v, want %+v", f.Holders, want)
	}
	for i, g := range f.Holders {
		x := want[i]
		if g.Holder != x.Holder || g.Holds != x.Holds || !near(g.TotalMs, x.TotalMs) || !near(g.MeanMs, x.MeanMs) ||
			!near(g.P99Ms, x.P99Ms) || !near(g.MaxMs, x.MaxMs) {
			t.Errorf("holder %d = %+v, want %+v", i, g, x)
		}
	}
}

func TestInterpolatedQuantile(t *testing.T) {
	inf := math.Inf(1)
	for _, c := range []struct {
		name string
		bs   []bucket
		q    float64
		want float64
	}{
		{"first bucket from zero", []bucket{{0.01, 100}, {inf, 100}}, 0.5, 0.005},
		{"within a later bucket", []bucket{{1, 50}, {2, 150}, {inf, 150}}, 0.5, 1.25},
		{"at a bound", []bucket{{1, 50}, {2, 100}, {inf, 100}}, 0.5, 1},
		{"empty buckets before", []bucket{{1, 0}, {2, 0}, {3, 10}, {inf, 10}}, 0.99, 2.99},
		{"beyond the last bound", []bucket{{1, 1}, {inf, 10}}, 0.99, -1},
		{"no observation", []bucket{{1, 0}, {inf, 0}}, 0.99, -1},
	} {
		if got := interpolatedQuantile(c.bs, c.q); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("%s: interpolatedQuantile(q=%g) = %g, want %g", c.name, c.q, got, c.want)
		}
	}
}

// TestTraceStart: the JobTracker's execution trace starts when
// --jobtracker-trace-at says, from the trackers' start, or by default in
// the middle of the measured window (its whole window when it is shorter
// than the trace).
func TestTraceStart(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	for _, c := range []struct {
		name             string
		winStart, winEnd time.Duration
		traceAt, length  time.Duration
		want             time.Duration
	}{
		{"default: the window's middle", 6 * time.Second, 40 * time.Second, -1, DefaultTraceLength, 20500 * time.Millisecond},
		{"default, window shorter than the trace", 1 * time.Second, 3 * time.Second, -time.Second, DefaultTraceLength, 1 * time.Second},
		{"a 30 s trace in the window's middle", 6 * time.Second, 40 * time.Second, -1, 30 * time.Second, 8 * time.Second},
		{"at the trackers' start", 6 * time.Second, 40 * time.Second, 0, DefaultTraceLength, 0},
		{"at a time in the warm-up", 6 * time.Second, 40 * time.Second, 2 * time.Second, DefaultTraceLength, 2 * time.Second},
		{"at a time in the window", 6 * time.Second, 40 * time.Second, 30 * time.Second, DefaultTraceLength, 30 * time.Second},
	} {
		if got := traceStart(t0, at(c.winStart), at(c.winEnd), c.traceAt, c.length); !got.Equal(at(c.want)) {
			t.Errorf("%s: trace starts at t0+%v, want t0+%v", c.name, got.Sub(t0), c.want)
		}
	}
}

// TestStatusCounters: a simulated attempt's status carries the
// generator's few task counters and Config.ExtraCounters more, each
// growing with its progress, in (group, name) order as a child reports
// them.
func TestStatusCounters(t *testing.T) {
	for _, extra := range []int{0, 3, 70} {
		g := &generator{cfg: Config{ExtraCounters: extra}, extraNames: extraCounterNames(extra)}
		tr := &tracker{g: g}
		start := time.Unix(1_700_000_000, 0)
		a := &attempt{id: "attempt_x_0001_m_000000_0", typ: 0, start: start, end: start.Add(10 * time.Second)}
		st := tr.status(a, start.Add(5*time.Second))
		if len(st.Counters) != 4+extra {
			t.Fatalf("extra %d: %d counters, want %d", extra, len(st.Counters), 4+extra)
		}
		seen := map[string]bool{}
		i := 0
		for k, c := range st.Counters {
			if k > 0 {
				if p := st.Counters[k-1]; p.Group > c.Group || p.Group == c.Group && p.Name >= c.Name {
					t.Errorf("extra %d: counter %d (%s/%s) after %s/%s: not in (group, name) order", extra, k, c.Group, c.Name, p.Group, p.Name)
				}
			}
			if c.Group != extraCounterGroup {
				continue
			}
			if seen[c.Name] || c.Value != 50000*int64(i+1) {
				t.Errorf("extra %d: extra counter %d is %s/%s=%d, want a new name valued %d", extra, i, c.Group, c.Name, c.Value, 50000*(i+1))
			}
			seen[c.Name] = true
			i++
		}
		if i != extra {
			t.Errorf("extra %d: %d counters in %s", extra, i, extraCounterGroup)
		}
	}
}
