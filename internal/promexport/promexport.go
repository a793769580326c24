// Package promexport is what the daemons share around a Prometheus
// registry: the /metrics handler that logs a failed scrape instead of
// dropping it, and the reading of an exposition back into samples, which
// the daemons' tests and tools use to check what a scraper would see.
package promexport

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Handler serves g in the exposition format the scraper asks for (the text
// format by default). A collector that fails does not fail the scrape: the
// others are served and the error is logged to log.
func Handler(g prometheus.Gatherer, log *slog.Logger) http.Handler {
	return promhttp.HandlerFor(g, promhttp.HandlerOpts{
		ErrorLog:      errorLog{log},
		ErrorHandling: promhttp.ContinueOnError,
	})
}

// errorLog logs the errors of a scrape.
type errorLog struct{ log *slog.Logger }

// Println logs one error of a scrape.
func (l errorLog) Println(v ...any) {
	l.log.Warn("metrics scrape", "error", strings.TrimSpace(fmt.Sprintln(v...)))
}

// Parse reads an exposition in the text format into its metric families by
// name.
func Parse(r io.Reader) (map[string]*dto.MetricFamily, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("parsing a metrics exposition: %w", err)
	}
	return fams, nil
}

// Samples gives the samples of a family by their labels, as name=value
// pairs joined by commas in the order of the exposition (by name): a
// counter's or gauge's value, a histogram's or summary's sample count.
func Samples(f *dto.MetricFamily) map[string]float64 {
	out := make(map[string]float64, len(f.GetMetric()))
	for _, m := range f.GetMetric() {
		labels := make([]string, 0, len(m.GetLabel()))
		for _, l := range m.GetLabel() {
			labels = append(labels, l.GetName()+"="+l.GetValue())
		}
		var v float64
		switch {
		case m.Counter != nil:
			v = m.Counter.GetValue()
		case m.Gauge != nil:
			v = m.Gauge.GetValue()
		case m.Histogram != nil:
			v = float64(m.Histogram.GetSampleCount())
		case m.Summary != nil:
			v = float64(m.Summary.GetSampleCount())
		case m.Untyped != nil:
			v = m.Untyped.GetValue()
		}
		out[strings.Join(labels, ",")] = v
	}
	return out
}

// AllSamples is Samples of every family, by family name.
func AllSamples(fams map[string]*dto.MetricFamily) map[string]map[string]float64 {
	out := make(map[string]map[string]float64, len(fams))
	for name, f := range fams {
		out[name] = Samples(f)
	}
	return out
}
