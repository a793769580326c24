package replay

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"gomr/conf"
	"gomr/jobtracker"
	"gomr/mrpb"
	"gomr/security"
	"gomr/tasktracker"
)

// Cluster is an embedded cluster: a JobTracker and TaskTrackers running in
// this process on loopback, each task attempt a child process, in a
// private work directory (what `mr local` runs apps on).
type Cluster struct {
	// Addr is the JobTracker's RPC address.
	Addr string
	// Client is connected to the JobTracker.
	Client *jobtracker.Client
	// Work is the work directory; HistoryDir the job history in it.
	Work, HistoryDir string
	// Conf is the configuration the daemons run with.
	Conf *conf.Config
	// UI is the JobTracker's web UI, http://host:port ("" if it has
	// none).
	UI string
	// Trackers is the number of TaskTrackers.
	Trackers int

	cancel context.CancelFunc
	wg     sync.WaitGroup
	keep   bool
}

// StartCluster starts a JobTracker and trackers TaskTrackers on
// 127.0.0.1 with cfg, in a new temporary work directory (kept by Close
// when keep is set, and then named on stderr). Addresses on free ports
// and private directories replace the defaults, not what cfg sets (except
// the JobTracker's address, always a free loopback port). newLog makes
// the daemons' logger from the resulting configuration. It returns once
// every TaskTracker has registered with the JobTracker, or fails after
// TrackersRegisterTimeout.
func StartCluster(ctx context.Context, cfg *conf.Config, trackers int, keep bool, newLog func(*conf.Config) *slog.Logger, stderr io.Writer) (*Cluster, error) {
	if trackers < 1 {
		return nil, fmt.Errorf("embedded cluster: %d trackers: need at least one", trackers)
	}
	if cfg.Bool(security.KeyTLSEnabled) {
		return nil, fmt.Errorf("an embedded cluster (mr local, mr workload) does not use TLS (%s): its daemons and client share one configuration, so one certificate; "+
			"start mr jobtracker and mr tasktracker, each with its own certificate (docs/security.md)", security.KeyTLSEnabled)
	}
	work, err := os.MkdirTemp("", "gomr-local-")
	if err != nil {
		return nil, err
	}
	c := &Cluster{Work: work, HistoryDir: filepath.Join(work, "history"), keep: keep}
	if keep {
		fmt.Fprintln(stderr, "work directory:", work)
	}
	set := map[string]string{
		"mapreduce.jobtracker.address":             "127.0.0.1:0",
		"mapreduce.jobtracker.http.address":        "127.0.0.1:0",
		"mapreduce.tasktracker.http.address":       "127.0.0.1:0",
		"mapreduce.tasktracker.report.address":     "127.0.0.1:0",
		"mapreduce.jobtracker.jobhistory.location": c.HistoryDir,
		"mapreduce.cluster.local.dir":              filepath.Join(work, "local"),
		"mapreduce.tasktracker.host.name":          "localhost",
		"log.level":                                "warn",
	}
	sources := map[string]string{}
	for _, e := range cfg.Entries() {
		sources[e.Key] = e.Source
	}
	over := map[string]string{}
	for k, v := range set {
		if sources[k] == "default" || k == "mapreduce.jobtracker.address" {
			over[k] = v
		}
	}
	if cfg, err = cfg.With(over, "local"); err != nil {
		c.removeWork()
		return nil, err
	}
	if v := cfg.String("mapreduce.jobtracker.jobhistory.location"); v != "" {
		c.HistoryDir = v
	}
	c.Conf = cfg
	log := newLog(cfg)
	ctx, c.cancel = context.WithCancel(ctx)
	// A fresh history every run: the JobTracker's identifier is its start
	// time to the millisecond, so that job ids differ across runs.
	jt, err := jobtracker.New(cfg, jobtracker.Options{Logger: log, Ident: jobtracker.LocalIdent(time.Now())})
	if err != nil {
		c.Close()
		return nil, err
	}
	if c.Addr, err = jt.Listen(""); err != nil {
		c.Close()
		return nil, err
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		if err := jt.Serve(ctx); err != nil {
			log.Error("jobtracker", "error", err)
		}
	}()
	for i := 0; i < trackers; i++ {
		tt, err := tasktracker.New(cfg, tasktracker.Options{Logger: log, Name: fmt.Sprintf("tracker_local_%d", i), JobTracker: c.Addr})
		if err != nil {
			c.Close()
			return nil, err
		}
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			if err := tt.Run(ctx); err != nil {
				log.Error("tasktracker", "error", err)
			}
		}()
	}
	if c.Client, err = jobtracker.Dial(c.Addr, cfg); err != nil {
		c.Close()
		return nil, err
	}
	list := func(ctx context.Context) (int, error) {
		resp, err := jt.ListTrackers(ctx, &mrpb.ListTrackersRequest{})
		if err != nil {
			return 0, err
		}
		return len(resp.Trackers), nil
	}
	if err := waitForTrackers(ctx, list, trackers, TrackersRegisterTimeout, 5*time.Millisecond); err != nil {
		c.Close()
		return nil, fmt.Errorf("embedded cluster: %w", err)
	}
	c.Trackers = trackers
	uiCtx, uiCancel := context.WithTimeout(ctx, 10*time.Second)
	c.UI = jt.HTTPAddress(uiCtx)
	uiCancel()
	return c, nil
}

// TrackersRegisterTimeout is how long StartCluster waits for its
// TaskTrackers to register with its JobTracker (their first heartbeat)
// before it gives up.
const TrackersRegisterTimeout = 30 * time.Second

// waitForTrackers polls live (the number of trackers registered with the
// JobTracker) every poll until it reaches want, and fails after timeout
// saying how many registered. StartCluster returns only then, so that
// whatever the caller times from its return (a replay's clock) starts
// with every tracker registered and heartbeating, not at a race between
// the first submission and the trackers' first heartbeats.
func waitForTrackers(ctx context.Context, live func(context.Context) (int, error), want int, timeout, poll time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	t := time.NewTicker(poll)
	defer t.Stop()
	n := 0
	for {
		var err error
		if n, err = live(ctx); err != nil {
			return fmt.Errorf("waiting for %d TaskTrackers to register: %w", want, err)
		}
		if n >= want {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d of %d TaskTrackers registered with the JobTracker within %v: %w", n, want, timeout, ctx.Err())
		case <-t.C:
		}
	}
}

// Close stops the daemons, waits for them and removes the work directory
// unless it is kept.
func (c *Cluster) Close() {
	if c.Client != nil {
		c.Client.Close()
		c.Client = nil
	}
	if c.cancel != nil {
		c.cancel()
	}
	c.wg.Wait()
	if !c.keep {
		c.removeWork()
	}
}

func (c *Cluster) removeWork() { _ = os.RemoveAll(c.Work) }
