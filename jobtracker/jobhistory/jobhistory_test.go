package jobhistory

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"gomr/mr"
)

func encode(t testing.TB, recs ...Record) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for _, r := range recs {
		if err := enc.Encode(r.Job); err != nil {
			t.Fatal(err)
		}
		for _, a := range r.Attempts {
			if err := enc.Encode(a); err != nil {
				t.Fatal(err)
			}
		}
	}
	return buf.Bytes()
}

func sample(id string) Record {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	sf := t0.Add(2 * time.Second)
	return Record{
		Job: Job{Type: "job", JobID: id, Name: "wc", State: "SUCCEEDED", Submit: t0, Start: t0, Finish: t0.Add(5 * time.Second),
			Maps: 1, Reduces: 1, Counters: mr.CounterSet{mr.TaskCounterGroup: {mr.MapInputRecords: 3}}},
		Attempts: []Attempt{
			{Type: "attempt", AttemptID: "attempt_1_0001_m_000000_0", TaskType: "m", State: "SUCCEEDED", Start: t0, Finish: t0.Add(time.Second)},
			{Type: "attempt", AttemptID: "attempt_1_0001_r_000000_0", TaskType: "r", State: "SUCCEEDED", Start: t0, Finish: t0.Add(4 * time.Second), SortFinish: &sf},
		},
	}
}

func TestParseRoundTrip(t *testing.T) {
	a, b := sample("job_1_0001"), sample("job_1_0002")
	recs, err := ParseAll(encode(t, a, b))
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 || recs[1].Job.JobID != "job_1_0002" || len(recs[0].Attempts) != 2 ||
		!recs[0].Attempts[1].SortFinish.Equal(*a.Attempts[1].SortFinish) || recs[0].Job.Counters.Get(mr.TaskCounterGroup, mr.MapInputRecords) != 3 {
		t.Fatalf("round trip: %+v", recs)
	}
	if _, err := Parse(encode(t, a, b)); err == nil || !strings.Contains(err.Error(), "holds 2 jobs") {
		t.Fatalf("Parse of two jobs: %v", err)
	}
}

func TestParseErrors(t *testing.T) {
	cases := []struct{ in, want string }{
		{"", "empty history"},
		{`{"type":"attempt","attempt_id":"x"}`, "line 1: attempt before any job line"},
		{`{"type":"job","job_id":"j"}` + "\n" + `{"type":"task"}`, `line 2: unknown record type "task"`},
		{`{"type":"job",`, "line 1:"},
	}
	for _, c := range cases {
		_, err := ParseAll([]byte(c.in))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseAll(%q) = %v, want an error containing %q", c.in, err, c.want)
		}
	}
}

func FuzzParseAll(f *testing.F) {
	f.Add(encode(f, sample("job_1_0001")))
	f.Add([]byte(`{"type":"job"}` + "\n" + `{"type":"attempt","start":"bad"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		recs, err := ParseAll(data)
		if err != nil {
			return
		}
		again, err := ParseAll(encode(t, recs...))
		if err != nil || len(again) != len(recs) {
			t.Fatalf("re-encoded history does not parse the same: %v", err)
		}
	})
}

func TestTaskOutcomes(t *testing.T) {
	// A job line with the counts: they are used as they are.
	r := sample("job_1_0001")
	r.Job.SucceededMaps, r.Job.KilledReduces = 1, 1
	if m, red := r.TaskOutcomes(); m != (TaskOutcome{Succeeded: 1}) || red != (TaskOutcome{Killed: 1}) {
		t.Fatalf("outcomes from the job line: %+v %+v", m, red)
	}
	// A file from before the counts: inferred from the attempts. Map 0
	// succeeded on its second attempt, map 1 ran out of attempts, map 2
	// was killed running, map 3 never ran; the reduce never ran.
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	old := Record{Job: Job{Type: "job", JobID: "job_1_0002", State: "FAILED", Maps: 4, Reduces: 1, Submit: t0}}
	for _, a := range []struct {
		task  int
		state string
	}{{0, "FAILED"}, {0, "SUCCEEDED"}, {1, "FAILED"}, {1, "FAILED"}, {2, "KILLED"}} {
		old.Attempts = append(old.Attempts, Attempt{Type: "attempt", TaskType: "m", Task: a.task, State: a.state})
	}
	recs, err := ParseAll(encode(t, old))
	if err != nil {
		t.Fatal(err)
	}
	m, red := recs[0].TaskOutcomes()
	if m != (TaskOutcome{Succeeded: 1, Failed: 1, Killed: 2}) || red != (TaskOutcome{Killed: 1}) {
		t.Fatalf("inferred outcomes: maps %+v reduces %+v", m, red)
	}
}
