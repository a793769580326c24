package tasktracker

import (
	"bytes"
	"log/slog"
	"maps"
	"strings"
	"testing"

	"gomr/mr"
	"gomr/mrpb"
)

// TestMemoryBudgetShares divides budgets among slots: each kind of slot's
// share, no budget when it is 0, and a clear error when a share cannot
// hold a child.
func TestMemoryBudgetShares(t *testing.T) {
	cases := []struct {
		name                 string
		total, maps, reduces int
		weight               float64
		base                 int
		wantOn               bool
		wantMap, wantReduce  int
		wantErr              string
	}{
		{name: "no budget", total: 0, maps: 2, reduces: 2, weight: 1, base: 24},
		{name: "equal shares", total: 512, maps: 2, reduces: 2, weight: 1, base: 24, wantOn: true, wantMap: 128, wantReduce: 128},
		{name: "one reduce slot", total: 384, maps: 2, reduces: 1, weight: 1, base: 24, wantOn: true, wantMap: 128, wantReduce: 128},
		{name: "reduce weight 2", total: 600, maps: 2, reduces: 2, weight: 2, base: 24, wantOn: true, wantMap: 100, wantReduce: 200},
		{name: "reduce weight 0.5", total: 500, maps: 2, reduces: 2, weight: 0.5, base: 24, wantOn: true, wantMap: 166, wantReduce: 83},
		{name: "shares rounded down", total: 1000, maps: 3, reduces: 0, weight: 1, base: 24, wantOn: true, wantMap: 333},
		{name: "map slots only", total: 300, maps: 3, reduces: 0, weight: 1, base: 24, wantOn: true, wantMap: 100},
		{name: "no slots", total: 300, maps: 0, reduces: 0, weight: 1, base: 24},
		{name: "smallest share", total: 160, maps: 2, reduces: 2, weight: 1, base: 24, wantOn: true, wantMap: 40, wantReduce: 40},
		{name: "share too small", total: 156, maps: 2, reduces: 2, weight: 1, base: 24,
			wantErr: "mapreduce.tasktracker.memory.mb=156 divided among 2 map and 2 reduce slots gives a map slot 39 MiB, less than the 40 MiB a child needs"},
		{name: "reduce share too small", total: 400, maps: 2, reduces: 2, weight: 0.1, base: 24,
			wantErr: "gives a reduce slot (weight 0.1) 18 MiB"},
		{name: "no base", total: 64, maps: 2, reduces: 2, weight: 1, base: 0, wantOn: true, wantMap: 16, wantReduce: 16},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b, err := newMemoryBudget(tc.total, tc.maps, tc.reduces, tc.weight, tc.base)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("newMemoryBudget: error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if b.on() != tc.wantOn {
				t.Fatalf("on() = %v, want %v", b.on(), tc.wantOn)
			}
			if tc.wantOn && (b.mapShareMB != tc.wantMap || b.redShareMB != tc.wantReduce) {
				t.Errorf("shares: map %d, reduce %d MiB; want %d, %d", b.mapShareMB, b.redShareMB, tc.wantMap, tc.wantReduce)
			}
			if used := tc.maps*b.mapShareMB + tc.reduces*b.redShareMB; used > tc.total {
				t.Errorf("the slots' shares add up to %d MiB, over the budget of %d", used, tc.total)
			}
		})
	}
}

