package apps

import (
	"context"

	"gomr/mr"
)

const sortJob = "sort"

func init() {
	mr.RegisterJob(&mr.JobDef{
		Name:   sortJob,
		Input:  mr.TextInput{},
		Output: mr.TextOutput{},
		Mapper: func(mr.TaskContext) (mr.Mapper, error) {
			return mr.MapperFunc(lineAsKey), nil
		},
		Reducer: func(mr.TaskContext) (mr.Reducer, error) {
			return mr.ReducerFunc(identityReduce), nil
		},
		Partitioner: newTotalOrderPartitioner,
	})
	mr.RegisterApp(&mr.App{
		Name:        sortAppName,
		Usage:       sortAppUsage,
		Description: "Sort text lines into one total order across the output files (HiBench's sort).",
		Run:         runSort,
		Check:       argCount(sortAppName, sortAppUsage, 2),
	})
}

const (
	sortAppName  = "sort"
	sortAppUsage = "<in> <out>"
)

// lineAsKey emits a text line as the key with an empty value, so that the
// shuffle sorts the lines and the text output writes each back unchanged.
func lineAsKey(_ mr.TaskContext, _, line []byte, out mr.Emitter) error {
	return out.Emit(line, nil)
}

// textLineKey is the sort key of a TextInput record: the line.
func textLineKey(_, line []byte) []byte { return line }

// runSort samples the lines of the input, as terasort samples its keys
// (same configuration: mapreduce.job.reduces, mapreduce.terasort.*), and
// runs one job whose total-order partitioner sends each line to the reduce
// of its range: the part files, in name order, hold the input's lines in
// byte order, duplicates kept.
func runSort(ctx context.Context, jc mr.JobClient, args []string) error {
	if len(args) != 2 {
		return usage(sortAppName, sortAppUsage, "need 2 arguments, got %d", len(args))
	}
	in, out := args[0], args[1]
	reduces, points, err := sampleSplitPoints(ctx, jc, sortAppName, in, mr.TextInput{}, textLineKey)
	if err != nil {
		return err
	}
	_, err = runJob(ctx, jc, &mr.JobSpec{
		Name:       sortJob,
		Def:        sortJob,
		Params:     map[string]string{"splitpoints": encodeSplitPoints(points)},
		Inputs:     []string{in},
		Output:     out,
		NumReduces: reduces,
	})
	return err
}
