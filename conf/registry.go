package conf

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
)

// The registry of configuration keys. conf registers its own keys (the
// runtime's: keys.go); every other package that reads keys of its own
// declares them beside the code that reads them and registers them from
// its init function, as database/sql drivers register themselves: the
// scheduling policies (package partitions) and the speculator (package
// speculator). A program knows the keys of the packages it links; package
// gomr/conf/all links every package that registers keys, for the programs
// (cmd/mr) and the reference doc (docs/configuration.md).
//
// The registry is the package's only global state. Registration happens
// at init, before any Config is built; a Config keeps the key table it was
// built from.
var registry struct {
	mu sync.Mutex // serialises Register and the table's building
	// keys are the registered keys in registration order; names, envs
	// and prefixes index them for Register's checks: every name, every
	// name's environment variable, and every dotted prefix of a name (to
	// the name that has it).
	keys     []Key
	names    map[string]bool
	envs     map[string]string
	prefixes map[string]string
	// tab is the table of keys, built at its first use after the last
	// Register: the packages' init functions register some 20 times, and
	// a table built at each was 3.9 MB of the 5.3 MB a process's inits
	// allocated, and 5.4 of the 19.2 ms of CPU that a run of `mr conf`
	// took (every task child is such a process).
	tab atomic.Pointer[table]
}

func init() {
	Register(keyTable...)
}

// Register adds configuration keys to the registry. It is meant to be
// called from the init function of the package that reads the keys. It
// panics if a key is invalid (empty or malformed name, bad type, a default
// its own Check refuses, a multi-line description) or clashes with a
// registered key (the same name, the same MR_ environment variable, or a
// name that is a dotted prefix of another): those are programming errors.
func Register(keys ...Key) {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	// The new keys among themselves: the table's own checks.
	if _, err := newTable(keys); err != nil {
		panic(fmt.Sprintf("conf: Register: %v", err))
	}
	// Against the registered ones.
	var errs []error
	for _, k := range keys {
		if registry.names[k.Name] {
			errs = append(errs, fmt.Errorf("configuration key %q is defined twice", k.Name))
			continue
		}
		if other, dup := registry.envs[EnvName(k.Name)]; dup {
			errs = append(errs, fmt.Errorf("configuration keys %q and %q map to the same environment variable %s", other, k.Name, EnvName(k.Name)))
		}
		if longer, ok := registry.prefixes[k.Name]; ok {
			errs = append(errs, fmt.Errorf("configuration key %q is a prefix of %q; a nested YAML file cannot hold both", k.Name, longer))
		}
		for _, p := range dottedPrefixes(k.Name) {
			if registry.names[p] {
				errs = append(errs, fmt.Errorf("configuration key %q is a prefix of %q; a nested YAML file cannot hold both", p, k.Name))
			}
		}
	}
	if len(errs) > 0 {
		panic(fmt.Sprintf("conf: Register: %v", errors.Join(errs...)))
	}
	if registry.names == nil {
		registry.names, registry.envs, registry.prefixes = map[string]bool{}, map[string]string{}, map[string]string{}
	}
	for _, k := range keys {
		registry.names[k.Name] = true
		registry.envs[EnvName(k.Name)] = k.Name
		for _, p := range dottedPrefixes(k.Name) {
			registry.prefixes[p] = k.Name
		}
	}
	registry.keys = append(registry.keys, keys...)
	registry.tab.Store(nil)
}

// dottedPrefixes returns the dotted prefixes of a key's name: "a" and
// "a.b" for "a.b.c".
func dottedPrefixes(name string) []string {
	var out []string
	for i := range len(name) {
		if name[i] == '.' {
			out = append(out, name[:i])
		}
	}
	return out
}

// registered returns the table of the registered keys, built at its first
// use after the last Register.
func registered() *table {
	if t := registry.tab.Load(); t != nil {
		return t
	}
	registry.mu.Lock()
	defer registry.mu.Unlock()
	if t := registry.tab.Load(); t != nil {
		return t
	}
	t, err := newTable(registry.keys)
	if err != nil {
		// Register checked every key against the others.
		panic(fmt.Sprintf("conf: the registered keys: %v", err))
	}
	registry.tab.Store(t)
	return t
}