// TestMemoryBudgetChild sizes children's settings from a slot's share of
// 128 MiB (a soft limit of 104 MiB, a sort buffer of at most 64 MiB, or 96
// for a map that combines in the combining table): the defaults are sized
// to fit, a job's own settings win where they fit, a job's memory settings
// above the share are lowered with a note, and a job's sort buffer above it
// is an error.
func TestMemoryBudgetChild(t *testing.T) {
	b, err := newMemoryBudget(384, 2, 1, 1, 24)
	if err != nil {
		t.Fatal(err)
	}
	big, err := newMemoryBudget(1000, 2, 2, 1, 24) // 250 MiB a slot: 226 MiB limit, sort buffer up to 145
	if err != nil {
		t.Fatal(err)
	}
	// 2500 MiB a map slot, a 2476 MiB limit: a combining table's model would
	// give a sort buffer above the largest that keeps a table (1 GiB).
	huge, err := newMemoryBudget(5000, 2, 0, 1, 24)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name      string
		budget    memoryBudget
		isMap     bool
		job       map[string]string
		pinned    int  // LaunchTask.sort_mb
		combining bool // the map combines in the combining table
		wantLimit int
		wantSet   map[string]string
		wantClamp string
		wantErr   string
	}{
		{name: "map defaults", budget: b, isMap: true, wantLimit: 104,
			wantSet: map[string]string{keyMapMemoryMB: "104", keySortMB: "64"}},
		{name: "map default sort buffer sent as a value", budget: b, isMap: true, job: map[string]string{keySortMB: "100"}, wantLimit: 104,
			wantSet: map[string]string{keyMapMemoryMB: "104", keySortMB: "64"}},
		{name: "map own sort buffer fits", budget: b, isMap: true, job: map[string]string{keySortMB: "50"}, wantLimit: 104,
			wantSet: map[string]string{keyMapMemoryMB: "104", keySortMB: "50"}},
		{name: "map own sort buffer just fits", budget: b, isMap: true, job: map[string]string{keySortMB: "64"}, wantLimit: 104,
			wantSet: map[string]string{keyMapMemoryMB: "104", keySortMB: "64"}},
		{name: "map own sort buffer too large", budget: b, isMap: true, job: map[string]string{keySortMB: "65"},
			wantErr: "mapreduce.task.io.sort.mb=65 does not fit this tracker's map slot: its soft memory limit of 104 MiB (mapreduce.tasktracker.memory.mb=384 over 2 map and 1 reduce slots, mapreduce.tasktracker.memory.child.base.mb=24) holds a sort buffer of at most 64 MiB"},
		{name: "map own memory fits", budget: b, isMap: true, job: map[string]string{keyMapMemoryMB: "80"}, wantLimit: 80,
			wantSet: map[string]string{keyMapMemoryMB: "80", keySortMB: "48"}},
		{name: "map own memory too large", budget: b, isMap: true, job: map[string]string{keyMapMemoryMB: "200"}, wantLimit: 104,
			wantSet:   map[string]string{keyMapMemoryMB: "104", keySortMB: "64"},
			wantClamp: "mapreduce.map.memory.mb=200 lowered to 104 MiB, the map slot's share"},
		{name: "map own memory leaves no sort buffer", budget: b, isMap: true, job: map[string]string{keyMapMemoryMB: "8"},
			wantErr: "a map's soft memory limit of 8 MiB"},
		{name: "map default fits a large share", budget: big, isMap: true, wantLimit: 226,
			wantSet: map[string]string{keyMapMemoryMB: "226", keySortMB: "100"}},
		{name: "map pinned sort buffer fits", budget: b, isMap: true, pinned: 40, wantLimit: 104,
			wantSet: map[string]string{keyMapMemoryMB: "104", keySortMB: "40"}},
		{name: "map pinned sort buffer over the job's own", budget: b, isMap: true, job: map[string]string{keySortMB: "50"}, pinned: 30, wantLimit: 104,
			wantSet: map[string]string{keyMapMemoryMB: "104", keySortMB: "30"}},
		{name: "map pinned sort buffer above the share", budget: b, isMap: true, pinned: 100, wantLimit: 158,
			wantSet:   map[string]string{keyMapMemoryMB: "158", keySortMB: "100"},
			wantClamp: "mapreduce.task.io.sort.mb pinned at 100 MiB by the task's first announced spill: the map's soft memory limit raised from 104 to 158 MiB"},
		{name: "map pinned sort buffer above the job's own too large", budget: b, isMap: true, job: map[string]string{keySortMB: "80"}, pinned: 80, wantLimit: 128,
			wantSet:   map[string]string{keyMapMemoryMB: "128", keySortMB: "80"},
			wantClamp: "raised from 104 to 128 MiB"},
		{name: "combining map defaults", budget: b, isMap: true, combining: true, wantLimit: 104,
			wantSet: map[string]string{keyMapMemoryMB: "104", keySortMB: "96"}},
		{name: "combining map, table unbounded", budget: b, isMap: true, combining: true, job: map[string]string{keyTablePct: "0"}, wantLimit: 104,
			wantSet: map[string]string{keyMapMemoryMB: "104", keySortMB: "64"}},
		{name: "combining map, table bound set", budget: b, isMap: true, combining: true, job: map[string]string{keyTablePct: "0.5"}, wantLimit: 104,
			wantSet: map[string]string{keyMapMemoryMB: "104", keySortMB: "96"}},
		{name: "combining map own sort buffer fits", budget: b, isMap: true, combining: true, job: map[string]string{keySortMB: "90"}, wantLimit: 104,
			wantSet: map[string]string{keyMapMemoryMB: "104", keySortMB: "90"}},
		{name: "combining map own sort buffer too large", budget: b, isMap: true, combining: true, job: map[string]string{keySortMB: "97"},
			wantErr: "holds a sort buffer of at most 96 MiB (1 MiB of heap per MiB of buffer and 8 MiB more)"},
		{name: "combining map own memory", budget: b, isMap: true, combining: true, job: map[string]string{keyMapMemoryMB: "40"}, wantLimit: 40,
			wantSet: map[string]string{keyMapMemoryMB: "40", keySortMB: "32"}},
		{name: "combining map pinned sort buffer above the share", budget: b, isMap: true, combining: true, pinned: 100, wantLimit: 108,
			wantSet:   map[string]string{keyMapMemoryMB: "108", keySortMB: "100"},
			wantClamp: "raised from 104 to 108 MiB"},
		{name: "combining map pinned sort buffer from a plain model", budget: b, isMap: true, combining: true, pinned: 64, wantLimit: 104,
			wantSet: map[string]string{keyMapMemoryMB: "104", keySortMB: "64"}},
		{name: "combining map on a large share keeps the default", budget: big, isMap: true, combining: true, wantLimit: 226,
			wantSet: map[string]string{keyMapMemoryMB: "226", keySortMB: "100"}},
		{name: "combining map past the table's largest buffer", budget: huge, isMap: true, combining: true, job: map[string]string{keySortMB: "1500"}, wantLimit: 2476,
			wantSet: map[string]string{keyMapMemoryMB: "2476", keySortMB: "1500"}},
		{name: "combining map past the table's largest buffer, too large", budget: huge, isMap: true, combining: true, job: map[string]string{keySortMB: "1700"},
			wantErr: "holds a sort buffer of at most 1645 MiB (1.5 MiB of heap per MiB of buffer"},
		{name: "reduce of a combining job", budget: b, combining: true, wantLimit: 104,
			wantSet: map[string]string{keyReduceMemoryMB: "104", keyShuffleBufferPct: "0.589", keyReduceRetainPct: "0.589"}},
		{name: "reduce ignores a pin", budget: b, pinned: 100, wantLimit: 104,
			wantSet: map[string]string{keyReduceMemoryMB: "104", keyShuffleBufferPct: "0.589", keyReduceRetainPct: "0.589"}},
		{name: "reduce defaults", budget: b, wantLimit: 104,
			wantSet: map[string]string{keyReduceMemoryMB: "104", keyShuffleBufferPct: "0.589", keyReduceRetainPct: "0.589"}},
		{name: "reduce own memory fits", budget: b, job: map[string]string{keyReduceMemoryMB: "64"}, wantLimit: 64,
			wantSet: map[string]string{keyReduceMemoryMB: "64", keyShuffleBufferPct: "0.541", keyReduceRetainPct: "0.541"}},
		{name: "reduce own memory too large", budget: b, job: map[string]string{keyReduceMemoryMB: "2048"}, wantLimit: 104,
			wantSet:   map[string]string{keyReduceMemoryMB: "104", keyShuffleBufferPct: "0.589", keyReduceRetainPct: "0.589"},
			wantClamp: "mapreduce.reduce.memory.mb=2048 lowered to 104 MiB, the reduce slot's share"},
		{name: "reduce own buffer shares fit", budget: b, job: map[string]string{keyShuffleBufferPct: "0.5", keyReduceRetainPct: "0.0"}, wantLimit: 104,
			wantSet: map[string]string{keyReduceMemoryMB: "104"}},
		{name: "reduce own shuffle buffer too large", budget: b, job: map[string]string{keyShuffleBufferPct: "0.9", keyReduceRetainPct: "0.0"}, wantLimit: 104,
			wantSet:   map[string]string{keyReduceMemoryMB: "104", keyShuffleBufferPct: "0.589"},
			wantClamp: "mapreduce.reduce.shuffle.input.buffer.percent=0.9 lowered to 0.589: 61 MiB of the reduce's 104 MiB of memory"},
		{name: "reduce default on a large share", budget: big, wantLimit: 226,
			wantSet: map[string]string{keyReduceMemoryMB: "226", keyShuffleBufferPct: "0.631", keyReduceRetainPct: "0.631"}},
		{name: "reduce buffers on a large share of their own", budget: big, job: map[string]string{keyReduceMemoryMB: "2048"}, wantLimit: 226,
			wantSet:   map[string]string{keyReduceMemoryMB: "226", keyShuffleBufferPct: "0.631", keyReduceRetainPct: "0.631"},
			wantClamp: "mapreduce.reduce.memory.mb=2048 lowered to 226 MiB"},
		{name: "reduce ignores the sort buffer", budget: b, job: map[string]string{keySortMB: "500"}, wantLimit: 104,
			wantSet: map[string]string{keyReduceMemoryMB: "104", keyShuffleBufferPct: "0.589", keyReduceRetainPct: "0.589"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := tc.budget.child(tc.isMap, tc.job, tc.pinned, tc.combining)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("child: error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.limitMB != tc.wantLimit {
				t.Errorf("limit %d MiB, want %d", c.limitMB, tc.wantLimit)
			}
			if !maps.Equal(c.set, tc.wantSet) {
				t.Errorf("settings %v, want %v", c.set, tc.wantSet)
			}
			switch {
			case tc.wantClamp == "" && len(c.clamps) > 0:
				t.Errorf("clamps %q, want none", c.clamps)
			case tc.wantClamp != "" && (len(c.clamps) != 1 || !strings.Contains(c.clamps[0], tc.wantClamp)):
				t.Errorf("clamps %q, want one containing %q", c.clamps, tc.wantClamp)
			}
		})
	}
}

