package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"
)

// Every command the bench measures runs under a wrapper: this binary with
// measureArg as the first argument, a result file, then the command. The
// wrapper starts the command, waits for it and writes its wall time and
// getrusage(RUSAGE_CHILDREN): the CPU time of the command and of every
// descendant that was waited for, and the largest peak RSS among them (Linux
// keeps cmaxrss, the maximum over reaped descendants, and a TaskTracker
// reaps its task children, so those count).
//
// Why a wrapper: os/exec starts children with vfork semantics, and Linux
// records the peak RSS of the address space a process leaves when it execs.
// A command started directly by the bench would report at least the
// bench's own RSS at that moment (hundreds of MiB after checking a word
// count); started by the small wrapper, the floor is the wrapper's few MiB.

// measureArg is the first argument that makes the binary run a wrapper.
const measureArg = "-run-measured"

// measured is what the wrapper writes to its result file.
type measured struct {
	WallNS   int64 `json:"wall_ns"`
	CPUNS    int64 `json:"cpu_ns"`
	MaxRSSKB int64 `json:"max_rss_kib"`
	Exit     int   `json:"exit"`
}

// measureMain runs "RESULT-FILE COMMAND ARGS...", passing SIGINT and
// SIGTERM on to the command, and exits with the command's status.
func measureMain(args []string) int {
	if len(args) < 2 {
		fmt.Fprintf(os.Stderr, "mrbench %s: want RESULT-FILE COMMAND [ARGS...], got %q\n", measureArg, args)
		return 2
	}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	cmd := exec.Command(args[1], args[2:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "mrbench %s: %v\n", measureArg, err)
		return 127
	}
	go func() {
		for s := range sigs {
			_ = cmd.Process.Signal(s) // it may have exited already
		}
	}()
	werr := cmd.Wait()
	m := measured{WallNS: time.Since(start).Nanoseconds(), Exit: cmd.ProcessState.ExitCode()}
	var ee *exec.ExitError
	if werr != nil && !errors.As(werr, &ee) {
		fmt.Fprintf(os.Stderr, "mrbench %s: waiting for %s: %v\n", measureArg, args[1], werr)
	}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		m.Exit = 128 + int(ws.Signal())
	}
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru); err != nil {
		fmt.Fprintf(os.Stderr, "mrbench %s: getrusage: %v\n", measureArg, err)
		return 125
	}
	m.MaxRSSKB = ru.Maxrss
	m.CPUNS = ru.Utime.Nano() + ru.Stime.Nano()
	b, err := json.Marshal(&m)
	if err == nil {
		err = os.WriteFile(args[0], b, 0o644)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "mrbench %s: writing the result file %s: %v\n", measureArg, args[0], err)
		return 125
	}
	return m.Exit
}

// readMeasured reads a wrapper's result file into st.
func readMeasured(path string, st *procStats) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("reading the measurements: %w", err)
	}
	var m measured
	if err := json.Unmarshal(b, &m); err != nil {
		return fmt.Errorf("measurements %s: %w", path, err)
	}
	st.Wall = time.Duration(m.WallNS)
	st.CPU = time.Duration(m.CPUNS)
	st.MaxRSSKB = m.MaxRSSKB
	return nil
}
