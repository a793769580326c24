package main

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"gomr/jobtracker/jobhistory"
	"gomr/mr"
)

func sleepSpec(name, out string, maps int, mapMs int) *mr.JobSpec {
	return &mr.JobSpec{Name: name, Def: "sleep", Output: out, NumReduces: 0, Params: map[string]string{
		"rows": strconv.Itoa(maps), "maps": strconv.Itoa(maps),
		"map_sleep_ms": strconv.Itoa(mapMs), "reduce_sleep_ms": "0",
	}}
}

func (c *cluster) history(id string) *jobhistory.Record {
	c.t.Helper()
	data, err := os.ReadFile(filepath.Join(c.dir, "history", id+".jsonl"))
	if err != nil {
		c.t.Fatal(err)
	}
	rec, err := jobhistory.Parse(data)
	if err != nil {
		c.t.Fatal(err)
	}
	return rec
}

// mapStarts returns the first and last start of the job's map attempts.
func mapStarts(rec *jobhistory.Record) (first, last time.Time) {
	for _, a := range rec.Attempts {
		if a.TaskType != "m" {
			continue
		}
		if first.IsZero() || a.Start.Before(first) {
			first = a.Start
		}
		if a.Start.After(last) {
			last = a.Start
		}
	}
	return first, last
}

// TestE2EPolicies runs a long job and, just after it, a one-map short job
// on a tracker with two map slots, under several policies, and checks the
// property each guarantees: FIFO starts the short job only once every map
// of the long one has started; FAIR and TYREX (static timers: the long job
// leaves the first partition once its service passes the timer) start it
// while the long job still has maps waiting.
func TestE2EPolicies(t *testing.T) {
	for _, tc := range []struct {
		policy     string
		defines    []string
		shortFirst bool
	}{
		{"fifo", nil, false},
		{"fair", nil, true},
		{"tyrex-static", []string{"scheduler.tyrex.capacities=0.5,0.5", "scheduler.tyrex.timers=500ms"}, true},
	} {
		t.Run(tc.policy, func(t *testing.T) {
			c := startCluster(t, []trackerSpec{{"t1", 2, 1}}, append([]string{"scheduler.policy=" + tc.policy}, tc.defines...)...)
			dir := t.TempDir()
			long := c.submit(sleepSpec("long", filepath.Join(dir, "long"), 6, 800))
			waitFor(t, "the long job to start", 20*time.Second, func() bool { return c.status(long).Maps.Running > 0 })
			short := c.submit(sleepSpec("short", filepath.Join(dir, "short"), 1, 50))
			c.wait(long)
			c.wait(short)
			_, longLast := mapStarts(c.history(long))
			shortStart, _ := mapStarts(c.history(short))
			if got := shortStart.Before(longLast); got != tc.shortFirst {
				t.Fatalf("%s: short job's map started at %s, long job's last map at %s; want short first = %v",
					tc.policy, shortStart.Format("15:04:05.000"), longLast.Format("15:04:05.000"), tc.shortFirst)
			}
		})
	}
}
