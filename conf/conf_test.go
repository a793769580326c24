package conf

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"
	"unicode"
)

// writeFile writes a YAML file in a temporary directory and returns its path.
func writeFile(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "mr.yaml")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// fakeEnv returns lookup and environ functions over a fixed environment.
func fakeEnv(env map[string]string) (func(string) (string, bool), func() []string) {
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	environ := func() []string {
		var out []string
		for k, v := range env {
			out = append(out, k+"="+v)
		}
		return out
	}
	return lookup, environ
}

func TestRegistry(t *testing.T) {
	keys := Keys()
	// Only conf's own keys are registered in this test binary; the
	// policies' and the speculator's are checked in their packages.
	if want := len(keyTable); len(keys) != want {
		t.Fatalf("Keys() has %d keys, want %d (conf's key table)", len(keys), want)
	}
	if !sort.SliceIsSorted(keys, func(i, j int) bool { return keys[i].Name < keys[j].Name }) {
		t.Error("Keys() is not sorted by name")
	}
	if _, err := newTable(keyTable); err != nil {
		t.Fatalf("key table: %v", err)
	}
	cluster := map[string]bool{
		"mapreduce.jobtracker.address": true, "mapreduce.jobtracker.http.address": true,
		"mapreduce.jobtracker.expire.trackers.interval": true, "mapreduce.jobtracker.jobhistory.location": true,
		"mapreduce.jobtracker.system.dir": true, "mapreduce.jobtracker.restart.recover": true, "mapreduce.jobtracker.restart.tracker-wait": true, "mapreduce.jobtracker.map-events.max-segments": true,
		"mapreduce.jobtracker.tasktracker.maxblacklists": true, "mapreduce.jobtracker.blacklist.fault-timeout-window": true,
		"mapreduce.jobtracker.blacklist.max.percent": true, "mapreduce.shuffle.request.window": true,
		"mapreduce.tasktracker.map.tasks.maximum":    true,
		"mapreduce.tasktracker.reduce.tasks.maximum": true, "mapreduce.tasktracker.heartbeat.interval": true,
		"mapreduce.tasktracker.outofband.heartbeat": true, "mapreduce.tasktracker.heartbeat.pacing": true, "mapreduce.tasktracker.http.address": true,
		"mapreduce.tasktracker.report.address": true, "mapreduce.tasktracker.host.name": true, "mapreduce.tasktracker.criu.path": true,
		"mapreduce.cluster.local.dir": true, "log.level": true, "mapreduce.job.userlog.retain.hours": true,
		"mapreduce.cluster.tls.enabled": true, "mapreduce.cluster.tls.ca": true, "mapreduce.cluster.tls.cert": true,
		"mapreduce.cluster.tls.key": true, "mapreduce.cluster.acls.enabled": true, "mapreduce.cluster.administrators": true,
		"mapred.jobtracker.retirejob.interval": true, "mapred.jobtracker.retirejob.check": true,
		"mapred.jobtracker.completeuserjobs.maximum": true, "mapred.job.tracker.retiredjobs.cache.size": true,
	}
	for _, k := range keys {
		isCluster := cluster[k.Name]
		if k.Job == isCluster {
			t.Errorf("key %s: Job = %v, want %v", k.Name, k.Job, !isCluster)
		}
		if got, ok := Lookup(k.Name); !ok || got.Name != k.Name {
			t.Errorf("Lookup(%q) = %v, %v", k.Name, got.Name, ok)
		}
	}
	for name := range cluster {
		if _, ok := Lookup(name); !ok {
			t.Errorf("cluster key %s missing", name)
		}
	}
	if _, ok := Lookup("no.such.key"); ok {
		t.Error("Lookup of an unknown key succeeded")
	}
}

