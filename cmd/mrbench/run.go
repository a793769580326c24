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
}

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
	st.TreePeakKB, st.RootHWMKB = s.finish()
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
	hwm      int64 // KiB
	pageKB   int64
	children map[int][]int
}

func startSampler(root int, wrapped bool) *sampler {
	s := &sampler{root: root, wrapped: wrapped, stop: make(chan struct{}), done: make(chan struct{}),
		pageKB: int64(os.Getpagesize() / 1024), children: map[int][]int{}}
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

// finish stops the sampler and returns the peak tree RSS and the root's
// last VmHWM, in KiB.
func (s *sampler) finish() (peakKB, hwmKB int64) {
	close(s.stop)
	<-s.done
	return s.peak, s.hwm
}

// sample adds up the RSS of the root and its descendants once.
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
	var sum int64
	queue := []int{top}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		sum += rss[p]
		queue = append(queue, s.children[p]...)
	}
	s.peak = max(s.peak, sum)
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
