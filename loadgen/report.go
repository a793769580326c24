package loadgen

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"text/tabwriter"
)

// WriteTable writes a run's figures as a table.
func WriteTable(w io.Writer, r *Result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(k, format string, a ...any) { fmt.Fprintf(tw, "%s\t"+format+"\n", append([]any{k}, a...)...) }
	profiles := ""
	if r.Profiles {
		profiles = ", every job's profile in its history"
	}
	row("jobtracker", "%s %s (policy %s%s)", r.Mode, r.JobTracker, orDefault(r.Policy), profiles)
	if len(r.Submissions) > 0 {
		for _, s := range r.Submissions {
			client := ""
			if s.Input != "" {
				client = fmt.Sprintf("the client's splits of %s and encoding %s (a request of %.1f MB); ", s.Input, ms(s.PrepareMs), float64(s.RequestBytes)/(1<<20))
			}
			row("submit "+s.Job, "%d maps: %sSubmitJob %s; JobTracker RSS %.1f MB before, %.1f MB after (heap live %.1f MB)",
				s.Maps, client, ms(s.SubmitMs), s.RSSBeforeMB, s.RSSAfterMB, s.HeapAfterMB)
		}
		return tw.Flush()
	}
	follow := ""
	if r.FollowInterval {
		follow = ", followed"
	}
	row("trackers", "%d × (%d map + %d reduce slots), %d connections, heartbeat %gs%s, paced from the %s (JobTracker asks %gs%s)",
		r.Trackers, r.MapSlots, r.ReduceSlots, r.Connections, r.HeartbeatS, oob(r.OutOfBand), r.Pacing, r.AdvertisedHeartbeatS, follow)
	row("window", "%.1fs measured of %.1fs", r.WindowS, r.DurationS)
	row("heartbeats/s", "%.1f sustained (%.1f at the interval), %d errors", r.HeartbeatsPerSec, r.ExpectedHeartbeatsPerSec, r.HeartbeatErrors)
	row("heartbeat latency", "%s", r.HeartbeatLatency)
	row("slot free → launch", "%s", r.SlotToLaunch)
	row("end reported → launch", "%s", r.ReportToLaunch)
	row("launches/s", "%.1f (%d launches, %d kills)", r.LaunchesPerSec, r.Launches, r.Kills)
	row("map events/s", "%.1f GetMapEvents calls of shuffling reduces, %d errors", r.MapEventCallsPerSec, r.MapEventErrors)
	row("slots busy", "maps %.1f%%, reduces %.1f%%", 100*r.MapSlotUtilization, 100*r.ReduceSlotUtilization)
	row("jobtracker CPU", "%s (generator process: %s, GOGC %d, nice %d)", cores(r.Process.CPUCores), cores(r.GeneratorCPUCores), r.GeneratorGCPercent, r.GeneratorNice)
	row("jobtracker RSS", "%s start, %s peak, %s end; heap live %s; %s goroutines [%s]",
		mbs(r.Process.RSSStartMB), mbs(r.Process.RSSPeakMB), mbs(r.Process.RSSEndMB), mbs(r.Process.HeapLiveMB), count(r.Process.Goroutines), r.Process.Source)
	if l := r.Process.Lock; l != nil {
		row("jobtracker lock", "heartbeats wait mean %.3fms p99 %s; hold it mean %.3fms p99 %s (%d heartbeats)",
			l.WaitMeanMs, bucketBound(l.WaitP99Ms), l.HeldMeanMs, bucketBound(l.HeldP99Ms), l.Heartbeats)
		row("jobtracker handler", "heartbeat mean %.3fms p99 %s; GC %d cycles, %.1fms of pauses in all", l.HandlerMeanMs, bucketBound(l.HandlerP99Ms), l.GCCycles, l.GCPauseMs)
		if sv := l.Server; sv != nil {
			row("jobtracker-side latency", "p50 %s  p99 %s  p99.9 %s  max %s  (mean %s, n=%d; gRPC server, stream start to reply written)",
				quantileMs(sv.P50Ms), quantileMs(sv.P99Ms), quantileMs(sv.P999Ms), serverBound(sv.MaxMs), ms(sv.MeanMs), sv.Heartbeats)
		}
		for _, h := range l.Holders {
			row("lock held by "+h.Holder, "%d holds, %s in all, mean %.3fms, p99 %s, max %s",
				h.Holds, ms(h.TotalMs), h.MeanMs, bucketBound(h.P99Ms), bucketBound(h.MaxMs))
		}
	}
	row("trackers lost", "%d told so; %s logged by the JobTracker; %d of %d live at the end", r.TrackersLost, count(int(r.LostLogged)), r.TrackersLiveAtEnd, r.Trackers)
	for _, p := range r.Polls {
		row("poll "+p.Name, "%s%s", p.Latency, pollErrors(p.Errors))
	}
	row("submit latency", "%s", r.SubmitLatency)
	if len(r.Jobs) > maxJobRows {
		// A workload of many jobs: their states counted.
		states := map[string]int{}
		for _, j := range r.Jobs {
			states[j.State]++
		}
		names := make([]string, 0, len(states))
		for s := range states {
			names = append(names, s)
		}
		sort.Strings(names)
		line := ""
		for _, s := range names {
			line += fmt.Sprintf("%d %s ", states[s], s)
		}
		row("jobs", "%d: %s", len(r.Jobs), line)
		return tw.Flush()
	}
	for _, j := range r.Jobs {
		deadline := ""
		if j.DeadlineS > 0 {
			deadline = fmt.Sprintf(", deadline %gs", j.DeadlineS)
		}
		row("job "+j.Name, "%s %s: maps %d/%d/%d, reduces %d/%d/%d (total/launched/done)%s%s", j.ID, j.State,
			j.Maps, j.MapsLaunched, j.MapsDone, j.Reduces, j.ReducesLaunched, j.ReducesDone, deadline, errSuffix(j.Error))
	}
	return tw.Flush()
}