func TestDefaults(t *testing.T) {
	c := Default()
	tests := []struct {
		key  string
		want any
	}{
		{"mapreduce.task.io.sort.mb", 100},
		{"mapreduce.map.sort.spill.percent", 0.80},
		{"mapreduce.map.combine.table.percent", 0.25},
		{"mapreduce.task.io.sort.factor", 10},
		{"mapreduce.job.reduce.slowstart.completedmaps", 0.05},
		{"mapreduce.map.maxattempts", 4},
		{"mapreduce.reduce.maxattempts", 4},
		{"mapreduce.job.reduces", 1},
		{"mapreduce.reduce.shuffle.parallelcopies", 5},
		{"mapreduce.reduce.shuffle.fetch.retries", 3},
		{"mapreduce.reduce.shuffle.retry.delay.ms", 200},
		{"mapreduce.job.maxfetchfailures.per.map", 3},
		{"mapreduce.reduce.memory.mb", 1024},
		{"mapreduce.map.memory.mb", 0},
		{"mapreduce.task.gc.percent", 25},
		{"mapreduce.task.profile", false},
		{"mapreduce.task.profiledir", ""},
		{"mapreduce.reduce.shuffle.input.buffer.percent", 0.70},
		{"mapreduce.reduce.shuffle.memory.limit.percent", 0.25},
		{"mapreduce.reduce.shuffle.merge.percent", 0.66},
		{"mapreduce.reduce.merge.inmem.threshold", 1000},
		{"mapreduce.reduce.input.buffer.percent", 0.70},
		{"mapreduce.input.fileinputformat.split.maxsize", int64(134217728)},
		{"mapreduce.input.fileinputformat.split.minsize", int64(1)},
		{"mapreduce.task.timeout", 600000},
		{"mapreduce.job.userlog.retain.hours", 24.0},
		{"mapreduce.task.progress.report.interval", 500},
		{"mapreduce.job.maps", 2},
		{"mapreduce.terasort.partitions.sample", 100000},
		{"mapreduce.terasort.num.partitions", 10},
		{"mapreduce.job.name", ""},
		{"mapreduce.job.priority", "NORMAL"},
		{"mapreduce.job.queuename", "default"},
		{"mapreduce.job.deadline.seconds", 0.0},
		{"mapreduce.jobtracker.address", "127.0.0.1:8021"},
		{"mapreduce.jobtracker.http.address", "127.0.0.1:50030"},
		{"mapreduce.jobtracker.expire.trackers.interval", 600000},
		{"mapreduce.jobtracker.jobhistory.location", "/tmp/gomr/history"},
		{"mapreduce.jobtracker.system.dir", ""},
		{"mapreduce.jobtracker.restart.recover", true},
		{"mapreduce.jobtracker.restart.tracker-wait", 30000},
		{"mapreduce.jobtracker.map-events.max-segments", int64(1000000)},
		{"mapreduce.jobclient.retry.timeout", 120000},
		{"mapreduce.job.maxtaskfailures.per.tracker", 4},
		{"mapreduce.job.blacklist.max.percent", 0.25},
		{"mapreduce.jobtracker.tasktracker.maxblacklists", 4},
		{"mapreduce.jobtracker.blacklist.fault-timeout-window", 180},
		{"mapreduce.jobtracker.blacklist.max.percent", 0.5},
		{"mapreduce.shuffle.request.window", 60000},
		{"mapred.jobtracker.retirejob.interval", 86400000},
		{"mapred.jobtracker.retirejob.check", 60000},
		{"mapred.jobtracker.completeuserjobs.maximum", 100},
		{"mapred.job.tracker.retiredjobs.cache.size", 1000},
		{"mapreduce.tasktracker.map.tasks.maximum", 2},
		{"mapreduce.tasktracker.reduce.tasks.maximum", 2},
		{"mapreduce.tasktracker.heartbeat.interval", 300},
		{"mapreduce.tasktracker.outofband.heartbeat", true},
		{"mapreduce.tasktracker.heartbeat.pacing", "send"},
		{"mapreduce.tasktracker.http.address", "127.0.0.1:0"},
		{"mapreduce.tasktracker.report.address", "127.0.0.1:0"},
		{"mapreduce.tasktracker.host.name", ""},
		{"mapreduce.tasktracker.criu.path", "/opt/gomr/criu/criu.sh"},
		{"mapreduce.cluster.local.dir", "/tmp/gomr/local"},
		{"log.level", "info"},
		{"mapreduce.cluster.tls.enabled", false},
		{"mapreduce.cluster.tls.ca", ""},
		{"mapreduce.cluster.tls.cert", ""},
		{"mapreduce.cluster.tls.key", ""},
		{"mapreduce.cluster.acls.enabled", false},
		{"mapreduce.cluster.administrators", ""},
		{"mapreduce.job.acl-view-job", ""},
		{"mapreduce.job.acl-modify-job", ""},
	}
	if len(tests) != len(keyTable) {
		t.Errorf("test lists %d keys, the table has %d", len(tests), len(keyTable))
	}
	for _, tt := range tests {
		var got any
		switch tt.want.(type) {
		case int:
			got = c.Int(tt.key)
		case int64:
			got = c.Int64(tt.key)
		case float64:
			got = c.Float(tt.key)
		case bool:
			got = c.Bool(tt.key)
		case string:
			got = c.String(tt.key)
		}
		if got != tt.want {
			t.Errorf("%s = %#v, want %#v", tt.key, got, tt.want)
		}
	}
	for _, e := range c.Entries() {
		if e.Source != SourceDefault {
			t.Errorf("%s: source %q, want default", e.Key, e.Source)
		}
	}
}

func TestAccessors(t *testing.T) {
	c, err := Default().With(map[string]string{
		"mapreduce.task.timeout":                        "1500",
		"mapreduce.job.deadline.seconds":                "2.5",
		"mapreduce.input.fileinputformat.split.maxsize": "8589934592",
		"mapreduce.task.io.sort.mb":                     " 200 ",
	}, SourceFlag)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := c.Duration("mapreduce.task.timeout"), 1500*time.Millisecond; got != want {
		t.Errorf("Duration(task.timeout) = %v, want %v", got, want)
	}
	if got, want := c.Duration("mapreduce.job.deadline.seconds"), 2500*time.Millisecond; got != want {
		t.Errorf("Duration(deadline.seconds) = %v, want %v", got, want)
	}
	if got, want := c.Int64("mapreduce.input.fileinputformat.split.maxsize"), int64(8589934592); got != want {
		t.Errorf("Int64(split.maxsize) = %v, want %v", got, want)
	}
	if got, want := c.Int64("mapreduce.task.io.sort.mb"), int64(200); got != want {
		t.Errorf("Int64(sort.mb) = %v, want %v", got, want)
	}
	if got, want := c.String("mapreduce.task.io.sort.mb"), "200"; got != want {
		t.Errorf("String(sort.mb) = %q, want %q", got, want)
	}
	if got, want := c.Float("mapreduce.task.io.sort.mb"), 200.0; got != want {
		t.Errorf("Float(sort.mb) = %v, want %v", got, want)
	}
	if got, want := c.String("mapreduce.tasktracker.outofband.heartbeat"), "true"; got != want {
		t.Errorf("String(bool key) = %q, want %q", got, want)
	}

	panics := []struct {
		name string
		call func()
		want string
	}{
		{"unknown key", func() { c.String("no.such") }, `conf: unknown configuration key "no.such"`},
		{"Int on float", func() { c.Int("mapreduce.map.sort.spill.percent") }, `conf: Int called on configuration key "mapreduce.map.sort.spill.percent" of type float`},
		{"Int64 on string", func() { c.Int64("log.level") }, `conf: Int64 called on configuration key "log.level" of type string`},
		{"Float on bool", func() { c.Float("mapreduce.tasktracker.outofband.heartbeat") }, `conf: Float called on configuration key "mapreduce.tasktracker.outofband.heartbeat" of type bool`},
		{"Bool on int", func() { c.Bool("mapreduce.job.maps") }, `conf: Bool called on configuration key "mapreduce.job.maps" of type int`},
		{"Duration on unitless int", func() { c.Duration("mapreduce.job.maps") }, `conf: Duration called on configuration key "mapreduce.job.maps" of type int`},
		{"Duration on MiB", func() { c.Duration("mapreduce.task.io.sort.mb") }, `conf: Duration called on configuration key "mapreduce.task.io.sort.mb" of type int`},
	}
	for _, tt := range panics {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				if r := recover(); r != tt.want {
					t.Errorf("panic %v, want %q", r, tt.want)
				}
			}()
			tt.call()
		})
	}
}

