package loadgen

// Polling the JobTracker's pages during a run (Config.PollUI): issue 17's
// "web UI and /api response times with 10,000 trackers and 1,000 jobs".
// Each page and client call below is asked by its own goroutine every
// PollUI through the measured window, as users with a browser open and
// scripts polling the API would; each one's response time (the whole body
// read) is reported, and the heartbeats' latency beside it says what the
// polling costs the trackers.

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"gomr/mrpb"
)

// PollResult is one polled page or call: its response times in the
// window and the failed requests.
type PollResult struct {
	Name    string `json:"name"`
	Latency Dist   `json:"latency"`
	Errors  int64  `json:"errors"`
}

// pollTarget is a page or a call to poll.
type pollTarget struct {
	name string
	get  func(ctx context.Context) error
}

// pollTargets are the pages and calls polled: the web UI's cluster,
// trackers, one tracker's and one job's pages, the /api bodies, /metrics,
// and the client calls behind mr job -list, -status and
// -list-active-trackers.
func (g *generator) pollTargets(client mrpb.JobTrackerClient) []pollTarget {
	job := func() string {
		g.mu.Lock()
		defer g.mu.Unlock()
		for _, js := range g.byName {
			if js != nil {
				return js.id
			}
		}
		return ""
	}
	page := func(path string, query func() string) pollTarget {
		return pollTarget{name: "GET " + path, get: func(ctx context.Context) error {
			p := path
			if query != nil {
				p += "?" + query()
			}
			return g.getPage(ctx, p)
		}}
	}
	jobQuery := func() string { return "id=" + url.QueryEscape(job()) }
	return []pollTarget{
		page("/", nil),
		page("/trackers", nil),
		page("/tracker", func() string { return "name=" + url.QueryEscape(trackerName(0)) }),
		page("/job", jobQuery),
		page("/api/cluster", nil),
		page("/api/cluster/occupancy", nil),
		page("/api/jobs", nil),
		page("/api/job", jobQuery),
		page("/metrics", nil),
		{name: "rpc ListJobs", get: func(ctx context.Context) error {
			_, err := client.ListJobs(ctx, &mrpb.ListJobsRequest{})
			return err
		}},
		{name: "rpc GetJobStatus", get: func(ctx context.Context) error {
			_, err := client.GetJobStatus(ctx, &mrpb.JobStatusRequest{JobId: job()})
			return err
		}},
		{name: "rpc ListTrackers", get: func(ctx context.Context) error {
			_, err := client.ListTrackers(ctx, &mrpb.ListTrackersRequest{})
			return err
		}},
	}
}

// getPage reads one page of the JobTracker's HTTP server to its end.
func (g *generator) getPage(ctx context.Context, path string) error {
	if h := g.jt.handler; h != nil {
		rec := &memResponse{header: http.Header{}}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, path, nil)
		if err != nil {
			return err
		}
		h.ServeHTTP(rec, req)
		if rec.code != 0 && rec.code != http.StatusOK {
			return fmt.Errorf("GET %s: status %d", path, rec.code)
		}
		return nil
	}
	if g.jt.url == "" {
		return fmt.Errorf("no address for the JobTracker's HTTP pages (--jobtracker-http)")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(g.jt.url, "/metrics")+path, nil)
	if err != nil {
		return err
	}
	resp, err := g.pollClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	return nil
}

// pollUI polls every target every `every` until ctx ends, recording the
// requests sent in the window; it returns once the pollers have stopped.
func (g *generator) pollUI(ctx context.Context, client mrpb.JobTrackerClient, every time.Duration) []PollResult {
	targets := g.pollTargets(client)
	lat := make([]samples, len(targets))
	errs := make([]atomic.Int64, len(targets))
	var wg sync.WaitGroup
	for i, t := range targets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Spread the targets' requests over the interval.
			next := time.Now().Add(time.Duration(i) * every / time.Duration(len(targets)))
			for {
				select {
				case <-ctx.Done():
					return
				case <-time.After(time.Until(next)):
				}
				next = next.Add(every)
				began := time.Now()
				rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
				err := t.get(rctx)
				cancel()
				if ctx.Err() != nil {
					return
				}
				if !g.inWindow(began) {
					continue
				}
				if err != nil {
					if errs[i].Add(1) <= 3 {
						g.log.Warn("polling the JobTracker", "target", t.name, "error", err)
					}
					continue
				}
				lat[i].add(time.Since(began))
			}
		}()
	}
	wg.Wait()
	out := make([]PollResult, len(targets))
	for i, t := range targets {
		out[i] = PollResult{Name: t.name, Latency: lat[i].dist(), Errors: errs[i].Load()}
	}
	return out
}
