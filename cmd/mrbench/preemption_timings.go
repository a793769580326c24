package main

import (
	"bufio"
	"bytes"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// The preemption benchmark's measurements that job histories do not hold:
// where a checkpoint's time went, from the daemons' structured log lines
// (jobtracker/checkpoint.go, tasktracker/preempt.go), and the output check
// of a sort job.

// logField matches key=value in a slog text line (value unquoted).
var logField = regexp.MustCompile(`(\w+)=("[^"]*"|\S+)`)

// logFields parses the key=value pairs of a slog text line.
func logFields(line string) map[string]string {
	f := map[string]string{}
	for _, m := range logField.FindAllStringSubmatch(line, -1) {
		f[m[1]] = strings.Trim(m[2], `"`)
	}
	return f
}

// readTimings fills r's checkpoint timings from the logs of the run in dir:
// jobtracker.log and tt*.log.
func (r *preemptRun) readTimings(dir string) error {
	logs, _ := filepath.Glob(filepath.Join(dir, "tt*.log"))
	logs = append([]string{filepath.Join(dir, "jobtracker.log")}, logs...)
	for _, path := range logs {
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			r.timingLine(sc.Text())
		}
		err = sc.Err()
		f.Close()
		if err != nil {
			return fmt.Errorf("reading %s: %w", path, err)
		}
	}
	return nil
}

// timingLine takes the figures of one log line, if it has any.
func (r *preemptRun) timingLine(line string) {
	ms := func(f map[string]string, key string) (float64, bool) {
		v, ok := f[key]
		if !ok {
			return 0, false
		}
		if n, err := strconv.ParseFloat(v, 64); err == nil {
			return n, true // a _ms field
		}
		d, err := time.ParseDuration(v)
		if err != nil {
			return 0, false
		}
		return float64(d) / float64(time.Millisecond), true
	}
	switch {
	case strings.Contains(line, `msg="attempt checkpointed"`):
		if v, ok := ms(logFields(line), "reclaim_ms"); ok {
			r.ReclaimMs = append(r.ReclaimMs, v)
		}
	case strings.Contains(line, `msg="checkpoint for preemption made"`):
		f := logFields(line)
		for key, dst := range map[string]*[]float64{"quiesce": &r.QuiesceMs, "queued": &r.QueuedMs, "criu_dump": &r.CriuDumpMs, "criu_frozen": &r.CriuFrozenMs} {
			if v, ok := ms(f, key); ok {
				*dst = append(*dst, v)
			}
		}
	case strings.Contains(line, `msg="resuming a checkpointed task"`):
		if v, ok := ms(logFields(line), "restorable_ms"); ok {
			r.RestorableMs = append(r.RestorableMs, v)
		}
	case strings.Contains(line, `msg="checkpoint failed; the attempt was killed`):
		r.CheckpointsFailed++
	}
}

// loadAverage is the machine's 1-minute load average (0 if unknown).
func loadAverage() float64 {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	fields := strings.Fields(string(data))
	if len(fields) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(fields[0], 64)
	return v
}

// lineSum sums a text's lines: their number and an order-independent hash,
// enough to tell a sort's output holds the input's lines.
type lineSum struct {
	lines int64
	hash  uint64
}

func (l *lineSum) add(line []byte) {
	h := fnv.New64a()
	h.Write(line)
	l.lines++
	l.hash += h.Sum64()
}

// sumLines sums the lines of r.
func sumLines(r io.Reader) (lineSum, error) {
	var l lineSum
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		l.add(sc.Bytes())
	}
	return l, sc.Err()
}

// checkSortOutput checks that a sort job's part files, in name order, hold
// the input's lines (want) in byte order.
func checkSortOutput(out string, want lineSum) error {
	parts, _ := filepath.Glob(filepath.Join(out, "part-r-*"))
	if len(parts) == 0 {
		return fmt.Errorf("no part files in %s", out)
	}
	var got lineSum
	var prev []byte
	for _, p := range parts {
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Bytes()
			if got.lines > 0 && bytes.Compare(prev, line) > 0 {
				f.Close()
				return fmt.Errorf("%s: line %d is out of order", p, got.lines+1)
			}
			prev = append(prev[:0], line...)
			got.add(line)
		}
		err = sc.Err()
		f.Close()
		if err != nil {
			return err
		}
	}
	if got != want {
		return fmt.Errorf("the output holds %d lines (hash %x), the input %d (hash %x)", got.lines, got.hash, want.lines, want.hash)
	}
	return nil
}