// testTable is a small table with one key of every type, for tests that
// need a Duration key (the registry has none) or exact Print output.
func testTable(t *testing.T) *table {
	t.Helper()
	tab, err := newTable([]Key{
		{Name: "t.int", Type: Int, Default: "5", Description: "an int", Check: between(1, 10), Job: true},
		{Name: "t.str", Type: String, Default: "", Description: "a string", Job: true},
		{Name: "t.dur", Type: Duration, Default: "500ms", Description: "a duration", Check: func(v any) error {
			if v.(time.Duration) < 0 {
				return errFor("want a duration >= 0")
			}
			return nil
		}, Job: true},
		{Name: "t.flag", Type: Bool, Default: "false", Description: "a flag"},
	})
	if err != nil {
		t.Fatal(err)
	}
	return tab
}

type errFor string

func (e errFor) Error() string { return string(e) }

func TestDurationKey(t *testing.T) {
	tab := testTable(t)
	c := tab.defaultConfig()
	if got := c.Duration("t.dur"); got != 500*time.Millisecond {
		t.Errorf("default t.dur = %v", got)
	}
	c2, err := c.With(map[string]string{"t.dur": "2m"}, "test")
	if err != nil {
		t.Fatal(err)
	}
	if got := c2.Duration("t.dur"); got != 2*time.Minute {
		t.Errorf("t.dur = %v, want 2m", got)
	}
	if c.Duration("t.dur") != 500*time.Millisecond {
		t.Error("With changed the original Config")
	}
	if got := c2.Entries()[0]; got != (Entry{Key: "t.dur", Value: "2m", Source: "test", Description: "a duration"}) {
		t.Errorf("entry %+v", got)
	}
}

func TestBadValues(t *testing.T) {
	tab := testTable(t)
	tests := []struct {
		key, val, want string
	}{
		{"mapreduce.task.io.sort.mb", "abc", `invalid value "abc" for configuration key "mapreduce.task.io.sort.mb" in -D: want an integer from 1 to 2047 (MiB)`},
		{"mapreduce.task.io.sort.mb", "2048", `invalid value "2048" for configuration key "mapreduce.task.io.sort.mb" in -D: want an integer from 1 to 2047 (MiB)`},
		{"mapreduce.task.io.sort.mb", "0", `invalid value "0" for configuration key "mapreduce.task.io.sort.mb" in -D: want an integer from 1 to 2047 (MiB)`},
		{"mapreduce.task.io.sort.mb", "1.5", `invalid value "1.5" for configuration key "mapreduce.task.io.sort.mb" in -D: want an integer from 1 to 2047 (MiB)`},
		{"mapreduce.task.io.sort.mb", "99999999999999999999", `invalid value "99999999999999999999" for configuration key "mapreduce.task.io.sort.mb" in -D: want an integer from 1 to 2047 (MiB); the value overflows int`},
		{"mapreduce.input.fileinputformat.split.maxsize", "9223372036854775808", `invalid value "9223372036854775808" for configuration key "mapreduce.input.fileinputformat.split.maxsize" in -D: want an integer >= 1 (bytes); the value overflows int64`},
		{"mapreduce.input.fileinputformat.split.minsize", "0", `invalid value "0" for configuration key "mapreduce.input.fileinputformat.split.minsize" in -D: want an integer >= 1 (bytes)`},
		{"mapreduce.input.fileinputformat.split.maxsize", "1e9", `invalid value "1e9" for configuration key "mapreduce.input.fileinputformat.split.maxsize" in -D: want an integer >= 1 (bytes)`},
		{"mapreduce.map.sort.spill.percent", "x", `invalid value "x" for configuration key "mapreduce.map.sort.spill.percent" in -D: want a number > 0 and <= 1`},
		{"mapreduce.map.sort.spill.percent", "NaN", `invalid value "NaN" for configuration key "mapreduce.map.sort.spill.percent" in -D: want a number > 0 and <= 1`},
		{"mapreduce.map.sort.spill.percent", "+Inf", `invalid value "+Inf" for configuration key "mapreduce.map.sort.spill.percent" in -D: want a number > 0 and <= 1`},
		{"mapreduce.map.sort.spill.percent", "0", `invalid value "0" for configuration key "mapreduce.map.sort.spill.percent" in -D: want a number > 0 and <= 1`},
		{"mapreduce.map.sort.spill.percent", "1.01", `invalid value "1.01" for configuration key "mapreduce.map.sort.spill.percent" in -D: want a number > 0 and <= 1`},
		{"mapreduce.job.reduce.slowstart.completedmaps", "-0.1", `invalid value "-0.1" for configuration key "mapreduce.job.reduce.slowstart.completedmaps" in -D: want a number from 0 to 1`},
		{"mapreduce.job.deadline.seconds", "-1", `invalid value "-1" for configuration key "mapreduce.job.deadline.seconds" in -D: want a number >= 0 (s)`},
		{"mapreduce.task.timeout", "-1", `invalid value "-1" for configuration key "mapreduce.task.timeout" in -D: want an integer >= 0 (ms)`},
		{"mapreduce.tasktracker.outofband.heartbeat", "yes", `invalid value "yes" for configuration key "mapreduce.tasktracker.outofband.heartbeat" in -D: want true or false`},
		{"mapreduce.job.priority", "URGENT", `invalid value "URGENT" for configuration key "mapreduce.job.priority" in -D: want one of VERY_HIGH, HIGH, NORMAL, LOW, VERY_LOW`},
		{"log.level", "INFO", `invalid value "INFO" for configuration key "log.level" in -D: want one of debug, info, warn, error`},
		{"mapreduce.job.queuename", " ", `invalid value " " for configuration key "mapreduce.job.queuename" in -D: want a non-empty string`},
		{"mapreduce.jobtracker.address", "localhost", `invalid value "localhost" for configuration key "mapreduce.jobtracker.address" in -D: want host:port with a numeric port from 0 to 65535, such as "127.0.0.1:8021": address localhost: missing port in address`},
		{"mapreduce.jobtracker.address", "localhost:http", `invalid value "localhost:http" for configuration key "mapreduce.jobtracker.address" in -D: want host:port with a numeric port from 0 to 65535, such as "127.0.0.1:8021": port "http" is not a number from 0 to 65535`},
		{"mapreduce.jobtracker.http.address", "h:65536", `invalid value "h:65536" for configuration key "mapreduce.jobtracker.http.address" in -D: want host:port with a numeric port from 0 to 65535, such as "127.0.0.1:8021": port "65536" is not a number from 0 to 65535`},
	}
	for _, tt := range tests {
		t.Run(tt.key+"="+tt.val, func(t *testing.T) {
			_, err := Default().With(map[string]string{tt.key: tt.val}, SourceFlag)
			if err == nil || err.Error() != tt.want {
				t.Errorf("error\n got %v\nwant %s", err, tt.want)
			}
		})
	}
	durTests := []struct{ val, want string }{
		{"5", `invalid value "5" for configuration key "t.dur" in job overrides: want a duration such as "500ms", "30s" or "2m"`},
		{"soon", `invalid value "soon" for configuration key "t.dur" in job overrides: want a duration such as "500ms", "30s" or "2m"`},
		{"-1s", `invalid value "-1s" for configuration key "t.dur" in job overrides: want a duration >= 0`},
	}
	for _, tt := range durTests {
		_, err := tab.defaultConfig().JobOverrides(map[string]string{"t.dur": tt.val})
		if err == nil || err.Error() != tt.want {
			t.Errorf("t.dur=%s: error\n got %v\nwant %s", tt.val, err, tt.want)
		}
	}
}

