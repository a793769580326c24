package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"gomr/mr"
	"gomr/tasktracker"
)

// Checkpoints for preemption that fail on real trackers with CRIU (issue
// 15: "a checkpoint that fails (CRIU refuses, disk full, tracker lost while
// dumping) falls back to kill and the job still completes correctly"). CRIU
// refusing is TestE2ECheckpointDumpFailsFallsBackToKill; here the disk
// holding the images is full, and the tracker dies while it dumps. In each
// case the job's output is byte for byte that of an undisturbed run.

// checkFellBackToKill checks that the job of a checkpoint that failed
// succeeded with nothing checkpointed or restored, its victim KILLED, and
// that its map ran again from scratch (a fresh attempt, not a restore)
// and succeeded on tracker on.
func checkFellBackToKill(t *testing.T, c *cluster, id, victim, on string, res *mr.JobResult) {
	t.Helper()
	if res.State != "SUCCEEDED" {
		t.Fatalf("job %s: %s", res.State, res.Error)
	}
	if st := c.attemptState(id, victim); st != "KILLED" {
		t.Errorf("attempt %s is %s, want KILLED", victim, st)
	}
	checkCheckpointCounters(t, res, 0, 0)
	if n := res.Counters.Get(mr.JobCounterGroup, mr.NumKilledMaps); n != 1 {
		t.Errorf("NUM_KILLED_MAPS = %d, want 1", n)
	}
	as, err := c.client.Attempts(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var again bool
	for _, a := range as {
		if a.TaskType == "m" && a.State == "SUCCEEDED" && a.AttemptId != victim {
			again = a.Tracker == on
		}
	}
	if !again {
		t.Errorf("the map did not run again on tracker %s: %v", on, as)
	}
}

// The tracker keeps its images on a 2 MiB tmpfs (mapreduce.tasktracker.
// checkpoint.dir), smaller than the map's image: CRIU's dump fails with
// ENOSPC, the tracker kills the attempt and removes the partial image,
// and the map runs again from scratch.
func TestE2ECheckpointDiskFull(t *testing.T) {
	skipUnderRace(t, "TestE2ECheckpointResume/local and TestE2EMinEDFWCCheckpointPreemption")
	path := criuPath(t)
	if _, err := exec.LookPath("mount"); err != nil {
		t.Skip("mount(8) not found: a small tmpfs cannot be mounted")
	}
	full := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", full).CombinedOutput(); err != nil {
		t.Skipf("mounting a 2 MiB tmpfs needs root (CAP_SYS_ADMIN): %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", "-l", full).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", full, err, out)
		}
	})
	c := startClusterProcDefines(t, []trackerSpec{{"slow", 1, 0}, {"fast", 0, 2}},
		map[string][]string{"slow": {tasktracker.KeyCheckpointDir + "=" + full}},
		"mapreduce.tasktracker.criu.path="+path)
	spec, in, out := checkpointJob(t)
	spec.Conf["mapreduce.task.io.sort.mb"] = "4"
	id := c.submit(spec)
	victim := c.runningMapAt(id, 0.05)
	if _, err := c.client.CheckpointTask(context.Background(), victim, false); err != nil {
		t.Fatal(err)
	}
	res := c.wait(id)
	checkFellBackToKill(t, c, id, victim, "slow", res)
	lines := c.logLines("slow", "checkpoint for preemption failed")
	for _, l := range lines {
		t.Log(l)
	}
	if len(lines) == 0 {
		t.Fatal("tracker slow does not log the failed checkpoint")
	}
	if !strings.Contains(lines[0], "No space left on device") && !strings.Contains(lines[0], "ENOSPC") {
		t.Errorf("the failed checkpoint's error does not say the disk was full: %s", lines[0])
	}
	// The partial image is gone: nothing is left on the full disk.
	var left []string
	_ = filepath.WalkDir(full, func(p string, e os.DirEntry, err error) error {
		if err == nil && !e.IsDir() {
			left = append(left, p)
		}
		return nil
	})
	if len(left) > 0 {
		t.Errorf("files left in the checkpoint directory after the failed dump: %v", left)
	}
	checkWordCount(t, out, countWords(t, in))
	checkSameAsPlainRun(t, c, spec, out)
}

