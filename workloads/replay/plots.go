package replay

import (
	"fmt"
	"image/color"
	"math"
	"path/filepath"
	"sort"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"gomr/sim"
)

// palette colours the policies, in the order they were run.
var palette = []color.Color{
	color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
	color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
	color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff},
	color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff},
	color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff},
	color.RGBA{R: 0x8c, G: 0x56, B: 0x4b, A: 0xff},
	color.RGBA{R: 0xe3, G: 0x77, B: 0xc2, A: 0xff},
	color.RGBA{R: 0x7f, G: 0x7f, B: 0x7f, A: 0xff},
}

func colorOf(i int) color.Color { return palette[i%len(palette)] }

// save writes p as SVG and PNG: base.svg and base.png.
func save(p *plot.Plot, w, h vg.Length, base string) error {
	for _, ext := range []string{".svg", ".png"} {
		if err := p.Save(w, h, base+ext); err != nil {
			return fmt.Errorf("plot %s: %w", base+ext, err)
		}
	}
	return nil
}

// cdf returns the empirical CDF of xs as points (x, fraction <= x).
func cdf(xs []float64) plotter.XYs {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	pts := make(plotter.XYs, 0, 2*len(s))
	for i, x := range s {
		pts = append(pts, plotter.XY{X: x, Y: float64(i) / float64(len(s))}, plotter.XY{X: x, Y: float64(i+1) / float64(len(s))})
	}
	return pts
}

// SlowdownCDF plots the CDF of job slowdown of each result; sims, when
// given (same length), are drawn dashed in the same colour.
func SlowdownCDF(title string, results, sims []*sim.Result) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "job slowdown (response / runtime alone)"
	p.Y.Label.Text = "fraction of jobs"
	p.Legend.Top = false
	p.Legend.Left = false
	lo, hi := math.Inf(1), 0.0
	for _, rs := range [][]*sim.Result{results, sims} {
		for _, r := range rs {
			for _, j := range r.Jobs {
				lo, hi = math.Min(lo, j.Slowdown), math.Max(hi, j.Slowdown)
			}
		}
	}
	if lo > 0 && hi/lo > 20 {
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	}
	add := func(r *sim.Result, i int, dashed bool, label string) error {
		var xs []float64
		for _, j := range r.Jobs {
			xs = append(xs, math.Max(j.Slowdown, 1e-3))
		}
		if len(xs) == 0 {
			return nil
		}
		l, err := plotter.NewLine(cdf(xs))
		if err != nil {
			return err
		}
		l.Color = colorOf(i)
		l.Width = vg.Points(1.5)
		if dashed {
			l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		}
		p.Add(l)
		p.Legend.Add(label, l)
		return nil
	}
	for i, r := range results {
		label := r.Policy
		if sims != nil {
			label += " real"
		}
		if err := add(r, i, false, label); err != nil {
			return nil, err
		}
		if sims != nil {
			if err := add(sims[i], i, true, r.Policy+" sim"); err != nil {
				return nil, err
			}
		}
	}
	p.Add(plotter.NewGrid())
	return p, nil
}

// SlowdownVsSize plots each job's slowdown against its size (slot-time),
// real runs as filled circles and simulations as crosses.
func SlowdownVsSize(title string, results, sims []*sim.Result) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "job size [slot-s]"
	p.Y.Label.Text = "job slowdown"
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker, p.Y.Tick.Marker = plot.LogTicks{Prec: -1}, plot.LogTicks{Prec: -1}
	add := func(r *sim.Result, i int, shape draw.GlyphDrawer, label string) error {
		var pts plotter.XYs
		for _, j := range r.Jobs {
			pts = append(pts, plotter.XY{X: math.Max(j.Size, 1e-3), Y: math.Max(j.Slowdown, 1e-3)})
		}
		if len(pts) == 0 {
			return nil
		}
		s, err := plotter.NewScatter(pts)
		if err != nil {
			return err
		}
		s.GlyphStyle.Color = colorOf(i)
		s.GlyphStyle.Shape = shape
		s.GlyphStyle.Radius = vg.Points(3)
		p.Add(s)
		p.Legend.Add(label, s)
		return nil
	}
	for i, r := range results {
		label := r.Policy
		if sims != nil {
			label += " real"
		}
		if err := add(r, i, draw.CircleGlyph{}, label); err != nil {
			return nil, err
		}
		if sims != nil {
			if err := add(sims[i], i, draw.CrossGlyph{}, r.Policy+" sim"); err != nil {
				return nil, err
			}
		}
	}
	p.Add(plotter.NewGrid())
	return p, nil
}

