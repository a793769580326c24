package apps

import (
	"context"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"gomr/mr"
)

// The fail app is Hadoop's FailJob: a job whose mappers or reducers always
// fail, for checking retries and how a failed job is reported.

const (
	failJob      = "fail"
	failAppUsage = "[-failMappers] [-failReducers] [-m maps] [-o dir]"
)

// errFail is what the failing tasks return.
var errFail = errors.New("intentional failure (fail job)")

func init() {
	mr.RegisterJob(&mr.JobDef{
		Name:   failJob,
		Input:  RowRangeInput{},
		Output: NullOutput{},
		Mapper: func(tc mr.TaskContext) (mr.Mapper, error) {
			fail := tc.Param("fail_maps") == "true"
			return mr.MapperFunc(func(tc mr.TaskContext, k, _ []byte, out mr.Emitter) error {
				if fail {
					return errFail
				}
				return out.Emit(k, nil)
			}), nil
		},
		Reducer: func(tc mr.TaskContext) (mr.Reducer, error) {
			fail := tc.Param("fail_reduces") == "true"
			return mr.ReducerFunc(func(tc mr.TaskContext, _ []byte, values mr.ValueIterator, _ mr.Emitter) error {
				if fail {
					return errFail
				}
				for values.Next() {
				}
				return nil
			}), nil
		},
	})
	mr.RegisterApp(&mr.App{
		Name:        failJob,
		Usage:       failAppUsage,
		Description: "Hadoop's FailJob: maps (-failMappers) or reduces (-failReducers) that always fail.",
		Run:         runFail,
		Check:       func(args []string) error { _, err := failArgs(args); return err },
	})
}

// failOpts are the fail app's options.
type failOpts struct {
	failMaps, failReduces bool
	maps                  int
	out                   string
}

// failArgs parses and checks the fail app's arguments.
func failArgs(args []string) (*failOpts, error) {
	o := &failOpts{}
	flags := flag.NewFlagSet(failJob, flag.ContinueOnError)
	flags.SetOutput(io.Discard)
	flags.BoolVar(&o.failMaps, "failMappers", false, "maps fail")
	flags.BoolVar(&o.failReduces, "failReducers", false, "reduces fail")
	flags.IntVar(&o.maps, "m", 1, "number of maps")
	flags.StringVar(&o.out, "o", "", "output directory")
	if err := flags.Parse(args); err != nil {
		return nil, usage(failJob, failAppUsage, "%v", err)
	}
	if flags.NArg() > 0 {
		return nil, usage(failJob, failAppUsage, "unexpected argument %q", flags.Arg(0))
	}
	if o.maps < 1 {
		return nil, usage(failJob, failAppUsage, "-m %d: need at least one map", o.maps)
	}
	return o, nil
}

func runFail(ctx context.Context, jc mr.JobClient, args []string) error {
	o, err := failArgs(args)
	if err != nil {
		return err
	}
	failMaps, failReduces, maps, out := &o.failMaps, &o.failReduces, &o.maps, &o.out
	output := *out
	if output == "" {
		// Not in the working directory: see runSleep.
		output = filepath.Join(os.TempDir(), "gomr-fail-temp-"+randomSuffix())
		defer removeTemp(failJob, output)
	}
	_, err = runJob(ctx, jc, &mr.JobSpec{
		Name: failJob,
		Def:  failJob,
		Params: map[string]string{
			"rows":         strconv.Itoa(*maps),
			"maps":         strconv.Itoa(*maps),
			"fail_maps":    strconv.FormatBool(*failMaps),
			"fail_reduces": strconv.FormatBool(*failReduces),
		},
		Output:     output,
		NumReduces: 1,
	})
	return err
}
