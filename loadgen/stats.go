package loadgen

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Dist summarizes a set of durations, in milliseconds.
type Dist struct {
	N      int     `json:"n"`
	MeanMs float64 `json:"mean_ms"`
	P50Ms  float64 `json:"p50_ms"`
	P99Ms  float64 `json:"p99_ms"`
	MaxMs  float64 `json:"max_ms"`
}

func (d Dist) String() string {
	if d.N == 0 {
		return "none"
	}
	return fmt.Sprintf("p50 %s  p99 %s  max %s  (mean %s, n=%d)", ms(d.P50Ms), ms(d.P99Ms), ms(d.MaxMs), ms(d.MeanMs), d.N)
}

func ms(v float64) string {
	switch {
	case v >= 10000:
		return fmt.Sprintf("%.1fs", v/1000)
	case v >= 100:
		return fmt.Sprintf("%.0fms", v)
	case v >= 1:
		return fmt.Sprintf("%.1fms", v)
	}
	return fmt.Sprintf("%.0fµs", v*1000)
}

// samples is a concurrent collection of durations.
type samples struct {
	mu sync.Mutex
	ds []time.Duration
}

func (s *samples) add(d time.Duration) {
	s.mu.Lock()
	s.ds = append(s.ds, d)
	s.mu.Unlock()
}

func (s *samples) dist() Dist {
	s.mu.Lock()
	ds := slices.Clone(s.ds)
	s.mu.Unlock()
	if len(ds) == 0 {
		return Dist{}
	}
	slices.Sort(ds)
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	q := func(p float64) float64 {
		i := int(p * float64(len(ds)-1))
		return msOf(ds[i])
	}
	return Dist{N: len(ds), MeanMs: msOf(sum / time.Duration(len(ds))), P50Ms: q(0.5), P99Ms: q(0.99), MaxMs: msOf(ds[len(ds)-1])}
}

func msOf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// Process is what the generator measured of the JobTracker's process.
type Process struct {
	// Source says where the figures come from: "in-process" (the
	// generator's own process: the JobTracker and the simulated trackers
	// together), "/proc/PID" or "/metrics" (heap and goroutines only).
	Source string `json:"source"`
	// CPUCores is the CPU time used in the measurement window over its
	// length: 1.0 is one core busy; -1 unknown.
	CPUCores float64 `json:"cpu_cores"`
	// RSSStartMB, RSSPeakMB and RSSEndMB are the resident set size at the
	// window's start, its largest sample (every second) and at its end;
	// -1 unknown.
	RSSStartMB float64 `json:"rss_start_mb"`
	RSSPeakMB  float64 `json:"rss_peak_mb"`
	RSSEndMB   float64 `json:"rss_end_mb"`
	// HeapLiveMB and Goroutines are from the runtime (in-process) or the
	// JobTracker's /metrics at the end; -1 unknown.
	HeapLiveMB float64 `json:"heap_live_mb"`
	Goroutines int     `json:"goroutines"`
	// Lock is the heartbeats' wait for the JobTracker's lock and their
	// hold of it over the window, from its /metrics histograms
	// (gomr_heartbeat_lock_wait_seconds, gomr_heartbeat_lock_held_seconds);
	// nil when they could not be read.
	Lock *LockFigures `json:"lock,omitempty"`
}