func TestGoodValues(t *testing.T) {
	tests := []struct{ key, val string }{
		{"mapreduce.task.io.sort.mb", "1"},
		{"mapreduce.task.io.sort.mb", "2047"},
		{"mapreduce.map.sort.spill.percent", "1"},
		{"mapreduce.job.reduce.slowstart.completedmaps", "0"},
		{"mapreduce.tasktracker.outofband.heartbeat", "FALSE"},
		{"mapreduce.jobtracker.address", ":8021"},
		{"mapreduce.jobtracker.address", "[::1]:0"},
		{"mapreduce.jobtracker.address", "node-7.example.org:65535"},
		{"log.level", "debug"},
		{"mapreduce.job.name", ""},
	}
	for _, tt := range tests {
		c, err := Default().With(map[string]string{tt.key: tt.val}, SourceFlag)
		if err != nil {
			t.Errorf("%s=%q: %v", tt.key, tt.val, err)
			continue
		}
		if got := c.String(tt.key); got != tt.val {
			t.Errorf("%s = %q, want %q", tt.key, got, tt.val)
		}
	}
}

func TestUnknownKeys(t *testing.T) {
	tests := []struct {
		name string
		run  func() error
		want string
	}{
		{"flag with suggestion", func() error {
			_, err := Load(LoadOptions{Overrides: map[string]string{"mapreduce.task.io.sort.md": "5"}})
			return err
		}, `unknown configuration key "mapreduce.task.io.sort.md" in -D (did you mean "mapreduce.task.io.sort.mb"?)`},
		{"flag no suggestion", func() error {
			_, err := Load(LoadOptions{Overrides: map[string]string{"foo.bar": "5"}})
			return err
		}, `unknown configuration key "foo.bar" in -D`},
		{"flag wrong case", func() error {
			_, err := Load(LoadOptions{Overrides: map[string]string{"Log.Level": "info"}})
			return err
		}, `unknown configuration key "Log.Level" in -D (did you mean "log.level"?)`},
		{"job with suggestion", func() error {
			_, err := Default().JobOverrides(map[string]string{"mapreduce.job.reduce": "5"})
			return err
		}, `unknown configuration key "mapreduce.job.reduce" in job overrides (did you mean "mapreduce.job.reduces"?)`},
		{"file with suggestion", func() error {
			p := writeFile(t, "mapreduce:\n  job:\n    mapz: 4\n")
			_, err := Load(LoadOptions{File: p})
			if err != nil {
				return errFor(strings.ReplaceAll(err.Error(), p, "f.yaml"))
			}
			return nil
		}, `unknown configuration key "mapreduce.job.mapz" in file f.yaml (did you mean "mapreduce.job.maps"?)`},
		{"two errors, sorted", func() error {
			_, err := Default().With(map[string]string{"zz": "1", "log.level": "loud"}, SourceFlag)
			return err
		}, "invalid value \"loud\" for configuration key \"log.level\" in -D: want one of debug, info, warn, error\nunknown configuration key \"zz\" in -D"},
		{"job sets cluster key", func() error {
			_, err := Default().JobOverrides(map[string]string{"log.level": "debug", "mapreduce.job.reduces": "3"})
			return err
		}, `configuration key "log.level" cannot be set by a job: it is a cluster setting`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.run()
			if err == nil || err.Error() != tt.want {
				t.Errorf("error\n got %v\nwant %s", err, tt.want)
			}
		})
	}
}

