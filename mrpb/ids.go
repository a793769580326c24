package mrpb

import (
	"fmt"
	"strconv"
	"strings"
)

// MapAttemptID is the id of attempt n of map task of job jobID, as the
// JobTracker names it: attempt_<ident>_<n>_m_<task, 6 digits>_<n> for
// job_<ident>_<n>.
func MapAttemptID(jobID string, task, n int) string {
	t := strconv.Itoa(task)
	if len(t) < 6 {
		t = "000000"[len(t):] + t
	}
	return "attempt_" + strings.TrimPrefix(jobID, "job_") + "_m_" + t + "_" + strconv.Itoa(n)
}

// JobOfAttempt returns the job id an attempt id names:
// attempt_<ident>_<n>_<m|r>_<task>_<k> is of job_<ident>_<n>. It is false
// for anything else.
func JobOfAttempt(id string) (string, bool) {
	parts := strings.Split(id, "_")
	if len(parts) != 6 || parts[0] != "attempt" || (parts[3] != "m" && parts[3] != "r") {
		return "", false
	}
	return "job_" + parts[1] + "_" + parts[2], true
}

// Expand turns a compact reply (MapEventsRequest.compact) of job jobID's
// map events into whole events, in place: a kind, attempt id and shuffle
// address on every event that has them. A whole reply is left as it is.
// An address outside the reply's table is an error that names it.
func (r *MapEventsResponse) Expand(jobID string) error {
	for i, ev := range r.Events {
		if ev.Kind == "" {
			ev.Kind = "SPILL_READY"
		}
		if ev.AttemptId == "" && ev.Attempt > 0 {
			ev.AttemptId = MapAttemptID(jobID, int(ev.MapTask), int(ev.Attempt-1))
		}
		if ev.ShuffleAddress == "" && ev.Address != 0 {
			if ev.Address < 0 || int(ev.Address) > len(r.Addresses) {
				return fmt.Errorf("map event %d: address %d of a reply of %d addresses", i, ev.Address, len(r.Addresses))
			}
			ev.ShuffleAddress = r.Addresses[ev.Address-1]
		}
		ev.Attempt, ev.Address = 0, 0
	}
	r.Addresses = nil
	return nil
}
