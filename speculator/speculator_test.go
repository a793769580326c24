package speculator

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

func at(s float64) time.Time { return t0.Add(seconds(s)) }

func secs(s float64) time.Duration { return seconds(s) }

// thesisParams are the thesis's constants (§3.3, §7.2): beta 1.2, t_vm
// 15 s, B_copy 40 MB/s, with no image term (the thesis has none), and
// clone speculation on.
func thesisParams() Params {
	p := DefaultParams()
	p.CloneEnabled = true
	p.Estimator.Beta = 1.2
	p.Estimator.TVM = 15 * time.Second
	p.Estimator.ImageBps = 1e18
	p.Estimator.CopyBps = 40e6
	return p
}

// running is an attempt started at 0 that reported progress p at time
// now, on tracker tt, with CRIU and a file set of fsBytes.
func running(id, tt string, p, now float64, fsBytes int64) AttemptView {
	return AttemptView{
		ID: id, Tracker: tt, Start: t0, Progress: p, ReportAt: at(now),
		FileSetBytes: fsBytes, RSSBytes: 1, CRIU: true,
	}
}

// mapJob is a job of total maps, finished of which took mean seconds each,
// with the given running map tasks.
func mapJob(total, finished int, mean float64, tasks ...TaskView) *JobView {
	j := &JobView{ID: "job_1", Map: TypeView{Total: total, Tasks: tasks}}
	for range finished {
		j.Map.Finished = append(j.Map.Finished, secs(mean))
	}
	return j
}

func task(id string, as ...AttemptView) TaskView {
	return TaskView{ID: id, Attempts: as}
}

