package jobtracker

import (
	"errors"
	"testing"
)

// noIllegalTransitions fails the test, at its end, if the JobTracker
// refused any state change as illegal (lifecycle.go): every path through
// the JobTracker must keep to the tables.
func noIllegalTransitions(t testing.TB, jt *JobTracker) {
	t.Cleanup(func() {
		jt.mu.Lock()
		n := jt.illegalTransitions
		jt.unlock()
		if n > 0 {
			t.Errorf("the JobTracker refused %d illegal state changes (see its log)", n)
		}
	})
}

func TestAttemptTransitions(t *testing.T) {
	all := []attemptState{attemptRunning, attemptCommitPending, attemptSucceeded, attemptFailed, attemptKilled}
	legal := map[[2]attemptState]bool{
		{attemptRunning, attemptCommitPending}: true, {attemptRunning, attemptSucceeded}: true,
		{attemptRunning, attemptFailed}: true, {attemptRunning, attemptKilled}: true,
		{attemptCommitPending, attemptSucceeded}: true, {attemptCommitPending, attemptFailed}: true,
		{attemptCommitPending, attemptKilled}: true,
		{attemptSucceeded, attemptFailed}:     true, // its map output could not be fetched
	}
	for _, from := range all {
		for _, to := range all {
			a := &attempt{id: "attempt_x_0001_m_000000_0", state: from}
			err := a.to(to)
			if legal[[2]attemptState{from, to}] {
				if err != nil || a.state != to {
					t.Errorf("%v -> %v: %v, state %v", from, to, err, a.state)
				}
				continue
			}
			var te *TransitionError
			if !errors.As(err, &te) || a.state != from {
				t.Errorf("%v -> %v: got %v, state %v; want a TransitionError and no change", from, to, err, a.state)
				continue
			}
			want := "attempt attempt_x_0001_m_000000_0: illegal state change from " + from.String() + " to " + to.String()
			if err.Error() != want {
				t.Errorf("error %q, want %q", err, want)
			}
		}
	}
}

func TestTaskAndJobTransitions(t *testing.T) {
	j := &job{id: "job_x_0001"}
	tk := &task{job: j, index: 3}
	steps := []struct {
		to taskState
		ok bool
	}{
		{taskRunning, true}, {taskRunning, false}, {taskPending, true}, {taskRunning, true},
		{taskSucceeded, true}, {taskKilled, false}, {taskPending, true}, // a lost map output
		{taskFailed, true}, {taskPending, false}, {taskKilled, false},
	}
	for i, s := range steps {
		from := tk.state
		err := tk.to(s.to)
		if (err == nil) != s.ok {
			t.Errorf("step %d: task %v -> %v: %v, want ok=%v", i, from, s.to, err, s.ok)
		}
	}
	if err := j.to(jobKilled); err != nil {
		t.Fatal(err)
	}
	if err := j.to(jobSucceeded); err == nil || err.Error() != "job job_x_0001: illegal state change from KILLED to SUCCEEDED" {
		t.Errorf("a killed job succeeding: %v", err)
	}
	if !j.done() {
		t.Error("a killed job is not done")
	}
}
