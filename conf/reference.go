package conf

import (
	"fmt"
	"io"
	"strings"
)

// PrintReference writes keys as the Markdown table of the configuration
// reference (docs/configuration.md): for each key its type, who may set it
// (job: also a job's -D; cluster: only the daemons' configuration), its
// default and the values it accepts (Key.Accepts). Descriptions are in the
// table Print writes.
func PrintReference(w io.Writer, keys []Key) error {
	var b strings.Builder
	b.WriteString("| key | type | scope | default | accepts |\n")
	b.WriteString("| --- | --- | --- | --- | --- |\n")
	for _, k := range keys {
		typ := k.Type.String()
		if k.Unit != "" {
			typ += " (" + k.Unit + ")"
		}
		scope := "cluster"
		if k.Job {
			scope = "job"
		}
		def := "`" + k.Default + "`"
		if k.Default == "" {
			def = `""`
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s |\n", k.Name, typ, scope, def, mdCell(k.Accepts()))
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("printing the configuration reference: %w", err)
	}
	return nil
}

// mdCell escapes text for a Markdown table cell.
func mdCell(s string) string {
	return strings.ReplaceAll(s, "|", `\|`)
}
