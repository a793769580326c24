package partitions_test

import (
	"testing"

	"gomr/partitions"
)

// TestFIFOPriorityPreemption checks FIFO's PriorityArrival trigger
// (scheduler.fifo.preemption): a job of higher priority with pending
// tasks and no free slot takes slots back from the lowest-priority jobs
// (among equals the newest), as many as it has pending, and only then.
func TestFIFOPriorityPreemption(t *testing.T) {
	on := map[string]string{"scheduler.fifo.preemption": "true"}
	for _, tc := range []struct {
		name string
		conf map[string]string
		// jobs submitted in order: id, priority, maps; each then takes
		// what the offers give it.
		run  func(h *harnessT) string
		want string
	}{
		{"off by default: the high job waits", nil, func(h *harnessT) string {
			h.fill("L", 0, 8, 4)
			h.Submit(partitions.JobView{ID: "H", Priority: 1, Maps: 2})
			return h.Offer(0, 0)
		}, ""},
		{"a higher priority job takes what it lacks", on, func(h *harnessT) string {
			h.fill("L", 0, 8, 4)
			h.Submit(partitions.JobView{ID: "H", Priority: 1, Maps: 2})
			return h.Offer(0, 0)
		}, "kill:L:map:2"},
		{"killed slots go to the high job on the next offer", on, func(h *harnessT) string {
			h.fill("L", 0, 8, 4)
			h.Submit(partitions.JobView{ID: "H", Priority: 1, Maps: 2})
			h.Offer(0, 0)
			return h.Offer(2, 0)
		}, "H:m H:m"},
		{"no preemption while a slot is free", on, func(h *harnessT) string {
			h.fill("L", 0, 8, 3)
			h.Submit(partitions.JobView{ID: "H", Priority: 1, Maps: 2})
			return h.Offer(0, 0)
		}, ""},
		{"equal priority never preempts", on, func(h *harnessT) string {
			h.fill("L", 0, 8, 4)
			h.Submit(partitions.JobView{ID: "H", Maps: 2})
			return h.Offer(0, 0)
		}, ""},
		{"lowest priority first, then the newest", on, func(h *harnessT) string {
			h.fill("A", 0, 8, 1)
			h.fill("B", -1, 8, 1)
			h.fill("C", -1, 8, 2)
			h.Submit(partitions.JobView{ID: "H", Priority: 2, Maps: 3})
			return h.Offer(0, 0)
		}, "kill:C:map:2 kill:B:map:1"},
		{"a middle job preempts only lower ones", on, func(h *harnessT) string {
			h.fill("A", 1, 8, 2)
			h.fill("B", 0, 8, 2)
			h.Submit(partitions.JobView{ID: "M", Priority: 1, Maps: 4})
			return h.Offer(0, 0)
		}, "kill:B:map:2"},
		{"reduces too, once ready", on, func(h *harnessT) string {
			h.Submit(partitions.JobView{ID: "L", Maps: 0, Reduces: 4})
			h.Offer(0, 2)
			h.Submit(partitions.JobView{ID: "H", Priority: 1, Reduces: 1})
			return h.Offer(0, 0)
		}, "kill:L:reduce:1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &harnessT{newHarness(t, "fifo", tc.conf, 4, 2)}
			if got := tc.run(h); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

type harnessT struct {
	*schedtestHarness
}

// fill submits a job and starts n of its maps.
func (h *harnessT) fill(id string, prio, maps, n int) {
	h.Submit(partitions.JobView{ID: id, Priority: prio, Maps: maps, Submitted: h.Now})
	for i := 0; i < n; i++ {
		h.Start(id, partitions.Map)
	}
	h.Advance(1)
}
