package workloads

import (
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"net"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"gomr/mrpb"
	"gomr/webassets"
)

// Target is a process the monitor samples with all its descendants (the
// task children a TaskTracker starts).
type Target struct {
	Label string
	PID   int
}

// TrackerTargets returns the processes of this machine that serve the
// trackers' shuffle addresses (found by their listening sockets in
// /proc/net/tcp and tcp6 and the socket descriptors of /proc/PID/fd), and
// the names of the trackers it did not find here: those of other machines.
func TrackerTargets(trackers []*mrpb.TrackerStatus) (targets []Target, elsewhere []string) {
	listen := listeningInodes()
	want := map[string]bool{} // socket inodes of the trackers' ports
	byInode := map[string]*mrpb.TrackerStatus{}
	for _, t := range trackers {
		_, port, err := net.SplitHostPort(t.ShuffleAddress)
		if err != nil {
			elsewhere = append(elsewhere, t.Name)
			continue
		}
		for _, ino := range listen[port] {
			want[ino] = true
			byInode[ino] = t
		}
	}
	found := map[string]bool{}
	if len(want) > 0 {
		procs, _ := os.ReadDir("/proc")
		for _, p := range procs {
			pid, err := strconv.Atoi(p.Name())
			if err != nil {
				continue
			}
			fds, _ := os.ReadDir("/proc/" + p.Name() + "/fd")
			for _, fd := range fds {
				link, err := os.Readlink("/proc/" + p.Name() + "/fd/" + fd.Name())
				ino, ok := strings.CutPrefix(link, "socket:[")
				if err != nil || !ok {
					continue
				}
				ino = strings.TrimSuffix(ino, "]")
				if t := byInode[ino]; t != nil && !found[t.Name] {
					found[t.Name] = true
					targets = append(targets, Target{Label: fmt.Sprintf("%s (pid %d)", t.Name, pid), PID: pid})
				}
			}
		}
	}
	for _, t := range trackers {
		if !found[t.Name] && !slices.Contains(elsewhere, t.Name) {
			elsewhere = append(elsewhere, t.Name)
		}
	}
	sort.Slice(targets, func(i, j int) bool { return targets[i].Label < targets[j].Label })
	return targets, elsewhere
}

// listeningInodes maps the ports of this machine's listening TCP sockets
// (decimal) to their socket inodes.
func listeningInodes() map[string][]string {
	out := map[string][]string{}
	for _, file := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		data, err := os.ReadFile(file)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(data), "\n")[1:] {
			f := strings.Fields(line)
			if len(f) < 10 || f[3] != "0A" { // 0A: LISTEN
				continue
			}
			_, hexPort, ok := strings.Cut(f[1], ":")
			port, err := strconv.ParseUint(hexPort, 16, 16)
			if !ok || err != nil {
				continue
			}
			key := strconv.FormatUint(port, 10)
			out[key] = append(out[key], f[9])
		}
	}
	return out
}

// clockTicks is USER_HZ, the unit of /proc/PID/stat's CPU times: 100 on
// every Linux architecture Go supports.
const clockTicks = 100

// procStat is what one /proc read yields of one process.
type procStat struct {
	ppid int
	// ticks is utime + stime + cutime + cstime: the process's CPU time
	// and that of the children it has waited for, so that a task child's
	// time stays in its tracker's total after the child exits.
	ticks       uint64
	rss         uint64 // bytes
	read, write uint64 // /proc/PID/io read_bytes, write_bytes
}

// allProcs reads /proc/*/stat and /proc/*/io of every process.
func allProcs() map[int]procStat {
	out := map[int]procStat{}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return out
	}
	page := uint64(os.Getpagesize())
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// The command name, field 2, is in parentheses and may hold
		// blanks: the fields after it start after the last ')'.
		s := string(data)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 22 {
			continue
		}
		// f[0] is field 3 (state): field n is f[n-3].
		ppid, _ := strconv.Atoi(f[1])
		ut, _ := strconv.ParseUint(f[11], 10, 64)
		st, _ := strconv.ParseUint(f[12], 10, 64)
		cut, _ := strconv.ParseUint(f[13], 10, 64)
		cst, _ := strconv.ParseUint(f[14], 10, 64)
		rss, _ := strconv.ParseUint(f[21], 10, 64)
		ps := procStat{ppid: ppid, ticks: ut + st + cut + cst, rss: rss * page}
		if io, err := os.ReadFile("/proc/" + e.Name() + "/io"); err == nil {
			for _, line := range strings.Split(string(io), "\n") {
				k, v, _ := strings.Cut(line, ":")
				n, _ := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
				switch k {
				case "read_bytes":
					ps.read = n
				case "write_bytes":
					ps.write = n
				}
			}
		}
		out[pid] = ps
	}
	return out
}

