package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"gomr/conf"
	"gomr/mr"
	"gomr/shuffle"
	"gomr/spill"
)

// shuffleArg selects the shuffle benchmark (make bench-shuffle):
//
//	mrbench shuffle [-maps 1000] [-spills 4] [-reduces 50] [-trackers 4] [-records 8] [-modes batch,single,streams] [-batch 1024] [-datacache-mb 32]
//
// It writes the spill files of -maps map attempts of -spills spills of
// -reduces partitions each (with the spill package's segment writer and
// index, as a map task writes them: snappy blocks, CRC32C, an index per
// spill), spread over -trackers directories. Each directory is served by
// its own shuffle server process (this binary in shuffleServeArg mode: the
// shuffle package's handler, which the TaskTracker mounts, on an
// http.Server like the TaskTracker's, on loopback). Then, in one run:
//
//   - the baseline: one HTTP client reads all the spill data files'
//     bytes, concatenated into one file, from one of those servers in one
//     GET (http.ServeFile), best of three;
//   - for each of -modes: -reduces reduce tasks, -concurrent at a time,
//     each running shuffle.Run with a real Fetcher (its own keep-alive
//     transport, -parallel requests in flight) into a real MergeManager
//     (memory large enough that nothing is merged to disk), all spills
//     announced at the start;
//   - for mode streams, the floor of a shuffle that keeps what it
//     fetches, without segments: the one file's bytes cut into -reduces
//     ranges, one a reduce, -concurrent reduces at a time, each reading
//     its range as -parallel byte ranges of the file (GET with a Range
//     header, http.ServeFile's sendfile), spread over the servers, each on
//     its own keep-alive connection of the reduce's transport, into
//     blocks of 1 MiB it keeps until its last range is read (as a reduce
//     keeps its segments), at the reduce's GOGC. The same bytes from the
//     same page cache over as many connections as the shuffle uses, with
//     no segment, request list, frame or checksum.
//
// It prints segments fetched per second, requests per second, bytes per
// second and the ratio of the bytes per second to the baseline's.
const shuffleArg = "shuffle"

// shuffleServeArg is the hidden mode of a shuffle server process:
// mrbench shuffle-serve DIR JOB SECRET-HEX BASELINE-FILE DATACACHE-MB. It prints its
// address on stdout and serves until stdin closes.
const shuffleServeArg = "shuffle-serve"

// shuffleResult is one measured fetch of the benchmark.
type shuffleResult struct {
	Mode             string  `json:"mode"`
	Seconds          float64 `json:"seconds"`
	Segments         int64   `json:"segments"`
	Requests         int64   `json:"requests"`
	Bytes            int64   `json:"bytes"`
	SegmentsPerSec   float64 `json:"segments_per_second"`
	RequestsPerSec   float64 `json:"requests_per_second"`
	BytesPerSec      float64 `json:"bytes_per_second"`
	Ratio            float64 `json:"ratio_to_baseline"`
	ServerCPUSeconds float64 `json:"server_cpu_seconds"`
	ClientCPUSeconds float64 `json:"client_cpu_seconds"`
	// SetUpCPUSeconds is the harness's own set-up of the reduces
	// (events, scratch directories, merge managers), measured apart in a
	// pass that does not fetch: part of ClientCPUSeconds, not the
	// product's.
	SetUpCPUSeconds float64 `json:"setup_cpu_seconds,omitempty"`
	// ClientAllocBytes and ClientGCs are what the fetching process
	// allocated and how many garbage collections it ran (its set-up
	// included).
	ClientAllocBytes uint64 `json:"client_alloc_bytes,omitempty"`
	ClientGCs        uint32 `json:"client_gcs,omitempty"`
}

type shuffleReport struct {
	Machine  string          `json:"machine"`
	Command  string          `json:"command"`
	Settings map[string]any  `json:"settings"`
	Results  []shuffleResult `json:"results"`
}

