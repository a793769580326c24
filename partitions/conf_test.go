package partitions_test

import (
	"strings"
	"testing"

	"gomr/conf"
	"gomr/partitions"
)

// TestKeysRegistered checks that every key the policies read is a
// configuration key with the same default, that enumerated keys refuse
// other values, and that they are cluster keys a job cannot set.
func TestKeysRegistered(t *testing.T) {
	c := conf.Default()
	if len(partitions.Keys()) == 0 {
		t.Fatal("the policies declare no keys")
	}
	for _, pk := range partitions.Keys() {
		k, ok := conf.Lookup(pk.Name)
		if !ok {
			t.Errorf("policy key %s is not a configuration key", pk.Name)
			continue
		}
		if got := c.String(pk.Name); got != pk.Default {
			t.Errorf("%s: default %q, want %q", pk.Name, got, pk.Default)
		}
		if k.Job {
			t.Errorf("%s: a job may set it; the policies' keys are cluster keys", pk.Name)
		}
		if !strings.HasPrefix(pk.Name, "scheduler.") {
			t.Errorf("%s: a policy key outside scheduler.*", pk.Name)
		}
	}
	if _, err := c.JobOverrides(map[string]string{"scheduler.fair.weight": "log"}); err == nil ||
		!strings.Contains(err.Error(), `"scheduler.fair.weight" cannot be set by a job`) {
		t.Errorf("a job set a policy key: %v", err)
	}
}

// TestPolicyKey checks scheduler.policy: every registered policy is
// accepted, another name is refused with the list, a job cannot set it.
func TestPolicyKey(t *testing.T) {
	names := partitions.Names()
	if len(names) != 10 {
		t.Errorf("Names() = %v, want the 10 policies", names)
	}
	for _, name := range names {
		c, err := conf.Default().With(map[string]string{"scheduler.policy": name}, conf.SourceFlag)
		if err != nil {
			t.Errorf("policy %s refused: %v", name, err)
			continue
		}
		if c.String("scheduler.policy") != name {
			t.Errorf("scheduler.policy = %q, want %q", c.String("scheduler.policy"), name)
		}
	}
	if got := conf.Default().String("scheduler.policy"); got != "fifo" {
		t.Errorf("default policy %q, want fifo", got)
	}
	_, err := conf.Default().With(map[string]string{"scheduler.policy": "lottery"}, conf.SourceFlag)
	want := `invalid value "lottery" for configuration key "scheduler.policy" in -D: want one of ` + strings.Join(names, ", ")
	if err == nil || err.Error() != want {
		t.Errorf("error\n got %v\nwant %s", err, want)
	}
	_, err = conf.Default().JobOverrides(map[string]string{"scheduler.policy": "fair"})
	if err == nil || err.Error() != `configuration key "scheduler.policy" cannot be set by a job: it is a cluster setting` {
		t.Errorf("a job set scheduler.policy: %v", err)
	}
}

// TestUnknownAndBadPolicyKeys checks that conf refuses an unknown
// scheduler key, naming it (with the closest key), and bad values of the
// policies' keys, naming the key.
func TestUnknownAndBadPolicyKeys(t *testing.T) {
	for _, tt := range []struct{ key, val, want string }{
		{"scheduler.fair.pool", "a:1", `unknown configuration key "scheduler.fair.pool" in -D (did you mean "scheduler.fair.pools"?)`},
		{"scheduler.nope", "1", `unknown configuration key "scheduler.nope" in -D`},
		{"scheduler.fair.weight", "heavy", `invalid value "heavy" for configuration key "scheduler.fair.weight" in -D: want one of equal, log, linear`},
		{"scheduler.tyrex.capacities", "0.3,x", `invalid value "0.3,x" for configuration key "scheduler.tyrex.capacities" in -D: want comma-separated numbers such as 0.3,0.7: list item "x"`},
		{"scheduler.fbq.limits", "10s,soon", `invalid value "10s,soon" for configuration key "scheduler.fbq.limits" in -D: want comma-separated durations such as 200s: list item "soon"`},
		{"scheduler.comp.queues", "two", `invalid value "two" for configuration key "scheduler.comp.queues" in -D: want an integer`},
	} {
		_, err := conf.Default().With(map[string]string{tt.key: tt.val}, conf.SourceFlag)
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("%s=%s: error\n got %v\nwant %s...", tt.key, tt.val, err, tt.want)
		}
	}
	// Lists in plain seconds, as the policies read them.
	if _, err := conf.Default().With(map[string]string{"scheduler.fbq.limits": "60,120"}, conf.SourceFlag); err != nil {
		t.Errorf("durations in seconds refused: %v", err)
	}
}
