package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestE2EMemoryBudget runs WordCount on two TaskTrackers with a memory
// budget of 384 MiB each over 2 map and 1 reduce slots: 128 MiB a slot,
// less the child's base of 24 MiB, is a soft memory limit of 104 MiB, which
// holds a sort buffer of at most 64 MiB ((104 - 8) / 1.5). The output must
// be exact; every child must report, from its runtime, the soft limit the
// budget gives it (maps with the default sort buffer lowered to 64 MiB,
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
			if m[1] != "104" || m[2] != "64" || m[3] != "104" {
				t.Errorf("%s: memory limit %s MiB, sort buffer %s MiB, map memory %s MiB; want 104, 64, 104", attempt, m[1], m[2], m[3])
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
	text, err = runMR(t, append(budget, "-D", "mapreduce.task.io.sort.mb=80", "-D", "mapreduce.map.maxattempts=1",
		"wordcount", in, filepath.Join(t.TempDir(), "out2"))...)
	os.RemoveAll(workDir(t, text))
	if err == nil {
		t.Fatalf("a job with a sort buffer of 80 MiB on map slots of 128 MiB succeeded:\n%s", text)
	}
	if !strings.Contains(text, "mapreduce.task.io.sort.mb=80 does not fit this tracker's map slot") {
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
