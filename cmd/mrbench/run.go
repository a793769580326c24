package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// procStats are the measurements of one command run.
type procStats struct {
	// Wall is the time from starting the command to its exit.
	Wall time.Duration
	// CPU is the user+system time of the command and of every descendant
	// that was waited for (the rusage wait4 returns).
	CPU time.Duration
	// MaxRSSKB is ru_maxrss as wait4 returned it for the command. Linux
	// fills it from the child's own peak and its cmaxrss, the largest peak
	// of any descendant that was waited for (task children are reaped by
	// their TaskTracker, i.e. by mr local): the peak RSS of the largest
	// single process in the tree, in KiB.
	MaxRSSKB int64
	// TreePeakKB is the largest sum of the resident sets of the command and
	// all its live descendants, sampled every sampleEvery from /proc, in
	// KiB: what the tree held at once.
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
	args []string
	dir  string
	// log receives stdout and stderr.
	log string
	// onLine, if set, is called with each stdout line and the time it was
	// read.
	onLine func(at time.Time, line string)
}

func (c command) String() string { return c.path + " " + strings.Join(c.args, " ") }

// run starts the command, samples its process tree until it exits and
// returns its measurements. A non-zero exit is an error quoting the end of
// the log.
func run(ctx context.Context, c command) (*procStats, error) {
	logf, err := os.Create(c.log)
	if err != nil {
		return nil, fmt.Errorf("creating log %s: %w", c.log, err)
	}
	defer logf.Close()
	cmd := exec.CommandContext(ctx, c.path, c.args...)
	cmd.Dir = c.dir
	cmd.Stderr = logf
	var stdout io.ReadCloser
	if c.onLine == nil {
		cmd.Stdout = logf
	} else if stdout, err = cmd.StdoutPipe(); err != nil {
		return nil, fmt.Errorf("%s: %w", c, err)
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", c, err)
	}
	s := startSampler(cmd.Process.Pid)
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
	st := &procStats{Wall: time.Since(start)}
	st.TreePeakKB, st.RootHWMKB = s.finish()
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		st.MaxRSSKB = ru.Maxrss
		st.CPU = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	if werr != nil {
		return st, fmt.Errorf("%s: %w; end of its log %s:\n%s", c, werr, c.log, logTail(c.log, 20))
	}
	return st, nil
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
	root     int
	stop     chan struct{}
	done     chan struct{}
	peak     int64 // KiB
	hwm      int64 // KiB
	pageKB   int64
	children map[int][]int
}

func startSampler(root int) *sampler {
	s := &sampler{root: root, stop: make(chan struct{}), done: make(chan struct{}),
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
	if hwm := readHWM(s.root); hwm > 0 {
		s.hwm = hwm
	}
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
	var sum int64
	queue := []int{s.root}
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
