package mrpb

import (
	"fmt"
	"slices"
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
		if err := bad.Expand(job); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("map event 1: address %d of a table of 2 addresses", addr)) {
			t.Errorf("address %d: error %v", addr, err)
		}
	}
}

// TestJobAddresses: a reduce keeping its job's addresses between replies
// adds those each reply sends that it lacks and expands events by them; a reply of
// another table (a restarted JobTracker's) starts over; a reply from
// before job tables is expanded as such and leaves what is held; a reply
// whose addresses do not follow those held, or an address past them, is
// refused by name and leaves what is held as it was.
func TestJobAddresses(t *testing.T) {
	const job = "job_202611271200_0001"
	spill := func(task, addr int32) *MapEvent { return &MapEvent{MapTask: task, Attempt: 1, Address: addr} }
	var a JobAddresses
	req := &MapEventsRequest{}
	a.Ask(req)
	if !req.Compact || !req.JobAddresses || req.AddressTable != 0 || req.KnownAddresses != 0 {
		t.Fatalf("first ask: %v", req)
	}
	steps := []struct {
		name      string
		reply     *MapEventsResponse
		wantAddrs []string // the events' addresses once expanded
		wantErr   string
		wantTable uint64
		wantNames []string
	}{
		{"first", &MapEventsResponse{AddressTable: 7, Addresses: []string{"h1:1", "h2:1"}, Events: []*MapEvent{spill(0, 2), spill(1, 1)}},
			[]string{"h2:1", "h1:1"}, "", 7, []string{"h1:1", "h2:1"}},
		{"one more", &MapEventsResponse{AddressTable: 7, FirstAddress: 2, Addresses: []string{"h3:1"}, Events: []*MapEvent{spill(2, 3), spill(3, 1)}},
			[]string{"h3:1", "h1:1"}, "", 7, []string{"h1:1", "h2:1", "h3:1"}},
		{"none new", &MapEventsResponse{AddressTable: 7, FirstAddress: 3, Events: []*MapEvent{spill(4, 2)}},
			[]string{"h2:1"}, "", 7, []string{"h1:1", "h2:1", "h3:1"}},
		{"a gap", &MapEventsResponse{AddressTable: 7, FirstAddress: 4, Addresses: []string{"h5:1"}, Events: []*MapEvent{spill(5, 5)}},
			nil, "addresses from 4 of table 7, holding 3 of table 7", 7, []string{"h1:1", "h2:1", "h3:1"}},
		{"an address past the table", &MapEventsResponse{AddressTable: 7, FirstAddress: 3, Addresses: []string{"h4:1"}, Events: []*MapEvent{spill(5, 4), spill(6, 5)}},
			nil, "map event 1: address 5 of a table of 4 addresses", 7, []string{"h1:1", "h2:1", "h3:1"}},
		{"a reply numbering in its own list", &MapEventsResponse{Addresses: []string{"x:1"}, Events: []*MapEvent{spill(6, 1)}},
			[]string{"x:1"}, "", 7, []string{"h1:1", "h2:1", "h3:1"}},
		{"some held ones again (another reduce's reply)", &MapEventsResponse{AddressTable: 7, FirstAddress: 1, Addresses: []string{"h2:1", "h3:1", "h4:1"}, Events: []*MapEvent{spill(6, 4), spill(7, 2)}},
			[]string{"h4:1", "h2:1"}, "", 7, []string{"h1:1", "h2:1", "h3:1", "h4:1"}},
		{"another table past its start", &MapEventsResponse{AddressTable: 9, FirstAddress: 1, Addresses: []string{"h2:1"}, Events: []*MapEvent{spill(7, 2)}},
			nil, "addresses from 1 of table 9, holding 4 of table 7", 7, []string{"h1:1", "h2:1", "h3:1", "h4:1"}},
		{"another table", &MapEventsResponse{AddressTable: 9, Addresses: []string{"h3:1"}, Events: []*MapEvent{spill(7, 1)}},
			[]string{"h3:1"}, "", 9, []string{"h3:1"}},
	}
	for _, st := range steps {
		err := a.Expand(st.reply, job)
		if st.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), st.wantErr) {
				t.Fatalf("%s: error %v, want one containing %q", st.name, err, st.wantErr)
			}
		} else {
			if err != nil {
				t.Fatalf("%s: %v", st.name, err)
			}
			for i, ev := range st.reply.Events {
				if ev.ShuffleAddress != st.wantAddrs[i] || ev.Kind != "SPILL_READY" || ev.AttemptId != MapAttemptID(job, int(ev.MapTask), 0) || ev.Address != 0 {
					t.Fatalf("%s: event %d expanded to %v, want address %q", st.name, i, ev, st.wantAddrs[i])
				}
			}
			if st.reply.Addresses != nil || st.reply.AddressTable != 0 || st.reply.FirstAddress != 0 {
				t.Fatalf("%s: the expanded reply keeps its tables: %v", st.name, st.reply)
			}
		}
		if a.Table != st.wantTable || !slices.Equal(a.Names, st.wantNames) {
			t.Fatalf("%s: holding table %d %q, want %d %q", st.name, a.Table, a.Names, st.wantTable, st.wantNames)
		}
		a.Ask(req)
		if req.AddressTable != a.Table || int(req.KnownAddresses) != len(a.Names) {
			t.Fatalf("%s: then asks %v", st.name, req)
		}
	}
}
