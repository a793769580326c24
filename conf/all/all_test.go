package all

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gomr/conf"
	"gomr/internal/layers"
)

// TestEveryRegisteringPackageIsLinked fails when a package of the module
// calls conf.Register but this package does not link it: a program
// importing conf/all would then refuse that package's keys as unknown,
// and the reference doc would miss them.
func TestEveryRegisteringPackageIsLinked(t *testing.T) {
	root, err := layers.ModuleRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	g, err := layers.Graph(root)
	if err != nil {
		t.Fatal(err)
	}
	linked := map[string]bool{}
	var visit func(string)
	visit = func(p string) {
		if linked[p] {
			return
		}
		linked[p] = true
		for _, imp := range g[p] {
			visit(imp)
		}
	}
	visit(layers.Module + "/conf/all")
	registering := 0
	for p := range g {
		if p == layers.Module+"/conf" {
			continue
		}
		dir := filepath.Join(root, filepath.FromSlash(strings.TrimPrefix(strings.TrimPrefix(p, layers.Module), "/")))
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(data), "conf.Register(") {
				continue
			}
			registering++
			if !linked[p] {
				t.Errorf("%s registers configuration keys (%s) but gomr/conf/all does not import it", p, filepath.Base(f))
			}
			break
		}
	}
	if registering < 2 {
		t.Errorf("found %d packages that register keys, want at least partitions and speculator", registering)
	}
}

// TestKeysOfEveryOwner checks that linking this package registers the
// policies' and the speculator's keys besides conf's own.
func TestKeysOfEveryOwner(t *testing.T) {
	for _, name := range []string{"log.level", "scheduler.policy", "scheduler.fair.pools", "speculation.clone.enabled", "straggler.fraction"} {
		if _, ok := conf.Lookup(name); !ok {
			t.Errorf("key %s is not registered", name)
		}
	}
}
