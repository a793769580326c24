package tasktracker

import (
	"fmt"
	"time"

	"gomr/conf"
)

// KeyCountersInterval names how often a TaskTracker's heartbeats carry the
// counters of its running attempts, as Hadoop 1's TaskTracker sends them
// only every COUNTER_UPDATE_INTERVAL (60 s there; 10 s here, so that a
// small cluster's pages stay nearly live) while every status still
// carries its progress. A status that is not RUNNING (an attempt that
// ended, asks to commit, was split or checkpointed) always carries its
// counters, and so does every heartbeat until one with counters has been
// answered after the tracker registered. The JobTracker keeps an
// attempt's last counters when a RUNNING status comes without any
// (jobtracker's attemptStatusLocked). Counters are most of what a
// heartbeat's statuses weigh, and decoding them for every running attempt
// of every heartbeat was up to a fifth of what the JobTracker allocated at
// 10,000 trackers (docs/scaling.md); a running task's counters on the web
// UI and in mr job -status are then up to this old, as in Hadoop 1. It
// matters where heartbeats come more often than this: with the adaptive
// heartbeat interval's defaults, a cluster of a few hundred trackers or
// fewer; a cluster of 10,000 heartbeats every 100 s, and every heartbeat
// carries them.
const KeyCountersInterval = "mapreduce.tasktracker.counters.update.interval"

// DefaultCountersInterval is KeyCountersInterval's default.
const DefaultCountersInterval = 10 * time.Second

func init() {
	conf.Register(conf.Key{Name: KeyCountersInterval, Type: conf.Duration, Default: DefaultCountersInterval.String(),
		Description: "how often heartbeats carry the counters of running attempts (Hadoop 1's COUNTER_UPDATE_INTERVAL, 60 s there); statuses of attempts that are not running always carry them; 0: every heartbeat",
		Valid:       "a duration >= 0",
		Check: func(v any) error {
			if d, ok := v.(time.Duration); ok && d < 0 {
				return fmt.Errorf("want a duration >= 0")
			}
			return nil
		}})
}

// CounterReports decides which heartbeats carry the counters of running
// attempts (KeyCountersInterval). The TaskTracker and the load generator's
// simulated trackers both use it. It is not safe for concurrent use. A
// nil *CounterReports sends the counters with every heartbeat.
type CounterReports struct {
	interval time.Duration
	// last is when the heartbeat that last carried the counters was
	// built, once its reply arrived; zero: none since registering.
	last time.Time
}

// NewCounterReports returns the rule for the given interval (0 or less:
// every heartbeat carries the counters).
func NewCounterReports(interval time.Duration) *CounterReports {
	return &CounterReports{interval: interval}
}

// Due tells whether a heartbeat built at now carries the counters of
// running attempts: the first after registering, and then one when the
// interval has passed since the last one that was answered (a heartbeat
// whose reply was lost is followed by another that carries them).
func (c *CounterReports) Due(now time.Time) bool {
	return c == nil || c.interval <= 0 || c.last.IsZero() || now.Sub(c.last) >= c.interval
}

// Delivered records that the heartbeat built at builtAt, which carried
// the counters, was answered.
func (c *CounterReports) Delivered(builtAt time.Time) {
	if c != nil && builtAt.After(c.last) {
		c.last = builtAt
	}
}

// Reset makes the next heartbeat carry the counters: the tracker is
// registering afresh, possibly with a JobTracker that knows none.
func (c *CounterReports) Reset() {
	if c != nil {
		c.last = time.Time{}
	}
}
