package conf

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
)

// snapshotRegistry restores the registry as it is now when the test ends,
// so that a test may register keys of its own.
func snapshotRegistry(t *testing.T) {
	t.Helper()
	registry.mu.Lock()
	keys := slices.Clone(registry.keys)
	names, envs, prefixes := maps.Clone(registry.names), maps.Clone(registry.envs), maps.Clone(registry.prefixes)
	registry.mu.Unlock()
	t.Cleanup(func() {
		registry.mu.Lock()
		registry.keys, registry.names, registry.envs, registry.prefixes = keys, names, envs, prefixes
		registry.tab.Store(nil)
		registry.mu.Unlock()
	})
}

// register calls Register and returns its panic's message ("" if none).
func register(keys ...Key) (msg string) {
	defer func() {
		if r := recover(); r != nil {
			msg = fmt.Sprint(r)
		}
	}()
	Register(keys...)
	return ""
}

// TestRegisterRefuses: Register panics on a key that is invalid, or that
// clashes with a registered key (its name, its environment variable, a
// dotted prefix either way) or with another of its own, and registers
// none of the keys it was given then.
func TestRegisterRefuses(t *testing.T) {
	snapshotRegistry(t)
	key := func(name string) Key {
		return Key{Name: name, Type: Int, Default: "1", Description: "a key of the test"}
	}
	tests := []struct {
		name string
		keys []Key
		want string
	}{
		{"a registered name", []Key{key("gomr.test.ok"), key("mapreduce.job.reduces")}, `configuration key "mapreduce.job.reduces" is defined twice`},
		{"a registered key's environment variable", []Key{key("mapreduce.job-reduces")},
			`configuration keys "mapreduce.job.reduces" and "mapreduce.job-reduces" map to the same environment variable MR_MAPREDUCE_JOB_REDUCES`},
		{"a prefix of a registered key", []Key{key("mapreduce.job")}, `configuration key "mapreduce.job" is a prefix of "mapreduce.job.`},
		{"a registered key as its prefix", []Key{key("mapreduce.job.reduces.extra")},
			`configuration key "mapreduce.job.reduces" is a prefix of "mapreduce.job.reduces.extra"`},
		{"twice in one call", []Key{key("gomr.test.twice"), key("gomr.test.twice")}, `configuration key "gomr.test.twice" is defined twice`},
		{"a prefix of another in one call", []Key{key("gomr.test.a.b"), key("gomr.test.a")}, `configuration key "gomr.test.a" is a prefix of "gomr.test.a.b"`},
		{"an invalid name", []Key{key("gomr.Test")}, `configuration key "gomr.Test": name may hold only`},
		{"an invalid default", []Key{{Name: "gomr.test.bad", Type: Int, Default: "x", Description: "d"}}, `default "x" of configuration key "gomr.test.bad" is invalid`},
	}
	before := len(Keys())
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			msg := register(tc.keys...)
			if !strings.Contains(msg, tc.want) {
				t.Fatalf("Register panicked with %q, want it to say %q", msg, tc.want)
			}
			if n := len(Keys()); n != before {
				t.Errorf("%d keys registered after the refusal, want %d as before", n, before)
			}
			for _, k := range tc.keys {
				if _, ok := Lookup(k.Name); ok && !strings.HasPrefix(k.Name, "mapreduce.") {
					t.Errorf("%s was registered", k.Name)
				}
			}
		})
	}
}

// TestRegisterAddsToTheTable: keys registered after the table was built
// are in the next one (Keys, Lookup, the defaults), which every
// goroutine then shares.
func TestRegisterAddsToTheTable(t *testing.T) {
	snapshotRegistry(t)
	before := len(Keys()) // the table is built
	Register(Key{Name: "gomr.test.later", Type: Int, Default: "7", Description: "a key of the test"},
		Key{Name: "gomr.test.later-too", Type: String, Default: "x", Description: "a key of the test"})
	var wg sync.WaitGroup
	tabs := make([]*table, 8)
	for i := range tabs {
		wg.Go(func() { tabs[i] = registered() })
	}
	wg.Wait()
	for _, tab := range tabs[1:] {
		if tab != tabs[0] {
			t.Fatal("goroutines built tables of their own")
		}
	}
	if n := len(Keys()); n != before+2 {
		t.Fatalf("%d keys, want %d", n, before+2)
	}
	if k, ok := Lookup("gomr.test.later"); !ok || k.Default != "7" {
		t.Fatalf("Lookup(gomr.test.later) = %+v, %v", k, ok)
	}
	if v := Default().Int("gomr.test.later"); v != 7 {
		t.Fatalf("default of gomr.test.later: %d, want 7", v)
	}
	// And clashes with them are refused, the environment variable too.
	if msg := register(Key{Name: "gomr.test.later.x", Type: Int, Default: "1", Description: "d"}); !strings.Contains(msg, "is a prefix of") {
		t.Fatalf("a key under a registered one: %q", msg)
	}
	if msg := register(Key{Name: "gomr.test-later-too", Type: Int, Default: "1", Description: "d"}); !strings.Contains(msg, "MR_GOMR_TEST_LATER_TOO") {
		t.Fatalf("a key of a registered environment variable: %q", msg)
	}
}

func TestEnvName(t *testing.T) {
	for in, want := range map[string]string{
		"mapreduce.job.reduces":                "MR_MAPREDUCE_JOB_REDUCES",
		"mapreduce.tasktracker.memory-mb":      "MR_MAPREDUCE_TASKTRACKER_MEMORY_MB",
		"scheduler.fair.pool_name":             "MR_SCHEDULER_FAIR_POOL_NAME",
		"mapreduce.tasktracker.checkpoint.dir": "MR_MAPREDUCE_TASKTRACKER_CHECKPOINT_DIR",
	} {
		if got := EnvName(in); got != want {
			t.Errorf("EnvName(%q) = %q, want %q", in, got, want)
		}
	}
}
