package apps

import (
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"gomr/mr"
)

const sleepJob = "sleep"

func init() {
	mr.RegisterJob(&mr.JobDef{
		Name:   sleepJob,
		Input:  RowRangeInput{},
		Output: NullOutput{},
		Mapper: func(tc mr.TaskContext) (mr.Mapper, error) {
			d, err := sleepParam(tc, "map_sleep_ms")
			if err != nil {
				return nil, err
			}
			return &sleepMapper{d: d}, nil
		},
		Reducer: func(tc mr.TaskContext) (mr.Reducer, error) {
			d, err := sleepParam(tc, "reduce_sleep_ms")
			if err != nil {
				return nil, err
			}
			return &sleepReducer{d: d}, nil
		},
		Partitioner: func(mr.TaskContext) (mr.Partitioner, error) {
			return mr.PartitionerFunc(indexPartition), nil
		},
	})
	mr.RegisterApp(&mr.App{
		Name:        sleepAppName,
		Usage:       sleepAppUsage,
		Description: "A job whose tasks only sleep (defaults -m 1 -r 1 -mt 100 -rt 100); -o names its (empty) output directory, otherwise a temporary one under the system temporary directory ($TMPDIR) is used and removed.",
		Run:         runSleep,
		Check:       func(args []string) error { _, err := sleepArgs(args); return err },
	})
}

const (
	sleepAppName  = "sleep"
	sleepAppUsage = "[-m maps] [-r reduces] [-mt ms] [-rt ms] [-o dir]"
)

// sleepOpts are the sleep app's options.
type sleepOpts struct {
	maps, reduces   int
	mapMs, reduceMs int64
	out             string
}

// sleepArgs parses and checks the sleep app's arguments.
func sleepArgs(args []string) (*sleepOpts, error) {
	o := &sleepOpts{}
	flags := flag.NewFlagSet(sleepAppName, flag.ContinueOnError)
	flags.SetOutput(io.Discard)
	flags.IntVar(&o.maps, "m", 1, "number of maps")
	flags.IntVar(&o.reduces, "r", 1, "number of reduces")
	flags.Int64Var(&o.mapMs, "mt", 100, "milliseconds each map sleeps")
	flags.Int64Var(&o.reduceMs, "rt", 100, "milliseconds each reduce sleeps")
	flags.StringVar(&o.out, "o", "", "output directory")
	if err := flags.Parse(args); err != nil {
		return nil, usage(sleepAppName, sleepAppUsage, "%v", err)
	}
	switch {
	case flags.NArg() > 0:
		return nil, usage(sleepAppName, sleepAppUsage, "unexpected argument %q", flags.Arg(0))
	case o.maps < 1:
		return nil, usage(sleepAppName, sleepAppUsage, "-m %d: need at least one map", o.maps)
	case o.reduces < 0:
		return nil, usage(sleepAppName, sleepAppUsage, "-r %d: the number of reduces cannot be negative", o.reduces)
	case o.mapMs < 0 || o.reduceMs < 0:
		return nil, usage(sleepAppName, sleepAppUsage, "sleep times cannot be negative (-mt %d, -rt %d)", o.mapMs, o.reduceMs)
	}
	return o, nil
}

func runSleep(ctx context.Context, jc mr.JobClient, args []string) error {
	o, err := sleepArgs(args)
	if err != nil {
		return err
	}
	maps, reduces, mapMs, reduceMs, out := &o.maps, &o.reduces, &o.mapMs, &o.reduceMs, &o.out
	output := *out
	if output == "" {
		// The temporary output goes in the system's temporary directory,
		// never the working directory: a client interrupted (Ctrl-C)
		// while the job runs on a cluster removes it, but the job's tasks
		// and committer may make it again before the job ends.
		output = filepath.Join(os.TempDir(), "gomr-sleep-temp-"+randomSuffix())
		defer removeTemp(sleepAppName, output)
	}
	_, err = runJob(ctx, jc, &mr.JobSpec{
		Name: sleepJob,
		Def:  sleepJob,
		Params: map[string]string{
			"rows":            strconv.Itoa(*maps),
			"maps":            strconv.Itoa(*maps),
			"map_sleep_ms":    strconv.FormatInt(*mapMs, 10),
			"reduce_sleep_ms": strconv.FormatInt(*reduceMs, 10),
		},
		Output:     output,
		NumReduces: *reduces,
	})
	return err
}

// sleepParam reads a sleep time in milliseconds from the job parameters.
func sleepParam(tc mr.TaskContext, name string) (time.Duration, error) {
	ms, err := paramInt(tc.Param, name)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", sleepJob, err)
	}
	if ms < 0 {
		return 0, fmt.Errorf("%s: job parameter %s=%d is negative", sleepJob, name, ms)
	}
	return time.Duration(ms) * time.Millisecond, nil
}

// sleepFor waits d or until ctx is done.
func sleepFor(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("sleep interrupted: %w", ctx.Err())
	}
}

// sleepMapper sleeps, then emits one record for each reduce partition
// (key = the partition index, 4 bytes big-endian; empty value).
type sleepMapper struct {
	d   time.Duration
	key [4]byte
}

// Map sleeps and emits.
func (m *sleepMapper) Map(tc mr.TaskContext, _, _ []byte, out mr.Emitter) error {
	if err := sleepFor(tc.Context(), m.d); err != nil {
		return err
	}
	for i := range tc.NumReduces() {
		binary.BigEndian.PutUint32(m.key[:], uint32(i))
		if err := out.Emit(m.key[:], nil); err != nil {
			return err
		}
	}
	return nil
}

// indexPartition sends the key holding index i (4 bytes big-endian) to
// partition i mod n.
func indexPartition(key []byte, n int) int {
	if n <= 1 || len(key) < 4 {
		return 0
	}
	return int(binary.BigEndian.Uint32(key) % uint32(n))
}

// sleepReducer sleeps once, on its first key group, and writes nothing.
type sleepReducer struct {
	d     time.Duration
	slept bool
}

// Reduce drains the group, sleeping first if it has not yet.
func (r *sleepReducer) Reduce(tc mr.TaskContext, _ []byte, values mr.ValueIterator, _ mr.Emitter) error {
	if !r.slept {
		r.slept = true
		if err := sleepFor(tc.Context(), r.d); err != nil {
			return err
		}
	}
	for values.Next() {
	}
	return nil
}
