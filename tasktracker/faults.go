package tasktracker

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
)

// FaultsEnv names an environment variable of the TaskTracker that injects
// faults, for the fault-injection tests (make chaos): a comma-separated
// list of name=value. Known faults:
//
//	drop-replies=N  the first N heartbeat replies that carry task actions
//	                are dropped after the JobTracker sent them, as a lost
//	                packet would: the JobTracker acted on the heartbeat,
//	                the tracker never sees the reply.
//	fail-tasks=1    every attempt launched here fails at once, as on a
//	                tracker with a broken disk.
//	no-pdeathsig=1  task children are started without the parent-death
//	                signal, as a child forked in the instant its tracker
//	                is killed misses it: only their lifeline makes them
//	                exit with the tracker.
const FaultsEnv = "GOMR_FAULTS"

// faults is the parsed FaultsEnv.
type faults struct {
	mu          sync.Mutex
	dropReplies int
	failTasks   bool
	noPdeathsig bool
}

func parseFaults(s string) (*faults, error) {
	f := &faults{}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		name, value, _ := strings.Cut(item, "=")
		switch name {
		case "drop-replies":
			n, err := strconv.Atoi(value)
			if err != nil || n < 0 {
				return nil, fmt.Errorf("%s: drop-replies=%q: want a count >= 0", FaultsEnv, value)
			}
			f.dropReplies = n
		case "fail-tasks":
			b, err := strconv.ParseBool(value)
			if err != nil {
				return nil, fmt.Errorf("%s: fail-tasks=%q: want true or false", FaultsEnv, value)
			}
			f.failTasks = b
		case "no-pdeathsig":
			b, err := strconv.ParseBool(value)
			if err != nil {
				return nil, fmt.Errorf("%s: no-pdeathsig=%q: want true or false", FaultsEnv, value)
			}
			f.noPdeathsig = b
		default:
			return nil, fmt.Errorf("%s: unknown fault %q (known: drop-replies, fail-tasks, no-pdeathsig)", FaultsEnv, name)
		}
	}
	return f, nil
}

func faultsFromEnv() (*faults, error) { return parseFaults(os.Getenv(FaultsEnv)) }

// dropReply tells whether to drop a reply that carries n actions.
func (f *faults) dropReply(n int) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if n == 0 || f.dropReplies == 0 {
		return false
	}
	f.dropReplies--
	return true
}
