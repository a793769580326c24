package mrpb

import "strings"

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
