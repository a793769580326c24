package tasktracker

import (
	"bytes"
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"gomr/conf"
)

// TestProbeCRIULogging: a missing CRIU is reported once, at INFO (not as a
// warning: it is the common case), and a probe whose tracker is already
// stopping (a job that failed before it started, in mr local) logs
// nothing, rather than a false "CRIU unavailable ... context canceled".
func TestProbeCRIULogging(t *testing.T) {
	cfg, err := conf.FromMap(map[string]string{"mapreduce.tasktracker.criu.path": filepath.Join(t.TempDir(), "no-criu")})
	if err != nil {
		t.Fatal(err)
	}
	probe := func(ctx context.Context) string {
		var buf bytes.Buffer
		tt := &TaskTracker{cfg: cfg, log: slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))}
		tt.probeCRIU(ctx)
		if tt.cloneable() {
			t.Errorf("a tracker without CRIU says it can clone")
		}
		return buf.String()
	}
	out := probe(context.Background())
	if strings.Count(out, "CRIU unavailable") != 1 || !strings.Contains(out, "level=INFO") || strings.Contains(out, "level=WARN") {
		t.Errorf("missing CRIU: want one INFO line, got:\n%s", out)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if out := probe(ctx); out != "" {
		t.Errorf("probe of a stopping tracker logged:\n%s", out)
	}
}
