package main

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"gomr/mr"
)

// TestE2EMemoryBudget runs WordCount on two TaskTrackers with a memory
// budget of 384 MiB each over 2 map and 1 reduce slots: 128 MiB a slot,
// less the child's base of 24 MiB, is a soft memory limit of 104 MiB, which
// holds a sort buffer of at most 96 MiB for a map that combines in the
// combining table, as WordCount's does ((104 - 8) / 1.0; 64 MiB for one that
// keeps every record, (104 - 8) / 1.5). The output must
// be exact; every child must report, from its runtime, the soft limit the
// budget gives it (maps with the default sort buffer lowered to 96 MiB,
// reduces with the job's 2048 MiB of reduce memory lowered to 104 MiB, with
// the tracker's warning, and a shuffle buffer of 0.589 of it: (104 - 12) /
// 1.5 MiB). A job whose own sort buffer does not fit fails
// with the budget's error.
func TestE2EMemoryBudget(t *testing.T) {
	in := t.TempDir()
	genText(t, filepath.Join(in, "a.txt"), 6<<20, 7)
	out := filepath.Join(t.TempDir(), "out")
	budget := []string{"local", "--trackers", "2", "--keep",
		"-D", "mapreduce.tasktracker.memory.mb=384",
		"-D", "mapreduce.tasktracker.reduce.tasks.maximum=1",
		"-D", "mapreduce.input.fileinputformat.split.maxsize=2000000",
		"-D", "mapreduce.job.reduces=2"}
	text, err := runMR(t, append(budget, "-D", "mapreduce.reduce.memory.mb=2048", "wordcount", in, out)...)
	work := workDir(t, text)
	if err != nil {
		t.Fatalf("mr local wordcount under a memory budget: %v\n%s", err, text)
	}
	checkWordCount(t, out, countWords(t, in))
	if !strings.Contains(text, "mapreduce.reduce.memory.mb=2048 lowered to 104 MiB") {
		t.Errorf("no warning of the reduce memory lowered to the slot's share:\n%s", text)
	}

	// Each child logs its memory settings, its soft limit read back from
	// the runtime (debug.SetMemoryLimit(-1)).
	logs, _ := filepath.Glob(filepath.Join(work, "local", "*", "*", "*", "attempt_*", "stderr"))
	mapRE := regexp.MustCompile(`msg="task memory" .*share_mib=128 memory_limit_mib=(\d+) sort_mb=(\d+) map_memory_mb=(\d+)`)
	reduceRE := regexp.MustCompile(`msg="task memory" .*share_mib=128 memory_limit_mib=(\d+) reduce_memory_mb=(\d+) shuffle_buffer_percent=([0-9.]+)`)
	maps, reduces := 0, 0
	for _, p := range logs {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		attempt := filepath.Base(filepath.Dir(p))
		switch {
		case strings.Contains(attempt, "_m_"):
			m := mapRE.FindStringSubmatch(string(data))
			if m == nil {
				t.Errorf("%s: no task memory line:\n%s", attempt, data)
				continue
			}
			maps++
			if m[1] != "104" || m[2] != "96" || m[3] != "104" {
				t.Errorf("%s: memory limit %s MiB, sort buffer %s MiB, map memory %s MiB; want 104, 96, 104", attempt, m[1], m[2], m[3])
			}
		case strings.Contains(attempt, "_r_"):
			m := reduceRE.FindStringSubmatch(string(data))
			if m == nil {
				t.Errorf("%s: no task memory line:\n%s", attempt, data)
				continue
			}
			reduces++
			if m[1] != "104" || m[2] != "104" || m[3] != "0.589" {
				t.Errorf("%s: memory limit %s MiB, reduce memory %s MiB, shuffle buffer %s of it; want 104, 104, 0.589", attempt, m[1], m[2], m[3])
			}
		}
	}
	if maps < 3 || reduces != 2 {
		t.Errorf("task memory lines of %d maps and %d reduces, want at least 3 and 2 (logs %v)", maps, reduces, logs)
	}

	// A sort buffer the job sets above what a map slot holds.
	text, err = runMR(t, append(budget, "-D", "mapreduce.task.io.sort.mb=97", "-D", "mapreduce.map.maxattempts=1",
		"wordcount", in, filepath.Join(t.TempDir(), "out2"))...)
	os.RemoveAll(workDir(t, text))
	if err == nil {
		t.Fatalf("a job with a sort buffer of 97 MiB on map slots of 128 MiB succeeded:\n%s", text)
	}
	if !strings.Contains(text, "mapreduce.task.io.sort.mb=97 does not fit this tracker's map slot") {
		t.Errorf("the job's failure does not name the sort buffer that does not fit:\n%s", text)
	}
}

