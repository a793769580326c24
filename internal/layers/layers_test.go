package layers

import (
	"strings"
	"testing"
)

// TestLayering fails when a package imports one of its own or a higher
// tier, or has no tier.
func TestLayering(t *testing.T) {
	root, err := ModuleRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	g, err := Graph(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(g) < 10 {
		t.Fatalf("found only %d packages under %s: %v", len(g), root, g)
	}
	for _, line := range Check(g) {
		t.Error(line)
	}
	// Every tiered package exists, so that the table does not rot.
	for _, tier := range Tiers {
		for _, p := range tier {
			if _, ok := g[Module+"/"+p]; !ok {
				t.Errorf("layers.Tiers names %s, which is not a package of the module", p)
			}
		}
	}
}

// TestCheckCatchesUpwardImports feeds Check a graph with the import this
// layering was made to remove (jobtracker importing the simulator), a
// same-tier import and an unknown package.
func TestCheckCatchesUpwardImports(t *testing.T) {
	g := map[string][]string{
		"gomr/jobtracker": {"gomr/conf", "gomr/sim"},
		"gomr/partitions": {"gomr/security"},
		"gomr/conf":       {},
		"gomr/sim":        {"gomr/partitions"},
		"gomr/security":   {"gomr/conf"},
		"gomr/newthing":   {},
	}
	got := strings.Join(Check(g), "\n")
	for _, want := range []string{
		"gomr/jobtracker (tier 5) imports gomr/sim (tier 6)",
		"gomr/partitions (tier 1) imports gomr/security (tier 1)",
		"gomr/newthing has no tier",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("Check did not report %q; it reported:\n%s", want, got)
		}
	}
	if strings.Contains(got, "gomr/sim (tier 6) imports") {
		t.Errorf("Check refused a downward import:\n%s", got)
	}
}