// TestWorkedCases follows spec §3.3: a map task under per-spill shuffle
// with f_clone = 400 MB costs 1.2 × (15 s + 400 MB / 40 MB/s) = 30 s to
// clone; with a mean map runtime of 120 s a clone wins once p > 0.25.
func TestWorkedCases(t *testing.T) {
	cases := []struct {
		name     string
		p        float64
		now      float64
		fs       int64
		criu     bool
		beta     float64
		status   Status
		kind     Kind
		score    time.Duration
		cloneEnd time.Duration // relative to now; 0 = not checked
	}{
		// estEnd = 200/0.5 = 400; fresh 320; clone 30 + 60 = 90 -> 290.
		{"late straggler cloned", 0.5, 200, 400e6, true, 1.2, Candidate, Clone, secs(110), secs(90)},
		// estEnd 1000; fresh 320; clone 30 + 96 = 126 -> 326.
		{"early straggler fresh", 0.2, 200, 400e6, true, 1.2, Candidate, Fresh, secs(680), secs(126)},
		// p = 0.25: clone 30 + 90 = 120 = fresh: a tie goes to fresh.
		{"tie goes to fresh", 0.25, 200, 400e6, true, 1.2, Candidate, Fresh, secs(480), secs(120)},
		{"CRIU unavailable: fresh only", 0.5, 200, 400e6, false, 1.2, Candidate, Fresh, secs(80), 0},
		// beta: clone cost beta × 25 s against p × mean = 0.3 × 120 = 36 s.
		{"beta 1.0 clones", 0.3, 200, 400e6, true, 1.0, Candidate, Clone, secs(200/0.3 - 200 - 109), secs(109)},
		{"beta 1.2 clones", 0.3, 200, 400e6, true, 1.2, Candidate, Clone, secs(200/0.3 - 200 - 114), secs(114)},
		{"beta 1.6 fresh", 0.3, 200, 400e6, true, 1.6, Candidate, Fresh, secs(200/0.3 - 200 - 120), secs(124)},
		{"beta 1.5 fresh", 0.3, 200, 400e6, true, 1.5, Candidate, Fresh, secs(200/0.3 - 200 - 120), secs(121.5)},
		// Stock-Hadoop map, f_clone 2 GB: 1.2 × (15 + 51.2) = 79.44 s.
		{"big file set fresh", 0.5, 200, 2048e6, true, 1.2, Candidate, Fresh, secs(80), secs(139.44)},
		{"big file set late clone", 0.7, 400, 2048e6, true, 1.2, Candidate, Clone, secs(400/0.7 - 400 - 115.44), secs(115.44)},
		// estEnd 200/0.9 = 222 < fresh 320.
		{"near completion too late", 0.9, 200, 400e6, true, 1.2, TooLate, Clone, secs(200/0.9 - 200 - 42), secs(42)},
		// reported at 135 s: estEnd 136.4 < now 140: progress is good.
		{"progress is good", 0.99, 135, 400e6, true, 1.2, ProgressIsGood, Fresh, 0, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := thesisParams()
			p.Estimator.Beta = c.beta
			s := New(p)
			a := running("a0", "tt1", c.p, c.now, c.fs)
			a.CRIU = c.criu
			j := mapJob(100, 50, 120, task("m7", a))
			now := at(c.now)
			if c.status == ProgressIsGood {
				now = at(140)
			}
			ev := s.Evaluate(now, j, Map, &j.Map.Tasks[0])
			if ev.Status != c.status {
				t.Fatalf("status %v, want %v (%s)", ev.Status, c.status, ev.Explanation)
			}
			if c.status == ProgressIsGood {
				return
			}
			x := ev.Explanation
			if x.Kind != c.kind {
				t.Errorf("kind %v, want %v (%s)", x.Kind, c.kind, x)
			}
			if d := ev.Score - c.score; d < -time.Millisecond || d > time.Millisecond {
				t.Errorf("score %v, want %v", ev.Score, c.score)
			}
			if x.MeanRuntime != secs(120) || !x.FreshEnd.Equal(now.Add(secs(120))) {
				t.Errorf("fresh estimate %v / %v, want mean 120s", x.MeanRuntime, x.FreshEnd)
			}
			if c.cloneEnd != 0 {
				if !x.CloneConsidered {
					t.Fatalf("clone not considered: %s", x.CloneNote)
				}
				if d := x.CloneEnd.Sub(now) - c.cloneEnd; d < -time.Millisecond || d > time.Millisecond {
					t.Errorf("clone end in %v, want %v", x.CloneEnd.Sub(now), c.cloneEnd)
				}
			}
			if !c.criu {
				if x.CloneConsidered || !strings.Contains(x.CloneNote, "cannot be cloned on tracker tt1") {
					t.Errorf("clone considered without CRIU: %+v", x)
				}
			}
			if c.status == Candidate {
				ds := s.Scan(now, j, "")
				if len(ds) != 1 || ds[0].Kind != c.kind || ds[0].TaskID != "m7" || ds[0].Source != "a0" || ds[0].AvoidTracker != "tt1" {
					t.Errorf("scan = %+v, want one %v decision for m7/a0 avoiding tt1", ds, c.kind)
				}
			}
		})
	}
}

// TestSmallTasksNeverCloned: with the thesis constants a 20 s map task
// (clone cost 1.2 × (15 s + 40 MB / 40 MB/s) = 19.2 s) is only worth
// cloning past p = 0.96, so every straggler below gets a fresh attempt.
func TestSmallTasksNeverCloned(t *testing.T) {
	s := New(thesisParams())
	for _, p := range []float64{0.05, 0.1, 0.3, 0.5, 0.7, 0.9, 0.95} {
		j := mapJob(100, 50, 20, task("m1", running("a0", "tt1", p, 500, 40e6)))
		ds := s.Scan(at(500), j, "")
		if len(ds) != 1 {
			t.Fatalf("p=%g: %d decisions, want 1", p, len(ds))
		}
		if ds[0].Kind != Fresh {
			t.Errorf("p=%g: chose %v: %s", p, ds[0].Kind, ds[0].Explanation)
		}
	}
}

