package jobtracker

import (
	"fmt"
	"time"

	"gomr/conf"
)

// Configuration keys of the heartbeat interval the JobTracker tells its
// trackers (Hadoop 1's names and defaults). The minimum interval is
// mapreduce.tasktracker.heartbeat.interval, the period a TaskTracker uses
// until the JobTracker's first reply.
const (
	// KeyHeartbeatsInSecond is the heartbeat rate the JobTracker paces its
	// trackers to once the cluster is large enough (Hadoop's
	// mapreduce.jobtracker.heartbeats.in.second, 100 by default).
	KeyHeartbeatsInSecond = "mapreduce.jobtracker.heartbeats.in.second"
	// KeyHeartbeatsScalingFactor multiplies the interval (Hadoop's
	// mapreduce.jobtracker.heartbeats.scaling.factor, 1 by default).
	KeyHeartbeatsScalingFactor = "mapreduce.jobtracker.heartbeats.scaling.factor"
)

func init() {
	conf.Register(
		conf.Key{Name: KeyHeartbeatsInSecond, Type: conf.Int, Default: "100", Check: positiveInt,
			Description: "heartbeats a second the JobTracker paces its trackers to: the interval it tells them grows with the cluster, to trackers / this many seconds (at least mapreduce.tasktracker.heartbeat.interval)"},
		conf.Key{Name: KeyHeartbeatsScalingFactor, Type: conf.Float, Default: "1.0", Check: scalingFactor,
			Description: "multiplies the heartbeat interval the cluster's size asks for (mapreduce.jobtracker.heartbeats.in.second)"},
	)
}

func positiveInt(v any) error {
	if n, ok := v.(int); !ok || n < 1 {
		return fmt.Errorf("want an integer >= 1")
	}
	return nil
}

func scalingFactor(v any) error {
	if f, ok := v.(float64); !ok || f < 0.01 || f > 1000 {
		return fmt.Errorf("want a number from 0.01 to 1000")
	}
	return nil
}

// HeartbeatInterval is the interval the JobTracker tells a tracker to wait
// before its next heartbeat in a cluster of trackers live trackers: Hadoop
// 1's law (JobTracker.getNextHeartbeatInterval), scaling × trackers /
// perSecond seconds, so that the trackers together send about perSecond
// heartbeats a second, and at least minimum. Hadoop rounds trackers /
// perSecond up to whole seconds, which gives a cluster of 2 trackers a
// 1 s interval; this law does not round, so that small clusters keep the
// minimum (0.3 s by default) and the interval grows smoothly from
// perSecond × minimum trackers on. It is capped at a third of expiry (the
// tracker expiry interval, when positive), so that a tracker heartbeats
// at least three times before it could be declared lost.
func HeartbeatInterval(trackers, perSecond int, scaling float64, minimum, expiry time.Duration) time.Duration {
	d := minimum
	if perSecond > 0 && trackers > 0 {
		d = max(d, time.Duration(scaling*float64(trackers)/float64(perSecond)*float64(time.Second)).Round(time.Millisecond))
	}
	if expiry > 0 {
		d = min(d, max(expiry/3, minimum))
	}
	return d
}

// heartbeatIntervalLocked is the interval for the next heartbeat reply.
func (jt *JobTracker) heartbeatIntervalLocked() time.Duration {
	return HeartbeatInterval(len(jt.trackers), jt.cfg.Int(KeyHeartbeatsInSecond), jt.cfg.Float(KeyHeartbeatsScalingFactor),
		jt.cfg.Duration("mapreduce.tasktracker.heartbeat.interval"), jt.cfg.Duration("mapreduce.jobtracker.expire.trackers.interval"))
}