// TestReduceBufferPercent checks the reduce's heap model at a few limits:
// the buffer it allows, as a share of the limit, leaves reduceFixedHeapMB
// and a third of the rest to the garbage collector, and never reaches the
// limit.
func TestReduceBufferPercent(t *testing.T) {
	cases := []struct {
		limitMB int
		want    float64
	}{
		{16, 0.166}, // (16-12)/1.5 = 2.67 MiB
		{40, 0.466}, // 18.7 MiB
		{104, 0.589},
		{1024, 0.658},
		{12, 0.001},
	}
	for _, tc := range cases {
		if got := reduceBufferPercent(tc.limitMB); got != tc.want {
			t.Errorf("reduceBufferPercent(%d) = %g, want %g", tc.limitMB, got, tc.want)
		}
	}
}

// TestLogClampsOncePerJob logs a lowered setting once per job however many
// of its attempts it is lowered for, and not for a job the tracker does not
// hold.
func TestLogClampsOncePerJob(t *testing.T) {
	var buf bytes.Buffer
	tt := &TaskTracker{log: slog.New(slog.NewTextHandler(&buf, nil)),
		jobs: map[string]*localJob{"job_1": {}, "job_2": {}}}
	note := "mapreduce.reduce.memory.mb=2048 lowered to 104 MiB"
	tt.logClamps("job_1", "attempt_1_r_000000_0", []string{note})
	tt.logClamps("job_1", "attempt_1_r_000001_0", []string{note})
	tt.logClamps("job_2", "attempt_2_r_000000_0", []string{note})
	tt.logClamps("job_3", "attempt_3_r_000000_0", []string{note})
	tt.logClamps("job_2", "attempt_2_r_000001_0", nil)
	if n := strings.Count(buf.String(), "lowered to 104 MiB"); n != 2 {
		t.Errorf("%d warnings, want 2 (one for each of job_1 and job_2):\n%s", n, buf.String())
	}
	if !strings.Contains(buf.String(), "attempt=attempt_2_r_000000_0") {
		t.Errorf("job_2's warning does not name its attempt:\n%s", buf.String())
	}
}

