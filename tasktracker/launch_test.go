package tasktracker

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"gomr/mr"
	"gomr/mrpb"
	"gomr/spill"
)

// TestSpillSegmentsPacked: to a JobTracker that says it reads packed
// segments, a map's spills are announced with their segments packed, none
// as messages, and they describe its output (every record, the spill's
// data file's length). TestLaunchMapThenReduce checks the messages a
// JobTracker that does not say so gets.
func TestSpillSegmentsPacked(t *testing.T) {
	tr := startTracker(t, trackerOpts{maps: 1, reduces: 1, readsPacked: true})
	j := newTestJob(t, wordCountDef, 2)
	m0 := j.attempt("m", 0, 0)
	from := tr.jt.send(j.launch(t, "m", 0, 0))
	_, i := tr.jt.waitBeat(t, from, "reporting "+m0+" SUCCEEDED", inState(m0, "SUCCEEDED"))
	var records int64
	n := 0
	for _, hb := range tr.jt.beatsFrom(from)[:i-from+1] {
		for _, sp := range hb.Spills {
			if len(sp.Segments) != 0 || len(sp.PackedSegments) == 0 {
				t.Fatalf("spill %d of %s: %d segments as messages, %d bytes packed; want them packed only", sp.Spill, sp.AttemptId, len(sp.Segments), len(sp.PackedSegments))
			}
			p, err := mrpb.ParsePackedSegments(string(sp.PackedSegments), true)
			if err != nil || p.Len() != 2 {
				t.Fatalf("spill %d of %s: packed segments %q (%v), want 2 partitions", sp.Spill, sp.AttemptId, sp.PackedSegments, err)
			}
			data, err := os.Stat(filepath.Join(tr.attemptDir(j.id, m0), "spills", spill.DataFileName(int(sp.Spill))))
			if err != nil {
				t.Fatal(err)
			}
			if last := p.At(1); last.Offset+last.Length != data.Size() {
				t.Errorf("spill %d: the last segment ends at %d, the data file is %d bytes", sp.Spill, last.Offset+last.Length, data.Size())
			}
			for _, seg := range p.All() {
				records += seg.Records
			}
			n++
		}
	}
	if n == 0 || records != 6 {
		t.Errorf("%s announced %d spills holding %d records, want 6 records", m0, n, records)
	}
}

// TestSpillDigestsAnnounced: a map launched to announce digests (a job
// that announces spills only) sends each spill's partitions and the digest
// of its segments as its index file holds them, and no segment.
func TestSpillDigestsAnnounced(t *testing.T) {
	tr := startTracker(t, trackerOpts{maps: 1, reduces: 1, readsPacked: true})
	j := newTestJob(t, wordCountDef, 2)
	m0 := j.attempt("m", 0, 0)
	act := j.launch(t, "m", 0, 0)
	act.GetLaunch().SpillDigests = true
	from := tr.jt.send(act)
	_, i := tr.jt.waitBeat(t, from, "reporting "+m0+" SUCCEEDED", inState(m0, "SUCCEEDED"))
	n := 0
	for _, hb := range tr.jt.beatsFrom(from)[:i-from+1] {
		for _, sp := range hb.Spills {
			if len(sp.Segments) != 0 || len(sp.PackedSegments) != 0 || sp.Partitions != 2 {
				t.Fatalf("spill %d of %s: %d segments as messages, %d bytes packed, %d partitions; want a digest of 2 partitions only",
					sp.Spill, sp.AttemptId, len(sp.Segments), len(sp.PackedSegments), sp.Partitions)
			}
			index, err := spill.ReadIndex(filepath.Join(tr.attemptDir(j.id, m0), "spills", spill.IndexFileName(int(sp.Spill))))
			if err != nil {
				t.Fatal(err)
			}
			segs := make([]mrpb.SpillSegment, len(index))
			for k, s := range index {
				segs[k] = mrpb.SpillSegment(s)
			}
			if want := mrpb.PackSegments(segs).Digest(); string(sp.SegmentsDigest) != string(want[:]) {
				t.Errorf("spill %d: digest %x, want %x (of its index %v)", sp.Spill, sp.SegmentsDigest, want, index)
			}
			n++
		}
	}
	if n == 0 {
		t.Errorf("%s announced no spill", m0)
	}
}

// checkCounterOrder fails t unless st's counters are in (group, name)
// order, byte by byte, each once: the JobTracker takes them as they come
// (mr.PackCounters).
func checkCounterOrder(t *testing.T, st *mrpb.AttemptStatus) {
	t.Helper()
	for k := 1; k < len(st.Counters); k++ {
		if p, c := st.Counters[k-1], st.Counters[k]; p.Group > c.Group || p.Group == c.Group && p.Name >= c.Name {
			t.Errorf("%s: counter %s/%s after %s/%s: not in (group, name) order", st.AttemptId, c.Group, c.Name, p.Group, p.Name)
		}
	}
}

