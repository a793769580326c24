package preempt

import "time"

// Class is an operation's priority in a node's checkpoint/restore queue
// (spec §5.6, the order the TaskTrackers' queues keep): a preemption dump
// holds back the job waiting for its slot, a restore the task it resumes,
// a clone dump only a speculative copy. Lower runs first; within a class,
// in arrival order; the operation running is never overtaken.
type Class uint8

const (
	// ClassPreemptDump is a dump that frees a slot (the planner's own).
	ClassPreemptDump Class = iota
	// ClassRestore is the restore of a checkpointed task.
	ClassRestore
	// ClassCloneDump is a dump for a speculative clone.
	ClassCloneDump
)

// Queue models the per-node sequential checkpoint/restore queue of
// [002 §3.4.2.2]: a node dumps or restores one image at a time, so an
// operation waits for those before it, in the order of its Class. The
// planner counts that wait in a checkpoint's cost (Alg. 1's
// queue_time_dump) and in Alg. 2's resume choice. Each operation is known
// by an id (the attempt's name), its class and its expected duration; it
// is expected to start when it was queued or when the one before it on
// its node is expected to end, whichever is later, and the one running
// when it ends lets the next start at once. An operation expected to have
// started by the time another is queued counts as running: it is not
// overtaken. It is not safe for concurrent use.
type Queue struct {
	nodes map[string][]queued
}

type queued struct {
	id     string
	class  Class
	queued time.Time
	start  time.Time // expected start
	d      time.Duration
}

// NewQueue returns an empty queue.
func NewQueue() *Queue { return &Queue{nodes: map[string][]queued{}} }

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

// Wait is how long a preemption dump queued on node at now would wait
// before it runs (WaitClass of ClassPreemptDump).
func (q *Queue) Wait(node string, now time.Time) time.Duration {
	return q.WaitClass(node, ClassPreemptDump, now)
}

// WaitClass is how long an operation of class c queued on node at now
// would wait before it runs: what is left, as expected, of the operation
// running there and of those it would queue behind. An operation running
// late counts as ending now.
func (q *Queue) WaitClass(node string, c Class, now time.Time) time.Duration {
	ops := q.nodes[node]
	i := place(ops, c, now)
	if i == 0 {
		return 0
	}
	prev := ops[i-1]
	if end := prev.start.Add(prev.d); end.After(now) {
		return end.Sub(now)
	}
	return 0
}

// Add queues an operation of class c and expected duration d on node at
// now and returns when it is expected to start; the waiting operations it
// overtakes are expected to start later by d.
func (q *Queue) Add(node, id string, c Class, now time.Time, d time.Duration) time.Time {
	ops := q.nodes[node]
	i := place(ops, c, now)
	ops = append(ops[:i:i], append([]queued{{id: id, class: c, queued: now, d: d}}, ops[i:]...)...)
	replan(ops, i, now)
	q.nodes[node] = ops
	return ops[i].start
}

// replan sets the expected starts of ops[from:], each when it was queued
// or when the one before it is expected to end (now for the first).
func replan(ops []queued, from int, now time.Time) {
	for k := from; k < len(ops); k++ {
		prevEnd := now
		if k > 0 {
			prevEnd = ops[k-1].start.Add(ops[k-1].d)
		}
		ops[k].start = maxTime(ops[k].queued, prevEnd)
	}
}

// Done removes an operation at now (it ended, failed or was abandoned) and
// re-plans those queued behind it on its node: the first left starts at
// now if it was waiting for the one that ended, the others in turn. An
// unknown id is ignored.
func (q *Queue) Done(id string, now time.Time) {
	for node, ops := range q.nodes {
		for i, op := range ops {
			if op.id != id {
				continue
			}
			ops = append(ops[:i:i], ops[i+1:]...)
			replan(ops, i, now)
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
