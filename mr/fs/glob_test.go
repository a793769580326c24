package fs

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestGlobLocal(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"a.txt", "b.txt", "c.log", "sub/d.txt", "sub2/e.txt", "sub2/f.log"} {
		p := filepath.Join(dir, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	j := func(fs ...string) []string {
		var out []string
		for _, f := range fs {
			out = append(out, filepath.Join(dir, f))
		}
		return out
	}
	cases := []struct {
		pattern string
		want    []string
	}{
		{dir + "/*.txt", j("a.txt", "b.txt")},
		{dir + "/?.log", j("c.log")},
		{dir + "/[ab].txt", j("a.txt", "b.txt")},
		{dir + "/sub*/*.txt", j("sub/d.txt", "sub2/e.txt")},
		{dir + "/sub*", j("sub", "sub2")},
		{dir + "/*/f.log", j("sub2/f.log")},
		{dir + "/a.txt/*", nil},
		{dir + "/*.none", nil},
		{dir + "/no-dir/*.txt", nil},
		{dir + "/a.txt", j("a.txt")}, // no metacharacters: as it is
		{"file://" + dir + "/*.log", []string{"file://" + dir + "/c.log"}},
	}
	for _, c := range cases {
		got, err := Glob(c.pattern)
		if err != nil {
			t.Errorf("Glob(%s): %v", c.pattern, err)
			continue
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("Glob(%s) = %q, want %q", c.pattern, got, c.want)
		}
	}
	if _, err := Glob(dir + "/[a.txt"); err == nil || !strings.Contains(err.Error(), "[a.txt") {
		t.Errorf("Glob of a malformed pattern: %v, want an error naming it", err)
	}
}
