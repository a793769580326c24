package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"gomr/mr"
	"gomr/workloads"
)

// workloadConfDir copies workloads/conf into a temporary directory with
// gomr.data.dir pointing into it, applying edits (old -> new line text).
func workloadConfDir(t *testing.T, edits map[string]string) (confDir, dataDir string) {
	t.Helper()
	dir := t.TempDir()
	confDir, dataDir = filepath.Join(dir, "conf"), filepath.Join(dir, "data")
	if err := os.MkdirAll(confDir, 0o755); err != nil {
		t.Fatal(err)
	}
	src := filepath.Join("..", "..", "workloads", "conf")
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		data, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		text := string(data)
		if e.Name() == workloads.GlobalFile {
			text = replaceConfLine(t, text, "gomr.data.dir", "gomr.data.dir "+dataDir)
		}
		for old, repl := range edits {
			if strings.HasPrefix(old, e.Name()+":") {
				text = replaceConfLine(t, text, strings.TrimPrefix(old, e.Name()+":"), repl)
			}
		}
		if err := os.WriteFile(filepath.Join(confDir, e.Name()), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return confDir, dataDir
}

// replaceConfLine replaces the line setting key.
func replaceConfLine(t *testing.T, text, key, line string) string {
	t.Helper()
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		if f := strings.Fields(l); len(f) > 0 && f[0] == key {
			lines[i] = line
			return strings.Join(lines, "\n")
		}
	}
	t.Fatalf("no line sets %s", key)
	return ""
}

// TestE2EWorkloadSuiteTiny runs mr workload suite at the tiny profile on
// an embedded cluster: every workload whose apps are built in is prepared,
// run and checked; the others are skipped with a line naming the missing
// apps. The report has HiBench's header and one line per run in HiBench's
// format, and each run has its folder.
func TestE2EWorkloadSuiteTiny(t *testing.T) {
	confDir, _ := workloadConfDir(t, nil)
	report := filepath.Join(t.TempDir(), "report", "hibench.report")
	start := time.Now()
	out, err := runMREnv(t, 3*time.Minute, nil, "workload", "suite", "--profile", "tiny", "--conf", confDir, "--report", report)
	t.Logf("mr workload suite took %v", time.Since(start))
	if err != nil {
		t.Fatalf("mr workload suite: %v\n%s", err, out)
	}
	// The report lines each workload yields, by workload.
	types := map[string][]string{
		"wordcount": {"HadoopWordcount"}, "grep": {"HadoopGrep"}, "sort": {"HadoopSort"},
		"terasort": {"HadoopTerasort"}, "sleep": {"HadoopSleep"},
		"dfsioe":   {"HadoopDfsioe-read", "HadoopDfsioe-write"},
		"pagerank": {"HadoopPagerank"}, "kmeans": {"HadoopKmeans"},
	}
	var want []string
	ran := map[string]bool{}
	for _, name := range workloads.Names() {
		w := workloads.Lookup(name)
		if missing := w.MissingApps(); len(missing) > 0 {
			if !strings.Contains(out, "skip "+name+": workload "+name+": app "+missing[0]) ||
				!strings.Contains(out, "not built into this mr") {
				t.Errorf("the output does not say that %s is skipped for want of app %s:\n%s", name, missing[0], out)
			}
			continue
		}
		ran[name] = true
		want = append(want, types[name]...)
	}
	for _, core := range []string{"wordcount", "grep", "terasort", "sleep"} {
		if !ran[core] {
			t.Errorf("workload %s did not run: its apps are built in", core)
		}
	}
	data, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	header := "Type         Date       Time     Input_data_size      Duration(s)          Throughput(bytes/s)  Throughput/node     "
	if lines[0] != header {
		t.Errorf("report header\n%q, want HiBench's\n%q", lines[0], header)
	}
	got := map[string]string{}
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		if len(f) != 7 {
			t.Errorf("report line %q has %d columns, want 7", l, len(f))
			continue
		}
		if again := fmt.Sprintf(workloads.ReportFormat, f[0], f[1], f[2], f[3], f[4], f[5], f[6]); again != l+"\n" {
			t.Errorf("report line %q is not in HiBench's format %q", l, workloads.ReportFormat)
		}
		got[f[0]] = l
		if _, err := time.Parse("2006-01-02 15:04:05", f[1]+" "+f[2]); err != nil {
			t.Errorf("report line %q: date and time: %v", l, err)
		}
		size, err1 := strconv.ParseInt(f[3], 10, 64)
		dur, err2 := strconv.ParseFloat(f[4], 64)
		tput, err3 := strconv.ParseInt(f[5], 10, 64)
		node, err4 := strconv.ParseInt(f[6], 10, 64)
		if err1 != nil || err2 != nil || err3 != nil || err4 != nil {
			t.Errorf("report line %q: a number does not parse", l)
			continue
		}
		if !strings.Contains(f[4], ".") || len(f[4])-strings.Index(f[4], ".") != 4 {
			t.Errorf("report line %q: duration %s has not 3 decimals", l, f[4])
		}
		if dur <= 0 {
			t.Errorf("report line %q: duration %g", l, dur)
		}
		if f[0] == "HadoopSleep" {
			continue // no input
		}
		if size <= 0 || tput <= 0 || node <= 0 {
			t.Errorf("report line %q: size, throughput and per node must be positive", l)
		}
		if want := int64(float64(size) / dur); tput < want*99/100 || tput > want*101/100+1 {
			t.Errorf("report line %q: throughput %d, want size/duration = %d", l, tput, want)
		}
		if node != tput/2 {
			t.Errorf("report line %q: per node %d, want throughput / 2 trackers = %d", l, node, tput/2)
		}
	}
	for _, typ := range want {
		if _, ok := got[typ]; !ok {
			t.Errorf("the report has no %s line:\n%s", typ, data)
		}
	}
	if len(got) != len(want) {
		t.Errorf("the report has %d lines, want %d (%v):\n%s", len(got), len(want), want, data)
	}
	if size := strings.Fields(got["HadoopTerasort"])[3]; size != "3200000" {
		t.Errorf("terasort's input is %s bytes, want 32,000 rows of 100 bytes", size)
	}
	// One folder per run, with what HiBench users look for.
	for name := range ran {
		runs, err := filepath.Glob(filepath.Join(filepath.Dir(report), name, "*"))
		if err != nil || len(runs) != 1 {
			t.Errorf("workload %s: %d run folders (%v), want 1", name, len(runs), err)
			continue
		}
		for file, must := range map[string]string{
			"jobs.txt": "job_", "conf.txt": "hibench.scale.profile", "counters.txt": "Counters:",
			"log.txt": "check:", "monitor.html": "uPlot", "monitor.csv": "time,", "report.txt": "Hadoop",
		} {
			b, err := os.ReadFile(filepath.Join(runs[0], file))
			if err != nil {
				t.Errorf("workload %s: %v", name, err)
				continue
			}
			if !strings.Contains(string(b), must) {
				t.Errorf("workload %s: %s lacks %q:\n%.2000s", name, file, must, b)
			}
		}
		hist, _ := filepath.Glob(filepath.Join(runs[0], "history", "job_*.jsonl"))
		if len(hist) == 0 {
			t.Errorf("workload %s: no job history in %s", name, runs[0])
		}
	}
}

