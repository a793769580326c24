package workloads

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Profiles are the scale profiles, smallest first, with HiBench's names:
// tiny runs in seconds and large in minutes on a 2-core machine; huge and
// gigantic are for real clusters.
var Profiles = []string{"tiny", "small", "large", "huge", "gigantic"}

// isProfile tells whether p is one of Profiles.
func isProfile(p string) bool {
	for _, q := range Profiles {
		if q == p {
			return true
		}
	}
	return false
}

// Entry is one "key value" line of a conf file.
type Entry struct {
	Key, Value string
	File       string
	Line       int
}

// ConfError is a conf file problem, naming the file, the line and (when
// there is one) the key.
type ConfError struct {
	File    string
	Line    int
	Key     string
	Problem string
}

func (e *ConfError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	if e.Key != "" {
		fmt.Fprintf(&b, ": key %s", e.Key)
	}
	b.WriteString(": ")
	b.WriteString(e.Problem)
	return b.String()
}

// ParseConf parses HiBench's conf format: one "key value" pair per line,
// key and value separated by blanks (spaces or tabs), the value running to
// the end of the line with surrounding blanks removed. Blank lines and
// lines whose first non-blank character is '#' are skipped. A key without
// a value, a key given twice and a line that is not valid UTF-8 text are
// errors naming file (as given) and line. Keys are not checked here: see
// Load.
func ParseConf(file string, data []byte) ([]Entry, error) {
	var out []Entry
	seen := map[string]int{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimRight(sc.Text(), "\r")
		trimmed := strings.TrimSpace(text)
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		if strings.ContainsRune(trimmed, 0) || !isText(trimmed) {
			return nil, &ConfError{File: file, Line: line, Problem: "not a text line (NUL byte, control character or invalid UTF-8)"}
		}
		key, value, _ := strings.Cut(trimmed, " ")
		if k, v, ok := strings.Cut(trimmed, "\t"); ok && len(k) < len(key) {
			key, value = k, v
		}
		value = strings.TrimSpace(value)
		if value == "" {
			return nil, &ConfError{File: file, Line: line, Key: key, Problem: "has no value (want \"key value\")"}
		}
		if first, dup := seen[key]; dup {
			return nil, &ConfError{File: file, Line: line, Key: key, Problem: fmt.Sprintf("given twice (first on line %d)", first)}
		}
		seen[key] = line
		out = append(out, Entry{Key: key, Value: value, File: file, Line: line})
	}
	if err := sc.Err(); err != nil {
		return nil, &ConfError{File: file, Line: line + 1, Problem: err.Error()}
	}
	return out, nil
}

// isText tells whether s is valid UTF-8 without control characters other
// than tab.
func isText(s string) bool {
	for _, r := range s {
		if r == '\uFFFD' || (r < 0x20 && r != '\t') || r == 0x7f {
			return false
		}
	}
	return true
}

// Global keys of workloads.conf.
const (
	KeyProfile    = "hibench.scale.profile"
	KeyReduces    = "hibench.default.shuffle.parallelism"
	KeyReportDir  = "hibench.report.dir"
	KeyReportName = "hibench.report.name"
	KeyCluster    = "gomr.cluster"
	KeyBinary     = "gomr.mr.binary"
	KeyTrackers   = "gomr.embedded.trackers"
	KeyDataDir    = "gomr.data.dir"
	KeyMonitorMs  = "gomr.monitor.interval.ms"
)

// globalKeys are the keys workloads.conf may set, with their defaults.
var globalKeys = map[string]string{
	KeyProfile:    "tiny",
	KeyReduces:    "2",
	KeyReportDir:  "workloads/report",
	KeyReportName: "hibench.report",
	KeyCluster:    "embedded",
	KeyBinary:     "bin/mr",
	KeyTrackers:   "2",
	KeyDataDir:    "workloads/data",
	KeyMonitorMs:  "200",
}

// Global is the suite's global configuration (workloads.conf).
type Global struct {
	Profile string
	// Cluster is "embedded" or a JobTracker's host:port.
	Cluster string
	// Reduces is the number of reduce tasks of the jobs that let the
	// configuration choose (mapreduce.job.reduces).
	Reduces int
	// Report is the path of the report file; the per-run folders are made
	// beside it.
	Report string
	// Binary is the mr binary the scripts run.
	Binary string
	// Trackers is the number of TaskTrackers of the embedded cluster.
	Trackers int
	// DataDir holds the workloads' input and output (a path or URI).
	DataDir string
	// MonitorMs is the /proc sampling interval in milliseconds.
	MonitorMs int
}

// Overrides are command-line settings that replace those of
// workloads.conf; empty fields leave the file's.
type Overrides struct {
	Profile, Cluster, Report string
}

