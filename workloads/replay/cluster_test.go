package replay

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"gomr/conf"
)

// TestWaitForTrackers checks the wait for the trackers' registration:
// it returns once the count reaches the number wanted, and otherwise
// fails after the timeout saying how many registered, or with the
// listing's error.
func TestWaitForTrackers(t *testing.T) {
	listErr := errors.New("connection refused")
	for _, tc := range []struct {
		name   string
		counts []int // successive answers; the last one repeats
		err    error
		want   int
		fail   string
	}{
		{"already registered", []int{2}, nil, 2, ""},
		{"registers after a few polls", []int{0, 0, 1, 1, 2}, nil, 2, ""},
		{"more than wanted", []int{3}, nil, 2, ""},
		{"one never registers", []int{0, 1}, nil, 2, "1 of 2 TaskTrackers registered with the JobTracker within 50ms"},
		{"listing fails", []int{0}, listErr, 2, "waiting for 2 TaskTrackers to register: connection refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := 0
			live := func(context.Context) (int, error) {
				n := tc.counts[min(k, len(tc.counts)-1)]
				k++
				return n, tc.err
			}
			err := waitForTrackers(context.Background(), live, tc.want, 50*time.Millisecond, time.Millisecond)
			switch {
			case tc.fail == "" && err != nil:
				t.Fatalf("got %v, want nil", err)
			case tc.fail != "" && (err == nil || !strings.Contains(err.Error(), tc.fail)):
				t.Fatalf("got %v, want an error containing %q", err, tc.fail)
			}
		})
	}
}

// TestStartClusterWaitsForTrackers starts an embedded cluster and checks
// that every tracker is registered when StartCluster returns: a replay's
// clock starts then, so its first job no longer races the trackers'
// first heartbeats.
func TestStartClusterWaitsForTrackers(t *testing.T) {
	cfg, err := conf.Load(conf.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{1, 3} {
		cl, err := StartCluster(context.Background(), cfg, n, false, func(*conf.Config) *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		ts, err := cl.Client.Trackers(context.Background())
		cl.Close()
		if err != nil {
			t.Fatal(err)
		}
		if len(ts) != n {
			t.Errorf("%d trackers registered when StartCluster returned, want %d", len(ts), n)
		}
	}
}
