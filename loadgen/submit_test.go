package loadgen

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSubmitOnlyOverInput: --submit-only --input submits each job as a
// user's client does, its maps the splits the client computed from the
// input (empty and hidden files give none), and measures the client's side
// apart from SubmitJob.
func TestSubmitOnlyOverInput(t *testing.T) {
	in := t.TempDir()
	for name, size := range map[string]int{"a.txt": 10000, "b.txt": 2500, "empty.txt": 0, "_hidden": 5000} {
		if err := os.WriteFile(filepath.Join(in, name), bytes.Repeat([]byte("word\n"), size/5), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	jobs, err := Fixed{Jobs: 2, Maps: 1, Reduces: 2, MapTime: time.Second, ReduceTime: time.Second, Seed: 1}.Generate()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := Run(ctx, Config{
		MapSlots: 1, Heartbeat: time.Second, SubmitOnly: true, Input: in, SplitBytes: 1000,
		Policy: "fifo", Jobs: jobs, OutputDir: t.TempDir(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Submissions) != 2 {
		t.Fatalf("%d submissions, want 2", len(res.Submissions))
	}
	for _, s := range res.Submissions {
		// a.txt: 10 splits of 1,000 bytes; b.txt: 1,000, 1,000 and 500.
		if s.Maps != 13 || s.Input != in || s.PrepareMs <= 0 || s.RequestBytes <= 0 || s.SubmitMs <= 0 || s.Job == "" {
			t.Errorf("submission %+v: want 13 maps over %s, the client's time, the request's size and the call's time", s, in)
		}
	}

	// Refused: --input without --submit-only.
	_, err = Run(ctx, Config{Trackers: 1, MapSlots: 1, Heartbeat: time.Second, Duration: time.Second, Input: in, Jobs: jobs})
	if err == nil || !strings.Contains(err.Error(), "--input") {
		t.Errorf("--input without --submit-only: error %v, want one naming --input", err)
	}
}
