package sim

import (
	"strings"
	"testing"
	"time"

	"gomr/partitions"
)

// idlePolicy never assigns a slot: its jobs never finish.
type idlePolicy struct{}

func (idlePolicy) Name() string             { return "sim-test-idle" }
func (idlePolicy) Observe(partitions.Event) {}
func (idlePolicy) Offer(*partitions.ClusterView, partitions.SlotOffer) partitions.Decision {
	return partitions.Decision{}
}

func init() {
	partitions.Register("sim-test-idle", func(partitions.Config) (partitions.Policy, error) { return idlePolicy{}, nil })
}

// TestNeverFinishedEnds: a policy that leaves a job's tasks unscheduled
// ends the run with an error, with heartbeats as without. With heartbeats
// the event queue never empties (each tracker's next heartbeat is always
// queued); the run used to loop for ever.
func TestNeverFinishedEnds(t *testing.T) {
	w := tiny(Job{ID: "1", Maps: ds(10), Reduces: ds(5)})
	for _, hb := range []time.Duration{0, 3 * time.Second} {
		done := make(chan error, 1)
		go func() {
			_, err := Run(w, Options{Policy: "sim-test-idle", Slowstart: -1, Heartbeat: hb})
			done <- err
		}()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "1 job(s) never finished") {
				t.Errorf("heartbeat %v: error %v, want the job never finished", hb, err)
			}
		case <-time.After(time.Minute):
			t.Fatalf("heartbeat %v: the run did not end within a minute", hb)
		}
	}
}