// bar is one task attempt of a Gantt chart.
type bar struct {
	y, x0, x1 float64
	c         color.Color
}

// gantt is a plot.Plotter of horizontal bars.
type gantt struct {
	bars   []bar
	height float64 // in data units
}

// Plot draws the bars.
func (g *gantt) Plot(c draw.Canvas, p *plot.Plot) {
	tx, ty := p.Transforms(&c)
	for _, b := range g.bars {
		x0, x1 := tx(b.x0), tx(b.x1)
		if x1-x0 < vg.Points(0.5) {
			x1 = x0 + vg.Points(0.5)
		}
		y0, y1 := ty(b.y-g.height/2), ty(b.y+g.height/2)
		rect := c.ClipPolygonY([]vg.Point{{X: x0, Y: y0}, {X: x1, Y: y0}, {X: x1, Y: y1}, {X: x0, Y: y1}})
		c.FillPolygon(b.c, rect)
	}
}

// DataRange is the bars' extent.
func (g *gantt) DataRange() (xmin, xmax, ymin, ymax float64) {
	xmin, ymin = math.Inf(1), math.Inf(1)
	xmax, ymax = math.Inf(-1), math.Inf(-1)
	for _, b := range g.bars {
		xmin, xmax = math.Min(xmin, b.x0), math.Max(xmax, b.x1)
		ymin, ymax = math.Min(ymin, b.y-g.height), math.Max(ymax, b.y+g.height)
	}
	if len(g.bars) == 0 {
		return 0, 1, 0, 1
	}
	return
}

var (
	mapColor    = color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}
	reduceColor = color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff}
	failColor   = color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}
	waitColor   = color.RGBA{R: 0xcc, G: 0xcc, B: 0xcc, A: 0xff}
)

// Timeline is the Gantt chart of a real run: one row per job (in
// submission order, the first at the top), a grey bar from its submission
// to its end, and one bar per task attempt (maps blue, reduces orange,
// killed or failed attempts red), stacked within the row.
func Timeline(title string, run *Run) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "time since the first submission [s]"
	p.Y.Label.Text = "job (submission order)"
	g := &gantt{height: 0.9}
	attempts := &gantt{height: 0}
	n := len(run.Jobs)
	for i, jr := range run.Jobs {
		if jr.History == nil {
			continue
		}
		y := float64(n - i)
		h := jr.History
		g.bars = append(g.bars, bar{y: y, x0: h.Job.Submit.Sub(run.Start).Seconds(), x1: h.Job.Finish.Sub(run.Start).Seconds(), c: waitColor})
		k := len(h.Attempts)
		for a, at := range h.Attempts {
			c := mapColor
			if at.TaskType == "r" {
				c = reduceColor
			}
			if at.State != "SUCCEEDED" {
				c = failColor
			}
			off := 0.8*(float64(a)+0.5)/float64(k) - 0.4
			attempts.bars = append(attempts.bars, bar{y: y + off, x0: at.Start.Sub(run.Start).Seconds(), x1: at.Finish.Sub(run.Start).Seconds(), c: c})
		}
		attempts.height = math.Max(attempts.height, 0.8/float64(max(k, 1))*0.8)
	}
	p.Add(g, attempts)
	p.Y.Tick.Marker = plot.ConstantTicks(nil)
	p.Add(plotter.NewGrid())
	return p
}

