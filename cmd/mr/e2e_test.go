package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"gomr/jobtracker/jobhistory"
	"gomr/mr"
)

// genText writes a deterministic text of about size bytes: Zipf-distributed
// words separated by every delimiter StringTokenizer knows, with CRLF line
// ends and empty lines mixed in.
func genText(t *testing.T, path string, size int, seed uint64) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	r := rand.New(rand.NewPCG(seed, 1))
	z := rand.NewZipf(r, 1.2, 1, 20000)
	seps := []string{" ", " ", " ", "\t", "  ", "\f", " \r "}
	n := 0
	for n < size {
		words := r.IntN(14)
		for i := 0; i < words; i++ {
			s := fmt.Sprintf("w%d", z.Uint64())
			if i > 0 {
				s = seps[r.IntN(len(seps))] + s
			}
			w.WriteString(s)
			n += len(s)
		}
		end := "\n"
		if r.IntN(5) == 0 {
			end = "\r\n"
		}
		w.WriteString(end)
		n += len(end)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

var (
	bigTextOnce sync.Once
	bigTextDir  string
)

// bigText is a shared ~24 MB input made once per test run.
func bigText(t *testing.T) string {
	bigTextOnce.Do(func() {
		dir, err := os.MkdirTemp("", "gomr-e2e-text-")
		if err != nil {
			t.Fatal(err)
		}
		bigTextDir = dir
		genText(t, filepath.Join(dir, "a.txt"), 16<<20, 1)
		genText(t, filepath.Join(dir, "b.txt"), 8<<20, 2)
	})
	return bigTextDir
}

// countWords is the independent count: split on StringTokenizer's
// delimiters.
func countWords(t *testing.T, dir string) map[string]int {
	t.Helper()
	counts := map[string]int{}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range strings.FieldsFunc(string(data), func(r rune) bool {
			return r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == '\f'
		}) {
			counts[w]++
		}
	}
	return counts
}

// readParts reads every part file of an output directory, in name order,
// and checks _SUCCESS is there and _temporary is not.
func readParts(t *testing.T, out string) []string {
	t.Helper()
	if _, err := os.Stat(filepath.Join(out, "_SUCCESS")); err != nil {
		t.Fatalf("no _SUCCESS in %s", out)
	}
	if _, err := os.Stat(filepath.Join(out, "_temporary")); err == nil {
		t.Fatalf("_temporary left in %s", out)
	}
	parts, _ := filepath.Glob(filepath.Join(out, "part-*"))
	sort.Strings(parts)
	var lines []string
	for _, p := range parts {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
			if l != "" {
				lines = append(lines, l)
			}
		}
	}
	return lines
}

func checkWordCount(t *testing.T, out string, want map[string]int) {
	t.Helper()
	got := map[string]int{}
	for _, l := range readParts(t, out) {
		w, c, ok := strings.Cut(l, "\t")
		if !ok {
			t.Fatalf("bad output line %q", l)
		}
		n, err := strconv.Atoi(c)
		if err != nil {
			t.Fatalf("bad count in %q", l)
		}
		if _, dup := got[w]; dup {
			t.Fatalf("word %q output twice", w)
		}
		got[w] = n
	}
	if len(got) != len(want) {
		t.Fatalf("output has %d words, want %d", len(got), len(want))
	}
	for w, n := range want {
		if got[w] != n {
			t.Fatalf("count of %q = %d, want %d", w, got[w], n)
		}
	}
}

func TestE2EWordCountLocal(t *testing.T) {
	in := bigText(t)
	out := filepath.Join(t.TempDir(), "out")
	text, err := runMR(t, "local", "--trackers", "2",
		"-D", "mapreduce.input.fileinputformat.split.maxsize=4000000",
		"-D", "mapreduce.job.reduces=3",
		"-D", "mapreduce.task.io.sort.mb=2",
		// Exact launch counts below: no speculative attempts (under the
		// race detector a slow child would get one).
		"-D", "mapreduce.map.speculative=false",
		"-D", "mapreduce.reduce.speculative=false",
		"wordcount", in, out)
	if err != nil {
		t.Fatalf("mr local wordcount: %v\n%s", err, text)
	}
	for _, s := range []string{"map 100% reduce 100%", "completed successfully", "Launched map tasks=7", "Launched reduce tasks=3"} {
		if !strings.Contains(text, s) {
			t.Errorf("output lacks %q:\n%s", s, text)
		}
	}
	checkWordCount(t, out, countWords(t, in))
}

