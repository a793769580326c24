package apps

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"strconv"
	"strings"
	"time"

	"gomr/mr"
	"gomr/mr/fs"
)

const dfsioJob = "dfsio"

func init() {
	mr.RegisterJob(&mr.JobDef{
		Name:   dfsioJob,
		Input:  RowRangeInput{},
		Output: mr.TextOutput{},
		Mapper: newDFSIOMapper,
		Reducer: func(mr.TaskContext) (mr.Reducer, error) {
			return &dfsioReducer{}, nil
		},
	})
	mr.RegisterApp(&mr.App{
		Name:        dfsioAppName,
		Usage:       dfsioAppUsage,
		Description: "Measure the file system's write or read throughput with N maps each writing or reading one file (Hadoop's TestDFSIO; -size takes B, KB, MB, GB or TB suffixes, powers of 1024; defaults -files 1 -size 1MB).",
		Run:         runDFSIO,
		Check:       func(args []string) error { _, err := dfsioArgs(args); return err },
	})
}

const (
	dfsioAppName  = "dfsio"
	dfsioAppUsage = "-write|-read [-files N] [-size BYTES] <dir> <result>"
)

// Counters of the dfsio job (group "dfsio").
const (
	dfsioBytesWritten = "BYTES_WRITTEN"
	dfsioBytesRead    = "BYTES_READ"
	dfsioFiles        = "FILES"
)

// dfsioStatsKey is the one key of the map output: every map's figures go
// to the one reduce in one group.
const dfsioStatsKey = "stats"

// parseDFSIOSize parses a size in bytes with an optional suffix B, KB, MB,
// GB or TB (case-insensitive, powers of 1024), as TestDFSIO's -size.
func parseDFSIOSize(s string) (int64, error) {
	num := strings.TrimSpace(s)
	unit := int64(1)
	upper := strings.ToUpper(num)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"TB", 1 << 40}, {"GB", 1 << 30}, {"MB", 1 << 20}, {"KB", 1 << 10}, {"B", 1}} {
		if strings.HasSuffix(upper, u.suffix) {
			num, unit = strings.TrimSpace(num[:len(num)-len(u.suffix)]), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("size %q is not a non-negative integer with an optional B, KB, MB, GB or TB suffix", s)
	}
	if n > math.MaxInt64/unit {
		return 0, fmt.Errorf("size %q is too large", s)
	}
	return n * unit, nil
}

// dfsioDataDir is where the test files live: <dir>/data.
func dfsioDataDir(dir string) string { return fs.Join(strings.TrimRight(dir, "/"), "data") }

// dfsioFile is the path of file i: <dir>/data/test_io_<i>, as TestDFSIO
// names them.
func dfsioFile(dir string, i int64) string {
	return fs.Join(dfsioDataDir(dir), "test_io_"+strconv.FormatInt(i, 10))
}

// dfsioOpts are the dfsio app's options and arguments.
type dfsioOpts struct {
	write       bool
	files, size int64
	dir, result string
}

// dfsioArgs parses and checks the dfsio app's arguments.
func dfsioArgs(args []string) (*dfsioOpts, error) {
	o := &dfsioOpts{}
	flags := flag.NewFlagSet(dfsioAppName, flag.ContinueOnError)
	flags.SetOutput(io.Discard)
	flags.BoolVar(&o.write, "write", false, "write the files")
	read := flags.Bool("read", false, "read the files back")
	flags.Int64Var(&o.files, "files", 1, "number of files (and maps)")
	sizeArg := flags.String("size", "1MB", "size of each file")
	if err := flags.Parse(args); err != nil {
		return nil, usage(dfsioAppName, dfsioAppUsage, "%v", err)
	}
	size, err := parseDFSIOSize(*sizeArg)
	switch {
	case o.write == *read:
		return nil, usage(dfsioAppName, dfsioAppUsage, "give exactly one of -write and -read")
	case err != nil:
		return nil, usage(dfsioAppName, dfsioAppUsage, "-size: %v", err)
	case o.files < 1:
		return nil, usage(dfsioAppName, dfsioAppUsage, "-files %d: need at least one file", o.files)
	case flags.NArg() != 2:
		return nil, usage(dfsioAppName, dfsioAppUsage, "need <dir> and <result> after the flags, got %d argument(s) %q", flags.NArg(), flags.Args())
	}
	o.size, o.dir, o.result = size, flags.Arg(0), flags.Arg(1)
	return o, nil
}

