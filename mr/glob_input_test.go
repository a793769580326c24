package mr

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"gomr/mr/fs"
)

// TestInputGlobs: input paths with glob metacharacters are expanded, as
// Hadoop's FileInputFormat expands them (hidden matches left out, matched
// directories read as if named); a pattern matching nothing is an
// *InputPathError saying so.
func TestInputGlobs(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"a.txt", "b.txt", "c.log", "_x.txt", "d/e.txt", "d/f.log"} {
		p := filepath.Join(dir, f)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte("line\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	paths := func(inputs ...string) ([]string, error) {
		splits, err := TextInput{}.Splits(SplitContext{Inputs: inputs})
		var out []string
		for _, s := range splits {
			rel, _ := filepath.Rel(dir, s.Path)
			out = append(out, rel)
		}
		return out, err
	}
	for _, c := range []struct {
		inputs []string
		want   []string
	}{
		{[]string{dir + "/*.txt"}, []string{"a.txt", "b.txt"}},
		{[]string{dir + "/*.log", dir + "/[d]"}, []string{"c.log", "d/e.txt", "d/f.log"}},
		{[]string{dir + "/*/*.txt"}, []string{"d/e.txt"}},
	} {
		got, err := paths(c.inputs...)
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("inputs %q: %q, %v; want %q", c.inputs, got, err, c.want)
		}
	}
	for _, pattern := range []string{dir + "/*.none", dir + "/_*"} {
		_, err := paths(dir+"/a.txt", pattern)
		var ipe *InputPathError
		if !errors.As(err, &ipe) || !errors.Is(err, fs.ErrNotExist) || err.Error() != "input pattern "+pattern+" matches no files" {
			t.Errorf("pattern %s matching nothing: %v, want an InputPathError saying so", pattern, err)
		}
	}
}
