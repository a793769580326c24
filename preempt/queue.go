package preempt

import "time"

// Class is an operation's priority in a node's checkpoint/restore queue
// (spec §5.6, the order the TaskTrackers' queues keep): a preemption dump
// holds back the job waiting for its slot (first those of a deadline at
// risk), a restore the task it resumes, a clone dump only a speculative
// copy. Lower runs first; within a class, in arrival order; the operation
// running is never overtaken.
type Class uint8

const (
	// ClassDeadlineDump is a dump that frees a slot for a deadline at
	// risk (ReasonDeadlineAtRisk).
	ClassDeadlineDump Class = iota
	// ClassPreemptDump is a dump that frees a slot for any other reason.
	ClassPreemptDump
	// ClassRestore is the restore of a checkpointed task.
	ClassRestore
	// ClassCloneDump is a dump for a speculative clone.
	ClassCloneDump
)

// Queue models the per-node checkpoint/restore queue of [002 §3.4.2.2]: a
// node dumps or restores up to its concurrency (ckpt.maxConcurrentPerNode,
// 1 unless SetConcurrency says otherwise: one image at a time) at once, so
// an operation waits for those before it, in the order of its Class. The
// planner counts that wait in a checkpoint's cost (Alg. 1's
// queue_time_dump) and in Alg. 2's resume choice. Each operation is known
// by an id (the attempt's name), its class and its expected duration; it
// is expected to start when it was queued or when one of the node's
// concurrent operations (its servers) is expected to be free, whichever
// is later, taking the server free first; one that ends lets the next
// start at once on its server. An operation expected to have started by
// the time another is queued counts as running: it is not overtaken. It
// is not safe for concurrent use.
type Queue struct {
	nodes map[string][]queued
	// limit is a node's concurrency when it is more than 1.
	limit map[string]int
}

type queued struct {
	id     string
	class  Class
	queued time.Time
	start  time.Time // expected start
	d      time.Duration
	server int // which of the node's concurrent operations it is expected to run as
}

// NewQueue returns an empty queue.
func NewQueue() *Queue { return &Queue{nodes: map[string][]queued{}, limit: map[string]int{}} }

// Concurrency is how many operations node runs at once.
func (q *Queue) Concurrency(node string) int {
	if n, ok := q.limit[node]; ok {
		return n
	}
	return 1
}

// SetConcurrency says that node runs up to n operations at once (less
// than 1 counts as 1: a node that does not say runs them one at a time),
// as its heartbeat reports; the operations not expected to have started
// by now are re-planned.
func (q *Queue) SetConcurrency(node string, n int, now time.Time) {
	n = max(n, 1)
	if q.Concurrency(node) == n {
		return
	}
	if n == 1 {
		delete(q.limit, node)
	} else {
		q.limit[node] = n
	}
	ops := q.nodes[node]
	from := 0
	for from < len(ops) && !ops[from].start.After(now) {
		ops[from].server %= n
		from++
	}
	// The servers it did not have are free from now, not before.
	f := free(ops[:from], n, -1, now)
	for i := range f {
		f[i] = maxTime(f[i], now)
	}
	replan(ops, from, n, f)
}

// place is where an operation of class c queued at now goes among ops:
// after those expected to have started, and after the waiting ones of its
// class or a more urgent one.
func place(ops []queued, c Class, now time.Time) int {
	i := 0
	for i < len(ops) && (!ops[i].start.After(now) || ops[i].class <= c) {
		i++
	}
	return i
}

// free is when each of n servers is expected to be free once before (the
// operations ahead) have run as planned: a server none of them uses is
// free all along, except server freed (an operation that ran on it ended
// at now; -1 for none), free from now.
func free(before []queued, n, freed int, now time.Time) []time.Time {
	f := make([]time.Time, n)
	if freed >= 0 && freed < n {
		f[freed] = now
	}
	for _, op := range before {
		s := op.server % n
		f[s] = maxTime(f[s], op.start.Add(op.d))
	}
	return f
}

// earliest is the server of f free first (the lowest of those free at
// the same time).
func earliest(f []time.Time) int {
	j := 0
	for i := range f {
		if f[i].Before(f[j]) {
			j = i
		}
	}
	return j
}

// Wait is how long a preemption dump (not a deadline's) queued on node
// at now would wait before it runs (WaitClass of ClassPreemptDump).
func (q *Queue) Wait(node string, now time.Time) time.Duration {
	return q.WaitClass(node, ClassPreemptDump, now)
}

// WaitClass is how long an operation of class c queued on node at now
// would wait before it runs: until the first of the node's servers is
// expected to be free of the operation running there and of those it
// would queue behind. An operation running late counts as ending now.
func (q *Queue) WaitClass(node string, c Class, now time.Time) time.Duration {
	ops := q.nodes[node]
	f := free(ops[:place(ops, c, now)], q.Concurrency(node), -1, now)
	if at := f[earliest(f)]; at.After(now) {
		return at.Sub(now)
	}
	return 0
}

// Add queues an operation of class c and expected duration d on node at
// now and returns when it is expected to start; the waiting operations it
// overtakes are re-planned (with one server, each is expected to start
// later by d).
func (q *Queue) Add(node, id string, c Class, now time.Time, d time.Duration) time.Time {
	ops := q.nodes[node]
	i := place(ops, c, now)
	ops = append(ops[:i:i], append([]queued{{id: id, class: c, queued: now, d: d}}, ops[i:]...)...)
	n := q.Concurrency(node)
	replan(ops, i, n, free(ops[:i], n, -1, now))
	q.nodes[node] = ops
	return ops[i].start
}

// replan sets the expected starts and servers of ops[from:], in order:
// each on the server of f free first, when it was queued or when that
// server is free. f, the servers' free times, is updated.
func replan(ops []queued, from, n int, f []time.Time) {
	for k := from; k < len(ops); k++ {
		s := earliest(f)
		ops[k].server = s
		ops[k].start = maxTime(ops[k].queued, f[s])
		f[s] = ops[k].start.Add(ops[k].d)
	}
}

// Done removes an operation at now (it ended, failed or was abandoned) and
// re-plans those queued behind it on its node: if it was expected to have
// started, its server is free from now, and the first one left that was
// waiting for it starts then; the others in turn. An unknown id is
// ignored.
func (q *Queue) Done(id string, now time.Time) {
	for node, ops := range q.nodes {
		for i, op := range ops {
			if op.id != id {
				continue
			}
			ops = append(ops[:i:i], ops[i+1:]...)
			n := q.Concurrency(node)
			freed := -1
			if !op.start.After(now) {
				freed = op.server % n
			}
			// The operations after it that are expected to have started
			// on other servers keep their starts.
			from := i
			for from < len(ops) && !ops[from].start.After(now) && ops[from].server%n != freed {
				from++
			}
			replan(ops, from, n, free(ops[:from], n, freed, now))
			if len(ops) == 0 {
				delete(q.nodes, node)
			} else {
				q.nodes[node] = ops
			}
			return
		}
	}
}

// Len is the number of operations queued or running on node.
func (q *Queue) Len(node string) int { return len(q.nodes[node]) }

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// DumpClass is the class of a preemption dump made for reason r.
func DumpClass(r Reason) Class {
	if r == ReasonDeadlineAtRisk {
		return ClassDeadlineDump
	}
	return ClassPreemptDump
}
