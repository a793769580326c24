package preempt

import (
	"testing"
	"time"
)

const GiB = 1 << 30

func sec(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

func medium(mibps float64) Model {
	return Model{BWWrite: mibps * MiB, BWRead: mibps * MiB, BWNet: 112 * MiB}
}

// TestAdaptiveAlg1 is the spec's §5.14 Alg. 1 table, from the numbers
// derived out of [002] (§1.6).
func TestAdaptiveAlg1(t *testing.T) {
	for _, tc := range []struct {
		name     string
		c        Candidate
		m        Model
		queue    time.Duration
		want     Mechanism
		overhead time.Duration // 0: not checked
	}{
		{"5GiB HDD 30s progress: kill (threshold 341s)", Candidate{RSSBytes: 5 * GiB, Progressed: sec(30), CanCheckpoint: true}, medium(30), 0, MechKill, sec(2 * 5120.0 / 30)},
		{"5GiB NVM 30s progress: checkpoint (threshold 5.85s)", Candidate{RSSBytes: 5 * GiB, Progressed: sec(30), CanCheckpoint: true}, medium(1750), 0, MechCkpt, sec(2 * 5120.0 / 1750)},
		{"1843MiB SSD 31s: kill (threshold 31.5s)", Candidate{RSSBytes: 1843 * MiB, Progressed: sec(31), CanCheckpoint: true}, medium(117.08), 0, MechKill, 0},
		{"1843MiB SSD 32s: checkpoint", Candidate{RSSBytes: 1843 * MiB, Progressed: sec(32), CanCheckpoint: true}, medium(117.08), 0, MechCkpt, 0},
		{"progress equal to overhead: kill", Candidate{RSSBytes: 100 * MiB, Progressed: sec(2), CanCheckpoint: true}, medium(100), 0, MechKill, sec(2)},
		{"just above the overhead: checkpoint", Candidate{RSSBytes: 100 * MiB, Progressed: sec(2) + time.Millisecond, CanCheckpoint: true}, medium(100), 0, MechCkpt, 0},
		{"queue raises the threshold: 3s > 2s+0.5s", Candidate{RSSBytes: 100 * MiB, Progressed: sec(3), CanCheckpoint: true}, medium(100), sec(0.5), MechCkpt, sec(2.5)},
		{"queue raises the threshold: 3s = 2s+1s, kill", Candidate{RSSBytes: 100 * MiB, Progressed: sec(3), CanCheckpoint: true}, medium(100), sec(1), MechKill, sec(3)},
		{"an image: incremental dump of the dirty bytes", Candidate{RSSBytes: 100 * MiB, DirtyBytes: 10 * MiB, HasImage: true, Progressed: sec(1.5), CanCheckpoint: true}, medium(100), 0, MechCkptInc, sec(1.1)},
		{"an image, dirty unknown: incremental of the whole", Candidate{RSSBytes: 100 * MiB, HasImage: true, Progressed: sec(3), CanCheckpoint: true}, medium(100), 0, MechCkptInc, sec(2)},
		{"no CRIU on the node: kill", Candidate{RSSBytes: 100 * MiB, Progressed: sec(300)}, medium(100), 0, MechKill, 0},
		{"sensitivity: 5GiB at 30s, 340 MiB/s: kill", Candidate{RSSBytes: 5 * GiB, Progressed: sec(30), CanCheckpoint: true}, medium(340), 0, MechKill, 0},
		{"sensitivity: 5GiB at 30s, 342 MiB/s: checkpoint", Candidate{RSSBytes: 5 * GiB, Progressed: sec(30), CanCheckpoint: true}, medium(342), 0, MechCkpt, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Adaptive(tc.c, tc.m, tc.queue); got != tc.want {
				t.Errorf("Adaptive = %v, want %v (overhead %v)", got, tc.want, Overhead(tc.c, tc.m, tc.queue))
			}
			if tc.overhead != 0 {
				if got := Overhead(tc.c, tc.m, tc.queue); (got - tc.overhead).Abs() > time.Millisecond {
					t.Errorf("Overhead = %v, want %v", got, tc.overhead)
				}
			}
		})
	}
}