func shuffleMain(args []string) int {
	fl := flag.NewFlagSet("mrbench shuffle", flag.ContinueOnError)
	maps := fl.Int("maps", 1000, "map attempts")
	spills := fl.Int("spills", 4, "spills per map")
	reduces := fl.Int("reduces", 50, "reduces (partitions per spill)")
	trackers := fl.Int("trackers", 4, "shuffle servers (one process each); map m is on server m mod trackers")
	records := fl.Int("records", 8, "records per segment (100 bytes each: 10-byte key, 90-byte value, as TeraSort's)")
	parallel := fl.Int("parallel", 5, "requests in flight per reduce (mapreduce.reduce.shuffle.parallelcopies)")
	concurrent := fl.Int("concurrent", 8, "reduces fetching at once (the cluster's reduce slots)")
	batch := fl.Int("batch", shuffle.DefaultBatchSegments, "segments per batched request ("+shuffle.KeyBatchSegments+")")
	batchBytes := fl.Int64("batch-bytes", 4<<20, "bytes per batched request (mapreduce.reduce.shuffle.batch.bytes)")
	cacheMB := fl.Int("datacache-mb", shuffle.DefaultDataCacheBytes>>20, "each server's cache of small spill data files ("+shuffle.KeyDataCacheMB+"; 0: none)")
	modes := fl.String("modes", "batch,single", "fetch modes to measure: batch (POST /mapOutputs), spills (batch, the spills announced without their segments: each reduce reads its index entries from the servers first, mapreduce.jobtracker.map-events.max-segments), single (GET /mapOutput, one segment a request), streams (the one file's bytes as byte ranges over as many connections, kept: the floor without segments)")
	work := fl.String("work", "", "work directory (default: a temporary directory, removed afterwards)")
	keep := fl.Bool("keep", false, "keep the work directory")
	asJSON := fl.Bool("json", false, "print the results as JSON")
	cpuprofile := fl.String("cpuprofile", "", "write a CPU profile of the fetching (this process) to this file; MRBENCH_SHUFFLE_CPUPROFILE=PREFIX profiles the servers")
	gcPercent := fl.Int("gc-percent", conf.Default().Int(keyTaskGCPercent), "GOGC of the fetching process (this one), as a reduce child's "+keyTaskGCPercent+"; the servers keep Go's default, as a TaskTracker does; GOGC in the environment wins, as in a task child, and reaches the servers too")
	memprofile := fl.String("memprofile", "", "write an allocation profile of the fetching (this process, sampled every 4 KiB from the first fetch on) to this file")
	if err := fl.Parse(args); err != nil {
		return 2
	}
	fail := func(format string, a ...any) int {
		fmt.Fprintf(os.Stderr, "mrbench shuffle: "+format+"\n", a...)
		return 1
	}
	if *maps < 1 || *spills < 1 || *reduces < 1 || *trackers < 1 || *records < 0 || *parallel < 1 || *concurrent < 1 || *batch < 1 || *batch > shuffle.MaxBatchSegments {
		return fail("-maps, -spills, -reduces, -trackers, -parallel, -concurrent must be at least 1, -records at least 0, -batch from 1 to %d", shuffle.MaxBatchSegments)
	}
	var modeList []string
	for _, m := range strings.Split(*modes, ",") {
		if m = strings.TrimSpace(m); m != "batch" && m != "spills" && m != "single" && m != "streams" {
			return fail("-modes: unknown mode %q (want batch, spills, single, streams)", m)
		}
		modeList = append(modeList, m)
	}
	dir := *work
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "mrbench-shuffle-"); err != nil {
			return fail("work directory: %v", err)
		}
		if !*keep {
			defer os.RemoveAll(dir)
		}
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return fail("-work: %v", err)
	}
	ctx, cancel := signalContext()
	defer cancel()
	fetchGC := *gcPercent
	if os.Getenv("GOGC") != "" {
		// The environment's, read back (-1 stops the collector for
		// the moment it takes).
		fetchGC = debug.SetGCPercent(-1)
		debug.SetGCPercent(fetchGC)
	}

	const job = "job_bench_0001"
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		return fail("secret: %v", err)
	}
	progress("shuffle bench: writing %d maps x %d spills x %d partitions of %d records over %d servers in %s",
		*maps, *spills, *reduces, *records, *trackers, dir)
	start := time.Now()
	lay, err := writeShuffleData(dir, job, *maps, *spills, *reduces, *trackers, *records)
	if err != nil {
		return fail("%v", err)
	}
	progress("shuffle bench: %d segments, %s of segment data, %s baseline file, written in %.1fs",
		lay.segments, humanBytes(lay.bytes), humanBytes(lay.baselineBytes), time.Since(start).Seconds())

	scratch, err := makeScratchDirs(dir, *reduces)
	if err != nil {
		return fail("%v", err)
	}
	self, err := os.Executable()
	if err != nil {
		return fail("own binary: %v", err)
	}
	servers := make([]*shuffleServer, *trackers)
	for i := range servers {
		s, err := startShuffleServer(self, filepath.Join(dir, fmt.Sprintf("tracker%d", i)), job, secret, lay.baselineFile, *cacheMB)
		if err != nil {
			return fail("shuffle server %d: %v", i, err)
		}
		defer s.stop()
		servers[i] = s
	}
	rep := &shuffleReport{
		Machine: describeMachine().Summary(),
		Command: "mrbench shuffle " + strings.Join(args, " "),
		Settings: map[string]any{"maps": *maps, "spills": *spills, "reduces": *reduces, "trackers": *trackers, "records": *records,
			"parallel": *parallel, "concurrent": *concurrent, "batch": *batch, "batch_bytes": *batchBytes, "datacache_mb": *cacheMB,
			"segments": lay.segments, "segment_bytes": lay.bytes, "fetch_gc_percent": fetchGC},
	}

	// The baseline: the same bytes as one file, one client, best of 3.
	var base shuffleResult
	for range 3 {
		cpu0 := serversCPU(servers)
		c0 := selfCPU()
		t0 := time.Now()
		n, err := readOneFile(ctx, servers[0].addr)
		if err != nil {
			return fail("baseline: %v", err)
		}
		d := time.Since(t0).Seconds()
		if n != lay.baselineBytes {
			return fail("baseline read %d bytes, want %d", n, lay.baselineBytes)
		}
		r := shuffleResult{Mode: "one file, one client", Seconds: d, Segments: 1, Requests: 1, Bytes: n,
			SegmentsPerSec: 1 / d, RequestsPerSec: 1 / d, BytesPerSec: float64(n) / d, Ratio: 1,
			ServerCPUSeconds: serversCPU(servers) - cpu0, ClientCPUSeconds: selfCPU() - c0}
		if base.Seconds == 0 || r.Seconds < base.Seconds {
			base = r
		}
	}
	rep.Results = append(rep.Results, base)
	progress("shuffle bench: baseline %s/s", humanBytes(int64(base.BytesPerSec)))

	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			return fail("-cpuprofile: %v", err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return fail("-cpuprofile: %v", err)
		}
		defer func() { pprof.StopCPUProfile(); f.Close() }()
	}
	if *memprofile != "" {
		// Sample what the fetches allocate, not the data written before.
		runtime.MemProfileRate = 4096
		defer func() {
			if err := writeAllocProfile(*memprofile); err != nil {
				fmt.Fprintf(os.Stderr, "mrbench shuffle: -memprofile: %v\n", err)
			}
		}()
	}
	// The reduce child's collector settings for the fetches (and the
	// harness's set-up beside them), not for the data written above.
	defer debug.SetGCPercent(debug.SetGCPercent(fetchGC))
	for _, mode := range modeList {
		b := 0
		if mode == "batch" || mode == "spills" {
			b = *batch
		}
		unknown := mode == "spills"
		var setUp float64
		if mode != "streams" {
			var err error
			if setUp, err = setUpCPU(lay, servers, job, scratch, unknown); err != nil {
				return fail("%s: set-up: %v", mode, err)
			}
		}
		var ms0, ms1 runtime.MemStats
		runtime.ReadMemStats(&ms0)
		cpu0 := serversCPU(servers)
		c0 := selfCPU()
		var res shuffleResult
		var err error
		if mode == "streams" {
			res, err = runStreamsFetch(ctx, servers, lay.baselineBytes, *reduces, *parallel, *concurrent)
		} else {
			res, err = runShuffleFetch(ctx, lay, servers, job, secret, scratch, *parallel, *concurrent, b, *batchBytes, unknown)
		}
		if err != nil {
			return fail("%s: %v", mode, err)
		}
		runtime.ReadMemStats(&ms1)
		res.ClientAllocBytes, res.ClientGCs = ms1.TotalAlloc-ms0.TotalAlloc, ms1.NumGC-ms0.NumGC
		res.Mode = mode
		switch mode {
		case "batch":
			res.Mode = fmt.Sprintf("batch (%d segments, %s)", *batch, humanBytes(*batchBytes))
		case "spills":
			res.Mode = fmt.Sprintf("spills only (%d segments, %s)", *batch, humanBytes(*batchBytes))
		case "streams":
			res.Mode = fmt.Sprintf("streams (%d x %d ranges, no segments)", *reduces, *parallel)
		}
		res.ServerCPUSeconds = serversCPU(servers) - cpu0
		res.ClientCPUSeconds = selfCPU() - c0
		res.SetUpCPUSeconds = setUp
		res.Ratio = res.BytesPerSec / base.BytesPerSec
		if res.Bytes != lay.bytes {
			return fail("%s: fetched %d bytes, want %d", mode, res.Bytes, lay.bytes)
		}
		rep.Results = append(rep.Results, res)
		progress("shuffle bench: %s: %.0f segments/s, %s/s, %.2fx the baseline", res.Mode, res.SegmentsPerSec, humanBytes(int64(res.BytesPerSec)), res.Ratio)
	}
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return fail("%v", err)
		}
		return 0
	}
	fmt.Printf("%s\n%d maps x %d spills x %d reduces = %d segments (%s), %d servers, %d reduces at a time, %d requests in flight each, fetching at GOGC=%d\n",
		rep.Machine, *maps, *spills, *reduces, lay.segments, humanBytes(lay.bytes), *trackers, *concurrent, *parallel, fetchGC)
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "mode\tseconds\tsegments/s\trequests/s\tbytes/s\tvs one file\tserver CPU s\tclient CPU s\tof which set-up\tclient allocated\tclient GCs\t")
	for _, r := range rep.Results {
		fmt.Fprintf(tw, "%s\t%.2f\t%.0f\t%.0f\t%s/s\t%.2fx\t%.2f\t%.2f\t%.2f\t%s\t%d\t\n", r.Mode, r.Seconds, r.SegmentsPerSec, r.RequestsPerSec,
			humanBytes(int64(r.BytesPerSec)), r.Ratio, r.ServerCPUSeconds, r.ClientCPUSeconds, r.SetUpCPUSeconds, humanBytes(int64(r.ClientAllocBytes)), r.ClientGCs)
	}
	tw.Flush()
	return 0
}

