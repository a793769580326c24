package main

import (
	"bufio"
	"bytes"
	"cmp"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// procStats are the measurements of one command run (see measure.go for
// how they are taken).
type procStats struct {
	// Wall is the time from starting the command to its exit.
	Wall time.Duration
	// CPU is the user+system time of the command and of every descendant
	// that was waited for.
	CPU time.Duration
	// MaxRSSKB is the largest peak RSS of the command and of every
	// descendant that was waited for (task children are reaped by their
	// TaskTracker, so they count), in KiB: the peak of the largest single
	// process, not a sum.
	MaxRSSKB int64
	// TreePeakKB is the largest sum of the resident sets of the command and
	// all its live descendants, sampled every sampleEvery from /proc, in
	// KiB: what the tree held at once (to within the sampling).
	TreePeakKB int64
	// RootHWMKB is the command's own process's peak RSS (VmHWM), as last
	// sampled before it exited, in KiB. For mr local it is the process of
	// the JobTracker, the TaskTrackers and the job client.
	RootHWMKB int64
	// TreePeakPSSKB is the largest sum of the proportional set sizes (Pss
	// of /proc/PID/smaps_rollup) of the tree, sampled with the RSS: the
	// RSS sum counts the binary's text, shared by every task child of the
	// same executable, once per process; the PSS sum shares it out.
	TreePeakPSSKB int64
	// AtPeak breaks the RSS sum at its peak sample down by kind of process
	// (kindRoot, kindMap, kindReduce, kindOther), with each kind's largest
	// RSS over the whole run.
	AtPeak map[string]*kindStats
}

// kindStats are the processes of one kind in the tree.
type kindStats struct {
	// Procs and RSSKB are their number and summed RSS at the tree's peak
	// sample; PSSKB is their summed PSS at that sample.
	Procs int   `json:"procs"`
	RSSKB int64 `json:"rss_kib"`
	PSSKB int64 `json:"pss_kib"`
	// MaxKB is the largest RSS one process of this kind had in any sample.
	MaxKB int64 `json:"max_rss_kib"`
}

// Kinds of process in a measured tree (procStats.AtPeak): the command
// itself (for mr local: the JobTracker, the TaskTrackers and the client),
// map and reduce task children (by their attempt id), anything else.
const (
	kindRoot   = "command"
	kindMap    = "map child"
	kindReduce = "reduce child"
	kindOther  = "other or exiting"
)

// kindOrder is the order in which kinds are printed.
var kindOrder = []string{kindRoot, kindMap, kindReduce, kindOther}

// sampleEvery is the period of the /proc sampler.
const sampleEvery = 50 * time.Millisecond

// command is a process to run and measure.
type command struct {
	path string
	// display, if set, stands for path when the command is printed.
	display string
	args    []string
	dir     string
	// env, if set, is added to the bench's environment.
	env []string
	// log receives stdout and stderr.
	log string
	// onLine, if set, is called with each stdout line and the time it was
	// read.
	onLine func(at time.Time, line string)
}

// String renders the command as a shell line (arguments with characters
// a shell would interpret are single-quoted).
func (c command) String() string {
	parts := append([]string(nil), c.env...)
	parts = append(parts, cmp.Or(c.display, c.path))
	for _, a := range c.args {
		if a == "" || strings.ContainsAny(a, " \t\n'\"\\$*?[]{}()|&;<>`!#~") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		parts = append(parts, a)
	}
	return strings.Join(parts, " ")
}

// run starts the command under the measuring wrapper, samples its process
// tree until it exits and returns its measurements. A non-zero exit is an
// error quoting the end of the log.
func (b *bench) run(c command) (*procStats, error) {
	logf, err := os.Create(c.log)
	if err != nil {
		return nil, fmt.Errorf("creating log %s: %w", c.log, err)
	}
	defer logf.Close()
	resFile := c.log + ".measured.json"
	cmd := b.wrapped(resFile, c)
	cmd.Stderr = logf
	var stdout io.ReadCloser
	if c.onLine == nil {
		cmd.Stdout = logf
	} else if stdout, err = cmd.StdoutPipe(); err != nil {
		return nil, fmt.Errorf("%s: %w", c, err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", c, err)
	}
	s := startSampler(cmd.Process.Pid, true)
	if stdout != nil {
		// Read to EOF before Wait, as StdoutPipe requires.
		br := bufio.NewReader(stdout)
		for {
			line, err := br.ReadString('\n')
			if line != "" {
				c.onLine(time.Now(), strings.TrimSuffix(line, "\n"))
				_, _ = logf.WriteString(line) // the log is best effort
			}
			if err != nil {
				break
			}
		}
	}
	werr := cmd.Wait()
	st := &procStats{}
	s.finish(st)
	if werr != nil {
		return st, fmt.Errorf("%s: %w; end of its log %s:\n%s", c, werr, c.log, logTail(c.log, 20))
	}
	if err := readMeasured(resFile, st); err != nil {
		return st, fmt.Errorf("%s: %w", c, err)
	}
	return st, nil
}

// wrapped builds the command that runs c under the measuring wrapper,
// writing the measurements to resFile. Cancelling the bench's context sends
// the wrapper SIGTERM, which it passes on.
func (b *bench) wrapped(resFile string, c command) *exec.Cmd {
	cmd := exec.CommandContext(b.ctx, b.self, append([]string{measureArg, resFile, c.path}, c.args...)...)
	cmd.Dir = c.dir
	if len(c.env) > 0 {
		cmd.Env = append(os.Environ(), c.env...)
	}
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 15 * time.Second
	return cmd
}

// logTail returns the last n lines of a file.
func logTail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", path, err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// sampler polls /proc for the resident set of a process tree.
type sampler struct {
	root int
	// wrapped: root is the measuring wrapper; the tree measured is that
	// of its (first) child.
	wrapped  bool
	stop     chan struct{}
	done     chan struct{}
	peak     int64 // KiB
	peakPSS  int64 // KiB
	hwm      int64 // KiB
	atPeak   map[string]*kindStats
	maxKind  map[string]int64 // KiB
	pageKB   int64
	children map[int][]int
}

func startSampler(root int, wrapped bool) *sampler {
	s := &sampler{root: root, wrapped: wrapped, stop: make(chan struct{}), done: make(chan struct{}),
		pageKB: int64(os.Getpagesize() / 1024), children: map[int][]int{}, maxKind: map[string]int64{}}
	go func() {
		defer close(s.done)
		t := time.NewTicker(sampleEvery)
		defer t.Stop()
		for {
			s.sample()
			select {
			case <-s.stop:
				return
			case <-t.C:
			}
		}
	}()
	return s
}

// finish stops the sampler and fills in st's tree figures: the peak tree
// RSS and PSS, the breakdown at the RSS peak and the root's last VmHWM.
func (s *sampler) finish(st *procStats) {
	close(s.stop)
	<-s.done
	st.TreePeakKB, st.TreePeakPSSKB, st.RootHWMKB = s.peak, s.peakPSS, s.hwm
	if s.atPeak == nil {
		return
	}
	for k, m := range s.maxKind {
		if s.atPeak[k] == nil {
			s.atPeak[k] = &kindStats{} // none at the peak, some before or after
		}
		s.atPeak[k].MaxKB = m
	}
	st.AtPeak = s.atPeak
}

// sample adds up the RSS and PSS of the root and its descendants once.
func (s *sampler) sample() {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return
	}
	clear(s.children)
	rss := map[int]int64{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		ppid, pages, ok := readStat(pid)
		if !ok {
			continue
		}
		s.children[ppid] = append(s.children[ppid], pid)
		rss[pid] = pages * s.pageKB
	}
	top := s.root
	if s.wrapped {
		kids := s.children[s.root]
		if len(kids) == 0 {
			return
		}
		top = kids[0]
	}
	if hwm := readHWM(top); hwm > 0 {
		s.hwm = hwm
	}
	var sum, pss int64
	kinds := map[string]*kindStats{}
	queue := []int{top}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		queue = append(queue, s.children[p]...)
		kind := kindRoot
		if p != top {
			kind = processKind(p)
		}
		ks := kinds[kind]
		if ks == nil {
			ks = &kindStats{}
			kinds[kind] = ks
		}
		ps := readPSS(p)
		ks.Procs++
		ks.RSSKB += rss[p]
		ks.PSSKB += ps
		sum += rss[p]
		pss += ps
		s.maxKind[kind] = max(s.maxKind[kind], rss[p])
	}
	if sum > s.peak {
		s.peak, s.atPeak = sum, kinds
	}
	s.peakPSS = max(s.peakPSS, pss)
}

