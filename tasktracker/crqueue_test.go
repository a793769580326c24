package tasktracker

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The queue's order (spec §5.6): preemption dumps before restores before
// clone dumps, arrival order within a class, the running operation never
// overtaken; and the expected wait of a new operation of each class.
func TestCROrder(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	type op struct {
		name  string
		class crClass
		est   time.Duration
	}
	for _, tc := range []struct {
		name string
		ops  []op // added in this order at t0; the first runs at once
		// at is when wait is asked (t0 + at); waits is the expected wait
		// of a new preemption dump, restore and clone dump then.
		at    time.Duration
		waits [3]time.Duration
		order []string // the order they run in
	}{
		{"idle", nil, 0, [3]time.Duration{}, nil},
		{"one running, half done", []op{{"c1", crCloneDump, ms(200)}}, ms(100),
			[3]time.Duration{ms(100), ms(100), ms(100)}, []string{"c1"}},
		{"running overran its estimate", []op{{"r1", crRestore, ms(200)}}, ms(500),
			[3]time.Duration{0, 0, 0}, []string{"r1"}},
		{"FIFO within a class", []op{{"p1", crPreemptDump, ms(100)}, {"p2", crPreemptDump, ms(100)}, {"p3", crPreemptDump, ms(100)}}, 0,
			[3]time.Duration{ms(300), ms(300), ms(300)}, []string{"p1", "p2", "p3"}},
		{"a preemption dump overtakes waiting clone dumps and restores, not the running one",
			[]op{{"c1", crCloneDump, ms(100)}, {"c2", crCloneDump, ms(100)}, {"r1", crRestore, ms(50)}, {"p1", crPreemptDump, ms(10)}}, 0,
			[3]time.Duration{ms(110), ms(160), ms(260)}, []string{"c1", "p1", "r1", "c2"}},
		{"restores keep their order behind dumps",
			[]op{{"p1", crPreemptDump, ms(100)}, {"r1", crRestore, ms(20)}, {"c1", crCloneDump, ms(30)}, {"r2", crRestore, ms(20)}, {"p2", crPreemptDump, ms(40)}}, ms(50),
			[3]time.Duration{ms(90), ms(130), ms(160)}, []string{"p1", "p2", "r1", "r2", "c1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var o crOrder
			names := map[*crTicket]string{}
			for i, x := range tc.ops {
				tk := &crTicket{class: x.class, est: x.est}
				names[tk] = x.name
				if now := o.add(tk, t0); now != (i == 0) {
					t.Fatalf("add %s: runs at once = %v, want %v", x.name, now, i == 0)
				}
			}
			if o.len() != len(tc.ops) {
				t.Errorf("len = %d, want %d", o.len(), len(tc.ops))
			}
			for c := crPreemptDump; c <= crCloneDump; c++ {
				if got := o.wait(c, t0.Add(tc.at)); got != tc.waits[c] {
					t.Errorf("wait of a new %s = %v, want %v", c, got, tc.waits[c])
				}
			}
			var ran []string
			for cur := o.running; cur != nil; cur = o.finish(cur, t0) {
				ran = append(ran, names[cur])
			}
			if !slices.Equal(ran, tc.order) {
				t.Errorf("ran %v, want %v", ran, tc.order)
			}
			if o.len() != 0 || o.running != nil {
				t.Errorf("after all: %d left", o.len())
			}
		})
	}
}

// An abandoned operation leaves the queue; finishing an operation that is
// not the running one changes nothing.
func TestCROrderAbandon(t *testing.T) {
	var o crOrder
	now := time.Unix(0, 0)
	a, b, c := &crTicket{class: crCloneDump}, &crTicket{class: crRestore}, &crTicket{class: crCloneDump}
	o.add(a, now)
	o.add(b, now)
	o.add(c, now)
	if !o.abandon(b) || o.abandon(b) || o.abandon(a) {
		t.Fatal("abandon: a waiting ticket leaves once; the running one cannot")
	}
	if next := o.finish(c, now); next != nil || o.running != a {
		t.Fatal("finishing a waiting ticket changed the queue")
	}
	if next := o.finish(a, now); next != c {
		t.Fatalf("after a: %v, want c", next)
	}
}

// The queue runs one operation at a time, a preemption dump queued behind
// a clone dump runs before it, it reports the operations waiting or
// running and the wait of a new restore, and a caller gives up waiting
// when its context ends.
func TestCRQueueRunsOneAtATime(t *testing.T) {
	q := newCRQueue()
	release := make(chan struct{})
	var running, most atomic.Int32
	var mu sync.Mutex
	var ran []crClass
	var wg sync.WaitGroup
	start := func(c crClass) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := q.run(context.Background(), c, 100*time.Millisecond, func() error {
				n := running.Add(1)
				for {
					m := most.Load()
					if n <= m || most.CompareAndSwap(m, n) {
						break
					}
				}
				mu.Lock()
				ran = append(ran, c)
				mu.Unlock()
				<-release
				running.Add(-1)
				return nil
			})
			if err != nil {
				t.Error(err)
			}
		}()
	}
	waitOps := func(n int32) {
		deadline := time.Now().Add(5 * time.Second)
		for {
			if ops, _ := q.stats(); ops == n {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("the operations never queued (want %d)", n)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	start(crRestore) // runs first
	waitOps(1)
	start(crCloneDump)
	waitOps(2)
	start(crPreemptDump)
	waitOps(3)
	// A new restore waits for the running one (at most 100 ms left) and
	// the preemption dump, not the clone dump.
	if _, wait := q.stats(); wait <= 100 || wait > 200 {
		t.Errorf("expected wait of a new restore %d ms, want in (100, 200]", wait)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := q.run(ctx, crPreemptDump, time.Second, func() error { return errors.New("ran") }); !errors.Is(err, context.Canceled) {
		t.Errorf("run with an ended context while the queue is busy: %v, want context.Canceled", err)
	}
	close(release)
	wg.Wait()
	if m := most.Load(); m != 1 {
		t.Errorf("%d operations ran at once, want 1", m)
	}
	if want := []crClass{crRestore, crPreemptDump, crCloneDump}; !slices.Equal(ran, want) {
		t.Errorf("ran %v, want %v", ran, want)
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
