package speculator

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"testing"
)

func TestStragglersConfig(t *testing.T) {
	cases := []struct {
		name string
		cfg  mapGetter
		want string // error substring, "" for none
	}{
		{"defaults", mapGetter{}, ""},
		{"tracker scope", mapGetter{KeyStragglerScope: "tracker", KeyStragglerFraction: "0.5"}, ""},
		{"bad scope", mapGetter{KeyStragglerScope: "node"}, `straggler.scope="node": want attempt, task or tracker`},
		{"fraction above 1", mapGetter{KeyStragglerFraction: "1.5"}, `straggler.fraction="1.5": must be in [0, 1]`},
		{"negative shape", mapGetter{KeyStragglerShape: "-1"}, `straggler.shape="-1"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := StragglersFromConfig(c.cfg)
			if c.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if c.cfg[KeyStragglerScope] == "tracker" && !s.ByTracker {
					t.Fatal("scope tracker not read")
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want it to contain %q", err, c.want)
			}
		})
	}
}

// The injector is off by default, leaves speculative attempts alone unless
// asked, slows the configured fraction, and its factors follow the
// log-normal it is given (median exp(mu), quartiles exp(mu ± 0.674 sigma)).
func TestStragglerFactors(t *testing.T) {
	if k := (Stragglers{}).Factor("attempt_1_0001_m_000000_0", "tt0", false); k != 0 {
		t.Fatalf("injector off: k = %v", k)
	}
	s := Stragglers{Fraction: 0.3, Shape: 2, Location: 0.5, MaxFactor: 1e9, Seed: 7}
	if k := s.Factor("a", "tt0", true); k != 0 {
		t.Fatalf("speculative attempt slowed: k = %v", k)
	}
	const n = 20000
	var ks []float64
	for i := range n {
		id := fmt.Sprintf("attempt_1_0001_m_%06d_0", i)
		k := s.Factor(id, "tt0", false)
		if k2 := s.Factor(id, "tt0", false); k2 != k {
			t.Fatalf("%s: k = %v then %v", id, k, k2)
		}
		if k > 0 {
			ks = append(ks, k)
		}
	}
	if frac := float64(len(ks)) / n; math.Abs(frac-0.3) > 0.02 {
		t.Fatalf("slowed fraction %.3f, want 0.30", frac)
	}
	sort.Float64s(ks)
	q := func(p float64) float64 { return ks[int(p*float64(len(ks)))] }
	for _, c := range []struct{ p, want float64 }{{0.25, math.Exp(0.5 - 0.6745*2)}, {0.5, math.Exp(0.5)}, {0.75, math.Exp(0.5 + 0.6745*2)}} {
		if got := q(c.p); math.Abs(math.Log(got/c.want)) > 0.1 {
			t.Errorf("quantile %.2f of k = %.3f, want %.3f", c.p, got, c.want)
		}
	}
	// The cap holds, and a tracker scope slows every attempt of a chosen
	// tracker alike.
	capped := Stragglers{Fraction: 1, Shape: 10, MaxFactor: 5, Seed: 1}
	for i := range 1000 {
		if k := capped.Factor(fmt.Sprint(i), "", false); k > 5 {
			t.Fatalf("k = %v above the cap 5", k)
		}
	}
	bt := Stragglers{Fraction: 0.5, ByTracker: true, Shape: 1, MaxFactor: 100, Seed: 3}
	slowed := 0
	for i := range 40 {
		tr := fmt.Sprintf("tt%d", i)
		k0 := bt.Factor("x0", tr, false)
		if k1 := bt.Factor("x1", tr, false); k1 != k0 {
			t.Fatalf("tracker %s: attempts slowed by %v and %v", tr, k0, k1)
		}
		if k0 > 0 {
			slowed++
		}
	}
	if slowed == 0 || slowed == 40 {
		t.Fatalf("%d of 40 trackers slowed with fraction 0.5", slowed)
	}
	// Task scope: the attempts of a task are drawn alike, whatever their
	// cluster, job and attempt number.
	bk := Stragglers{Fraction: 0.5, ByTask: true, Shape: 1, MaxFactor: 100, Seed: 3}
	differ := false
	for i := range 40 {
		k0 := bk.Factor(fmt.Sprintf("attempt_202611220830_0001_r_%06d_0", i), "tt0", false)
		k1 := bk.Factor(fmt.Sprintf("attempt_202701010000_0042_r_%06d_3", i), "tt1", false)
		if k0 != k1 {
			t.Fatalf("task r_%06d: attempts slowed by %v and %v", i, k0, k1)
		}
		if k0 != bk.Factor(fmt.Sprintf("attempt_202611220830_0001_m_%06d_0", i), "tt0", false) {
			differ = true
		}
	}
	if !differ {
		t.Fatal("map and reduce tasks of the same index are drawn alike")
	}
}

// straggler.task-types leaves the other type's attempts alone; a bad value
// is an error naming the key.
func TestStragglerTaskTypes(t *testing.T) {
	base := mapGetter{KeyStragglerFraction: "1", KeyStragglerShape: "0", KeyStragglerLocation: "1"}
	for _, tc := range []struct {
		types      string
		mapK, redK bool
	}{{"map,reduce", true, true}, {"map", true, false}, {"reduce", false, true}} {
		cfg := mapGetter{KeyStragglerTaskTypes: tc.types}
		for k, v := range base {
			cfg[k] = v
		}
		s, err := StragglersFromConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		m := s.Factor("attempt_1_0001_m_000003_0", "t1", false)
		r := s.Factor("attempt_1_0001_r_000000_0", "t1", false)
		if (m > 0) != tc.mapK || (r > 0) != tc.redK {
			t.Errorf("%s: map k %v, reduce k %v", tc.types, m, r)
		}
	}
	if _, err := StragglersFromConfig(mapGetter{KeyStragglerTaskTypes: "setup"}); err == nil || !strings.Contains(err.Error(), KeyStragglerTaskTypes) {
		t.Errorf("bad task types: %v, want an error naming %s", err, KeyStragglerTaskTypes)
	}
}

// straggler.work chooses what a delay is owed for; a bad value is an
// error naming the key.
func TestStragglerWork(t *testing.T) {
	for _, tc := range []struct {
		work string
		cpu  bool
	}{{"", false}, {"wall", false}, {"cpu", true}} {
		cfg := mapGetter{}
		if tc.work != "" {
			cfg[KeyStragglerWork] = tc.work
		}
		s, err := StragglersFromConfig(cfg)
		if err != nil || s.CPUWork != tc.cpu {
			t.Errorf("%s=%q: CPUWork %v (%v), want %v", KeyStragglerWork, tc.work, s.CPUWork, err, tc.cpu)
		}
	}
	if _, err := StragglersFromConfig(mapGetter{KeyStragglerWork: "user"}); err == nil || !strings.Contains(err.Error(), KeyStragglerWork) {
		t.Errorf("bad work: %v, want an error naming %s", err, KeyStragglerWork)
	}
}