// keyTaskGCPercent is the GOGC of task children (tasktracker/child): the
// fetching process runs at it, as a reduce does.
const keyTaskGCPercent = "mapreduce.task.gc.percent"

// writeAllocProfile writes the allocation profile (pprof's "allocs":
// everything allocated since sampling started) to path.
func writeAllocProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	return f.Close()
}

// shuffleLayout is the written map output: every segment's announcement.
type shuffleLayout struct {
	// locs[m][k] is spill k of map m, with the segments of every reduce.
	locs          [][]spillAnnouncement
	segments      int64 // non-empty segments
	bytes         int64 // their bytes
	baselineFile  string
	baselineBytes int64
}

type spillAnnouncement struct {
	tracker int
	attempt string
	segs    []spill.SegmentInfo
}

func benchAttempt(m int) string { return fmt.Sprintf("attempt_bench_0001_m_%06d_0", m) }

// writeShuffleData writes the spills: records of a 10-byte random key and a
// 90-byte value, sorted within each segment, with the spill package's
// writer; and the baseline file, all the data files end to end.
func writeShuffleData(dir, job string, maps, spills, reduces, trackers, records int) (*shuffleLayout, error) {
	lay := &shuffleLayout{locs: make([][]spillAnnouncement, maps), baselineFile: filepath.Join(dir, "baseline.dat")}
	base, err := os.Create(lay.baselineFile)
	if err != nil {
		return nil, err
	}
	defer base.Close()
	rng := mrand.New(mrand.NewPCG(1, 2))
	var data []byte
	recs := make([][]byte, records)
	for i := range recs {
		recs[i] = make([]byte, 100)
	}
	for m := range maps {
		tr := m % trackers
		attempt := benchAttempt(m)
		sd := filepath.Join(dir, fmt.Sprintf("tracker%d", tr), job, attempt, "spills")
		if err := os.MkdirAll(sd, 0o755); err != nil {
			return nil, err
		}
		for k := range spills {
			data = data[:0]
			segs := make([]spill.SegmentInfo, reduces)
			for r := range reduces {
				for _, rec := range recs {
					for i := range rec {
						rec[i] = byte(' ' + rng.IntN(95))
					}
				}
				slices.SortFunc(recs, func(a, b []byte) int { return strings.Compare(string(a[:10]), string(b[:10])) })
				var buf sliceWriter
				sw := spill.NewSegmentWriter(&buf, 0)
				for _, rec := range recs {
					if err := sw.Write(rec[:10], rec[10:]); err != nil {
						return nil, err
					}
				}
				info, err := sw.Close()
				if err != nil {
					return nil, err
				}
				info.Offset = int64(len(data))
				data = append(data, buf.b...)
				segs[r] = info
				if info.Length > 0 || info.Records > 0 {
					lay.segments++
					lay.bytes += info.Length
				}
			}
			if err := os.WriteFile(filepath.Join(sd, spill.DataFileName(k)), data, 0o644); err != nil {
				return nil, err
			}
			if err := spill.WriteIndex(filepath.Join(sd, spill.IndexFileName(k)), segs); err != nil {
				return nil, err
			}
			if _, err := base.Write(data); err != nil {
				return nil, err
			}
			lay.baselineBytes += int64(len(data))
			lay.locs[m] = append(lay.locs[m], spillAnnouncement{tracker: tr, attempt: attempt, segs: segs})
		}
	}
	return lay, base.Close()
}