func TestE2EGrepLocal(t *testing.T) {
	in := t.TempDir()
	genText(t, filepath.Join(in, "x.txt"), 2<<20, 7)
	out := filepath.Join(t.TempDir(), "out")
	pattern := `w(1[0-9])[0-9]*`
	text, err := runMR(t, "local", "-D", "mapreduce.input.fileinputformat.split.maxsize=500000", "grep", in, out, pattern, "1")
	if err != nil {
		t.Fatalf("mr local grep: %v\n%s", err, text)
	}
	// Independent count of group 1 of every match in every line.
	data, _ := os.ReadFile(filepath.Join(in, "x.txt"))
	re := regexp.MustCompile(pattern)
	counts := map[string]int{}
	for _, line := range strings.Split(string(data), "\n") {
		for _, m := range re.FindAllStringSubmatch(strings.TrimSuffix(line, "\r"), -1) {
			counts[m[1]]++
		}
	}
	type kv struct {
		k string
		v int
	}
	var want []string
	var kvs []kv
	for k, v := range counts {
		kvs = append(kvs, kv{k, v})
	}
	sort.Slice(kvs, func(i, j int) bool {
		if kvs[i].v != kvs[j].v {
			return kvs[i].v > kvs[j].v
		}
		return kvs[i].k < kvs[j].k
	})
	for _, x := range kvs {
		want = append(want, fmt.Sprintf("%d\t%s", x.v, x.k))
	}
	got := readParts(t, out)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("grep output differs:\ngot  %v\nwant %v", got, want)
	}
	if ents, _ := filepath.Glob(filepath.Join(filepath.Dir(out), ".grep-temp-*")); len(ents) != 0 {
		t.Errorf("grep left its temporary directory: %v", ents)
	}
}

func reportValue(t *testing.T, dir, key string) string {
	t.Helper()
	for _, l := range readParts(t, dir) {
		if k, v, ok := strings.Cut(l, "\t"); ok && k == key {
			return v
		}
	}
	t.Fatalf("no %q line in %s", key, dir)
	return ""
}

func TestE2ETeraSortLocal(t *testing.T) {
	dir := t.TempDir()
	gen, sum, sorted, report := filepath.Join(dir, "gen"), filepath.Join(dir, "sum"), filepath.Join(dir, "sorted"), filepath.Join(dir, "report")
	const rows = 1000000
	steps := [][]string{
		{"local", "-D", "mapreduce.job.maps=4", "teragen", strconv.Itoa(rows), gen},
		{"local", "terasum", gen, sum},
		{"local", "-D", "mapreduce.job.reduces=4", "-D", "mapreduce.input.fileinputformat.split.maxsize=25000000", "terasort", gen, sorted},
		{"local", "teravalidate", sorted, report},
	}
	for _, s := range steps {
		if text, err := runMR(t, s...); err != nil {
			t.Fatalf("mr %s: %v\n%s", strings.Join(s, " "), err, text)
		}
	}
	parts, _ := filepath.Glob(filepath.Join(sorted, "part-r-*"))
	if len(parts) != 4 {
		t.Fatalf("terasort wrote %d part files, want 4", len(parts))
	}
	if got := reportValue(t, report, "records"); got != strconv.Itoa(rows) {
		t.Fatalf("teravalidate counted %s records, want %d", got, rows)
	}
	before, after := reportValue(t, sum, "checksum"), reportValue(t, report, "checksum")
	if before != after {
		t.Fatalf("checksum before sort %s, after %s", before, after)
	}
	// The unsorted input must fail validation, naming the misorder.
	text, err := runMR(t, "local", "teravalidate", gen, filepath.Join(dir, "bad"))
	if err == nil || !strings.Contains(strings.ToLower(text), "order") {
		t.Fatalf("teravalidate on unsorted input: err=%v\n%s", err, text)
	}
}

