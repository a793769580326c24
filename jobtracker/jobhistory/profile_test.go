package jobhistory

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func secs(x float64) time.Duration { return time.Duration(x * float64(time.Second)) }

// TestProfile holds the ARIA profile of a run: a failed map attempt does
// not count, a first-wave reduce counts its shuffle only after the last
// map, a second-wave reduce its whole shuffle.
func TestProfile(t *testing.T) {
	t0 := time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC)
	at := func(x float64) time.Time { return t0.Add(secs(x)) }
	r := Run{ID: "job_1", Name: "wc", State: "SUCCEEDED", Submit: at(5), Start: at(6), Finish: at(80), DeadlineSeconds: 120, Maps: 2, Reduces: 2,
		Tasks: []RunTask{
			{Type: "map", Index: 0, Attempt: 0, State: "SUCCEEDED", Start: at(6), Finish: at(26)},
			{Type: "map", Index: 1, Attempt: 0, State: "FAILED", Start: at(6), Finish: at(9)},
			{Type: "map", Index: 1, Attempt: 1, State: "SUCCEEDED", Start: at(10), Finish: at(40)},
			// first wave: launched at 20, shuffle until 45 (5 s after the last map), reduce to 60
			{Type: "reduce", Index: 0, Attempt: 0, State: "SUCCEEDED", Start: at(20), ShuffleFinish: at(45), Finish: at(60)},
			// second wave: launched at 60, shuffle 8 s, reduce 12 s
			{Type: "reduce", Index: 1, Attempt: 0, State: "SUCCEEDED", Start: at(60), ShuffleFinish: at(68), Finish: at(80)},
		}}
	p := Profile(&r)
	if p.MapAvg != secs(25) || p.MapMax != secs(30) || p.Shuffle1Avg != secs(5) || p.ShuffleAvg != secs(8) || p.ReduceAvg != secs(13.5) || p.ReduceMax != secs(15) {
		t.Errorf("profile %+v", p)
	}
}

// TestRunOf checks the conversion of a history record: task types,
// attempt numbers from the attempt id, the reduce phase starting at the
// sort's end.
func TestRunOf(t *testing.T) {
	rec := sample("job_1_0001")
	r, err := RunOf(&rec)
	if err != nil {
		t.Fatal(err)
	}
	if r.ID != "job_1_0001" || r.Name != "wc" || len(r.Tasks) != 2 {
		t.Fatalf("run %+v", r)
	}
	m, red := r.Tasks[0], r.Tasks[1]
	if m.Type != "map" || red.Type != "reduce" || red.Attempt != 0 || !red.ShuffleFinish.Equal(*rec.Attempts[1].SortFinish) {
		t.Errorf("tasks %+v", r.Tasks)
	}
	bad := sample("job_1_0002")
	bad.Attempts[0].TaskType = "x"
	if _, err := RunOf(&bad); err == nil {
		t.Error("RunOf accepted an attempt of task type x")
	}
}

// TestLoadProfiles reads a history directory: succeeded jobs of the same
// name merge, a failed job and a file that does not parse are skipped.
func TestLoadProfiles(t *testing.T) {
	dir := t.TempDir()
	failed := sample("job_1_0003")
	failed.Job.State = "FAILED"
	failed.Job.Name = "failed"
	for name, data := range map[string][]byte{
		"job_1_0001.jsonl": encode(t, sample("job_1_0001")),
		"job_1_0002.jsonl": encode(t, sample("job_1_0002")),
		"job_1_0003.jsonl": encode(t, failed),
		"job_1_0004.jsonl": []byte("not json\n"),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	profiles, err := LoadProfiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(profiles) != 1 {
		t.Fatalf("profiles %+v, want only wc's", profiles)
	}
	p := profiles["wc"]
	if p.MapAvg != time.Second || p.ReduceAvg != 2*time.Second {
		t.Errorf("wc's profile %+v", p)
	}
}
