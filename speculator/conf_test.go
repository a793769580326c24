package speculator

import (
	"strings"
	"testing"

	"gomr/conf"
)

// TestKeysRegistered checks that every speculator key is a configuration
// key with the same default, that the estimator and the clone-cost
// estimator's keys are cluster keys and the rest job keys, and that an
// unknown speculation key is refused, naming it.
func TestKeysRegistered(t *testing.T) {
	cluster := map[string]bool{KeyRetryNoSpec: true, KeyRetryAfterSpec: true, KeyBeta: true, KeyTVM: true,
		KeyImageBandwidth: true, KeyCopyBandwidth: true, KeySmoothing: true, KeyMinSampleBytes: true}
	c := conf.Default()
	for _, sk := range Keys() {
		k, ok := conf.Lookup(sk.Name)
		if !ok {
			t.Errorf("speculator key %s is not a configuration key", sk.Name)
			continue
		}
		if got := c.String(sk.Name); got != sk.Default {
			t.Errorf("%s: default %q, want %q", sk.Name, got, sk.Default)
		}
		if k.Job == cluster[sk.Name] {
			t.Errorf("%s: Job = %v, want %v", sk.Name, k.Job, !cluster[sk.Name])
		}
	}
	// The defaults conf holds are valid parameters.
	if _, err := FromConfig(c); err != nil {
		t.Errorf("FromConfig(conf.Default()): %v", err)
	}
	_, err := c.With(map[string]string{"speculation.clone.enable": "true"}, conf.SourceFlag)
	want := `unknown configuration key "speculation.clone.enable" in -D (did you mean "speculation.clone.enabled"?)`
	if err == nil || err.Error() != want {
		t.Errorf("error\n got %v\nwant %s", err, want)
	}
	_, err = c.With(map[string]string{KeyStragglerScope: "job"}, conf.SourceFlag)
	if err == nil || !strings.Contains(err.Error(), "want one of attempt, task, tracker") {
		t.Errorf("bad straggler scope: %v", err)
	}
}