// maxJobRows is the most jobs the table lists one a row.
const maxJobRows = 20

func pollErrors(n int64) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("; %d failed", n)
}

func orDefault(s string) string {
	if s == "" {
		return "as configured"
	}
	return s
}

func oob(on bool) string {
	if on {
		return " + out-of-band"
	}
	return ""
}

func cores(v float64) string {
	if v < 0 {
		return "unknown (give --jobtracker-pid)"
	}
	return fmt.Sprintf("%.2f cores", v)
}

func coresShort(v float64) string {
	if v < 0 {
		return "?"
	}
	return fmt.Sprintf("%.2f", v)
}

func mbs(v float64) string {
	if v < 0 {
		return "?"
	}
	return fmt.Sprintf("%.1f MB", v)
}

func count(v int) string {
	if v < 0 {
		return "?"
	}
	return fmt.Sprint(v)
}

func errSuffix(e string) string {
	if e == "" {
		return ""
	}
	return ": " + e
}

// WriteJSON writes a run's result as indented JSON.
func WriteJSON(w io.Writer, r *Result) error {
	e := json.NewEncoder(w)
	e.SetIndent("", "  ")
	return e.Encode(r)
}

// ReadResults reads results written by WriteJSON.
func ReadResults(paths []string) ([]*Result, error) {
	var out []*Result
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("loadgen: reading a result: %w", err)
		}
		var r Result
		if err := json.Unmarshal(b, &r); err != nil {
			return nil, fmt.Errorf("loadgen: result %s: %w", p, err)
		}
		out = append(out, &r)
	}
	return out, nil
}

