package apps

import (
	"bytes"
	"context"
	"slices"
	"testing"

	"gomr/mr"
)

// fakeTC is a TaskContext for calling user code directly.
type fakeTC struct {
	ctx      context.Context
	params   map[string]string
	conf     map[string]string
	counters *mr.Counters
	index    int
	reduces  int
}

func newTC(params map[string]string, reduces int) *fakeTC {
	return &fakeTC{ctx: context.Background(), params: params, conf: map[string]string{}, counters: mr.NewCounters(), reduces: reduces}
}

func (t *fakeTC) Context() context.Context               { return t.ctx }
func (t *fakeTC) Param(name string) string               { return t.params[name] }
func (t *fakeTC) Conf(key string) string                 { return t.conf[key] }
func (t *fakeTC) Counter(group, name string) *mr.Counter { return t.counters.Get(group, name) }
func (t *fakeTC) TaskIndex() int                         { return t.index }
func (t *fakeTC) NumReduces() int                        { return t.reduces }

// kv is one emitted pair.
type kv struct{ k, v string }

// collector is an Emitter that keeps copies of what it is given.
type collector struct{ out []kv }

func (c *collector) Emit(key, value []byte) error {
	c.out = append(c.out, kv{string(key), string(value)})
	return nil
}

// sliceIter is a ValueIterator over fixed values.
type sliceIter struct {
	vals []string
	i    int
	cur  []byte
}

func (s *sliceIter) Next() bool {
	if s.i >= len(s.vals) {
		return false
	}
	s.cur = []byte(s.vals[s.i])
	s.i++
	return true
}

func (s *sliceIter) Value() []byte { return s.cur }

func iter(vals ...string) *sliceIter { return &sliceIter{vals: vals} }

// shuffle sorts pairs by key (stable, bytes order) and calls r once per
// key group, as the runtime's single reduce would.
func shuffle(t *testing.T, tc mr.TaskContext, r mr.Reducer, pairs []kv) []kv {
	t.Helper()
	sorted := slices.Clone(pairs)
	slices.SortStableFunc(sorted, func(a, b kv) int { return bytes.Compare([]byte(a.k), []byte(b.k)) })
	var c collector
	for i := 0; i < len(sorted); {
		j := i
		var vals []string
		for j < len(sorted) && sorted[j].k == sorted[i].k {
			vals = append(vals, sorted[j].v)
			j++
		}
		if err := r.Reduce(tc, []byte(sorted[i].k), iter(vals...), &c); err != nil {
			t.Fatalf("reduce of key %q: %v", sorted[i].k, err)
		}
		i = j
	}
	return c.out
}

// fakeClient is a JobClient that records the specs it is given and runs a
// hook in place of the job.
type fakeClient struct {
	conf  map[string]string
	specs []*mr.JobSpec
	run   func(spec *mr.JobSpec) error
}

func (f *fakeClient) Conf(key string) string { return f.conf[key] }

func (f *fakeClient) RunJob(_ context.Context, spec *mr.JobSpec) (*mr.JobResult, error) {
	f.specs = append(f.specs, spec)
	if f.run != nil {
		if err := f.run(spec); err != nil {
			return &mr.JobResult{ID: "job_1", State: "FAILED", Error: err.Error()}, err
		}
	}
	return &mr.JobResult{ID: "job_1", State: "SUCCEEDED"}, nil
}

// runApp looks an app up in the registry and runs it.
func runApp(t *testing.T, name string, jc mr.JobClient, args ...string) error {
	t.Helper()
	app, err := mr.LookupApp(name)
	if err != nil {
		t.Fatal(err)
	}
	return app.Run(context.Background(), jc, args)
}
