package partitions_test

import (
	"fmt"
	. "gomr/partitions"
	"strings"
	"testing"
	"time"
)

func TestTyrexStatic(t *testing.T) {
	h := newHarness(t, "tyrex-static", map[string]string{
		"scheduler.tyrex.capacities": "0.3,0.7",
		"scheduler.tyrex.timers":     "100s",
	}, 10, 4)
	h.Submit(JobView{ID: "A", Maps: 20, Reduces: 2})
	h.Submit(JobView{ID: "B", Maps: 5, Reduces: 1})
	steps := []struct {
		do   func()
		fm   int
		fr   int
		want string
	}{
		// P1 owns 3 of 10 map slots and 1 of 4 reduce slots; A is first in P1.
		{nil, 10, 4, "A:m A:m A:m A:r"},
		// P1 is full: nothing more.
		{nil, 5, 3, ""},
		// A finishes maps worth 60+50 s > 100 s: it moves to P2, its third
		// map still runs in P1, so P1 has two free map slots: B gets them.
		// A now draws on P2's 7 map slots.
		{func() { h.Finish("A", Map, secs(60)); h.Finish("A", Map, secs(50)) }, 3, 0, "B:m B:m A:m"},
		// P1 is full (B's 2 and A's old map); A fills P2's remaining 6.
		{nil, 8, 0, "A:m A:m A:m A:m A:m A:m"},
	}
	for i, s := range steps {
		if s.do != nil {
			s.do()
		}
		if got := h.Offer(s.fm, s.fr); got != s.want {
			t.Fatalf("step %d: offer(%d,%d) = %q, want %q", i, s.fm, s.fr, got, s.want)
		}
	}
	mq := h.Policy().(*MultiQueue)
	if q, _ := mq.QueueOf("A"); q != 1 {
		t.Errorf("A in queue %d, want 1", q)
	}
	if q, _ := mq.QueueOf("B"); q != 0 {
		t.Errorf("B in queue %d, want 0", q)
	}
	st := mq.Describe(h.Now)
	if st.Partitions[0].RunningMaps != 3 || st.Partitions[1].RunningMaps != 7 {
		t.Errorf("running per partition = %d,%d, want 3,7", st.Partitions[0].RunningMaps, st.Partitions[1].RunningMaps)
	}
	if st.Partitions[0].Timer != secs(100) || st.Counters["migrations"] != 1 {
		t.Errorf("timer %v migrations %d, want 100s and 1", st.Partitions[0].Timer, st.Counters["migrations"])
	}
	// A's old P1 map finishing counts toward A's P1 partial size, not P2's.
	h.Finish("A", Map, secs(30))
	st = mq.Describe(h.Now)
	for _, j := range st.Jobs {
		if j.ID == "A" && (j.PartialSize != 0 || j.Service != secs(140)) {
			t.Errorf("A partial in P2 %v service %v, want 0 and 140s", j.PartialSize, j.Service)
		}
	}
}

func TestTyrexPartialEqualToTimerStays(t *testing.T) {
	h := newHarness(t, "tyrex-static", map[string]string{"scheduler.tyrex.timers": "100s"}, 10, 2)
	h.Submit(JobView{ID: "A", Maps: 5})
	h.Offer(1, 0)
	h.Finish("A", Map, secs(100))
	if q, _ := h.Policy().(*MultiQueue).QueueOf("A"); q != 0 {
		t.Fatalf("partial == timer migrated the job to queue %d; the rule is partial > timer", q)
	}
}

