package all

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"gomr/conf"
)

// configurationDoc is the reference page whose key tables are generated
// from the registry: `mr conf`'s output with the defaults, and the
// reference table (conf.PrintReference).
const configurationDoc = "../../docs/configuration.md"

// referenceBegin and referenceEnd delimit the generated reference table.
const (
	referenceBegin = "<!-- BEGIN GENERATED: conf.PrintReference; edit the keys' declarations, not this table -->\n"
	referenceEnd   = "<!-- END GENERATED -->\n"
)

// TestConfigurationDocIsCurrent checks that docs/configuration.md lists
// every registered key (this package links every package that registers
// keys, as cmd/mr does) with its default and description exactly as `mr
// conf` prints them (conf.Print of the defaults), and with its type, scope,
// default and accepted values as conf.PrintReference writes them.
// GOMR_UPDATE_DOCS=1 rewrites both tables:
//
//	GOMR_UPDATE_DOCS=1 go test ./conf/all/ -run TestConfigurationDocIsCurrent
func TestConfigurationDocIsCurrent(t *testing.T) {
	data, err := os.ReadFile(configurationDoc)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := conf.Print(&b, conf.Default()); err != nil {
		t.Fatal(err)
	}
	var ref bytes.Buffer
	if err := conf.PrintReference(&ref, conf.Keys()); err != nil {
		t.Fatal(err)
	}
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
	rstart := strings.Index(doc, referenceBegin)
	if rstart < 0 {
		t.Fatalf("%s has no line %q", configurationDoc, referenceBegin)
	}
	rstart += len(referenceBegin)
	rend := strings.Index(doc[rstart:], referenceEnd)
	if rend < 0 {
		t.Fatalf("%s has no line %q after %q", configurationDoc, referenceEnd, referenceBegin)
	}
	rend += rstart
	if rstart < end {
		t.Fatalf("%s: the reference table must follow the `mr conf` table", configurationDoc)
	}
	if doc[start:end] == b.String() && doc[rstart:rend] == ref.String() {
		return
	}
	if os.Getenv("GOMR_UPDATE_DOCS") == "1" {
		updated := doc[:start] + b.String() + doc[end:rstart] + ref.String() + doc[rend:]
		if err := os.WriteFile(configurationDoc, []byte(updated), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("rewrote the key tables of %s", configurationDoc)
		return
	}
	t.Errorf("the key tables of %s are not what `mr conf` and conf.PrintReference print; regenerate them with\n"+
		"  GOMR_UPDATE_DOCS=1 go test ./conf/all/ -run TestConfigurationDocIsCurrent\n"+
		"want the `mr conf` table:\n%s\nand the reference table:\n%s", configurationDoc, b.String(), ref.String())
}
