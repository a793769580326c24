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
// clone dumps, arrival order within a class, a running operation never
// overtaken, up to max running at once (0 counts as 1); and the expected
// wait of a new operation of each class, divided by max.
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
		max  int
		ops  []op // added in this order at t0; the first max run at once
		// at is when wait is asked (t0 + at); waits is the expected wait
		// of a new deadline's dump, preemption dump, restore and clone
		// dump then.
		at    time.Duration
		waits [4]time.Duration
		order []string // the order they run in
	}{
		{"idle", 0, nil, 0, [4]time.Duration{}, nil},
		{"one running, half done", 0, []op{{"c1", crCloneDump, ms(200)}}, ms(100),
			[4]time.Duration{ms(100), ms(100), ms(100), ms(100)}, []string{"c1"}},
		{"running overran its estimate", 0, []op{{"r1", crRestore, ms(200)}}, ms(500),
			[4]time.Duration{0, 0, 0, 0}, []string{"r1"}},
		{"FIFO within a class", 0, []op{{"p1", crPreemptDump, ms(100)}, {"p2", crPreemptDump, ms(100)}, {"p3", crPreemptDump, ms(100)}}, 0,
			[4]time.Duration{ms(100), ms(300), ms(300), ms(300)}, []string{"p1", "p2", "p3"}},
		{"a preemption dump overtakes waiting clone dumps and restores, not the running one", 0,
			[]op{{"c1", crCloneDump, ms(100)}, {"c2", crCloneDump, ms(100)}, {"r1", crRestore, ms(50)}, {"p1", crPreemptDump, ms(10)}}, 0,
			[4]time.Duration{ms(100), ms(110), ms(160), ms(260)}, []string{"c1", "p1", "r1", "c2"}},
		{"restores keep their order behind dumps", 0,
			[]op{{"p1", crPreemptDump, ms(100)}, {"r1", crRestore, ms(20)}, {"c1", crCloneDump, ms(30)}, {"r2", crRestore, ms(20)}, {"p2", crPreemptDump, ms(40)}}, ms(50),
			[4]time.Duration{ms(50), ms(90), ms(130), ms(160)}, []string{"p1", "p2", "r1", "r2", "c1"}},
		{"two at once: both run", 2, []op{{"p1", crPreemptDump, ms(100)}, {"c1", crCloneDump, ms(300)}}, ms(50),
			[4]time.Duration{ms(150), ms(150), ms(150), ms(150)}, []string{"p1", "c1"}},
		{"two at once: one running, a new one starts at once", 2, []op{{"c1", crCloneDump, ms(300)}}, 0,
			[4]time.Duration{}, []string{"c1"}},
		{"two at once: a preemption dump overtakes a waiting restore, not the two running", 2,
			[]op{{"c1", crCloneDump, ms(200)}, {"c2", crCloneDump, ms(200)}, {"r1", crRestore, ms(100)}, {"p1", crPreemptDump, ms(40)}}, ms(100),
			[4]time.Duration{ms(100), ms(120), ms(170), ms(170)}, []string{"c1", "c2", "p1", "r1"}},
		{"two at once: a running one that overran counts as ending now", 2,
			[]op{{"p1", crPreemptDump, ms(100)}, {"p2", crPreemptDump, ms(500)}, {"p3", crPreemptDump, ms(100)}}, ms(300),
			[4]time.Duration{ms(100), ms(150), ms(150), ms(150)}, []string{"p1", "p2", "p3"}},
		{"three at once", 3, []op{{"p1", crPreemptDump, ms(90)}, {"p2", crPreemptDump, ms(90)}, {"p3", crPreemptDump, ms(90)}, {"r1", crRestore, ms(30)}}, 0,
			[4]time.Duration{ms(90), ms(90), ms(100), ms(100)}, []string{"p1", "p2", "p3", "r1"}},
		{"a deadline's dump overtakes waiting preemption dumps, not the running one", 0,
			[]op{{"p1", crPreemptDump, ms(100)}, {"p2", crPreemptDump, ms(100)}, {"d1", crDeadlineDump, ms(50)}, {"r1", crRestore, ms(20)}}, 0,
			[4]time.Duration{ms(150), ms(250), ms(270), ms(270)}, []string{"p1", "d1", "p2", "r1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := crOrder{max: tc.max}
			names := map[*crTicket]string{}
			for i, x := range tc.ops {
				tk := &crTicket{class: x.class, est: x.est}
				names[tk] = x.name
				if now := o.add(tk, t0); now != (i < max(tc.max, 1)) {
					t.Fatalf("add %s: runs at once = %v, want %v", x.name, now, i < max(tc.max, 1))
				}
			}
			if o.len() != len(tc.ops) {
				t.Errorf("len = %d, want %d", o.len(), len(tc.ops))
			}
			for c := crDeadlineDump; c <= crCloneDump; c++ {
				if got := o.wait(c, t0.Add(tc.at)); got != tc.waits[c] {
					t.Errorf("wait of a new %s = %v, want %v", c, got, tc.waits[c])
				}
			}
			// The order they start in, the running ones ending first
			// come first.
			var ran []string
			for _, r := range o.running {
				ran = append(ran, names[r])
			}
			for len(o.running) > 0 {
				if len(o.running) > max(tc.max, 1) {
					t.Fatalf("%d running, at most %d allowed", len(o.running), max(tc.max, 1))
				}
				if next := o.finish(o.running[0], t0); next != nil {
					ran = append(ran, names[next])
				}
			}
			if !slices.Equal(ran, tc.order) {
				t.Errorf("ran %v, want %v", ran, tc.order)
			}
			if o.len() != 0 || len(o.running) != 0 {
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
	if next := o.finish(c, now); next != nil || len(o.running) != 1 || o.running[0] != a {
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
	q := newCRQueue(1)
	p := newQueueProbe(t, q)
	start, release := p.start, p.release
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
	p.wg.Wait()
	ran := p.order()
	if m := p.most.Load(); m != 1 {
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

// A queue of two runs two operations at once and no more; the third and
// fourth wait and then run in the queue's order, and a new restore's
// expected wait is the work ahead of it divided by two.
func TestCRQueueRunsTwoAtATime(t *testing.T) {
	q := newCRQueue(2)
	p := newQueueProbe(t, q)
	start, release := p.start, p.release
	waitFor := func(what string, ok func() bool) {
		deadline := time.Now().Add(5 * time.Second)
		for !ok() {
			if time.Now().After(deadline) {
				t.Fatalf("never: %s", what)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	start(crCloneDump)
	start(crRestore)
	waitFor("two running", func() bool { return p.running.Load() == 2 })
	start(crCloneDump)
	waitFor("three queued", func() bool { ops, _ := q.stats(); return ops == 3 })
	start(crPreemptDump)
	waitFor("four queued", func() bool { ops, _ := q.stats(); return ops == 4 })
	// A new restore: at most 2 x 100 ms left of the running ones and the
	// preemption dump's 100 ms, over two.
	if _, wait := q.stats(); wait <= 50 || wait > 150 {
		t.Errorf("expected wait of a new restore %d ms, want in (50, 150]", wait)
	}
	if q.limit() != 2 {
		t.Errorf("limit %d, want 2", q.limit())
	}
	// One ends: the preemption dump starts, then the other clone dump.
	release <- struct{}{}
	waitFor("a third running", func() bool { return len(p.order()) == 3 })
	close(release)
	p.wg.Wait()
	ran := p.order()
	if m := p.most.Load(); m != 2 {
		t.Errorf("%d operations ran at once, want 2", m)
	}
	if want := []crClass{crPreemptDump, crCloneDump}; len(ran) != 4 || !slices.Equal(ran[2:], want) {
		t.Errorf("ran %v, want the first two, then %v", ran, want)
	}
}

// queueProbe runs operations through a crQueue that block until release
// gets a value (or is closed), recording the order they ran in, how many
// run at once and the most that did.
type queueProbe struct {
	t             *testing.T
	q             *crQueue
	release       chan struct{}
	running, most atomic.Int32
	mu            sync.Mutex
	ran           []crClass
	wg            sync.WaitGroup
}

func newQueueProbe(t *testing.T, q *crQueue) *queueProbe {
	return &queueProbe{t: t, q: q, release: make(chan struct{})}
}

// start queues an operation of class c (expected to take 100 ms).
func (p *queueProbe) start(c crClass) {
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		err := p.q.run(context.Background(), c, 100*time.Millisecond, func() error {
			n := p.running.Add(1)
			for {
				m := p.most.Load()
				if n <= m || p.most.CompareAndSwap(m, n) {
					break
				}
			}
			p.mu.Lock()
			p.ran = append(p.ran, c)
			p.mu.Unlock()
			<-p.release
			p.running.Add(-1)
			return nil
		})
		if err != nil {
			p.t.Error(err)
		}
	}()
}

// order is the classes of the operations that started, in order.
func (p *queueProbe) order() []crClass {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.ran)
}