func runDFSIO(ctx context.Context, jc mr.JobClient, args []string) error {
	o, err := dfsioArgs(args)
	if err != nil {
		return err
	}
	write, files, size, result := &o.write, &o.files, o.size, o.result
	dir, err := fs.Absolute(o.dir)
	if err != nil {
		return fmt.Errorf("%s: %w", dfsioAppName, err)
	}
	mode := "read"
	if *write {
		mode = "write"
		// TestDFSIO starts a write test by deleting the old files.
		if err := removeAll(dfsioDataDir(dir)); err != nil {
			return fmt.Errorf("%s: %w", dfsioAppName, err)
		}
	}
	start := time.Now()
	_, err = runJob(ctx, jc, &mr.JobSpec{
		Name: dfsioJob + "-" + mode,
		Def:  dfsioJob,
		Params: map[string]string{
			"rows": strconv.FormatInt(*files, 10),
			"maps": strconv.FormatInt(*files, 10),
			"mode": mode,
			"dir":  dir,
			"size": strconv.FormatInt(size, 10),
		},
		Output:     result,
		NumReduces: 1,
	})
	if err != nil {
		return err
	}
	slog.Info("dfsio done", "mode", mode, "files", *files, "size", size, "result", fs.Join(result, mr.PartName(false, 0)), "job_seconds", time.Since(start).Seconds())
	return nil
}

// dfsioPatternPeriod is the period of the files' content: byte j of file i
// is (j + 7*i) mod 251 (a prime, so that the pattern does not line up with
// block or buffer boundaries).
const dfsioPatternPeriod = 251

// dfsioChunk is the size of each write and read call.
const dfsioChunk = 64 << 10

// dfsioPattern holds the content pattern from every phase: the bytes at
// file offset j of file i are pattern[p : p+n] with
// p = (j + 7*i) mod 251.
var dfsioPattern = func() []byte {
	b := make([]byte, dfsioChunk+dfsioPatternPeriod)
	for j := range b {
		b[j] = byte(j % dfsioPatternPeriod)
	}
	return b
}()

// dfsioContent returns the expected bytes of file i at offset off, n at
// most dfsioChunk long.
func dfsioContent(i, off int64, n int) []byte {
	p := (off + 7*i) % dfsioPatternPeriod
	return dfsioPattern[p : p+int64(n)]
}

// dfsioMapper writes or reads the file of each row (one row per map) and
// emits (stats, size, elapsed ns, start and end in Unix ns) to the reduce.
type dfsioMapper struct {
	write bool
	dir   string
	size  int64
	buf   []byte
}

func newDFSIOMapper(tc mr.TaskContext) (mr.Mapper, error) {
	m := &dfsioMapper{dir: tc.Param("dir")}
	switch mode := tc.Param("mode"); mode {
	case "write":
		m.write = true
	case "read":
	default:
		return nil, fmt.Errorf("%s: job parameter mode=%q: want write or read", dfsioJob, mode)
	}
	if m.dir == "" {
		return nil, fmt.Errorf("%s: job parameter dir is missing", dfsioJob)
	}
	size, err := paramInt(tc.Param, "size")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dfsioJob, err)
	}
	if size < 0 {
		return nil, fmt.Errorf("%s: job parameter size=%d is negative", dfsioJob, size)
	}
	m.size = size
	return m, nil
}

// Map writes or reads one file.
func (m *dfsioMapper) Map(tc mr.TaskContext, key, _ []byte, out mr.Emitter) error {
	if len(key) != 8 {
		return fmt.Errorf("%s: row key %x is not 8 bytes", dfsioJob, key)
	}
	i := int64(binary.BigEndian.Uint64(key))
	path := dfsioFile(m.dir, i)
	fsys, err := fs.Resolve(path)
	if err != nil {
		return fmt.Errorf("%s: %s: %w", dfsioJob, path, err)
	}
	start := time.Now()
	var n int64
	if m.write {
		n, err = m.writeFile(tc, fsys, path, i)
	} else {
		n, err = m.readFile(tc, fsys, path, i)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", dfsioJob, err)
	}
	end := time.Now()
	tc.Counter(dfsioJob, dfsioFiles).Increment()
	// The elapsed time is at least 1 ns, so that a rate is always defined.
	v := fmt.Sprintf("%d %d %d %d", n, max(end.Sub(start).Nanoseconds(), 1), start.UnixNano(), end.UnixNano())
	return out.Emit([]byte(dfsioStatsKey), []byte(v))
}

func (m *dfsioMapper) writeFile(tc mr.TaskContext, fsys fs.FS, path string, i int64) (n int64, err error) {
	w, err := fsys.Create(path)
	if err != nil {
		return 0, fmt.Errorf("creating %s: %w", path, err)
	}
	defer func() {
		if cerr := w.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("closing %s: %w", path, cerr)
		}
	}()
	written := tc.Counter(dfsioJob, dfsioBytesWritten)
	for n < m.size {
		if err := tc.Context().Err(); err != nil {
			return n, err
		}
		c := int(min(m.size-n, dfsioChunk))
		k, err := w.Write(dfsioContent(i, n, c))
		n += int64(k)
		written.Add(int64(k))
		if err != nil {
			return n, fmt.Errorf("writing %s at offset %d: %w", path, n, err)
		}
	}
	return n, nil
}

