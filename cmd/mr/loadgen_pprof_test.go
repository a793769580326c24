package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestE2ELoadgenJobTrackerProfiles runs mr loadgen with a spawned
// JobTracker (mr jobtracker --pprof) and --jobtracker-pprof: the JobTracker's
// profiles over the measured window are written, each a gzipped pprof
// profile, and the execution trace a Go trace; taken from the trackers'
// start (--jobtracker-trace-at 0s), it has the registrations' holds of the
// JobTracker's lock as regions named after their holder.
func TestE2ELoadgenJobTrackerProfiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "profiles")
	out, err := runMR(t, "loadgen", "--spawn", "--policy", "fifo", "--trackers", "4", "--heartbeat", "300ms",
		"--duration", "3s", "--warmup", "1s", "--jobs", "1", "--maps", "20", "--map-time", "500ms",
		"--jobtracker-pprof", dir, "--jobtracker-trace-at", "0s")
	if err != nil {
		t.Fatalf("mr loadgen: %v\n%s", err, tail(out, 40))
	}
	for _, f := range []string{"cpu.pprof", "mutex.pprof", "block.pprof", "allocs.pprof", "heap.pprof"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatalf("%s: %v\n%s", f, err, tail(out, 40))
		}
		if !bytes.HasPrefix(b, []byte{0x1f, 0x8b}) {
			t.Errorf("%s is not a gzipped profile: %q...", f, b[:min(len(b), 40)])
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "trace.out"))
	if err != nil {
		t.Fatalf("trace.out: %v", err)
	}
	if !bytes.HasPrefix(b, []byte("go 1.")) {
		t.Errorf("trace.out is not a Go execution trace: %q...", b[:min(len(b), 40)])
	}
	if !bytes.Contains(b, []byte("jobtracker.lock.heartbeat")) {
		t.Errorf("trace.out has no region of the heartbeats' holds of the lock (jobtracker.lock.heartbeat)")
	}
}

// TestLoadgenJobTrackerProfilesNeedSpawn checks that --jobtracker-pprof
// without --spawn is refused, naming --spawn.
func TestLoadgenJobTrackerProfilesNeedSpawn(t *testing.T) {
	out, err := runMR(t, "loadgen", "--trackers", "1", "--duration", "1s", "--jobtracker-pprof", t.TempDir())
	if err == nil || !bytes.Contains([]byte(out), []byte("--spawn")) {
		t.Fatalf("mr loadgen --jobtracker-pprof without --spawn: err %v, output:\n%s", err, tail(out, 20))
	}
}

// TestLoadgenTraceRefusesFixedFlags: with --trace the trace gives the
// jobs, so a fixed workload's flag beside it (which would be ignored) is
// refused, by name, before anything starts.
func TestLoadgenTraceRefusesFixedFlags(t *testing.T) {
	out, err := runMR(t, "loadgen", "--trace", "thesis-fb", "--deadline", "60s", "--maps", "10", "--trackers", "2", "--duration", "1s")
	if err == nil {
		t.Fatalf("mr loadgen --trace with --deadline and --maps succeeded:\n%s", tail(out, 20))
	}
	if !strings.Contains(out, "--maps, --deadline describe the fixed workload, not --trace thesis-fb") {
		t.Errorf("error does not name the flags:\n%s", tail(out, 20))
	}
}
