package preempt

import (
	"fmt"
	"time"
)

// Learner keeps each node's Model, starting from the configured defaults
// and updated from the dumps, restores and image transfers the runtime
// measures, with the damped estimate the speculator uses for the clone
// cost: bw ← (1-w)·bw + w·bytes/time, for measurements of at least
// MinSampleBytes (small images are dominated by fixed costs and would
// read as slow media). It is not safe for concurrent use.
type Learner struct {
	prior   Model
	w       float64
	minB    int64
	nodes   map[string]*Model
	samples int
}

// NewLearner returns a learner at prior with smoothing weight w in (0, 1].
func NewLearner(prior Model, w float64, minSampleBytes int64) *Learner {
	return &Learner{prior: prior, w: w, minB: minSampleBytes, nodes: map[string]*Model{}}
}

// Model returns the node's current model (the prior for a node never
// measured).
func (l *Learner) Model(node string) Model {
	if m := l.nodes[node]; m != nil {
		return *m
	}
	return l.prior
}

// Samples is the number of measurements taken into account.
func (l *Learner) Samples() int { return l.samples }

// Op names what a measurement timed.
type Op uint8

// Measured operations.
const (
	OpDump Op = iota
	OpRestore
	OpTransfer
)

// Observe takes a measured operation on a node into account. It fails,
// changing nothing, on a negative size or a time that is not positive; a
// measurement below the minimum sample size is ignored.
func (l *Learner) Observe(node string, op Op, bytes int64, d time.Duration) error {
	if bytes < 0 || d <= 0 {
		return fmt.Errorf("preemption measurement on %s: %d bytes in %v: want bytes >= 0 and a positive time", node, bytes, d)
	}
	if bytes < l.minB || bytes == 0 {
		return nil
	}
	m := l.nodes[node]
	if m == nil {
		p := l.prior
		m = &p
		l.nodes[node] = m
	}
	bw := float64(bytes) / d.Seconds()
	switch op {
	case OpDump:
		m.BWWrite = (1-l.w)*m.BWWrite + l.w*bw
	case OpRestore:
		m.BWRead = (1-l.w)*m.BWRead + l.w*bw
	case OpTransfer:
		m.BWNet = (1-l.w)*m.BWNet + l.w*bw
	default:
		return fmt.Errorf("preemption measurement on %s: unknown operation %d", node, op)
	}
	l.samples++
	return nil
}