// The tracker is killed (SIGKILL, with CRIU and everything else in its
// process group) while it dumps the attempt: "before", while the CRIU it
// started has not yet begun (the child waits at its quiet point); "after",
// once CRIU has written the image and ended the child but before the
// tracker could report it. The JobTracker declares the tracker lost, the
// attempt is KILLED and its map runs again from scratch on another
// tracker; the child is gone and nothing waits for ever.
func TestE2ECheckpointTrackerLostWhileDumping(t *testing.T) {
	path := criuPath(t)
	for _, when := range []string{"before", "after"} {
		t.Run(when, func(t *testing.T) {
			skipUnderRace(t, "TestE2ELostTracker and TestE2ECheckpointResume/local")
			// CRIU on tracker slow runs through a wrapper that, once the
			// test drops a hold file, stops before or after the real CRIU
			// and says so with a file of its own.
			flags := t.TempDir()
			wrapper := filepath.Join(flags, "criu-wrapper.sh")
			script := fmt.Sprintf(`#!/bin/sh
d=%q
if [ -e "$d/hold-before" ]; then rm -f "$d/hold-before"; touch "$d/criu-called"; sleep 120; fi
if [ -e "$d/hold-after" ]; then rm -f "$d/hold-after"; %q "$@"; rc=$?; touch "$d/criu-called"; sleep 120; exit $rc; fi
exec %q "$@"
`, flags, path, path)
			if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
				t.Fatal(err)
			}
			c := startClusterProcDefines(t, []trackerSpec{{"slow", 1, 0}, {"fast", 0, 2}},
				map[string][]string{"slow": {"mapreduce.tasktracker.criu.path=" + wrapper}},
				"mapreduce.tasktracker.criu.path="+path,
				"mapreduce.jobtracker.expire.trackers.interval=2000")
			c.logValue("slow", "CRIU available", "version") // the probe has run
			spec, in, out := checkpointJob(t)
			id := c.submit(spec)
			victim := c.runningMapAt(id, 0.05)
			pid := childPID(victim)
			if pid == 0 {
				t.Fatalf("no child process of %s", victim)
			}
			if err := os.WriteFile(filepath.Join(flags, "hold-"+when), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := c.client.CheckpointTask(context.Background(), victim, false); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "tracker slow to call CRIU", 30*time.Second, func() bool {
				_, err := os.Stat(filepath.Join(flags, "criu-called"))
				return err == nil
			})
			if when == "after" {
				waitFor(t, "CRIU to end the dumped child", 10*time.Second, func() bool { return processGone(pid) })
			} else if processGone(pid) {
				t.Fatalf("child %d of %s ended before the tracker was killed", pid, victim)
			}
			c.killGroup("slow")
			if st := c.attemptState(id, victim); st != "RUNNING" {
				t.Fatalf("attempt %s is %s when its tracker is killed mid-dump, want RUNNING", victim, st)
			}
			c.startTracker(trackerSpec{"c", 1, 0})
			res := c.wait(id)
			checkFellBackToKill(t, c, id, victim, "c", res)
			if !c.logHas("jobtracker", `msg="lost tracker" component=jobtracker tracker=slow`) {
				t.Errorf("the JobTracker does not log tracker slow lost")
			}
			waitFor(t, "the child of "+victim+" to be gone", 10*time.Second, func() bool { return processGone(pid) })
			checkWordCount(t, out, countWords(t, in))
			checkSameAsPlainRun(t, c, spec, out)
		})
	}
}

// killGroup sends SIGKILL to a daemon's whole process group (the harness
// starts each daemon as a group leader): the daemon and the helpers it
// runs in its group (CRIU, here), not its task children, which run in
// sessions of their own and die by their parent-death signal.
func (c *cluster) killGroup(name string) {
	cmd := c.procs[name]
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	_, _ = cmd.Process.Wait()
	delete(c.procs, name)
}

// processGone tells whether process pid has exited (a zombie counts as
// gone).
func processGone(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	// The state follows the command name in parentheses.
	s := string(data)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] == 'Z' || s[i+2] == 'X'
	}
	return false
}
