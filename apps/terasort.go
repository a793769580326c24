package apps

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"

	"gomr/mr"
)

const teraSortJob = "terasort"

// Configuration keys of TeraSort's sampler, as Hadoop names them.
const (
	confSampleSize    = "mapreduce.terasort.partitions.sample"
	confSampleSplits  = "mapreduce.terasort.num.partitions"
	defaultSampleSize = 100000
	defaultSampleSpl  = 10
)

// teraInput is the input format of the GraySort jobs: 100-byte records
// with 10-byte keys.
func teraInput(unsplittable bool) mr.FixedLengthInput {
	return mr.FixedLengthInput{RecordLength: teraRecordLen, KeyLength: teraKeyLen, Unsplittable: unsplittable}
}

func init() {
	mr.RegisterJob(&mr.JobDef{
		Name:   teraSortJob,
		Input:  teraInput(false),
		Output: mr.RawOutput{},
		Mapper: func(mr.TaskContext) (mr.Mapper, error) {
			return mr.MapperFunc(identityMap), nil
		},
		Reducer: func(mr.TaskContext) (mr.Reducer, error) {
			return mr.ReducerFunc(identityReduce), nil
		},
		Partitioner: newTotalOrderPartitioner,
	})
	mr.RegisterApp(&mr.App{
		Name:        teraSortAppName,
		Usage:       teraSortAppUsage,
		Description: "Sort GraySort records into one total order across the output files.",
		Run:         runTeraSort,
		Check:       argCount(teraSortAppName, teraSortAppUsage, 2),
	})
}

const (
	teraSortAppName  = "terasort"
	teraSortAppUsage = "<in> <out>"
)

// identityMap emits its input record unchanged.
func identityMap(_ mr.TaskContext, key, value []byte, out mr.Emitter) error {
	return out.Emit(key, value)
}

// identityReduce emits every value of the group with its key.
func identityReduce(_ mr.TaskContext, key []byte, values mr.ValueIterator, out mr.Emitter) error {
	for values.Next() {
		if err := out.Emit(key, values.Value()); err != nil {
			return err
		}
	}
	return nil
}

func runTeraSort(ctx context.Context, jc mr.JobClient, args []string) error {
	if len(args) != 2 {
		return usage(teraSortAppName, teraSortAppUsage, "need 2 arguments, got %d", len(args))
	}
	in, out := args[0], args[1]
	reduces, points, err := sampleSplitPoints(ctx, jc, teraSortAppName, in, teraInput(false), nil)
	if err != nil {
		return err
	}
	_, err = runJob(ctx, jc, &mr.JobSpec{
		Name:       teraSortJob,
		Def:        teraSortJob,
		Params:     map[string]string{"splitpoints": encodeSplitPoints(points)},
		Inputs:     []string{in},
		Output:     out,
		NumReduces: reduces,
	})
	return err
}

// sampleSplitPoints is the sampling step of the total-order sorts
// (terasort, sort): it reads the number of reduces (mapreduce.job.reduces,
// default 1) and TeraSort's sampler settings from the client's
// configuration, samples the sort keys of the input in (keyOf maps a
// record to its key; nil means the record's key) and returns the reduces
// and the split points that cut the sample into that many equal parts.
// Errors are prefixed with app.
func sampleSplitPoints(ctx context.Context, jc mr.JobClient, app, in string, format mr.InputFormat, keyOf func(key, value []byte) []byte) (int, [][]byte, error) {
	reduces, err := confInt(jc.Conf, "mapreduce.job.reduces", 1)
	if err != nil {
		return 0, nil, fmt.Errorf("%s: %w", app, err)
	}
	if reduces < 1 {
		return 0, nil, fmt.Errorf("%s: configuration mapreduce.job.reduces=%d must be at least 1", app, reduces)
	}
	sampleSize, err := confInt(jc.Conf, confSampleSize, defaultSampleSize)
	if err != nil {
		return 0, nil, fmt.Errorf("%s: %w", app, err)
	}
	maxSplits, err := confInt(jc.Conf, confSampleSplits, defaultSampleSpl)
	if err != nil {
		return 0, nil, fmt.Errorf("%s: %w", app, err)
	}
	if sampleSize < 1 || maxSplits < 1 {
		return 0, nil, fmt.Errorf("%s: %s=%d and %s=%d must be at least 1", app, confSampleSize, sampleSize, confSampleSplits, maxSplits)
	}
	maxSplit, err := confInt(jc.Conf, "mapreduce.input.fileinputformat.split.maxsize", 0)
	if err != nil {
		return 0, nil, fmt.Errorf("%s: %w", app, err)
	}
	minSplit, err := confInt(jc.Conf, "mapreduce.input.fileinputformat.split.minsize", 0)
	if err != nil {
		return 0, nil, fmt.Errorf("%s: %w", app, err)
	}
	sc := mr.SplitContext{Ctx: ctx, Inputs: []string{in}, MaxSplitSize: maxSplit, MinSplitSize: minSplit}
	keys, err := sampleRecordKeys(ctx, format, sc, sampleSize, int(maxSplits), keyOf)
	if err != nil {
		return 0, nil, fmt.Errorf("%s: sampling %s: %w", app, in, err)
	}
	points := splitPoints(keys, int(reduces))
	slog.Info(app+" sampled the input", "keys", len(keys), "reduces", reduces, "split_points", len(points))
	return int(reduces), points, nil
}

