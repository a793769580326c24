package jobtracker

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// BenchmarkPagesAtScale is what a page or a JSON list costs the
// JobTracker with 10,000 trackers of 2 + 2 slots busy with 1,000 jobs of
// 40 maps and 2 reduces (BenchmarkClientCallsUnderLoad's rig, no
// heartbeat running): the request served into a recorder, rendering
// included (ns, bytes and allocations a request; body-bytes its size). It
// asks only paths, so that it runs on a build from before the paging too
// (which ignores the parameters; a page it does not have is skipped).
//
//	go test -run '^$' -bench PagesAtScale -benchtime 20x ./jobtracker/
func BenchmarkPagesAtScale(b *testing.B) {
	r := newClientCallsRig(b)
	defer r.close()
	h := r.jt.HTTPHandler()
	for _, path := range []string{"/", "/trackers", "/trackers?page=100", "/trackers?state=graylisted", "/trackers?sort=heartbeat",
		"/jobs", "/jobs?state=running&sort=name", "/api/cluster", "/api/cluster?size=50", "/api/jobs", "/api/jobs?size=50", "/metrics"} {
		b.Run(strings.NewReplacer("/", "_", "?", ":").Replace(path), func(b *testing.B) {
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
				if rec.Code == http.StatusNotFound {
					b.Skipf("%s: not on this build", path)
				}
				if rec.Code != http.StatusOK {
					b.Fatalf("%s: status %d: %s", path, rec.Code, rec.Body)
				}
				n = rec.Body.Len()
			}
			b.ReportMetric(float64(n), "body-bytes")
		})
	}
}