func TestGateOnFinishedTasks(t *testing.T) {
	cases := []struct {
		total, finished int
		speculated      bool
		want            Status
	}{
		{100, 0, false, OnSchedule},
		{100, 4, false, OnSchedule}, // 4% < 5%
		{100, 4, true, OnSchedule},  // gate applied after the attempt checks
		{100, 5, false, Candidate},
		{10, 0, false, OnSchedule},
		{10, 1, false, Candidate}, // max(1, 5%) = 1
	}
	for _, c := range cases {
		s := New(thesisParams())
		tk := task("m1", running("a0", "tt1", 0.2, 200, 400e6))
		tk.Speculated = c.speculated
		j := mapJob(c.total, c.finished, 120, tk)
		ev := s.Evaluate(at(200), j, Map, &j.Map.Tasks[0])
		if ev.Status != c.want {
			t.Errorf("%d/%d finished (speculated %v): %v, want %v", c.finished, c.total, c.speculated, ev.Status, c.want)
		}
		ds := s.Scan(at(200), j, "")
		if (len(ds) == 1) != (c.want == Candidate) {
			t.Errorf("%d/%d finished: %d decisions", c.finished, c.total, len(ds))
		}
	}
}

func TestStatuses(t *testing.T) {
	base := running("a0", "tt1", 0.5, 200, 400e6)
	noReport := base
	noReport.ReportAt = time.Time{}
	noReport.Progress = 0
	notStarted := base
	notStarted.Start = at(300)
	cases := []struct {
		name string
		tk   TaskView
		now  float64
		want Status
	}{
		{"not running", task("m1"), 200, NotRunning},
		{"two live attempts", task("m1", base, running("a1", "tt2", 0.1, 200, 0)), 200, AlreadySpeculating},
		{"speculative pending", TaskView{ID: "m1", Attempts: []AttemptView{base}, SpeculativePending: true}, 200, AlreadySpeculating},
		{"too new", task("m1", notStarted), 200, TooNew},
		{"no report yet", task("m1", noReport), 5, ProgressIsGood},
		{"candidate", task("m1", base), 200, Candidate},
	}
	s := New(thesisParams())
	for _, c := range cases {
		j := mapJob(100, 50, 120, c.tk)
		if got := s.Evaluate(at(c.now), j, Map, &j.Map.Tasks[0]).Status; got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// TestStagnation: an attempt at p = 0.5 reported at 10 s (start 0) is on
// time at 30 s; once its progress has been still for more than 9 s it is
// estimated as if it had reported p = 0.5 now: 60 s, against a fresh
// attempt ending at 30 + 25 = 55 s. Stagnation is suspended while cloned.
func TestStagnation(t *testing.T) {
	cases := []struct {
		name       string
		changed    float64
		cloning    bool
		stagnation time.Duration
		want       Status
		score      time.Duration
	}{
		{"stalled", 10, false, 9 * time.Second, Candidate, 5 * time.Second},
		{"recent change", 25, false, 9 * time.Second, ProgressIsGood, 0},
		{"being cloned", 10, true, 9 * time.Second, ProgressIsGood, 0},
		{"rule off", 10, false, 0, ProgressIsGood, 0},
	}
	for _, c := range cases {
		p := thesisParams()
		p.Stagnation = c.stagnation
		s := New(p)
		a := running("a0", "tt1", 0.5, 10, 0)
		a.ProgressChangedAt = at(c.changed)
		a.BeingCloned = c.cloning
		j := mapJob(100, 50, 25, task("m1", a))
		ev := s.Evaluate(at(30), j, Map, &j.Map.Tasks[0])
		if ev.Status != c.want || (c.want == Candidate && ev.Score != c.score) {
			t.Errorf("%s: %v score %v, want %v score %v", c.name, ev.Status, ev.Score, c.want, c.score)
		}
	}
}

// TestCloneEstimate: a clone that started at p0 = 0.5 and is at 0.6 after
// 10 s is estimated at 10 × 0.5 / 0.1 = 50 s (§3.7), not 10 / 0.6.
func TestCloneEstimate(t *testing.T) {
	s := New(thesisParams())
	a := running("a1", "tt2", 0.6, 10, 0)
	a.StartProgress = 0.5
	j := mapJob(100, 50, 20, task("m1", a))
	ev := s.Evaluate(at(10), j, Map, &j.Map.Tasks[0])
	if ev.Status != Candidate || !ev.Explanation.EstimatedEnd.Equal(at(50)) {
		t.Errorf("got %v, estimated end %v, want candidate ending at 50s", ev.Status, ev.Explanation.EstimatedEnd.Sub(t0))
	}
}

func TestSlowTaskThreshold(t *testing.T) {
	// Finished 100 s and 140 s: mean 120, std 20. The attempt (p = 0.1
	// at 13.5 s) is estimated at 135 s, ending 1.5 s after a fresh one.
	cases := []struct {
		apply bool
		k     float64
		want  Status
	}{
		{false, 1, Candidate}, // Hadoop: the threshold is not compared
		{true, 1, BelowThreshold},
		{true, 0.5, Candidate}, // 135 > 120 + 10
	}
	for _, c := range cases {
		p := thesisParams()
		p.ApplyThreshold, p.SlowTaskThreshold = c.apply, c.k
		s := New(p)
		j := &JobView{ID: "j", Map: TypeView{Total: 10, Finished: []time.Duration{secs(100), secs(140)},
			Tasks: []TaskView{task("m1", running("a0", "tt1", 0.1, 13.5, 0))}}}
		ev := s.Evaluate(at(13.5), j, Map, &j.Map.Tasks[0])
		if ev.Status != c.want {
			t.Errorf("apply %v k %g: %v, want %v", c.apply, c.k, ev.Status, c.want)
		}
		if ev.Score != 1500*time.Millisecond {
			t.Errorf("apply %v k %g: score %v, want 1.5s", c.apply, c.k, ev.Score)
		}
	}
}

// TestCaps: allowed = max(10, int(0.01 × tasks), int(0.1 × running));
// a scan speculates only while allowed > already speculating.
func TestCaps(t *testing.T) {
	cases := []struct {
		name                  string
		total, already, other int
		capTotal              float64
		want                  int
	}{
		{"below floor", 20, 9, 0, 0.01, 1},
		{"at floor", 20, 10, 0, 0.01, 0},
		// 10 speculating + 1 candidate + 99 others = 110 running -> 11.
		{"running fraction lifts cap", 200, 10, 99, 0.01, 1},
		{"running fraction at cap", 200, 11, 98, 0.01, 0},
		// thesis cap-total 1.0 with 20 tasks -> 20 allowed.
		{"thesis total cap", 20, 15, 0, 1.0, 1},
	}
	for _, c := range cases {
		p := thesisParams()
		p.CapTotal = c.capTotal
		s := New(p)
		var tasks []TaskView
		for i := range c.already {
			tasks = append(tasks, task(fmt.Sprintf("s%d", i), running("a0", "tt1", 0.1, 200, 0), running("a1", "tt2", 0.1, 200, 0)))
		}
		for i := range c.other { // on time
			tasks = append(tasks, task(fmt.Sprintf("o%d", i), running("a0", "tt1", 0.99, 200, 0)))
		}
		tasks = append(tasks, task("cand", running("a0", "tt1", 0.2, 200, 400e6)))
		j := mapJob(c.total, c.total/2, 120, tasks...)
		ds := s.Scan(at(200), j, "")
		if len(ds) != c.want {
			t.Errorf("%s: %d decisions, want %d", c.name, len(ds), c.want)
		}
	}
}

// TestOnePerTypePerScan: several candidates give one decision per type,
// the largest gain, and never on the target tracker the original runs on.
func TestOnePerTypePerScan(t *testing.T) {
	j := mapJob(100, 50, 120,
		task("m1", running("a0", "tt1", 0.5, 200, 400e6)), // gain 110 (clone)
		task("m2", running("a0", "tt2", 0.2, 200, 400e6)), // gain 680 (fresh)
		task("m3", running("a0", "tt3", 0.3, 200, 400e6)), // gain 200/0.3-200-114
	)
	j.Reduce = TypeView{Total: 10, Finished: []time.Duration{secs(60)},
		Tasks: []TaskView{task("r1", running("a0", "tt2", 0.5, 100, 0))}}
	cases := []struct {
		target       string
		mapTask, src string
		avoid        string
		reduces      int
	}{
		{"", "m2", "a0", "tt2", 1},
		{"tt2", "m3", "a0", "tt3", 0}, // m2 and r1 run on tt2
		{"tt3", "m2", "a0", "tt2", 1},
	}
	for _, c := range cases {
		s := New(thesisParams())
		ds := s.Scan(at(200), j, c.target)
		if len(ds) != 1+c.reduces {
			t.Fatalf("target %q: %d decisions, want %d: %+v", c.target, len(ds), 1+c.reduces, ds)
		}
		d := ds[0]
		if d.Type != Map || d.TaskID != c.mapTask || d.AvoidTracker != c.avoid || d.JobID != "job_1" {
			t.Errorf("target %q: %+v, want map %s avoiding %s", c.target, d, c.mapTask, c.avoid)
		}
		if d.AvoidTracker == c.target {
			t.Errorf("target %q: speculated beside the original", c.target)
		}
		if c.reduces == 1 && (ds[1].Type != Reduce || ds[1].TaskID != "r1") {
			t.Errorf("target %q: reduce decision %+v", c.target, ds[1])
		}
	}
}

func TestSwitchesAndPending(t *testing.T) {
	mk := func() *JobView {
		j := mapJob(100, 50, 120, task("m1", running("a0", "tt1", 0.2, 200, 0)))
		j.Reduce = TypeView{Total: 10, Finished: []time.Duration{secs(60)},
			Tasks: []TaskView{task("r1", running("a0", "tt2", 0.5, 100, 0))}}
		return j
	}
	cases := []struct {
		name                 string
		maps, reduces        bool
		pendingMaps          int
		wantMaps, wantReduce int
	}{
		{"both", true, true, 0, 1, 1},
		{"maps off", false, true, 0, 0, 1},
		{"reduces off", true, false, 0, 1, 0},
		{"pending maps first", true, true, 1, 0, 1},
	}
	for _, c := range cases {
		p := thesisParams()
		p.MapSpeculative, p.ReduceSpeculative = c.maps, c.reduces
		s := New(p)
		j := mk()
		j.Map.Pending = c.pendingMaps
		var m, r int
		for _, d := range s.Scan(at(200), j, "") {
			if d.Type == Map {
				m++
			} else {
				r++
			}
		}
		if m != c.wantMaps || r != c.wantReduce {
			t.Errorf("%s: %d map / %d reduce decisions, want %d / %d", c.name, m, r, c.wantMaps, c.wantReduce)
		}
	}
}

func TestCloneObstacles(t *testing.T) {
	cases := []struct {
		name   string
		change func(p *Params, a *AttemptView)
		note   string
	}{
		{"disabled", func(p *Params, a *AttemptView) { p.CloneEnabled = false }, "clone speculation disabled"},
		{"no CRIU", func(p *Params, a *AttemptView) { a.CRIU = false }, "cannot be cloned on tracker tt1"},
		{"committing", func(p *Params, a *AttemptView) { a.CommitPending = true }, "committing"},
		{"unknown image", func(p *Params, a *AttemptView) { a.RSSBytes = 0 }, "image size is unknown"},
	}
	for _, c := range cases {
		p := thesisParams()
		a := running("a0", "tt1", 0.5, 200, 400e6)
		c.change(&p, &a)
		s := New(p)
		j := mapJob(100, 50, 120, task("m1", a))
		ds := s.Scan(at(200), j, "")
		if len(ds) != 1 || ds[0].Kind != Fresh || ds[0].Explanation.CloneConsidered ||
			!strings.Contains(ds[0].Explanation.CloneNote, c.note) {
			t.Errorf("%s: %+v", c.name, ds)
		}
		if !strings.Contains(ds[0].Explanation.String(), "no clone: ") {
			t.Errorf("%s: explanation %q", c.name, ds[0].Explanation)
		}
	}
}

// TestMeasuredClonesChangeDecision: with the real priors a 100 MB-image
// map clone is cheap; after measured clones that took 10 s to copy a
// 10 MB file set, a fresh attempt wins.
func TestMeasuredClonesChangeDecision(t *testing.T) {
	p := DefaultParams()
	p.CloneEnabled = true
	p.Estimator.Smoothing = 1
	s := New(p)
	a := running("a0", "tt1", 0.3, 60, 10e6)
	a.RSSBytes = 100e6
	j := mapJob(100, 50, 20, task("m1", a))
	ds := s.Scan(at(60), j, "")
	if len(ds) != 1 || ds[0].Kind != Clone {
		t.Fatalf("with priors: %+v, want a clone", ds)
	}
	if err := s.RecordClone(CloneMeasurement{ImageBytes: 100e6, Dump: 130 * time.Millisecond, Restore: 120 * time.Millisecond,
		TransferBytes: 10e6, Transfer: 10 * time.Second}); err != nil {
		t.Fatal(err)
	}
	ds = s.Scan(at(60), j, "")
	if len(ds) != 1 || ds[0].Kind != Fresh {
		t.Fatalf("after a slow clone: %+v, want fresh", ds)
	}
	if got := ds[0].Explanation.Cost.CopyBps; got != 1e6 {
		t.Errorf("copy bandwidth %g, want 1e6", got)
	}
	if !strings.Contains(ds[0].Explanation.String(), "clone in ") {
		t.Errorf("explanation %q", ds[0].Explanation)
	}
	if err := s.RecordClone(CloneMeasurement{Dump: -1}); err == nil {
		t.Error("negative dump time accepted")
	}
}

func TestNextScanAfter(t *testing.T) {
	s := New(DefaultParams())
	cases := []struct {
		launched bool
		scan     time.Duration
		want     time.Duration
	}{
		{false, 0, time.Second},
		{true, 0, 15 * time.Second},
		{false, 3 * time.Second, 3 * time.Second},
		{true, 20 * time.Second, 20 * time.Second},
	}
	for _, c := range cases {
		if got := s.NextScanAfter(c.launched, c.scan); got != c.want {
			t.Errorf("NextScanAfter(%v, %v) = %v, want %v", c.launched, c.scan, got, c.want)
		}
	}
}

func TestSmoothRate(t *testing.T) {
	lambda := 10 * time.Second
	tests := []struct {
		name          string
		rate, prevP   float64
		prevT         float64
		p, t          float64
		want          float64
		zeroPrevTime  bool
		zeroLambdaArg bool
	}{
		{"first read taken as is", 0, 0, 0, 0.2, 2, 0.1, false, false},
		// w = exp(-1/10) = 0.905: 0.1·0.905 + 0.02·0.095
		{"slower read pulls the rate down", 0.1, 0.5, 5, 0.52, 6, 0.1*math.Exp(-0.1) + 0.02*(1-math.Exp(-0.1)), false, false},
		// a long gap forgets the old rate: w = exp(-10) ≈ 0
		{"long gap forgets", 0.1, 0.5, 5, 0.6, 105, 0.1*math.Exp(-10) + 0.001*(1-math.Exp(-10)), false, false},
		{"no progress decays", 0.1, 0.5, 5, 0.5, 6, 0.1 * math.Exp(-0.1), false, false},
		{"time not moving keeps it", 0.1, 0.5, 5, 0.6, 5, 0.1, false, false},
		{"no previous report keeps it", 0.1, 0, 0, 0.6, 5, 0.1, true, false},
		{"no lambda keeps it", 0.1, 0.5, 5, 0.6, 6, 0.1, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prev, l := at(tt.prevT), lambda
			if tt.zeroPrevTime {
				prev = time.Time{}
			}
			if tt.zeroLambdaArg {
				l = 0
			}
			if got := SmoothRate(tt.rate, tt.prevP, prev, tt.p, at(tt.t), l); math.Abs(got-tt.want) > 1e-12 {
				t.Errorf("SmoothRate = %.6g, want %.6g", got, tt.want)
			}
		})
	}
}

// TestSmoothedEstimatorSeesLateSlowdown: a reduce that went through its
// shuffle quickly and crawls in its reduce phase. The legacy estimate
// (elapsed over progress) still sees it ending soon; the smoothed rate of
// its recent reports sees the crawl, and a clone, which continues from its
// progress, wins.
func TestSmoothedEstimatorSeesLateSlowdown(t *testing.T) {
	// started at 0, p = 0.8 at 8 s, recent rate 0.02/s (0.2 left: 10 s more)
	a := running("a", "tt1", 0.8, 8, 0)
	a.Rate = 0.02
	j := &JobView{ID: "job_1", Reduce: TypeView{Total: 2, Finished: []time.Duration{secs(6)}, Tasks: []TaskView{task("r1", a)}}}
	for _, tt := range []struct {
		estimator string
		estEnd    time.Time // legacy: 8/0.8 = 10 s; smoothed: 8 + 0.2/0.02 = 18 s
	}{
		{EstimatorLegacy, at(10)},
		{EstimatorSmoothed, at(18)},
	} {
		p := DefaultParams()
		p.CloneEnabled = true
		p.RuntimeEstimator = tt.estimator
		ev := New(p).Evaluate(at(8), j, Reduce, &j.Reduce.Tasks[0])
		if got := ev.Explanation.EstimatedEnd; !got.Equal(tt.estEnd) {
			t.Errorf("%s: estimated end %v, want %v", tt.estimator, got.Sub(t0), tt.estEnd.Sub(t0))
		}
		// a clone ends at 8 + cost (about 0.17 s) + 0.2 × 6 s = 9.4 s: a
		// candidate either way, worth 8.6 s under the smoothed estimate
		if ev.Status != Candidate || ev.Explanation.Kind != Clone {
			t.Errorf("%s: status %v kind %v, want a clone candidate", tt.estimator, ev.Status, ev.Explanation.Kind)
		}
		if want := tt.estEnd.Sub(ev.Explanation.CloneEnd); ev.Score != want {
			t.Errorf("%s: score %v, want %v", tt.estimator, ev.Score, want)
		}
	}
}

// TestNoOtherTracker: when no tracker but the original's could run a fresh
// attempt, only a clone is considered, and nothing is decided while the
// attempt cannot be cloned (the task is judged again at the next scan).
func TestNoOtherTracker(t *testing.T) {
	cases := []struct {
		name   string
		p, now float64
		fs     int64
		criu   bool
		status Status
		kind   Kind
	}{
		// With another tracker this is "early straggler fresh": fresh 320
		// against clone 326; alone, the clone is the only option.
		{"clone though fresh would win", 0.2, 200, 400e6, true, Candidate, Clone},
		{"late straggler cloned", 0.5, 200, 400e6, true, Candidate, Clone},
		{"not cloneable now: nothing", 0.5, 200, 400e6, false, NowhereToRun, Fresh},
		// estEnd 222 against clone 242.
		{"clone too late", 0.9, 200, 400e6, true, TooLate, Clone},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := New(thesisParams())
			a := running("a0", "tt1", c.p, c.now, c.fs)
			a.CRIU, a.NoOtherTracker = c.criu, true
			j := mapJob(100, 50, 120, task("m7", a))
			now := at(c.now)
			ev := s.Evaluate(now, j, Map, &j.Map.Tasks[0])
			x := ev.Explanation
			if ev.Status != c.status || x.Kind != c.kind {
				t.Fatalf("status %v kind %v, want %v %v (%s)", ev.Status, x.Kind, c.status, c.kind, x)
			}
			if want := "(mean runtime), but no tracker other than tt1 could run it"; !strings.Contains(x.String(), want) {
				t.Errorf("explanation %q does not say %q", x, want)
			}
			ds := s.Scan(now, j, "")
			if c.status != Candidate {
				if len(ds) != 0 {
					t.Errorf("scan decided %+v", ds)
				}
				return
			}
			if len(ds) != 1 || ds[0].Kind != Clone || ds[0].Source != "a0" {
				t.Errorf("scan = %+v, want one clone of a0", ds)
			}
		})
	}
}
