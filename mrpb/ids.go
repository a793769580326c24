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
	return r.expand(jobID, r.Addresses)
}

// JobAddresses is what a reduce holds of its job's shuffle-address table
// between map event replies (MapEventsRequest.job_addresses): the table's
// number and its first addresses. Its zero value holds none.
type JobAddresses struct {
	Table uint64
	Names []string
}

// Ask sets req to ask for a compact reply numbering addresses in the job's
// table, sending only the addresses a lacks.
func (a *JobAddresses) Ask(req *MapEventsRequest) {
	req.Compact, req.JobAddresses = true, true
	req.AddressTable, req.KnownAddresses = a.Table, int32(len(a.Names))
}

// Expand is MapEventsResponse.Expand for a reply to a request a asked
// for (Ask), or to any request of a reduce of the same job whose table a
// follows: the reply's addresses are added to a first, those a lacks, and
// its events' addresses are a's. A reply of a JobTracker that numbers
// them in the reply (one from before job tables) is expanded as such and
// leaves a as it is. A reply whose addresses do not follow those a holds,
// or that starts another table past its first address, is an error that
// names it, and leaves a as it is.
func (a *JobAddresses) Expand(r *MapEventsResponse, jobID string) error {
	if r.AddressTable == 0 {
		return r.Expand(jobID)
	}
	names, first := a.Names, int(r.FirstAddress)
	if r.AddressTable != a.Table {
		names = nil
	}
	if first < 0 || first > len(names) {
		return fmt.Errorf("map events: addresses from %d of table %d, holding %d of table %d", first, r.AddressTable, len(a.Names), a.Table)
	}
	if first+len(r.Addresses) > len(names) {
		// The addresses past those held, appended: a table's addresses
		// never change, so those the reply repeats are the held ones. a's
		// own Names stay as they were until the reply is known to be good.
		names = append(names, r.Addresses[len(names)-first:]...)
	}
	if err := r.expand(jobID, names); err != nil {
		return err
	}
	a.Table, a.Names = r.AddressTable, names
	r.AddressTable, r.FirstAddress = 0, 0
	return nil
}

// expand is Expand with addresses[i] the address numbered i+1.
func (r *MapEventsResponse) expand(jobID string, addresses []string) error {
	for i, ev := range r.Events {
		if ev.Kind == "" {
			ev.Kind = "SPILL_READY"
		}
		if ev.AttemptId == "" && ev.Attempt > 0 {
			ev.AttemptId = MapAttemptID(jobID, int(ev.MapTask), int(ev.Attempt-1))
		}
		if ev.ShuffleAddress == "" && ev.Address != 0 {
			if ev.Address < 0 || int(ev.Address) > len(addresses) {
				return fmt.Errorf("map event %d: address %d of a table of %d addresses", i, ev.Address, len(addresses))
			}
			ev.ShuffleAddress = addresses[ev.Address-1]
		}
		ev.Attempt, ev.Address = 0, 0
	}
	r.Addresses = nil
	return nil
}
