package child

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"gomr/mr"
	"gomr/mr/fs"
	"gomr/mrpb"
	"gomr/security"
	"gomr/shuffle"
	"gomr/spill"
)

func (t *task) runReduce() error {
	tc := taskContext{t}
	c, err := mr.NewCommitter(t.spec.Output)
	if err != nil {
		return err
	}
	scratch, err := filepath.Abs("shuffle")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(scratch, 0o755); err != nil {
		return fmt.Errorf("shuffle scratch dir: %w", err)
	}
	// The reduce's memory budget, shared as Hadoop's MergeManager shares
	// the reduce's heap: the shuffle buffer, the largest segment kept in
	// it, the fill that starts a merge to disk, and what may stay in
	// memory through the reduce (docs/performance.md).
	reduceMem := int64(t.conf.Int(keyReduceMemoryMB)) << 20
	// The job's combiner also runs in the merges that write disk runs,
	// as in Hadoop, so that a reduce whose buffer is smaller than its
	// data writes, reads and merges fewer records.
	var combiner func() (mr.Reducer, error)
	if t.def.Combiner != nil {
		combiner = func() (mr.Reducer, error) { return t.def.Combiner(tc) }
	}
	mem := max(int64(float64(reduceMem)*t.conf.Float("mapreduce.reduce.shuffle.input.buffer.percent")), 1)
	mm, err := shuffle.NewMergeManager(shuffle.MergeOptions{
		Dir:            scratch,
		MemoryBytes:    mem,
		SegmentLimit:   max(int64(float64(mem)*t.conf.Float("mapreduce.reduce.shuffle.memory.limit.percent")), 1),
		MergePercent:   max(t.conf.Float("mapreduce.reduce.shuffle.merge.percent"), 1e-6),
		InMemThreshold: t.conf.Int("mapreduce.reduce.merge.inmem.threshold"),
		RetainBytes:    int64(float64(reduceMem) * t.conf.Float("mapreduce.reduce.input.buffer.percent")),
		Factor:         t.conf.Int("mapreduce.task.io.sort.factor"),
		Compare:        t.def.Compare,
		Combiner:       combiner,
		TaskContext:    tc,
		Counters:       t.counters,
	})
	if err != nil {
		return fmt.Errorf("merge manager: %w", err)
	}
	defer mm.Close()

	// Shuffle: fetch every spill of every map, as they are announced.
	fetcher := &shuffle.Fetcher{
		// One keep-alive transport for all of this reduce's fetchers.
		Client:     &http.Client{Transport: shuffle.NewTransport(t.conf.Int("mapreduce.reduce.shuffle.parallelcopies")), Timeout: 5 * time.Minute},
		Secret:     t.launch.JobSecret,
		Retries:    t.conf.Int("mapreduce.reduce.shuffle.fetch.retries"),
		RetryDelay: t.conf.Duration("mapreduce.reduce.shuffle.retry.delay.ms"),
	}
	// With TLS the shuffle servers speak HTTPS only; the child fetches
	// with its tracker's certificate (the tracker's settings are in the
	// launch's configuration).
	if fetcher.Client.Transport, err = security.ClusterTransport(t.conf, fetcher.Client.Transport); err != nil {
		return fmt.Errorf("shuffle TLS: %w", err)
	}
	// The remainder of a split reduce fetches only the records after the
	// key it starts after (docs/split.md); it skips the groups through
	// that key all the same (skipGroupsThrough), which then skips none.
	// So does a scale-up piece of a partition, after its lower bound; and
	// a task whose range ends (a piece, or a task cut into pieces) fetches
	// the records through its upper key only.
	resume := t.launch.ReduceResume
	partition, lowered := reduceRange(t.launch)
	if lowered && t.conf.Bool(shuffle.KeyRangeFetch) {
		fetcher.After, fetcher.Def = append([]byte{}, resume.AfterKey...), t.spec.Def
		if resume.GetBounded() {
			fetcher.Upto, fetcher.Bounded = append([]byte{}, resume.UpperKey...), true
		}
	}
	numMaps := int(t.launch.NumMaps)
	events := &eventSource{t: t, partition: partition}
	err = shuffle.Run(t.ctx, events, shuffle.Options{
		Reduce:        partition,
		NumMaps:       numMaps,
		Parallel:      t.conf.Int("mapreduce.reduce.shuffle.parallelcopies"),
		BatchSegments: t.conf.Int(shuffle.KeyBatchSegments),
		BatchBytes:    t.conf.Int64(shuffle.KeyBatchBytes),
		Fetcher:       fetcher,
		Merger:        mm,
		Counters:      t.counters,
		Log:           t.log,
		Progress: func(done, total int) {
			if total > 0 {
				t.setProgress(float64(done) / float64(total) / 3)
			}
		},
	})
	if err != nil {
		return err // shuffle.Run's errors name the shuffle and the reduce
	}
	t.setProgress(1.0 / 3)
	t.setPhase("SORT")
	slow, err := t.newSlowdown()
	if err != nil {
		return err
	}
	mergeStart := time.Now()
	it, err := mm.Finish(t.ctx)
	if err != nil {
		return fmt.Errorf("merge: %w", err)
	}
	st := mm.Stats()
	t.log.Info("reduce merge", "shuffle_buffer_bytes", mem, "mem_to_disk_merges", st.MemToDisk, "mem_to_disk_as_is", st.MemToDiskAsIs, "segments_to_disk", st.DirectToDisk,
		"disk_merges", st.DiskMerges, "final_disk_runs", st.FinalRuns, "final_disk_streams", st.FinalStreams, "final_in_memory", st.FinalInMemory,
		"combine_input_records", st.CombineInput, "combine_output_records", st.CombineOutput, "sort_phase", time.Since(mergeStart))
	slow.phase(t.ctx, time.Since(mergeStart), func(f float64) { t.setProgress(1.0/3 + f/3) })
	t.setProgress(2.0 / 3)
	t.setPhase("REDUCE")

	reducer := mr.Reducer(identityReducer{})
	if t.def.Reducer != nil {
		if reducer, err = t.def.Reducer(tc); err != nil {
			return fmt.Errorf("creating the reducer: %w", err)
		}
	}
	// A reduce of a task that was split writes the next fragment of its
	// partition (docs/split.md); so does one that is split (renamed then),
	// and a scale-up piece of a partition, or a task cut into pieces.
	index := int(t.launch.Index)
	frag := int(resume.GetFragment())
	name := mr.PartName(false, index)
	if frag > 0 || resume.GetPiece() || resume.GetBounded() {
		name = mr.PieceFragmentName(partition, index, frag)
	}
	path := fs.Join(c.AttemptDir(t.launch.AttemptId), name)
	w, err := t.def.Output.Create(c.FS, path)
	if err != nil {
		return fmt.Errorf("creating output %s: %w", path, err)
	}
	// What the reduce phase reads: the records merged (a range fetch gets
	// fewer than the spills announced, and a spill announced by a map
	// attempt withdrawn before it was fetched is not read).
	total := mm.Records()
	counted := &countingIterator{it: it}
	groups := spill.NewGrouper(counted, t.def.Compare)
	inGroups := t.counters.Get(mr.TaskCounterGroup, mr.ReduceInputGroups)
	inRecords := t.counters.Get(mr.TaskCounterGroup, mr.ReduceInputRecords)
	outRecords := t.counters.Get(mr.TaskCounterGroup, mr.ReduceOutputRecords)
	written := t.counters.Get(mr.FileSystemCounterGroup, fsCounterPrefix(t.spec.Output)+"_BYTES_WRITTEN")
	formatWritten := t.counters.Get(mr.FileOutputFormatCounterGroup, mr.BytesWritten)
	emit := mr.EmitFunc(func(k, v []byte) error {
		outRecords.Increment()
		return w.Write(k, v)
	})
	// The key groups of the fragments before this one were reduced by
	// the attempts that committed them: skipped (skip-replay), and their
	// records not counted as this attempt's input.
	have := groups.NextKey()
	var skipped int64
	if lowered {
		if have, err = skipGroupsThrough(t.ctx, groups, t.def.Compare, resume.AfterKey); err != nil {
			w.Close()
			return err
		}
		skipped = counted.n.Load()
		if have {
			skipped-- // the first record of the group to reduce is read
		}
		t.log.Info("reduce resumed after a split", "fragment", frag, "records_skipped", skipped)
	}
	slow.start()
	t.slow = slow
	settle := flusherOf(w, t.spec.Output)
	t.setCloneable(settle != nil)
	// split: the attempt was ordered split and stops before the current
	// group (at a key-group boundary, after lastKey's group).
	// A bounded task (a scale-up piece, or a task cut into pieces) stops
	// before the first group after its upper key: the next piece's.
	var lastKey []byte
	keyCmp := keyCompare(t.def.Compare)
	n, split, beyond := 0, false, false
	for ; have; have = groups.NextKey() {
		if resume.GetBounded() && keyCmp(groups.Key(), resume.UpperKey) > 0 {
			beyond = true
			break
		}
		if n > 0 && t.splitOrdered.Load() {
			split = true
			break
		}
		inGroups.Increment()
		if err := reducer.Reduce(tc, groups.Key(), groups.Values(), emit); err != nil {
			w.Close()
			return fmt.Errorf("reduce: %w", err)
		}
		lastKey = append(lastKey[:0], groups.Key()...)
		if n++; n&63 == 0 {
			slow.tick(t.ctx)
			if settle != nil && t.quiesceRequested() {
				if err := t.quiesce(settle); err != nil {
					w.Close()
					return err
				}
			}
		}
		if n&1023 == 0 {
			inRecords.Set(counted.n.Load() - skipped)
			if total > skipped {
				t.setProgress(2.0/3 + float64(counted.n.Load()-skipped)/float64(total-skipped)/3)
			}
			if err := t.ctx.Err(); err != nil {
				w.Close()
				return err
			}
		}
	}
	if err := groups.Err(); err != nil {
		w.Close()
		return fmt.Errorf("reading merged map output: %w", err)
	}
	slow.tick(t.ctx)
	t.setCloneable(false)
	slow.report(t)
	read := counted.n.Load() - skipped
	if split || beyond {
		read-- // the first record of the group not reduced
	}
	inRecords.Set(read)
	var bounds [][]byte
	if k := int(t.splitFanout.Load()); split && k > 1 {
		// A split for idle slots: the keys that cut the rest into pieces.
		scanStart := time.Now()
		if bounds, err = scanBounds(t.ctx, groups, counted.n.Load, t.def.Compare, resume.GetUpperKey(), resume.GetBounded(), k); err != nil {
			w.Close()
			return err
		}
		t.log.Info("reduce scale-up split: bounds of the pieces", "fanout", k, "bounds", len(bounds), "scan", time.Since(scanStart))
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("closing output %s: %w", path, err)
	}
	written.Set(w.BytesWritten())
	formatWritten.Set(w.BytesWritten())
	if split {
		if err := t.reduceSplitAt(c, path, partition, index, frag, lastKey, bounds); err != nil {
			return err
		}
	}
	t.setProgress(1)
	return t.commit(c)
}