func TestTyrexDynamic(t *testing.T) {
	// the readings with the timer mode check (jobs move only when a cutoff
	// is computed) unless a case sets sticky
	pos := map[string]string{"scheduler.tyrex.dynamic-sample": "positive", "scheduler.tyrex.dynamic-timer": "check"}
	queue := map[string]string{"scheduler.tyrex.dynamic-sample": "queue", "scheduler.tyrex.dynamic-timer": "check"}
	with := func(kv ...string) map[string]string {
		m := map[string]string{"scheduler.tyrex.dynamic-timer": "check"}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	tests := []struct {
		name     string
		partials []float64 // per job J0..Jn, one finished task each, in order; 0: waits
		conf     map[string]string
		wantQ    []int
		wantT    time.Duration // timer after the last check; -1: none
	}{
		// positive sample. CV² = 5·(4·100+10⁶)/1040² − 1 = 3.62 > 2; only candidate 10.
		{"positive: one large", []float64{10, 10, 10, 10, 1000}, pos, []int{0, 0, 0, 0, 1}, secs(10)},
		// CV² = 0.11: nothing moves.
		{"positive: low variability", []float64{10, 20}, pos, []int{0, 0}, -1},
		// a lone job: no sample
		{"positive: alone", []float64{5000}, pos, []int{0}, -1},
		// a lone job with service while three wait: still a sample of one
		{"positive: lone large before waiting jobs", []float64{5000, 0, 0, 0}, pos, []int{0, 0, 0, 0}, -1},
		// the fallback timer moves a lone large job
		{"positive: fallback", []float64{5000}, with("scheduler.tyrex.dynamic-sample", "positive", "scheduler.tyrex.fallback-timer", "1000s"), []int{1}, -1},
		// a higher threshold keeps everyone
		{"positive: threshold", []float64{10, 10, 10, 10, 1000}, with("scheduler.tyrex.dynamic-sample", "positive", "scheduler.tyrex.cv2-threshold", "4"), []int{0, 0, 0, 0, 0}, -1},

		// queue sample: the CV² test counts the waiting jobs at 0.
		// {5000,0,0,0}: CV² = 3 > 2; the cutoff of {5000} is 0+: it moves.
		{"queue: lone large before waiting jobs", []float64{5000, 0, 0, 0}, queue, []int{1, 0, 0, 0}, 0},
		// {5000,0,0}: CV² = 2, not above the threshold
		{"queue: two waiting", []float64{5000, 0, 0}, queue, []int{0, 0, 0}, -1},
		// a lone job of the partition: CV² of one job is 0
		{"queue: alone", []float64{5000}, queue, []int{0}, -1},
		// over-migration: the first job to finish a task moves while three
		// have none ({10,0,0,0,0}: CV² 4), the second too ({10,0,0,0}: 3);
		// then {10,0,0}: 2, {10,10,0}: 0.5, {10,10,1000}: 1.89 stay
		{"queue: one large, in order", []float64{10, 10, 10, 10, 1000}, queue, []int{1, 1, 0, 0, 0}, -1},
		// all: zeros in the cutoff too; the cutoff 0 moves every job with service
		{"all: lone large before waiting jobs", []float64{5000, 0, 0, 0}, with("scheduler.tyrex.dynamic-sample", "all"), []int{1, 0, 0, 0}, 0},

		// sticky timer: the 10 s cutoff stays and moves a job passing it later
		{"sticky: later job passes the timer", []float64{10, 10, 10, 10, 1000, 0, 20}, with("scheduler.tyrex.dynamic-sample", "positive", "scheduler.tyrex.dynamic-timer", "sticky"),
			[]int{0, 0, 0, 0, 1, 0, 1}, secs(10)},
		{"check: later job stays", []float64{10, 10, 10, 10, 1000, 0, 20}, pos, []int{0, 0, 0, 0, 1, 0, 0}, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, "tyrex-dynamic", tt.conf, 100, 10)
			ids := []string{}
			for i := range tt.partials {
				id := string(rune('a' + i))
				ids = append(ids, id)
				h.Submit(JobView{ID: id, Maps: 3})
				h.Start(id, Map)
			}
			for i, id := range ids {
				if tt.partials[i] > 0 {
					h.Finish(id, Map, secs(tt.partials[i]))
				}
			}
			mq := h.Policy().(*MultiQueue)
			for i, id := range ids {
				if q, _ := mq.QueueOf(id); q != tt.wantQ[i] {
					t.Errorf("job %s in queue %d, want %d", id, q, tt.wantQ[i])
				}
			}
			if got := mq.Timers()[0]; got != tt.wantT {
				t.Errorf("timer %v, want %v", got, tt.wantT)
			}
		})
	}
}

