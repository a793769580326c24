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

// DefaultTraceLength is how long the execution trace of a profiled run
// lasts unless Config.JobTrackerTraceLength says otherwise (a trace of
// 10,000 trackers is about a megabyte a second); it is taken from the
// measured window's middle unless Config.JobTrackerTraceAt says when.
const DefaultTraceLength = 5 * time.Second

// traceStart is when the execution trace of a run whose trackers started
// at t0 and whose measured window is [winStart, winEnd) begins: at
// t0 + at, or with at negative in the window's middle (length of it).
func traceStart(t0, winStart, winEnd time.Time, at, length time.Duration) time.Time {
	if at >= 0 {
		return t0.Add(at)
	}
	return winStart.Add(max(winEnd.Sub(winStart)-length, 0) / 2)
}

// profileWindow fetches profiles of a spawned JobTracker (its --pprof
// server) over the window from now to winEnd, into dir: cpu.pprof,
// mutex.pprof, block.pprof and allocs.pprof (the window's delta of each)
// and heap.pprof (the heap at winEnd), and starts fetchTrace's trace at traceAt (up to its length, and not
// past winEnd). The returned channel gets nil, or the first error, once
// every fetch ended.
func (jt *jobTracker) profileWindow(ctx context.Context, dir string, winEnd time.Time) <-chan error {
	secs := max(int(time.Until(winEnd).Seconds()), 1)
	return jt.fetchProfiles(ctx, dir, []profileFetch{
		{"cpu.pprof", fmt.Sprintf("/debug/pprof/profile?seconds=%d", secs), time.Time{}},
		{"mutex.pprof", fmt.Sprintf("/debug/pprof/mutex?seconds=%d", secs), time.Time{}},
		{"block.pprof", fmt.Sprintf("/debug/pprof/block?seconds=%d", secs), time.Time{}},
		{"allocs.pprof", fmt.Sprintf("/debug/pprof/allocs?seconds=%d", secs), time.Time{}},
		// What the heap holds at the window's end (as of the last
		// collection: no collection is forced).
		{"heap.pprof", "/debug/pprof/heap", winEnd},
	})
}

// fetchTrace fetches an execution trace of a spawned JobTracker into
// dir/trace.out, from at for length, cut at end (the run's).
func (jt *jobTracker) fetchTrace(ctx context.Context, dir string, at, end time.Time, length time.Duration) <-chan error {
	secs := max(int(min(length, end.Sub(at)).Seconds()), 1)
	return jt.fetchProfiles(ctx, dir, []profileFetch{
		{"trace.out", fmt.Sprintf("/debug/pprof/trace?seconds=%d", secs), at},
	})
}

// profileFetch is a profile to fetch from a JobTracker's --pprof server:
// its file, its URL's path, and when to ask (zero: at once).
type profileFetch struct {
	file, path string
	at         time.Time
}

// fetchProfiles fetches the profiles into dir, each at its time; the
// returned channel gets nil, or the errors, once every fetch ended.
func (jt *jobTracker) fetchProfiles(ctx context.Context, dir string, fetches []profileFetch) <-chan error {
	done := make(chan error, 1)
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
			case <-time.After(time.Until(f.at)):
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
