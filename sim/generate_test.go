package sim

import (
	"math"
	"sort"
	"testing"
	"time"
)

// poolStats are a generated workload's statistics that the sources state.
type poolStats struct {
	jobs                 int
	sizeMean, sizeCV2    float64 // slot-seconds
	refCV2, refSumH      float64 // runtime alone in the empty cluster
	halfLoadShare        float64 // fewest jobs carrying half of the total size, as a fraction of the jobs
	minTasks, maxTasks   int
	maps, reduces        int
	reduceWorkShare      float64
	mapLoad, reduceLoad  float64 // work over (slots × span of the arrivals)
	reducesPerJobMin     int
	reducesPerJobMax     int
	under10MinJobsShare  float64
	tinyAndShortJobShare float64
	under10MinWorkShare  float64 // share of the work in jobs of under 10 minutes of work
	sitaP1WorkShare      float64 // share of the work in jobs under the workload's SITA cutoff
}

func cv2(xs []float64) float64 {
	m, s2 := 0.0, 0.0
	for _, x := range xs {
		m += x
	}
	m /= float64(len(xs))
	for _, x := range xs {
		s2 += (x - m) * (x - m)
	}
	return s2 / float64(len(xs)) / (m * m)
}

func measurePool(w *Workload) poolStats {
	st := poolStats{jobs: len(w.Jobs), minTasks: math.MaxInt, reducesPerJobMin: math.MaxInt}
	var sizes, refs []float64
	total, mapWork, span := 0.0, 0.0, 0.0
	for i := range w.Jobs {
		j := &w.Jobs[i]
		size := j.Size().Seconds()
		sizes = append(sizes, size)
		ref := AloneRuntime(j, w.Trackers*w.MapSlots, w.Trackers*w.ReduceSlots, w.Slowstart).Seconds()
		refs = append(refs, ref)
		st.refSumH += ref / 3600
		total += size
		for _, d := range j.Maps {
			mapWork += d.Seconds()
		}
		nt := len(j.Maps) + len(j.Reduces)
		st.minTasks, st.maxTasks = min(st.minTasks, nt), max(st.maxTasks, nt)
		st.maps += len(j.Maps)
		st.reduces += len(j.Reduces)
		st.reducesPerJobMin, st.reducesPerJobMax = min(st.reducesPerJobMin, len(j.Reduces)), max(st.reducesPerJobMax, len(j.Reduces))
		if size < 600 {
			st.tinyAndShortJobShare++
			st.under10MinWorkShare += size
		}
		span = max(span, j.Submit.Seconds())
	}
	st.tinyAndShortJobShare /= float64(len(w.Jobs))
	if c, err := time.ParseDuration(w.Conf["scheduler.sita.cutoffs"]); err == nil {
		for i := range w.Jobs {
			if s := w.Jobs[i].Size(); s <= c {
				st.sitaP1WorkShare += s.Seconds() / total
			}
		}
	}
	st.under10MinWorkShare /= total
	st.sizeMean = total / float64(len(w.Jobs))
	st.sizeCV2, st.refCV2 = cv2(sizes), cv2(refs)
	sort.Sort(sort.Reverse(sort.Float64Slice(sizes)))
	acc, k := 0.0, 0
	for acc < total/2 {
		acc += sizes[k]
		k++
	}
	st.halfLoadShare = float64(k) / float64(len(w.Jobs))
	st.reduceWorkShare = (total - mapWork) / total
	// the arrivals span n−1 inter-arrival times
	perJob := span / float64(len(w.Jobs)-1)
	st.mapLoad = mapWork / float64(len(w.Jobs)) / (perJob * float64(w.Trackers*w.MapSlots))
	st.reduceLoad = (total - mapWork) / float64(len(w.Jobs)) / (perJob * float64(w.Trackers*w.ReduceSlots))
	return st
}

// meanOver generates the workload with each seed and averages f.
func meanOver(t *testing.T, name string, seeds []uint64, f func(poolStats) float64) (mean float64, each []float64) {
	t.Helper()
	for _, s := range seeds {
		w, err := Generate(name, GenOptions{Seed: s})
		if err != nil {
			t.Fatal(err)
		}
		v := f(measurePool(w))
		each = append(each, v)
		mean += v / float64(len(seeds))
	}
	return mean, each
}

type statCheck struct {
	name     string
	f        func(poolStats) float64
	lo, hi   float64 // the mean over the seeds must be in [lo, hi]
	source   string
	eachSeed bool // and every seed's value too
}

func runStatChecks(t *testing.T, workload string, seeds []uint64, checks []statCheck) {
	t.Helper()
	pools := map[uint64]poolStats{}
	for _, s := range seeds {
		w, err := Generate(workload, GenOptions{Seed: s})
		if err != nil {
			t.Fatal(err)
		}
		pools[s] = measurePool(w)
	}
	for _, c := range checks {
		mean := 0.0
		var each []float64
		for _, s := range seeds {
			v := c.f(pools[s])
			each = append(each, v)
			mean += v / float64(len(seeds))
		}
		t.Logf("%s %s: mean %.4g, seeds %.4g (want [%g, %g]; %s)", workload, c.name, mean, each, c.lo, c.hi, c.source)
		if mean < c.lo || mean > c.hi {
			t.Errorf("%s %s: mean over seeds %v is %.4g, want [%g, %g] (%s)", workload, c.name, seeds, mean, c.lo, c.hi, c.source)
		}
		if c.eachSeed {
			for i, v := range each {
				if v < c.lo || v > c.hi {
					t.Errorf("%s %s: seed %d gives %.4g, want [%g, %g] (%s)", workload, c.name, seeds[i], v, c.lo, c.hi, c.source)
				}
			}
		}
	}
}

