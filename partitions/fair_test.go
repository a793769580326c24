package partitions_test

import (
	. "gomr/partitions"
	"strings"
	"testing"
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
	ps, err := ParsePools(" a:2:4:1 , b ")
	if err != nil || len(ps) != 2 || ps[0] != (Pool{"a", 2, 4, 1}) || ps[1] != (Pool{"b", 1, 0, 0}) {
		t.Fatalf("ParsePools = %+v, %v", ps, err)
	}
	for _, bad := range []string{"a:0", "a:x", "a:1:-1", "a,a", ":1", "a:1:2:3:4"} {
		if _, err := ParsePools(bad); err == nil {
			t.Errorf("ParsePools(%q) accepted", bad)
		}
	}
	cfg, _ := NewMapConfig(map[string]string{"scheduler.fair.pools": "a:zero"})
	if _, err := New("fair", cfg); err == nil || !strings.Contains(err.Error(), "scheduler.fair.pools") {
		t.Errorf("bad pools: %v", err)
	}
}
