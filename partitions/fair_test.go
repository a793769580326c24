package partitions_test

import (
	. "gomr/partitions"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestFairJobs(t *testing.T) {
	h := newHarness(t, "fair", nil, 10, 4)
	h.Submit(JobView{ID: "A", Maps: 20, Reduces: 2})
	h.Advance(1)
	h.Submit(JobView{ID: "B", Maps: 20, Reduces: 2})
	for i := 0; i < 4; i++ {
		h.Start("A", Map)
	}
	// shares 5/5: B (0 running) is furthest below
	if got := h.Offer(2, 0); got != "B:m B:m" {
		t.Fatalf("offer %q", got)
	}
	// A 4/5, B 2/5: B twice, then tie 4/5 each: A (earlier)
	if got := h.Offer(3, 0); got != "B:m B:m A:m" {
		t.Fatalf("offer %q", got)
	}
	// reduces: both ready, 2 each demand; 4 slots cover all
	if got := h.Offer(0, 4); got != "A:r B:r A:r B:r" {
		t.Fatalf("reduce offer %q", got)
	}
}

func TestFairPools(t *testing.T) {
	h := newHarness(t, "fair", map[string]string{"scheduler.fair.pools": "prod:1:3:0,adhoc:1"}, 10, 2)
	h.Submit(JobView{ID: "x", Pool: "adhoc", Maps: 100})
	for i := 0; i < 8; i++ {
		h.Start("x", Map)
	}
	h.Submit(JobView{ID: "p", Pool: "prod", Maps: 100})
	// prod is below its minimum share of 3: it gets both slots
	if got := h.Offer(2, 0); got != "p:m p:m" {
		t.Fatalf("offer %q", got)
	}
	h.Finish("x", Map, secs(10))
	// prod has 2 < 3: needy first
	if got := h.Offer(1, 0); got != "p:m" {
		t.Fatalf("offer %q", got)
	}
	// shares 5/5: prod 3/5 < adhoc 7/5
	h.Finish("x", Map, secs(10))
	if got := h.Offer(1, 0); got != "p:m" {
		t.Fatalf("offer %q", got)
	}
	st := h.Policy().(*Fair).Describe(h.Now)
	if len(st.Pools) != 3 || st.Pools[2].Name != "prod" || st.Pools[2].FairShareMaps != 5 {
		t.Errorf("pools %+v", st.Pools)
	}
}

func TestFairPoolWeightsAndDefaultPool(t *testing.T) {
	h := newHarness(t, "fair", map[string]string{"scheduler.fair.pools": "heavy:3"}, 8, 0)
	h.Submit(JobView{ID: "h", Pool: "heavy", Maps: 100})
	h.Submit(JobView{ID: "d", Maps: 100}) // default pool, weight 1
	// shares 6 and 2; ties go to the pool named first
	if got := h.Offer(8, 0); got != "d:m h:m h:m h:m d:m h:m h:m h:m" {
		t.Fatalf("offer %q", got)
	}
}

func TestFairSizeWeight(t *testing.T) {
	h := newHarness(t, "fair", map[string]string{"scheduler.fair.weight": "linear"}, 4, 0)
	h.Submit(JobView{ID: "big", Maps: 300})
	h.Submit(JobView{ID: "small", Maps: 100})
	// shares 3 and 1
	if got := h.Offer(4, 0); got != "big:m small:m big:m big:m" {
		t.Fatalf("offer %q", got)
	}
}

func TestParsePools(t *testing.T) {
	ps, err := ParsePools(" a:2:4:1 , b , c:1:3:0:45s")
	if err != nil || len(ps) != 3 || ps[0] != (Pool{Name: "a", Weight: 2, MinMaps: 4, MinReduces: 1}) ||
		ps[1] != (Pool{Name: "b", Weight: 1}) || ps[2] != (Pool{Name: "c", Weight: 1, MinMaps: 3, MinShareTimeout: 45 * time.Second}) {
		t.Fatalf("ParsePools = %+v, %v", ps, err)
	}
	for _, bad := range []string{"a:0", "a:x", "a:1:-1", "a,a", ":1", "a:1:2:3:x", "a:1:2:3:-5s", "a:1:2:3:4s:5"} {
		if _, err := ParsePools(bad); err == nil {
			t.Errorf("ParsePools(%q) accepted", bad)
		}
	}
	cfg, _ := NewMapConfig(map[string]string{"scheduler.fair.pools": "a:zero"})
	if _, err := New("fair", cfg); err == nil || !strings.Contains(err.Error(), "scheduler.fair.pools") {
		t.Errorf("bad pools: %v", err)
	}
}

// Fair preemption (Hadoop 1's): a pool below its minimum share past its
// timeout takes back what it lacks from the youngest tasks of the pools
// over their fair share, once per interval.
func TestFairPreemptionMinShare(t *testing.T) {
	h := newHarness(t, "fair", map[string]string{
		"scheduler.fair.preemption":                    "true",
		"scheduler.fair.pools":                         "etl,prod:1:3:0:10s",
		"scheduler.fair.preemption-interval":           "5s",
		"scheduler.fair.fair-share-preemption-timeout": "0s",
	}, 4, 0)
	h.Submit(JobView{ID: "A", Pool: "etl", Maps: 20})
	if got := h.Offer(4, 0); got != "A:m A:m A:m A:m" {
		t.Fatalf("offer %q", got)
	}
	h.Advance(1)
	h.Submit(JobView{ID: "P", Pool: "prod", Maps: 10})
	// Below its minimum share of 3 (it has 0) but not yet for 10 s: the
	// policy wants to be asked again when the 10 s are up.
	for _, s := range []float64{5, 10} {
		h.Now = at(1 + s)
		if got := h.Offer(0, 0); got != "" {
			t.Fatalf("at %gs after P's arrival: %q, want nothing", s, got)
		}
		if w, want := h.Policy().(Waker).NextWake(h.Now), at(11).Add(time.Nanosecond); !w.Equal(want) {
			t.Errorf("at %gs after P's arrival: next wake %v, want %v", s, w, want)
		}
	}
	var reasons []ReclaimReason
	h.Driver().OnDecision(func(_ *ClusterView, _ SlotOffer, d Decision, _ error) {
		for _, p := range d.Preempt {
			reasons = append(reasons, p.Reason)
		}
	})
	h.Now = at(11.5) // starved 10.5 s
	if got := h.Offer(0, 0); got != "kill:A:map:3" {
		t.Fatalf("after the timeout: %q, want three of A's maps killed", got)
	}
	if len(reasons) != 1 || reasons[0] != ReclaimFairMinShare {
		t.Errorf("reasons %v, want the minimum share's", reasons)
	}
	// The freed slots go to the starved pool.
	if got := h.Offer(3, 0); got != "P:m P:m P:m" {
		t.Fatalf("offer of the freed slots: %q", got)
	}
	// At its minimum share now: nothing more is taken, nothing to wake for.
	h.Now = at(30)
	if got := h.Offer(0, 0); got != "" {
		t.Fatalf("at the minimum share: %q", got)
	}
	if w := h.Policy().(Waker).NextWake(h.Now); !w.IsZero() {
		t.Errorf("at the minimum share: next wake %v, want none", w)
	}
}

// The fair-share timeout: a pool below half its fair share for the timeout
// is brought up to its fair share, never taking another pool below its
// own; with the preemption off nothing is killed.
func TestFairPreemptionFairShare(t *testing.T) {
	for _, on := range []bool{true, false} {
		h := newHarness(t, "fair", map[string]string{
			"scheduler.fair.preemption":                    strconv.FormatBool(on),
			"scheduler.fair.fair-share-preemption-timeout": "20s",
			"scheduler.fair.preemption-interval":           "0s",
		}, 6, 0)
		h.Submit(JobView{ID: "A", Pool: "a", Maps: 50})
		if got := h.Offer(6, 0); got != "A:m A:m A:m A:m A:m A:m" {
			t.Fatalf("offer %q", got)
		}
		h.Submit(JobView{ID: "B", Pool: "b", Maps: 50})
		h.Now = at(19)
		if got := h.Offer(0, 0); got != "" {
			t.Fatalf("before the timeout: %q", got)
		}
		var reasons []ReclaimReason
		h.Driver().OnDecision(func(_ *ClusterView, _ SlotOffer, d Decision, _ error) {
			for _, p := range d.Preempt {
				reasons = append(reasons, p.Reason)
			}
		})
		h.Now = at(21)
		want := "kill:A:map:3" // B's fair share is 3 of 6: A keeps its 3
		if !on {
			want = ""
		}
		if got := h.Offer(0, 0); got != want {
			t.Fatalf("preemption %v after the timeout: %q, want %q", on, got, want)
		}
		if on && (len(reasons) != 1 || reasons[0] != ReclaimFairShare) {
			t.Errorf("reasons %v, want the fair share's", reasons)
		}
	}
}
