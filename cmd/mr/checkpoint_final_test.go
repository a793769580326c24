package main

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// genLongLines writes lines of words, each line long, so that a map reads
// fewer than 1024 records (its record loop then has no quiet point of its
// own before the last record) yet does some work on each.
func genLongLines(t *testing.T, path string, lines, wordsPerLine int, seed uint64) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	r := rand.New(rand.NewPCG(seed, 2))
	z := rand.NewZipf(r, 1.2, 1, 20000)
	for range lines {
		for i := range wordsPerLine {
			if i > 0 {
				w.WriteByte(' ')
			}
			fmt.Fprintf(w, "w%d", z.Uint64())
		}
		w.WriteByte('\n')
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// A map ordered checkpointed once its input is read (progress 2/3, the
// straggler injector's sleep for its last records) is dumped at the quiet
// point at the end of its record loop, not killed; the restored copy does
// the final sort and spill, and the output is byte for byte that of an
// undisturbed run. The map reads 900 records, fewer than the 1024 between
// the record loop's own quiet points, so the end of the loop is its only
// one.
func TestE2ECheckpointAtEndOfInput(t *testing.T) {
	path := criuPath(t)
	c := startCluster(t, []trackerSpec{{"slow", 1, 0}, {"fast", 0, 2}},
		"mapreduce.tasktracker.criu.path="+path)
	in := t.TempDir()
	genLongLines(t, filepath.Join(in, "a.txt"), 900, 120, 15)
	out := filepath.Join(t.TempDir(), "out")
	spec := wordCountSpec(in, out, 2)
	spec.Conf = map[string]string{
		"mapreduce.task.progress.report.interval": "100",
		"mapreduce.task.io.sort.mb":               "1",
	}
	for k, v := range stragglerDefines {
		spec.Conf[k] = v
	}
	id := c.submit(spec)
	victim := c.runningMapAt(id, 0.6)
	if p := c.status(id).MapProgress; p >= 0.99 {
		t.Fatalf("map progress %v: past its final sort before the order", p)
	}
	resp, err := c.client.CheckpointTask(context.Background(), victim, false)
	if err != nil || !resp.Ordered {
		t.Fatalf("checkpoint order: %v %v", resp, err)
	}
	res := c.wait(id)
	checkResumed(t, c, id, victim, res, " (KILLED or SUCCEEDED: no quiet point answered the order)")
	checkWordCount(t, out, countWords(t, in))
	checkSameAsPlainRun(t, c, spec, out)
	if o, d := c.logTimes("jobtracker", "checkpoint ordered"), c.logTimes("jobtracker", `msg="attempt checkpointed"`); len(o) == 1 && len(d) == 1 {
		t.Logf("order to slot freed: %v", d[0].Sub(o[0]))
	}
}
