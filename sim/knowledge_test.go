package sim

import (
	"sync"
	"testing"
	"time"

	"gomr/partitions"
)

// submitRecorder is a FIFO policy that records what it is told of each job
// at its submission.
type submitRecorder struct {
	partitions.Policy
	mu   sync.Mutex
	seen map[string]partitions.JobView
}

var recorders = struct {
	sync.Mutex
	last *submitRecorder
}{}

func init() {
	partitions.Register("sim-test-submit-recorder", func(cfg partitions.Config) (partitions.Policy, error) {
		fifo, err := partitions.New("fifo", cfg)
		if err != nil {
			return nil, err
		}
		r := &submitRecorder{Policy: fifo, seen: map[string]partitions.JobView{}}
		recorders.Lock()
		recorders.last = r
		recorders.Unlock()
		return r, nil
	})
}

func (r *submitRecorder) Observe(ev partitions.Event) {
	if ev.Kind == partitions.JobSubmitted {
		r.mu.Lock()
		r.seen[ev.JobID] = *ev.Job
		r.mu.Unlock()
	}
	r.Policy.Observe(ev)
}

// What a policy is told of a job at its submission: with the history
// knowledge (the JobTracker's), a job whose name completed before gets
// that run's profile and the size it predicts, a new name nothing; the
// oracle tells every job its own; none tells nothing.
func TestKnowledgeAtSubmission(t *testing.T) {
	w := tiny(
		Job{ID: "1", Name: "wc", Maps: ds(10, 10), Reduces: ds(4), Shuffles: ds(2)},
		Job{ID: "2", Name: "wc", Submit: s(100), Maps: ds(20, 20, 20), Reduces: ds(6), Shuffles: ds(2)},
		Job{ID: "3", Name: "sort", Submit: s(200), Maps: ds(5), Reduces: ds(5)},
	)
	run1 := partitions.NewProfile(ds(10, 10), []partitions.ReduceSample{{Shuffle: s(2), Reduce: s(4), FirstWave: true}})
	tests := []struct {
		know    string
		profile map[string]*partitions.Profile
		size    map[string]time.Duration
	}{
		{KnowHistory, map[string]*partitions.Profile{"2": &run1},
			map[string]time.Duration{"2": run1.EstimateSize(3, 1)}},
		{KnowOracle, map[string]*partitions.Profile{"1": ptr(w.Jobs[0].Profile()), "2": ptr(w.Jobs[1].Profile()), "3": ptr(w.Jobs[2].Profile())},
			map[string]time.Duration{"1": w.Jobs[0].Size(), "2": w.Jobs[1].Size(), "3": w.Jobs[2].Size()}},
		{KnowNone, nil, nil},
	}
	for _, tt := range tests {
		if _, err := Run(w, Options{Policy: "sim-test-submit-recorder", Slowstart: -1, Knowledge: tt.know}); err != nil {
			t.Fatalf("%s: %v", tt.know, err)
		}
		recorders.Lock()
		seen := recorders.last.seen
		recorders.Unlock()
		for _, id := range []string{"1", "2", "3"} {
			v := seen[id]
			want := tt.profile[id]
			if (v.Profile == nil) != (want == nil) || (want != nil && *v.Profile != *want) {
				t.Errorf("%s: job %s told profile %+v, want %+v", tt.know, id, v.Profile, want)
			}
			if v.EstimatedSize != tt.size[id] {
				t.Errorf("%s: job %s told size %v, want %v", tt.know, id, v.EstimatedSize, tt.size[id])
			}
		}
	}
	if _, err := Run(w, Options{Policy: "fifo", Knowledge: "psychic"}); err == nil {
		t.Error("knowledge psychic was accepted")
	}
}

func ptr(p partitions.Profile) *partitions.Profile { return &p }