// occupancy returns the number of attempts of a type running over time
// (a step function).
func occupancy(run *Run, typ string) plotter.XYs {
	type ev struct {
		t float64
		d int
	}
	var evs []ev
	for _, jr := range run.Jobs {
		if jr.History == nil {
			continue
		}
		for _, a := range jr.History.Attempts {
			if a.TaskType == typ {
				evs = append(evs, ev{a.Start.Sub(run.Start).Seconds(), 1}, ev{a.Finish.Sub(run.Start).Seconds(), -1})
			}
		}
	}
	sort.Slice(evs, func(a, b int) bool {
		if evs[a].t != evs[b].t {
			return evs[a].t < evs[b].t
		}
		return evs[a].d < evs[b].d
	})
	pts := plotter.XYs{{X: 0, Y: 0}}
	n := 0
	for _, e := range evs {
		pts = append(pts, plotter.XY{X: e.t, Y: float64(n)})
		n += e.d
		pts = append(pts, plotter.XY{X: e.t, Y: float64(n)})
	}
	return pts
}

// Occupancy plots the map and reduce slots in use over time of each real
// run (maps solid, reduces dashed), against the cluster's slots.
func Occupancy(title string, runs []PolicyRun, mapSlots, reduceSlots int) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "time since the first submission [s]"
	p.Y.Label.Text = "slots in use"
	for i, r := range runs {
		for _, typ := range []string{"m", "r"} {
			l, err := plotter.NewLine(occupancy(r.Run, typ))
			if err != nil {
				return nil, err
			}
			l.Color = colorOf(i)
			l.Width = vg.Points(1.2)
			name := r.Policy + " maps"
			if typ == "r" {
				l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
				name = r.Policy + " reduces"
			}
			p.Add(l)
			p.Legend.Add(name, l)
		}
	}
	for _, lim := range []int{mapSlots, reduceSlots} {
		fn := plotter.NewFunction(func(float64) float64 { return float64(lim) })
		fn.Color = color.Gray{Y: 0x80}
		fn.Dashes = []vg.Length{vg.Points(1), vg.Points(2)}
		p.Add(fn)
	}
	p.Y.Min = 0
	p.Y.Max = float64(max(mapSlots, reduceSlots)) + 0.5
	p.Legend.Top = true
	p.Add(plotter.NewGrid())
	return p, nil
}

// WritePlots writes the comparison's plots into dir, per seed:
// slowdown-cdf-seed<N>, slowdown-vs-size-seed<N>, occupancy-seed<N>, and
// per run timeline-<policy>-seed<N> (each as .svg and .png).
func (c *Comparison) WritePlots(dir string) error {
	for _, seed := range c.seeds() {
		runs := c.runsOf(seed)
		var real, sims []*sim.Result
		for _, r := range runs {
			real, sims = append(real, r.Real), append(sims, r.Sim)
		}
		suffix := fmt.Sprintf("seed%d", seed)
		p, err := SlowdownCDF(fmt.Sprintf("Job slowdown CDF, %s (%s): real solid, simulated dashed", c.Trace, suffix), real, sims)
		if err != nil {
			return err
		}
		if err := save(p, 16*vg.Centimeter, 11*vg.Centimeter, filepath.Join(dir, "slowdown-cdf-"+suffix)); err != nil {
			return err
		}
		if p, err = SlowdownVsSize(fmt.Sprintf("Slowdown vs job size, %s (%s)", c.Trace, suffix), real, sims); err != nil {
			return err
		}
		if err := save(p, 16*vg.Centimeter, 11*vg.Centimeter, filepath.Join(dir, "slowdown-vs-size-"+suffix)); err != nil {
			return err
		}
		if p, err = Occupancy(fmt.Sprintf("Slot occupancy, %s (%s), real runs", c.Trace, suffix), runs, c.Trackers*c.MapSlots, c.Trackers*c.ReduceSlots); err != nil {
			return err
		}
		if err := save(p, 18*vg.Centimeter, 10*vg.Centimeter, filepath.Join(dir, "occupancy-"+suffix)); err != nil {
			return err
		}
		for _, r := range runs {
			h := vg.Length(4+0.5*float64(len(r.Run.Jobs))) * vg.Centimeter
			p := Timeline(fmt.Sprintf("Timeline, %s, %s (%s)", c.Trace, r.Policy, suffix), r.Run)
			if err := save(p, 20*vg.Centimeter, min(h, 60*vg.Centimeter), filepath.Join(dir, fmt.Sprintf("timeline-%s-%s", r.Policy, suffix))); err != nil {
				return err
			}
		}
	}
	return nil
}
