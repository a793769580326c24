package apps

import (
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"gomr/mr"
)

// ReplayJob is the registered job that replays one trace entry, in the
// spirit of SWIM's replay jobs (docs/comparison.md, "The replay job"):
// map task i lasts map_ms[i], reduce task j holds its shuffle until
// shuffle_ms[j] after its start and then lasts reduce_ms[j], and the
// maps move output_bytes of records through the spill and the shuffle to
// the reduces, which read them all. A task's duration is held by sleeping
// whatever of it the data work left.
//
// Job parameters:
//
//	maps          number of maps (>= 1)
//	map_ms        comma-separated duration of each map, milliseconds
//	reduce_ms     comma-separated duration of each reduce's reduce phase
//	              (one per reduce; JobSpec.NumReduces must match)
//	shuffle_ms    optional, comma-separated: the least time from each
//	              reduce's start to the end of its shuffle
//	input_bytes   optional: the job's input size, as the splits' lengths
//	              (what the JobTracker and size-based policies see)
//	output_bytes  optional: total bytes of map output (keys and values),
//	              shared evenly among the maps and, round robin, the
//	              reduces
//	record_bytes  optional: size of one output record (default 100, >= 16)
const ReplayJob = "replay"

// Counters of the replay job, in group ReplayCounterGroup.
const (
	ReplayCounterGroup = "Replay"
	// ReplayMapBytes are the bytes (keys and values) of data records the
	// maps emitted; ReplayReduceBytes those the reduces read.
	ReplayMapBytes    = "MAP_BYTES_EMITTED"
	ReplayReduceBytes = "REDUCE_BYTES_CONSUMED"
	// ReplayHoldMs is the time tasks slept to last what they were asked.
	ReplayHoldMs = "HOLD_MS"
	// ReplayOverruns counts tasks whose data work alone took longer than
	// their duration (they held nothing and ran late).
	ReplayOverruns = "OVERRUN_TASKS"
)

// replayMarker is the key suffix of the record every map sends every
// reduce: it sorts after every data key (whose suffix starts with a zero
// byte), so that every reduce gets a last group in which to hold its time,
// even one that receives no data.
var replayMarker = [8]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}

// processStart approximates the attempt's start: each attempt is a child
// process, and this package is initialised as it starts.
var processStart = time.Now()

func init() {
	mr.RegisterJob(&mr.JobDef{
		Name:   ReplayJob,
		Input:  ReplayInput{},
		Output: NullOutput{},
		Mapper: func(tc mr.TaskContext) (mr.Mapper, error) {
			start := time.Now()
			ds, err := replayDurations(tc.Param, "map_ms")
			if err != nil {
				return nil, err
			}
			if tc.TaskIndex() >= len(ds) {
				return nil, fmt.Errorf("%s: map %d has no duration in map_ms (%d given)", ReplayJob, tc.TaskIndex(), len(ds))
			}
			maps, err := paramInt(tc.Param, "maps")
			if err != nil {
				return nil, fmt.Errorf("%s: %w", ReplayJob, err)
			}
			out, err := optionalParam(tc.Param, "output_bytes", 0)
			if err != nil {
				return nil, err
			}
			rec, err := optionalParam(tc.Param, "record_bytes", 100)
			if err != nil {
				return nil, err
			}
			if rec < 16 {
				return nil, fmt.Errorf("%s: job parameter record_bytes=%d must be at least 16", ReplayJob, rec)
			}
			share := out / maps
			if int64(tc.TaskIndex()) < out%maps {
				share++
			}
			return &replayMapper{start: start, d: ds[tc.TaskIndex()], bytes: share, rec: int(rec)}, nil
		},
		Reducer: func(tc mr.TaskContext) (mr.Reducer, error) {
			start := time.Now()
			rs, err := replayDurations(tc.Param, "reduce_ms")
			if err != nil {
				return nil, err
			}
			if tc.TaskIndex() >= len(rs) {
				return nil, fmt.Errorf("%s: reduce %d has no duration in reduce_ms (%d given)", ReplayJob, tc.TaskIndex(), len(rs))
			}
			// The shuffle ends when the reducer is made, or shuffle_ms after
			// the attempt started if that is later.
			if tc.Param("shuffle_ms") != "" {
				ss, err := replayDurations(tc.Param, "shuffle_ms")
				if err != nil {
					return nil, err
				}
				if tc.TaskIndex() >= len(ss) {
					return nil, fmt.Errorf("%s: reduce %d has no duration in shuffle_ms (%d given)", ReplayJob, tc.TaskIndex(), len(ss))
				}
				if s := processStart.Add(ss[tc.TaskIndex()]); s.After(start) {
					start = s
				}
			}
			return &replayReducer{end: start.Add(rs[tc.TaskIndex()])}, nil
		},
		Partitioner: func(mr.TaskContext) (mr.Partitioner, error) {
			return mr.PartitionerFunc(indexPartition), nil
		},
	})
	mr.RegisterApp(&mr.App{
		Name:  replayAppName,
		Usage: replayAppUsage,
		Description: "One synthetic replay job (see mr workload replay for whole traces): map i lasts the i-th of -maps-ms, " +
			"reduce j the j-th of -reduces-ms, and the maps move -bytes of records through the shuffle to the reduces.",
		Check: func(args []string) error { _, err := parseReplayArgs(args); return err },
		Run:   runReplay,
	})
}

