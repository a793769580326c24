package loadgen

import (
	"fmt"
	"os"
	"strconv"
	"syscall"
)

// generatorNice gives every thread of this process the nice value n
// (Config.GeneratorNice) for a JobTracker run in mode: only when the
// JobTracker is not in this process (whose threads would be slowed too),
// and only when n is not 0. On Linux a nice value is a thread's, and a
// thread inherits its creator's, so once every thread of the process has
// it, so do those the runtime starts later. It returns the nice value in
// effect and the function that restores the previous values (lowering a
// nice value again needs CAP_SYS_NICE; it is tried, and a failure
// ignored: the run is over).
func generatorNice(mode string, n int) (int, func(), error) {
	if n == 0 || mode == "in-process" {
		return 0, func() {}, nil
	}
	if n < -20 || n > 19 {
		return 0, nil, fmt.Errorf("loadgen: generator nice %d: want -20 to 19", n)
	}
	old := map[int]int{}
	// Two passes: a thread started during the first by a thread not yet
	// reniced is found by the second.
	for range 2 {
		tids, err := threads()
		if err != nil {
			return 0, nil, err
		}
		for _, tid := range tids {
			if _, done := old[tid]; done {
				continue
			}
			// The raw getpriority returns 20 - nice.
			p, err := syscall.Getpriority(syscall.PRIO_PROCESS, tid)
			if err != nil {
				continue // the thread ended
			}
			if err := syscall.Setpriority(syscall.PRIO_PROCESS, tid, n); err != nil {
				if err == syscall.ESRCH {
					continue
				}
				return 0, nil, fmt.Errorf("loadgen: generator nice %d (thread %d): %w", n, tid, err)
			}
			old[tid] = 20 - p
		}
	}
	return n, func() {
		tids, _ := threads()
		for _, tid := range tids {
			prev, ok := old[tid]
			if !ok {
				prev = old[os.Getpid()]
			}
			_ = syscall.Setpriority(syscall.PRIO_PROCESS, tid, prev)
		}
	}, nil
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
