package apps

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"gomr/mr"
	"gomr/mr/fs"
)

// inProcessClient is a JobClient that runs each job in the test's process,
// as a one-process version of the runtime: the input format's splits, one
// map per split, the partitioner, a stable sort of each partition by the
// job's key order (with the combiner, if any, run over each map's output
// per partition), one reduce per partition, and the output format writing
// part-r-NNNNN (or part-m-NNNNN for a map-only job) and _SUCCESS into the
// output directory, which must not exist. It is enough to run apps' job
// chains end to end on local paths without a cluster.
type inProcessClient struct {
	t       *testing.T
	conf    map[string]string
	jobs    []*mr.JobSpec
	results []*mr.JobResult
}

func (c *inProcessClient) Conf(key string) string { return c.conf[key] }

func (c *inProcessClient) RunJob(ctx context.Context, spec *mr.JobSpec) (*mr.JobResult, error) {
	c.jobs = append(c.jobs, spec)
	counters := mr.NewCounters()
	err := c.run(ctx, spec, counters)
	res := &mr.JobResult{ID: fmt.Sprintf("job_local_%04d", len(c.jobs)), State: "SUCCEEDED", Counters: counters.Snapshot()}
	c.results = append(c.results, res)
	if err != nil {
		res.State, res.Error = "FAILED", err.Error()
		return res, err
	}
	return res, nil
}

// taskConf returns a configuration value: the job's override, else the
// client's.
func (c *inProcessClient) taskConf(spec *mr.JobSpec, key string) string {
	if v, ok := spec.Conf[key]; ok {
		return v
	}
	return c.conf[key]
}

func (c *inProcessClient) run(ctx context.Context, spec *mr.JobSpec, counters *mr.Counters) error {
	def, err := mr.LookupJob(spec.Def)
	if err != nil {
		return err
	}
	if _, err := os.Stat(spec.Output); err == nil {
		return fmt.Errorf("output directory %s already exists", spec.Output)
	}
	reduces := spec.NumReduces
	if reduces < 0 {
		n, err := confInt(func(k string) string { return c.taskConf(spec, k) }, "mapreduce.job.reduces", 1)
		if err != nil {
			return err
		}
		reduces = int(n)
	}
	maxSplit, _ := strconv.ParseInt(c.taskConf(spec, "mapreduce.input.fileinputformat.split.maxsize"), 10, 64)
	splits, err := def.Input.Splits(mr.SplitContext{Ctx: ctx, Inputs: spec.Inputs, Params: spec.Params, MaxSplitSize: maxSplit})
	if err != nil {
		return fmt.Errorf("splits: %w", err)
	}
	newTask := func(index int) *fakeTC {
		tc := newTC(spec.Params, reduces)
		tc.ctx = ctx
		tc.index = index
		tc.counters = counters
		for k, v := range c.conf {
			tc.conf[k] = v
		}
		for k, v := range spec.Conf {
			tc.conf[k] = v
		}
		return tc
	}
	if err := os.MkdirAll(spec.Output, 0o755); err != nil {
		return err
	}
	parts := make([][]kv, max(reduces, 1))
	for i, s := range splits {
		tc := newTask(i)
		m, err := def.Mapper(tc)
		if err != nil {
			return fmt.Errorf("map %d: %w", i, err)
		}
		r, err := def.Input.Open(ctx, s, spec.Params)
		if err != nil {
			return fmt.Errorf("map %d: %w", i, err)
		}
		var col collector
		for r.Next() {
			if err := m.Map(tc, r.Key(), r.Value(), &col); err != nil {
				r.Close()
				return fmt.Errorf("map %d: %w", i, err)
			}
		}
		if err := r.Err(); err != nil {
			return fmt.Errorf("map %d: %w", i, err)
		}
		if err := r.Close(); err != nil {
			return fmt.Errorf("map %d: %w", i, err)
		}
		if reduces == 0 {
			if err := writePart(def.Output, filepath.Join(spec.Output, mr.PartName(true, i)), col.out); err != nil {
				return err
			}
			continue
		}
		var p mr.Partitioner = mr.HashPartitioner{}
		if def.Partitioner != nil {
			if p, err = def.Partitioner(tc); err != nil {
				return fmt.Errorf("map %d: partitioner: %w", i, err)
			}
		}
		mapParts := make([][]kv, reduces)
		for _, e := range col.out {
			n := p.Partition([]byte(e.k), reduces)
			if n < 0 || n >= reduces {
				return fmt.Errorf("map %d: key %q partitioned to %d of %d", i, e.k, n, reduces)
			}
			mapParts[n] = append(mapParts[n], e)
		}
		for n, pairs := range mapParts {
			if def.Combiner != nil && len(pairs) > 0 {
				comb, err := def.Combiner(tc)
				if err != nil {
					return fmt.Errorf("map %d: combiner: %w", i, err)
				}
				if pairs, err = groupAndReduce(tc, comb, def.Compare, pairs); err != nil {
					return fmt.Errorf("map %d: combiner: %w", i, err)
				}
			}
			parts[n] = append(parts[n], pairs...)
		}
	}
	for n := 0; n < reduces; n++ {
		tc := newTask(n)
		var red mr.Reducer = mr.ReducerFunc(identityReduce)
		if def.Reducer != nil {
			if red, err = def.Reducer(tc); err != nil {
				return fmt.Errorf("reduce %d: %w", n, err)
			}
		}
		out, err := groupAndReduce(tc, red, def.Compare, parts[n])
		if err != nil {
			return fmt.Errorf("reduce %d: %w", n, err)
		}
		if err := writePart(def.Output, filepath.Join(spec.Output, mr.PartName(false, n)), out); err != nil {
			return err
		}
	}
	return os.WriteFile(filepath.Join(spec.Output, "_SUCCESS"), nil, 0o644)
}

// groupAndReduce sorts pairs stably by key and calls r once per key group.
func groupAndReduce(tc mr.TaskContext, r mr.Reducer, cmp mr.Comparator, pairs []kv) ([]kv, error) {
	if cmp == nil {
		cmp = bytes.Compare
	}
	sorted := slices.Clone(pairs)
	slices.SortStableFunc(sorted, func(a, b kv) int { return cmp([]byte(a.k), []byte(b.k)) })
	var col collector
	for i := 0; i < len(sorted); {
		j := i
		var vals []string
		for j < len(sorted) && cmp([]byte(sorted[j].k), []byte(sorted[i].k)) == 0 {
			vals = append(vals, sorted[j].v)
			j++
		}
		if err := r.Reduce(tc, []byte(sorted[i].k), iter(vals...), &col); err != nil {
			return nil, fmt.Errorf("key %q: %w", sorted[i].k, err)
		}
		i = j
	}
	return col.out, nil
}

// writePart writes records through an output format.
func writePart(of mr.OutputFormat, path string, recs []kv) error {
	w, err := of.Create(fs.Local{}, path)
	if err != nil {
		return err
	}
	for _, r := range recs {
		if err := w.Write([]byte(r.k), []byte(r.v)); err != nil {
			w.Close()
			return err
		}
	}
	return w.Close()
}

// readParts returns the concatenated contents of the part files of an
// output directory, in name order.
func readParts(t *testing.T, dir string) string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "part-*"))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		data, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(data)
	}
	return b.String()
}

// leftovers lists the names in dir other than want, to catch temporary
// directories a driver failed to remove.
func leftovers(t *testing.T, dir string, want ...string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var extra []string
	for _, e := range entries {
		if !slices.Contains(want, e.Name()) {
			extra = append(extra, e.Name())
		}
	}
	return extra
}
