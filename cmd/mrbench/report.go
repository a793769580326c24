package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
)

// report is everything a run measured.
type report struct {
	Size     int64          `json:"size_bytes"`
	SizeArg  string         `json:"size"`
	Machine  machine        `json:"machine"`
	Settings map[string]any `json:"settings"`
	Results  []*result      `json:"results"`
	Commands []string       `json:"commands"`
	Seconds  float64        `json:"total_seconds"`
}

// result is one benchmark: a job (or the median of several) against a
// baseline or a latency target.
type result struct {
	Name            string     `json:"name"`
	JobCommand      string     `json:"job_command,omitempty"`
	BaselineCommand string     `json:"baseline_command,omitempty"`
	Job             *procStats `json:"job,omitempty"`
	Baseline        *procStats `json:"baseline,omitempty"`
	JobSeconds      float64    `json:"job_seconds"`
	BaselineSeconds float64    `json:"baseline_seconds,omitempty"`
	// Ratio is JobSeconds/BaselineSeconds.
	Ratio float64 `json:"ratio,omitempty"`
	// MaxRatio or MaxSeconds is the target.
	MaxRatio   float64 `json:"target_max_ratio,omitempty"`
	MaxSeconds float64 `json:"target_max_seconds,omitempty"`
	Pass       bool    `json:"pass"`
	// Check says how the job's output was verified.
	Check string `json:"check,omitempty"`
	Error string `json:"error,omitempty"`
	// Memory lists further processes measured (daemons of a cluster).
	Memory []namedStats `json:"memory,omitempty"`
	// SubmittedToDone is, for a job submitted to a running cluster, the
	// median time from the client's "Running job" line to its "completed
	// successfully" line, seconds.
	SubmittedToDone float64 `json:"submitted_to_done_seconds,omitempty"`
	// Runs are the individual times of a repeated measurement, seconds.
	Runs []float64 `json:"runs_seconds,omitempty"`
	// TreeRatio and TreePSSRatio are the job's process tree peak over the
	// baseline's, by RSS and by PSS (issue 17's memory target: at most
	// maxTreeRatio); 0 when either was not measured.
	TreeRatio    float64 `json:"tree_rss_ratio,omitempty"`
	TreePSSRatio float64 `json:"tree_pss_ratio,omitempty"`
}

// maxTreeRatio is issue 17's memory target: a job's process tree at most
// twice its baseline's at their peaks. It is reported, not judged: the
// targets judged are the time ratios.
const maxTreeRatio = 2.0

// namedStats labels the measurements of one process.
type namedStats struct {
	Name  string     `json:"name"`
	Stats *procStats `json:"stats"`
}

// judge fills in the ratio and the verdict.
func (r *result) judge() {
	r.Pass = r.Error == ""
	if r.BaselineSeconds > 0 {
		r.Ratio = r.JobSeconds / r.BaselineSeconds
	}
	if r.MaxRatio > 0 && !(r.Ratio > 0 && r.Ratio <= r.MaxRatio) {
		r.Pass = false
	}
	if r.MaxSeconds > 0 && !(r.JobSeconds < r.MaxSeconds) {
		r.Pass = false
	}
	r.TreeRatio, r.TreePSSRatio = 0, 0
	if r.Job != nil && r.Baseline != nil {
		if r.Baseline.TreePeakKB > 0 && r.Job.TreePeakKB > 0 {
			r.TreeRatio = float64(r.Job.TreePeakKB) / float64(r.Baseline.TreePeakKB)
		}
		if r.Baseline.TreePeakPSSKB > 0 && r.Job.TreePeakPSSKB > 0 {
			r.TreePSSRatio = float64(r.Job.TreePeakPSSKB) / float64(r.Baseline.TreePeakPSSKB)
		}
	}
}

// MarshalJSON renders the measurements in seconds and KiB.
func (s *procStats) MarshalJSON() ([]byte, error) {
	return json.Marshal(map[string]any{
		"wall_seconds":      s.Wall.Seconds(),
		"cpu_seconds":       s.CPU.Seconds(),
		"max_rss_kib":       s.MaxRSSKB,
		"tree_peak_rss_kib": s.TreePeakKB,
		"tree_peak_pss_kib": s.TreePeakPSSKB,
		"process_hwm_kib":   s.RootHWMKB,
		"at_tree_peak":      s.AtPeak,
	})
}