func TestJobOverrides(t *testing.T) {
	base, err := Default().With(map[string]string{"mapreduce.job.reduces": "2"}, SourceFlag)
	if err != nil {
		t.Fatal(err)
	}
	c, err := base.JobOverrides(map[string]string{"mapreduce.job.reduces": "7", "mapreduce.job.name": "sorter"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Int("mapreduce.job.reduces") != 7 || c.String("mapreduce.job.name") != "sorter" {
		t.Errorf("job overrides not applied: %v", c.Map())
	}
	if base.Int("mapreduce.job.reduces") != 2 {
		t.Error("JobOverrides changed its receiver")
	}
	got := map[string]string{}
	for _, e := range c.Entries() {
		got[e.Key] = e.Source
	}
	for key, want := range map[string]string{"mapreduce.job.reduces": "job", "mapreduce.job.name": "job", "mapreduce.job.maps": "default"} {
		if got[key] != want {
			t.Errorf("source of %s = %q, want %q", key, got[key], want)
		}
	}
}

func TestPrecedence(t *testing.T) {
	const key = "mapreduce.task.io.sort.mb"
	env := EnvName(key)
	if env != "MR_MAPREDUCE_TASK_IO_SORT_MB" {
		t.Fatalf("EnvName = %s", env)
	}
	file := writeFile(t, "mapreduce.task.io.sort.mb: 200\n")
	tests := []struct {
		name       string
		file       bool
		env        map[string]string
		flag       string
		want       int
		wantSource string
	}{
		{"default", false, nil, "", 100, "default"},
		{"file over default", true, nil, "", 200, "file:" + file},
		{"env over default", false, map[string]string{env: "300"}, "", 300, "env:" + env},
		{"env over file", true, map[string]string{env: "300"}, "", 300, "env:" + env},
		{"empty env ignored", true, map[string]string{env: ""}, "", 200, "file:" + file},
		{"flag over default", false, nil, "400", 400, "flag"},
		{"flag over file", true, nil, "400", 400, "flag"},
		{"flag over env and file", true, map[string]string{env: "300"}, "400", 400, "flag"},
		{"empty unknown MR_ variable counts as unset", false, map[string]string{"MR_NOT_A_KEY": ""}, "", 100, "default"},
		{"other prefixes not read", false, map[string]string{"GOMR_NOT_A_KEY": "x", "XMR_A": "y", "mr_lower": "z"}, "", 100, "default"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := LoadOptions{Env: true}
			if tt.file {
				opts.File = file
			}
			if tt.flag != "" {
				opts.Overrides = map[string]string{key: tt.flag}
			}
			lookup, environ := fakeEnv(tt.env)
			c, err := registered().load(opts, lookup, environ)
			if err != nil {
				t.Fatal(err)
			}
			if got := c.Int(key); got != tt.want {
				t.Errorf("%s = %d, want %d", key, got, tt.want)
			}
			for _, e := range c.Entries() {
				want := SourceDefault
				if e.Key == key {
					want = tt.wantSource
				}
				if e.Source != want {
					t.Errorf("source of %s = %q, want %q", e.Key, e.Source, want)
				}
			}
			// A job's overrides come last of all.
			j, err := c.JobOverrides(map[string]string{key: "500"})
			if err != nil {
				t.Fatal(err)
			}
			if j.Int(key) != 500 || j.Entries()[indexOf(t, j, key)].Source != SourceJob {
				t.Errorf("job override: %s = %d", key, j.Int(key))
			}
		})
	}
}

func indexOf(t *testing.T, c *Config, key string) int {
	t.Helper()
	for i, e := range c.Entries() {
		if e.Key == key {
			return i
		}
	}
	t.Fatalf("no entry for %s", key)
	return -1
}

// TestUnknownEnvVariable: an MR_ variable that names no key stops Load, as
// an unknown -D key does, naming the variable and the closest key; every
// offending variable is named, beside bad values of known ones.
func TestUnknownEnvVariable(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want []string // the error's lines
	}{
		{"no such key", map[string]string{"MR_NO_SUCH_KEY": "1"}, []string{
			"unknown configuration key in environment variable MR_NO_SUCH_KEY: MR_ variables must name a configuration key",
		}},
		{"misspelt key", map[string]string{"MR_MAPREDUCE_TASK_IO_SORT_MD": "1"}, []string{
			`unknown configuration key in environment variable MR_MAPREDUCE_TASK_IO_SORT_MD: MR_ variables must name a configuration key (did you mean MR_MAPREDUCE_TASK_IO_SORT_MB, for "mapreduce.task.io.sort.mb"?)`,
		}},
		{"lower case", map[string]string{"MR_mapreduce_job_reduces": "2"}, []string{
			`unknown configuration key in environment variable MR_mapreduce_job_reduces: MR_ variables must name a configuration key (did you mean MR_MAPREDUCE_JOB_REDUCES, for "mapreduce.job.reduces"?)`,
		}},
		{"several, and a bad value", map[string]string{"MR_ZZ": "1", "MR_AA": "1", "MR_MAPREDUCE_JOB_REDUCES": "many"}, []string{
			"unknown configuration key in environment variable MR_AA: MR_ variables must name a configuration key",
			"unknown configuration key in environment variable MR_ZZ: MR_ variables must name a configuration key",
			`invalid value "many" for configuration key "mapreduce.job.reduces" in environment variable MR_MAPREDUCE_JOB_REDUCES: want an integer >= 0`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lookup, environ := fakeEnv(tt.env)
			_, err := registered().load(LoadOptions{Env: true}, lookup, environ)
			if err == nil {
				t.Fatalf("Load with %v succeeded, want an error", tt.env)
			}
			if got, want := err.Error(), strings.Join(tt.want, "\n"); got != want {
				t.Errorf("error\n got %s\nwant %s", got, want)
			}
		})
	}
	// Without Env the environment is not looked at.
	lookup, environ := fakeEnv(map[string]string{"MR_NO_SUCH_KEY": "1"})
	if _, err := registered().load(LoadOptions{}, lookup, environ); err != nil {
		t.Errorf("Load without Env: %v", err)
	}
}