// TestLaunchMapThenReduce runs a word count's map and then its reduce as
// real child processes: the map's spills are written in its attempt
// directory and announced in heartbeats, the reduce fetches them from the
// tracker's shuffle server (map events through the umbilical), commits
// its output with the JobTracker's permission, and both are reported
// SUCCEEDED with their counters.
func TestLaunchMapThenReduce(t *testing.T) {
	tr := startTracker(t, trackerOpts{maps: 1, reduces: 1})
	j := newTestJob(t, wordCountDef, 1)
	m0, r0 := j.attempt("m", 0, 0), j.attempt("r", 0, 0)

	from := tr.jt.send(j.launch(t, "m", 0, 0))
	b, i := tr.jt.waitBeat(t, from, "reporting "+m0+" SUCCEEDED", inState(m0, "SUCCEEDED"))
	st := attemptIn(b, m0)
	if st.Progress != 1 || st.Phase != "MAP" || st.Diagnostic != "" {
		t.Errorf("%s: progress %v, phase %q, diagnostic %q; want 1, MAP, none", m0, st.Progress, st.Phase, st.Diagnostic)
	}
	for name, want := range map[string]int64{mr.MapInputRecords: 2, mr.MapOutputRecords: 6} {
		if got := counter(st, mr.TaskCounterGroup, name); got != want {
			t.Errorf("%s: counter %s = %d, want %d", m0, name, got, want)
		}
	}
	checkCounterOrder(t, st)
	// The spills announced up to the heartbeat that reports the map done,
	// their segments as messages: the fake JobTracker does not say it
	// reads them packed (TestSpillSegmentsPacked).
	var spills []*mrpb.SpillAnnouncement
	for _, hb := range tr.jt.beatsFrom(from)[:i-from+1] {
		for _, sp := range hb.Spills {
			if sp.AttemptId != m0 {
				t.Errorf("spill announced for attempt %s, not %s", sp.AttemptId, m0)
			}
			spills = append(spills, sp)
		}
	}
	if len(spills) == 0 || !spills[len(spills)-1].Final {
		t.Fatalf("%s announced %d spills, the last one not final: %v", m0, len(spills), spills)
	}
	var records int64
	for k, sp := range spills {
		if int(sp.Spill) != k || sp.Final != (k == len(spills)-1) || len(sp.Segments) != 1 || len(sp.PackedSegments) != 0 {
			t.Errorf("spill announcement %d: index %d, final %v, %d segments; want index %d, final only last, 1 segment",
				k, sp.Spill, sp.Final, len(sp.Segments), k)
		}
		for _, name := range []string{spill.DataFileName(k), spill.IndexFileName(k)} {
			if _, err := os.Stat(filepath.Join(tr.attemptDir(j.id, m0), "spills", name)); err != nil {
				t.Errorf("announced spill %d of %s: %v", k, m0, err)
			}
		}
		for _, seg := range sp.Segments {
			records += seg.Records
		}
	}
	if records != 6 {
		t.Errorf("the spills of %s hold %d records, want 6", m0, records)
	}
	for _, name := range []string{"stdout", "stderr"} {
		if _, err := os.Stat(filepath.Join(tr.attemptDir(j.id, m0), name)); err != nil {
			t.Errorf("%s of %s: %v", name, m0, err)
		}
	}

	from = tr.jt.send(j.launch(t, "r", 0, 0))
	b, _ = tr.jt.waitBeat(t, from, "reporting "+r0+" SUCCEEDED", inState(r0, "SUCCEEDED"))
	st = attemptIn(b, r0)
	if st.Progress != 1 || st.Phase != "REDUCE" || st.Diagnostic != "" {
		t.Errorf("%s: progress %v, phase %q, diagnostic %q; want 1, REDUCE, none", r0, st.Progress, st.Phase, st.Diagnostic)
	}
	if !(st.StartMs <= st.ShuffleFinishMs && st.ShuffleFinishMs <= st.SortFinishMs && st.SortFinishMs <= st.FinishMs) {
		t.Errorf("%s phase times: start %d, shuffle done %d, sort done %d, finish %d; want them in that order, all set",
			r0, st.StartMs, st.ShuffleFinishMs, st.SortFinishMs, st.FinishMs)
	}
	checkCounterOrder(t, st) // a reduce's, with Shuffle Errors, which Hadoop's order puts after the task counters
	for name, want := range map[string]int64{mr.ReduceInputRecords: 6, mr.ReduceInputGroups: 3, mr.ReduceOutputRecords: 3} {
		if got := counter(st, mr.TaskCounterGroup, name); got != want {
			t.Errorf("%s: counter %s = %d, want %d", r0, name, got, want)
		}
	}
	if got := tr.jt.commitRequests(); !slices.Contains(got, r0) || slices.Contains(got, m0) {
		t.Errorf("commit requests %v: want %s's, and none of the map's (its output is spills)", got, r0)
	}
	out, err := os.ReadFile(filepath.Join(j.output, mr.PartName(false, 0)))
	if err != nil {
		t.Fatal(err)
	}
	if want := "a\t3\nb\t2\nc\t1\n"; string(out) != want {
		t.Errorf("reduce output %q, want %q", out, want)
	}
	if _, err := os.Stat(filepath.Join(j.output, "_temporary", r0)); !os.IsNotExist(err) {
		t.Errorf("the reduce's uncommitted output directory is still there (%v)", err)
	}

	// The tracker's metrics: what it ran, what its shuffle server served
	// (the reduce fetched the map's output from this tracker), and what
	// the reduce fetched.
	m := tr.scrape(t)
	fetched := counter(st, mr.TaskCounterGroup, mr.ReduceShuffleBytes)
	for _, c := range []struct {
		name, labels string
		want         float64
	}{
		{"gomr_tasktracker_attempts_started_total", "type=map", 1},
		{"gomr_tasktracker_attempts_started_total", "type=reduce", 1},
		{"gomr_tasktracker_attempts_ended_total", "state=succeeded,type=map", 1},
		{"gomr_tasktracker_attempts_ended_total", "state=succeeded,type=reduce", 1},
		{"gomr_tasktracker_attempts_ended_total", "state=failed,type=map", 0},
		{"gomr_tasktracker_attempts_ended_total", "state=killed,type=reduce", 0},
		{"gomr_tasktracker_spills_announced_total", "", float64(len(spills))},
		{"gomr_tasktracker_shuffle_requests_total", "outcome=served", float64(len(spills))},
		{"gomr_tasktracker_shuffle_requests_total", "outcome=unauthorized", 0},
		{"gomr_tasktracker_shuffle_served_bytes_total", "", float64(fetched)},
		{"gomr_tasktracker_shuffle_fetched_bytes_total", "", float64(fetched)},
		{"gomr_tasktracker_slots", "state=free,type=map", 1},
		{"gomr_tasktracker_slots", "state=occupied,type=reduce", 0},
		{"gomr_tasktracker_running_attempts", "type=map", 0},
		{"gomr_tasktracker_clones_total", "outcome=succeeded", 0},
		{"gomr_tasktracker_checkpoints_total", "outcome=sent", 0},
	} {
		if got, ok := m[c.name][c.labels]; !ok || got != c.want {
			t.Errorf("%s{%s} = %v (present %v), want %v", c.name, c.labels, got, ok, c.want)
		}
	}
	if fetched <= 0 {
		t.Errorf("%s fetched %d bytes", r0, fetched)
	}
	if n := m["gomr_tasktracker_heartbeat_rtt_seconds"][""]; n < 2 {
		t.Errorf("%v heartbeat round trips observed, want several", n)
	}
	for _, name := range []string{"go_goroutines", "process_resident_memory_bytes"} {
		if m[name][""] <= 0 {
			t.Errorf("%s = %v, want a positive value", name, m[name][""])
		}
	}
}