type sliceWriter struct{ b []byte }

func (w *sliceWriter) Write(p []byte) (int, error) { w.b = append(w.b, p...); return len(p), nil }

// shuffleServer is a shuffle server process.
type shuffleServer struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	addr  string
}

func startShuffleServer(self, dir, job string, secret []byte, baseline string, cacheMB int) (*shuffleServer, error) {
	cmd := exec.Command(self, shuffleServeArg, dir, job, hex.EncodeToString(secret), baseline, strconv.Itoa(cacheMB))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		return nil, fmt.Errorf("reading its address: %w", err)
	}
	return &shuffleServer{cmd: cmd, stdin: stdin, addr: strings.TrimSpace(line)}, nil
}

func (s *shuffleServer) stop() {
	s.stdin.Close()
	done := make(chan struct{})
	go func() { s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		s.cmd.Process.Kill()
		<-done
	}
}

func serversCPU(ss []*shuffleServer) float64 {
	var t float64
	for _, s := range ss {
		t += procCPU(s.cmd.Process.Pid)
	}
	return t
}

func selfCPU() float64 { return procCPU(os.Getpid()) }

// procCPU returns a process's user+system CPU seconds from /proc (0 where
// /proc is missing).
func procCPU(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 {
		s = s[i+2:]
	}
	f := strings.Fields(s)
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseFloat(f[11], 64)
	sy, _ := strconv.ParseFloat(f[12], 64)
	return (u + sy) / 100 // USER_HZ is 100 on Linux
}

