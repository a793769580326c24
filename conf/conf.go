// Package conf is the runtime's configuration: a registry of keys, each
// with a type, a default, a one-line description and validation, and the
// Config values built from it. Each key is declared once, by the package
// that reads it, and registered with Register (registry.go); conf declares
// the runtime's own keys (keys.go).
//
// Sources apply in rising precedence: the defaults, a YAML file, MR_
// environment variables, explicit overrides (-D key=value on the command
// line) and, for a job, the job's own overrides. Every value from every
// source is checked against its key's type and constraints; unknown keys and
// bad values are errors that name the key, the value, where it came from and
// what is allowed.
//
// A Config is immutable: With and JobOverrides return new Configs.
package conf

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
)

// Type is the type of a configuration key's value.
type Type int

// The value types a key can have.
const (
	// String is any text.
	String Type = iota + 1
	// Int is a decimal integer that fits an int.
	Int
	// Int64 is a decimal integer that fits an int64.
	Int64
	// Float is a finite decimal number.
	Float
	// Bool is true or false (also 1/0, t/f, TRUE/FALSE as strconv.ParseBool
	// accepts).
	Bool
	// Duration is a Go duration string such as "500ms" or "2m".
	Duration
)

// String returns the type's name as Print and error messages show it.
func (t Type) String() string {
	switch t {
	case String:
		return "string"
	case Int:
		return "int"
	case Int64:
		return "int64"
	case Float:
		return "float"
	case Bool:
		return "bool"
	case Duration:
		return "duration"
	}
	return "Type(" + strconv.Itoa(int(t)) + ")"
}

// Key describes one configuration key.
type Key struct {
	// Name is the key, lower case, dot-separated (Hadoop style).
	Name string
	// Type is the value's type.
	Type Type
	// Default is the default value as text; it must pass the key's own
	// validation.
	Default string
	// Description is one line saying what the key does.
	Description string
	// Check, if set, validates a value beyond its type (ranges, enums). It
	// receives the parsed value: string, int, int64, float64, bool or
	// time.Duration according to Type. Its error says what is allowed
	// ("want an integer from 1 to 2047"). The checks in checks.go also
	// describe themselves, so that a value of the wrong type gets the
	// same message.
	Check func(v any) error
	// Job is true if a job may override the key at submission (-D);
	// cluster keys have it false.
	Job bool
	// Unit is the unit of a numeric value, for messages and for
	// Config.Duration: "ms" and "s" let Duration convert Int, Int64 and
	// Float keys; other units ("MiB", "bytes") are informational.
	Unit string
	// Valid, if set, says for the reference (docs/configuration.md) what
	// values the key's reader accepts when that is more than Check can
	// describe: list syntax, ranges and relations the owning package
	// checks when it builds from the configuration. It is documentation
	// only.
	Valid string
}

// Validate checks text as a value of k: its type and k's Check. The error
// says what is allowed, without naming the key.
func (k Key) Validate(text string) error {
	_, err := parseValue(k, text)
	return err
}

// Accepts describes the values k accepts, for the reference: Valid if set,
// else what its Check allows if the check can say, else what its type
// allows.
func (k Key) Accepts() string {
	if k.Valid != "" {
		return k.Valid
	}
	if desc, ok := describe(k.Check); ok {
		return strings.TrimPrefix(desc, "want ")
	}
	switch k.Type {
	case Int, Int64:
		return "an integer"
	case Float:
		return "a finite number"
	case Bool:
		return "true or false"
	case Duration:
		return `a duration such as "500ms", "30s" or "2m"`
	}
	return "any text"
}

// EnvName returns the environment variable that sets key: MR_ followed by
// the key in upper case with dots and dashes mapped to underscores, as in
// MR_MAPREDUCE_TASK_IO_SORT_MB.
func EnvName(key string) string {
	return "MR_" + strings.ToUpper(strings.Map(func(r rune) rune {
		if r == '.' || r == '-' {
			return '_'
		}
		return r
	}, key))
}

// Keys returns all configuration keys, sorted by name.
func Keys() []Key { return registered().list() }

