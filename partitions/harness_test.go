package partitions_test

import (
	"testing"
	"time"

	"gomr/sched/schedtest"
)

// The policy tests drive their policy through the policy driver, as the
// JobTracker and the simulator do (package sched), with the exported
// harness of package schedtest.

var t0 = schedtest.Epoch

func at(s float64) time.Time { return schedtest.At(s) }

func secs(s float64) time.Duration { return schedtest.Secs(s) }

func newHarness(t *testing.T, name string, conf map[string]string, mapSlots, reduceSlots int) *schedtest.Harness {
	t.Helper()
	return schedtest.New(t, name, conf, mapSlots, reduceSlots)
}

type schedtestHarness = schedtest.Harness
