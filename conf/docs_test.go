package conf

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// configurationDoc is the reference page whose key table is `mr conf`'s
// output with the defaults.
const configurationDoc = "../docs/configuration.md"

// TestConfigurationDocIsCurrent checks that docs/configuration.md lists
// every key with its default and description exactly as `mr conf` prints
// them (Print of the defaults). GOMR_UPDATE_DOCS=1 rewrites the table:
//
//	GOMR_UPDATE_DOCS=1 go test ./conf/ -run TestConfigurationDocIsCurrent
func TestConfigurationDocIsCurrent(t *testing.T) {
	data, err := os.ReadFile(configurationDoc)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := Print(&b, Default()); err != nil {
		t.Fatal(err)
	}
	want := b.String()
	doc := string(data)
	// The table is the fenced block that starts with Print's header line.
	const fence = "```\n"
	start := strings.Index(doc, fence+"KEY ")
	if start < 0 {
		t.Fatalf("%s has no fenced block starting with the KEY header", configurationDoc)
	}
	start += len(fence)
	end := strings.Index(doc[start:], fence)
	if end < 0 {
		t.Fatalf("%s: the key table's block is not closed", configurationDoc)
	}
	end += start
	if got := doc[start:end]; got == want {
		return
	}
	if os.Getenv("GOMR_UPDATE_DOCS") == "1" {
		if err := os.WriteFile(configurationDoc, []byte(doc[:start]+want+doc[end:]), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("rewrote the key table of %s", configurationDoc)
		return
	}
	t.Errorf("the key table of %s is not what `mr conf` prints; regenerate it with\n"+
		"  GOMR_UPDATE_DOCS=1 go test ./conf/ -run TestConfigurationDocIsCurrent\nwant:\n%s", configurationDoc, want)
}