func TestLoadRealEnv(t *testing.T) {
	t.Setenv("MR_MAPREDUCE_JOB_REDUCES", "9")
	t.Setenv("MR_LOG_LEVEL", "debug")
	c, err := Load(LoadOptions{Env: true})
	if err != nil {
		t.Fatal(err)
	}
	if c.Int("mapreduce.job.reduces") != 9 || c.String("log.level") != "debug" {
		t.Errorf("env not applied: reduces=%d log level=%s", c.Int("mapreduce.job.reduces"), c.String("log.level"))
	}
	c, err = Load(LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Int("mapreduce.job.reduces") != 1 {
		t.Error("environment read with Env false")
	}
	t.Setenv("MR_MAPREDUCE_JOB_REDUCES", "many")
	_, err = Load(LoadOptions{Env: true})
	want := `invalid value "many" for configuration key "mapreduce.job.reduces" in environment variable MR_MAPREDUCE_JOB_REDUCES: want an integer >= 0`
	if err == nil || err.Error() != want {
		t.Errorf("error\n got %v\nwant %s", err, want)
	}
	t.Setenv("MR_MAPREDUCE_JOB_REDUCES", "9")
	t.Setenv("MR_NO_SUCH_KEY", "1")
	_, err = Load(LoadOptions{Env: true})
	want = "unknown configuration key in environment variable MR_NO_SUCH_KEY: MR_ variables must name a configuration key"
	if err == nil || err.Error() != want {
		t.Errorf("error\n got %v\nwant %s", err, want)
	}
}

func TestYAMLForms(t *testing.T) {
	want := map[string]string{
		"mapreduce.task.io.sort.mb":                 "256",
		"mapreduce.map.sort.spill.percent":          "0.9",
		"mapreduce.job.name":                        "word count",
		"mapreduce.tasktracker.outofband.heartbeat": "false",
		"log.level": "debug",
	}
	forms := map[string]string{
		"flat": `mapreduce.task.io.sort.mb: 256
mapreduce.map.sort.spill.percent: 0.9
mapreduce.job.name: word count
mapreduce.tasktracker.outofband.heartbeat: false
log.level: debug
`,
		"nested": `mapreduce:
  task:
    io:
      sort:
        mb: 256
  map:
    sort:
      spill:
        percent: 0.9
  job:
    name: "word count"
  tasktracker:
    outofband:
      heartbeat: false
log:
  level: debug
`,
		"mixed": `mapreduce:
  task.io.sort.mb: 256
  map.sort.spill.percent: 0.90
  job: {name: word count}
  tasktracker.outofband:
    heartbeat: "false"
log.level: debug
`,
		"upper case": `MAPREDUCE.TASK.IO.SORT.MB: 256
Mapreduce:
  Map.Sort.Spill.Percent: 0.9
  Job.Name: word count
  tasktracker.outofband.heartbeat: False
Log.Level: debug
`,
	}
	for name, text := range forms {
		t.Run(name, func(t *testing.T) {
			p := writeFile(t, text)
			c, err := Load(LoadOptions{File: p})
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range c.Entries() {
				v, set := want[e.Key]
				if !set {
					if e.Source != SourceDefault {
						t.Errorf("%s: source %q, want default", e.Key, e.Source)
					}
					continue
				}
				if e.Value != v || e.Source != "file:"+p {
					t.Errorf("%s = %q from %q, want %q from file", e.Key, e.Value, e.Source, v)
				}
			}
		})
	}
}

func TestYAMLErrors(t *testing.T) {
	tests := []struct {
		name, text, want string
	}{
		{"duplicate flat and nested", "mapreduce.job.maps: 3\nmapreduce:\n  job:\n    maps: 4\n",
			`configuration key "mapreduce.job.maps" is set more than once in file F`},
		{"duplicate by case", "log.level: info\nLOG.LEVEL: debug\n",
			`configuration key "log.level" is set more than once in file F`},
		{"list value", "mapreduce.job.name: [a, b]\n",
			`configuration key "mapreduce.job.name" in file F: want a single value, not a list`},
		{"bad value", "mapreduce:\n  job:\n    reduces: -1\n",
			`invalid value "-1" for configuration key "mapreduce.job.reduces" in file F: want an integer >= 0`},
		{"empty value for int", "mapreduce.job.reduces:\n",
			`invalid value "" for configuration key "mapreduce.job.reduces" in file F: want an integer >= 0`},
		{"scalar on a branch", "mapreduce.job: 5\n",
			`unknown configuration key "mapreduce.job" in file F`},
		{"not a map", "- a\n- b\n", "configuration file F: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := writeFile(t, tt.text)
			_, err := Load(LoadOptions{File: p})
			if err == nil {
				t.Fatal("no error")
			}
			got := strings.ReplaceAll(err.Error(), p, "F")
			if strings.HasSuffix(tt.want, ": ") {
				if !strings.HasPrefix(got, tt.want) {
					t.Errorf("error\n got %s\nwant prefix %s", got, tt.want)
				}
			} else if got != tt.want {
				t.Errorf("error\n got %s\nwant %s", got, tt.want)
			}
		})
	}
	missing := filepath.Join(t.TempDir(), "absent.yaml")
	_, err := Load(LoadOptions{File: missing})
	if err == nil || !strings.HasPrefix(err.Error(), "configuration file "+missing+": ") || !os.IsNotExist(unwrapAll(err)) {
		t.Errorf("missing file: %v", err)
	}
	empty := writeFile(t, "")
	c, err := Load(LoadOptions{File: empty})
	if err != nil || !reflect.DeepEqual(c.Map(), Default().Map()) {
		t.Errorf("empty file: %v", err)
	}
}