const (
	replayAppName  = "replay"
	replayAppUsage = "-maps-ms MS,MS,... [-reduces-ms MS,...] [-shuffles-ms MS,...] [-bytes N] [-record-bytes N] [-name NAME] [-o dir]"
)

// replayArgs are the replay app's parsed arguments.
type replayArgs struct {
	task      ReplayTask
	name, out string
}

// parseReplayArgs reads the replay app's flags; Check and Run share it.
func parseReplayArgs(args []string) (*replayArgs, error) {
	flags := flag.NewFlagSet(replayAppName, flag.ContinueOnError)
	flags.SetOutput(io.Discard)
	maps := flags.String("maps-ms", "", "duration of each map, ms")
	reduces := flags.String("reduces-ms", "", "duration of each reduce's reduce phase, ms")
	shuffles := flags.String("shuffles-ms", "", "least shuffle duration of each reduce, ms")
	bytes := flags.Int64("bytes", 0, "total map output bytes")
	rec := flags.Int64("record-bytes", 100, "bytes of one map output record")
	name := flags.String("name", replayAppName, "job name")
	out := flags.String("o", "", "output directory")
	if err := flags.Parse(args); err != nil {
		return nil, usage(replayAppName, replayAppUsage, "%v", err)
	}
	if flags.NArg() > 0 {
		return nil, usage(replayAppName, replayAppUsage, "unexpected argument %q", flags.Arg(0))
	}
	a := &replayArgs{task: ReplayTask{OutputBytes: *bytes, RecordBytes: *rec}, name: *name, out: *out}
	for _, f := range []struct {
		name string
		s    string
		into *[]time.Duration
	}{{"-maps-ms", *maps, &a.task.Maps}, {"-reduces-ms", *reduces, &a.task.Reduces}, {"-shuffles-ms", *shuffles, &a.task.Shuffles}} {
		if f.s == "" {
			continue
		}
		ds, err := parseDurationsMs(f.s)
		if err != nil {
			return nil, usage(replayAppName, replayAppUsage, "%s: %v", f.name, err)
		}
		*f.into = ds
	}
	// The spec's own checks (at least one map, as many shuffles as
	// reduces...), on a placeholder output.
	if _, err := a.task.Spec(a.name, "check"); err != nil {
		return nil, usage(replayAppName, replayAppUsage, "%v", err)
	}
	return a, nil
}

// runReplay runs one replay job from flags.
func runReplay(ctx context.Context, jc mr.JobClient, args []string) error {
	a, err := parseReplayArgs(args)
	if err != nil {
		return err
	}
	output := a.out
	if output == "" {
		// Under the temporary directory, not the current one: an
		// interrupted client leaves nothing where it ran.
		output = filepath.Join(os.TempDir(), "gomr-replay-temp-"+randomSuffix())
		defer removeTemp(replayAppName, output)
	}
	spec, err := a.task.Spec(a.name, output)
	if err != nil {
		return usage(replayAppName, replayAppUsage, "%v", err)
	}
	_, err = runJob(ctx, jc, spec)
	return err
}

// ReplayTask describes one replay job: its tasks' durations and the bytes
// it moves.
type ReplayTask struct {
	// Maps are the map durations (at least one); Reduces the reduce-phase
	// durations; Shuffles (empty, or one per reduce) the least shuffle
	// durations.
	Maps, Reduces, Shuffles []time.Duration
	// InputBytes is the input size the splits declare; OutputBytes the map
	// output moved to the reduces; RecordBytes the size of one record
	// (0: 100).
	InputBytes, OutputBytes, RecordBytes int64
}

