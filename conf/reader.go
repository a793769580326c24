package conf

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Getter gives a key's value, "" when it has none: a *Config, or a plain
// map of a pure package's tests and simulator.
type Getter interface {
	String(key string) string
}

// Reader reads typed values of keys from a Getter for a package that
// takes its configuration as one (the speculator, the reclaim planner):
// a key the getter leaves empty has its declared default, and the first
// value that does not parse or is out of range is kept as the error,
// naming the key, its value and what is wanted, after the reader's
// subject ("speculator configuration").
type Reader struct {
	cfg     Getter
	defs    map[string]string
	subject string
	err     error
}

// NewReader reads from cfg (nil: defaults only) the keys declared in
// keys, for subject.
func NewReader(subject string, cfg Getter, keys []Key) *Reader {
	r := &Reader{cfg: cfg, defs: make(map[string]string, len(keys)), subject: subject}
	for _, k := range keys {
		r.defs[k.Name] = k.Default
	}
	return r
}

// Err is the first error met, nil if none.
func (r *Reader) Err() error { return r.err }

// Raw is the key's value, trimmed, or its default.
func (r *Reader) Raw(key string) string {
	v := ""
	if r.cfg != nil {
		v = strings.TrimSpace(r.cfg.String(key))
	}
	if v == "" {
		v = r.defs[key]
	}
	return v
}

// Fail records an error for key's value v, unless one is recorded.
func (r *Reader) Fail(key, v, what string) {
	if r.err == nil {
		r.err = fmt.Errorf("%s %s=%q: %s", r.subject, key, v, what)
	}
}

// Bool reads true or false.
func (r *Reader) Bool(key string) bool {
	v := r.Raw(key)
	b, err := strconv.ParseBool(v)
	if err != nil {
		r.Fail(key, v, "want true or false")
	}
	return b
}

// Int reads an integer of at least min.
func (r *Reader) Int(key string, min int) int {
	v := r.Raw(key)
	n, err := strconv.Atoi(v)
	if err != nil {
		r.Fail(key, v, "want an integer")
		return min
	}
	if n < min {
		r.Fail(key, v, fmt.Sprintf("must be at least %d", min))
		return min
	}
	return n
}

// Float reads a number in [min, max].
func (r *Reader) Float(key string, min, max float64) float64 {
	v := r.Raw(key)
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsNaN(f) {
		r.Fail(key, v, "want a number")
		return min
	}
	if f < min || f > max {
		r.Fail(key, v, fmt.Sprintf("must be in [%g, %g]", min, max))
		return min
	}
	return f
}

// Duration reads a Go duration ("90s") or a plain number of seconds, not
// negative.
func (r *Reader) Duration(key string) time.Duration {
	v := r.Raw(key)
	var d time.Duration
	if f, err := strconv.ParseFloat(v, 64); err == nil {
		d = time.Duration(f * float64(time.Second))
	} else if d, err = time.ParseDuration(v); err != nil {
		r.Fail(key, v, "want a duration such as 10s")
		return 0
	}
	if d < 0 {
		r.Fail(key, v, "must not be negative")
		return 0
	}
	return d
}

// OneOf reads one of the allowed values (the first when it is not).
func (r *Reader) OneOf(key string, allowed ...string) string {
	v := r.Raw(key)
	if !slices.Contains(allowed, v) {
		r.Fail(key, v, "want one of "+strings.Join(allowed, ", "))
		return allowed[0]
	}
	return v
}
