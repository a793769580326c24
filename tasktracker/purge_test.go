package tasktracker

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"gomr/mrpb"
	"gomr/shuffle"
	"gomr/spill"
)

// runMap runs map 0 of job j on the tracker to success and returns the
// location of its final spill, as a reduce gets it in its map events.
func runMap(t *testing.T, tr *testTracker, j *testJob) shuffle.SpillLocation {
	t.Helper()
	id := j.attempt("m", 0, 0)
	from := tr.jt.send(j.launch(t, "m", 0, 0))
	_, i := tr.jt.waitBeat(t, from, "reporting "+id+" SUCCEEDED", inState(id, "SUCCEEDED"))
	for _, b := range tr.jt.beatsFrom(from)[:i-from+1] {
		for _, sp := range b.Spills {
			if sp.AttemptId == id && sp.Final {
				seg := sp.Segments[0]
				return shuffle.SpillLocation{JobID: j.id, MapTask: 0, Spill: int(sp.Spill), Final: true, AttemptID: id,
					Host: tr.tt.ShuffleAddress(),
					Segment: spill.SegmentInfo{Offset: seg.Offset, Length: seg.Length, RawLength: seg.RawLength,
						Records: seg.Records, CRC: seg.Crc}}
			}
		}
	}
	t.Fatalf("%s succeeded without announcing its final spill", id)
	return shuffle.SpillLocation{}
}

// fetch fetches reduce 0's segment of the spill at loc with secret, as a
// reduce does, without retries.
func fetch(loc shuffle.SpillLocation, secret []byte) error {
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	_, err := (&shuffle.Fetcher{Secret: secret}).Fetch(ctx, loc, 0)
	return err
}

// waitGone waits until path does not exist.
func waitGone(t *testing.T, path string) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		_, err := os.Stat(path)
		if errors.Is(err, os.ErrNotExist) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still exists %v after the purge (%v)", path, waitTimeout, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestPurgeJob: a purge order for a finished job kills what is left of it
// (reported KILLED, "job is over", its process gone), removes its local
// directory (spills, attempt directories) and forgets its secret, so that
// its map output is served no more; another job's files and output stay.
func TestPurgeJob(t *testing.T) {
	tr := startTracker(t, trackerOpts{maps: 1, reduces: 1})
	ja, jb := newTestJob(t, wordCountDef, 1), newTestJob(t, wordCountDef, 1)
	locA, locB := runMap(t, tr, ja), runMap(t, tr, jb)
	for _, c := range []struct {
		loc    shuffle.SpillLocation
		secret []byte
	}{{locA, ja.secret}, {locB, jb.secret}} {
		if err := fetch(c.loc, c.secret); err != nil {
			t.Fatalf("before the purge: %v", err)
		}
	}
	// A reduce of job A that waits in its shuffle for a second map
	// that will never run.
	ja.maps = 2
	r0 := ja.attempt("r", 0, 0)
	from := tr.jt.send(ja.launch(t, "r", 0, 0))
	tr.jt.waitBeat(t, from, "reporting "+r0+" RUNNING", inState(r0, "RUNNING"))
	pid := tr.waitChild(t, r0)
	if _, err := os.Stat(filepath.Join(tr.attemptDir(ja.id, r0), "shuffle")); err != nil {
		// The reduce has started its shuffle (it made its scratch
		// directory before asking for map events): wait for it.
		deadline := time.Now().Add(waitTimeout)
		for err != nil && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
			_, err = os.Stat(filepath.Join(tr.attemptDir(ja.id, r0), "shuffle"))
		}
		if err != nil {
			t.Fatalf("the reduce did not start its shuffle: %v", err)
		}
	}

	from = tr.jt.send(purgeAction(ja.id))
	b, _ := tr.jt.waitBeat(t, from, "reporting "+r0+" KILLED", inState(r0, "KILLED"))
	if d := attemptIn(b, r0).Diagnostic; d != "job is over" {
		t.Errorf("%s diagnostic %q, want %q", r0, d, "job is over")
	}
	if b.FreeReduceSlots != 1 {
		t.Errorf("after the purge: %d free reduce slots, want 1", b.FreeReduceSlots)
	}
	if !processGone(pid) {
		t.Errorf("the child of %s (pid %d) outlived the purge of its job", r0, pid)
	}
	waitGone(t, filepath.Join(tr.dir(), "jobs", ja.id))
	if err := fetch(locA, ja.secret); !errors.Is(err, shuffle.ErrUnauthorized) {
		t.Errorf("fetching the output of purged job %s: %v, want %v (its secret forgotten)", ja.id, err, shuffle.ErrUnauthorized)
	}
	if err := fetch(locB, jb.secret); err != nil {
		t.Errorf("fetching the output of job %s after purging another: %v", jb.id, err)
	}
	mB := jb.attempt("m", 0, 0)
	if _, err := os.Stat(filepath.Join(tr.attemptDir(jb.id, mB), "spills", spill.DataFileName(locB.Spill))); err != nil {
		t.Errorf("purging %s touched job %s: %v", ja.id, jb.id, err)
	}
	if jobs, attempts := tr.tt.heldJobs(); !slices.Equal(jobs, []string{jb.id}) || !slices.Equal(attempts, []string{mB}) {
		t.Errorf("held after the purge: jobs %v, attempts %v; want [%s], [%s]", jobs, attempts, jb.id, mB)
	}
}