// LockFigures are the mean and the 99th percentile (the upper bound of the
// histogram bucket it falls in) of the heartbeats' wait for the
// JobTracker's lock and of their hold of it, in milliseconds.
type LockFigures struct {
	WaitMeanMs float64 `json:"wait_mean_ms"`
	WaitP99Ms  float64 `json:"wait_p99_ms"`
	HeldMeanMs float64 `json:"held_mean_ms"`
	HeldP99Ms  float64 `json:"held_p99_ms"`
	// Heartbeats is how many heartbeats the figures cover.
	Heartbeats int64 `json:"heartbeats"`
	// HandlerMeanMs and HandlerP99Ms are a heartbeat's time in the
	// JobTracker's handler, from its arrival in Heartbeat to the reply's
	// return (gomr_heartbeat_duration_seconds): the JobTracker's part of
	// the latency the trackers see, gRPC's transport at either end not
	// included.
	HandlerMeanMs float64 `json:"handler_mean_ms"`
	HandlerP99Ms  float64 `json:"handler_p99_ms"`
	// GCCycles are the JobTracker's garbage collections in the window and
	// GCPauseMs their stop-the-world pauses summed (go_gc_duration_seconds;
	// -1 when not in /metrics).
	GCCycles  int64   `json:"gc_cycles"`
	GCPauseMs float64 `json:"gc_pause_ms"`
	// Server is a heartbeat's time in the JobTracker's gRPC server, from
	// the start of its stream's handling to its reply handed to the
	// transport (gomr_heartbeat_server_seconds, 1 ms buckets from 1 to
	// 100 ms; quantiles interpolated within their bucket): the latency the
	// JobTracker gives, where HeartbeatLatency is what the simulated
	// trackers see (the socket, gRPC's client and the generator's own
	// scheduling added). Nil when the JobTracker does not export it.
	Server *ServerFigures `json:"server,omitempty"`
	// Holders are the holds of the JobTracker's lock in the window by
	// holder (gomr_jobtracker_lock_held_seconds), longest total first;
	// nil when the JobTracker does not export them.
	Holders []HolderFigures `json:"holders,omitempty"`
}

// ServerFigures are the JobTracker-side heartbeat latency figures, in
// milliseconds.
type ServerFigures struct {
	Heartbeats int64   `json:"heartbeats"`
	MeanMs     float64 `json:"mean_ms"`
	P50Ms      float64 `json:"p50_ms"`
	P99Ms      float64 `json:"p99_ms"`
	P999Ms     float64 `json:"p999_ms"`
	// MaxMs is the upper bound of the highest bucket that has an
	// observation (-1: beyond the last, 10 s).
	MaxMs float64 `json:"max_ms"`
}

// HolderFigures are one holder's holds of the JobTracker's lock over the
// window, in milliseconds: P99Ms and MaxMs are the upper bounds of the
// buckets (powers of two from 5 µs) the 99th percentile and the longest
// hold fall in.
type HolderFigures struct {
	Holder  string  `json:"holder"`
	Holds   int64   `json:"holds"`
	TotalMs float64 `json:"total_ms"`
	MeanMs  float64 `json:"mean_ms"`
	P99Ms   float64 `json:"p99_ms"`
	MaxMs   float64 `json:"max_ms"`
}

// lockFigures computes the lock figures between two scrapes of /metrics;
// nil if the histograms are not in them.
func lockFigures(before, after map[string]float64) *LockFigures {
	const wait, held = "gomr_heartbeat_lock_wait_seconds", "gomr_heartbeat_lock_held_seconds"
	n := after[wait+"_count"] - before[wait+"_count"]
	if _, ok := after[wait+"_count"]; !ok || n <= 0 {
		return nil
	}
	f := &LockFigures{Heartbeats: int64(n)}
	f.WaitMeanMs = (after[wait+"_sum"] - before[wait+"_sum"]) / n * 1000
	f.HeldMeanMs = (after[held+"_sum"] - before[held+"_sum"]) / n * 1000
	f.WaitP99Ms = histogramQuantile(before, after, wait, 0.99) * 1000
	f.HeldP99Ms = histogramQuantile(before, after, held, 0.99) * 1000
	const handler, gc = "gomr_heartbeat_duration_seconds", "go_gc_duration_seconds"
	if h := after[handler+"_count"] - before[handler+"_count"]; h > 0 {
		f.HandlerMeanMs = (after[handler+"_sum"] - before[handler+"_sum"]) / h * 1000
		f.HandlerP99Ms = histogramQuantile(before, after, handler, 0.99) * 1000
	}
	f.GCCycles, f.GCPauseMs = -1, -1
	if _, ok := after[gc+"_count"]; ok {
		f.GCCycles = int64(after[gc+"_count"] - before[gc+"_count"])
		f.GCPauseMs = (after[gc+"_sum"] - before[gc+"_sum"]) * 1000
	}
	const server = "gomr_heartbeat_server_seconds"
	if n := after[server+"_count"] - before[server+"_count"]; n > 0 {
		bs := histogramBuckets(before, after, server+"_bucket{")
		f.Server = &ServerFigures{
			Heartbeats: int64(n),
			MeanMs:     (after[server+"_sum"] - before[server+"_sum"]) / n * 1000,
			P50Ms:      interpolatedQuantile(bs, 0.5) * 1000,
			P99Ms:      interpolatedQuantile(bs, 0.99) * 1000,
			P999Ms:     interpolatedQuantile(bs, 0.999) * 1000,
			MaxMs:      highestBucket(bs) * 1000,
		}
	}
	f.Holders = holderFigures(before, after)
	return f
}