func unwrapAll(err error) error {
	for {
		type unwrapper interface{ Unwrap() error }
		u, ok := err.(unwrapper)
		if !ok {
			return err
		}
		err = u.Unwrap()
	}
}

func TestFromMapRoundTrip(t *testing.T) {
	p := writeFile(t, "mapreduce.job.reduces: 12\nmapreduce.map.sort.spill.percent: 0.5\n")
	c, err := Load(LoadOptions{File: p, Overrides: map[string]string{
		"mapreduce.job.name":                            "a=b c",
		"mapreduce.tasktracker.outofband.heartbeat":     "0",
		"mapreduce.input.fileinputformat.split.maxsize": "1099511627776",
	}})
	if err != nil {
		t.Fatal(err)
	}
	m := c.Map()
	if len(m) != len(Keys()) {
		t.Errorf("Map has %d keys, want %d", len(m), len(Keys()))
	}
	back, err := FromMap(m)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Map(), m) {
		t.Errorf("round trip changed the map:\n got %v\nwant %v", back.Map(), m)
	}
	if !reflect.DeepEqual(back.vals["mapreduce.tasktracker.outofband.heartbeat"].parsed, false) ||
		back.Int64("mapreduce.input.fileinputformat.split.maxsize") != 1<<40 ||
		back.Float("mapreduce.map.sort.spill.percent") != 0.5 {
		t.Error("round trip changed parsed values")
	}
	for _, e := range back.Entries() {
		if e.Source != SourceMap {
			t.Errorf("%s: source %q, want map", e.Key, e.Source)
		}
	}
	if _, err := FromMap(map[string]string{"mapreduce.job.maps": "0"}); err == nil ||
		err.Error() != `invalid value "0" for configuration key "mapreduce.job.maps" in the configuration map: want an integer >= 1` {
		t.Errorf("FromMap bad value: %v", err)
	}
}

func TestPrint(t *testing.T) {
	c, err := testTable(t).defaultConfig().With(map[string]string{"t.int": "7", "t.str": "a\tb"}, SourceFlag)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := Print(&b, c); err != nil {
		t.Fatal(err)
	}
	want := `KEY     VALUE   SOURCE   DESCRIPTION
t.dur   500ms   default  a duration
t.flag  false   default  a flag
t.int   7       flag     an int
t.str   "a\tb"  flag     a string
`
	if b.String() != want {
		t.Errorf("Print:\n%s\nwant:\n%s", b.String(), want)
	}
	b.Reset()
	if err := Print(&b, Default()); err != nil {
		t.Fatal(err)
	}
	if lines := strings.Count(b.String(), "\n"); lines != len(Keys())+1 {
		t.Errorf("Print(Default()) wrote %d lines, want %d", lines, len(Keys())+1)
	}
	if !strings.Contains(b.String(), "mapreduce.task.io.sort.mb") || !strings.Contains(b.String(), "map-side sort buffer size (MiB)") {
		t.Errorf("Print(Default()) lacks sort.mb:\n%s", b.String())
	}
}

func TestNewTableErrors(t *testing.T) {
	ok := Key{Name: "a.b", Type: Int, Default: "1", Description: "d"}
	tests := []struct {
		name string
		keys []Key
		want string
	}{
		{"duplicate", []Key{ok, ok}, `configuration key "a.b" is defined twice`},
		{"bad default", []Key{{Name: "a.b", Type: Int, Default: "x", Description: "d"}}, `default "x" of configuration key "a.b" is invalid: want an integer`},
		{"default fails check", []Key{{Name: "a.b", Type: Int, Default: "0", Description: "d", Check: atLeast(1)}}, `default "0" of configuration key "a.b" is invalid: want an integer >= 1`},
		{"prefix", []Key{ok, {Name: "a.b.c", Type: Int, Default: "1", Description: "d"}, {Name: "a.b-x", Type: Int, Default: "1", Description: "d"}}, `configuration key "a.b" is a prefix of "a.b.c"; a nested YAML file cannot hold both`},
		{"env clash", []Key{{Name: "a.b-c", Type: Int, Default: "1", Description: "d"}, {Name: "a.b.c", Type: Int, Default: "1", Description: "d"}}, `configuration keys "a.b-c" and "a.b.c" map to the same environment variable MR_A_B_C`},
		{"upper case", []Key{{Name: "a.B", Type: Int, Default: "1", Description: "d"}}, `configuration key "a.B": name may hold only a-z, 0-9, '.', '-' and '_', not 'B'`},
		{"empty part", []Key{{Name: "a..b", Type: Int, Default: "1", Description: "d"}}, `configuration key "a..b": name has an empty dotted part`},
		{"no type", []Key{{Name: "a", Default: "1", Description: "d"}}, `configuration key "a": invalid type Type(0)`},
		{"two-line description", []Key{{Name: "a", Type: Int, Default: "1", Description: "d\ne"}}, `configuration key "a": description must be one non-empty line`},
		{"check of wrong type", []Key{{Name: "a", Type: Int, Default: "1", Description: "d", Check: between(0.0, 1.0)}}, `default "1" of configuration key "a" is invalid: range check for float64 got a int value`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := newTable(tt.keys)
			if err == nil || err.Error() != tt.want {
				t.Errorf("error\n got %v\nwant %s", err, tt.want)
			}
		})
	}
}

