package tasktracker

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"gomr/mrpb"
)

// TestHeartbeatReportsEndOfForgottenAttempts: a heartbeat that makes the
// tracker forget an ended attempt must report that end. buildHeartbeat
// read an attempt's status and then, separately, whether it had ended:
// an attempt that ended in between was reported RUNNING and forgotten,
// its end never reported (the JobTracker then fails it as a lost
// attempt, "tracker acknowledged its launch but does not report it", and
// runs the task again). Seen under load in TestSlotsFreedWhenAttemptsEnd
// (a map that succeeded was never reported); here attempts end while
// heartbeats are built in a loop.
func TestHeartbeatReportsEndOfForgottenAttempts(t *testing.T) {
	tt := &TaskTracker{name: testTrackerName, mapSlots: 4, reduceSlots: 4, attempts: map[string]*taskAttempt{}, cr: newCRQueue(1)}
	const batches, perBatch = 200, 20
	deadline := time.Now().Add(20 * time.Second)
	for n := 0; n < batches && time.Now().Before(deadline); n++ {
		var as []*taskAttempt
		tt.mu.Lock()
		for k := range perBatch {
			id := fmt.Sprintf("attempt_x_0001_m_%06d_%d", k, n)
			a := &taskAttempt{tt: tt, launch: &mrpb.LaunchTask{AttemptId: id, Type: "m"}, state: "RUNNING", exited: make(chan struct{})}
			tt.attempts[id] = a
			as = append(as, a)
		}
		tt.mu.Unlock()
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			// The attempts end one by one, as their children exit.
			defer wg.Done()
			for _, a := range as {
				a.mu.Lock()
				a.state, a.finish = "SUCCEEDED", time.Now()
				a.mu.Unlock()
			}
		}()
		for {
			req, sent := tt.buildHeartbeat(registration{})
			reported := map[string]string{}
			for _, st := range req.Attempts {
				reported[st.AttemptId] = st.State
			}
			for _, id := range sent.finished {
				if s := reported[id]; s != "SUCCEEDED" {
					t.Fatalf("a heartbeat that forgets %s reports it %s", id, s)
				}
			}
			tt.heartbeatDone(sent)
			tt.mu.Lock()
			left := len(tt.attempts)
			tt.mu.Unlock()
			if left == 0 {
				break
			}
		}
		wg.Wait()
	}
}
