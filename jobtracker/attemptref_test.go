package jobtracker

import (
	"testing"

	"gomr/partitions"
)

func TestParseAttemptRef(t *testing.T) {
	tests := []struct {
		id   string
		want attemptRef
	}{
		{"attempt_202611260232_0001_m_000042_3", attemptRef{job: "job_202611260232_0001", typ: partitions.Map, task: 42, ok: true}},
		{"attempt_1_2_r_000000_1000", attemptRef{job: "job_1_2", typ: partitions.Reduce, task: 0, ok: true}},
		{"attempt_1_2_m_x_0", attemptRef{job: "job_1_2", task: -1}},
		{"attempt_1_2_m_-3_0", attemptRef{job: "job_1_2", task: -1}},
		{"attempt_1_2_m_3", attemptRef{}},
		{"task_1_2_m_000001_0", attemptRef{}},
		{"", attemptRef{}},
	}
	for _, tc := range tests {
		tc.want.id = tc.id
		if got := parseAttemptRef(tc.id); got != tc.want {
			t.Errorf("parseAttemptRef(%q) = %+v, want %+v", tc.id, got, tc.want)
		}
	}
}