// shuffleServeMain is the shuffle server process: the shuffle handler over
// DIR/JOB/ATTEMPT/spills, and the baseline file at /baseline.
func shuffleServeMain(args []string) int {
	if len(args) != 5 {
		fmt.Fprintln(os.Stderr, "usage: mrbench shuffle-serve DIR JOB SECRET-HEX BASELINE-FILE DATACACHE-MB")
		return 2
	}
	dir, job, baseline := args[0], args[1], args[3]
	cacheMB, err := strconv.Atoi(args[4])
	if err != nil || cacheMB < 0 {
		fmt.Fprintln(os.Stderr, "data cache MB:", args[4])
		return 2
	}
	secret, err := hex.DecodeString(args[2])
	if err != nil {
		fmt.Fprintln(os.Stderr, "secret:", err)
		return 2
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	h := shuffle.NewHandler(staticSecret{job: job, secret: secret}, dirLocator(dir), log, shuffle.WithDataCache(int64(cacheMB)<<20))
	mux := http.NewServeMux()
	mux.Handle(shuffle.Path, h)
	mux.Handle(shuffle.BatchPath, h)
	mux.HandleFunc("/baseline", func(w http.ResponseWriter, r *http.Request) { http.ServeFile(w, r, baseline) })
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ConnContext: shuffle.ConnContext}
	// A CPU profile of the server, for finding where a segment's time goes:
	// MRBENCH_SHUFFLE_CPUPROFILE=PREFIX writes PREFIX.PID.pprof.
	if prefix := os.Getenv("MRBENCH_SHUFFLE_CPUPROFILE"); prefix != "" {
		f, err := os.Create(fmt.Sprintf("%s.%d.pprof", prefix, os.Getpid()))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer func() { pprof.StopCPUProfile(); f.Close() }()
	}
	go srv.Serve(ln)
	fmt.Println(ln.Addr().String())
	io.Copy(io.Discard, os.Stdin) // until the bench closes stdin
	srv.Close()
	return 0
}

