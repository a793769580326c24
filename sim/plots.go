package sim

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"path/filepath"
	"sort"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
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

// ColorOf is the colour of the i-th policy of a plot.
func ColorOf(i int) color.Color { return palette[i%len(palette)] }

// SavePlot writes p as SVG and PNG: base.svg and base.png.
func SavePlot(p *plot.Plot, w, h vg.Length, base string) error {
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
func SlowdownCDF(title string, results, sims []*Result) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "job slowdown (response / runtime alone)"
	p.Y.Label.Text = "fraction of jobs"
	p.Legend.Top = false
	p.Legend.Left = false
	lo, hi := math.Inf(1), 0.0
	for _, rs := range [][]*Result{results, sims} {
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
	add := func(r *Result, i int, dashed bool, label string) error {
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
		l.Color = ColorOf(i)
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
func SlowdownVsSize(title string, results, sims []*Result) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "job size [slot-s]"
	p.Y.Label.Text = "job slowdown"
	p.Legend.Top = true
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker, p.Y.Tick.Marker = plot.LogTicks{Prec: -1}, plot.LogTicks{Prec: -1}
	add := func(r *Result, i int, shape draw.GlyphDrawer, label string) error {
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
		s.GlyphStyle.Color = ColorOf(i)
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

// WriteSlowdownCDF draws the empirical CDF of job slowdown of each result
// as an SVG image (gonum/plot; a log-scaled slowdown axis when the
// slowdowns span more than a factor of 20).
func WriteSlowdownCDF(out io.Writer, title string, results []*Result) error {
	withMode := mixedModes(results)
	labelled := make([]*Result, len(results))
	for i, r := range results {
		c := *r
		c.Policy = r.Label(withMode)
		labelled[i] = &c
	}
	p, err := SlowdownCDF(title, labelled, nil)
	if err != nil {
		return err
	}
	wt, err := p.WriterTo(18*vg.Centimeter, 11*vg.Centimeter, "svg")
	if err != nil {
		return fmt.Errorf("slowdown CDF: %w", err)
	}
	if _, err := wt.WriteTo(out); err != nil {
		return fmt.Errorf("slowdown CDF: %w", err)
	}
	return nil
}

// WritePlots writes the plots of results of one workload into dir:
// slowdown-cdf and slowdown-vs-size, each as .svg and .png.
func WritePlots(dir, title string, results []*Result) error {
	withMode := mixedModes(results)
	labelled := make([]*Result, len(results))
	for i, r := range results {
		c := *r
		c.Policy = r.Label(withMode)
		labelled[i] = &c
	}
	p, err := SlowdownCDF("Job slowdown CDF, "+title, labelled, nil)
	if err != nil {
		return err
	}
	if err := SavePlot(p, 16*vg.Centimeter, 11*vg.Centimeter, filepath.Join(dir, "slowdown-cdf")); err != nil {
		return err
	}
	if p, err = SlowdownVsSize("Slowdown vs job size, "+title, labelled, nil); err != nil {
		return err
	}
	return SavePlot(p, 16*vg.Centimeter, 11*vg.Centimeter, filepath.Join(dir, "slowdown-vs-size"))
}