// TestTyrexDynamicRecent checks the default DynamicTAGS sample: the jobs in
// the partition with service, plus the partial sizes there of the latest
// jobs that left it. A lone large job is measured against the small jobs
// that came before it, so it moves where the positive sample sees a sample
// of one.
func TestTyrexDynamicRecent(t *testing.T) {
	tests := []struct {
		name  string
		conf  map[string]string
		wantQ int
		wantT time.Duration
	}{
		// sample {1000} ∪ {10,10,10,10}: CV² 3.62 > 2, cutoff 10 s
		{"default: moves", nil, 1, secs(10)},
		// window 2: {1000,10,10}: CV² = 3·(200+10⁶)/1020² − 1 = 1.88, stays
		{"window 2: stays", map[string]string{"scheduler.tyrex.dynamic-window": "2"}, 0, -1},
		// the positive sample has only the large job
		{"positive: stays", map[string]string{"scheduler.tyrex.dynamic-sample": "positive"}, 0, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, "tyrex-dynamic", tt.conf, 100, 10)
			for i := range 4 {
				id := fmt.Sprintf("small%d", i)
				h.Submit(JobView{ID: id, Maps: 1})
				h.Start(id, Map)
				h.Finish(id, Map, secs(10))
				h.End(id)
			}
			mq := h.Policy().(*MultiQueue)
			if got := mq.Timers()[0]; got != -1 {
				t.Fatalf("timer %v after equal small jobs, want none", got)
			}
			h.Submit(JobView{ID: "big", Maps: 3})
			h.Start("big", Map)
			h.Finish("big", Map, secs(1000))
			if q, _ := mq.QueueOf("big"); q != tt.wantQ {
				t.Errorf("big in queue %d, want %d", q, tt.wantQ)
			}
			if got := mq.Timers()[0]; got != tt.wantT {
				t.Errorf("timer %v, want %v", got, tt.wantT)
			}
		})
	}
}

func TestFBQPriorityAndDemotion(t *testing.T) {
	h := newHarness(t, "fbq", map[string]string{"scheduler.fbq.limits": "50s"}, 4, 2)
	h.Submit(JobView{ID: "A", Maps: 10, Reduces: 1})
	h.Advance(1)
	h.Submit(JobView{ID: "B", Maps: 2, Reduces: 1})
	// no partitions: A, the head of queue 1, takes all it can use
	if got := h.Offer(4, 2); got != "A:m A:m A:m A:m A:r B:r" {
		t.Fatalf("first offer %q", got)
	}
	// A passes its 50 s limit and is demoted: B (queue 1) now comes first.
	h.Finish("A", Map, secs(30))
	h.Finish("A", Map, secs(30))
	if got := h.Offer(2, 0); got != "B:m B:m" {
		t.Fatalf("after demotion %q, want B first", got)
	}
	if got := h.Offer(1, 0); got != "A:m" {
		t.Fatalf("multiplexing: %q, want A to use the slot B cannot", got)
	}
}

func TestSITADispatch(t *testing.T) {
	h := newHarness(t, "sita", map[string]string{
		"scheduler.sita.capacities": "0.5,0.5",
		"scheduler.sita.cutoffs":    "1000s",
		"scheduler.sita.predictor":  "oracle",
	}, 4, 2)
	h.Submit(JobView{ID: "big", Maps: 10, EstimatedSize: secs(5000)})
	h.Submit(JobView{ID: "small", Maps: 10, EstimatedSize: secs(200)})
	// each gets its own partition's 2 map slots
	if got := h.Offer(4, 0); got != "small:m small:m big:m big:m" {
		t.Fatalf("offer %q", got)
	}
	mq := h.Policy().(*MultiQueue)
	if q, _ := mq.QueueOf("big"); q != 1 {
		t.Errorf("big in queue %d", q)
	}
	// no feedback: however long small runs, it stays
	h.Finish("small", Map, secs(100000))
	if q, _ := mq.QueueOf("small"); q != 0 {
		t.Errorf("small moved to queue %d", q)
	}
}