// print writes the tables.
func (rep *report) print(w io.Writer) {
	fmt.Fprintf(w, "\nmrbench -size %s (%s): %s\n\n", rep.SizeArg, humanBytes(rep.Size), rep.Machine.Summary())
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "benchmark\tjob s\tbaseline s\tratio\ttarget\tresult")
	for _, r := range rep.Results {
		base, ratio, target := "-", "-", "-"
		if r.BaselineSeconds > 0 {
			base = fmt.Sprintf("%.2f", r.BaselineSeconds)
			ratio = fmt.Sprintf("%.2fx", r.Ratio)
		}
		if r.MaxRatio > 0 {
			target = fmt.Sprintf("<= %.1fx", r.MaxRatio)
		}
		if r.MaxSeconds > 0 {
			target = fmt.Sprintf("< %.1f s", r.MaxSeconds)
		}
		verdict := "pass"
		if r.Error != "" {
			verdict = "ERROR"
		} else if !r.Pass {
			verdict = "MISS"
		}
		fmt.Fprintf(tw, "%s\t%.2f\t%s\t%s\t%s\t%s\n", r.Name, r.JobSeconds, base, ratio, target, verdict)
	}
	tw.Flush()

	fmt.Fprintln(w, "\nCPU and memory (largest process: peak RSS of the largest process of the run, from")
	fmt.Fprintln(w, "getrusage(RUSAGE_CHILDREN); tree: peak of the summed RSS of all its processes, sampled")
	fmt.Fprintln(w, "every 50 ms; own: the command's own process's VmHWM)")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "run\twall s\tCPU s\tlargest process\ttree\ttree PSS\town")
	row := func(name string, s *procStats) {
		if s == nil {
			return
		}
		fmt.Fprintf(tw, "%s\t%.2f\t%.2f\t%s\t%s\t%s\t%s\n", name, s.Wall.Seconds(), s.CPU.Seconds(),
			humanKB(s.MaxRSSKB), humanKB(s.TreePeakKB), humanKB(s.TreePeakPSSKB), humanKB(s.RootHWMKB))
	}
	for _, r := range rep.Results {
		row(r.Name+": job", r.Job)
		row(r.Name+": baseline", r.Baseline)
		for _, m := range r.Memory {
			row(r.Name+": "+m.Name, m.Stats)
		}
	}
	tw.Flush()
	rep.printTreeRatios(w)
	rep.printAtPeak(w)

	fmt.Fprintln(w, "\nChecks:")
	for _, r := range rep.Results {
		switch {
		case r.Error != "":
			fmt.Fprintf(w, "  %s: ERROR: %s\n", r.Name, r.Error)
		case r.Check != "":
			fmt.Fprintf(w, "  %s: %s\n", r.Name, r.Check)
		}
		if len(r.Runs) > 0 {
			fmt.Fprintf(w, "  %s: runs %s s\n", r.Name, joinFloats(r.Runs))
		}
	}
	fmt.Fprintln(w, "\nCommands (timed ones marked *):")
	for _, c := range rep.Commands {
		fmt.Fprintln(w, "  "+c)
	}
	fmt.Fprintf(w, "\ntotal %.0f s\n", rep.Seconds)
}

// printTreeRatios writes each job's tree peak against its baseline's.
func (rep *report) printTreeRatios(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	header := false
	for _, r := range rep.Results {
		if r.TreeRatio == 0 {
			continue
		}
		if !header {
			fmt.Fprintf(w, "\nThe job's tree against the baseline's, at their peaks (issue 17: at most %.0fx)\n", maxTreeRatio)
			fmt.Fprintln(tw, "job\ttree RSS\tbaseline\tratio\ttree PSS\tbaseline\tratio")
			header = true
		}
		pss := "-"
		if r.TreePSSRatio > 0 {
			pss = fmt.Sprintf("%.2fx", r.TreePSSRatio)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.2fx\t%s\t%s\t%s\n", r.Name, humanKB(r.Job.TreePeakKB), humanKB(r.Baseline.TreePeakKB), r.TreeRatio,
			humanKB(r.Job.TreePeakPSSKB), humanKB(r.Baseline.TreePeakPSSKB), pss)
	}
	tw.Flush()
}

// printAtPeak writes, for each job whose tree was broken down, what each
// kind of process held at the sample where the tree's RSS peaked.
func (rep *report) printAtPeak(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	header := false
	for _, r := range rep.Results {
		if r.Job == nil || len(r.Job.AtPeak) == 0 || r.Job.TreePeakKB == 0 {
			continue
		}
		if !header {
			fmt.Fprintln(w, "\nAt the tree's RSS peak, by kind of process (processes, their RSS and PSS then; the")
			fmt.Fprintln(w, "largest RSS of one process of the kind over the run)")
			fmt.Fprintln(tw, "job\tkind\tprocesses\tRSS\tPSS\tlargest one")
			header = true
		}
		for _, k := range kindOrder {
			ks := r.Job.AtPeak[k]
			if ks == nil {
				continue
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\n", r.Name, k, ks.Procs, humanKB(ks.RSSKB), humanKB(ks.PSSKB), humanKB(ks.MaxKB))
		}
	}
	tw.Flush()
}

func joinFloats(fs []float64) string {
	s := make([]string, len(fs))
	for i, f := range fs {
		s[i] = strconv.FormatFloat(f, 'f', 3, 64)
	}
	return strings.Join(s, " ")
}

// machine describes where the bench ran.
type machine struct {
	CPUs     int    `json:"cpus"`
	CPUModel string `json:"cpu_model"`
	MemTotal string `json:"mem_total"`
	Kernel   string `json:"kernel"`
	Go       string `json:"go"`
	Sort     string `json:"sort"`
}

// Summary is a one-line description.
func (m machine) Summary() string {
	return fmt.Sprintf("%d CPUs (%s), %s RAM, Linux %s, %s, %s", m.CPUs, m.CPUModel, m.MemTotal, m.Kernel, m.Go, m.Sort)
}

func describeMachine() machine {
	m := machine{CPUs: runtime.NumCPU(), Go: runtime.Version()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPUModel = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "MemTotal:"); ok {
				kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
				if err == nil {
					m.MemTotal = fmt.Sprintf("%.1f GiB", float64(kb)/(1<<20))
				}
			}
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	if out, err := exec.Command("sort", "--version").Output(); err == nil {
		m.Sort, _, _ = strings.Cut(string(out), "\n")
	}
	return m
}

// signalContext is cancelled by SIGINT or SIGTERM, so that the children
// are stopped and the work directory removed.
func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}
