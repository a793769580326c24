package preempt

import "time"

// Queue models the per-node sequential checkpoint/restore queue of
// [002 §3.4.2.2]: a node dumps or restores one image at a time, so an
// operation waits for those queued before it. The planner counts that wait
// in a checkpoint's cost (Alg. 1's queue_time_dump) and in Alg. 2's resume
// choice. Each operation is known by an id (the attempt's name) and its
// expected duration; it is expected to start when it was queued or when
// the one before it on its node is expected to end, whichever is later,
// and the one running when it ends lets the next start at once. It is not
// safe for concurrent use.
type Queue struct {
	nodes map[string][]queued
}

type queued struct {
	id     string
	queued time.Time
	start  time.Time // expected start
	d      time.Duration
}

// NewQueue returns an empty queue.
func NewQueue() *Queue { return &Queue{nodes: map[string][]queued{}} }

// Wait is how long an operation queued on node at now would wait before it
// runs: what is left, as expected, of the operation running there and of
// those queued behind it. An operation running late counts as ending now.
func (q *Queue) Wait(node string, now time.Time) time.Duration {
	ops := q.nodes[node]
	if len(ops) == 0 {
		return 0
	}
	last := ops[len(ops)-1]
	if end := last.start.Add(last.d); end.After(now) {
		return end.Sub(now)
	}
	return 0
}

// Add queues an operation of expected duration d on node at now and
// returns when it is expected to start.
func (q *Queue) Add(node, id string, now time.Time, d time.Duration) time.Time {
	start := now.Add(q.Wait(node, now))
	q.nodes[node] = append(q.nodes[node], queued{id: id, queued: now, start: start, d: d})
	return start
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
			for k := i; k < len(ops); k++ {
				prevEnd := now
				if k > 0 {
					prevEnd = ops[k-1].start.Add(ops[k-1].d)
				}
				ops[k].start = maxTime(ops[k].queued, prevEnd)
			}
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
