package promexport

import (
	"bytes"
	"io"
	"log/slog"
	"maps"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// What a registry serves through Handler reads back through Parse and
// AllSamples as the values that were set.
func TestHandlerRoundTrip(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "x_total", Help: "x"}, []string{"a", "b"})
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "y", Help: "y"})
	h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "z_seconds", Help: "z"})
	reg.MustRegister(c, g, h)
	c.WithLabelValues("1", "2").Add(3)
	g.Set(-1.5)
	h.Observe(0.1)
	h.Observe(2)
	rec := httptest.NewRecorder()
	Handler(reg, slog.New(slog.NewTextHandler(io.Discard, nil))).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	fams, err := Parse(rec.Body)
	if err != nil {
		t.Fatal(err)
	}
	got := AllSamples(fams)
	want := map[string]map[string]float64{"x_total": {"a=1,b=2": 3}, "y": {"": -1.5}, "z_seconds": {"": 2}}
	if !maps.EqualFunc(got, want, maps.Equal) {
		t.Errorf("samples %v, want %v", got, want)
	}
}

type failing struct{ d *prometheus.Desc }

func (f failing) Describe(ch chan<- *prometheus.Desc) { ch <- f.d }
func (f failing) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.NewInvalidMetric(f.d, io.ErrUnexpectedEOF)
}

// A collector that fails is logged and the others are still served.
func TestHandlerLogsAFailedCollector(t *testing.T) {
	reg := prometheus.NewRegistry()
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "ok", Help: "ok"})
	reg.MustRegister(g, failing{prometheus.NewDesc("bad", "bad", nil, nil)})
	var logged bytes.Buffer
	rec := httptest.NewRecorder()
	Handler(reg, slog.New(slog.NewTextHandler(&logged, nil))).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if !strings.Contains(rec.Body.String(), "ok 0") {
		t.Errorf("body %q lacks the healthy gauge", rec.Body)
	}
	if !strings.Contains(logged.String(), "metrics scrape") || !strings.Contains(logged.String(), "unexpected EOF") {
		t.Errorf("log %q lacks the scrape error", logged.String())
	}
}

func TestParseNamesTheProblem(t *testing.T) {
	if _, err := Parse(strings.NewReader("x{ 1\n")); err == nil || !strings.Contains(err.Error(), "parsing a metrics exposition") {
		t.Errorf("error %v", err)
	}
}
