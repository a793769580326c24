package loadgen

import (
	"fmt"
	"os"
	"strconv"
	"syscall"
	"time"
)

// generatorNice gives every thread of this process the nice value n
// (Config.GeneratorNice) for a JobTracker run in mode: only when the
// JobTracker is not in this process (whose threads would be slowed too),
// and only when n is not 0. On Linux a nice value is a thread's, and a
// thread inherits its creator's, so once every thread of the process has
// it, so do those the runtime starts later. It returns the nice value in
// effect and the function that restores the previous values, best
// effort (lowering a nice value again needs CAP_SYS_NICE, and a thread
// the runtime starts meanwhile may keep n; a failure is ignored: the run
// is over).
func generatorNice(mode string, n int) (int, func(), error) {
	if n == 0 || mode == "in-process" {
		return 0, func() {}, nil
	}
	if n < -20 || n > 19 {
		return 0, nil, fmt.Errorf("loadgen: generator nice %d: want -20 to 19", n)
	}
	old := map[int]int{}
	err := reniceThreads(func(tid int) (int, bool) {
		// The raw getpriority returns 20 - nice.
		p, err := syscall.Getpriority(syscall.PRIO_PROCESS, tid)
		if err != nil {
			return 0, false // the thread ended
		}
		old[tid] = 20 - p
		return n, true
	})
	if err != nil {
		return 0, nil, fmt.Errorf("loadgen: generator nice %d: %w", n, err)
	}
	return n, func() {
		prev := old[os.Getpid()]
		_ = reniceThreads(func(tid int) (int, bool) {
			if p, ok := old[tid]; ok {
				return p, true
			}
			return prev, true
		})
	}, nil
}

// reniceThreads gives each thread of this process the nice value to
// returns for it (none when its second result is false), until two passes
// in a row over the threads find none it has not done: a thread started
// meanwhile by one not yet done (it shows in /proc a moment after) is
// found by a later pass.
func reniceThreads(to func(tid int) (int, bool)) error {
	done := map[int]bool{}
	quiet := 0
	for range 20 {
		tids, err := threads()
		if err != nil {
			return err
		}
		fresh := 0
		for _, tid := range tids {
			if done[tid] {
				continue
			}
			done[tid] = true
			fresh++
			n, ok := to(tid)
			if !ok {
				continue
			}
			if err := syscall.Setpriority(syscall.PRIO_PROCESS, tid, n); err != nil && err != syscall.ESRCH {
				return fmt.Errorf("thread %d: %w", tid, err)
			}
		}
		if fresh > 0 {
			quiet = 0
		} else if quiet++; quiet == 2 {
			return nil
		}
		time.Sleep(time.Millisecond)
	}
	return nil
}

// threads lists the ids of this process's threads.
func threads() ([]int, error) {
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return nil, fmt.Errorf("loadgen: listing this process's threads: %w", err)
	}
	tids := make([]int, 0, len(ents))
	for _, e := range ents {
		if tid, err := strconv.Atoi(e.Name()); err == nil {
			tids = append(tids, tid)
		}
	}
	return tids, nil
}
