package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
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
	// The JobTracker writes the file (to a temporary name, then renamed)
	// after the job's end is visible to clients: wait for it.
	path := filepath.Join(c.dir, "history", id+".jsonl")
	waitFor(c.t, "the history of "+id, 20*time.Second, func() bool {
		_, err := os.Stat(path)
		return err == nil
	})
	data, err := os.ReadFile(path)
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
			if tc.policy == "tyrex-static" {
				skipUnderRace(t, "the fifo and fair cases (the policies are pure code; the race-built run checks the driver around them)")
			}
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

// TestE2EMinEDFWCReclaimsSlots: under minedf-wc a job without a deadline
// takes every map slot as spare slots (work conservation); when a job
// with a deadline and a profile (from an earlier run of the same name)
// arrives and no slot would free in time (the filler's tasks have no
// profile, so no end is in sight), the policy kills the filler's spare
// map tasks: the deadline job gets its slots at once and meets its
// deadline, and the filler's killed maps run again so that it too
// succeeds with all its output.
func TestE2EMinEDFWCReclaimsSlots(t *testing.T) {
	c := startCluster(t, []trackerSpec{{"t1", 2, 1}}, "scheduler.policy=minedf-wc")
	dir := t.TempDir()
	// The profile run: the job's name is what later runs are matched by.
	c.wait(c.submit(sleepSpec("urgent", filepath.Join(dir, "profile"), 2, 300)))

	filler := c.submit(sleepSpec("filler", filepath.Join(dir, "filler"), 6, 3000))
	waitFor(t, "the filler to take both map slots", 20*time.Second, func() bool { return c.status(filler).Maps.Running == 2 })
	urgentSpec := sleepSpec("urgent", filepath.Join(dir, "urgent"), 2, 300)
	const deadline = 8.0
	urgentSpec.DeadlineSeconds = deadline
	urgent := c.submit(urgentSpec)
	if info := c.status(urgent).SchedulingInfo; !strings.Contains(info, "deadline") {
		t.Errorf("scheduling info of the deadline job does not show its deadline: %q", info)
	}
	ur := c.wait(urgent)
	fr := c.wait(filler)
	if ur.State != "SUCCEEDED" || fr.State != "SUCCEEDED" {
		t.Fatalf("deadline job ended %s (%s), filler %s (%s)", ur.State, ur.Error, fr.State, fr.Error)
	}

	uh, fh := c.history(urgent), c.history(filler)
	if took := uh.Job.Finish.Sub(uh.Job.Submit).Seconds(); took > deadline {
		t.Errorf("deadline job took %.1f s, deadline %.0f s", took, deadline)
	}
	killed := 0
	var lastFillerStart time.Time
	for _, a := range fh.Attempts {
		if a.TaskType != "m" {
			continue
		}
		if a.State == "KILLED" {
			killed++
		}
		if a.Start.After(lastFillerStart) {
			lastFillerStart = a.Start
		}
	}
	if killed == 0 {
		t.Errorf("no map attempt of the filler was killed; want its spare tasks reclaimed")
	}
	if got := fr.Counters.Get(mr.JobCounterGroup, mr.NumKilledMaps); got != int64(killed) {
		t.Errorf("filler NUM_KILLED_MAPS = %d, history has %d killed map attempts", got, killed)
	}
	if got := fr.Counters.Get(mr.JobCounterGroup, mr.NumFailedMaps); got != 0 {
		t.Errorf("filler NUM_FAILED_MAPS = %d, want 0 (kills are not failures)", got)
	}
	_, urgentLast := mapStarts(uh)
	if !urgentLast.Before(lastFillerStart) {
		t.Errorf("deadline job's last map started at %s, after the filler's last (%s): it waited for the filler",
			urgentLast.Format("15:04:05.000"), lastFillerStart.Format("15:04:05.000"))
	}
	done := map[int]bool{}
	for _, a := range fh.Attempts {
		if a.TaskType == "m" && a.State == "SUCCEEDED" {
			done[a.Task] = true
		}
	}
	if len(done) != 6 {
		t.Errorf("filler maps succeeded: %v, want all 6", done)
	}
}

// TestE2EFairPreemption: under fair with preemption on, a filler in pool
// etl holds both map slots; a job of pool prod (minimum share 2 maps,
// min-share preemption timeout 2 s) arrives and gets no slot as the
// filler's maps are long. Past the timeout the fair policy kills the
// filler's two youngest maps: prod's maps start within the timeout plus
// a heartbeat or two, and the filler's killed maps run again so that it
// succeeds too, with kills counted as kills, not failures.
func TestE2EFairPreemption(t *testing.T) {
	skipUnderRace(t, "TestE2EMinEDFWCReclaimsSlots (the same reclaim and kill path of the JobTracker)")
	const timeout = 2 * time.Second
	c := startCluster(t, []trackerSpec{{"t1", 2, 1}}, "scheduler.policy=fair", "scheduler.fair.preemption=true",
		"scheduler.fair.pools=etl,prod:1:2:0:"+timeout.String(), "scheduler.fair.preemption-interval=1s")
	dir := t.TempDir()
	fillerSpec := sleepSpec("filler", filepath.Join(dir, "filler"), 4, 4000)
	fillerSpec.Pool = "etl"
	filler := c.submit(fillerSpec)
	waitFor(t, "the filler to take both map slots", 20*time.Second, func() bool { return c.status(filler).Maps.Running == 2 })
	prodSpec := sleepSpec("prod", filepath.Join(dir, "prod"), 2, 300)
	prodSpec.Pool = "prod"
	prod := c.submit(prodSpec)
	pr := c.wait(prod)
	fr := c.wait(filler)
	if pr.State != "SUCCEEDED" || fr.State != "SUCCEEDED" {
		t.Fatalf("prod ended %s (%s), filler %s (%s)", pr.State, pr.Error, fr.State, fr.Error)
	}
	ph, fh := c.history(prod), c.history(filler)
	first, last := mapStarts(ph)
	// The heartbeat is 300 ms; a killed child's slot is reported free at
	// once (out-of-band heartbeat). Allow two heartbeats and a launch.
	if waited := last.Sub(ph.Job.Submit); waited < timeout || waited > timeout+2*time.Second {
		t.Errorf("prod's maps started %v and %v after its submission; want both past the %v timeout and within 2 s of it",
			first.Sub(ph.Job.Submit).Round(time.Millisecond), waited.Round(time.Millisecond), timeout)
	}
	killed := 0
	for _, a := range fh.Attempts {
		if a.TaskType == "m" && a.State == "KILLED" {
			killed++
		}
	}
	if killed != 2 {
		t.Errorf("filler: %d map attempts killed, want the 2 youngest", killed)
	}
	if got := fr.Counters.Get(mr.JobCounterGroup, mr.NumFailedMaps); got != 0 {
		t.Errorf("filler NUM_FAILED_MAPS = %d, want 0 (preemptions are kills)", got)
	}
	if got := fr.Counters.Get(mr.JobCounterGroup, mr.NumKilledMaps); got != int64(killed) {
		t.Errorf("filler NUM_KILLED_MAPS = %d, history has %d killed map attempts", got, killed)
	}
}