func TestSITARegression(t *testing.T) {
	h := newHarness(t, "sita", map[string]string{
		"scheduler.sita.cutoffs": "1000s",
		"scheduler.sita.min-fit": "2",
	}, 10, 2)
	// two completed jobs: size = input/1000 seconds
	for i, in := range []int64{100000, 1000000} {
		id := string(rune('p' + i))
		h.Submit(JobView{ID: id, Maps: 1, InputBytes: in})
		h.Start(id, Map)
		h.Finish(id, Map, secs(float64(in)/1000))
		h.End(id)
	}
	h.Submit(JobView{ID: "x", Maps: 1, InputBytes: 5000000}) // predicts 5000 s
	h.Submit(JobView{ID: "y", Maps: 1, InputBytes: 500000})  // predicts 500 s
	mq := h.Policy().(*MultiQueue)
	if q, _ := mq.QueueOf("x"); q != 1 {
		t.Errorf("x in queue %d, want 1", q)
	}
	if q, _ := mq.QueueOf("y"); q != 0 {
		t.Errorf("y in queue %d, want 0", q)
	}
}

// TestSITARegressionLearnsWork: a reduce launched at slow-start holds its
// slot through the map stage; the size SITA learns counts the reduce from
// the map stage's end, not from its launch.
func TestSITARegressionLearnsWork(t *testing.T) {
	h := newHarness(t, "sita", map[string]string{
		"scheduler.sita.cutoffs": "1000s",
		"scheduler.sita.min-fit": "2",
	}, 10, 2)
	for i, in := range []int64{100000, 1000000} {
		id := string(rune('p' + i))
		size := float64(in) / 1000 // the map's 90% and the reduce's 10%
		h.Submit(JobView{ID: id, Maps: 1, Reduces: 1, InputBytes: in})
		h.Start(id, Map)
		h.Start(id, Reduce) // at slow-start, with the map
		h.Advance(0.9 * size)
		h.Finish(id, Map, secs(0.9*size))
		h.Advance(0.1 * size)
		// the reduce held its slot for the whole job: size, of which 0.9 waiting
		h.Finish(id, Reduce, secs(size))
		h.End(id)
	}
	// sizes 100 s and 1000 s learnt (1.9 times that if the wait counted):
	// 600 s predicted stays below the cutoff
	h.Submit(JobView{ID: "y", Maps: 1, InputBytes: 600000})
	if q, _ := h.Policy().(*MultiQueue).QueueOf("y"); q != 0 {
		t.Errorf("y (600 s of work) in queue %d, want 0: the regression counted the reduce's wait", q)
	}
}

func TestCOMP(t *testing.T) {
	h := newHarness(t, "comp", map[string]string{"scheduler.comp.queues": "3", "scheduler.comp.predictor": "oracle"}, 4, 2)
	// no history yet: queue 1
	h.Submit(JobView{ID: "a", Maps: 1, EstimatedSize: secs(100)})
	h.Start("a", Map)
	h.Finish("a", Map, secs(100))
	h.End("a")
	h.Submit(JobView{ID: "b", Maps: 1, EstimatedSize: secs(300)})
	h.Start("b", Map)
	h.Finish("b", Map, secs(300))
	h.End("b")
	// history {100, 300}
	for _, c := range []struct {
		id   string
		size float64
		want int
	}{{"c", 50, 0}, {"d", 100, 0}, {"e", 200, 1}, {"f", 301, 2}} {
		h.Submit(JobView{ID: c.id, Maps: 1, EstimatedSize: secs(c.size)})
		if q, _ := h.Policy().(*MultiQueue).QueueOf(c.id); q != c.want {
			t.Errorf("%s (size %v) in queue %d, want %d", c.id, c.size, q, c.want)
		}
	}
	// priority: f (queue 3) submitted first of the three would still come last
	if got := h.Offer(3, 0); got != "c:m d:m e:m" {
		t.Errorf("offer %q", got)
	}
}