// holderFigures are the lock's holds by holder between two scrapes,
// longest total first; holders without a hold in the window are left out.
func holderFigures(before, after map[string]float64) []HolderFigures {
	const name = "gomr_jobtracker_lock_held_seconds"
	var out []HolderFigures
	prefix := name + `_count{holder="`
	for k, v := range after {
		holder, ok := strings.CutPrefix(k, prefix)
		if !ok {
			continue
		}
		holder = strings.TrimSuffix(holder, `"}`)
		label := `{holder="` + holder + `"`
		n := v - before[k]
		if n <= 0 {
			continue
		}
		bs := histogramBuckets(before, after, name+"_bucket"+label+",")
		total := (after[name+"_sum"+label+"}"] - before[name+"_sum"+label+"}"]) * 1000
		out = append(out, HolderFigures{Holder: holder, Holds: int64(n), TotalMs: total, MeanMs: total / n,
			P99Ms: bucketQuantile(bs, 0.99) * 1000, MaxMs: highestBucket(bs) * 1000})
	}
	slices.SortFunc(out, func(a, b HolderFigures) int {
		return cmp.Or(cmp.Compare(b.TotalMs, a.TotalMs), cmp.Compare(a.Holder, b.Holder))
	})
	return out
}

// bucket is a histogram bucket's upper bound and the observations at or
// under it between two scrapes (cumulative, as Prometheus counts them).
type bucket struct{ le, n float64 }

// histogramBuckets are the buckets of the series starting with prefix
// (name_bucket{ and any labels before le) between two scrapes, by bound.
func histogramBuckets(before, after map[string]float64, prefix string) []bucket {
	var bs []bucket
	prefix += `le="`
	for k, v := range after {
		if !strings.HasPrefix(k, prefix) {
			continue
		}
		le, err := strconv.ParseFloat(strings.TrimSuffix(k[len(prefix):], `"}`), 64)
		if err != nil {
			continue
		}
		bs = append(bs, bucket{le, v - before[k]})
	}
	slices.SortFunc(bs, func(a, b bucket) int { return cmp.Compare(a.le, b.le) })
	return bs
}

// total is the observations counted by the buckets (those of +Inf).
func total(bs []bucket) float64 {
	if len(bs) == 0 {
		return 0
	}
	return bs[len(bs)-1].n
}

// bucketQuantile is the upper bound of the bucket in which quantile q of
// the observations falls (+Inf: -1).
func bucketQuantile(bs []bucket, q float64) float64 {
	t := total(bs)
	for _, b := range bs {
		if t > 0 && b.n >= q*t {
			if math.IsInf(b.le, 1) {
				return -1
			}
			return b.le
		}
	}
	return -1
}

