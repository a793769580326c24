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

// treeFS is a filesystem of URIs for globIn: a set of directories and
// files, listed as HDFS lists them (entries named by full URI, sorted).
type treeFS struct {
	FS
	dirs  map[string]bool
	files map[string]bool
}

func (f treeFS) List(p string) ([]FileInfo, error) {
	if f.files[p] {
		return []FileInfo{{Path: p}}, nil
	}
	if !f.dirs[p] {
		return nil, ErrNotExist
	}
	var out []FileInfo
	prefix := strings.TrimSuffix(p, "/") + "/"
	for _, set := range []map[string]bool{f.dirs, f.files} {
		for q := range set {
			if rest, ok := strings.CutPrefix(q, prefix); ok && rest != "" && !strings.Contains(rest, "/") {
				out = append(out, FileInfo{Path: q, IsDir: f.dirs[q]})
			}
		}
	}
	return out, nil
}

func (f treeFS) Stat(p string) (FileInfo, error) {
	if f.dirs[p] || f.files[p] {
		return FileInfo{Path: p, IsDir: f.dirs[p]}, nil
	}
	return FileInfo{}, ErrNotExist
}

// TestGlobURIs: patterns in URI form (HDFS's) split at the right
// directory and match in the same form.
func TestGlobURIs(t *testing.T) {
	nn := "hdfs://nn:8020"
	tree := treeFS{
		dirs: map[string]bool{nn + "/": true, nn + "/logs": true, nn + "/logs/2026-01": true, nn + "/logs/2026-02": true, nn + "/logs/2025-12": true},
		files: map[string]bool{nn + "/a.txt": true, nn + "/logs/2026-01/part-00000": true, nn + "/logs/2026-02/part-00000": true,
			nn + "/logs/2026-02/part-00001": true, nn + "/logs/2026-02/_SUCCESS": true, nn + "/logs/2025-12/part-00000": true},
	}
	for _, c := range []struct {
		pattern, base string
		want          []string
	}{
		{nn + "/logs/2026-*/part-*", nn + "/logs", []string{nn + "/logs/2026-01/part-00000", nn + "/logs/2026-02/part-00000", nn + "/logs/2026-02/part-00001"}},
		{nn + "/*.txt", nn + "/", []string{nn + "/a.txt"}},
		{nn + "/logs/*/_SUCCESS", nn + "/logs", []string{nn + "/logs/2026-02/_SUCCESS"}},
		{nn + "/logs/2027-*", nn + "/logs", nil},
	} {
		base, elems, err := splitPattern(c.pattern)
		if err != nil || base != c.base {
			t.Errorf("splitPattern(%s) = %s, %v; want base %s", c.pattern, base, err, c.base)
			continue
		}
		if got := globIn(tree, base, elems); !reflect.DeepEqual(got, c.want) {
			t.Errorf("glob %s = %q, want %q", c.pattern, got, c.want)
		}
	}
}