type staticSecret struct {
	job    string
	secret []byte
}

func (s staticSecret) JobSecret(job string) ([]byte, bool) {
	if job != s.job {
		return nil, false
	}
	return s.secret, true
}

// dirLocator finds attempt A of job J under DIR/J/A/spills, as the
// TaskTracker's locator does under its job directories.
type dirLocator string

func (d dirLocator) SpillDir(job, attempt string) (string, error) {
	p := filepath.Join(string(d), job, attempt, "spills")
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("no spills for attempt %s: %w", attempt, err)
	}
	return p, nil
}

// readOneFile reads the baseline file in one GET and returns its length.
func readOneFile(ctx context.Context, addr string) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/baseline", nil)
	if err != nil {
		return 0, err
	}
	client := &http.Client{Transport: &http.Transport{DisableCompression: true, ReadBufferSize: 64 << 10}}
	defer client.CloseIdleConnections()
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("baseline: %s", resp.Status)
	}
	return io.CopyBuffer(io.Discard, resp.Body, make([]byte, 256<<10))
}

// benchEvents announces every spill of the job at once, in its first
// reply (one page: a JobTracker's reply holds up to
// jobtracker.MaxMapEventsPerCall events), and then forgets them, as the
// reduce child's event source keeps no reply once it is handed over:
// what stays live through the shuffle is shuffle.Run's own state, not the
// harness's.
type benchEvents struct {
	evs  []shuffle.Event // not handed over yet
	sent int             // events handed over
}

func (s *benchEvents) MapEvents(ctx context.Context, from int) ([]shuffle.Event, error) {
	if from != s.sent {
		return nil, fmt.Errorf("map events asked from %d, but %d were handed over", from, s.sent)
	}
	if evs := s.evs; len(evs) > 0 {
		s.evs, s.sent = nil, s.sent+len(evs)
		return evs, nil
	}
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(time.Second):
		return nil, nil
	}
}

func (s *benchEvents) ReportFetchFailure(ctx context.Context, loc shuffle.SpillLocation, cause error) error {
	return fmt.Errorf("fetch failure of %v: %w", loc, cause)
}

// countingRoundTripper counts requests.
type countingRoundTripper struct {
	rt http.RoundTripper
	n  *atomic.Int64
}

func (c countingRoundTripper) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.rt.RoundTrip(r)
}

// runShuffleFetch runs the reduces' shuffles, concurrent at a time.
func runShuffleFetch(ctx context.Context, lay *shuffleLayout, servers []*shuffleServer, job string, secret []byte,
	scratch []string, parallel, concurrent, batch int, batchBytes int64, unknown bool) (shuffleResult, error) {
	var requests, segments, bytes atomic.Int64
	d, err := forEachReduce(ctx, len(scratch), concurrent, func(r int) error {
		segs, n, err := fetchOneReduce(ctx, lay, servers, job, secret, r, scratch[r], parallel, batch, batchBytes, unknown, &requests)
		segments.Add(segs)
		bytes.Add(n)
		return err
	})
	if err != nil {
		return shuffleResult{}, err
	}
	return fetchResult(d, segments.Load(), requests.Load(), bytes.Load()), nil
}