// interpolatedQuantile is quantile q of the observations, interpolated
// linearly within the bucket it falls in (as Prometheus's
// histogram_quantile); -1 when it is beyond the last finite bound.
func interpolatedQuantile(bs []bucket, q float64) float64 {
	t := total(bs)
	lo, below := 0.0, 0.0
	for _, b := range bs {
		if t > 0 && b.n >= q*t {
			if math.IsInf(b.le, 1) {
				return -1
			}
			if b.n == below {
				return b.le
			}
			return lo + (b.le-lo)*(q*t-below)/(b.n-below)
		}
		lo, below = b.le, b.n
	}
	return -1
}

// highestBucket is the upper bound of the highest bucket with an
// observation (-1: +Inf; 0: none).
func highestBucket(bs []bucket) float64 {
	t := total(bs)
	for _, b := range bs {
		if t > 0 && b.n >= t {
			if math.IsInf(b.le, 1) {
				return -1
			}
			return b.le
		}
	}
	return 0
}

// histogramQuantile is the upper bound of the bucket in which quantile q
// of the observations between two scrapes falls (+Inf: -1).
func histogramQuantile(before, after map[string]float64, name string, q float64) float64 {
	return bucketQuantile(histogramBuckets(before, after, name+"_bucket{"), q)
}

// procSample is a reading of /proc/PID: CPU time and RSS.
type procSample struct {
	at  time.Time
	cpu time.Duration
	rss int64
}

// clockTicks is USER_HZ, the unit of /proc/PID/stat's times: 100 on every
// Linux architecture Go supports.
const clockTicks = 100

// readProc reads the CPU time and resident set size of process pid.
func readProc(pid int) (procSample, error) {
	s := procSample{at: time.Now()}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return s, fmt.Errorf("reading the JobTracker's CPU time: %w", err)
	}
	// The command name (field 2) may hold spaces: fields are counted
	// after its closing parenthesis; utime and stime are fields 14, 15.
	rest := string(stat)
	if i := strings.LastIndexByte(rest, ')'); i >= 0 {
		rest = rest[i+1:]
	}
	f := strings.Fields(rest)
	if len(f) < 13 {
		return s, fmt.Errorf("/proc/%d/stat: %d fields after the command name, want at least 13", pid, len(f))
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return s, fmt.Errorf("/proc/%d/stat: utime %q stime %q are not numbers", pid, f[11], f[12])
	}
	s.cpu = time.Duration(ut+st) * time.Second / clockTicks
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return s, fmt.Errorf("reading the JobTracker's RSS: %w", err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				return s, fmt.Errorf("/proc/%d/status: VmRSS %q: %w", pid, v, err)
			}
			s.rss = kb << 10
		}
	}
	return s, nil
}

// scrapeMetrics reads the JobTracker's Prometheus text metrics (its
// /metrics page) into a map from series (name and labels) to value.
func scrapeMetrics(h http.Handler, url string) (map[string]float64, error) {
	var body io.Reader
	if h != nil {
		rec := &memResponse{header: http.Header{}}
		req, err := http.NewRequest(http.MethodGet, "/metrics", nil)
		if err != nil {
			return nil, err
		}
		h.ServeHTTP(rec, req)
		body = strings.NewReader(rec.body.String())
	} else {
		c := http.Client{Timeout: 10 * time.Second}
		resp, err := c.Get(url)
		if err != nil {
			return nil, fmt.Errorf("reading the JobTracker's metrics: %w", err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("reading the JobTracker's metrics at %s: %s", url, resp.Status)
		}
		body = resp.Body
	}
	m := map[string]float64{}
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			continue
		}
		m[line[:i]] = v
	}
	return m, sc.Err()
}

// memResponse is an http.ResponseWriter into memory, to read the
// in-process JobTracker's pages without a listener.
type memResponse struct {
	header http.Header
	body   strings.Builder
	code   int
}

func (r *memResponse) Header() http.Header         { return r.header }
func (r *memResponse) Write(b []byte) (int, error) { return r.body.Write(b) }
func (r *memResponse) WriteHeader(code int)        { r.code = code }
