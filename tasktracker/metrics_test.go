package tasktracker

import (
	"io"
	"net/http"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
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
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		t.Fatalf("parsing the metrics: %v\n%s", err, body)
	}
	out := map[string]map[string]float64{}
	for name, f := range fams {
		out[name] = map[string]float64{}
		for _, m := range f.Metric {
			var labels []string
			for _, l := range m.Label {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			var v float64
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				v = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				v = m.GetGauge().GetValue()
			case dto.MetricType_HISTOGRAM:
				v = float64(m.GetHistogram().GetSampleCount())
			default:
				v = m.GetUntyped().GetValue()
			}
			out[name][strings.Join(labels, ",")] = v
		}
	}
	return out
}
