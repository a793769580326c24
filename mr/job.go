package mr

import (
	"context"
	"fmt"
	"sort"
	"sync"
)

// JobSpec is what a client submits: which registered job definition to run,
// on which input, with which parameters and configuration overrides. It is
// carried as JSON from the client to the JobTracker, the TaskTrackers and the
// task children.
type JobSpec struct {
	// Name is the job's name as users see it; deadline profiles are keyed
	// by it. Defaults to Def.
	Name string `json:"name"`
	// Def names the registered JobDef whose code the tasks run.
	Def string `json:"def"`
	// Params are the app driver's parameters for the job's code.
	Params map[string]string `json:"params,omitempty"`
	// Inputs are input paths or URIs (file:// or plain paths, hdfs://).
	Inputs []string `json:"inputs,omitempty"`
	// Output is the output directory; it must not exist yet.
	Output string `json:"output"`
	// NumReduces is the number of reduce tasks; 0 makes a map-only job.
	// A negative value means "use mapreduce.job.reduces".
	NumReduces int `json:"num_reduces"`
	// Conf holds the job's configuration overrides (-D key=value).
	Conf map[string]string `json:"conf,omitempty"`
	// User submitted the job.
	User string `json:"user,omitempty"`
	// Pool is the fair-scheduler pool; empty means the default pool.
	Pool string `json:"pool,omitempty"`
	// Priority orders jobs under FIFO; higher runs first.
	Priority int `json:"priority,omitempty"`
	// DeadlineSeconds is the job's relative deadline, for deadline
	// policies; 0 means none.
	DeadlineSeconds float64 `json:"deadline_seconds,omitempty"`
}

// JobDef is a registered job: the code its tasks run and the formats of its
// input and output. Factories receive the task's context so that they can
// read the job's parameters.
type JobDef struct {
	Name   string
	Input  InputFormat
	Output OutputFormat
	// Mapper builds the map function; required.
	Mapper func(tc TaskContext) (Mapper, error)
	// Combiner, if set, runs on each spill before it is written.
	Combiner func(tc TaskContext) (Reducer, error)
	// Reducer builds the reduce function; required unless the job is always
	// map-only. A job with reduces and no Reducer uses the identity reducer.
	Reducer func(tc TaskContext) (Reducer, error)
	// Partitioner, if set, replaces HashPartitioner.
	Partitioner func(tc TaskContext) (Partitioner, error)
	// Compare, if set, replaces bytes.Compare as the map output key order.
	Compare Comparator
}

// JobResult is the final state of a job as its client sees it.
type JobResult struct {
	ID       string
	State    string // SUCCEEDED, FAILED or KILLED
	Error    string
	Counters CounterSet
}

// Succeeded tells whether the job succeeded.
func (r *JobResult) Succeeded() bool { return r != nil && r.State == "SUCCEEDED" }

// JobClient is what an app driver uses to run jobs: on the embedded local
// cluster or against a running JobTracker.
type JobClient interface {
	// RunJob submits the job, reports its progress, and waits for it to end.
	// A job that ends in any state but SUCCEEDED is returned with an error.
	RunJob(ctx context.Context, spec *JobSpec) (*JobResult, error)
	// Conf returns the client's configuration value for key.
	Conf(key string) string
}

// App is a named command a user runs, such as "wordcount" or "terasort": a
// driver that builds and runs one or more jobs.
type App struct {
	Name        string
	Usage       string // argument synopsis, e.g. "<in> <out>"
	Description string
	Run         func(ctx context.Context, jc JobClient, args []string) error
	// Check, if set, checks the arguments as Run does, without running
	// anything or touching any file, and returns Run's usage error for
	// arguments Run would refuse; commands call it before they start a
	// cluster or connect to one.
	Check func(args []string) error
}

// CheckArgs checks args with the app's Check (nil without one).
func (a *App) CheckArgs(args []string) error {
	if a.Check == nil {
		return nil
	}
	return a.Check(args)
}

// UsageError reports wrong app arguments.
type UsageError struct {
	App, Usage, Problem string
}

func (e *UsageError) Error() string {
	return fmt.Sprintf("%s: %s (usage: %s %s)", e.App, e.Problem, e.App, e.Usage)
}

var registry = struct {
	sync.RWMutex
	jobs map[string]*JobDef
	apps map[string]*App
}{jobs: map[string]*JobDef{}, apps: map[string]*App{}}

// RegisterJob adds a job definition to the registry. It panics on a
// duplicate or incomplete definition, since that is a programming error
// found at init time.
func RegisterJob(def *JobDef) {
	if def.Name == "" || def.Mapper == nil || def.Input == nil || def.Output == nil {
		panic(fmt.Sprintf("mr: job definition %q needs a name, a mapper, an input and an output format", def.Name))
	}
	registry.Lock()
	defer registry.Unlock()
	if _, dup := registry.jobs[def.Name]; dup {
		panic("mr: job definition registered twice: " + def.Name)
	}
	registry.jobs[def.Name] = def
}

// LookupJob returns the registered job definition called name.
func LookupJob(name string) (*JobDef, error) {
	registry.RLock()
	defer registry.RUnlock()
	def, ok := registry.jobs[name]
	if !ok {
		return nil, fmt.Errorf("unknown job definition %q (is the app linked into this binary?)", name)
	}
	return def, nil
}

// RegisterApp adds an app to the registry; it panics on a duplicate.
func RegisterApp(app *App) {
	if app.Name == "" || app.Run == nil {
		panic("mr: an app needs a name and a Run function")
	}
	registry.Lock()
	defer registry.Unlock()
	if _, dup := registry.apps[app.Name]; dup {
		panic("mr: app registered twice: " + app.Name)
	}
	registry.apps[app.Name] = app
}

// LookupApp returns the registered app called name.
func LookupApp(name string) (*App, error) {
	registry.RLock()
	defer registry.RUnlock()
	app, ok := registry.apps[name]
	if !ok {
		return nil, fmt.Errorf("unknown app %q (known apps: %v)", name, appNamesLocked())
	}
	return app, nil
}

// Apps lists the registered apps by name.
func Apps() []*App {
	registry.RLock()
	defer registry.RUnlock()
	out := make([]*App, 0, len(registry.apps))
	for _, a := range registry.apps {
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func appNamesLocked() []string {
	names := make([]string, 0, len(registry.apps))
	for n := range registry.apps {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