// TestE2EWorkloadRefusals: a conf error, an unknown workload and a
// workload whose app is not built in are refused before anything runs,
// with errors naming the problem.
func TestE2EWorkloadRefusals(t *testing.T) {
	confDir, dataDir := workloadConfDir(t, map[string]string{
		"wordcount.conf:hibench.wordcount.small.datasize": "hibench.wordcount.medium.datasize 5",
	})
	report := filepath.Join(t.TempDir(), "hibench.report")
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"workload", "run", "wordcount"}, filepath.Join(confDir, "wordcount.conf") + ":5: key hibench.wordcount.medium.datasize: unknown profile \"medium\""},
		{[]string{"workload", "suite", "--profile", "medium"}, "--profile: key hibench.scale.profile: unknown profile \"medium\""},
	}
	good, _ := workloadConfDir(t, nil)
	cases = append(cases, struct {
		args []string
		want string
	}{[]string{"workload", "prepare", "wordcont", "--conf", good}, "unknown workload \"wordcont\""})
	if _, err := mr.LookupApp("randomtext"); err != nil {
		cases = append(cases, struct {
			args []string
			want string
		}{[]string{"workload", "prepare", "sort", "--conf", good}, "workload sort: app randomtext, app sort are not built into this mr"})
	}
	for _, c := range cases {
		args := append(c.args, "--report", report)
		if !slices.Contains(args, "--conf") {
			args = append(args, "--conf", confDir)
		}
		out, err := runMREnv(t, time.Minute, nil, args...)
		if err == nil || !strings.Contains(out, c.want) {
			t.Errorf("mr %v: %v, want an error containing %q:\n%s", args, err, c.want, out)
		}
		if strings.Contains(out, "job_") {
			t.Errorf("mr %v ran a job before refusing:\n%s", args, out)
		}
	}
	if _, err := os.Stat(report); err == nil {
		t.Errorf("a refused command wrote the report %s", report)
	}
	if _, err := os.Stat(dataDir); err == nil {
		t.Errorf("a refused command wrote data in %s", dataDir)
	}
}

// TestE2EWorkloadOnCluster runs a workload on a running cluster
// (--jobtracker): the report's per-node throughput divides by the
// cluster's trackers, and the monitor samples each TaskTracker process of
// this machine, found by its shuffle port.
func TestE2EWorkloadOnCluster(t *testing.T) {
	c := startCluster(t, []trackerSpec{{"tt1", 2, 2}, {"tt2", 2, 2}})
	if !c.waitJoined(30*time.Second, "tt1", "tt2") {
		t.Fatal("the trackers did not join")
	}
	confDir, _ := workloadConfDir(t, nil)
	report := filepath.Join(t.TempDir(), "hibench.report")
	for _, step := range []string{"prepare", "run"} {
		out, err := runMREnv(t, 2*time.Minute, nil, "workload", step, "wordcount", "--jobtracker", c.jtAddr, "--conf", confDir, "--report", report)
		if err != nil {
			t.Fatalf("mr workload %s wordcount: %v\n%s", step, err, out)
		}
	}
	data, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[1], "HadoopWordcount ") {
		t.Fatalf("report:\n%s", data)
	}
	f := strings.Fields(lines[1])
	tput, _ := strconv.ParseInt(f[5], 10, 64)
	if node, _ := strconv.ParseInt(f[6], 10, 64); tput <= 0 || node != tput/2 {
		t.Errorf("report line %q: per node should be throughput / 2 trackers", lines[1])
	}
	csv, err := filepath.Glob(filepath.Join(filepath.Dir(report), "wordcount", "*", "monitor.csv"))
	if err != nil || len(csv) != 1 {
		t.Fatalf("monitor.csv: %v %v", csv, err)
	}
	b, err := os.ReadFile(csv[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"t1_cpu_pct", "# t0: tt1 (pid ", "# t1: tt2 (pid "} {
		if !strings.Contains(string(b), want) {
			t.Errorf("monitor.csv lacks %q (one series per TaskTracker process):\n%s", want, b)
		}
	}
}