// Spec returns the job spec of a replay job named name writing (nothing)
// to output.
func (t ReplayTask) Spec(name, output string) (*mr.JobSpec, error) {
	if len(t.Maps) == 0 {
		return nil, fmt.Errorf("%s job %s: needs at least one map duration", ReplayJob, name)
	}
	if len(t.Shuffles) != 0 && len(t.Shuffles) != len(t.Reduces) {
		return nil, fmt.Errorf("%s job %s: %d shuffle durations for %d reduces", ReplayJob, name, len(t.Shuffles), len(t.Reduces))
	}
	for _, ds := range [][]time.Duration{t.Maps, t.Reduces, t.Shuffles} {
		for _, d := range ds {
			if d < 0 {
				return nil, fmt.Errorf("%s job %s: negative duration %v", ReplayJob, name, d)
			}
		}
	}
	if t.InputBytes < 0 || t.OutputBytes < 0 || t.RecordBytes < 0 || (t.RecordBytes > 0 && t.RecordBytes < 16) {
		return nil, fmt.Errorf("%s job %s: input %d and output %d bytes must be >= 0, a record (%d bytes) at least 16",
			ReplayJob, name, t.InputBytes, t.OutputBytes, t.RecordBytes)
	}
	rec := t.RecordBytes
	if rec == 0 {
		rec = 100
	}
	params := map[string]string{
		"maps":         strconv.Itoa(len(t.Maps)),
		"map_ms":       formatMs(t.Maps),
		"reduce_ms":    formatMs(t.Reduces),
		"input_bytes":  strconv.FormatInt(t.InputBytes, 10),
		"output_bytes": strconv.FormatInt(t.OutputBytes, 10),
		"record_bytes": strconv.FormatInt(rec, 10),
	}
	if len(t.Shuffles) > 0 {
		params["shuffle_ms"] = formatMs(t.Shuffles)
	}
	return &mr.JobSpec{Name: name, Def: ReplayJob, Params: params, Output: output, NumReduces: len(t.Reduces)}, nil
}

func formatMs(ds []time.Duration) string {
	s := make([]string, len(ds))
	for i, d := range ds {
		s[i] = strconv.FormatInt(d.Milliseconds(), 10)
	}
	return strings.Join(s, ",")
}

// parseDurationsMs parses comma-separated milliseconds (>= 0).
func parseDurationsMs(s string) ([]time.Duration, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	parts := strings.Split(s, ",")
	out := make([]time.Duration, len(parts))
	for i, p := range parts {
		ms, err := strconv.ParseInt(strings.TrimSpace(p), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("duration %d, %q, is not a number of milliseconds", i+1, p)
		}
		if ms < 0 {
			return nil, fmt.Errorf("duration %d, %d ms, is negative", i+1, ms)
		}
		out[i] = time.Duration(ms) * time.Millisecond
	}
	return out, nil
}

// replayDurations reads a duration list parameter.
func replayDurations(param func(string) string, name string) ([]time.Duration, error) {
	ds, err := parseDurationsMs(param(name))
	if err != nil {
		return nil, fmt.Errorf("%s: job parameter %s: %w", ReplayJob, name, err)
	}
	return ds, nil
}

// optionalParam reads a non-negative integer parameter, def when absent.
func optionalParam(param func(string) string, name string, def int64) (int64, error) {
	if param(name) == "" {
		return def, nil
	}
	v, err := paramInt(param, name)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", ReplayJob, err)
	}
	if v < 0 {
		return 0, fmt.Errorf("%s: job parameter %s=%d is negative", ReplayJob, name, v)
	}
	return v, nil
}

// ReplayInput is the replay job's input format: one split per map (job
// parameter "maps"), each of one record (key: the map's index, 8 bytes
// big-endian; its path, replay:<index>, names no file), whose lengths add up to the job parameter "input_bytes"
// so that the JobTracker and its policies see the traced input size. It
// reads no storage.
type ReplayInput struct{}

