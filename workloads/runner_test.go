package workloads

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"gomr/mr"
	"gomr/mr/fs"
	"gomr/mrpb"
)

// fakeClient runs no job: it records one per RunJob (the fake apps below do
// their work in this process), and lists two trackers.
type fakeClient struct {
	mu sync.Mutex
	n  int
}

func (c *fakeClient) RunJob(_ context.Context, spec *mr.JobSpec) (*mr.JobResult, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
	return &mr.JobResult{ID: fmt.Sprintf("job_fake_%04d", c.n), State: "SUCCEEDED", Counters: mr.CounterSet{}}, nil
}
func (c *fakeClient) Conf(string) string { return "" }
func (c *fakeClient) Trackers(context.Context) ([]*mrpb.TrackerStatus, error) {
	return []*mrpb.TrackerStatus{{Name: "a"}, {Name: "b"}}, nil
}
func (c *fakeClient) History(_ context.Context, id string) ([]byte, error) {
	return []byte(`{"type":"job","job_id":"` + id + `"}` + "\n"), nil
}
func (c *fakeClient) SetOut(io.Writer) {}

// unsorted makes the fake sort app write its output out of order.
var unsorted bool

// fakeApps stand for the apps of another branch, with their exact
// arguments: each checks them as the real app would, records a job and
// writes plausible output, so that the workloads' argument lists, checks
// and report lines are tested before the apps are merged. Registered only
// where no real app of the name is linked.
var fakeApps = map[string]func(ctx context.Context, jc mr.JobClient, args []string) error{
	"randomtext": func(ctx context.Context, jc mr.JobClient, args []string) error {
		if len(args) != 2 {
			return fmt.Errorf("randomtext <bytes> <out>: got %q", args)
		}
		n, err := strconv.ParseInt(args[0], 10, 64)
		if err != nil {
			return err
		}
		jc.RunJob(ctx, &mr.JobSpec{Name: "randomtext"})
		_, err = WriteRandomText(args[1], n, 2, 5)
		return err
	},
	"sort": func(ctx context.Context, jc mr.JobClient, args []string) error {
		if len(args) != 2 {
			return fmt.Errorf("sort <in> <out>: got %q", args)
		}
		var lines []string
		if err := eachLine(args[0], func(_ string, l []byte) error { lines = append(lines, string(l)); return nil }); err != nil {
			return err
		}
		sort.Strings(lines)
		if unsorted {
			lines[0], lines[len(lines)-1] = lines[len(lines)-1], lines[0]
		}
		jc.RunJob(ctx, &mr.JobSpec{Name: "sort"})
		return writeFile(fs.Join(args[1], "part-r-00000"), strings.Join(lines, "\n")+"\n")
	},
	"dfsio": func(ctx context.Context, jc mr.JobClient, args []string) error {
		if len(args) == 0 || (args[0] != "-write" && args[0] != "-read") {
			return fmt.Errorf("dfsio -write|-read ...: got %q", args)
		}
		fl := flag.NewFlagSet("dfsio", flag.ContinueOnError)
		files := fl.Int("files", 4, "")
		size := fl.Int64("size", 1<<20, "")
		if err := fl.Parse(args[1:]); err != nil || fl.NArg() != 2 {
			return fmt.Errorf("dfsio %s [-files N] [-size BYTES] <dir> <result>: got %q (%v)", args[0], args, err)
		}
		dir, result := fl.Arg(0), fl.Arg(1)
		for i := 0; i < *files; i++ {
			p := fs.Join(dir, fmt.Sprintf("io_file_%d", i))
			if args[0] == "-write" {
				if err := writeFile(p, strings.Repeat("x", int(*size))); err != nil {
					return err
				}
			} else if fi, err := os.Stat(p); err != nil || fi.Size() != *size {
				return fmt.Errorf("dfsio -read: %s: %v", p, err)
			}
		}
		jc.RunJob(ctx, &mr.JobSpec{Name: "dfsio"})
		return writeFile(result, fmt.Sprintf("----- TestDFSIO ----- : %s\n       Number of files: %d\nTotal MBytes processed: %d\n     Throughput mb/sec: 100\n",
			args[0][1:], *files, int64(*files)**size>>20))
	},
	"webgraph": func(ctx context.Context, jc mr.JobClient, args []string) error {
		if len(args) != 2 {
			return fmt.Errorf("webgraph <pages> <out>: got %q", args)
		}
		n, err := strconv.Atoi(args[0])
		if err != nil {
			return err
		}
		var b strings.Builder
		for i := 0; i < n; i++ {
			fmt.Fprintf(&b, "%d\t%d\n", i, (i+1)%n)
		}
		jc.RunJob(ctx, &mr.JobSpec{Name: "webgraph"})
		return writeFile(fs.Join(args[1], "part-m-00000"), b.String())
	},
	"pagerank": func(ctx context.Context, jc mr.JobClient, args []string) error {
		if len(args) != 3 {
			return fmt.Errorf("pagerank <graph> <out> <iterations>: got %q", args)
		}
		if _, err := DirSize(args[0]); err != nil {
			return err
		}
		it, err := strconv.Atoi(args[2])
		if err != nil {
			return err
		}
		for i := 0; i < it; i++ {
			jc.RunJob(ctx, &mr.JobSpec{Name: "pagerank"})
		}
		return writeFile(fs.Join(args[1], "part-r-00000"), "0\t1.0\n")
	},
	"kmeansgen": func(ctx context.Context, jc mr.JobClient, args []string) error {
		if len(args) != 4 {
			return fmt.Errorf("kmeansgen <points> <k> <dims> <out>: got %q", args)
		}
		n, err := strconv.Atoi(args[0])
		if err != nil {
			return err
		}
		dims, err := strconv.Atoi(args[2])
		if err != nil {
			return err
		}
		var b strings.Builder
		for i := 0; i < n; i++ {
			b.WriteString(strings.TrimSpace(strings.Repeat(" 1.5", dims)) + "\n")
		}
		jc.RunJob(ctx, &mr.JobSpec{Name: "kmeansgen"})
		return writeFile(fs.Join(args[3], "part-m-00000"), b.String())
	},
	"kmeans": func(ctx context.Context, jc mr.JobClient, args []string) error {
		if len(args) != 4 {
			return fmt.Errorf("kmeans <points> <out> <k> <iterations>: got %q", args)
		}
		if _, err := strconv.Atoi(args[2]); err != nil {
			return err
		}
		jc.RunJob(ctx, &mr.JobSpec{Name: "kmeans"})
		return writeFile(fs.Join(args[1], "part-r-00000"), "0\t1.5 1.5 1.5\n")
	},
}

