package partitions

import (
	"math"
	"strings"
	"testing"
)

func TestWaterFill(t *testing.T) {
	tests := []struct {
		name  string
		es    []entity
		total float64
		want  []float64
	}{
		{"demand met", []entity{{weight: 1, demand: 2}, {weight: 1, demand: 3}}, 10, []float64{2, 3}},
		{"equal", []entity{{weight: 1, demand: 2}, {weight: 1, demand: 10}, {weight: 1, demand: 10}}, 12, []float64{2, 5, 5}},
		{"weights", []entity{{weight: 2, demand: 100}, {weight: 1, demand: 100}}, 30, []float64{20, 10}},
		{"min share", []entity{{weight: 1, minShare: 8, demand: 100}, {weight: 1, demand: 100}}, 10, []float64{8, 2}},
		{"min share capped by demand", []entity{{weight: 1, minShare: 8, demand: 3}, {weight: 1, demand: 100}}, 10, []float64{3, 7}},
		{"min share below fair", []entity{{weight: 1, minShare: 2, demand: 100}, {weight: 1, demand: 100}}, 10, []float64{5, 5}},
	}
	for _, tt := range tests {
		waterFill(tt.es, tt.total)
		for i, e := range tt.es {
			if math.Abs(e.share-tt.want[i]) > 1e-9 {
				t.Errorf("%s: share[%d] = %v, want %v", tt.name, i, e.share, tt.want[i])
			}
		}
	}
}

func TestFairJobs(t *testing.T) {
	h := newHarness(t, "fair", nil, 10, 4)
	h.submit(JobView{ID: "A", Maps: 20, Reduces: 2})
	h.advance(1)
	h.submit(JobView{ID: "B", Maps: 20, Reduces: 2})
	for i := 0; i < 4; i++ {
		h.start("A", Map)
	}
	// shares 5/5: B (0 running) is furthest below
	if got := h.offer(2, 0); got != "B:m B:m" {
		t.Fatalf("offer %q", got)
	}
	// A 4/5, B 2/5: B twice, then tie 4/5 each: A (earlier)
	if got := h.offer(3, 0); got != "B:m B:m A:m" {
		t.Fatalf("offer %q", got)
	}
	// reduces: both ready, 2 each demand; 4 slots cover all
	if got := h.offer(0, 4); got != "A:r B:r A:r B:r" {
		t.Fatalf("reduce offer %q", got)
	}
}

func TestFairPools(t *testing.T) {
	h := newHarness(t, "fair", map[string]string{"scheduler.fair.pools": "prod:1:3:0,adhoc:1"}, 10, 2)
	h.submit(JobView{ID: "x", Pool: "adhoc", Maps: 100})
	for i := 0; i < 8; i++ {
		h.start("x", Map)
	}
	h.submit(JobView{ID: "p", Pool: "prod", Maps: 100})
	// prod is below its minimum share of 3: it gets both slots
	if got := h.offer(2, 0); got != "p:m p:m" {
		t.Fatalf("offer %q", got)
	}
	h.finish("x", Map, secs(10))
	// prod has 2 < 3: needy first
	if got := h.offer(1, 0); got != "p:m" {
		t.Fatalf("offer %q", got)
	}
	// shares 5/5: prod 3/5 < adhoc 7/5
	h.finish("x", Map, secs(10))
	if got := h.offer(1, 0); got != "p:m" {
		t.Fatalf("offer %q", got)
	}
	st := h.p.(*Fair).Describe(h.now)
	if len(st.Pools) != 3 || st.Pools[2].Name != "prod" || st.Pools[2].FairShareMaps != 5 {
		t.Errorf("pools %+v", st.Pools)
	}
}

func TestFairPoolWeightsAndDefaultPool(t *testing.T) {
	h := newHarness(t, "fair", map[string]string{"scheduler.fair.pools": "heavy:3"}, 8, 0)
	h.submit(JobView{ID: "h", Pool: "heavy", Maps: 100})
	h.submit(JobView{ID: "d", Maps: 100}) // default pool, weight 1
	// shares 6 and 2; ties go to the pool named first
	if got := h.offer(8, 0); got != "d:m h:m h:m h:m d:m h:m h:m h:m" {
		t.Fatalf("offer %q", got)
	}
}

func TestFairSizeWeight(t *testing.T) {
	h := newHarness(t, "fair", map[string]string{"scheduler.fair.weight": "linear"}, 4, 0)
	h.submit(JobView{ID: "big", Maps: 300})
	h.submit(JobView{ID: "small", Maps: 100})
	// shares 3 and 1
	if got := h.offer(4, 0); got != "big:m small:m big:m big:m" {
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
