package sim

import (
	"fmt"
	"html"
	"io"
	"math"
	"sort"
	"strings"
)

// WriteSlowdownCDF draws the empirical CDF of job slowdown of each result
// as an SVG image (log-scaled slowdown axis). It is hand-written: no
// plotting library is among the module's dependencies.
func WriteSlowdownCDF(out io.Writer, title string, results []*Result) error {
	const (
		width, height          = 720, 440
		left, right, top, bott = 70, 170, 40, 50
	)
	pw, ph := float64(width-left-right), float64(height-top-bott)
	withMode := mixedModes(results)
	hi := 1.0
	for _, r := range results {
		for _, j := range r.Jobs {
			hi = math.Max(hi, j.Slowdown)
		}
	}
	lo := 1.0
	for _, r := range results {
		for _, j := range r.Jobs {
			if j.Slowdown > 0 {
				lo = math.Min(lo, j.Slowdown)
			}
		}
	}
	lmin := math.Floor(math.Log10(lo))
	lmax := math.Max(math.Ceil(math.Log10(hi)), lmin+1)
	x := func(s float64) float64 {
		s = math.Max(s, math.Pow(10, lmin))
		return float64(left) + (math.Log10(s)-lmin)/(lmax-lmin)*pw
	}
	y := func(f float64) float64 { return float64(top) + (1-f)*ph }
	colors := []string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", width, height)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", width, height)
	fmt.Fprintf(&b, `<text x="%d" y="22" font-size="14">%s</text>`+"\n", left, html.EscapeString(title))
	for d := lmin; d <= lmax; d++ {
		for m := 1; m <= 9; m++ {
			v := math.Pow(10, d) * float64(m)
			if math.Log10(v) > lmax+1e-9 {
				break
			}
			stroke := "#eee"
			if m == 1 {
				stroke = "#ccc"
				fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", x(v), height-bott+16, fmtTick(v))
			}
			fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s"/>`+"\n", x(v), top, x(v), height-bott, stroke)
		}
	}
	for f := 0.0; f <= 1.0001; f += 0.2 {
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/>`+"\n", left, y(f), width-right, y(f))
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">%.1f</text>`+"\n", left-6, y(f)+4, f)
	}
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.0f" height="%.0f" fill="none" stroke="black"/>`+"\n", left, top, pw, ph)
	fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">job slowdown (log scale)</text>`+"\n", float64(left)+pw/2, height-12)
	fmt.Fprintf(&b, `<text transform="translate(18,%.1f) rotate(-90)" text-anchor="middle">fraction of jobs</text>`+"\n", float64(top)+ph/2)
	for i, r := range results {
		c := colors[i%len(colors)]
		s := make([]float64, 0, len(r.Jobs))
		for _, j := range r.Jobs {
			s = append(s, j.Slowdown)
		}
		sort.Float64s(s)
		var pts []string
		prev := 0.0
		for k, v := range s {
			f := float64(k+1) / float64(len(s))
			pts = append(pts, fmt.Sprintf("%.1f,%.1f %.1f,%.1f", x(v), y(prev), x(v), y(f)))
			prev = f
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="1.6" points="%s"/>`+"\n", c, strings.Join(pts, " "))
		ly := top + 16 + 18*i
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="3"/>`+"\n", width-right+12, ly-4, width-right+32, ly-4, c)
		fmt.Fprintf(&b, `<text x="%d" y="%d">%s</text>`+"\n", width-right+38, ly, html.EscapeString(r.Label(withMode)))
	}
	b.WriteString("</svg>\n")
	if _, err := io.WriteString(out, b.String()); err != nil {
		return fmt.Errorf("write svg: %w", err)
	}
	return nil
}

func fmtTick(v float64) string {
	if v >= 1 {
		return fmt.Sprintf("%g", v)
	}
	return fmt.Sprintf("%.2g", v)
}
