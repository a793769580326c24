package partitions

import "time"

// Time helpers of the package's internal tests (the policy tests, in
// package partitions_test, have their own in harness_test.go).

var t0 = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

func at(s float64) time.Time { return t0.Add(secs(s)) }

func secs(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

func prof(mapS, redS float64) *Profile {
	return &Profile{Runs: 1, MapAvg: secs(mapS), MapMax: secs(mapS), ReduceAvg: secs(redS), ReduceMax: secs(redS)}
}