// TestResumeAlg2 is the spec's §5.14 Alg. 2 table.
func TestResumeAlg2(t *testing.T) {
	m := Model{BWWrite: 100 * MiB, BWRead: 100 * MiB, BWNet: 50 * MiB}
	for _, tc := range []struct {
		name            string
		bytes           int64
		image           bool
		qLocal, qRemote time.Duration
		want            Where
	}{
		{"no image: restart", 100 * MiB, false, 0, 0, Restart},
		{"idle queues: local (1s <= 3s)", 100 * MiB, true, 0, 0, Local},
		{"home queue 1.5s: still local (2.5s <= 3s)", 100 * MiB, true, sec(1.5), 0, Local},
		{"tie: local (3s = 3s)", 100 * MiB, true, sec(2), 0, Local},
		{"busy home queue flips to remote", 100 * MiB, true, sec(10), 0, Remote},
		{"busy remote queue keeps local", 100 * MiB, true, sec(10), sec(9), Local},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Resume(tc.bytes, tc.image, m, tc.qLocal, tc.qRemote); got != tc.want {
				t.Errorf("Resume = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestModelTimes(t *testing.T) {
	m := Model{BWWrite: 100 * MiB, BWRead: 200 * MiB, BWNet: 50 * MiB}
	for _, tc := range []struct {
		name string
		got  time.Duration
		want time.Duration
	}{
		{"dump", m.Dump(100 * MiB), sec(1)},
		{"restore", m.Restore(100 * MiB), sec(0.5)},
		{"transfer", m.Transfer(100 * MiB), sec(2)},
		{"nothing", m.Dump(0), 0},
		{"no bandwidth", Model{}.Dump(1), time.Duration(1<<63 - 1)},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, tc.got, tc.want)
		}
	}
}

func TestMechanismString(t *testing.T) {
	want := []string{"wait", "split", "checkpoint", "checkpoint-incremental", "kill"}
	for i, w := range want {
		if got := Mechanism(i).String(); got != w {
			t.Errorf("Mechanism(%d) = %q, want %q", i, got, w)
		}
	}
}

// TestLearner checks the damped bandwidth estimate: the prior until a
// measurement, then (1-w)·bw + w·measured, per node and operation; small
// samples and bad measurements change nothing.
func TestLearner(t *testing.T) {
	prior := Model{BWWrite: 100 * MiB, BWRead: 100 * MiB, BWNet: 100 * MiB}
	l := NewLearner(prior, 0.5, MiB)
	if err := l.Observe("a", OpDump, 200*MiB, sec(1)); err != nil {
		t.Fatal(err)
	}
	if got := l.Model("a").BWWrite / MiB; got != 150 {
		t.Errorf("after one 200 MiB/s dump: %v MiB/s, want 150", got)
	}
	if err := l.Observe("a", OpDump, 200*MiB, sec(1)); err != nil {
		t.Fatal(err)
	}
	if got := l.Model("a").BWWrite / MiB; got != 175 {
		t.Errorf("after two: %v MiB/s, want 175", got)
	}
	if l.Model("b") != prior || l.Model("a").BWRead != prior.BWRead {
		t.Errorf("other node or operation moved: %+v %+v", l.Model("b"), l.Model("a"))
	}
	if err := l.Observe("a", OpRestore, 1000, sec(1)); err != nil || l.Model("a").BWRead != prior.BWRead {
		t.Errorf("a sample below the minimum was used (err %v)", err)
	}
	if err := l.Observe("a", OpTransfer, MiB, 0); err == nil {
		t.Error("a zero time was accepted")
	}
	if l.Samples() != 2 {
		t.Errorf("samples %d, want 2", l.Samples())
	}
}

// TestQueue checks the per-node sequential queue: waits add up, an early
// end lets the next start at once, an abandoned one shortens the wait.
func TestQueue(t *testing.T) {
	t0 := time.Unix(0, 0)
	q := NewQueue()
	if w := q.Wait("n", t0); w != 0 {
		t.Fatalf("empty queue waits %v", w)
	}
	if s := q.Add("n", "a", ClassPreemptDump, t0, sec(10)); !s.Equal(t0) {
		t.Errorf("first starts at %v", s.Sub(t0))
	}
	if s := q.Add("n", "b", ClassPreemptDump, t0.Add(sec(2)), sec(5)); !s.Equal(t0.Add(sec(10))) {
		t.Errorf("second starts at %v, want 10s", s.Sub(t0))
	}
	if w := q.Wait("n", t0.Add(sec(4))); w != sec(11) {
		t.Errorf("wait at 4s: %v, want 11s", w)
	}
	if w := q.Wait("m", t0); w != 0 {
		t.Errorf("other node waits %v", w)
	}
	q.Done("a", t0.Add(sec(6))) // early: b starts at 6s, ends at 11s
	if w := q.Wait("n", t0.Add(sec(6))); w != sec(5) {
		t.Errorf("wait after an early end: %v, want 5s", w)
	}
	q.Add("n", "c", ClassPreemptDump, t0.Add(sec(7)), sec(3)) // 11s..14s
	q.Done("b", t0.Add(sec(7)))                               // abandoned: c runs 7s..10s
	if w := q.Wait("n", t0.Add(sec(7))); w != sec(3) {
		t.Errorf("wait after abandoning b: %v, want 3s", w)
	}
	q.Done("c", t0.Add(sec(20)))
	if q.Len("n") != 0 || q.Wait("n", t0.Add(sec(20))) != 0 {
		t.Errorf("queue not empty: %d", q.Len("n"))
	}
}

// TestQueueClasses checks the queue's order (spec §5.6, as the trackers
// keep it): a preemption dump overtakes waiting restores and clone dumps,
// not the running operation; a restore overtakes clone dumps; each class
// waits for those it does not overtake.
func TestQueueClasses(t *testing.T) {
	t0 := time.Unix(0, 0)
	type add struct {
		id    string
		class Class
		at, d float64 // seconds
		start float64 // expected start, seconds
	}
	for _, tc := range []struct {
		name  string
		adds  []add
		at    float64    // when the waits are asked
		waits [4]float64 // of a new deadline's dump, preemption dump, restore, clone dump (seconds)
	}{
		{"idle", nil, 0, [4]float64{0, 0, 0, 0}},
		{"a clone dump running is not overtaken",
			[]add{{"c1", ClassCloneDump, 0, 10, 0}, {"p1", ClassPreemptDump, 1, 2, 10}}, 1, [4]float64{9, 11, 11, 11}},
		{"a preemption dump overtakes waiting clone dumps and restores",
			[]add{{"c1", ClassCloneDump, 0, 4, 0}, {"c2", ClassCloneDump, 0, 4, 4}, {"r1", ClassRestore, 1, 3, 4}, {"p1", ClassPreemptDump, 2, 1, 4}},
			2, [4]float64{2, 3, 6, 10}},
		{"arrival order within a class",
			[]add{{"p1", ClassPreemptDump, 0, 5, 0}, {"p2", ClassPreemptDump, 0, 5, 5}, {"p3", ClassPreemptDump, 1, 5, 10}}, 1, [4]float64{4, 14, 14, 14}},
		{"a restore overtakes clone dumps only",
			[]add{{"p1", ClassPreemptDump, 0, 2, 0}, {"c1", ClassCloneDump, 0, 2, 2}, {"r1", ClassRestore, 0, 2, 2}}, 0, [4]float64{2, 2, 4, 6}},
		{"a deadline's dump overtakes waiting preemption dumps, not the running one",
			[]add{{"p1", ClassPreemptDump, 0, 4, 0}, {"p2", ClassPreemptDump, 0, 3, 4}, {"d1", ClassDeadlineDump, 1, 2, 4}}, 1, [4]float64{5, 8, 8, 8}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := NewQueue()
			for _, a := range tc.adds {
				if s := q.Add("n", a.id, a.class, t0.Add(sec(a.at)), sec(a.d)); !s.Equal(t0.Add(sec(a.start))) {
					t.Errorf("%s expected to start at %v, want %gs", a.id, s.Sub(t0), a.start)
				}
			}
			for c := ClassDeadlineDump; c <= ClassCloneDump; c++ {
				if w := q.WaitClass("n", c, t0.Add(sec(tc.at))); w != sec(tc.waits[c]) {
					t.Errorf("wait of class %d at %gs: %v, want %gs", c, tc.at, w, tc.waits[c])
				}
			}
			if w, w0 := q.Wait("n", t0.Add(sec(tc.at))), q.WaitClass("n", ClassPreemptDump, t0.Add(sec(tc.at))); w != w0 {
				t.Errorf("Wait %v != WaitClass(ClassPreemptDump) %v", w, w0)
			}
		})
	}
}

