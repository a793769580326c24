package tasktracker

import (
	"bytes"
	"io"
	"net/http"
	"testing"

	"gomr/internal/promexport"
)

// scrape reads the tracker's /metrics and returns every sample by family
// name and labels (name=value pairs joined by commas, sorted by name as
// the exposition has them); a histogram's value is its sample count.
func (tr *testTracker) scrape(t *testing.T) map[string]map[string]float64 {
	t.Helper()
	resp, err := http.Get("http://" + tr.tt.ShuffleAddress() + MetricsPath)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %v\n%s", MetricsPath, resp.StatusCode, err, body)
	}
	fams, err := promexport.Parse(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("%v\n%s", err, body)
	}
	return promexport.AllSamples(fams)
}