// WriteCurves writes one line per run, by policy, then trackers, then
// maps per job, then reduces per job: the curves of make bench-scale over
// the cluster's size and over the jobs' size, and its runs with reduces
// shuffling (with their map-event calls a second). Submit-only results (--submit-only) are a
// table of their own after the runs: each submission's time and what it
// added to the JobTracker's RSS, per map.
func WriteCurves(w io.Writer, rs []*Result) error {
	var runs, submits []*Result
	for _, r := range rs {
		if len(r.Submissions) > 0 {
			submits = append(submits, r)
		} else {
			runs = append(runs, r)
		}
	}
	sort.SliceStable(runs, func(i, j int) bool {
		a, b := runs[i], runs[j]
		if a.Policy != b.Policy {
			return a.Policy < b.Policy
		}
		if a.Trackers != b.Trackers {
			return a.Trackers < b.Trackers
		}
		if mapsPerJob(a) != mapsPerJob(b) {
			return mapsPerJob(a) < mapsPerJob(b)
		}
		return reducesPerJob(a) < reducesPerJob(b)
	})
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	if len(runs) > 0 {
		fmt.Fprintln(tw, "policy\ttrackers\tjobs\tmaps/job\treduces/job\thb/s\t(target)\thb p50\thb p99\tJT p99\thb max\tfree→launch p50\tp99\tlaunch/s\tmaps busy\tevents calls/s\tJT CPU\tgen CPU\tJT RSS peak\theap live\tlost\tdeadlines\t")
	}
	for _, r := range runs {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.0f\t%.0f\t%.0f\t%.0f\t%s\t%s\t%s\t%s\t%s\t%s\t%.1f\t%.0f%%\t%.0f\t%s\t%s\t%s\t%s\t%d\t%s\t\n",
			orDefault(r.Policy), r.Trackers, len(r.Jobs), mapsPerJob(r), reducesPerJob(r), r.HeartbeatsPerSec, r.ExpectedHeartbeatsPerSec,
			ms(r.HeartbeatLatency.P50Ms), ms(r.HeartbeatLatency.P99Ms), serverP99(r), ms(r.HeartbeatLatency.MaxMs),
			ms(r.SlotToLaunch.P50Ms), ms(r.SlotToLaunch.P99Ms), r.LaunchesPerSec, 100*r.MapSlotUtilization, r.MapEventCallsPerSec,
			coresShort(r.Process.CPUCores), coresShort(r.GeneratorCPUCores), mbs(r.Process.RSSPeakMB), mbs(r.Process.HeapLiveMB),
			max(r.TrackersLost, r.LostLogged), deadlines(r))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	var subs []Submission
	for _, r := range submits {
		subs = append(subs, r.Submissions...)
	}
	if len(subs) == 0 {
		return nil
	}
	sort.SliceStable(subs, func(i, j int) bool { return subs[i].Maps < subs[j].Maps })
	if len(runs) > 0 {
		fmt.Fprintln(w)
	}
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "submit-only: maps\tclient: splits, encoding\trequest\tSubmitJob\tJT RSS before\tafter\tper map\theap live after\t")
	for _, s := range subs {
		prep, req := "-", "-"
		if s.Input != "" {
			prep, req = ms(s.PrepareMs), mbs(float64(s.RequestBytes)/(1<<20))
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", s.Maps, prep, req, ms(s.SubmitMs), mbs(s.RSSBeforeMB), mbs(s.RSSAfterMB),
			perMap(s), mbs(s.HeapAfterMB))
	}
	return tw.Flush()
}

// deadlines describes a run's deadlines for the curves: "-" when no job
// had one, the deadline when every job had the same, "varied" otherwise;
// ",profiles" when the JobTracker started with the jobs' profiles.
func deadlines(r *Result) string {
	d, varied := -1.0, false
	for _, j := range r.Jobs {
		if d >= 0 && j.DeadlineS != d {
			varied = true
		}
		d = j.DeadlineS
	}
	s := "-"
	switch {
	case varied:
		s = "varied"
	case d > 0:
		s = fmt.Sprintf("%gs", d)
	}
	if r.Profiles {
		s += ",profiles"
	}
	return s
}

// mapsPerJob is the mean number of maps of a run's jobs (0 without jobs).
func mapsPerJob(r *Result) float64 { return perJob(r, func(j JobResult) int { return j.Maps }) }

// reducesPerJob is the mean number of reduces of a run's jobs (0 without
// jobs).
func reducesPerJob(r *Result) float64 { return perJob(r, func(j JobResult) int { return j.Reduces }) }

// perJob is the mean of n over a run's jobs (0 without jobs).
func perJob(r *Result, n func(JobResult) int) float64 {
	if len(r.Jobs) == 0 {
		return 0
	}
	sum := 0
	for _, j := range r.Jobs {
		sum += n(j)
	}
	return float64(sum) / float64(len(r.Jobs))
}

// serverP99 is the JobTracker-side heartbeat latency's p99 (the one issue
// 17's target is about), or "?" when the JobTracker did not export it.
func serverP99(r *Result) string {
	if r.Process.Lock == nil || r.Process.Lock.Server == nil {
		return "?"
	}
	return quantileMs(r.Process.Lock.Server.P99Ms)
}

// perMap is what a submission added to the JobTracker's RSS, per map.
func perMap(s Submission) string {
	if s.Maps <= 0 || s.RSSBeforeMB < 0 || s.RSSAfterMB < 0 {
		return "?"
	}
	return fmt.Sprintf("%.2f KB", (s.RSSAfterMB-s.RSSBeforeMB)*1024/float64(s.Maps))
}

// quantileMs prints an interpolated quantile (-1: beyond the last
// bucket).
func quantileMs(v float64) string {
	if v < 0 {
		return "> 10s"
	}
	return ms(v)
}

// serverBound prints the bound of the highest bucket of the server-side
// latency.
func serverBound(v float64) string {
	if v < 0 {
		return "> 10s"
	}
	return fmt.Sprintf("≤ %s", ms(v))
}

// bucketBound prints a quantile's histogram bucket bound (-1: beyond the
// last bucket, 2.6 s).
func bucketBound(ms float64) string {
	if ms < 0 {
		return "> 2.6s"
	}
	return fmt.Sprintf("≤ %.3gms", ms)
}
