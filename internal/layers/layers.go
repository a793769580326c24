// Package layers is the module's import layering, and the code that checks
// it: every package of the module has a tier, and a package imports only
// packages of lower tiers, so that imports point down (docs/architecture.md,
// "Package layers"). TestLayering fails on an import that points up or
// sideways, and on a package that has no tier yet; make lint runs it.
package layers

import (
	"fmt"
	"go/build"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Module is the module path.
const Module = "gomr"

// Tiers lists the module's packages by tier, lowest first; a package may
// import only packages of a lower tier. Paths are relative to the module
// ("." is the module root).
var Tiers = [][]string{
	// 0, foundation: import nothing of the module. conf is the
	// configuration registry every other package may register keys with;
	// webassets the web assets (uPlot) the web pages embed;
	// internal/promexport the daemons' /metrics handler.
	{"conf", "internal/promexport", "mr/fs", "mrpb", "tasktracker/criu", "webassets"},
	// 1, core libraries: the MapReduce API, security, the scheduling
	// policies (pure code: events in, decisions out), the preemption
	// planner (pure code: victims and mechanisms).
	{"mr", "security", "partitions", "preempt"},
	// 2, mechanisms over them: the spill format, the speculator, the
	// policy driver, the job history format (with the job profiles it
	// yields).
	{"spill", "speculator", "sched", "jobtracker/jobhistory"},
	// 3, the shuffle, the policy test harness, the built-in apps.
	{"shuffle", "sched/schedtest", "apps"},
	// 4, the task child.
	{"tasktracker/child"},
	// 5, the daemons.
	{"jobtracker", "tasktracker"},
	// 6, the simulator, which drives the policies as the JobTracker does.
	{"sim"},
	// 7, conf/all: links every package that registers configuration keys;
	// the workload tools (replaying a trace on a real cluster and comparing
	// it with the simulator).
	{"conf/all", "workloads/replay"},
	// 8, tools over the daemons and the simulator: the workload suite
	// over the apps and the daemons, the tracker load generator.
	{"workloads", "loadgen"},
	// 9, programs and tools: the commands, this package.
	{"cmd/mr", "cmd/mrbench", "internal/layers"},
}

// Tier returns the tier of a module package given by import path.
func Tier(path string) (int, bool) {
	rel := strings.TrimPrefix(strings.TrimPrefix(path, Module), "/")
	if rel == "" {
		rel = "."
	}
	for i, tier := range Tiers {
		for _, p := range tier {
			if p == rel {
				return i, true
			}
		}
	}
	return 0, false
}

// Graph returns the module-internal imports of every package under root
// (the module root), by import path, from the non-test Go files the
// default build context selects. Directories named testdata or starting
// with "." or "_" are skipped, as the go command skips them.
func Graph(root string) (map[string][]string, error) {
	g := map[string][]string{}
	err := filepath.WalkDir(root, func(dir string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		name := d.Name()
		if dir != root && (name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
			return filepath.SkipDir
		}
		pkg, err := build.Default.ImportDir(dir, 0)
		if err != nil {
			if _, ok := err.(*build.NoGoError); ok {
				return nil
			}
			return fmt.Errorf("read package in %s: %w", dir, err)
		}
		rel, err := filepath.Rel(root, dir)
		if err != nil {
			return err
		}
		path := Module
		if rel != "." {
			path += "/" + filepath.ToSlash(rel)
		}
		imports := []string{}
		for _, imp := range pkg.Imports {
			if imp == Module || strings.HasPrefix(imp, Module+"/") {
				imports = append(imports, imp)
			}
		}
		sort.Strings(imports)
		g[path] = imports
		return nil
	})
	if err != nil {
		return nil, err
	}
	return g, nil
}

// Check returns one error line per violation of the layering in g: a
// package without a tier, an import of a package of the same or a higher
// tier.
func Check(g map[string][]string) []string {
	var bad []string
	paths := make([]string, 0, len(g))
	for p := range g {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		t, ok := Tier(p)
		if !ok {
			bad = append(bad, fmt.Sprintf("%s has no tier: add it to layers.Tiers (internal/layers/layers.go) and docs/architecture.md", p))
			continue
		}
		for _, imp := range g[p] {
			ti, ok := Tier(imp)
			if !ok {
				continue // reported as a package of its own
			}
			if ti >= t {
				bad = append(bad, fmt.Sprintf("%s (tier %d) imports %s (tier %d): imports must point to a lower tier", p, t, imp, ti))
			}
		}
	}
	return bad
}

// ModuleRoot returns the module root: the nearest directory at or above
// dir holding go.mod.
func ModuleRoot(dir string) (string, error) {
	d, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", fmt.Errorf("no go.mod at or above %s", dir)
		}
		d = parent
	}
}