func TestMultiQueueConfigErrors(t *testing.T) {
	tests := []struct {
		policy string
		conf   map[string]string
		want   string
	}{
		{"tyrex-static", map[string]string{"scheduler.tyrex.capacities": "0.3,0.6"}, "sum to 0.9"},
		{"tyrex-static", map[string]string{"scheduler.tyrex.timers": "100s,200s"}, "want 1 value"},
		{"tyrex-static", map[string]string{"scheduler.tyrex.capacities": "0.2,0.3,0.5", "scheduler.tyrex.timers": "200s,100s"}, "must increase"},
		{"fbq", map[string]string{"scheduler.fbq.limits": "-5s"}, "must be positive"},
		{"tyrex-dynamic", map[string]string{"scheduler.tyrex.min-sample": "1"}, "at least 2"},
		{"sita", map[string]string{"scheduler.sita.capacities": "0,1"}, "(0, 1]"},
		{"comp", map[string]string{"scheduler.comp.queues": "0"}, "at least 2"},
	}
	for _, tt := range tests {
		cfg, err := NewMapConfig(tt.conf)
		if err != nil {
			t.Fatalf("%v: %v", tt.conf, err)
		}
		_, err = New(tt.policy, cfg)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s %v: err %v, want it to mention %q", tt.policy, tt.conf, err, tt.want)
		}
	}
	if _, err := NewMapConfig(map[string]string{"scheduler.tyrex.cv2-threshold": "two"}); err == nil ||
		!strings.Contains(err.Error(), "scheduler.tyrex.cv2-threshold") {
		t.Errorf("bad float accepted or unnamed: %v", err)
	}
	if _, err := NewMapConfig(map[string]string{"scheduler.nope": "1"}); err == nil {
		t.Error("unknown key accepted")
	}
}

func TestMigratedOrderArrival(t *testing.T) {
	h := newHarness(t, "tyrex-static", map[string]string{
		"scheduler.tyrex.capacities":     "0.5,0.5",
		"scheduler.tyrex.timers":         "10s",
		"scheduler.tyrex.migrated-order": "arrival",
	}, 2, 0)
	h.Submit(JobView{ID: "old", Maps: 5})
	h.Advance(1)
	h.Submit(JobView{ID: "new", Maps: 5})
	h.Start("new", Map)
	h.Finish("new", Map, secs(20)) // new moves to P2 first
	h.Start("old", Map)
	h.Finish("old", Map, secs(20)) // old moves to P2 after, but keeps arrival order
	if got := h.Offer(2, 0); got != "old:m" {
		t.Fatalf("offer %q, want old first in P2 (1 slot)", got)
	}
}