// processKind tells a map or reduce task child from its command line (it
// names its attempt, attempt_..._m_... or attempt_..._r_...).
func processKind(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return kindOther
	}
	for _, arg := range bytes.Split(b, []byte{0}) {
		if !bytes.HasPrefix(arg, []byte("attempt_")) {
			continue
		}
		switch {
		case bytes.Contains(arg, []byte("_m_")):
			return kindMap
		case bytes.Contains(arg, []byte("_r_")):
			return kindReduce
		}
	}
	return kindOther
}

// readPSS returns the proportional set size of a process in KiB from
// /proc/PID/smaps_rollup, or 0 if it cannot be read.
func readPSS(pid int) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/smaps_rollup")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "Pss:"); ok {
			v, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err == nil {
				return v
			}
		}
	}
	return 0
}

// readStat returns the parent pid and resident pages of a process from
// /proc/PID/stat.
func readStat(pid int) (ppid int, rssPages int64, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, false
	}
	// The command name is in parentheses and may hold anything: the
	// fields start after the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state), f[1] field 4 (ppid), f[21] field 24 (rss).
	if len(f) < 22 {
		return 0, 0, false
	}
	ppid, err1 := strconv.Atoi(f[1])
	rssPages, err2 := strconv.ParseInt(f[21], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, 0, false
	}
	return ppid, rssPages, true
}

// readHWM returns VmHWM of a process in KiB, or 0 if it cannot be read.
func readHWM(pid int) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			v, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err == nil {
				return v
			}
		}
	}
	return 0
}