// runStreamsFetch is mode streams (see shuffleArg): the file's total
// bytes as reduces ranges, concurrent at a time, each read as parallel
// byte ranges into kept blocks. Its Segments and Requests are the ranges.
func runStreamsFetch(ctx context.Context, servers []*shuffleServer, total int64, reduces, parallel, concurrent int) (shuffleResult, error) {
	var got atomic.Int64
	d, err := forEachReduce(ctx, reduces, concurrent, func(r int) error {
		from, to := cutRange(0, total, reduces, r)
		n, err := readReduceRanges(ctx, servers, r, from, to, parallel)
		got.Add(n)
		return err
	})
	if err != nil {
		return shuffleResult{}, err
	}
	ranges := int64(reduces * parallel)
	return fetchResult(d, ranges, ranges, got.Load()), nil
}

// forEachReduce runs reduce(r) for r from 0 to reduces-1, concurrent at a
// time, as a cluster of that many reduce slots runs them, and returns how
// long they took. It stops starting reduces at the first error, which it
// returns naming the reduce.
func forEachReduce(ctx context.Context, reduces, concurrent int, reduce func(r int) error) (float64, error) {
	var firstErr error
	var mu sync.Mutex
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range concurrent {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				r := int(next.Add(1) - 1)
				if r >= reduces || ctx.Err() != nil {
					return
				}
				if err := reduce(r); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = fmt.Errorf("reduce %d: %w", r, err)
					}
					mu.Unlock()
					next.Store(int64(reduces)) // start no more
					return
				}
			}
		}()
	}
	wg.Wait()
	if firstErr == nil {
		firstErr = ctx.Err()
	}
	return time.Since(start).Seconds(), firstErr
}

// fetchResult is a fetch's result over d seconds, with its rates.
func fetchResult(d float64, segments, requests, bytes int64) shuffleResult {
	return shuffleResult{Seconds: d, Segments: segments, Requests: requests, Bytes: bytes,
		SegmentsPerSec: float64(segments) / d, RequestsPerSec: float64(requests) / d, BytesPerSec: float64(bytes) / d}
}

// cutRange returns part i of n equal parts of [from, to), the last one
// taking the remainder.
func cutRange(from, to int64, n, i int) (int64, int64) {
	size := (to - from) / int64(n)
	lo := from + int64(i)*size
	if i == n-1 {
		return lo, to
	}
	return lo, lo + size
}

// streamBlockBytes is the block a stream reads into: the fetcher's shared
// blocks' size (shuffle's arenaBytes).
const streamBlockBytes = 1 << 20

// readReduceRanges reads [from, to) of the baseline file as parallel byte
// ranges at once, range p from server (r*parallel+p) mod len(servers), on
// one transport as a reduce's fetcher has, into blocks kept until all are
// read. It returns the bytes read.
func readReduceRanges(ctx context.Context, servers []*shuffleServer, r int, from, to int64, parallel int) (int64, error) {
	tr := shuffle.NewTransport(parallel)
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 5 * time.Minute}
	kept := make([][][]byte, parallel)
	errs := make([]error, parallel)
	var wg sync.WaitGroup
	for p := range parallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lo, hi := cutRange(from, to, parallel, p)
			if lo == hi {
				return
			}
			kept[p], errs[p] = readRange(ctx, client, servers[(r*parallel+p)%len(servers)].addr, lo, hi)
		}()
	}
	wg.Wait()
	var n int64
	for p := range parallel {
		if errs[p] != nil {
			return 0, errs[p]
		}
		for _, b := range kept[p] {
			n += int64(len(b))
		}
	}
	return n, nil
}

// readRange GETs bytes [lo, hi) of the baseline file from addr into blocks
// of at most streamBlockBytes, and returns them.
func readRange(ctx context.Context, client *http.Client, addr string, lo, hi int64) ([][]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/baseline", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Range", fmt.Sprintf("bytes=%d-%d", lo, hi-1))
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusPartialContent {
		return nil, fmt.Errorf("range %d-%d from %s: %s", lo, hi, addr, resp.Status)
	}
	var blocks [][]byte
	for left := hi - lo; left > 0; {
		b := make([]byte, min(left, streamBlockBytes))
		if _, err := io.ReadFull(resp.Body, b); err != nil {
			return nil, fmt.Errorf("range %d-%d from %s: %w", lo, hi, addr, err)
		}
		blocks = append(blocks, b)
		left -= int64(len(b))
	}
	return blocks, nil
}