// Lookup returns the key named name.
func Lookup(name string) (Key, bool) {
	k, ok := registered().byName[name]
	return k, ok
}

// table is an indexed, validated set of keys. The registry holds one;
// tests build others.
type table struct {
	keys     []Key // sorted by name
	byName   map[string]Key
	defaults map[string]value
	// digest is DefaultsDigest of this table, computed at its first use.
	digest func() string
}

// newTable validates keys and indexes them.
func newTable(keys []Key) (*table, error) {
	t := &table{byName: make(map[string]Key, len(keys)), defaults: make(map[string]value, len(keys))}
	t.digest = sync.OnceValue(t.defaultsDigest)
	envs := make(map[string]string, len(keys))
	var errs []error
	for _, k := range keys {
		if err := checkKeyDef(k); err != nil {
			errs = append(errs, err)
			continue
		}
		if _, dup := t.byName[k.Name]; dup {
			errs = append(errs, fmt.Errorf("configuration key %q is defined twice", k.Name))
			continue
		}
		env := EnvName(k.Name)
		if other, dup := envs[env]; dup {
			errs = append(errs, fmt.Errorf("configuration keys %q and %q map to the same environment variable %s", other, k.Name, env))
			continue
		}
		envs[env] = k.Name
		v, err := parseValue(k, k.Default)
		if err != nil {
			errs = append(errs, fmt.Errorf("default %q of configuration key %q is invalid: %w", k.Default, k.Name, err))
			continue
		}
		t.byName[k.Name] = k
		t.keys = append(t.keys, k)
		v.source = SourceDefault
		t.defaults[k.Name] = v
	}
	sort.Slice(t.keys, func(i, j int) bool { return t.keys[i].Name < t.keys[j].Name })
	// A key that is a dotted prefix of another could not be written in
	// a nested YAML file, so the table refuses it. Sorted order puts
	// "a.b" right before "a.b.c" or before keys like "a.b-x" that sit
	// between them; compare each key with all later keys sharing the
	// prefix.
	for i, k := range t.keys {
		for _, l := range t.keys[i+1:] {
			if !strings.HasPrefix(l.Name, k.Name) {
				break
			}
			if strings.HasPrefix(l.Name, k.Name+".") {
				errs = append(errs, fmt.Errorf("configuration key %q is a prefix of %q; a nested YAML file cannot hold both", k.Name, l.Name))
			}
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return t, nil
}

// checkKeyDef checks the static parts of a key definition.
func checkKeyDef(k Key) error {
	if k.Name == "" {
		return errors.New("configuration key with an empty name")
	}
	for _, r := range k.Name {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '.' || r == '-' || r == '_') {
			return fmt.Errorf("configuration key %q: name may hold only a-z, 0-9, '.', '-' and '_', not %q", k.Name, r)
		}
	}
	if strings.HasPrefix(k.Name, ".") || strings.HasSuffix(k.Name, ".") || strings.Contains(k.Name, "..") {
		return fmt.Errorf("configuration key %q: name has an empty dotted part", k.Name)
	}
	if k.Type < String || k.Type > Duration {
		return fmt.Errorf("configuration key %q: invalid type %v", k.Name, k.Type)
	}
	if strings.TrimSpace(k.Description) == "" || strings.ContainsAny(k.Description, "\r\n") {
		return fmt.Errorf("configuration key %q: description must be one non-empty line", k.Name)
	}
	return nil
}

func (t *table) list() []Key {
	out := make([]Key, len(t.keys))
	copy(out, t.keys)
	return out
}

// Sources recorded in Entry.Source. File and environment sources carry a
// suffix: "file:<path>", "env:<VAR>".
const (
	SourceDefault = "default"
	SourceFlag    = "flag"
	SourceJob     = "job"
	// SourceMap marks values given to FromMap.
	SourceMap = "map"
)

// value is one key's effective value.
type value struct {
	text   string
	parsed any
	source string
}

// Config is a complete set of configuration values, one per key. It is
// immutable; the zero Config is not usable (use Default, Load or FromMap).
type Config struct {
	tab  *table
	vals map[string]value
}

// Default returns the configuration with every key at its default.
func Default() *Config { return registered().defaultConfig() }

// DefaultsDigest identifies this program's built-in defaults: a hash of
// every registered key with its default value, in key order. Two processes
// with the same digest rebuild the same configuration from the same
// non-default keys (FromMap), so a sender may leave the defaults out; with
// different digests (another build, another set of linked packages) it
// must send every key.
func DefaultsDigest() string { return registered().digest() }

func (t *table) defaultsDigest() string {
	h := sha256.New()
	for _, k := range t.keys {
		fmt.Fprintf(h, "%s=%s\n", k.Name, t.defaults[k.Name].text)
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

func (t *table) defaultConfig() *Config {
	vals := make(map[string]value, len(t.defaults))
	for k, v := range t.defaults {
		vals[k] = v
	}
	return &Config{tab: t, vals: vals}
}

// FromMap returns the defaults with the values of m applied (source "map"),
// each validated. Task children use it to rebuild the configuration their
// TaskTracker shipped as Config.Map.
func FromMap(m map[string]string) (*Config, error) {
	return Default().With(m, SourceMap)
}

// With returns a new Config with overrides applied on top of c, recording
// source as their Entry.Source ("flag" for -D, "job" for a job's
// overrides). Every key must be known and every value valid; the error names
// each offending key, its value and what is allowed.
func (c *Config) With(overrides map[string]string, source string) (*Config, error) {
	return c.with(overrides, func(string) string { return source }, nil)
}

// JobOverrides is With(m, "job") but also refuses cluster keys (those whose
// Job is false), naming them.
func (c *Config) JobOverrides(m map[string]string) (*Config, error) {
	return c.with(m, func(string) string { return SourceJob }, func(k Key) error {
		if !k.Job {
			return fmt.Errorf("configuration key %q cannot be set by a job: it is a cluster setting", k.Name)
		}
		return nil
	})
}

// with applies m; sourceOf gives each key's source; allow, if set, may
// refuse a known key.
func (c *Config) with(m map[string]string, sourceOf func(key string) string, allow func(Key) error) (*Config, error) {
	names := make([]string, 0, len(m))
	for name := range m {
		names = append(names, name)
	}
	sort.Strings(names)
	vals := make(map[string]value, len(c.vals))
	for k, v := range c.vals {
		vals[k] = v
	}
	var errs []error
	for _, name := range names {
		src := sourceOf(name)
		k, ok := c.tab.byName[name]
		if !ok {
			errs = append(errs, c.tab.unknownKey(name, src))
			continue
		}
		if allow != nil {
			if err := allow(k); err != nil {
				errs = append(errs, err)
				continue
			}
		}
		v, err := parseValue(k, m[name])
		if err != nil {
			errs = append(errs, fmt.Errorf("invalid value %q for configuration key %q %s: %w", m[name], name, where(src), err))
			continue
		}
		v.source = src
		vals[name] = v
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return &Config{tab: c.tab, vals: vals}, nil
}

// unknownKey is the error for a key not in the table, with a suggestion when
// a known key is close.
func (t *table) unknownKey(name, source string) error {
	msg := fmt.Sprintf("unknown configuration key %q %s", name, where(source))
	if s, ok := t.suggest(name); ok {
		msg += fmt.Sprintf(" (did you mean %q?)", s)
	}
	return errors.New(msg)
}

// maxSuggestDistance is the largest edit distance at which an unknown key
// gets a "did you mean" suggestion.
const maxSuggestDistance = 3

// suggest returns the known key closest to name (case-insensitive
// Levenshtein distance, ties to the first in sorted order) if it is within
// maxSuggestDistance.
func (t *table) suggest(name string) (string, bool) {
	lname := strings.ToLower(name)
	best, bestD := "", maxSuggestDistance+1
	for _, k := range t.keys {
		if d := editDistance(lname, k.Name, bestD); d < bestD {
			best, bestD = k.Name, d
		}
	}
	return best, best != ""
}

// suggestEnv returns the key whose environment variable is closest to the
// variable name (case-insensitive Levenshtein distance, ties to the first
// key in sorted order) if it is within maxSuggestDistance.
func (t *table) suggestEnv(name string) (string, bool) {
	uname := strings.ToUpper(name)
	best, bestD := "", maxSuggestDistance+1
	for _, k := range t.keys {
		if d := editDistance(uname, EnvName(k.Name), bestD); d < bestD {
			best, bestD = k.Name, d
		}
	}
	return best, best != ""
}

// editDistance is the Levenshtein distance between a and b (in bytes); it
// returns limit as soon as the distance is known to be at least limit.
func editDistance(a, b string, limit int) int {
	if d := len(a) - len(b); d >= limit || -d >= limit {
		return limit
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		rowMin := cur[0]
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			rowMin = min(rowMin, cur[j])
		}
		if rowMin >= limit {
			return limit
		}
		prev, cur = cur, prev
	}
	return min(prev[len(b)], limit)
}

// where describes a source for error messages.
func where(source string) string {
	switch {
	case source == SourceDefault:
		return "in the defaults"
	case source == SourceFlag:
		return "in -D"
	case source == SourceJob:
		return "in job overrides"
	case source == SourceMap:
		return "in the configuration map"
	case strings.HasPrefix(source, "file:"):
		return "in file " + strings.TrimPrefix(source, "file:")
	case strings.HasPrefix(source, "env:"):
		return "in environment variable " + strings.TrimPrefix(source, "env:")
	case source == "":
		return "from an unnamed source"
	}
	return "from " + source
}

// parseValue parses text as k's type and runs k's Check. Its error says what
// is allowed, without naming the key (callers add that).
func parseValue(k Key, text string) (value, error) {
	v := value{text: text}
	trimmed := strings.TrimSpace(text)
	// want says what the type allows; note adds why a number failed.
	var want, note string
	switch k.Type {
	case String:
		v.parsed = text
	case Int, Int64:
		bits, name := strconv.IntSize, "int"
		if k.Type == Int64 {
			bits, name = 64, "int64"
		}
		n, err := strconv.ParseInt(trimmed, 10, bits)
		if err != nil {
			want = "want an integer"
			if errors.Is(err, strconv.ErrRange) {
				note = "the value overflows " + name
			}
		}
		v.text = trimmed
		if k.Type == Int {
			v.parsed = int(n)
		} else {
			v.parsed = n
		}
	case Float:
		f, err := strconv.ParseFloat(trimmed, 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			want = "want a finite number"
		}
		v.text, v.parsed = trimmed, f
	case Bool:
		b, err := strconv.ParseBool(trimmed)
		if err != nil {
			want = "want true or false"
		}
		v.text, v.parsed = trimmed, b
	case Duration:
		d, err := time.ParseDuration(trimmed)
		if err != nil {
			want = `want a duration such as "500ms", "30s" or "2m"`
		}
		v.text, v.parsed = trimmed, d
	default:
		return value{}, fmt.Errorf("key %q has invalid type %v", k.Name, k.Type)
	}
	var err error
	if want != "" {
		// Say all that is allowed, not only the type, when the check
		// can describe it.
		if desc, ok := describe(k.Check); ok {
			want = desc
		}
		err = errors.New(want)
	} else if k.Check != nil {
		err = k.Check(v.parsed)
	}
	if err == nil {
		return v, nil
	}
	if k.Unit != "" {
		err = fmt.Errorf("%w (%s)", err, k.Unit)
	}
	if note != "" {
		err = fmt.Errorf("%w; %s", err, note)
	}
	return value{}, err
}

// get returns key's value and definition, panicking on an unknown key.
func (c *Config) get(key string) (value, Key) {
	k, ok := c.tab.byName[key]
	if !ok {
		panic(fmt.Sprintf("conf: unknown configuration key %q", key))
	}
	return c.vals[key], k
}

func typePanic(method string, k Key) {
	panic(fmt.Sprintf("conf: %s called on configuration key %q of type %v", method, k.Name, k.Type))
}

// String returns key's value as text, for a key of any type. It panics on an
// unknown key (a programming error).
func (c *Config) String(key string) string {
	v, _ := c.get(key)
	return v.text
}

// Int returns the value of an Int or Int64 key. It panics on an unknown key
// or a key of another type.
func (c *Config) Int(key string) int {
	v, k := c.get(key)
	switch x := v.parsed.(type) {
	case int:
		return x
	case int64:
		if int64(int(x)) != x {
			panic(fmt.Sprintf("conf: value %d of configuration key %q does not fit an int", x, key))
		}
		return int(x)
	}
	typePanic("Int", k)
	return 0
}

// Int64 returns the value of an Int or Int64 key. It panics on an unknown
// key or a key of another type.
func (c *Config) Int64(key string) int64 {
	v, k := c.get(key)
	switch x := v.parsed.(type) {
	case int:
		return int64(x)
	case int64:
		return x
	}
	typePanic("Int64", k)
	return 0
}

// Float returns the value of a Float key; Int and Int64 keys are converted.
// It panics on an unknown key or a key of another type.
func (c *Config) Float(key string) float64 {
	v, k := c.get(key)
	switch x := v.parsed.(type) {
	case float64:
		return x
	case int:
		return float64(x)
	case int64:
		return float64(x)
	}
	typePanic("Float", k)
	return 0
}

// Bool returns the value of a Bool key. It panics on an unknown key or a key
// of another type.
func (c *Config) Bool(key string) bool {
	v, k := c.get(key)
	if b, ok := v.parsed.(bool); ok {
		return b
	}
	typePanic("Bool", k)
	return false
}

// Duration returns the value of a Duration key, or of an Int, Int64 or
// Float key whose Unit is "ms" or "s" (Hadoop's millisecond keys such as
// mapreduce.task.timeout) converted to a time.Duration. It panics on an
// unknown key or any other key.
func (c *Config) Duration(key string) time.Duration {
	v, k := c.get(key)
	if d, ok := v.parsed.(time.Duration); ok {
		return d
	}
	var unit time.Duration
	switch k.Unit {
	case "ms":
		unit = time.Millisecond
	case "s":
		unit = time.Second
	case "min":
		unit = time.Minute
	default:
		typePanic("Duration", k)
	}
	switch x := v.parsed.(type) {
	case int:
		return time.Duration(x) * unit
	case int64:
		return time.Duration(x) * unit
	case float64:
		return time.Duration(x * float64(unit))
	}
	typePanic("Duration", k)
	return 0
}

// Map returns every key's effective value as text, as FromMap accepts it.
func (c *Config) Map() map[string]string {
	m := make(map[string]string, len(c.vals))
	for k, v := range c.vals {
		m[k] = v.text
	}
	return m
}

// Entry is one key's effective value and where it came from.
type Entry struct {
	Key   string
	Value string
	// Source is "default", "file:<path>", "env:<VAR>", "flag" (-D), "job"
	// (a job's overrides) or "map" (FromMap); With records its own.
	Source      string
	Description string
}

// Entries returns every key's entry, sorted by key.
func (c *Config) Entries() []Entry {
	out := make([]Entry, 0, len(c.tab.keys))
	for _, k := range c.tab.keys {
		v := c.vals[k.Name]
		out = append(out, Entry{Key: k.Name, Value: v.text, Source: v.source, Description: k.Description})
	}
	return out
}

// ParseDefine splits a -D argument "key=value" at its first '='. The key
// must be non-empty and hold no white space; the value may be empty and may
// contain '='. Whether the key is known is checked later (Load, With).
func ParseDefine(s string) (key, value string, err error) {
	key, value, ok := strings.Cut(s, "=")
	if !ok {
		return "", "", fmt.Errorf("definition %q: want key=value", s)
	}
	if key == "" {
		return "", "", fmt.Errorf("definition %q: empty key before '='", s)
	}
	if strings.IndexFunc(key, unicode.IsSpace) >= 0 {
		return "", "", fmt.Errorf("definition %q: key %q contains white space", s, key)
	}
	return key, value, nil
}