// TestSITABalancedCutoff: with cutoff-mode balanced the configured cutoff
// holds until min-fit jobs have completed; then the cutoff is recomputed at
// every completion so that P1's jobs carry C_1 of the completed work.
func TestSITABalancedCutoff(t *testing.T) {
	h := newHarness(t, "sita", map[string]string{
		"scheduler.sita.capacities":  "0.5,0.5",
		"scheduler.sita.cutoffs":     "1000s",
		"scheduler.sita.predictor":   "oracle",
		"scheduler.sita.cutoff-mode": "balanced",
		"scheduler.sita.min-fit":     "3",
	}, 10, 2)
	mq := h.Policy().(*MultiQueue)
	queueOf := func(id string, size float64) int {
		h.Submit(JobView{ID: id, Maps: 1, EstimatedSize: secs(size)})
		q, _ := mq.QueueOf(id)
		return q
	}
	run := func(id string, size float64) {
		queueOf(id, size)
		h.Start(id, Map)
		h.Finish(id, Map, secs(size))
		h.End(id)
	}
	run("a", 100)
	run("b", 100)
	if q := queueOf("p", 500); q != 0 {
		t.Fatalf("before min-fit completions: 500 s job in queue %d, want 0 (configured cutoff 1000 s)", q)
	}
	run("c", 200) // sample 100, 100, 200: half the work (200 of 400) at or below 100 s
	if got := mq.Timers(); len(got) != 1 || got[0] != secs(100) {
		t.Fatalf("balanced cutoff %v, want [100s]", got)
	}
	if q := queueOf("q", 150); q != 1 {
		t.Errorf("150 s job in queue %d, want 1 (above the balanced cutoff)", q)
	}
	if q := queueOf("r", 100); q != 0 {
		t.Errorf("100 s job in queue %d, want 0", q)
	}
	run("d", 2000) // 2,400 s of work: 400 s at or below 200 s is nearer half than all of it
	if got := mq.Timers()[0]; got != secs(200) {
		t.Errorf("after a 2,000 s job: cutoff %v, want 200s", got)
	}
}

// TestSITAFixedCutoffUnchanged: the default mode keeps the configured cutoff
// whatever completes.
func TestSITAFixedCutoffUnchanged(t *testing.T) {
	h := newHarness(t, "sita", map[string]string{"scheduler.sita.predictor": "oracle", "scheduler.sita.min-fit": "2"}, 10, 2)
	for i, size := range []float64{10, 20, 30, 40} {
		id := string(rune('a' + i))
		h.Submit(JobView{ID: id, Maps: 1, EstimatedSize: secs(size)})
		h.Start(id, Map)
		h.Finish(id, Map, secs(size))
		h.End(id)
	}
	h.Submit(JobView{ID: "x", Maps: 1, EstimatedSize: secs(17000)})
	if q, _ := h.Policy().(*MultiQueue).QueueOf("x"); q != 0 {
		t.Errorf("17,000 s job in queue %d, want 0 under the fixed 18,000 s cutoff", q)
	}
}

// TestSITAUnknownSize: a job SITA cannot predict (no regression fit yet,
// no size told) goes to the last partition by default, so that partition
// 1 only receives jobs predicted small; unknown-size=first keeps the old
// reading of a missing size as 0.
func TestSITAUnknownSize(t *testing.T) {
	for _, tt := range []struct {
		name      string
		conf      map[string]string
		job       JobView
		wantQueue int
	}{
		{"regression, no fit: last", nil, JobView{ID: "x", Maps: 1, InputBytes: 1 << 20}, 1},
		{"regression, no fit, first", map[string]string{"scheduler.sita.unknown-size": "first"}, JobView{ID: "x", Maps: 1, InputBytes: 1 << 20}, 0},
		{"regression, no fit, told small", nil, JobView{ID: "x", Maps: 1, InputBytes: 1 << 20, EstimatedSize: secs(100)}, 0},
		{"regression, no fit, told large", map[string]string{"scheduler.sita.unknown-size": "first"}, JobView{ID: "x", Maps: 1, EstimatedSize: secs(50000)}, 1},
		{"oracle, nothing told: last", map[string]string{"scheduler.sita.predictor": "oracle"}, JobView{ID: "x", Maps: 1}, 1},
		{"oracle, nothing told, first", map[string]string{"scheduler.sita.predictor": "oracle", "scheduler.sita.unknown-size": "first"}, JobView{ID: "x", Maps: 1}, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			conf := map[string]string{"scheduler.sita.cutoffs": "1000s"}
			for k, v := range tt.conf {
				conf[k] = v
			}
			h := newHarness(t, "sita", conf, 10, 2)
			h.Submit(tt.job)
			if q, _ := h.Policy().(*MultiQueue).QueueOf("x"); q != tt.wantQueue {
				t.Errorf("queue %d, want %d", q, tt.wantQueue)
			}
		})
	}
}
