package apps

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"gomr/mr"
)

func TestSleepDriver(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir()) // the temporary output goes there
	tests := []struct {
		args           []string
		params         map[string]string
		reduces        int
		explicitOutput string
	}{
		{nil, map[string]string{"rows": "1", "maps": "1", "map_sleep_ms": "100", "reduce_sleep_ms": "100"}, 1, ""},
		{[]string{"-m", "1", "-r", "0", "-mt", "0"}, map[string]string{"rows": "1", "maps": "1", "map_sleep_ms": "0", "reduce_sleep_ms": "100"}, 0, ""},
		{[]string{"-m", "4", "-r", "3", "-mt", "5", "-rt", "7", "-o", "/x/out"}, map[string]string{"rows": "4", "maps": "4", "map_sleep_ms": "5", "reduce_sleep_ms": "7"}, 3, "/x/out"},
	}
	for _, tt := range tests {
		var out string
		jc := &fakeClient{run: func(spec *mr.JobSpec) error {
			out = spec.Output
			if tt.explicitOutput == "" {
				return os.MkdirAll(spec.Output, 0o755) // the runtime creates it
			}
			return nil
		}}
		if err := runApp(t, "sleep", jc, tt.args...); err != nil {
			t.Fatalf("args %q: %v", tt.args, err)
		}
		want := &mr.JobSpec{Name: "sleep", Def: "sleep", Params: tt.params, Output: out, NumReduces: tt.reduces}
		if len(jc.specs) != 1 || !reflect.DeepEqual(jc.specs[0], want) {
			t.Errorf("args %q: specs %+v, want [%+v]", tt.args, jc.specs, want)
		}
		if tt.explicitOutput != "" {
			if out != tt.explicitOutput {
				t.Errorf("args %q: output %s", tt.args, out)
			}
			continue
		}
		if filepath.Dir(out) != os.TempDir() || !strings.HasPrefix(filepath.Base(out), "gomr-sleep-temp-") {
			t.Errorf("args %q: temporary output %s, want %s/gomr-sleep-temp-*", tt.args, out, os.TempDir())
		}
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Errorf("args %q: temporary output %s left behind", tt.args, out)
		}
	}
}

// TestSleepInterruptedLeavesNoTemp: a sleep run interrupted (Ctrl-C:
// its context canceled) while its job still runs, and so may still make
// its output, leaves nothing in the working directory, and removes the
// temporary output it made.
func TestSleepInterruptedLeavesNoTemp(t *testing.T) {
	wd := t.TempDir()
	t.Chdir(wd)
	t.Setenv("TMPDIR", t.TempDir())
	var out string
	jc := &fakeClient{run: func(spec *mr.JobSpec) error {
		out = spec.Output
		if err := os.MkdirAll(spec.Output, 0o755); err != nil {
			return err
		}
		return context.Canceled
	}}
	if err := runApp(t, "sleep", jc); !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted sleep: %v, want context.Canceled", err)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("interrupted sleep left its temporary output %s", out)
	}
	// The job, still running on the cluster, makes its output again.
	if err := os.MkdirAll(filepath.Join(out, "_temporary", "0"), 0o755); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(wd); len(ents) != 0 {
		t.Errorf("an interrupted sleep's job left %v in the working directory", ents)
	}
}

func TestSleepUsage(t *testing.T) {
	for _, args := range [][]string{{"-m", "0"}, {"-r", "-1"}, {"-mt", "-5"}, {"-x"}, {"extra"}, {"-m", "two"}} {
		var ue *mr.UsageError
		if err := runApp(t, "sleep", &fakeClient{}, args...); !errors.As(err, &ue) {
			t.Errorf("args %q: error %v, want a usage error", args, err)
		}
	}
}

func TestSleepMapperAndReducer(t *testing.T) {
	def, err := mr.LookupJob(sleepJob)
	if err != nil {
		t.Fatal(err)
	}
	tc := newTC(map[string]string{"map_sleep_ms": "20", "reduce_sleep_ms": "20"}, 3)
	m, err := def.Mapper(tc)
	if err != nil {
		t.Fatal(err)
	}
	var c collector
	start := time.Now()
	if err := m.Map(tc, make([]byte, 8), nil, &c); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 20*time.Millisecond {
		t.Errorf("map slept %v, want at least 20ms", d)
	}
	p, err := def.Partitioner(tc)
	if err != nil {
		t.Fatal(err)
	}
	var parts []int
	for _, kv := range c.out {
		parts = append(parts, p.Partition([]byte(kv.k), 3))
	}
	if !reflect.DeepEqual(parts, []int{0, 1, 2}) {
		t.Errorf("map output goes to partitions %v, want [0 1 2]", parts)
	}
	r, err := def.Reducer(tc)
	if err != nil {
		t.Fatal(err)
	}
	var rc collector
	start = time.Now()
	if err := r.Reduce(tc, []byte(c.out[0].k), iter("", ""), &rc); err != nil {
		t.Fatal(err)
	}
	if err := r.Reduce(tc, []byte(c.out[1].k), iter(""), &rc); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 20*time.Millisecond || d > 2*time.Second {
		t.Errorf("reduce slept %v, want 20ms once", d)
	}
	if len(rc.out) != 0 {
		t.Errorf("reduce wrote %q", rc.out)
	}
	if _, err := def.Mapper(newTC(map[string]string{"map_sleep_ms": "-1"}, 1)); err == nil {
		t.Error("negative sleep: no error")
	}
	if _, err := def.Reducer(newTC(nil, 1)); err == nil {
		t.Error("missing sleep parameter: no error")
	}
}

func TestSleepMapperCancelled(t *testing.T) {
	tc := newTC(nil, 1)
	ctx, cancel := context.WithCancel(context.Background())
	tc.ctx = ctx
	m := &sleepMapper{d: time.Hour}
	done := make(chan error, 1)
	go func() { done <- m.Map(tc, nil, nil, &collector{}) }()
	time.Sleep(10 * time.Millisecond)
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("error %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("map did not stop when cancelled")
	}
}

func TestIndexPartition(t *testing.T) {
	tests := []struct {
		key  []byte
		n    int
		want int
	}{
		{[]byte{0, 0, 0, 2}, 3, 2},
		{[]byte{0, 0, 0, 5}, 3, 2},
		{[]byte{0, 0, 0, 5}, 1, 0},
		{[]byte{1}, 3, 0},
		{[]byte{0xff, 0xff, 0xff, 0xff}, 7, int(uint32(0xffffffff) % 7)},
	}
	for _, tt := range tests {
		if got := indexPartition(tt.key, tt.n); got != tt.want {
			t.Errorf("indexPartition(%x, %d) = %d, want %d", tt.key, tt.n, got, tt.want)
		}
	}
}

func TestNullOutput(t *testing.T) {
	dir := t.TempDir()
	w, err := NullOutput{}.Create(nil, filepath.Join(dir, "part-r-00000"))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write([]byte("k"), []byte("v")); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 || w.BytesWritten() != 0 {
		t.Errorf("NullOutput wrote %v, %d bytes", entries, w.BytesWritten())
	}
}
