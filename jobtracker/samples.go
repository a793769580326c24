package jobtracker

// Time series the web UI charts: each running job's map and reduce
// progress, and the cluster's slot occupancy by job. The JobTracker takes
// a sample at the end of a heartbeat at most once a second
// (sampleLocked), and a job's last one when it ends. A series holds at
// most maxSamples samples: when full it drops every other sample and
// doubles its spacing, so that it always covers the whole run (a job's
// from its first heartbeat to its end, the cluster's from the
// JobTracker's start) at a resolution that halves as it grows.

import (
	"time"

	"gomr/partitions"
)

const (
	// sampleEvery is the smallest spacing of samples.
	sampleEvery = time.Second
	// maxSamples bounds every series.
	maxSamples = 2000
)

// series is a bounded time series of values of type V.
type series[V any] struct {
	times  []time.Time
	values []V
	// gap is the smallest spacing the series keeps, sampleEvery doubled
	// at each compaction.
	gap time.Duration
}

// add appends a sample at t, unless the last one is less than the
// series' spacing before t; with last, a sample too close to the
// previous one replaces it (a job's final state is always kept).
func (s *series[V]) add(t time.Time, v V, last bool) {
	if s.gap == 0 {
		s.gap = sampleEvery
	}
	if n := len(s.times); n > 0 && t.Sub(s.times[n-1]) < s.gap {
		if last {
			s.times[n-1], s.values[n-1] = t, v
		}
		return
	}
	if len(s.times) >= maxSamples {
		k := 0
		for i := 0; i < len(s.times); i += 2 {
			s.times[k], s.values[k] = s.times[i], s.values[i]
			k++
		}
		clear(s.values[k:])
		s.times, s.values = s.times[:k], s.values[:k]
		s.gap *= 2
	}
	s.times = append(s.times, t)
	s.values = append(s.values, v)
}

// progressSample is a job's map and reduce progress.
type progressSample [2]float32

// occupancySample is the cluster's slots and the attempts each job runs.
type occupancySample struct {
	mapSlots, reduceSlots int32
	jobs                  []jobOccupancy
	// partitions are the running maps and reduces of each partition of a
	// multi-queue policy (TYREX, SITA...), as the policy counts them; nil
	// under a policy with one queue.
	partitions [][2]int32
}

// jobOccupancy is the live attempts of one job in an occupancy sample.
type jobOccupancy struct {
	job           string
	maps, reduces int32
}

// sampleLocked samples every running job's progress and the cluster's
// occupancy, at most once per sampleEvery.
func (jt *JobTracker) sampleLocked(now time.Time) {
	if !jt.lastSample.IsZero() && now.Sub(jt.lastSample) < sampleEvery {
		return
	}
	jt.lastSample = now
	occ := occupancySample{mapSlots: int32(jt.slotTotals[partitions.Map]), reduceSlots: int32(jt.slotTotals[partitions.Reduce])}
	for _, j := range jt.order {
		if j.done() {
			continue
		}
		j.sampleProgressLocked(now, false)
		if m, r := j.live[partitions.Map], j.live[partitions.Reduce]; m+r > 0 {
			occ.jobs = append(occ.jobs, jobOccupancy{job: j.id, maps: int32(m), reduces: int32(r)})
		}
	}
	// Policies are pure code driven under jt.mu; Describe returns a copy.
	if d, ok := jt.policy.(partitions.Describer); ok {
		if st := d.Describe(now); len(st.Partitions) > 1 {
			occ.partitions = make([][2]int32, len(st.Partitions))
			for k, p := range st.Partitions {
				occ.partitions[k] = [2]int32{int32(p.RunningMaps), int32(p.RunningReduces)}
			}
		}
	}
	jt.occupancy.add(now, occ, false)
}

// sampleProgressLocked adds the job's progress now to its series.
func (j *job) sampleProgressLocked(now time.Time, last bool) {
	p := j.progresses()
	j.progressSeries.add(now, progressSample{float32(p[partitions.Map]), float32(p[partitions.Reduce])}, last)
}