// countingIterator counts the records read from the merge: every record,
// whether or not the reducer walks its group's values, as Hadoop counts
// REDUCE_INPUT_RECORDS.
type countingIterator struct {
	it spill.Iterator
	n  atomic.Int64
}

func (c *countingIterator) Next() bool {
	if c.it.Next() {
		c.n.Add(1)
		return true
	}
	return false
}
func (c *countingIterator) Key() []byte   { return c.it.Key() }
func (c *countingIterator) Value() []byte { return c.it.Value() }
func (c *countingIterator) Err() error    { return c.it.Err() }

// identityReducer writes every value under its key.
type identityReducer struct{}

func (identityReducer) Reduce(_ mr.TaskContext, key []byte, values mr.ValueIterator, out mr.Emitter) error {
	for values.Next() {
		if err := out.Emit(key, values.Value()); err != nil {
			return err
		}
	}
	return nil
}

// eventSource reads spill events through the umbilical.
type eventSource struct {
	t         *task
	partition int // the map-output partition the reduce reduces
	// addrs is the job's shuffle addresses as the replies gave them: each
	// reply sends only those it lacks. MapEvents is called by one poller
	// at a time (shuffle.EventSource).
	addrs mrpb.JobAddresses
}

func (e *eventSource) MapEvents(ctx context.Context, from int) ([]shuffle.Event, error) {
	l := e.t.launch
	// Compact: the events without what the reduce can work out (their
	// kind, attempt ids, and addresses it was sent before), expanded here.
	req := &mrpb.MapEventsRequest{JobId: l.JobId, Reduce: int32(e.partition), From: int32(from), WaitMs: 1000, AttemptId: l.AttemptId}
	e.addrs.Ask(req)
	resp, err := e.t.umb.GetMapEvents(ctx, req)
	if err != nil {
		return nil, err
	}
	if err := e.addrs.Expand(resp, l.JobId); err != nil {
		return nil, err
	}
	out := make([]shuffle.Event, 0, len(resp.Events))
	for _, ev := range resp.Events {
		switch ev.Kind {
		case "SPILL_READY":
			// A JobTracker that announces spills without their segments
			// (mapreduce.jobtracker.map-events.max-segments) leaves it
			// out: the shuffle reads it from the serving tracker.
			seg := ev.Segment
			out = append(out, shuffle.Event{Kind: shuffle.SpillReady, Location: shuffle.SpillLocation{
				JobID: l.JobId, MapTask: int(ev.MapTask), Spill: int(ev.Spill), Final: ev.Final,
				AttemptID: ev.AttemptId, Host: ev.ShuffleAddress,
				Segment:        spill.SegmentInfo{Offset: seg.GetOffset(), Length: seg.GetLength(), RawLength: seg.GetRawLength(), Records: seg.GetRecords(), CRC: seg.GetCrc()},
				SegmentUnknown: seg == nil,
			}})
		case "MAP_OBSOLETE":
			out = append(out, shuffle.Event{Kind: shuffle.MapObsolete, MapTask: int(ev.MapTask), AttemptID: ev.AttemptId})
		case "MAPS_ADDED":
			out = append(out, shuffle.Event{Kind: shuffle.MapsAdded, MapTask: int(ev.MapTask)})
		default:
			return nil, fmt.Errorf("unknown map event kind %q", ev.Kind)
		}
	}
	return out, nil
}

func (e *eventSource) ReportFetchFailure(ctx context.Context, loc shuffle.SpillLocation, cause error) error {
	_, err := e.t.umb.ReportFetchFailure(ctx, &mrpb.FetchFailureRequest{
		JobId: loc.JobID, ReduceAttemptId: e.t.launch.AttemptId, MapAttemptId: loc.AttemptID,
		MapTask: int32(loc.MapTask), Spill: int32(loc.Spill), Cause: cause.Error(),
	})
	return err
}
