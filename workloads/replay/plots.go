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
			l.Color = sim.ColorOf(i)
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
		p, err := sim.SlowdownCDF(fmt.Sprintf("Job slowdown CDF, %s (%s): real solid, simulated dashed", c.Trace, suffix), real, sims)
		if err != nil {
			return err
		}
		if err := sim.SavePlot(p, 16*vg.Centimeter, 11*vg.Centimeter, filepath.Join(dir, "slowdown-cdf-"+suffix)); err != nil {
			return err
		}
		if p, err = sim.SlowdownVsSize(fmt.Sprintf("Slowdown vs job size, %s (%s)", c.Trace, suffix), real, sims); err != nil {
			return err
		}
		if err := sim.SavePlot(p, 16*vg.Centimeter, 11*vg.Centimeter, filepath.Join(dir, "slowdown-vs-size-"+suffix)); err != nil {
			return err
		}
		if p, err = Occupancy(fmt.Sprintf("Slot occupancy, %s (%s), real runs", c.Trace, suffix), runs, c.Trackers*c.MapSlots, c.Trackers*c.ReduceSlots); err != nil {
			return err
		}
		if err := sim.SavePlot(p, 18*vg.Centimeter, 10*vg.Centimeter, filepath.Join(dir, "occupancy-"+suffix)); err != nil {
			return err
		}
		for _, r := range runs {
			h := vg.Length(4+0.5*float64(len(r.Run.Jobs))) * vg.Centimeter
			p := Timeline(fmt.Sprintf("Timeline, %s, %s (%s)", c.Trace, r.Policy, suffix), r.Run)
			if err := sim.SavePlot(p, 20*vg.Centimeter, min(h, 60*vg.Centimeter), filepath.Join(dir, fmt.Sprintf("timeline-%s-%s", r.Policy, suffix))); err != nil {
				return err
			}
		}
	}
	return nil
}