// TestTyrexWorkloadStatistics: the chapter 4 workloads have the
// statistics of Table 4.2 and §4.5-4.6.1 over several seeds: the load of
// 0.7 is the map slots' (most of the work is map work), reduces carry
// about a tenth of the work, sizes have Table 4.2's mean and squared CV,
// and more than 60% of the jobs are tiny or short.
func TestTyrexWorkloadStatistics(t *testing.T) {
	seeds := []uint64{1, 2, 3, 4, 5}
	table := map[string]struct{ mean, cv2, maps, reduces, runtimeH float64 }{
		"tyrex-hvw": {763, 20, 6139, 788, 3.51}, "tyrex-mvw": {1495, 10, 11866, 1368, 3.98}, "tyrex-lvw": {3683, 4, 30576, 3089, 5.31},
	}
	for name, tb := range table {
		t.Run(name, func(t *testing.T) {
			runStatChecks(t, name, seeds, []statCheck{
				{"map load", func(p poolStats) float64 { return p.mapLoad }, 0.63, 0.77, "§4.5: load 0.7, here of the map slots", false},
				{"reduce work share", func(p poolStats) float64 { return p.reduceWorkShare }, 0.07, 0.12, "our choice: reduces a tenth of the tasks, same durations", true},
				{"mean size / Table 4.2", func(p poolStats) float64 { return p.sizeMean / tb.mean }, 0.85, 1.15, "Table 4.2 CPU time / 300 jobs", false},
				{"size CV² / Table 4.2", func(p poolStats) float64 { return p.sizeCV2 / tb.cv2 }, 0.6, 1.4, "Table 4.2 squared CV", false},
				{"maps / Table 4.2", func(p poolStats) float64 { return float64(p.maps) / tb.maps }, 0.8, 1.2, "Table 4.2 total maps", false},
				{"reduces / Table 4.2", func(p poolStats) float64 { return float64(p.reduces) / tb.reduces }, 0.8, 1.25, "Table 4.2 total reduces", false},
				{"tiny and short jobs", func(p poolStats) float64 { return p.tinyAndShortJobShare }, 0.6, 1, "§4.5: more than 60% under 10 minutes", true},
				{"work share of jobs under 10 minutes", func(p poolStats) float64 { return p.under10MinWorkShare }, 0, 0.11, "§4.6.1, Fig. 4.5(b): at most 10% of the load", false},
				// Not matched (docs/policies.md, LVW): our jobs run 1.3-1.6
				// times longer alone than Table 4.2's sequential runs, which
				// include Hadoop's per-job overheads; the bounds pin our value.
				{"sum of reference runtimes / Table 4.2 total runtime", func(p poolStats) float64 { return p.refSumH / tb.runtimeH }, 1.2, 1.7, "Table 4.2 total runtime 3.51 / 3.98 / 5.31 h: not matched", false},
			})
		})
	}
}

// TestThesisFBStatistics: the chapter 5 pool has the statistics of
// §5.4.3 over several seeds.
func TestThesisFBStatistics(t *testing.T) {
	runStatChecks(t, "thesis-fb", []uint64{1, 2, 3, 4}, []statCheck{
		{"map load", func(p poolStats) float64 { return p.mapLoad }, 0.63, 0.77, "§5.5: load 0.7, here of the map slots", false},
		{"reference runtime CV²", func(p poolStats) float64 { return p.refCV2 }, 16.35 * 0.75, 16.35 * 1.25, "§5.4.3: 16.35", false},
		{"share of jobs carrying half the load", func(p poolStats) float64 { return p.halfLoadShare }, 0.05, 0.08, "§5.4.3: fewer than 8%", false},
		{"size CV²", func(p poolStats) float64 { return p.sizeCV2 }, 3.32 * 0.85, 3.32 * 1.15, "§5.4.3: 3.32", false},
		{"sum of reference runtimes [h]", func(p poolStats) float64 { return p.refSumH }, 51, 69, "§5.4.3: about 60 h", false},
		{"fewest tasks", func(p poolStats) float64 { return float64(p.minTasks) }, 1, 9, "§5.4.3: less than ten tasks", true},
		{"most tasks", func(p poolStats) float64 { return float64(p.maxTasks) }, 10001, math.Inf(1), "§5.4.3: more than 10,000 tasks", true},
		{"reduces per job", func(p poolStats) float64 { return float64(p.reducesPerJobMax) }, 1, 1, "our choice: one", true},
		{"work share under the workload's SITA cutoff", func(p poolStats) float64 { return p.sitaP1WorkShare }, 0.2, 0.4, "§5.5.1: 35% of the work completes in partition 1 (30% of the slots) at the tuned cutoff", true},
	})
}