// netBytes returns the bytes received and sent on every interface of the
// machine, loopback included (/proc/net/dev): an embedded cluster's
// shuffle and RPCs go over loopback.
func netBytes() (rx, tx uint64) {
	data, err := os.ReadFile("/proc/net/dev")
	if err != nil {
		return 0, 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		_, rest, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) < 9 {
			continue
		}
		r, _ := strconv.ParseUint(f[0], 10, 64)
		t, _ := strconv.ParseUint(f[8], 10, 64)
		rx += r
		tx += t
	}
	return rx, tx
}

// Series is one target's values over the run, one per sample.
type Series struct {
	Label string
	// CPU is in percent of one core; RSS in MiB; Read and Write in MiB/s
	// of storage I/O.
	CPU, RSS, Read, Write []float64
}

// Samples are the monitor's measurements.
type Samples struct {
	Interval time.Duration
	// Times are the sample times in Unix seconds.
	Times  []float64
	Series []*Series
	// NetRx and NetTx are the machine's network traffic in MiB/s.
	NetRx, NetTx []float64
	// Note says what was not sampled (trackers of other machines).
	Note string
}

// Monitor samples targets from /proc until stopped.
type Monitor struct {
	stop chan struct{}
	done chan struct{}
	mu   sync.Mutex
	s    *Samples
}

// StartMonitor samples the processes of targets, with their
// descendants, every interval; note goes into the chart's page.
func StartMonitor(ts []Target, note string, interval time.Duration) *Monitor {
	m := &Monitor{stop: make(chan struct{}), done: make(chan struct{}), s: &Samples{Interval: interval, Note: note}}
	for _, t := range ts {
		m.s.Series = append(m.s.Series, &Series{Label: t.Label})
	}
	go m.loop(ts, interval)
	return m
}

// Stop takes a last sample and returns them all.
func (m *Monitor) Stop() *Samples {
	close(m.stop)
	<-m.done
	return m.s
}

func (m *Monitor) loop(targets []Target, interval time.Duration) {
	defer close(m.done)
	// A target's totals are sums over the live processes of its tree.
	// Both the CPU time (with cutime and cstime) and /proc/PID/io (which
	// takes in the I/O of the children a process waits for) of a child
	// that exits pass to its parent, so the totals do not drop when task
	// children end, and their differences are the tree's use.
	type totals struct{ ticks, read, write uint64 }
	last := make([]totals, len(targets))
	var lastRx, lastTx uint64
	var lastT time.Time
	tick := time.NewTicker(interval)
	defer tick.Stop()
	diff := func(a, b uint64) float64 { return float64(a - min(a, b)) }
	sample := func() {
		now := time.Now()
		procs := allProcs()
		rx, tx := netBytes()
		children := map[int][]int{}
		for pid, p := range procs {
			children[p.ppid] = append(children[p.ppid], pid)
		}
		cur := make([]totals, len(targets))
		rss := make([]float64, len(targets))
		for i, t := range targets {
			stack := []int{t.PID}
			for len(stack) > 0 {
				pid := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				p, ok := procs[pid]
				if !ok {
					continue
				}
				stack = append(stack, children[pid]...)
				cur[i].ticks += p.ticks
				cur[i].read += p.read
				cur[i].write += p.write
				rss[i] += float64(p.rss) / (1 << 20)
			}
		}
		if !lastT.IsZero() {
			dt := now.Sub(lastT).Seconds()
			m.mu.Lock()
			m.s.Times = append(m.s.Times, float64(now.UnixMilli())/1000)
			for i := range targets {
				s := m.s.Series[i]
				s.CPU = append(s.CPU, round2(diff(cur[i].ticks, last[i].ticks)/clockTicks/dt*100))
				s.RSS = append(s.RSS, round2(rss[i]))
				s.Read = append(s.Read, round2(diff(cur[i].read, last[i].read)/(1<<20)/dt))
				s.Write = append(s.Write, round2(diff(cur[i].write, last[i].write)/(1<<20)/dt))
			}
			m.s.NetRx = append(m.s.NetRx, round2(diff(rx, lastRx)/(1<<20)/dt))
			m.s.NetTx = append(m.s.NetTx, round2(diff(tx, lastTx)/(1<<20)/dt))
			m.mu.Unlock()
		}
		// The first read is the baseline of the differences.
		last, lastRx, lastTx, lastT = cur, rx, tx, now
	}
	sample()
	for {
		select {
		case <-m.stop:
			sample()
			return
		case <-tick.C:
			sample()
		}
	}
}

func round2(x float64) float64 { return float64(int64(x*100+0.5)) / 100 }

