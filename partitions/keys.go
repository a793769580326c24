package partitions

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"gomr/conf"
)

// keys are the configuration keys this package's policies read, in
// registration order. Each policy declares its own beside its code
// (fairKeys, multiQueueKeys, deadlineKeys) and registers them with
// registerKeys from its init function.
var keys []conf.Key

// registerKeys adds configuration keys a policy reads to the package's
// list (Keys, MapConfig) and to the configuration registry (conf.Register),
// so that they are set, validated, documented and listed like every other
// key. The policies read them through Config and check them again when
// they are built, naming the key in any error.
func registerKeys(ks ...conf.Key) {
	keys = append(keys, ks...)
	conf.Register(ks...)
}

// Keys lists every configuration key the policies of this package read,
// with its default (scheduler.policy, which chooses the policy, is
// registered with conf too but is not one of them).
func Keys() []conf.Key { return slices.Clone(keys) }

// floatList is the Check of a comma-separated list of numbers.
func floatList(v any) error {
	s, ok := v.(string)
	if !ok {
		return fmt.Errorf("number list check got a %T value", v)
	}
	if _, err := parseFloats(s); err != nil {
		return fmt.Errorf("want comma-separated numbers such as 0.3,0.7: %w", err)
	}
	return nil
}

// durationList is the Check of a comma-separated list of durations (Go
// durations or plain numbers of seconds).
func durationList(v any) error {
	s, ok := v.(string)
	if !ok {
		return fmt.Errorf("duration list check got a %T value", v)
	}
	if _, err := parseDurations(s); err != nil {
		return fmt.Errorf("want comma-separated durations such as 200s: %w", err)
	}
	return nil
}

// DefaultValues returns a fresh map of every key to its default value.
func DefaultValues() map[string]string {
	m := map[string]string{}
	for _, k := range Keys() {
		m[k.Name] = k.Default
	}
	return m
}

// MapConfig is a Config backed by a map of string values, with every key's
// default where the map has none. Build it with NewMapConfig, which checks
// the values' types.
type MapConfig map[string]string

// NewMapConfig returns a MapConfig with the defaults overridden by
// overrides. It fails on an unknown key or a value of the wrong type.
func NewMapConfig(overrides map[string]string) (MapConfig, error) {
	byName := map[string]conf.Key{}
	for _, k := range keys {
		byName[k.Name] = k
	}
	m := MapConfig(DefaultValues())
	names := make([]string, 0, len(overrides))
	for n := range overrides {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		k, ok := byName[n]
		if !ok {
			return nil, fmt.Errorf("unknown scheduler configuration key %q", n)
		}
		v := overrides[n]
		if err := checkValue(k, v); err != nil {
			return nil, err
		}
		m[n] = v
	}
	return m, nil
}

// checkValue checks v as a value of k, as the policies will read it:
// durations may also be plain numbers of seconds, lists are checked by
// their Check.
func checkValue(k conf.Key, v string) error {
	var err error
	switch k.Type {
	case conf.Int:
		_, err = strconv.Atoi(strings.TrimSpace(v))
	case conf.Float:
		_, err = parseFloat(v)
	case conf.Duration:
		_, err = parseDuration(v)
	case conf.Bool:
		_, err = strconv.ParseBool(strings.TrimSpace(v))
	default:
		if k.Check != nil {
			err = k.Check(v)
		}
	}
	if err != nil {
		return fmt.Errorf("scheduler configuration %s=%q is not a valid %s: %w", k.Name, v, k.Type, err)
	}
	return nil
}

func contains(xs []string, v string) bool {
	for _, x := range xs {
		if x == v {
			return true
		}
	}
	return false
}

// String returns the value of key.
func (m MapConfig) String(key string) string { return m[key] }

// Int returns the value of key as an int, 0 if it does not parse.
func (m MapConfig) Int(key string) int {
	n, _ := strconv.Atoi(strings.TrimSpace(m[key]))
	return n
}

// Float returns the value of key as a float64, 0 if it does not parse.
func (m MapConfig) Float(key string) float64 {
	f, _ := parseFloat(m[key])
	return f
}

// Duration returns the value of key as a duration, 0 if it does not parse.
func (m MapConfig) Duration(key string) time.Duration {
	d, _ := parseDuration(m[key])
	return d
}

func parseFloat(s string) (float64, error) {
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil {
		return 0, err
	}
	if math.IsNaN(f) {
		return 0, fmt.Errorf("NaN is not a number")
	}
	return f, nil
}

// parseDuration accepts Go durations ("90s", "1h") and plain numbers of
// seconds ("90").
func parseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		return time.Duration(f * float64(time.Second)), nil
	}
	return time.ParseDuration(s)
}

func parseFloats(s string) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(s, ",") {
		if strings.TrimSpace(f) == "" {
			continue
		}
		v, err := parseFloat(f)
		if err != nil {
			return nil, fmt.Errorf("list item %q: %w", f, err)
		}
		out = append(out, v)
	}
	return out, nil
}

func parseDurations(s string) ([]time.Duration, error) {
	var out []time.Duration
	for _, f := range strings.Split(s, ",") {
		if strings.TrimSpace(f) == "" {
			continue
		}
		v, err := parseDuration(f)
		if err != nil {
			return nil, fmt.Errorf("list item %q: %w", f, err)
		}
		out = append(out, v)
	}
	return out, nil
}

// newReader reads the scheduler keys from cfg: the declared default for a
// key cfg leaves empty, and the first bad value kept as the error.
func newReader(cfg Config) *conf.Reader {
	var g conf.Getter
	if cfg != nil {
		g = cfg
	}
	return conf.NewReader("scheduler configuration", g, keys)
}

// capacities reads a list of fractions that must be positive and sum to 1.
func capacities(r *conf.Reader, key string) []float64 {
	v := r.Raw(key)
	cs, err := parseFloats(v)
	if err != nil {
		r.Fail(key, v, fmt.Sprintf("want comma-separated fractions such as 0.3,0.7: %v", err))
		return []float64{1}
	}
	if len(cs) == 0 {
		r.Fail(key, v, "needs at least one capacity")
		return []float64{1}
	}
	sum := 0.0
	for _, c := range cs {
		if c <= 0 || c > 1 {
			r.Fail(key, v, "every capacity must be in (0, 1]")
			return []float64{1}
		}
		sum += c
	}
	if math.Abs(sum-1) > 1e-6 {
		r.Fail(key, v, fmt.Sprintf("capacities sum to %.6g, not 1", sum))
		return []float64{1}
	}
	return cs
}

// limits reads want (when >= 0) strictly positive durations; cumulative
// ones must grow.
func limits(r *conf.Reader, key string, want int, cumulative bool) []time.Duration {
	v := r.Raw(key)
	ds, err := parseDurations(v)
	if err != nil {
		r.Fail(key, v, fmt.Sprintf("want comma-separated durations such as 200s: %v", err))
		return nil
	}
	if want >= 0 && len(ds) != want {
		r.Fail(key, v, fmt.Sprintf("want %d value(s), one per queue but the last", want))
		return nil
	}
	for i, d := range ds {
		if d <= 0 {
			r.Fail(key, v, "every limit must be positive")
			return nil
		}
		if cumulative && i > 0 && d <= ds[i-1] {
			r.Fail(key, v, "cumulative limits must increase")
			return nil
		}
	}
	return ds
}
