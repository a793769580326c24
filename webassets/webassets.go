// Package webassets holds the web assets the module serves or writes into
// pages: uPlot 1.6.32 (https://github.com/leeoniya/uPlot, MIT, see
// LICENSE.uPlot), a small maintained charting library, as its minified
// IIFE build and its stylesheet. The workload monitor (package workloads)
// inlines them into monitor.html; the JobTracker's web UI serves them
// under /static/.
package webassets

import _ "embed"

// UPlotJS is uPlot's minified IIFE build (it defines the global uPlot).
//
//go:embed uPlot.iife.min.js
var UPlotJS string

// UPlotCSS is uPlot's stylesheet.
//
//go:embed uPlot.min.css
var UPlotCSS string

// UPlotLicense is uPlot's license text.
//
//go:embed LICENSE.uPlot
var UPlotLicense string