func TestE2EErrors(t *testing.T) {
	dir := t.TempDir()
	existing := filepath.Join(dir, "exists")
	os.MkdirAll(existing, 0o755)
	in := filepath.Join(dir, "in.txt")
	os.WriteFile(in, []byte("a b\n"), 0o644)
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"local", "wordcount", filepath.Join(dir, "missing"), filepath.Join(dir, "o1")}, "input path does not exist: " + filepath.Join(dir, "missing")},
		{[]string{"local", "wordcount", in, existing}, "output directory " + existing + " already exists"},
		{[]string{"local", "nosuchapp", in, filepath.Join(dir, "o2")}, `unknown app "nosuchapp"`},
		{[]string{"local", "-D", "mapreduce.job.reducez=2", "wordcount", in, filepath.Join(dir, "o3")}, `unknown configuration key "mapreduce.job.reducez"`},
		{[]string{"local", "-D", "mapreduce.task.io.sort.mb=lots", "wordcount", in, filepath.Join(dir, "o4")}, `"mapreduce.task.io.sort.mb"`},
		{[]string{"local", "wordcount", in}, "usage"},
	}
	for _, c := range cases {
		text, err := runMR(t, c.args...)
		if err == nil {
			t.Errorf("mr %v succeeded, want an error", c.args)
			continue
		}
		if !strings.Contains(text, c.want) {
			t.Errorf("mr %v: output lacks %q:\n%s", c.args, c.want, text)
		}
	}
}

// submit runs a job on the cluster through the Go client without waiting.
func (c *cluster) submit(spec *mr.JobSpec) string {
	c.t.Helper()
	id, err := c.client.Submit(context.Background(), spec)
	if err != nil {
		c.t.Fatal(err)
	}
	return id
}

func (c *cluster) wait(id string) *mr.JobResult {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, err := c.client.Wait(ctx, id)
	if err != nil {
		c.t.Fatalf("job %s: %v", id, err)
	}
	return res
}

func wordCountSpec(in, out string, reduces int) *mr.JobSpec {
	return &mr.JobSpec{Name: "wordcount", Def: "wordcount", Inputs: []string{in}, Output: out, NumReduces: reduces}
}

func TestE2ECountersExact(t *testing.T) {
	c := startCluster(t, []trackerSpec{{"t1", 2, 1}})
	in := t.TempDir()
	os.WriteFile(filepath.Join(in, "1.txt"), []byte("the cat\tthe hat\r\n\nthe end\n"), 0o644)
	os.WriteFile(filepath.Join(in, "2.txt"), []byte("a cat a\fdog\n"), 0o644)
	out := filepath.Join(t.TempDir(), "out")
	res := c.wait(c.submit(wordCountSpec(in, out, 1)))
	// The tracker is this build: it registered with the JobTracker's
	// defaults digest, so launches carried only the non-default keys.
	if !c.logHas("jobtracker", "tracker joined") || c.logHas("jobtracker", "other configuration defaults") {
		t.Errorf("the JobTracker's log does not show t1 joining with the same configuration defaults")
	}
	// Words: the cat the hat the end | a cat a dog: 10 tokens, 7 distinct
	// overall; per map after the combiner: map 1 has 4 distinct (the cat
	// hat end), map 2 has 3 (a cat dog).
	want := []struct {
		group, name string
		v           int64
	}{
		{mr.TaskCounterGroup, mr.MapInputRecords, 4},
		{mr.TaskCounterGroup, mr.MapOutputRecords, 10},
		{mr.TaskCounterGroup, mr.CombineInputRecords, 10},
		{mr.TaskCounterGroup, mr.CombineOutputRecords, 7},
		{mr.TaskCounterGroup, mr.SpilledRecords, 7},
		{mr.TaskCounterGroup, mr.ReduceInputRecords, 7},
		{mr.TaskCounterGroup, mr.ReduceInputGroups, 6},
		{mr.TaskCounterGroup, mr.ReduceOutputRecords, 6},
		{mr.TaskCounterGroup, mr.ShuffledMaps, 2},
		{mr.TaskCounterGroup, mr.FailedShuffle, 0},
		{mr.JobCounterGroup, mr.TotalLaunchedMaps, 2},
		{mr.JobCounterGroup, mr.TotalLaunchedReduces, 1},
		{mr.JobCounterGroup, mr.NumFailedMaps, 0},
		{mr.FileSystemCounterGroup, mr.FileBytesRead, 26 + 12},
		{mr.FileInputFormatCounterGroup, mr.BytesRead, 26 + 12},
	}
	for _, w := range want {
		if got := res.Counters.Get(w.group, w.name); got != w.v {
			t.Errorf("%s = %d, want %d", w.name, got, w.v)
		}
	}
	// MAP_OUTPUT_BYTES: key bytes plus a one-byte count per record.
	if got := res.Counters.Get(mr.TaskCounterGroup, mr.MapOutputBytes); got != int64(len("thecatthehattheendacatadog")+10) {
		t.Errorf("MAP_OUTPUT_BYTES = %d", got)
	}
	if m, s := res.Counters.Get(mr.TaskCounterGroup, mr.MapOutputMaterializedBytes), res.Counters.Get(mr.TaskCounterGroup, mr.ReduceShuffleBytes); m != s || m == 0 {
		t.Errorf("MAP_OUTPUT_MATERIALIZED_BYTES %d != REDUCE_SHUFFLE_BYTES %d", m, s)
	}
	outBytes := 0
	for _, l := range readParts(t, out) {
		outBytes += len(l) + 1
	}
	if got := res.Counters.Get(mr.FileSystemCounterGroup, mr.FileBytesWritten); got != int64(outBytes) {
		t.Errorf("FILE_BYTES_WRITTEN = %d, want %d", got, outBytes)
	}
	if got := res.Counters.Get(mr.FileOutputFormatCounterGroup, mr.BytesWritten); got != int64(outBytes) {
		t.Errorf("File Output Format Counters BYTES_WRITTEN = %d, want %d", got, outBytes)
	}
	// The resource counters, summed over the three tasks as in Hadoop.
	for _, name := range []string{mr.PhysicalMemoryBytes, mr.VirtualMemoryBytes, mr.CommittedHeapBytes} {
		if got := res.Counters.Get(mr.TaskCounterGroup, name); got <= 0 {
			t.Errorf("%s = %d, want > 0", name, got)
		}
	}
	if _, ok := res.Counters[mr.TaskCounterGroup][mr.GCTimeMillis]; !ok {
		t.Errorf("no %s counter", mr.GCTimeMillis)
	}
	checkWordCount(t, out, map[string]int{"the": 3, "cat": 2, "hat": 1, "end": 1, "a": 2, "dog": 1})

	// The job's history has every attempt, and the simulator replays it.
	rec := c.history(res.ID)
	hist := filepath.Join(c.dir, "history", res.ID+".jsonl")
	if rec.Job.State != "SUCCEEDED" || len(rec.Attempts) != 3 || rec.Job.Counters.Get(mr.TaskCounterGroup, mr.MapInputRecords) != 4 {
		t.Fatalf("history: job %+v, %d attempts", rec.Job, len(rec.Attempts))
	}
	text, err := runMR(t, "sim", "--policy", "fifo", "--workload", hist, "--json")
	if err != nil {
		t.Fatalf("mr sim on the job history: %v\n%s", err, text)
	}
	var simOut struct {
		Policies []struct {
			Policy string `json:"policy"`
			Jobs   int    `json:"jobs"`
		} `json:"policies"`
	}
	if err := json.Unmarshal([]byte(text[strings.Index(text, "{"):]), &simOut); err != nil || len(simOut.Policies) != 1 || simOut.Policies[0].Jobs != 1 {
		t.Fatalf("mr sim --json on the history: %v\n%s", err, text)
	}
}