func TestEditDistance(t *testing.T) {
	tests := []struct {
		a, b  string
		limit int
		want  int
	}{
		{"", "", 4, 0},
		{"abc", "abc", 4, 0},
		{"abc", "abd", 4, 1},
		{"abc", "ab", 4, 1},
		{"ab", "abc", 4, 1},
		{"kitten", "sitting", 4, 3},
		{"kitten", "sitting", 3, 3},
		{"kitten", "sitting", 2, 2},
		{"abcdef", "a", 4, 4},
		{"flaw", "lawn", 9, 2},
	}
	for _, tt := range tests {
		if got := editDistance(tt.a, tt.b, tt.limit); got != tt.want {
			t.Errorf("editDistance(%q, %q, %d) = %d, want %d", tt.a, tt.b, tt.limit, got, tt.want)
		}
	}
}

func TestParseDefine(t *testing.T) {
	tests := []struct {
		in, key, val, err string
	}{
		{in: "a.b=1", key: "a.b", val: "1"},
		{in: "a.b=", key: "a.b", val: ""},
		{in: "a.b=x=y", key: "a.b", val: "x=y"},
		{in: "a.b= spaced value ", key: "a.b", val: " spaced value "},
		{in: "a.b", err: `definition "a.b": want key=value`},
		{in: "", err: `definition "": want key=value`},
		{in: "=1", err: `definition "=1": empty key before '='`},
		{in: "a b=1", err: `definition "a b=1": key "a b" contains white space`},
	}
	for _, tt := range tests {
		k, v, err := ParseDefine(tt.in)
		if tt.err != "" {
			if err == nil || err.Error() != tt.err {
				t.Errorf("ParseDefine(%q) error %v, want %s", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || k != tt.key || v != tt.val {
			t.Errorf("ParseDefine(%q) = %q, %q, %v; want %q, %q", tt.in, k, v, err, tt.key, tt.val)
		}
	}
}

func FuzzParseDefine(f *testing.F) {
	for _, s := range []string{"a.b=1", "a=", "=", "", "a", "a b=c", "k=v=w", "\u00a0=1", "x\xff=y"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		k, v, err := ParseDefine(s)
		if err != nil {
			if k != "" || v != "" {
				t.Errorf("ParseDefine(%q) returned %q, %q with error %v", s, k, v, err)
			}
			i := strings.IndexByte(s, '=')
			if i > 0 && !strings.ContainsFunc(s[:i], unicode.IsSpace) {
				t.Errorf("ParseDefine(%q) refused a valid definition: %v", s, err)
			}
			return
		}
		if k == "" || strings.Contains(k, "=") || strings.ContainsFunc(k, unicode.IsSpace) {
			t.Errorf("ParseDefine(%q) gave bad key %q", s, k)
		}
		if k+"="+v != s {
			t.Errorf("ParseDefine(%q) = %q, %q does not rebuild the input", s, k, v)
		}
	})
}

func TestScalarText(t *testing.T) {
	tests := []struct {
		in   any
		want string
		err  string
	}{
		{nil, "", ""},
		{"x y", "x y", ""},
		{true, "true", ""},
		{42, "42", ""},
		{int64(-7), "-7", ""},
		{uint64(1 << 63), "9223372036854775808", ""},
		{0.25, "0.25", ""},
		{1e21, "1e+21", ""},
		{time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC), "2024-03-01", ""},
		{time.Date(2024, 3, 1, 12, 30, 0, 5, time.UTC), "2024-03-01T12:30:00.000000005Z", ""},
		{[]any{1}, "", "want a single value, not a list"},
		{map[string]any{"a": 1}, "", "want a single value, not a map"},
	}
	for _, tt := range tests {
		got, err := scalarText(tt.in)
		if tt.err != "" {
			if err == nil || err.Error() != tt.err {
				t.Errorf("scalarText(%#v) error %v, want %s", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("scalarText(%#v) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
	// A YAML timestamp for a string key keeps the text the user wrote.
	p := writeFile(t, "mapreduce.job.name: 2024-03-01\n")
	c, err := Load(LoadOptions{File: p})
	if err != nil || c.String("mapreduce.job.name") != "2024-03-01" {
		t.Errorf("timestamp job name: %q, %v", c.String("mapreduce.job.name"), err)
	}
}

func TestTypeString(t *testing.T) {
	for typ, want := range map[Type]string{String: "string", Int: "int", Int64: "int64", Float: "float", Bool: "bool", Duration: "duration", 0: "Type(0)"} {
		if got := typ.String(); got != want {
			t.Errorf("Type(%d).String() = %q, want %q", int(typ), got, want)
		}
	}
}

func TestDefaultsDigest(t *testing.T) {
	d := DefaultsDigest()
	if len(d) != 32 || d != DefaultsDigest() {
		t.Fatalf("DefaultsDigest() = %q, then %q: want the same 32 hex digits", d, DefaultsDigest())
	}
	base, err := newTable(registered().list())
	if err != nil {
		t.Fatal(err)
	}
	if base.digest() != d {
		t.Errorf("the same keys give another digest: %s, %s", base.digest(), d)
	}
	keys := registered().list()
	for i := range keys {
		if keys[i].Name == "mapreduce.task.timeout" {
			keys[i].Default += "1"
		}
	}
	changed, err := newTable(keys)
	if err != nil {
		t.Fatal(err)
	}
	if changed.digest() == d {
		t.Errorf("changing mapreduce.task.timeout's default kept the digest %s", d)
	}
	fewer, err := newTable(registered().list()[1:])
	if err != nil {
		t.Fatal(err)
	}
	if fewer.digest() == d {
		t.Errorf("one key fewer kept the digest %s", d)
	}
}