// workDir is the work directory mr local --keep names in its output; the
// test removes it at its end.
func workDir(t *testing.T, out string) string {
	t.Helper()
	m := regexp.MustCompile(`work directory: (\S+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("mr local --keep named no work directory:\n%s", out)
	}
	t.Cleanup(func() { os.RemoveAll(m[1]) })
	return m[1]
}

// TestE2EMemoryBudgetRetryPinsSortBuffer runs a map whose first attempt is
// failed after it announced spills, on a tracker whose memory budget gives
// a map slot another sort buffer than the tracker its retry runs on (tA:
// 40 MiB for one map slot, a soft limit of 16 MiB and a sort buffer of 8;
// tB: 48 MiB, 24 and 16, WordCount's map combining in the combining table;
// a third tracker runs the reduce). Every attempt of
// a map must cut the same spills, so the retry must run with the first
// attempt's sort buffer, pinned by its first announced spill, whichever
// tracker it lands on (the retry avoids the tracker its task failed on);
// with mapreduce.map.maxattempts=2 a retry that cut other spills would be
// failed as non-deterministic and fail the job. Before the pin, it was.
func TestE2EMemoryBudgetRetryPinsSortBuffer(t *testing.T) {
	in := t.TempDir()
	genText(t, filepath.Join(in, "a.txt"), 4<<20, 3)
	c := startClusterProcDefines(t, []trackerSpec{{"tr", 0, 1}},
		map[string][]string{
			"tA": {"mapreduce.tasktracker.memory.mb=40"},
			"tB": {"mapreduce.tasktracker.memory.mb=48"},
		})
	c.startTracker(trackerSpec{"tA", 1, 0})
	c.startTracker(trackerSpec{"tB", 1, 0})
	if !c.waitJoined(20*time.Second, "tr", "tA", "tB") {
		t.Fatal("the trackers did not join")
	}
	spec := wordCountSpec(in, filepath.Join(t.TempDir(), "out"), 1)
	spec.Conf = map[string]string{
		"mapreduce.map.maxattempts": "2",
		// Every map attempt takes 20 times as long as its work (k = e^3),
		// so that the first one is still running when it is failed (at 4
		// times, on an idle machine, it sometimes ended within the 300 ms
		// the test waits after its third spill).
		"straggler.fraction":   "1",
		"straggler.shape":      "0",
		"straggler.location":   "3",
		"straggler.task-types": "map",
		"straggler.work":       "cpu",
	}
	id := c.submit(spec)
	first := "attempt_" + strings.TrimPrefix(id, "job_") + "_m_000000_0"
	retry := "attempt_" + strings.TrimPrefix(id, "job_") + "_m_000000_1"
	// Fail the first attempt once it has written its third spill (each
	// spill is announced before the next one's batch is cut).
	waitFor(t, "the first map attempt's third spill", time.Minute, func() bool {
		idx, _ := filepath.Glob(filepath.Join(c.dir, "local", "*", "jobs", id, first, "spills", "spill*.index"))
		return len(idx) >= 3
	})
	time.Sleep(300 * time.Millisecond) // three heartbeats: its announcements reach the JobTracker
	if _, err := c.client.KillTask(context.Background(), first, true); err != nil {
		t.Fatalf("failing %s: %v", first, err)
	}
	res := c.waitWithin(id, 2*time.Minute)
	checkWordCount(t, spec.Output, countWords(t, in))
	if n := res.Counters.Get(mr.JobCounterGroup, mr.NumFailedMaps); n != 1 {
		t.Errorf("failed maps %d, want 1 (the attempt the test failed)", n)
	}

	// The two attempts ran on different trackers, with one sort buffer.
	memRE := regexp.MustCompile(`msg="task memory" .*share_mib=(\d+) memory_limit_mib=(\d+) sort_mb=(\d+)`)
	mem := map[string][]string{}
	for _, att := range []string{first, retry} {
		lg, err := c.client.TaskLog(context.Background(), att, "stderr")
		if err != nil {
			t.Fatalf("log of %s: %v", att, err)
		}
		m := memRE.FindStringSubmatch(string(lg.Data))
		if m == nil {
			t.Fatalf("%s (on %s): no task memory line:\n%s", att, lg.Tracker, lg.Data)
		}
		mem[lg.Tracker] = m[1:]
		t.Logf("%s on %s: share %s MiB, limit %s MiB, sort buffer %s MiB", att, lg.Tracker, m[1], m[2], m[3])
	}
	if len(mem) != 2 || mem["tA"] == nil || mem["tB"] == nil {
		t.Fatalf("the attempts ran on %v, want one on tA and one on tB", mem)
	}
	if mem["tA"][2] != mem["tB"][2] {
		t.Errorf("sort buffers %s MiB on tA and %s MiB on tB: the retry did not keep the first attempt's", mem["tA"][2], mem["tB"][2])
	}
	// Run on tB first, the pin (16 MiB) does not fit tA's share: its limit
	// is raised to hold it, with the tracker's warning.
	if mem["tA"][2] == "16" && (mem["tA"][1] != "24" || !c.logHas("tA", "pinned at 16 MiB by the task's first announced spill")) {
		t.Errorf("tA ran the retry with a pinned 16 MiB sort buffer at a limit of %s MiB, want 24 and a warning", mem["tA"][1])
	}
}
