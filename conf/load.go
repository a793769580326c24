package conf

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/viper"
	"go.yaml.in/yaml/v3"
)

// LoadOptions says which sources Load reads, on top of the defaults.
type LoadOptions struct {
	// File is a YAML configuration file; "" means none. A missing or
	// unreadable file is an error naming it. Keys may be nested maps or
	// flat dotted names (or a mix); YAML keys are case-insensitive.
	File string
	// Env reads MR_ environment variables (see EnvName). Every MR_
	// variable must name a known key: one that names none is an error
	// naming the variable (with the closest key's variable, if one is
	// close), as an unknown -D key is, so that a misspelt variable does
	// not silently leave its key at the default. The runtime's own
	// variables are GOMR_ ones for that reason. A variable set to the
	// empty string counts as unset, as in viper, and is not checked.
	Env bool
	// Overrides are -D key=value definitions, applied last.
	Overrides map[string]string
}

// Load builds a Config from the defaults, then opts.File, then the
// environment (if opts.Env), then opts.Overrides, each source overriding the
// previous ones. Unknown keys and invalid values stop it with an error naming
// every offending key, its value, its source and what is allowed.
func Load(opts LoadOptions) (*Config, error) {
	return registered().load(opts, os.LookupEnv, os.Environ)
}

func (t *table) load(opts LoadOptions, lookupEnv func(string) (string, bool), environ func() []string) (*Config, error) {
	c := t.defaultConfig()
	var err error
	if opts.File != "" {
		var m map[string]string
		m, err = readYAML(opts.File)
		if err != nil {
			return nil, err
		}
		src := "file:" + opts.File
		if c, err = c.with(m, func(string) string { return src }, nil); err != nil {
			return nil, err
		}
	}
	if opts.Env {
		m := make(map[string]string)
		srcs := make(map[string]string)
		for _, k := range t.keys {
			name := EnvName(k.Name)
			if v, ok := lookupEnv(name); ok && v != "" {
				m[k.Name] = v
				srcs[k.Name] = "env:" + name
			}
		}
		errs := t.unknownEnv(environ())
		if c, err = c.with(m, func(key string) string { return srcs[key] }, nil); err != nil {
			errs = append(errs, err)
		}
		if len(errs) > 0 {
			return nil, errors.Join(errs...)
		}
	}
	if len(opts.Overrides) > 0 {
		if c, err = c.With(opts.Overrides, SourceFlag); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// unknownEnv returns an error for each non-empty MR_ variable in environ
// (as os.Environ gives it) that names no key, sorted by variable name.
func (t *table) unknownEnv(environ []string) []error {
	known := make(map[string]bool, len(t.keys))
	for _, k := range t.keys {
		known[EnvName(k.Name)] = true
	}
	var names []string
	for _, kv := range environ {
		name, v, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "MR_") && v != "" && !known[name] {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	var errs []error
	for _, name := range names {
		errs = append(errs, t.unknownEnvVar(name))
	}
	return errs
}

// unknownEnvVar is the error for an MR_ variable that names no key, with a
// suggestion when a key's variable is close.
func (t *table) unknownEnvVar(name string) error {
	msg := fmt.Sprintf("unknown configuration key in environment variable %s: MR_ variables must name a configuration key", name)
	if k, ok := t.suggestEnv(name); ok {
		msg += fmt.Sprintf(" (did you mean %s, for %q?)", EnvName(k), k)
	}
	return errors.New(msg)
}

// readYAML reads a YAML configuration file through viper and returns its
// settings flattened to dotted keys, each value as text.
func readYAML(path string) (map[string]string, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("configuration file %s: %w", path, err)
	}
	v := viper.New()
	v.SetConfigFile(path)
	v.SetConfigType("yaml")
	if err := v.ReadInConfig(); err != nil {
		return nil, fmt.Errorf("configuration file %s: %w", path, err)
	}
	if err := checkDuplicates(path); err != nil {
		return nil, err
	}
	keys := v.AllKeys()
	sort.Strings(keys)
	m := make(map[string]string, len(keys))
	var errs []error
	for _, k := range keys {
		text, err := scalarText(v.Get(k))
		if err != nil {
			errs = append(errs, fmt.Errorf("configuration key %q in file %s: %w", k, path, err))
			continue
		}
		m[k] = text
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return m, nil
}

// scalarText turns a YAML scalar as decoded into text that parseValue
// accepts; lists and maps are errors.
func scalarText(x any) (string, error) {
	switch v := x.(type) {
	case nil:
		return "", nil
	case string:
		return v, nil
	case bool:
		return strconv.FormatBool(v), nil
	case int:
		return strconv.Itoa(v), nil
	case int64:
		return strconv.FormatInt(v, 10), nil
	case uint64:
		return strconv.FormatUint(v, 10), nil
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64), nil
	case time.Time:
		// YAML timestamps: give back the text a user would have written.
		if v.Equal(v.Truncate(24*time.Hour)) && v.Location() == time.UTC {
			return v.Format(time.DateOnly), nil
		}
		return v.Format(time.RFC3339Nano), nil
	case []any, map[string]any, map[any]any:
		return "", fmt.Errorf("want a single value, not a %s", yamlKind(v))
	}
	return fmt.Sprint(x), nil
}

// checkDuplicates refuses a file that sets one key twice, for instance both
// nested and as a flat dotted name, or in two letter cases: viper would
// silently keep one of them.
func checkDuplicates(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("configuration file %s: %w", path, err)
	}
	var root map[string]any
	if err := yaml.Unmarshal(data, &root); err != nil {
		return fmt.Errorf("configuration file %s: %w", path, err)
	}
	seen := make(map[string]int)
	var walk func(prefix string, m map[string]any)
	walk = func(prefix string, m map[string]any) {
		for k, x := range m {
			name := strings.ToLower(prefix + k)
			if sub, ok := x.(map[string]any); ok && len(sub) > 0 {
				walk(name+".", sub)
				continue
			}
			seen[name]++
		}
	}
	walk("", root)
	var dups []string
	for name, n := range seen {
		if n > 1 {
			dups = append(dups, name)
		}
	}
	sort.Strings(dups)
	var errs []error
	for _, name := range dups {
		errs = append(errs, fmt.Errorf("configuration key %q is set more than once in file %s", name, path))
	}
	return errors.Join(errs...)
}

func yamlKind(x any) string {
	if _, ok := x.([]any); ok {
		return "list"
	}
	return "map"
}

// Print writes c's entries as an aligned table with the columns KEY, VALUE,
// SOURCE and DESCRIPTION, for `mr conf`. An empty value, or one holding tabs, line breaks or
// quotes, is shown quoted.
func Print(w io.Writer, c *Config) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tVALUE\tSOURCE\tDESCRIPTION")
	for _, e := range c.Entries() {
		val := e.Value
		if val == "" || strings.ContainsAny(val, "\t\n\r\"") {
			val = strconv.Quote(val)
		}
		desc := e.Description
		if k, ok := c.tab.byName[e.Key]; ok && k.Unit != "" {
			desc += " (" + k.Unit + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", e.Key, val, e.Source, desc)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("printing configuration: %w", err)
	}
	return nil
}