// Job definitions for TestTableCombiner: a combiner in the default key
// order, and one with a key order of its own.
const (
	combineDef      = "tttest-combine"
	combineOrderDef = "tttest-combine-order"
)

func init() {
	identity := func(mr.TaskContext) (mr.Reducer, error) {
		return mr.ReducerFunc(func(_ mr.TaskContext, key []byte, values mr.ValueIterator, out mr.Emitter) error {
			for values.Next() {
				if err := out.Emit(key, values.Value()); err != nil {
					return err
				}
			}
			return nil
		}), nil
	}
	mapper := func(mr.TaskContext) (mr.Mapper, error) {
		return mr.MapperFunc(func(_ mr.TaskContext, _, line []byte, out mr.Emitter) error { return out.Emit(line, nil) }), nil
	}
	mr.RegisterJob(&mr.JobDef{Name: combineDef, Input: mr.TextInput{}, Output: mr.TextOutput{}, Mapper: mapper, Combiner: identity})
	mr.RegisterJob(&mr.JobDef{Name: combineOrderDef, Input: mr.TextInput{}, Output: mr.TextOutput{}, Mapper: mapper, Combiner: identity,
		Compare: func(a, b []byte) int { return bytes.Compare(b, a) }})
}

// TestTableCombiner tells from a launch's job specification whether its
// map combines in the combining table: a registered job with a combiner and
// the default key order does; no combiner, a key order of its own, a job
// this binary does not know and a specification that does not parse do not.
func TestTableCombiner(t *testing.T) {
	cases := []struct {
		name string
		spec string
		want bool
	}{
		{"combiner, default order", `{"def":"` + combineDef + `","output":"o"}`, true},
		{"combiner, own order", `{"def":"` + combineOrderDef + `","output":"o"}`, false},
		{"no combiner", `{"def":"` + wordCountDef + `","output":"o"}`, false},
		{"unknown job", `{"def":"tttest-nowhere","output":"o"}`, false},
		{"bad specification", `{"def":`, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tableCombiner(&mrpb.LaunchTask{Type: "m", SpecJson: []byte(tc.spec)}); got != tc.want {
				t.Errorf("tableCombiner = %v, want %v", got, tc.want)
			}
		})
	}
}
