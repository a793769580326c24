package main

import (
	"math"
	"reflect"
	"testing"
	"time"

	"gomr/jobtracker/jobhistory"
)

// TestPriorityArrivals: the priority experiment's schedules. Calibrated
// keeps the design's proportions for any H (first arrival 0.9 H, period
// 2.2 H, so a gap of 1.2 H after each high-priority job); fixed is the
// design's seconds whatever H.
func TestPriorityArrivals(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		out := make([]time.Duration, len(v))
		for i, x := range v {
			out[i] = time.Duration(x) * time.Millisecond
		}
		return out
	}
	tests := []struct {
		name     string
		schedule string
		h        time.Duration
		n        int
		want     []time.Duration
		wantErr  bool
	}{
		{"fixed", scheduleFixed, 0, 4, ms(4000, 14000, 24000, 34000), false},
		{"fixed ignores H", scheduleFixed, 7 * time.Second, 4, ms(4000, 14000, 24000, 34000), false},
		// The design's job: 4.5 s gives about its 4 s and 10 s.
		{"calibrated, the design's H", scheduleCalibrated, 4500 * time.Millisecond, 4, ms(4050, 13950, 23850, 33750), false},
		// The quiet machine's high-priority jobs (about 8 s): every
		// interval stretched alike.
		{"calibrated, a slow machine", scheduleCalibrated, 8 * time.Second, 4, ms(7200, 24800, 42400, 60000), false},
		{"calibrated, rounded to the ms", scheduleCalibrated, 3333333 * time.Microsecond, 2, ms(3000, 10333), false},
		{"calibrated, one arrival", scheduleCalibrated, 5 * time.Second, 1, ms(4500), false},
		{"no arrivals", scheduleCalibrated, 5 * time.Second, 0, ms(), false},
		{"calibrated without H", scheduleCalibrated, 0, 4, nil, true},
		{"calibrated, negative H", scheduleCalibrated, -time.Second, 4, nil, true},
		{"unknown schedule", "relative", 5 * time.Second, 4, nil, true},
		{"negative count", scheduleFixed, 0, -1, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := priorityArrivals(tt.schedule, tt.h, tt.n)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want an error: %v", err, tt.wantErr)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

// TestPriorityArrivalsGap: under the calibrated schedule the time from a
// high-priority job's end (H after its arrival) to the next arrival is
// 1.2 H, the design's 5.5 s after a 4.5 s job, for any H.
func TestPriorityArrivalsGap(t *testing.T) {
	for _, h := range []time.Duration{time.Second, 4500 * time.Millisecond, 7 * time.Second, 20 * time.Second} {
		at, err := priorityArrivals(scheduleCalibrated, h, 4)
		if err != nil {
			t.Fatal(err)
		}
		for i := 1; i < len(at); i++ {
			gap := at[i] - at[i-1] - h
			if want := time.Duration(1.2 * float64(h)); (gap - want).Abs() > time.Millisecond {
				t.Errorf("H %v: gap %d = %v, want %v", h, i, gap, want)
			}
		}
	}
}

// TestMapWork: a map's work is the run time of its checkpointed and
// successful attempts; killed and failed attempts (work redone) and
// reduces do not count.
func TestMapWork(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 8, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	att := func(typ string, task int, state string, start, end float64) jobhistory.Attempt {
		return jobhistory.Attempt{TaskType: typ, Task: task, State: state, Start: at(start), Finish: at(end)}
	}
	tests := []struct {
		name     string
		attempts []jobhistory.Attempt
		want     []float64
	}{
		{"never preempted", []jobhistory.Attempt{att("m", 0, "SUCCEEDED", 0, 12), att("m", 1, "SUCCEEDED", 1, 14)}, []float64{12, 13}},
		{"checkpointed twice", []jobhistory.Attempt{
			att("m", 0, "CHECKPOINTED", 0, 4), att("m", 0, "CHECKPOINTED", 9, 12.5), att("m", 0, "SUCCEEDED", 20, 25)}, []float64{12.5}},
		{"killed, then run alone", []jobhistory.Attempt{
			att("m", 0, "KILLED", 0, 4), att("m", 0, "KILLED", 9, 12), att("m", 0, "FAILED", 12, 13), att("m", 0, "SUCCEEDED", 30, 42)}, []float64{12}},
		{"reduces left out, task order", []jobhistory.Attempt{
			att("m", 1, "SUCCEEDED", 0, 3), att("r", 0, "SUCCEEDED", 3, 4), att("m", 0, "SUCCEEDED", 0, 2)}, []float64{2, 3}},
		{"none", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := mapWork(&jobhistory.Record{Attempts: tt.attempts})
			if len(got) != len(tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
			for i := range got {
				if math.Abs(got[i]-tt.want[i]) > 1e-9 {
					t.Errorf("got %v, want %v", got, tt.want)
				}
			}
		})
	}
}

// TestGapsAndWastedShare: the time between consecutive jobs, and the
// wasted share of the capacity.
func TestGapsAndWastedShare(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 8, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	gapTests := []struct {
		name        string
		submit, end []time.Time
		want        []float64
	}{
		{"three jobs", []time.Time{at(4), at(14), at(24)}, []time.Time{at(8.5), at(19), at(28)}, []float64{5.5, 5}},
		{"overlapping", []time.Time{at(4), at(6)}, []time.Time{at(8), at(10)}, []float64{-2}},
		{"one job", []time.Time{at(4)}, []time.Time{at(8)}, nil},
	}
	for _, tt := range gapTests {
		t.Run(tt.name, func(t *testing.T) {
			if got := gaps(tt.submit, tt.end); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("gaps = %v, want %v", got, tt.want)
			}
		})
	}
	shareTests := []struct {
		name             string
		wasted, makespan float64
		slots            int
		want             float64
	}{
		{"a quarter", 60, 60, 4, 0.25},
		{"seed 002's share", 56, 50, 4, 0.28},
		{"no waste", 0, 60, 4, 0},
		{"no capacity", 10, 0, 4, 0},
		{"no slots", 10, 60, 0, 0},
	}
	for _, tt := range shareTests {
		t.Run(tt.name, func(t *testing.T) {
			if got := wastedShare(tt.wasted, tt.slots, tt.makespan); math.Abs(got-tt.want) > 1e-9 {
				t.Errorf("wastedShare(%v, %d, %v) = %v, want %v", tt.wasted, tt.slots, tt.makespan, got, tt.want)
			}
		})
	}
}