// TestLaunchMapOnly runs the map of a map-only job as a real child: it
// writes its part file through the committer, with the JobTracker's
// permission, and announces no spill.
func TestLaunchMapOnly(t *testing.T) {
	tr := startTracker(t, trackerOpts{maps: 1, reduces: 1})
	j := newTestJob(t, wordCountDef, 0)
	m0 := j.attempt("m", 0, 0)
	from := tr.jt.send(j.launch(t, "m", 0, 0))
	_, i := tr.jt.waitBeat(t, from, "reporting "+m0+" SUCCEEDED", inState(m0, "SUCCEEDED"))
	for _, hb := range tr.jt.beatsFrom(from)[:i-from+1] {
		if len(hb.Spills) > 0 {
			t.Errorf("a map-only attempt announced spills: %v", hb.Spills)
		}
	}
	if got := tr.jt.commitRequests(); !slices.Equal(got, []string{m0}) {
		t.Errorf("commit requests %v, want [%s]", got, m0)
	}
	out, err := os.ReadFile(filepath.Join(j.output, mr.PartName(true, 0)))
	if err != nil {
		t.Fatal(err)
	}
	if want := "a\t1\nb\t1\na\t1\nc\t1\na\t1\nb\t1\n"; string(out) != want {
		t.Errorf("map output %q, want %q", out, want)
	}
}