// Config is the suite's parsed and checked configuration.
type Config struct {
	Dir    string
	Global Global
	// Entries are every entry read, by file (base name), in file order;
	// the global ones with the defaults and overrides applied.
	Entries map[string][]Entry
	// Benchmarks lists the workloads the suite runs, in order
	// (benchmarks.lst).
	Benchmarks []string
	values     map[string]map[string]string // workload -> key -> value
}

// GlobalFile and BenchmarksFile are the names of the global conf file and
// of the suite's workload list in the conf directory.
const (
	GlobalFile     = "workloads.conf"
	BenchmarksFile = "benchmarks.lst"
)

// Load reads and checks the conf directory dir: workloads.conf, one
// <workload>.conf per workload and benchmarks.lst. Unknown keys, unknown
// profiles, values of the wrong kind, missing sizes of the chosen profile
// and files named after no workload are errors naming file, line and key,
// found before anything runs.
func Load(dir string, over Overrides) (*Config, error) {
	c := &Config{Dir: dir, Entries: map[string][]Entry{}, values: map[string]map[string]string{}}
	gpath := filepath.Join(dir, GlobalFile)
	data, err := os.ReadFile(gpath)
	if err != nil {
		return nil, fmt.Errorf("reading the global conf: %w (--conf names the directory holding %s)", err, GlobalFile)
	}
	gents, err := ParseConf(gpath, data)
	if err != nil {
		return nil, err
	}
	if err := c.loadGlobal(gpath, gents, over); err != nil {
		return nil, err
	}
	names, err := filepath.Glob(filepath.Join(dir, "*.conf"))
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	for _, path := range names {
		base := filepath.Base(path)
		if base == GlobalFile {
			continue
		}
		name := strings.TrimSuffix(base, ".conf")
		w := Lookup(name)
		if w == nil {
			return nil, &ConfError{File: path, Problem: fmt.Sprintf("names no workload (workloads: %s)", strings.Join(Names(), ", "))}
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		ents, err := ParseConf(path, data)
		if err != nil {
			return nil, err
		}
		vals, err := checkWorkload(w, path, ents, c.Global.Profile)
		if err != nil {
			return nil, err
		}
		c.values[name] = vals
		c.Entries[base] = ents
	}
	bpath := filepath.Join(dir, BenchmarksFile)
	if data, err := os.ReadFile(bpath); err == nil {
		if c.Benchmarks, err = parseBenchmarks(bpath, data); err != nil {
			return nil, err
		}
	} else if os.IsNotExist(err) {
		c.Benchmarks = Names()
	} else {
		return nil, err
	}
	for _, b := range c.Benchmarks {
		if _, ok := c.values[b]; !ok {
			return nil, &ConfError{File: bpath, Problem: fmt.Sprintf("workload %s has no conf file %s", b, filepath.Join(dir, b+".conf"))}
		}
	}
	return c, nil
}

// loadGlobal checks workloads.conf's entries and fills c.Global.
func (c *Config) loadGlobal(path string, ents []Entry, over Overrides) error {
	vals := map[string]string{}
	for k, v := range globalKeys {
		vals[k] = v
	}
	for _, e := range ents {
		if _, ok := globalKeys[e.Key]; !ok {
			return &ConfError{File: path, Line: e.Line, Key: e.Key, Problem: "unknown key (known: " + strings.Join(sortedKeys(globalKeys), ", ") + ")"}
		}
		vals[e.Key] = e.Value
	}
	lineOf := func(key string) int {
		for _, e := range ents {
			if e.Key == key {
				return e.Line
			}
		}
		return 0
	}
	src := func(key string) (string, int) { return path, lineOf(key) }
	if over.Profile != "" {
		vals[KeyProfile] = over.Profile
		src = func(key string) (string, int) {
			if key == KeyProfile {
				return "--profile", 0
			}
			return path, lineOf(key)
		}
	}
	g := &c.Global
	g.Profile = vals[KeyProfile]
	if !isProfile(g.Profile) {
		f, l := src(KeyProfile)
		return &ConfError{File: f, Line: l, Key: KeyProfile, Problem: fmt.Sprintf("unknown profile %q (profiles: %s)", g.Profile, strings.Join(Profiles, ", "))}
	}
	ints := []struct {
		key string
		min int
		dst *int
	}{{KeyReduces, 1, &g.Reduces}, {KeyTrackers, 1, &g.Trackers}, {KeyMonitorMs, 50, &g.MonitorMs}}
	for _, x := range ints {
		n, err := strconv.Atoi(vals[x.key])
		if err != nil || n < x.min {
			f, l := src(x.key)
			return &ConfError{File: f, Line: l, Key: x.key, Problem: fmt.Sprintf("value %q is not an integer of at least %d", vals[x.key], x.min)}
		}
		*x.dst = n
	}
	if over.Cluster != "" {
		vals[KeyCluster] = over.Cluster
	}
	g.Cluster = vals[KeyCluster]
	if g.Cluster != "embedded" && !strings.Contains(g.Cluster, ":") {
		f, l := src(KeyCluster)
		if over.Cluster != "" {
			f, l = "--jobtracker", 0
		}
		return &ConfError{File: f, Line: l, Key: KeyCluster, Problem: fmt.Sprintf("value %q is neither \"embedded\" nor a JobTracker's host:port", g.Cluster)}
	}
	g.Binary = vals[KeyBinary]
	g.DataDir = vals[KeyDataDir]
	g.Report = filepath.Join(vals[KeyReportDir], vals[KeyReportName])
	if over.Report != "" {
		g.Report = over.Report
		vals[KeyReportDir], vals[KeyReportName] = filepath.Dir(over.Report), filepath.Base(over.Report)
	}
	// The entries as used: every global key with its value and source.
	var used []Entry
	for _, k := range sortedKeys(globalKeys) {
		f, l := src(k)
		if l == 0 && f == path {
			f = "default"
		}
		used = append(used, Entry{Key: k, Value: vals[k], File: f, Line: l})
	}
	c.Entries[GlobalFile] = used
	return nil
}

// checkWorkload checks the entries of w's conf file: every key is
// hibench.<name>.<profile>.<param> for a known profile and parameter of w,
// or hibench.<name>.<setting> for a setting of w; values have the
// parameter's kind; every parameter has a value for profile.
func checkWorkload(w *Workload, path string, ents []Entry, profile string) (map[string]string, error) {
	prefix := "hibench." + w.Name + "."
	vals := map[string]string{}
	for k, v := range w.Settings {
		vals[prefix+k] = v.Default
	}
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Key, prefix)
		if !ok {
			return nil, &ConfError{File: path, Line: e.Line, Key: e.Key, Problem: "unknown key: keys of this file start with " + prefix}
		}
		if s, ok := w.Settings[rest]; ok {
			if err := s.check(e.Value); err != nil {
				return nil, &ConfError{File: path, Line: e.Line, Key: e.Key, Problem: err.Error()}
			}
			vals[e.Key] = e.Value
			continue
		}
		prof, param, ok := strings.Cut(rest, ".")
		p, known := w.Params[param]
		if !ok || !known {
			return nil, &ConfError{File: path, Line: e.Line, Key: e.Key, Problem: "unknown key (known: " + strings.Join(w.keyNames(), ", ") + ")"}
		}
		if !isProfile(prof) {
			return nil, &ConfError{File: path, Line: e.Line, Key: e.Key, Problem: fmt.Sprintf("unknown profile %q (profiles: %s)", prof, strings.Join(Profiles, ", "))}
		}
		if err := p.check(e.Value); err != nil {
			return nil, &ConfError{File: path, Line: e.Line, Key: e.Key, Problem: err.Error()}
		}
		vals[e.Key] = e.Value
	}
	for _, param := range sortedKeys(w.Params) {
		key := prefix + profile + "." + param
		if _, ok := vals[key]; !ok {
			return nil, &ConfError{File: path, Key: key, Problem: fmt.Sprintf("missing: profile %s needs it", profile)}
		}
	}
	return vals, nil
}

