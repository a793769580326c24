package tasktracker

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The checkpoint/restore queue runs one operation at a time, reports the
// operations waiting or running and their summed estimates, and gives up
// waiting when the context ends.
func TestCRQueueRunsOneAtATime(t *testing.T) {
	q := newCRQueue()
	release := make(chan struct{})
	var running, most atomic.Int32
	var wg sync.WaitGroup
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := q.run(context.Background(), 100*time.Millisecond, func() error {
				n := running.Add(1)
				for {
					m := most.Load()
					if n <= m || most.CompareAndSwap(m, n) {
						break
					}
				}
				<-release
				running.Add(-1)
				return nil
			})
			if err != nil {
				t.Error(err)
			}
		}()
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		if ops, wait := q.stats(); ops == 3 {
			if wait != 300 {
				t.Errorf("expected wait %d ms with three queued, want 300", wait)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the operations never queued")
		}
		time.Sleep(5 * time.Millisecond)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := q.run(ctx, time.Second, func() error { return errors.New("ran") }); !errors.Is(err, context.Canceled) {
		t.Errorf("run with an ended context while the queue is busy: %v, want context.Canceled", err)
	}
	close(release)
	wg.Wait()
	if m := most.Load(); m != 1 {
		t.Errorf("%d operations ran at once, want 1", m)
	}
	if ops, wait := q.stats(); ops != 0 || wait != 0 {
		t.Errorf("after the operations: %d queued, %d ms wait; want 0, 0", ops, wait)
	}
}

func TestDumpEstimate(t *testing.T) {
	for _, tc := range []struct {
		rss  int64
		want time.Duration
	}{
		{0, crFixedCost},
		{950e6, crFixedCost + time.Second},
	} {
		if got := dumpEstimate(tc.rss); got != tc.want {
			t.Errorf("dumpEstimate(%d) = %v, want %v", tc.rss, got, tc.want)
		}
	}
}
