package conf

import (
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
	mu  sync.Mutex // serialises Register
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
	var all []Key
	if t := registry.tab.Load(); t != nil {
		all = t.list()
	}
	t, err := newTable(append(all, keys...))
	if err != nil {
		panic(fmt.Sprintf("conf: Register: %v", err))
	}
	registry.tab.Store(t)
}

// registered returns the registry's current key table.
func registered() *table {
	return registry.tab.Load()
}