func (m *dfsioMapper) readFile(tc mr.TaskContext, fsys fs.FS, path string, i int64) (n int64, err error) {
	f, err := fsys.Open(path)
	if err != nil {
		return 0, fmt.Errorf("opening %s (written by dfsio -write with as many -files?): %w", path, err)
	}
	defer f.Close() // read-only: a close error changes nothing read
	if m.buf == nil {
		m.buf = make([]byte, dfsioChunk)
	}
	read := tc.Counter(dfsioJob, dfsioBytesRead)
	for {
		if err := tc.Context().Err(); err != nil {
			return n, err
		}
		k, rerr := io.ReadFull(f, m.buf)
		if k > 0 {
			if !bytes.Equal(m.buf[:k], dfsioContent(i, n, k)) {
				return n, fmt.Errorf("%s: content differs from what dfsio -write writes, in the %d bytes at offset %d", path, k, n)
			}
			n += int64(k)
			read.Add(int64(k))
		}
		if errors.Is(rerr, io.EOF) || errors.Is(rerr, io.ErrUnexpectedEOF) {
			break
		}
		if rerr != nil {
			return n, fmt.Errorf("reading %s at offset %d: %w", path, n, rerr)
		}
	}
	if n != m.size {
		return n, fmt.Errorf("%s has %d bytes, want -size %d", path, n, m.size)
	}
	return n, nil
}

// dfsioStats is one map's figures.
type dfsioStats struct {
	size, nanos, start, end int64
}

// dfsioResult is the summary the reduce writes, TestDFSIO's figures.
type dfsioResult struct {
	Files      int64
	Bytes      int64
	Throughput float64 // total MB / sum of the maps' IO seconds
	AvgRate    float64 // mean of the maps' MB/s
	StdDev     float64 // standard deviation of the maps' MB/s
	ExecSec    float64 // first map's IO start to last map's IO end
}

// summarize computes TestDFSIO's figures from the maps' stats, with
// MB = 2^20 bytes as TestDFSIO counts: throughput = total MB / sum of the
// per-map IO seconds, average IO rate = the mean of each map's MB / its
// seconds, the IO rate standard deviation = sqrt(|mean(rate^2) -
// mean(rate)^2|), and the exec time the span from the earliest map's IO
// start to the latest one's end (the maps' clocks, unlike TestDFSIO's
// client-side wall time, which the driver logs).
func summarize(stats []dfsioStats) dfsioResult {
	var r dfsioResult
	var nanos int64
	var rate, sqRate float64
	first, last := int64(math.MaxInt64), int64(math.MinInt64)
	for _, s := range stats {
		r.Files++
		r.Bytes += s.size
		nanos += s.nanos
		mbps := float64(s.size) / (1 << 20) / (float64(s.nanos) / 1e9)
		rate += mbps
		sqRate += mbps * mbps
		first, last = min(first, s.start), max(last, s.end)
	}
	if r.Files == 0 {
		return r
	}
	r.Throughput = float64(r.Bytes) / (1 << 20) / (float64(nanos) / 1e9)
	r.AvgRate = rate / float64(r.Files)
	r.StdDev = math.Sqrt(math.Abs(sqRate/float64(r.Files) - r.AvgRate*r.AvgRate))
	r.ExecSec = float64(last-first) / 1e9
	return r
}

// dfsioReducer reads every map's stats (one group) and writes the result
// lines "<figure><TAB><value>".
type dfsioReducer struct{}

// Reduce writes the summary of the group's stats.
func (dfsioReducer) Reduce(tc mr.TaskContext, key []byte, values mr.ValueIterator, out mr.Emitter) error {
	if string(key) != dfsioStatsKey {
		return fmt.Errorf("%s: unexpected map output key %q", dfsioJob, key)
	}
	var stats []dfsioStats
	for values.Next() {
		var s dfsioStats
		if _, err := fmt.Sscanf(string(values.Value()), "%d %d %d %d", &s.size, &s.nanos, &s.start, &s.end); err != nil || s.nanos <= 0 {
			return fmt.Errorf("%s: bad map stats %q", dfsioJob, values.Value())
		}
		stats = append(stats, s)
	}
	r := summarize(stats)
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }
	for _, line := range [][2]string{
		{"Test", tc.Param("mode")},
		{"Number of files", strconv.FormatInt(r.Files, 10)},
		{"Total MBytes processed", f(float64(r.Bytes) / (1 << 20))},
		{"Total bytes processed", strconv.FormatInt(r.Bytes, 10)},
		{"Throughput mb/sec", f(r.Throughput)},
		{"Average IO rate mb/sec", f(r.AvgRate)},
		{"IO rate std deviation", f(r.StdDev)},
		{"Test exec time sec", f(r.ExecSec)},
	} {
		if err := out.Emit([]byte(line[0]), []byte(line[1])); err != nil {
			return err
		}
	}
	return nil
}