// registered tells which fake apps this test binary registered.
var registered = map[string]bool{}

func init() {
	for name, run := range fakeApps {
		if _, err := mr.LookupApp(name); err == nil {
			continue // the real app is linked
		}
		mr.RegisterApp(&mr.App{Name: name, Run: run})
		registered[name] = true
	}
}

func writeFile(path, text string) error {
	fsys, err := fs.Resolve(path)
	if err != nil {
		return err
	}
	w, err := fsys.Create(path)
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(w)
	bw.WriteString(text)
	if err := bw.Flush(); err != nil {
		w.Close()
		return err
	}
	return w.Close()
}

// TestWorkloadsOfOtherApps runs the workloads of the apps of another
// branch on fakes with their exact arguments: prepare, run, check, the
// report lines and the run folder.
func TestWorkloadsOfOtherApps(t *testing.T) {
	dir := t.TempDir()
	c, err := Load("conf", Overrides{Profile: "tiny", Report: filepath.Join(dir, "report", "hibench.report")})
	if err != nil {
		t.Fatal(err)
	}
	c.Global.DataDir = filepath.Join(dir, "data")
	r := &Runner{Config: c, Cluster: Cluster{Client: &fakeClient{}, Embedded: true}, Out: io.Discard}
	ctx := context.Background()
	want := map[string][]string{
		"sort":     {"HadoopSort"},
		"dfsioe":   {"HadoopDfsioe-read", "HadoopDfsioe-write"},
		"pagerank": {"HadoopPagerank"},
		"kmeans":   {"HadoopKmeans"},
	}
	for _, name := range []string{"sort", "dfsioe", "pagerank", "kmeans"} {
		t.Run(name, func(t *testing.T) {
			for _, a := range Lookup(name).Apps {
				if !registered[a] {
					t.Skipf("the real app %s is linked: the end-to-end test runs this workload", a)
				}
			}
			if err := r.Prepare(ctx, name); err != nil {
				t.Fatal(err)
			}
			ms, err := r.Run(ctx, name)
			if err != nil {
				t.Fatal(err)
			}
			if len(ms) != len(want[name]) {
				t.Fatalf("measurements %+v, want %v", ms, want[name])
			}
			for i, m := range ms {
				if m.Type != want[name][i] || m.Bytes <= 0 || m.Duration <= 0 || m.Trackers != 2 {
					t.Errorf("measurement %+v, want type %s, bytes and duration > 0, 2 trackers", m, want[name][i])
				}
			}
			if name == "dfsioe" && ms[0].Bytes != 16<<20 {
				t.Errorf("dfsioe read bytes %d, want 16 files of 1 MB", ms[0].Bytes)
			}
			runs, _ := filepath.Glob(filepath.Join(dir, "report", name, "*", "jobs.txt"))
			if len(runs) != 1 {
				t.Fatalf("run folders: %v", runs)
			}
			if b, _ := os.ReadFile(runs[0]); !strings.Contains(string(b), "job_fake_") {
				t.Errorf("jobs.txt: %q", b)
			}
		})
	}
	unsorted = true
	defer func() { unsorted = false }()
	if registered["sort"] {
		if _, err := r.Run(ctx, "sort"); err == nil || !strings.Contains(err.Error(), "not in total order") {
			t.Errorf("sort run on unsorted output: %v, want the check to fail", err)
		}
	}
	b, err := os.ReadFile(c.Global.Report)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n != 1+5 {
		t.Errorf("report has %d lines, want the header and 5 (none for the failed run):\n%s", n, b)
	}
}