// TestQueueConcurrent checks the queue of a node that runs two (or three)
// operations at once: each starts on the server free first, in the
// queue's order (a preemption dump overtakes waiting restores and clone
// dumps, never a running operation); an end frees its server at once; a
// node whose heartbeat says 1 (or 0) is sequential again.
func TestQueueConcurrent(t *testing.T) {
	t0 := time.Unix(0, 0)
	type add struct {
		id    string
		class Class
		at, d float64 // seconds
		start float64 // expected start, seconds
	}
	for _, tc := range []struct {
		name   string
		n      int
		adds   []add
		done   string // ended at doneAt ("": none)
		doneAt float64
		at     float64    // when the waits are asked
		waits  [3]float64 // of a new preemption dump, restore, clone dump (seconds)
	}{
		{"two run at once, the third on the server free first", 2,
			[]add{{"p1", ClassPreemptDump, 0, 4, 0}, {"p2", ClassPreemptDump, 0, 6, 0}, {"p3", ClassPreemptDump, 1, 2, 4}}, "", 0,
			1, [3]float64{5, 5, 5}},
		{"one server free: no wait", 2,
			[]add{{"c1", ClassCloneDump, 0, 10, 0}}, "", 0, 1, [3]float64{0, 0, 0}},
		{"a preemption dump overtakes a waiting restore, not the two running", 2,
			[]add{{"c1", ClassCloneDump, 0, 4, 0}, {"c2", ClassCloneDump, 0, 8, 0}, {"r1", ClassRestore, 1, 3, 4}, {"p1", ClassPreemptDump, 2, 1, 4}},
			"", 0, 2, [3]float64{3, 6, 6}},
		{"an early end frees its server now", 2,
			[]add{{"p1", ClassPreemptDump, 0, 10, 0}, {"p2", ClassPreemptDump, 0, 10, 0}, {"p3", ClassPreemptDump, 0, 5, 10}},
			"p1", 2, 2, [3]float64{5, 5, 5}},
		{"an abandoned waiting one shortens the wait", 2,
			[]add{{"p1", ClassPreemptDump, 0, 10, 0}, {"p2", ClassPreemptDump, 0, 10, 0}, {"p3", ClassPreemptDump, 0, 5, 10}},
			"p3", 2, 2, [3]float64{8, 8, 8}},
		{"three at once", 3,
			[]add{{"p1", ClassPreemptDump, 0, 3, 0}, {"p2", ClassPreemptDump, 0, 6, 0}, {"p3", ClassPreemptDump, 0, 9, 0}, {"r1", ClassRestore, 0, 1, 3}},
			"", 0, 0, [3]float64{3, 4, 4}},
		{"a node that says 0 is sequential", 0,
			[]add{{"p1", ClassPreemptDump, 0, 4, 0}, {"p2", ClassPreemptDump, 0, 6, 4}}, "", 0, 1, [3]float64{9, 9, 9}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := NewQueue()
			q.SetConcurrency("n", tc.n, t0)
			if got, want := q.Concurrency("n"), max(tc.n, 1); got != want {
				t.Fatalf("concurrency %d, want %d", got, want)
			}
			for _, a := range tc.adds {
				if s := q.Add("n", a.id, a.class, t0.Add(sec(a.at)), sec(a.d)); !s.Equal(t0.Add(sec(a.start))) {
					t.Errorf("%s expected to start at %v, want %gs", a.id, s.Sub(t0), a.start)
				}
			}
			if tc.done != "" {
				q.Done(tc.done, t0.Add(sec(tc.doneAt)))
			}
			for c := ClassPreemptDump; c <= ClassCloneDump; c++ {
				if w := q.WaitClass("n", c, t0.Add(sec(tc.at))); w != sec(tc.waits[c-ClassPreemptDump]) {
					t.Errorf("wait of class %d at %gs: %v, want %gs", c, tc.at, w, tc.waits[c-ClassPreemptDump])
				}
			}
			if q.Concurrency("other") != 1 {
				t.Errorf("another node runs %d at once, want 1", q.Concurrency("other"))
			}
		})
	}
}

// TestQueueSetConcurrencyReplans checks that a node's new concurrency
// re-plans the operations waiting there: a second server lets the first
// waiting one start at once; back to one, it waits again.
func TestQueueSetConcurrencyReplans(t *testing.T) {
	t0 := time.Unix(0, 0)
	q := NewQueue()
	q.Add("n", "p1", ClassPreemptDump, t0, sec(10))
	q.Add("n", "p2", ClassPreemptDump, t0, sec(4))
	if w := q.Wait("n", t0.Add(sec(1))); w != sec(13) {
		t.Fatalf("sequential wait at 1s: %v, want 13s", w)
	}
	q.SetConcurrency("n", 2, t0.Add(sec(1))) // p2 starts at 1s on the second server, ends at 5s
	if w := q.Wait("n", t0.Add(sec(1))); w != sec(4) {
		t.Errorf("wait with two at 1s: %v, want 4s", w)
	}
	q.SetConcurrency("n", 1, t0.Add(sec(2))) // p2 started: it keeps its start, on the one server
	if w := q.Wait("n", t0.Add(sec(2))); w != sec(8) {
		t.Errorf("wait back to one at 2s: %v, want 8s (p1 ends at 10s, p2 at 5s: the later)", w)
	}
}
