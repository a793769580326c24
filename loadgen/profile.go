package loadgen

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

// traceLength is how long the execution trace of a profiled window lasts
// (a trace of 10,000 trackers is tens of megabytes a second); it is taken
// from the window's middle.
const traceLength = 5 * time.Second

// profileWindow fetches profiles of a spawned JobTracker (its --pprof
// server) over the next window, into dir: cpu.pprof, mutex.pprof,
// block.pprof and allocs.pprof (the window's delta of each) and trace.out
// (traceLength from the window's middle). The returned channel gets nil,
// or the first error, once every fetch ended.
func (jt *jobTracker) profileWindow(ctx context.Context, dir string, window time.Duration) <-chan error {
	done := make(chan error, 1)
	secs := max(int(window.Seconds()), 1)
	fetches := []struct {
		file, path string
		after      time.Duration
	}{
		{"cpu.pprof", fmt.Sprintf("/debug/pprof/profile?seconds=%d", secs), 0},
		{"mutex.pprof", fmt.Sprintf("/debug/pprof/mutex?seconds=%d", secs), 0},
		{"block.pprof", fmt.Sprintf("/debug/pprof/block?seconds=%d", secs), 0},
		{"allocs.pprof", fmt.Sprintf("/debug/pprof/allocs?seconds=%d", secs), 0},
		{"trace.out", fmt.Sprintf("/debug/pprof/trace?seconds=%d", max(int(min(traceLength, window).Seconds()), 1)),
			max(window-traceLength, 0) / 2},
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		done <- fmt.Errorf("loadgen: profiles: %w", err)
		return done
	}
	errs := make(chan error, len(fetches))
	for _, f := range fetches {
		go func() {
			select {
			case <-ctx.Done():
				errs <- ctx.Err()
				return
			case <-time.After(f.after):
			}
			errs <- fetchProfile(ctx, "http://"+jt.pprof+f.path, filepath.Join(dir, f.file))
		}()
	}
	go func() {
		var all []error
		for range fetches {
			all = append(all, <-errs)
		}
		done <- errors.Join(all...)
	}()
	return done
}

// fetchProfile writes what url answers to file.
func fetchProfile(ctx context.Context, url, file string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("loadgen: profile %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("loadgen: profile %s: %s: %s", url, resp.Status, msg)
	}
	f, err := os.Create(file)
	if err != nil {
		return fmt.Errorf("loadgen: profile: %w", err)
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return fmt.Errorf("loadgen: profile %s: %w", url, err)
	}
	return f.Close()
}