// WriteCSV writes the samples as CSV: time, then per target cpu_pct,
// rss_mib, read_mibs, write_mibs, then net_rx_mibs, net_tx_mibs.
func (s *Samples) WriteCSV(w io.Writer) {
	fmt.Fprint(w, "time")
	for i := range s.Series {
		fmt.Fprintf(w, ",t%d_cpu_pct,t%d_rss_mib,t%d_read_mibs,t%d_write_mibs", i, i, i, i)
	}
	fmt.Fprintln(w, ",net_rx_mibs,net_tx_mibs")
	for k, t := range s.Times {
		fmt.Fprintf(w, "%.3f", t)
		for _, sr := range s.Series {
			fmt.Fprintf(w, ",%g,%g,%g,%g", sr.CPU[k], sr.RSS[k], sr.Read[k], sr.Write[k])
		}
		fmt.Fprintf(w, ",%g,%g\n", s.NetRx[k], s.NetTx[k])
	}
	for i, sr := range s.Series {
		fmt.Fprintf(w, "# t%d: %s\n", i, sr.Label)
	}
}

// uPlot (https://github.com/leeoniya/uPlot, MIT, webassets/LICENSE.uPlot)
// is embedded whole in every monitor.html, so that the page draws its
// charts offline.
var (
	uplotJS  = webassets.UPlotJS
	uplotCSS = webassets.UPlotCSS
)

var monitorPage = template.Must(template.New("monitor").Parse(`<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>{{.Title}}</title>
<style>{{.CSS}}
body{font-family:sans-serif;margin:1em} .chart{margin-bottom:1.5em}</style>
<script>{{.JS}}</script></head>
<body><h1>{{.Title}}</h1>
<p>Sampled from /proc every {{.Interval}}: CPU (% of one core: utime, stime, cutime and cstime of /proc/PID/stat), memory (RSS),
disk (read_bytes and write_bytes of /proc/PID/io) of each TaskTracker process with its task children,
and the machine's network (/proc/net/dev, loopback included). {{.N}} samples. Charts drawn with uPlot.
{{if .Note}}<br>{{.Note}}{{end}}</p>
<div id="cpu" class="chart"></div><div id="mem" class="chart"></div>
<div id="disk" class="chart"></div><div id="net" class="chart"></div>
<script>
const d = {{.Data}};
const colors = ["#1f77b4","#d62728","#2ca02c","#ff7f0e","#9467bd","#8c564b","#e377c2","#7f7f7f"];
const width = Math.min(1000, window.innerWidth - 40);
function chart(id, title, unit, series) {
  const opts = {title: title, width: width, height: 260,
    series: [{}].concat(series.map((s, i) => ({label: s.label, stroke: colors[i % colors.length], width: 1.5}))),
    axes: [{}, {label: unit}]};
  new uPlot(opts, [d.times].concat(series.map(s => s.values)), document.getElementById(id));
}
chart("cpu", "CPU", "% of a core", d.series.map(s => ({label: s.label, values: s.cpu})));
chart("mem", "Memory (RSS)", "MiB", d.series.map(s => ({label: s.label, values: s.rss})));
chart("disk", "Disk", "MiB/s", d.series.flatMap(s => [{label: s.label + " read", values: s.read}, {label: s.label + " write", values: s.write}]));
chart("net", "Network (machine)", "MiB/s", [{label: "received", values: d.net_rx}, {label: "sent", values: d.net_tx}]);
</script></body></html>
`))

// WriteHTML writes monitor.html: the samples drawn with uPlot, the library
// and the data inline.
func (s *Samples) WriteHTML(w io.Writer, title string) error {
	type series struct {
		Label string    `json:"label"`
		CPU   []float64 `json:"cpu"`
		RSS   []float64 `json:"rss"`
		Read  []float64 `json:"read"`
		Write []float64 `json:"write"`
	}
	data := struct {
		Times  []float64 `json:"times"`
		Series []series  `json:"series"`
		NetRx  []float64 `json:"net_rx"`
		NetTx  []float64 `json:"net_tx"`
	}{Times: nonNil(s.Times), NetRx: nonNil(s.NetRx), NetTx: nonNil(s.NetTx), Series: []series{}}
	for _, sr := range s.Series {
		data.Series = append(data.Series, series{sr.Label, nonNil(sr.CPU), nonNil(sr.RSS), nonNil(sr.Read), nonNil(sr.Write)})
	}
	js, err := json.Marshal(data)
	if err != nil {
		return err
	}
	return monitorPage.Execute(w, map[string]any{
		"Title":    title,
		"CSS":      template.CSS(uplotCSS),
		"JS":       template.JS(uplotJS),
		"Data":     template.JS(js),
		"Interval": s.Interval.String(),
		"N":        len(s.Times),
		"Note":     s.Note,
	})
}

func nonNil(x []float64) []float64 {
	if x == nil {
		return []float64{}
	}
	return x
}
