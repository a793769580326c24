package workloads

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseConf(t *testing.T) {
	cases := []struct {
		name, in string
		want     []Entry // Key, Value, Line
		err      string
	}{
		{name: "empty", in: "", want: nil},
		{name: "comments and blanks", in: "# c\n\n   \n  # indented\n", want: nil},
		{name: "spaces", in: "a.b   1\n", want: []Entry{{Key: "a.b", Value: "1", Line: 1}}},
		{name: "tab", in: "a\t\tx y  \n", want: []Entry{{Key: "a", Value: "x y", Line: 1}}},
		{name: "crlf", in: "a 1\r\nb 2\r\n", want: []Entry{{Key: "a", Value: "1", Line: 1}, {Key: "b", Value: "2", Line: 2}}},
		{name: "leading blanks", in: "\n  k  v # not a comment\n", want: []Entry{{Key: "k", Value: "v # not a comment", Line: 2}}},
		{name: "tab before space", in: "k\tv w\n", want: []Entry{{Key: "k", Value: "v w", Line: 1}}},
		{name: "no value", in: "a 1\nlonely\n", err: "f.conf:2: key lonely: has no value"},
		{name: "blank value", in: "k   \t \n", err: "f.conf:1: key k: has no value"},
		{name: "duplicate", in: "a 1\n#\na 2\n", err: "f.conf:3: key a: given twice (first on line 1)"},
		{name: "NUL", in: "a 1\nb \x00\n", err: "f.conf:2: not a text line"},
		{name: "bad UTF-8", in: "a \xff\n", err: "f.conf:1: not a text line"},
		{name: "control", in: "a b\x01\n", err: "f.conf:1: not a text line"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ParseConf("f.conf", []byte(c.in))
			if c.err != "" {
				if err == nil || !strings.HasPrefix(err.Error(), c.err) {
					t.Fatalf("error %v, want one starting with %q", err, c.err)
				}
				var ce *ConfError
				if !errors.As(err, &ce) {
					t.Fatalf("error %T is not a *ConfError", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(c.want) {
				t.Fatalf("got %v, want %v", got, c.want)
			}
			for i, w := range c.want {
				if got[i].Key != w.Key || got[i].Value != w.Value || got[i].Line != w.Line || got[i].File != "f.conf" {
					t.Errorf("entry %d = %+v, want %+v", i, got[i], w)
				}
			}
		})
	}
}

// writeConfDir writes files (name -> text) into a new directory, with a
// valid workloads.conf and wordcount.conf unless files has them.
func writeConfDir(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	all := map[string]string{
		GlobalFile:       "hibench.scale.profile tiny\n",
		"wordcount.conf": "hibench.wordcount.tiny.datasize 100\nhibench.wordcount.small.datasize 1000\n",
		BenchmarksFile:   "wordcount\n",
	}
	for k, v := range files {
		all[k] = v
	}
	for name, text := range all {
		if text == "-" {
			continue // left out
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestLoad(t *testing.T) {
	cases := []struct {
		name  string
		files map[string]string
		over  Overrides
		err   string // "" for success; else "<file>:<line>: key <key>: ..." after the directory
	}{
		{name: "valid", files: nil},
		{name: "unknown global key", files: map[string]string{GlobalFile: "hibench.scale.profile tiny\nhibench.scale.profil small\n"},
			err: "workloads.conf:2: key hibench.scale.profil: unknown key"},
		{name: "unknown profile", files: map[string]string{GlobalFile: "# x\nhibench.scale.profile medium\n"},
			err: "workloads.conf:2: key hibench.scale.profile: unknown profile \"medium\""},
		{name: "unknown profile flag", over: Overrides{Profile: "bigger"},
			err: "--profile: key hibench.scale.profile: unknown profile \"bigger\""},
		{name: "profile flag wins", files: map[string]string{GlobalFile: "hibench.scale.profile medium\n"}, over: Overrides{Profile: "small"}},
		{name: "bad reduces", files: map[string]string{GlobalFile: "hibench.default.shuffle.parallelism 0\n"},
			err: "workloads.conf:1: key hibench.default.shuffle.parallelism: value \"0\" is not an integer of at least 1"},
		{name: "bad cluster", files: map[string]string{GlobalFile: "gomr.cluster somewhere\n"},
			err: "workloads.conf:1: key gomr.cluster: value \"somewhere\" is neither"},
		{name: "workload unknown profile", files: map[string]string{"wordcount.conf": "hibench.wordcount.tiny.datasize 1\nhibench.wordcount.medium.datasize 5\n"},
			err: "wordcount.conf:2: key hibench.wordcount.medium.datasize: unknown profile \"medium\""},
		{name: "workload unknown param", files: map[string]string{"wordcount.conf": "hibench.wordcount.tiny.datasize 1\nhibench.wordcount.tiny.size 5\n"},
			err: "wordcount.conf:2: key hibench.wordcount.tiny.size: unknown key"},
		{name: "workload other prefix", files: map[string]string{"wordcount.conf": "hibench.sort.tiny.datasize 1\n"},
			err: "wordcount.conf:1: key hibench.sort.tiny.datasize: unknown key: keys of this file start with hibench.wordcount."},
		{name: "workload bad size", files: map[string]string{"wordcount.conf": "hibench.wordcount.tiny.datasize 1k\n"},
			err: "wordcount.conf:1: key hibench.wordcount.tiny.datasize: value \"1k\" is not an integer of at least 1"},
		{name: "workload missing profile size", files: map[string]string{"wordcount.conf": "hibench.wordcount.small.datasize 1\n"},
			err: "wordcount.conf: key hibench.wordcount.tiny.datasize: missing: profile tiny needs it"},
		{name: "workload setting", files: map[string]string{"grep.conf": "hibench.grep.tiny.datasize 1\nhibench.grep.regex a+\n"}},
		{name: "unknown workload file", files: map[string]string{"wordcont.conf": "a b\n"},
			err: "wordcont.conf: names no workload"},
		{name: "benchmarks unknown", files: map[string]string{BenchmarksFile: "wordcount\n\nwordcont\n"},
			err: "benchmarks.lst:3: unknown workload \"wordcont\""},
		{name: "benchmarks without conf", files: map[string]string{BenchmarksFile: "sort\n"},
			err: "benchmarks.lst: workload sort has no conf file"},
		{name: "no global", files: map[string]string{GlobalFile: "-"}, err: "reading the global conf"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := writeConfDir(t, c.files)
			cfg, err := Load(dir, c.over)
			if c.err == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Load succeeded (%+v), want an error containing %q", cfg.Global, c.err)
			}
			if !strings.Contains(err.Error(), c.err) {
				t.Fatalf("error %q, want one containing %q", err, c.err)
			}
		})
	}
}

func TestLoadValues(t *testing.T) {
	dir := writeConfDir(t, map[string]string{
		GlobalFile:  "hibench.scale.profile small\nhibench.report.dir /tmp/r\ngomr.cluster 10.0.0.1:9001\n",
		"grep.conf": "hibench.grep.small.datasize 77\nhibench.grep.tiny.datasize 1\n",
	})
	c, err := Load(dir, Overrides{Report: "/x/y.report"})
	if err != nil {
		t.Fatal(err)
	}
	g := c.Global
	if g.Profile != "small" || g.Cluster != "10.0.0.1:9001" || g.Report != "/x/y.report" || g.Reduces != 2 || g.Trackers != 2 {
		t.Errorf("global %+v", g)
	}
	if got := c.Int("wordcount", "datasize"); got != 1000 {
		t.Errorf("wordcount datasize %d, want 1000 (small)", got)
	}
	if got := c.Int("grep", "datasize"); got != 77 {
		t.Errorf("grep datasize %d, want 77", got)
	}
	if got := c.Value("grep", "regex"); got != "pa[a-z]*" {
		t.Errorf("grep regex %q, want the default", got)
	}
	if len(c.Benchmarks) != 1 || c.Benchmarks[0] != "wordcount" {
		t.Errorf("benchmarks %v", c.Benchmarks)
	}
}

// TestShippedConf: the conf files of workloads/conf load at every profile
// and give HiBench's scale points.
func TestShippedConf(t *testing.T) {
	for _, p := range Profiles {
		c, err := Load("conf", Overrides{Profile: p})
		if err != nil {
			t.Fatalf("profile %s: %v", p, err)
		}
		if len(c.Benchmarks) != len(Names()) {
			t.Errorf("benchmarks.lst lists %v, want every workload %v", c.Benchmarks, Names())
		}
	}
	want := map[string][]int64{ // tiny, small, large, huge
		"wordcount": {32000, 320000000, 3200000000, 32000000000},
		"terasort":  {32000, 3200000, 32000000, 320000000},
	}
	for w, sizes := range want {
		for i, size := range sizes {
			c, _ := Load("conf", Overrides{Profile: Profiles[i]})
			if got := c.Int(w, "datasize"); got != size {
				t.Errorf("%s %s datasize %d, want %d", w, Profiles[i], got, size)
			}
		}
	}
	for i, secs := range []int64{3, 30, 90, 90} {
		c, _ := Load("conf", Overrides{Profile: Profiles[i]})
		if got := c.Int("sleep", "map.seconds"); got != secs {
			t.Errorf("sleep %s map.seconds %d, want %d", Profiles[i], got, secs)
		}
	}
}

// FuzzParseConf: any input parses or fails with an error naming the file;
// parsed entries have a key without blanks and a trimmed, non-empty
// value, on increasing lines, and checking them as a workload's conf
// never panics and names the file on error.
func FuzzParseConf(f *testing.F) {
	f.Add([]byte("hibench.wordcount.tiny.datasize 32000\n"))
	f.Add([]byte("# c\n a\tb c \r\nx\n"))
	f.Add([]byte("hibench.wordcount.medium.datasize 5\nhibench.wordcount.tiny.datasize x\n"))
	f.Add([]byte("a 1\na 2\n\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ents, err := ParseConf("fuzz.conf", data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz.conf") {
				t.Fatalf("error %q does not name the file", err)
			}
			return
		}
		last := 0
		for _, e := range ents {
			if e.Key == "" || strings.ContainsAny(e.Key, " \t") {
				t.Fatalf("bad key %q", e.Key)
			}
			if e.Value == "" || strings.TrimSpace(e.Value) != e.Value {
				t.Fatalf("bad value %q", e.Value)
			}
			if e.Line <= last {
				t.Fatalf("line %d after %d", e.Line, last)
			}
			last = e.Line
		}
		if _, err := checkWorkload(Lookup("wordcount"), "fuzz.conf", ents, "tiny"); err != nil && !strings.HasPrefix(err.Error(), "fuzz.conf") {
			t.Fatalf("error %q does not name the file", err)
		}
	})
}