// spillsOf lists the spill index files of a job's attempts on a tracker.
func (c *cluster) spillsOf(tracker, jobID, attemptGlob string) []string {
	m, _ := filepath.Glob(filepath.Join(c.dir, "local", tracker, "jobs", jobID, attemptGlob, "spills", "spill*.index"))
	return m
}

func TestE2EChildKilledMidMap(t *testing.T) {
	in := bigText(t)
	c := startCluster(t, []trackerSpec{{"t1", 2, 1}, {"t2", 2, 1}},
		"mapreduce.task.io.sort.mb=1", "mapreduce.input.fileinputformat.split.maxsize=12000000")
	out := filepath.Join(t.TempDir(), "out")
	id := c.submit(wordCountSpec(in, out, 2))
	// Kill map 0's first attempt once it has announced a spill.
	att := "attempt_" + strings.TrimPrefix(id, "job_") + "_m_000000_0"
	waitFor(t, "a spill of "+att, time.Minute, func() bool {
		return len(c.spillsOf("t1", id, att))+len(c.spillsOf("t2", id, att)) > 0
	})
	pid := childPID(att)
	if pid == 0 {
		t.Fatalf("no child process for %s", att)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	res := c.wait(id)
	maps := c.status(id).Maps.Total
	if got := res.Counters.Get(mr.JobCounterGroup, mr.NumFailedMaps); got != 1 {
		t.Errorf("NUM_FAILED_MAPS = %d, want 1", got)
	}
	if got := res.Counters.Get(mr.JobCounterGroup, mr.TotalLaunchedMaps); got != int64(maps)+1 {
		t.Errorf("TOTAL_LAUNCHED_MAPS = %d, want %d", got, maps+1)
	}
	checkWordCount(t, out, countWords(t, in))
}

func TestE2ELostTracker(t *testing.T) {
	in := bigText(t)
	c := startCluster(t, []trackerSpec{{"t1", 2, 1}, {"t2", 2, 1}},
		"mapreduce.jobtracker.expire.trackers.interval=1500",
		"mapreduce.job.reduce.slowstart.completedmaps=1",
		"mapreduce.reduce.shuffle.retry.delay.ms=20",
		"mapreduce.input.fileinputformat.split.maxsize=4000000")
	out := filepath.Join(t.TempDir(), "out")
	id := c.submit(wordCountSpec(in, out, 2))
	waitFor(t, "every map to finish", 2*time.Minute, func() bool {
		st := c.status(id)
		return st.Maps.Succeeded == st.Maps.Total
	})
	c.kill("t1")
	res := c.wait(id)
	if res.Counters.Get(mr.JobCounterGroup, mr.TotalLaunchedMaps) <= int64(c.status(id).Maps.Total) {
		t.Errorf("no map was re-run after its tracker was lost: %v", res.Counters[mr.JobCounterGroup])
	}
	checkWordCount(t, out, countWords(t, in))
	// The job may finish on fetch-failure reports before the tracker
	// expires; the JobTracker must still declare it lost.
	waitFor(t, "the jobtracker to declare t1 lost", 10*time.Second, func() bool {
		jtLog, _ := os.ReadFile(filepath.Join(c.dir, "jobtracker.log"))
		return strings.Contains(string(jtLog), `msg="lost tracker" component=jobtracker tracker=t1`)
	})
}

func TestE2EShuffleAuthAndCorruptSpill(t *testing.T) {
	// t1 runs the maps; no tracker has a reduce slot until the spill has
	// been corrupted, then t2 joins with one.
	c := startCluster(t, []trackerSpec{{"t1", 2, 0}}, "mapreduce.reduce.shuffle.retry.delay.ms=20")
	in := t.TempDir()
	genText(t, filepath.Join(in, "x.txt"), 1<<20, 3)
	out := filepath.Join(t.TempDir(), "out")
	id := c.submit(wordCountSpec(in, out, 1))
	waitFor(t, "the map to finish", time.Minute, func() bool { return c.status(id).Maps.Succeeded == 1 })
	att := "attempt_" + strings.TrimPrefix(id, "job_") + "_m_000000_0"

	// Unauthenticated and forged requests are refused.
	url := fmt.Sprintf("http://%s/mapOutput?job=%s&attempt=%s&spill=0&reduce=0", c.trackerShuffleAddr("t1"), id, att)
	for _, hash := range []string{"", "Zm9yZ2VkLWhhc2gtdmFsdWUtdGhhdC1pcy1ub3QtcmlnaHQ="} {
		req, _ := http.NewRequest("GET", url, nil)
		if hash != "" {
			req.Header.Set("X-MR-Shuffle-Hash", hash)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("shuffle request with hash %q: status %d, want 401", hash, resp.StatusCode)
		}
	}

	// Flip one byte in the middle of the spill's data.
	data := filepath.Join(c.dir, "local", "t1", "jobs", id, att, "spills", "spill00000.out")
	b, err := os.ReadFile(data)
	if err != nil || len(b) < 100 {
		t.Fatalf("spill data %s: %v (%d bytes)", data, err, len(b))
	}
	b[len(b)/2] ^= 0x40
	if err := os.WriteFile(data, b, 0o644); err != nil {
		t.Fatal(err)
	}
	c.startTracker(trackerSpec{"t2", 0, 1})
	res := c.wait(id)
	if got := res.Counters.Get(mr.TaskCounterGroup, mr.FailedShuffle); got < 1 {
		t.Errorf("FAILED_SHUFFLE = %d, want at least 1", got)
	}
	if got := res.Counters.Get(mr.JobCounterGroup, mr.NumFailedMaps); got != 1 {
		t.Errorf("NUM_FAILED_MAPS = %d, want 1 (the map whose spill was corrupt is re-run)", got)
	}
	checkWordCount(t, out, countWords(t, in))
}

func TestE2EJobCommands(t *testing.T) {
	c := startCluster(t, []trackerSpec{{"t1", 1, 1}}, "scheduler.policy=fair")
	jt := []string{"--jobtracker", c.jtAddr}
	// A long job to look at and kill.
	sub := mrCmd(append([]string{"submit", "--pool", "research"}, append(jt, "sleep", "-m", "1", "-r", "1", "-mt", "60000")...)...)
	var subOut strings.Builder
	sub.Stdout, sub.Stderr = &subOut, &subOut
	if err := sub.Start(); err != nil {
		t.Fatal(err)
	}
	defer sub.Process.Kill()
	var id string
	waitFor(t, "the job to be listed", 20*time.Second, func() bool {
		text, _ := runMR(t, append([]string{"job"}, append(jt, "-list")...)...)
		if m := regexp.MustCompile(`job_\d+_\d+`).FindString(text); m != "" && strings.Contains(text, "RUNNING") && strings.Contains(text, "research") {
			id = m
			return true
		}
		return false
	})
	text, err := runMR(t, append([]string{"job"}, append(jt, "-status", id)...)...)
	if err != nil || !strings.Contains(text, "State: RUNNING") || !strings.Contains(text, "Maps: total 1") ||
		!strings.Contains(text, "Scheduling: pool research, fair share") {
		t.Fatalf("job -status: %v\n%s", err, text)
	}
	if !regexp.MustCompile(`(?m)^Tracking URL: http://127\.0\.0\.1:[0-9]+/job\?id=` + id + `$`).MatchString(text) {
		t.Errorf("job -status prints no tracking URL:\n%s", text)
	}
	waitFor(t, "the map to launch", 20*time.Second, func() bool {
		text, _ := runMR(t, append([]string{"job"}, append(jt, "-counter", id, mr.JobCounterGroup, mr.TotalLaunchedMaps)...)...)
		return strings.TrimSpace(text) == "1"
	})
	if text, err := runMR(t, append([]string{"job"}, append(jt, "-counter", id, "NoSuchGroup", "X")...)...); err == nil || !strings.Contains(text, `no counter group "NoSuchGroup"`) {
		t.Errorf("job -counter with a bad group: %v\n%s", err, text)
	}
	if text, err := runMR(t, append([]string{"job"}, append(jt, "-kill", id)...)...); err != nil || !strings.Contains(text, "Killed job "+id) {
		t.Fatalf("job -kill: %v\n%s", err, text)
	}
	if err := sub.Wait(); err == nil {
		t.Errorf("mr submit of a killed job exited 0:\n%s", subOut.String())
	}
	if !strings.Contains(subOut.String(), "KILLED") {
		t.Errorf("mr submit did not report the kill:\n%s", subOut.String())
	}
	text, err = runMR(t, append([]string{"job"}, append(jt, "-history", id)...)...)
	if err != nil {
		t.Fatalf("job -history: %v\n%s", err, text)
	}
	rec, err := jobhistory.Parse([]byte(text))
	if err != nil {
		t.Fatalf("history does not parse: %v\n%s", err, text)
	}
	if rec.Job.State != "KILLED" || rec.Job.Maps != 1 || len(rec.Attempts) < 1 {
		js, _ := json.Marshal(rec)
		t.Fatalf("history record: %s", js)
	}
}

func TestE2EAttemptsExhausted(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	for _, c := range []struct {
		flag, task, failed string
		attempts           int
	}{
		{"-failMappers", "_m_000000", mr.NumFailedMaps, 3},
		{"-failReducers", "_r_000000", mr.NumFailedReduces, 2},
	} {
		text, err := runMR(t, "local", "-D", "mapreduce.map.maxattempts=3", "-D", "mapreduce.reduce.maxattempts=2",
			"fail", c.flag, "-o", out+c.task)
		if err == nil {
			t.Fatalf("fail %s succeeded:\n%s", c.flag, text)
		}
		want := fmt.Sprintf("failed %d times; last error: ", c.attempts)
		for _, s := range []string{"FAILED", c.task, want, "intentional failure (fail job)", fmt.Sprintf("%s=%d", mr.CounterDisplayName(mr.JobCounterGroup, c.failed), c.attempts)} {
			if !strings.Contains(text, s) {
				t.Errorf("fail %s: output lacks %q:\n%s", c.flag, s, text)
			}
		}
		if _, err := os.Stat(filepath.Join(out+c.task, "_SUCCESS")); err == nil {
			t.Errorf("a failed job wrote _SUCCESS")
		}
	}
}

func TestE2ERelativePaths(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "in.txt"), []byte("x y x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := mrCmd("local", "wordcount", "in.txt", "out")
	cmd.Dir = dir
	text, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("mr local with relative paths: %v\n%s", err, text)
	}
	checkWordCount(t, filepath.Join(dir, "out"), map[string]int{"x": 2, "y": 1})
}
