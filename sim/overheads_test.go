package sim

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestHadoopOverheads checks the Hadoop 1 mechanisms of the engine (job
// setup and cleanup tasks, heartbeats with per-heartbeat caps) on
// hand-made schedules, to the second.
func TestHadoopOverheads(t *testing.T) {
	type want struct{ start, finish, slowdown float64 }
	tests := []struct {
		name     string
		w        *Workload
		opt      Options
		want     map[string]want
		utilMaps float64 // 0: not checked
	}{
		{
			// setup 1-4 on a map slot, map 4-14, reduce 14-19, cleanup 19-21;
			// alone it is the same: slowdown 1
			name: "setup and cleanup on idle",
			w:    tiny(Job{ID: "A", Submit: s(1), Maps: ds(10), Reduces: ds(5)}),
			opt:  Options{SetupTask: s(3), CleanupTask: s(2)},
			want: map[string]want{"A": {1, 21, 1}},
			// busy map slot time: setup 3 + map 10 + cleanup 2 of 2 slots × 20 s
			utilMaps: 15.0 / 40,
		},
		{
			// A: setup 0-3, maps 3-103 on both map slots, cleanup 103-105.
			// B arrives at 10 with no map slot free: setup 10-13 on the
			// reduce slot. At 103 A's cleanup goes first (a map slot),
			// B's map takes the other: 103-108, cleanup 108-110.
			// Alone B takes 10 s (setup 3, map 5, cleanup 2): slowdown 10.
			name: "setup on a reduce slot, cleanup before the policy",
			w:    tiny(Job{ID: "A", Maps: ds(100, 100)}, Job{ID: "B", Submit: s(10), Maps: ds(5)}),
			opt:  Options{SetupTask: s(3), CleanupTask: s(2)},
			want: map[string]want{"A": {0, 105, 1}, "B": {10, 110, 10}},
		},
		{
			// heartbeats at 0, 3, 6, ...: one setup per heartbeat, and that
			// heartbeat launches nothing else. hb 3: A's setup 3-6; hb 6: B's
			// setup 6-9 while A's maps wait; hb 9: A's maps 9-19; hb 21: B's
			// map 21-26. Alone (same heartbeat phase) A runs setup 3-6 and
			// maps 6-16 (15 s), B setup 3-6 and its map 6-11 (9.5 s).
			name: "heartbeat with a setup task assigns nothing else",
			w:    tiny(Job{ID: "A", Submit: s(1), Maps: ds(10, 10)}, Job{ID: "B", Submit: s(1.5), Maps: ds(5)}),
			opt:  Options{Heartbeat: s(3), SetupTask: s(3)},
			want: map[string]want{"A": {3, 19, 18.0 / 15}, "B": {6, 26, 24.5 / 9.5}},
		},
		{
			// one map per heartbeat on a tracker with 4 free map slots
			name: "per-heartbeat map cap",
			w: &Workload{Name: "cap", Trackers: 1, MapSlots: 4, ReduceSlots: 1, Slowstart: 1,
				Jobs: []Job{{ID: "A", Maps: ds(10, 10, 10)}}},
			opt:  Options{Heartbeat: s(3), HeartbeatMaps: 1},
			want: map[string]want{"A": {0, 16, 1}},
		},
		{
			// without the cap all three start at the first heartbeat
			name: "no cap",
			w: &Workload{Name: "cap", Trackers: 1, MapSlots: 4, ReduceSlots: 1, Slowstart: 1,
				Jobs: []Job{{ID: "A", Maps: ds(10, 10, 10)}}},
			opt:  Options{Heartbeat: s(3)},
			want: map[string]want{"A": {0, 10, 1}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opt := tt.opt
			opt.Policy, opt.Slowstart = "fifo", -1
			r, err := Run(tt.w, opt)
			if err != nil {
				t.Fatal(err)
			}
			got := byID(r)
			for id, w := range tt.want {
				j := got[id]
				if j.Start != w.start || j.Finish != w.finish || !near(j.Slowdown, w.slowdown) {
					t.Errorf("%s: start %v finish %v slowdown %v, want %v %v %v", id, j.Start, j.Finish, j.Slowdown, w.start, w.finish, w.slowdown)
				}
			}
			if tt.utilMaps > 0 && !near(r.Summary.UtilMap, tt.utilMaps) {
				t.Errorf("map utilization %v, want %v", r.Summary.UtilMap, tt.utilMaps)
			}
		})
	}
}

func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }

func TestHadoopOverheadsErrors(t *testing.T) {
	w := tiny(Job{ID: "A", Maps: ds(1)})
	for _, tc := range []struct {
		opt  Options
		want string
	}{
		{Options{HeartbeatMaps: 1}, "need a heartbeat"},
		{Options{Heartbeat: s(3), HeartbeatReduces: -1}, "must not be negative"},
		{Options{SetupTask: -s(1)}, "must not be negative"},
	} {
		tc.opt.Policy, tc.opt.Slowstart = "fifo", -1
		if _, err := Run(w, tc.opt); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.opt, err, tc.want)
		}
	}
}

// TestHadoop1Flag checks that --hadoop1 is the documented set of flags and
// that a flag given with it wins.
func TestHadoop1Flag(t *testing.T) {
	run := func(args ...string) string {
		t.Helper()
		var out, errOut bytes.Buffer
		base := []string{"--compare", "fifo,fair", "--workload", "tyrex-hvw", "--jobs", "20"}
		if err := Command(context.Background(), append(base, args...), &out, &errOut); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	preset := run("--hadoop1")
	explicit := run("--heartbeat", "3s", "--job-setup", "3.5s", "--job-cleanup", "3.5s")
	if preset != explicit {
		t.Errorf("--hadoop1 differs from its flags:\n%s\n%s", preset, explicit)
	}
	if plain := run(); plain == preset {
		t.Error("--hadoop1 changed nothing")
	}
	if run("--hadoop1", "--heartbeat", "1s") == preset {
		t.Error("--heartbeat given with --hadoop1 was ignored")
	}
}