// TestHeldJobsPurgedOnRegistration: a tracker that starts on the local
// directory of an earlier process reports, on its initial contact, the
// jobs it finds there and their attempts with map output; it removes
// the ones the JobTracker does not know when told to purge them, and
// keeps the others. Entries that are not job directories are neither
// reported nor touched.
func TestHeldJobsPurgedOnRegistration(t *testing.T) {
	root := t.TempDir()
	jobs := filepath.Join(root, sanitize(testTrackerName), "jobs")
	const (
		unknownJob = "job_old1_0001"
		knownJob   = "job_old2_0001"
		withSpills = "attempt_old1_0001_m_000000_0"
		noSpills   = "attempt_old1_0001_r_000000_0"
		knownMap   = "attempt_old2_0001_m_000001_0"
	)
	for _, d := range []string{
		filepath.Join(unknownJob, withSpills, "spills"),
		filepath.Join(unknownJob, noSpills, "shuffle"),
		filepath.Join(knownJob, knownMap, "spills"),
		"Not_A_Job",
	} {
		if err := os.MkdirAll(filepath.Join(jobs, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{filepath.Join(unknownJob, withSpills, "spills", spill.DataFileName(0)), "stray_file"} {
		if err := os.WriteFile(filepath.Join(jobs, f), []byte("old"), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	tr := startTracker(t, trackerOpts{maps: 1, reduces: 1, root: root})
	first := tr.jt.beatsFrom(0)[0]
	if want := []string{unknownJob, knownJob}; !slices.Equal(first.HeldJobs, want) {
		t.Errorf("initial contact holds jobs %v, want %v", first.HeldJobs, want)
	}
	if want := []string{withSpills, knownMap}; !slices.Equal(first.HeldAttempts, want) {
		t.Errorf("initial contact holds attempts %v, want %v", first.HeldAttempts, want)
	}
	for _, b := range tr.jt.beatsFrom(1) {
		if len(b.HeldJobs) > 0 || len(b.HeldAttempts) > 0 {
			t.Errorf("a heartbeat after the initial contact reports held state: %v, %v", b.HeldJobs, b.HeldAttempts)
		}
	}

	from := tr.jt.send(purgeAction(unknownJob))
	tr.jt.waitBeat(t, from, "after the purge", func(*mrpb.HeartbeatRequest) bool { return true })
	waitGone(t, filepath.Join(jobs, unknownJob))
	for _, p := range []string{filepath.Join(knownJob, knownMap, "spills"), "Not_A_Job", "stray_file"} {
		if _, err := os.Stat(filepath.Join(jobs, p)); err != nil {
			t.Errorf("purging %s: %v", unknownJob, err)
		}
	}
}

// TestReinit: told by the JobTracker that it is not known (it restarted,
// or declared the tracker lost), the tracker kills its attempts, forgets
// them, and registers again with an initial contact that reports the
// jobs it still holds on disk and all its slots free.
func TestReinit(t *testing.T) {
	tr := startTracker(t, trackerOpts{maps: 1, reduces: 1})
	j := newTestJob(t, blockDef, 1)
	m0 := j.attempt("m", 0, 0)
	from := tr.jt.send(j.launch(t, "m", 0, 0))
	tr.jt.waitBeat(t, from, "reporting "+m0+" RUNNING", inState(m0, "RUNNING"))
	pid := tr.waitChild(t, m0)

	from = tr.jt.sendReinit()
	b, _ := tr.jt.waitBeat(t, from, "registering again", func(b *mrpb.HeartbeatRequest) bool { return b.InitialContact })
	if len(b.Attempts) != 0 || b.FreeMapSlots != 1 || b.FreeReduceSlots != 1 {
		t.Errorf("registering again: %s; want no attempt, every slot free", describeBeat(b))
	}
	// Every attempt directory has a spills directory, so the killed map
	// is listed among the attempts with map output: the JobTracker only
	// keeps the maps it knows completed among them.
	if !slices.Equal(b.HeldJobs, []string{j.id}) || !slices.Equal(b.HeldAttempts, []string{m0}) {
		t.Errorf("registering again: holds jobs %v, attempts %v; want [%s], [%s]", b.HeldJobs, b.HeldAttempts, j.id, m0)
	}
	if !processGone(pid) {
		t.Errorf("the child of %s (pid %d) outlived the reinitialization", m0, pid)
	}
}
