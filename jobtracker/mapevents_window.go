package jobtracker

import (
	"fmt"
	"time"

	"gomr/conf"
)

// KeyMapEventPollsInSecond bounds how often the JobTracker answers one
// job's event polls while its map events trickle in: a poll that finds
// fewer new events than a whole reply holds waits, up to the job's batch
// window (mapEventsWindow), for more. Every reduce of a job reads every
// spill event, and each reply is a write to a tracker's connection; with
// 1,000 reduces and maps ending every few milliseconds, each reduce was
// answered about ten times a second (docs/scaling.md, "reduces' event
// polls batched"). Hadoop 1's reduces ask their tracker for events about
// once a second.
const KeyMapEventPollsInSecond = "mapreduce.jobtracker.mapevents.polls.in.second"

func init() {
	conf.Register(conf.Key{Name: KeyMapEventPollsInSecond, Type: conf.Int, Default: "1000", Check: nonNegativeInt,
		Description: "event polls a second the JobTracker answers for a job whose maps are running: a reduce's poll that finds a few new spill events waits for more, up to reduces / this many seconds (at most the poll's own wait: a job of 1,000 reduces gets its events at most a second late, one of 10 reduces 10 ms); 0 answers at once"})
}

func nonNegativeInt(v any) error {
	if n, ok := v.(int); !ok || n < 0 {
		return fmt.Errorf("want an integer >= 0")
	}
	return nil
}

// mapEventsWindow is how long a poll of job j waiting at most wait may
// hold new events back for more: the job's reduces over
// mapreduce.jobtracker.mapevents.polls.in.second, at most wait; 0 when
// the key is 0.
func mapEventsWindow(reduces, pollsInSecond int, wait time.Duration) time.Duration {
	if pollsInSecond <= 0 || reduces <= 0 {
		return 0
	}
	return min(time.Duration(reduces)*time.Second/time.Duration(pollsInSecond), wait)
}

// mapsDoneLocked returns a channel closed once every map of j has finished
// (at once if they have): an event poll sleeping through its batch window
// wakes when the last map ends, so that the end of the map phase is not
// delayed. Missing a wake-up only delays a reply to the window's end.
func (j *job) mapsDoneLocked() <-chan struct{} {
	if j.mapsDone == nil {
		j.mapsDone, j.mapsDoneClosed = make(chan struct{}), false
		j.mapFinishedLocked()
	}
	return j.mapsDone
}

// mapFinishedLocked closes the channel of mapsDoneLocked if every map has
// finished; it is called as a map finishes.
func (j *job) mapFinishedLocked() {
	if j.mapsDone != nil && !j.mapsDoneClosed && j.finishedMaps >= len(j.maps) {
		close(j.mapsDone)
		j.mapsDoneClosed = true
	}
}

// mapsNotDoneLocked forgets a closed channel of mapsDoneLocked when a map
// must run again or maps are added: the next poll makes a new one.
func (j *job) mapsNotDoneLocked() {
	if j.mapsDoneClosed {
		j.mapsDone, j.mapsDoneClosed = nil, false
	}
}
