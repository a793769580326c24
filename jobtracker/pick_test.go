package jobtracker

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"gomr/mr"
	"gomr/mrpb"

	"gomr/partitions"
)

// TestPickLocalMapIsTheScansPick checks pickLocalMapLocked, the shortcut
// of pickTaskLocked through the host's own maps, against the full scan
// over random task states, failures and re-runs: the same task every time.
func TestPickLocalMapIsTheScansPick(t *testing.T) {
	dir := t.TempDir()
	jt, _ := newTestJTAt(t, dir, 0, nil)
	rng := rand.New(rand.NewPCG(1, 2))
	hosts := []string{"h0", "h1", "h2", "h3", "h4"}
	const maps = 300
	id := submitWordCountOn(t, jt, dir, maps, func(i int) []string {
		return []string{hosts[i%5], hosts[(i*7+1)%5]}
	})
	jt.mu.Lock()
	defer jt.unlock()
	j := jt.jobs[id]
	trackers := map[string]*trackerState{}
	for _, h := range hosts {
		trackers[h] = &trackerState{name: "t_" + h, host: h, mapSlots: 2}
		jt.trackers["t_"+h] = trackers[h]
		jt.slotTotals[partitions.Map] += 2
		jt.addCapacityLocked(trackers[h], 1)
		jt.trackerChangedLocked("t_" + h)
	}
	for round := 0; round < 2000; round++ {
		// Move a few maps: pending -> running -> succeeded or back to
		// pending (a failure, sometimes on a tracker).
		for n := 0; n < 5; n++ {
			tk := j.maps[rng.IntN(maps)]
			switch tk.state {
			case taskPending:
				jt.taskToLocked(tk, taskRunning)
			case taskRunning:
				if rng.IntN(3) == 0 {
					tk.failedOn[trackers[hosts[rng.IntN(5)]].name] = true
					jt.taskToLocked(tk, taskPending)
				} else {
					tk.successful = &attempt{id: attemptID(tk, 0), task: tk, state: attemptSucceeded}
					jt.taskToLocked(tk, taskSucceeded)
				}
			case taskSucceeded:
				if rng.IntN(4) == 0 {
					jt.taskToLocked(tk, taskPending) // output lost
					tk.successful = nil
				}
			}
		}
		tr := trackers[hosts[rng.IntN(5)]]
		want := scanPick(jt, j, tr)
		got := jt.pickTaskLocked(j, partitions.Map, tr)
		if got != want {
			t.Fatalf("round %d, tracker %s: picked %v, the full scan picks %v", round, tr.name, taskName(got), taskName(want))
		}
	}
}

// scanPick is pickTaskLocked's rule written out over every map, with no
// checkpoint image: the lowest index among the best scores.
func scanPick(jt *JobTracker, j *job, tr *trackerState) *task {
	var best *task
	bestScore := 1 << 30
	for _, tk := range j.maps {
		if tk.state != taskPending {
			continue
		}
		score := 0
		if tk.failedOn[tr.name] {
			if jt.otherTrackerCanRunLocked(tk) {
				continue
			}
			score += 2
		}
		if !contains(j.splits[tk.index].Hosts, tr.host) {
			score++
		}
		if score < bestScore {
			best, bestScore = tk, score
		}
	}
	return best
}

func taskName(tk *task) string {
	if tk == nil {
		return "none"
	}
	return tk.id()
}

// submitWordCountOn submits a word count of maps maps whose split i is on
// hosts(i).
func submitWordCountOn(t testing.TB, jt *JobTracker, dir string, maps int, hosts func(int) []string) string {
	t.Helper()
	in := filepath.Join(dir, "in.txt")
	if err := os.WriteFile(in, []byte("a b c\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	splits := make([]mr.Split, maps)
	for i := range splits {
		splits[i] = mr.Split{Path: in, Start: 0, Length: 6, Hosts: hosts(i)}
	}
	spec, _ := json.Marshal(&mr.JobSpec{Def: "wordcount", Inputs: []string{in}, Output: filepath.Join(dir, "out"), NumReduces: 1})
	sj, _ := json.Marshal(splits)
	resp, err := jt.SubmitJob(context.Background(), &mrpb.SubmitJobRequest{SpecJson: spec, SplitsJson: sj})
	if err != nil {
		t.Fatal(err)
	}
	return resp.JobId
}