// Splits makes the maps' splits.
func (ReplayInput) Splits(sc mr.SplitContext) ([]mr.Split, error) {
	param := func(name string) string { return sc.Params[name] }
	maps, err := paramInt(param, "maps")
	if err != nil {
		return nil, fmt.Errorf("%s input: %w", ReplayJob, err)
	}
	if maps < 1 {
		return nil, fmt.Errorf("%s input: job parameter maps=%d must be at least 1", ReplayJob, maps)
	}
	in, err := optionalParam(param, "input_bytes", 0)
	if err != nil {
		return nil, err
	}
	splits := make([]mr.Split, maps)
	for i := range splits {
		l := in / maps
		if int64(i) < in%maps {
			l++
		}
		// A path, though nothing is read from it, makes the JobTracker
		// count the length as input (history, policies' views).
		splits[i] = mr.Split{Path: "replay:" + strconv.Itoa(i), Start: int64(i), Length: l}
	}
	return splits, nil
}

// Open returns the split's one-record reader.
func (ReplayInput) Open(_ context.Context, split mr.Split, _ map[string]string) (mr.RecordReader, error) {
	if split.Start < 0 {
		return nil, fmt.Errorf("%s input: bad split start %d", ReplayJob, split.Start)
	}
	return &rowRangeReader{start: split.Start, total: 1}, nil
}

// replayMapper emits its share of the job's output, then sleeps out its
// duration.
type replayMapper struct {
	start time.Time
	d     time.Duration
	bytes int64
	rec   int
}

// Map emits bytes of records round robin to the reduces (key: partition,
// 4 bytes, then a zero byte and a 7-byte sequence number; value: filler),
// a marker record to every reduce, and holds the map until its duration
// has passed since the mapper was made.
func (m *replayMapper) Map(tc mr.TaskContext, _, _ []byte, out mr.Emitter) error {
	n := max(tc.NumReduces(), 1)
	key := make([]byte, 12)
	val := make([]byte, m.rec-len(key))
	// Random filler, so that map output compression does not shrink the
	// bytes the shuffle moves.
	rng := rand.NewChaCha8([32]byte{byte(tc.TaskIndex()), byte(tc.TaskIndex() >> 8)})
	emitted := tc.Counter(ReplayCounterGroup, ReplayMapBytes)
	left := m.bytes
	for seq := uint64(0); left > 0; seq++ {
		size := min(int64(m.rec), left)
		if rest := left - size; rest > 0 && rest < int64(len(key)) {
			size = left - int64(len(key)) // leave a whole key for the last record
		}
		size = max(size, int64(len(key))) // a share below a key's size

		binary.BigEndian.PutUint32(key[:4], uint32(seq%uint64(n)))
		binary.BigEndian.PutUint64(key[4:], seq&(1<<56-1))
		v := val[:size-int64(len(key))]
		_, _ = rng.Read(v) // never fails
		if err := out.Emit(key, v); err != nil {
			return err
		}
		emitted.Add(size)
		left -= size
		if seq&1023 == 0 {
			if err := tc.Context().Err(); err != nil {
				return err
			}
		}
	}
	for p := range tc.NumReduces() {
		binary.BigEndian.PutUint32(key[:4], uint32(p))
		copy(key[4:], replayMarker[:])
		if err := out.Emit(key, nil); err != nil {
			return err
		}
	}
	return holdUntil(tc, m.start.Add(m.d))
}

// holdUntil sleeps until end, counting the hold, or counts an overrun.
func holdUntil(tc mr.TaskContext, end time.Time) error {
	d := time.Until(end)
	if d <= 0 {
		tc.Counter(ReplayCounterGroup, ReplayOverruns).Increment()
		return nil
	}
	tc.Counter(ReplayCounterGroup, ReplayHoldMs).Add(d.Milliseconds())
	return sleepFor(tc.Context(), d)
}

// replayReducer reads every record and, on the marker group (the last),
// holds the reduce until its end.
type replayReducer struct {
	end time.Time
}

// Reduce consumes the group; the marker group ends the task's work.
func (r *replayReducer) Reduce(tc mr.TaskContext, key []byte, values mr.ValueIterator, _ mr.Emitter) error {
	consumed := tc.Counter(ReplayCounterGroup, ReplayReduceBytes)
	marker := len(key) == 12 && string(key[4:]) == string(replayMarker[:])
	for values.Next() {
		if !marker {
			consumed.Add(int64(len(key) + len(values.Value())))
		}
	}
	if marker {
		return holdUntil(tc, r.end)
	}
	return nil
}
