package mrpb

import (
	"fmt"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
)

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

// TestMapAttemptID: the JobTracker's map attempt ids, the task in six
// digits at least.
func TestMapAttemptID(t *testing.T) {
	for _, tc := range []struct {
		job     string
		task, n int
		want    string
	}{
		{"job_202611271200_0001", 0, 0, "attempt_202611271200_0001_m_000000_0"},
		{"job_202611271200_0001", 42, 3, "attempt_202611271200_0001_m_000042_3"},
		{"job_202611271200_0001", 999999, 1000, "attempt_202611271200_0001_m_999999_1000"},
		{"job_202611271200_0001", 1234567, 1, "attempt_202611271200_0001_m_1234567_1"},
	} {
		if got := MapAttemptID(tc.job, tc.task, tc.n); got != tc.want {
			t.Errorf("MapAttemptID(%q, %d, %d) = %q, want %q", tc.job, tc.task, tc.n, got, tc.want)
		}
		if job, ok := JobOfAttempt(tc.want); !ok || job != tc.job {
			t.Errorf("JobOfAttempt(%q) = %q, %v", tc.want, job, ok)
		}
	}
}

// TestExpand: a compact reply's events get their kind, attempt ids and
// addresses back; a whole reply is left as it is; an address outside the
// reply's table is refused by name.
func TestExpand(t *testing.T) {
	const job = "job_202611271200_0001"
	r := &MapEventsResponse{Addresses: []string{"h1:50060", "h2:50060"}, Events: []*MapEvent{
		{MapTask: 3, Spill: 1, Final: true, Attempt: 1, Address: 2},
		{Kind: "MAP_OBSOLETE", MapTask: 3},
		{Kind: "MAP_OBSOLETE", MapTask: 3, Attempt: 2},
		{MapTask: 4, AttemptId: "odd_id", Address: 1},
		{Kind: "MAPS_ADDED", MapTask: 10},
		{Kind: "SPILL_READY", MapTask: 5, AttemptId: "attempt_x_m_000005_0", ShuffleAddress: "h9:1"},
	}}
	want := &MapEventsResponse{Events: []*MapEvent{
		{Kind: "SPILL_READY", MapTask: 3, Spill: 1, Final: true, AttemptId: "attempt_202611271200_0001_m_000003_0", ShuffleAddress: "h2:50060"},
		{Kind: "MAP_OBSOLETE", MapTask: 3},
		{Kind: "MAP_OBSOLETE", MapTask: 3, AttemptId: "attempt_202611271200_0001_m_000003_1"},
		{Kind: "SPILL_READY", MapTask: 4, AttemptId: "odd_id", ShuffleAddress: "h1:50060"},
		{Kind: "MAPS_ADDED", MapTask: 10},
		{Kind: "SPILL_READY", MapTask: 5, AttemptId: "attempt_x_m_000005_0", ShuffleAddress: "h9:1"},
	}}
	if err := r.Expand(job); err != nil || !proto.Equal(r, want) {
		t.Fatalf("expanded %v, %v; want %v", r, err, want)
	}
	for _, addr := range []int32{3, -1} {
		bad := &MapEventsResponse{Addresses: []string{"h1:1", "h2:2"}, Events: []*MapEvent{{}, {Address: addr}}}
		if err := bad.Expand(job); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("map event 1: address %d of a reply of 2 addresses", addr)) {
			t.Errorf("address %d: error %v", addr, err)
		}
	}
}