// parseBenchmarks reads benchmarks.lst: one workload name per line, '#'
// comments and blank lines skipped.
func parseBenchmarks(path string, data []byte) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	for i, line := range strings.Split(string(data), "\n") {
		name := strings.TrimSpace(line)
		if name == "" || strings.HasPrefix(name, "#") {
			continue
		}
		if Lookup(name) == nil {
			return nil, &ConfError{File: path, Line: i + 1, Problem: fmt.Sprintf("unknown workload %q (workloads: %s)", name, strings.Join(Names(), ", "))}
		}
		if seen[name] {
			return nil, &ConfError{File: path, Line: i + 1, Problem: fmt.Sprintf("workload %s listed twice", name)}
		}
		seen[name] = true
		out = append(out, name)
	}
	return out, nil
}

// Param describes a conf value of a workload: a per-profile size or a
// setting that applies to every profile.
type Param struct {
	Doc string
	// Int values are integers of at least Min; others are strings.
	Int bool
	Min int64
	// Default is a setting's value when the file does not set it.
	Default string
}

func (p Param) check(v string) error {
	if !p.Int {
		return nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < p.Min {
		return fmt.Errorf("value %q is not an integer of at least %d", v, p.Min)
	}
	return nil
}

// Int returns the integer value of w's parameter param for the profile.
func (c *Config) Int(w, param string) int64 {
	n, _ := strconv.ParseInt(c.Value(w, param), 10, 64) // checked by Load
	return n
}

// Value returns the value of w's parameter param for the profile, or of
// w's setting param.
func (c *Config) Value(w, param string) string {
	vals := c.values[w]
	if v, ok := vals["hibench."+w+"."+param]; ok {
		return v
	}
	return vals["hibench."+w+"."+c.Global.Profile+"."+param]
}

// Has tells whether the configuration has a conf file for workload w.
func (c *Config) Has(w string) bool { _, ok := c.values[w]; return ok }

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