// sampleKeys reads up to sampleSize keys from up to maxSplits evenly spaced
// splits of the input (sampleSize/splits keys from the start of each), as
// Hadoop's TeraInputFormat.writePartitionFile does, and returns them
// sorted.
func sampleKeys(ctx context.Context, in mr.InputFormat, sc mr.SplitContext, sampleSize int64, maxSplits int) ([][]byte, error) {
	return sampleRecordKeys(ctx, in, sc, sampleSize, maxSplits, nil)
}

// sampleRecordKeys is sampleKeys with the sort key of a record given by
// keyOf (nil: the record's key), for formats whose sort key is not the
// reader's key, such as text lines (whose reader key is the offset).
func sampleRecordKeys(ctx context.Context, in mr.InputFormat, sc mr.SplitContext, sampleSize int64, maxSplits int, keyOf func(key, value []byte) []byte) ([][]byte, error) {
	splits, err := in.Splits(sc)
	if err != nil {
		return nil, fmt.Errorf("computing splits: %w", err)
	}
	if len(splits) == 0 {
		return nil, nil
	}
	samples := min(maxSplits, len(splits))
	perSample := sampleSize / int64(samples)
	step := len(splits) / samples
	got := make([][][]byte, samples)
	errs := make([]error, samples)
	var wg sync.WaitGroup
	for i := range samples {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i], errs[i] = readKeys(ctx, in, splits[step*i], perSample, keyOf)
		}()
	}
	wg.Wait()
	var keys [][]byte
	for i := range samples {
		if errs[i] != nil {
			return nil, errs[i]
		}
		keys = append(keys, got[i]...)
	}
	slices.SortFunc(keys, bytes.Compare)
	return keys, nil
}

// readKeys copies the first n keys of a split (keyOf as in
// sampleRecordKeys).
func readKeys(ctx context.Context, in mr.InputFormat, split mr.Split, n int64, keyOf func(key, value []byte) []byte) (keys [][]byte, err error) {
	r, err := in.Open(ctx, split, nil)
	if err != nil {
		return nil, fmt.Errorf("opening split %s@%d: %w", split.Path, split.Start, err)
	}
	defer func() {
		if cerr := r.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("closing split %s@%d: %w", split.Path, split.Start, cerr)
		}
	}()
	for int64(len(keys)) < n && r.Next() {
		if keyOf == nil {
			keys = append(keys, bytes.Clone(r.Key()))
		} else {
			keys = append(keys, bytes.Clone(keyOf(r.Key(), r.Value())))
		}
	}
	if err := r.Err(); err != nil {
		return nil, fmt.Errorf("reading split %s@%d: %w", split.Path, split.Start, err)
	}
	return keys, nil
}

// splitPoints picks reduces-1 keys from the sorted sample that cut it into
// reduces parts of equal size: point i-1 is the key at index
// round(len*i/reduces), as Hadoop's TeraSort sampler picks them. With no
// sample there are no points (every key then goes to partition 0).
func splitPoints(sorted [][]byte, reduces int) [][]byte {
	n := len(sorted)
	if n == 0 || reduces <= 1 {
		return nil
	}
	points := make([][]byte, 0, reduces-1)
	for i := 1; i < reduces; i++ {
		idx := (2*n*i + reduces) / (2 * reduces) // round(n*i/reduces), halves up
		if idx >= n {
			idx = n - 1
		}
		points = append(points, sorted[idx])
	}
	return points
}

// encodeSplitPoints renders split points as comma-separated hex.
func encodeSplitPoints(points [][]byte) string {
	parts := make([]string, len(points))
	for i, p := range points {
		parts[i] = hex.EncodeToString(p)
	}
	return strings.Join(parts, ",")
}

// decodeSplitPoints parses encodeSplitPoints' output and checks the points
// are in ascending order.
func decodeSplitPoints(s string) ([][]byte, error) {
	if s == "" {
		return nil, nil
	}
	parts := strings.Split(s, ",")
	points := make([][]byte, len(parts))
	for i, p := range parts {
		b, err := hex.DecodeString(p)
		if err != nil {
			return nil, fmt.Errorf("split point %d %q is not hex: %w", i, p, err)
		}
		if i > 0 && bytes.Compare(points[i-1], b) > 0 {
			return nil, fmt.Errorf("split point %d %q is less than the one before it (%x)", i, p, points[i-1])
		}
		points[i] = b
	}
	return points, nil
}

// totalOrderPartitioner sends a key to the number of split points that are
// less than or equal to it, so that partition i holds the keys in
// [point i-1, point i) and the partitions, in order, form one sorted
// sequence.
type totalOrderPartitioner struct{ points [][]byte }

func newTotalOrderPartitioner(tc mr.TaskContext) (mr.Partitioner, error) {
	points, err := decodeSplitPoints(tc.Param("splitpoints"))
	if err != nil {
		return nil, fmt.Errorf("total order partitioner: job parameter splitpoints: %w", err)
	}
	if n := tc.NumReduces(); n > 0 && len(points) > n-1 {
		return nil, fmt.Errorf("total order partitioner: %d split points need %d reduces, the job has %d", len(points), len(points)+1, n)
	}
	return &totalOrderPartitioner{points: points}, nil
}

// Partition returns the index of the first split point greater than key.
func (p *totalOrderPartitioner) Partition(key []byte, n int) int {
	i := sort.Search(len(p.points), func(i int) bool { return bytes.Compare(key, p.points[i]) < 0 })
	if i >= n {
		i = n - 1
	}
	return max(i, 0)
}
