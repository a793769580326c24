package child

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
)

// Task profiling (Hadoop's mapreduce.task.profile): with it set, a task
// child writes a CPU profile of the whole attempt and a heap profile taken
// when it ends to ATTEMPT.cpu.pprof and ATTEMPT.heap.pprof, and its peak
// resident set (VmHWM), heap and GC figures to ATTEMPT.mem.txt, in
// mapreduce.task.profiledir or, when that is empty, in its attempt
// directory (its working directory). Read the profiles with go tool pprof bin/mr FILE.
const (
	keyProfile    = "mapreduce.task.profile"
	keyProfileDir = "mapreduce.task.profiledir"
)

// startProfile starts the attempt's CPU profile if the job asks for one
// and returns the function that stops it and writes the heap profile.
func (t *task) startProfile() (stop func()) {
	if !t.conf.Bool(keyProfile) {
		return func() {}
	}
	dir := t.conf.String(keyProfileDir)
	if dir == "" {
		dir = "."
	}
	base := filepath.Join(dir, t.launch.AttemptId)
	f, err := os.Create(base + ".cpu.pprof")
	if err != nil {
		t.log.Warn("task profile: no CPU profile", "error", err)
		f = nil
	} else if err := pprof.StartCPUProfile(f); err != nil {
		t.log.Warn("task profile: no CPU profile", "error", err)
		f.Close()
		f = nil
	}
	return func() {
		if f != nil {
			pprof.StopCPUProfile()
			f.Close()
		}
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		// The heap profile is as of the last completed collection: one
		// now makes it include every allocation of the attempt.
		runtime.GC()
		if err := writeHeapProfile(base + ".heap.pprof"); err != nil {
			t.log.Warn("task profile: no heap profile", "error", err)
		}
		summary := fmt.Sprintf("peak_rss_kib %d\nheap_sys_kib %d\nheap_inuse_kib %d\nsys_kib %d\ngc_cycles %d\ngc_cpu_fraction %.4f\n",
			vmHWM(), ms.HeapSys>>10, ms.HeapInuse>>10, ms.Sys>>10, ms.NumGC, ms.GCCPUFraction)
		if err := os.WriteFile(base+".mem.txt", []byte(summary), 0o644); err != nil {
			t.log.Warn("task profile: no memory summary", "error", err)
		}
		t.log.Info("task profile written", "prefix", base, "peak_rss_kib", vmHWM(),
			"heap_sys_kib", ms.HeapSys>>10, "gc_cycles", ms.NumGC)
	}
}

func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return f.Close()
}

// vmHWM returns the process's peak resident set in KiB from
// /proc/self/status, or -1 where it cannot be read.
func vmHWM() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return -1
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			var kb int64
			if _, err := fmt.Sscan(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), &kb); err == nil {
				return kb
			}
		}
	}
	return -1
}