// fetchOneReduce is one reduce's shuffle: its segments, its bytes.
func fetchOneReduce(ctx context.Context, lay *shuffleLayout, servers []*shuffleServer, job string, secret []byte,
	r int, scratch string, parallel, batch int, batchBytes int64, unknown bool, requests *atomic.Int64) (int64, int64, error) {
	su, err := setUpReduce(lay, servers, job, r, scratch, unknown)
	if err != nil {
		return 0, 0, err
	}
	defer su.close()
	src := &benchEvents{evs: su.evs}
	su.evs = nil // the event source hands them over once
	tr := shuffle.NewTransport(parallel)
	defer tr.CloseIdleConnections()
	fe := &shuffle.Fetcher{Client: &http.Client{Transport: countingRoundTripper{rt: tr, n: requests}, Timeout: 5 * time.Minute},
		Secret: secret, Retries: 0}
	err = shuffle.Run(ctx, src, shuffle.Options{Reduce: r, NumMaps: len(lay.locs), Parallel: parallel,
		BatchSegments: batch, BatchBytes: batchBytes, Fetcher: fe, Merger: su.mm, Counters: su.counters, MaxFetchFailures: 1})
	if err != nil {
		return 0, 0, err
	}
	return su.segs, su.counters.Snapshot().Get(mr.TaskCounterGroup, mr.ReduceShuffleBytes), nil
}

// reduceSetUp is what the harness prepares for one reduce before its
// shuffle: the announcements as events (in a real reduce, the
// JobTracker's) and a merge manager over the reduce's scratch directory.
type reduceSetUp struct {
	evs      []shuffle.Event
	segs     int64 // non-empty segments
	mm       *shuffle.MergeManager
	counters *mr.Counters
}

// makeScratchDirs makes each reduce's scratch directory under dir, before
// anything is timed: a reduce's directories are the TaskTracker's set-up,
// not its shuffle's. (Made per reduce inside the timed fetch, their
// mkdir was 5% of the fetching process's CPU profile.)
func makeScratchDirs(dir string, reduces int) ([]string, error) {
	dirs := make([]string, reduces)
	for r := range dirs {
		dirs[r] = filepath.Join(dir, "merge", strconv.Itoa(r))
		if err := os.MkdirAll(dirs[r], 0o755); err != nil {
			return nil, fmt.Errorf("scratch directory of reduce %d: %w", r, err)
		}
	}
	return dirs, nil
}

// setUpCPU measures the harness's own set-up of every reduce (setUpReduce
// and its clean-up, without fetching): the process CPU seconds it takes,
// which the client CPU of a fetch mode includes.
func setUpCPU(lay *shuffleLayout, servers []*shuffleServer, job string, scratch []string, unknown bool) (float64, error) {
	c0 := selfCPU()
	for r, dir := range scratch {
		su, err := setUpReduce(lay, servers, job, r, dir, unknown)
		if err != nil {
			return 0, err
		}
		su.close()
	}
	return selfCPU() - c0, nil
}

func setUpReduce(lay *shuffleLayout, servers []*shuffleServer, job string, r int, scratch string, unknown bool) (*reduceSetUp, error) {
	evs := make([]shuffle.Event, 0, len(lay.locs)*len(lay.locs[0]))
	var segs int64
	for m, spills := range lay.locs {
		for k, sa := range spills {
			seg := sa.segs[r]
			if seg.Length > 0 || seg.Records > 0 {
				segs++
			}
			evs = append(evs, shuffle.Event{Kind: shuffle.SpillReady, Location: shuffle.SpillLocation{
				JobID: job, MapTask: m, Spill: k, Final: k == len(spills)-1, AttemptID: sa.attempt,
				Host: servers[sa.tracker].addr, Segment: seg,
			}})
			if unknown {
				loc := &evs[len(evs)-1].Location
				loc.Segment, loc.SegmentUnknown = spill.SegmentInfo{}, true
			}
		}
	}
	counters := mr.NewCounters()
	mm, err := shuffle.NewMergeManager(shuffle.MergeOptions{Dir: scratch, MemoryBytes: math.MaxInt32, SegmentLimit: math.MaxInt32,
		MergePercent: 1, Factor: 10, Counters: counters})
	if err != nil {
		return nil, err
	}
	return &reduceSetUp{evs: evs, segs: segs, mm: mm, counters: counters}, nil
}

// close closes the merge manager, which removes its scratch files.
func (su *reduceSetUp) close() { su.mm.Close() }
