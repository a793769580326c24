package mrpb

import "testing"

func TestJobOfAttempt(t *testing.T) {
	for _, tc := range []struct {
		id, job string
		ok      bool
	}{
		{"attempt_202601020304_0002_m_000001_0", "job_202601020304_0002", true},
		{"attempt_x_1_r_000000_12", "job_x_1", true},
		{"attempt_x_1_s_000000_0", "", false},
		{"task_x_1_m_000000", "", false},
		{"attempt_x_1_m_000000", "", false},
		{"attempt_x_1_m_000000_0_9", "", false},
		{"", "", false},
	} {
		job, ok := JobOfAttempt(tc.id)
		if job != tc.job || ok != tc.ok {
			t.Errorf("JobOfAttempt(%q) = %q, %v; want %q, %v", tc.id, job, ok, tc.job, tc.ok)
		}
	}
}
