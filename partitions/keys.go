package partitions

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
)

// KeyType is the type of a policy configuration value.
type KeyType string

// Key types.
const (
	KeyString   KeyType = "string"
	KeyInt      KeyType = "int"
	KeyFloat    KeyType = "float"
	KeyDuration KeyType = "duration"
	KeyBool     KeyType = "bool"
	KeyFloats   KeyType = "float list"
	KeyDurs     KeyType = "duration list"
)

// Key describes one configuration key a policy reads.
type Key struct {
	Name        string
	Type        KeyType
	Default     string
	Description string
	// Allowed lists the accepted values of an enumerated string key.
	Allowed []string
}

// Keys lists every configuration key the policies of this package read,
// with its default. KEYS.md documents the same list.
func Keys() []Key {
	return []Key{
		{"scheduler.fair.pools", KeyString, "", "fair pools as name:weight:minMaps:minReduces, comma-separated; unknown pools get weight 1 and no minimum", nil},
		{"scheduler.fair.default-pool", KeyString, "default", "pool of a job that names none", nil},
		{"scheduler.fair.weight", KeyString, "equal", "job weight inside a pool: equal (Hadoop default), log (size-based, log2(1+tasks)), linear (tasks)", []string{"equal", "log", "linear"}},

		{"scheduler.tyrex.capacities", KeyFloats, "0.3,0.7", "TYREX partition capacities C_1..C_K as fractions of the map and reduce slots; K = their count; must sum to 1", nil},
		{"scheduler.tyrex.timers", KeyDurs, "200s", "StaticTAGS timers T_1..T_{K-1} (service limits); read as cumulative boundaries unless limits-mode is per-queue", nil},
		{"scheduler.tyrex.limits-mode", KeyString, "cumulative", "how timers are read: cumulative boundaries B_k or per-queue budgets L_k", []string{"cumulative", "per-queue"}},
		{"scheduler.tyrex.migrated-order", KeyString, "tail", "where a migrated job enters the next queue: tail (entry order) or arrival (original arrival order)", []string{"tail", "arrival"}},
		{"scheduler.tyrex.partition-reduces", KeyBool, "true", "apply the capacities to reduce slots too (else reduces use the whole cluster)", nil},
		{"scheduler.tyrex.cv2-threshold", KeyFloat, "2", "DynamicTAGS: migrate only when the CV^2 of the partial sizes exceeds this", nil},
		{"scheduler.tyrex.min-sample", KeyInt, "2", "DynamicTAGS: fewest jobs in the CV^2 test (with dynamic-sample queue: jobs of the partition; else jobs of the sample)", nil},
		{"scheduler.tyrex.dynamic-sample", KeyString, "recent", "DynamicTAGS sample: recent (the partial sizes > 0 of the jobs in the partition plus those there of the latest dynamic-window jobs that left it, finished or moved on; test and cutoff over them), queue (CV^2 test over every job of the partition, waiting ones at 0; cutoff over the partial sizes > 0, down to 0+), positive (test and cutoff over the jobs in the partition with a partial size > 0) or all (both over every job in the partition, zeros included)", []string{"recent", "queue", "positive", "all"}},
		{"scheduler.tyrex.dynamic-window", KeyInt, "100", "DynamicTAGS recent sample: how many of the latest jobs to leave a partition (finished there or moved on) count with their partial size there, besides the jobs in it", nil},
		{"scheduler.tyrex.dynamic-timer", KeyString, "check", "DynamicTAGS: check (jobs move only when a cutoff is computed, thesis §4.4.4) or sticky (the latest cutoff stays the partition's timer until the next one)", []string{"check", "sticky"}},
		{"scheduler.tyrex.fallback-timer", KeyDuration, "0s", "DynamicTAGS safety net: migrate a job whose partial size passes this even without a dynamic timer; 0 = never (faithful)", nil},

		{"scheduler.fbq.limits", KeyDurs, "12000s", "FBQ service limits of queues 1..K-1; K = count+1", nil},
		{"scheduler.fbq.limits-mode", KeyString, "cumulative", "cumulative boundaries or per-queue budgets", []string{"cumulative", "per-queue"}},

		{"scheduler.sita.capacities", KeyFloats, "0.3,0.7", "SITA partition capacities C_1..C_K; must sum to 1", nil},
		{"scheduler.sita.cutoffs", KeyDurs, "18000s", "SITA cumulative size cutoffs B_1..B_{K-1} (predicted job size)", nil},
		{"scheduler.sita.predictor", KeyString, "regression", "job size predictor: regression (log-log least squares on input bytes over completed jobs) or oracle (JobView.EstimatedSize)", []string{"regression", "oracle"}},
		{"scheduler.sita.min-fit", KeyInt, "10", "completed jobs needed before the regression predictor is used; before that the oracle estimate (or 0) is used", nil},

		{"scheduler.comp.queues", KeyInt, "2", "COMP number of queues K (compares with the last K-1 completed jobs)", nil},
		{"scheduler.comp.predictor", KeyString, "regression", "job size predictor, as scheduler.sita.predictor", []string{"regression", "oracle"}},

		{"scheduler.deadline.bound", KeyString, "avg", "ARIA bound the minimum allocation targets", []string{"low", "avg", "up"}},
		{"scheduler.deadline.round", KeyString, "lagrange-ceil", "integer slots: round the Lagrange optimum up, or search for the exact integer minimum", []string{"lagrange-ceil", "integer-exact"}},
		{"scheduler.deadline.refresh-all-on-arrival", KeyBool, "false", "MinEDF-WC: refresh every job's quota when a job arrives", nil},
		{"scheduler.deadline.reduces-after-maps", KeyBool, "true", "minedf and minedf-wc give reduce slots only once all maps of the job finished (Algorithm 1, ARIA's model)", nil},
		{"scheduler.edf.reduces-after-maps", KeyBool, "false", "edf gives reduce slots only once all maps of the job finished; false: as soon as the job's reduce slow-start allows (Hadoop's default allocation)", nil},
		{"scheduler.minedfwc.algorithm", KeyString, "fixed", "Algorithm 1 variant: fixed (<=, kill accounting from actual free slots, no kills when only reduces are short) or printed (as printed)", []string{"fixed", "printed"}},
		{"scheduler.minedfwc.kill-only-needed", KeyBool, "false", "kill only the spare maps the new job needs instead of all spare maps of a victim job (A7)", nil},
		{"scheduler.minedfwc.arrival-net-of-deficits", KeyBool, "false", "arrival check subtracts the quota deficits of earlier-deadline jobs from the free slots (A3)", nil},
		{"scheduler.minedfwc.reduce-release", KeyString, "r-avg", "expected release time of a spare reduce slot (A10)", []string{"r-avg", "shuffle-plus-r-avg"}},
	}
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
	keys := map[string]Key{}
	for _, k := range Keys() {
		keys[k.Name] = k
	}
	m := MapConfig(DefaultValues())
	names := make([]string, 0, len(overrides))
	for n := range overrides {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		k, ok := keys[n]
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

func checkValue(k Key, v string) error {
	var err error
	switch k.Type {
	case KeyInt:
		_, err = strconv.Atoi(strings.TrimSpace(v))
	case KeyFloat:
		_, err = parseFloat(v)
	case KeyDuration:
		_, err = parseDuration(v)
	case KeyBool:
		_, err = strconv.ParseBool(strings.TrimSpace(v))
	case KeyFloats:
		_, err = parseFloats(v)
	case KeyDurs:
		_, err = parseDurations(v)
	case KeyString:
		if len(k.Allowed) > 0 && !contains(k.Allowed, v) {
			err = fmt.Errorf("allowed: %s", strings.Join(k.Allowed, ", "))
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

// reader reads typed values from a Config, falling back to the key's
// default when the Config has no value, and remembers the first error.
type reader struct {
	cfg  Config
	defs map[string]string
	err  error
}

func newReader(cfg Config) *reader {
	return &reader{cfg: cfg, defs: DefaultValues()}
}

func (r *reader) raw(key string) string {
	v := ""
	if r.cfg != nil {
		v = r.cfg.String(key)
	}
	if strings.TrimSpace(v) == "" {
		v = r.defs[key]
	}
	return v
}

func (r *reader) fail(key, v, what string, err error) {
	if r.err == nil {
		if err != nil {
			r.err = fmt.Errorf("scheduler configuration %s=%q: %s: %w", key, v, what, err)
		} else {
			r.err = fmt.Errorf("scheduler configuration %s=%q: %s", key, v, what)
		}
	}
}

func (r *reader) str(key string, allowed ...string) string {
	v := strings.TrimSpace(r.raw(key))
	if len(allowed) > 0 && !contains(allowed, v) {
		r.fail(key, v, "allowed values are "+strings.Join(allowed, ", "), nil)
	}
	return v
}

func (r *reader) boolean(key string) bool {
	v := r.raw(key)
	b, err := strconv.ParseBool(strings.TrimSpace(v))
	if err != nil {
		r.fail(key, v, "want true or false", err)
	}
	return b
}

func (r *reader) integer(key string, min int) int {
	v := r.raw(key)
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil {
		r.fail(key, v, "want an integer", err)
		return min
	}
	if n < min {
		r.fail(key, v, fmt.Sprintf("must be at least %d", min), nil)
		return min
	}
	return n
}

func (r *reader) float(key string, min float64) float64 {
	v := r.raw(key)
	f, err := parseFloat(v)
	if err != nil {
		r.fail(key, v, "want a number", err)
		return min
	}
	if f < min {
		r.fail(key, v, fmt.Sprintf("must be at least %g", min), nil)
		return min
	}
	return f
}

func (r *reader) duration(key string) time.Duration {
	v := r.raw(key)
	d, err := parseDuration(v)
	if err != nil {
		r.fail(key, v, "want a duration such as 90s", err)
	}
	if d < 0 {
		r.fail(key, v, "must not be negative", nil)
	}
	return d
}

// capacities reads a list of fractions that must be positive and sum to 1.
func (r *reader) capacities(key string) []float64 {
	v := r.raw(key)
	cs, err := parseFloats(v)
	if err != nil {
		r.fail(key, v, "want comma-separated fractions such as 0.3,0.7", err)
		return []float64{1}
	}
	if len(cs) == 0 {
		r.fail(key, v, "needs at least one capacity", nil)
		return []float64{1}
	}
	sum := 0.0
	for _, c := range cs {
		if c <= 0 || c > 1 {
			r.fail(key, v, "every capacity must be in (0, 1]", nil)
			return []float64{1}
		}
		sum += c
	}
	if math.Abs(sum-1) > 1e-6 {
		r.fail(key, v, fmt.Sprintf("capacities sum to %.6g, not 1", sum), nil)
		return []float64{1}
	}
	return cs
}

// limits reads K-1 strictly positive durations; cumulative ones must grow.
func (r *reader) limits(key string, want int, cumulative bool) []time.Duration {
	v := r.raw(key)
	ds, err := parseDurations(v)
	if err != nil {
		r.fail(key, v, "want comma-separated durations such as 200s", err)
		return nil
	}
	if want >= 0 && len(ds) != want {
		r.fail(key, v, fmt.Sprintf("want %d value(s), one per queue but the last", want), nil)
		return nil
	}
	for i, d := range ds {
		if d <= 0 {
			r.fail(key, v, "every limit must be positive", nil)
			return nil
		}
		if cumulative && i > 0 && d <= ds[i-1] {
			r.fail(key, v, "cumulative limits must increase", nil)
			return nil
		}
	}
	return ds
}
