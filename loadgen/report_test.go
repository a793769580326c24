package loadgen

import (
	"bytes"
	"strings"
	"testing"
)

// TestWriteCurves: the runs come one line each, by policy, trackers, then
// maps per job, with the JobTracker-side p99 when it was measured; the
// submit-only results come after them, by maps, with the RSS they added
// per map.
func TestWriteCurves(t *testing.T) {
	runWith := func(policy string, trackers int, jobs, maps, reduces int, serverP99 float64) *Result {
		r := &Result{Policy: policy, Trackers: trackers, Process: Process{CPUCores: 0.5, RSSPeakMB: 400, HeapLiveMB: 200}}
		for range jobs {
			r.Jobs = append(r.Jobs, JobResult{Maps: maps, Reduces: reduces})
		}
		if serverP99 > 0 {
			r.Process.Lock = &LockFigures{Server: &ServerFigures{P99Ms: serverP99}}
		}
		return r
	}
	run := func(policy string, trackers int, jobs, maps int, serverP99 float64) *Result {
		return runWith(policy, trackers, jobs, maps, 0, serverP99)
	}
	submit := func(maps int, before, after float64) *Result {
		return &Result{Submissions: []Submission{{Maps: maps, SubmitMs: 500, RSSBeforeMB: before, RSSAfterMB: after, HeapAfterMB: -1}}}
	}
	tests := []struct {
		name string
		in   []*Result
		want [][]string // the fields each line starts with, in order
	}{
		{
			name: "runs by policy, trackers, maps per job",
			in: []*Result{
				run("fifo", 10000, 1, 100000, 7.25),
				run("fair", 10000, 4, 37500, 2.8),
				run("fifo", 10000, 150, 1000, 0),
				run("fifo", 100, 4, 375, 0.5),
			},
			want: [][]string{
				{"policy", "trackers", "jobs", "maps/job", "reduces/job"},
				{"fair", "10000", "4", "37500", "0"},
				{"fifo", "100", "4", "375", "0"},
				{"fifo", "10000", "150", "1000", "0"},
				{"fifo", "10000", "1", "100000", "0"},
			},
		},
		{
			name: "runs with reduces after the map-only run of the same size",
			in: []*Result{
				runWith("fifo", 10000, 4, 37500, 250, 214),
				run("fifo", 10000, 4, 37500, 3.5),
				runWith("fifo", 1000, 1, 20000, 1000, 7),
			},
			want: [][]string{
				{"policy", "trackers", "jobs", "maps/job", "reduces/job"},
				{"fifo", "1000", "1", "20000", "1000"},
				{"fifo", "10000", "4", "37500", "0"},
				{"fifo", "10000", "4", "37500", "250"},
			},
		},
		{
			name: "submissions after the runs, by maps",
			in:   []*Result{submit(100000, 20, 120), run("fifo", 100, 4, 375, 0.5), submit(1000, 20, 21)},
			want: [][]string{
				{"policy"},
				{"fifo", "100"},
				{},
				{"submit-only:", "maps", "client:", "splits,", "encoding", "request", "SubmitJob"},
				{"1000", "-", "-", "500ms", "20.0", "MB", "21.0", "MB", "1.02", "KB", "?"},
				{"100000", "-", "-", "500ms", "20.0", "MB", "120.0", "MB", "1.02", "KB"},
			},
		},
		{
			name: "submissions alone",
			in:   []*Result{submit(10000, 30, -1)},
			want: [][]string{
				{"submit-only:"},
				{"10000", "-", "-", "500ms", "30.0", "MB", "?", "?"},
			},
		},
		{
			name: "a submission over a real input: the client's side beside SubmitJob",
			in: []*Result{{Submissions: []Submission{{Maps: 100000, Input: "/data/in", PrepareMs: 1500, RequestBytes: 15 << 20,
				SubmitMs: 500, RSSBeforeMB: 20, RSSAfterMB: 120, HeapAfterMB: -1}}}},
			want: [][]string{
				{"submit-only:"},
				{"100000", "1500ms", "15.0", "MB", "500ms", "20.0", "MB", "120.0", "MB"},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := WriteCurves(&b, tc.in); err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
			if len(lines) != len(tc.want) {
				t.Fatalf("%d lines, want %d:\n%s", len(lines), len(tc.want), b.String())
			}
			for i, want := range tc.want {
				got := strings.Fields(lines[i])
				if len(got) < len(want) {
					t.Fatalf("line %d %q: want it to start with %q", i, lines[i], want)
				}
				for k, f := range want {
					if got[k] != f {
						t.Errorf("line %d %q: field %d is %q, want %q", i, lines[i], k, got[k], f)
					}
				}
			}
		})
	}
	// The JobTracker-side p99 where measured, "?" where not.
	var b bytes.Buffer
	if err := WriteCurves(&b, []*Result{run("fifo", 10000, 1, 100000, 7.25), run("fifo", 100, 4, 375, 0)}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(b.String(), "\n")
	if f := strings.Fields(lines[1]); f[9] != "?" {
		t.Errorf("JT p99 of a run without it: %q, want ?\n%s", f[9], b.String())
	}
	if f := strings.Fields(lines[2]); f[9] != "7.2ms" && f[9] != "7.3ms" {
		t.Errorf("JT p99: %q, want 7.2ms\n%s", f[9], b.String())
	}
	// The deadlines, last: none, every job's, varied; and the profiles.
	same, varied := run("minedf-wc", 100, 2, 375, 1), run("minedf", 100, 2, 375, 1)
	for i := range same.Jobs {
		same.Jobs[i].DeadlineS = 120
		varied.Jobs[i].DeadlineS = float64(60 * (i + 1))
	}
	same.Profiles = true
	b.Reset()
	if err := WriteCurves(&b, []*Result{run("fifo", 100, 4, 375, 1), same, varied}); err != nil {
		t.Fatal(err)
	}
	lines = strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	for i, want := range []string{"deadlines", "-", "varied", "120s,profiles"} {
		if f := strings.Fields(lines[i]); f[len(f)-1] != want {
			t.Errorf("line %d %q: deadlines %q, want %q", i, lines[i], f[len(f)-1], want)
		}
	}
}
