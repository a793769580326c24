package apps

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"gomr/mr"
)

func TestGrepMapper(t *testing.T) {
	tests := []struct {
		name, regex, group, line string
		want                     []string
	}{
		{"all matches", `dfs[a-z.]+`, "0", "dfs.name dfs.data x dfsz", []string{"dfs.name", "dfs.data", "dfsz"}},
		{"no match", `zzz`, "0", "abc", nil},
		{"default group", `a+`, "", "aa b a", []string{"aa", "a"}},
		{"group", `(\w+)=(\d+)`, "2", "a=1 b=22 c=x", []string{"1", "22"}},
		{"group not taking part", `(x)|(y)`, "1", "xyx", []string{"x", "x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tc := newTC(map[string]string{"regex": tt.regex, "group": tt.group}, 1)
			m, err := newGrepMapper(tc)
			if err != nil {
				t.Fatal(err)
			}
			var c collector
			if err := m.Map(tc, nil, []byte(tt.line), &c); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range c.out {
				if p.v != "\x01" {
					t.Errorf("match %q with value %x, want 01", p.k, p.v)
				}
				got = append(got, p.k)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("matches %q, want %q", got, tt.want)
			}
		})
	}
	if _, err := newGrepMapper(newTC(map[string]string{"regex": "("}, 1)); err == nil {
		t.Error("bad regex in the task: no error")
	}
}

func TestGrepSortOrder(t *testing.T) {
	// (match, count) pairs as grep-search writes them.
	in := []struct {
		match string
		count uint64
	}{{"b", 5}, {"a", 5}, {"zz", 100}, {"c", 1}, {"", 5}, {"ab", 5}, {"big", 1 << 40}}
	tc := newTC(nil, 1)
	m := &grepSortMapper{}
	var c collector
	for _, p := range in {
		var buf [10]byte
		n := putUvarint(buf[:], p.count)
		if err := m.Map(tc, []byte(p.match), buf[:n], &c); err != nil {
			t.Fatal(err)
		}
	}
	out := shuffle(t, tc, &grepSortReducer{}, c.out)
	want := []kv{{"1099511627776", "big"}, {"100", "zz"}, {"5", ""}, {"5", "a"}, {"5", "ab"}, {"5", "b"}, {"1", "c"}}
	if !reflect.DeepEqual(out, want) {
		t.Fatalf("sorted output %q, want %q", out, want)
	}
	if err := m.Map(tc, []byte("x"), []byte{0x80}, &c); err == nil {
		t.Error("bad count value: no error")
	}
}

func putUvarint(b []byte, v uint64) int {
	i := 0
	for v >= 0x80 {
		b[i] = byte(v) | 0x80
		v >>= 7
		i++
	}
	b[i] = byte(v)
	return i + 1
}

func TestGrepDriver(t *testing.T) {
	base := t.TempDir()
	out := filepath.Join(base, "out")
	var tmp string
	jc := &fakeClient{run: func(spec *mr.JobSpec) error {
		if spec.Def == grepSearchJob {
			tmp = spec.Output
			// the job writes its output into the temporary directory
			if err := os.MkdirAll(tmp, 0o755); err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(tmp, "part-r-00000"), []byte("x"), 0o644)
		}
		return nil
	}}
	if err := runApp(t, "grep", jc, "in1,in2", out, `dfs[a-z.]+`); err != nil {
		t.Fatal(err)
	}
	if len(jc.specs) != 2 {
		t.Fatalf("ran %d jobs, want 2", len(jc.specs))
	}
	if filepath.Dir(tmp) != base || !strings.HasPrefix(filepath.Base(tmp), ".grep-temp-") {
		t.Errorf("temporary output %s, want %s/.grep-temp-*", tmp, base)
	}
	want1 := &mr.JobSpec{Name: grepSearchJob, Def: grepSearchJob, Params: map[string]string{"regex": `dfs[a-z.]+`, "group": "0"},
		Inputs: []string{"in1", "in2"}, Output: tmp, NumReduces: -1}
	want2 := &mr.JobSpec{Name: grepSortJob, Def: grepSortJob, Inputs: []string{tmp}, Output: out, NumReduces: 1}
	if !reflect.DeepEqual(jc.specs[0], want1) || !reflect.DeepEqual(jc.specs[1], want2) {
		t.Errorf("specs\n%+v\n%+v\nwant\n%+v\n%+v", jc.specs[0], jc.specs[1], want1, want2)
	}
	if _, err := os.Stat(tmp); !os.IsNotExist(err) {
		t.Errorf("temporary directory %s left behind (stat: %v)", tmp, err)
	}
}

func TestGrepDriverCleansUpOnFailure(t *testing.T) {
	for _, failing := range []string{grepSearchJob, grepSortJob} {
		t.Run(failing, func(t *testing.T) {
			base := t.TempDir()
			jc := &fakeClient{run: func(spec *mr.JobSpec) error {
				if spec.Def == grepSearchJob {
					if err := os.MkdirAll(spec.Output, 0o755); err != nil {
						return err
					}
				}
				if spec.Def == failing {
					return errors.New("task failed")
				}
				return nil
			}}
			err := runApp(t, "grep", jc, "in", filepath.Join(base, "out"), "a", "0")
			if err == nil || !strings.Contains(err.Error(), failing) {
				t.Fatalf("error %v, want one naming job %s", err, failing)
			}
			entries, _ := os.ReadDir(base)
			if len(entries) != 0 {
				t.Errorf("left behind: %v", entries)
			}
		})
	}
}

func TestGrepUsage(t *testing.T) {
	tests := []struct {
		args    []string
		problem string
	}{
		{[]string{"in", "out"}, "need 3 or 4 arguments"},
		{[]string{"in", "out", "a(", "0"}, `bad regular expression "a("`},
		{[]string{"in", "out", "a", "x"}, `bad group "x"`},
		{[]string{"in", "out", "a", "-1"}, `bad group "-1"`},
		{[]string{"in", "out", "(a)", "2"}, "group 2 out of range"},
	}
	for _, tt := range tests {
		jc := &fakeClient{}
		err := runApp(t, "grep", jc, tt.args...)
		var ue *mr.UsageError
		if !errors.As(err, &ue) || !strings.Contains(ue.Problem, tt.problem) {
			t.Errorf("args %q: error %v, want a usage error containing %q", tt.args, err, tt.problem)
		}
		if len(jc.specs) != 0 {
			t.Errorf("args %q: ran %d jobs", tt.args, len(jc.specs))
		}
	}
}

func TestSiblingPath(t *testing.T) {
	tests := []struct{ target, dir string }{
		{"/a/b/out", "/a/b"},
		{"/a/b/out/", "/a/b"},
		{"out", "."},
		{"hdfs://nn:8020/user/x/out", "hdfs://nn:8020/user/x"},
		{"file:///tmp/out", "file:///tmp"},
	}
	for _, tt := range tests {
		got := siblingPath(tt.target, ".t-")
		i := strings.LastIndex(got, "/")
		dir, name := ".", got
		if i >= 0 {
			dir, name = got[:i], got[i+1:]
		}
		if dir != tt.dir || !strings.HasPrefix(name, ".t-") || len(name) != 3+16 {
			t.Errorf("siblingPath(%q) = %q, want %s/.t-<16 hex>", tt.target, got, tt.dir)
		}
	}
	if a, b := siblingPath("/x/o", "p"), siblingPath("/x/o", "p"); a == b {
		t.Errorf("two temporary names are equal: %s", a)
	}
}
