package child

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"gomr/mr"
	"gomr/mr/fs"
	"gomr/mrpb"
	"gomr/spill"
)

// fsCounterPrefix names the filesystem counters of a path: FILE or HDFS.
func fsCounterPrefix(path string) string {
	if strings.HasPrefix(path, "hdfs://") {
		return "HDFS"
	}
	return "FILE"
}

func (t *task) runMap() error {
	var whole mr.Split
	if err := json.Unmarshal(t.launch.SplitJson, &whole); err != nil {
		return fmt.Errorf("decoding the input split: %w", err)
	}
	resume := t.launch.Resume
	split, err := resumeSplit(whole, resume)
	if err != nil {
		return err
	}
	cutter, err := newMapCutter(resume)
	if err != nil {
		return err
	}
	tc := taskContext{t}
	mapper, err := t.def.Mapper(tc)
	if err != nil {
		return fmt.Errorf("creating the mapper: %w", err)
	}
	rr, err := t.def.Input.Open(t.ctx, split, t.spec.Params)
	if err != nil {
		return fmt.Errorf("opening input split %s@%d+%d: %w", split.Path, split.Start, split.Length, err)
	}
	defer rr.Close()

	var out mr.Emitter
	var finish func() error
	// settle brings the output to a quiet point for a clone; only spilled
	// output can be cloned (a map-only task writes its part file directly).
	var settle func() error
	var buf *spill.Buffer
	if t.launch.NumReduces == 0 {
		out, finish, settle, err = t.mapOnlyOutput()
	} else {
		buf, finish, err = t.spillOutput(tc, int(resume.GetFirstSpill()))
		if buf != nil {
			out, settle = buf, buf.Settle
		}
	}
	if err != nil {
		return err
	}
	// A map with spills can be split (or resume a split task) when its
	// reader knows where its next record starts.
	pos, _ := rr.(mr.PositionReader)
	if resume != nil && (buf == nil || pos == nil) {
		return fmt.Errorf("map %s was split, but its input reader cannot resume at a record", t.launch.AttemptId)
	}
	before, end := resume.GetRecordsBefore(), split.Start+split.Length
	inputRecords := t.counters.Get(mr.TaskCounterGroup, mr.MapInputRecords)
	bytesRead := t.counters.Get(mr.FileSystemCounterGroup, fsCounterPrefix(split.Path)+"_BYTES_READ")
	formatRead := t.counters.Get(mr.FileInputFormatCounterGroup, mr.BytesRead)
	slow, err := t.newSlowdown()
	if err != nil {
		return err
	}
	slow.start()
	t.slow = slow
	t.setCloneable(settle != nil)
	// Progress: as Hadoop's MapTask, the input read is 2/3 of a map with
	// reduces (its final sort and spill the last third), all of a
	// map-only one.
	mapWeight := 1.0
	if t.launch.NumReduces > 0 {
		mapWeight = 2.0 / 3
	}
	// The injected delay is k times the work: spread over the record loop
	// (where the map has quiet points), then k times the final sort and
	// spill, slept before the final spill is announced (see finalPhase):
	// the map's output is not complete until then, so the whole map takes
	// (1+k) times as long whatever the share of its final spill (a
	// third of TeraSort's record loop, a small part of WordCount's).
	n := 0
	for rr.Next() {
		inputRecords.Increment()
		if err := mapper.Map(tc, rr.Key(), rr.Value(), out); err != nil {
			return fmt.Errorf("map: %w", err)
		}
		n++
		if pos != nil && buf != nil && (cutter.pending() || t.splitOrdered.Load()) {
			off, records := pos.NextOffset(), before+int64(n)
			cut, err := cutter.after(off, records)
			if err != nil {
				return err
			}
			if t.splitOrdered.Load() && off <= end {
				t.setCloneable(false)
				if err := t.splitAt(buf, off, records); err != nil {
					return err
				}
				bytesRead.Set(rr.BytesRead())
				formatRead.Set(rr.BytesRead())
				t.setProgress(1)
				return nil
			}
			if cut != nil {
				if err := buf.Cut(); err != nil {
					return fmt.Errorf("spill at the split point at offset %d: %w", off, err)
				}
				if err := checkCutSpill(cut, buf.NextIndex()); err != nil {
					return err
				}
			}
		}
		if n&1023 == 0 {
			t.setProgress(rr.Progress() * mapWeight)
			slow.tick(t.ctx)
			if settle != nil && t.quiesceRequested() {
				if err := t.quiesce(settle); err != nil {
					return err
				}
			}
			bytesRead.Set(rr.BytesRead())
			formatRead.Set(rr.BytesRead())
			if err := t.ctx.Err(); err != nil {
				return err
			}
		}
	}
	if err := rr.Err(); err != nil {
		return fmt.Errorf("reading input %s: %w", split.Path, err)
	}
	// The end of the record loop is the map's last quiet point: the
	// input is read (progress at the record loop's share), the spill in
	// progress, if any, settles in quiesce, and the final sort has not
	// begun. A checkpoint order that arrives in the last records, or in
	// the injector's sleep for them (which it cuts short), is answered
	// here rather than refused; a restored copy goes on with the final
	// sort, after the rest of that sleep.
	t.setProgress(mapWeight)
	bytesRead.Set(rr.BytesRead())
	formatRead.Set(rr.BytesRead())
	slow.tick(t.ctx)
	if settle != nil && t.quiesceRequested() {
		if err := t.quiesce(settle); err != nil {
			return err
		}
		slow.tick(t.ctx)
	}
	t.setCloneable(false)
	t.finalFrom, t.finalWeight = time.Now(), mapWeight
	if err := finish(); err != nil {
		return err
	}
	slow.report(t)
	t.setProgress(1)
	return nil
}

// spillOutput sends map output through the sort buffer; each durable spill
// is announced to the tracker at once.
func (t *task) spillOutput(tc taskContext, firstSpill int) (*spill.Buffer, func() error, error) {
	opts := spill.Options{
		BufferBytes:   int64(t.conf.Int("mapreduce.task.io.sort.mb")) << 20,
		SpillPercent:  t.conf.Float("mapreduce.map.sort.spill.percent"),
		TablePercent:  t.conf.Float("mapreduce.map.combine.table.percent"),
		NumPartitions: int(t.launch.NumReduces),
		Compare:       t.def.Compare,
		TaskContext:   tc,
		Dir:           "spills",
		Counters:      t.counters,
		OnSpill:       t.announceSpill,
		FirstIndex:    firstSpill,
	}
	if abs, err := filepath.Abs(opts.Dir); err == nil {
		opts.Dir = abs
	}
	if t.def.Partitioner != nil {
		p, err := t.def.Partitioner(tc)
		if err != nil {
			return nil, nil, fmt.Errorf("creating the partitioner: %w", err)
		}
		opts.Partitioner = p
	}
	if t.def.Combiner != nil {
		c, err := t.def.Combiner(tc)
		if err != nil {
			return nil, nil, fmt.Errorf("creating the combiner: %w", err)
		}
		opts.Combiner = c
	}
	buf, err := spill.NewBuffer(opts)
	if err != nil {
		return nil, nil, fmt.Errorf("creating the sort buffer: %w", err)
	}
	return buf, func() error {
		if err := buf.Close(); err != nil {
			return fmt.Errorf("final spill: %w", err)
		}
		return nil
	}, nil
}

func (t *task) announceSpill(info spill.SpillInfo) error {
	if info.Final {
		t.finalPhase()
	}
	// The sort buffer the spills are cut with: the JobTracker pins the
	// first announced one for the task's later attempts.
	ann := &mrpb.SpillAnnouncement{AttemptId: t.launch.AttemptId, Spill: int32(info.Index), Final: info.Final,
		SortMb: int32(t.conf.Int("mapreduce.task.io.sort.mb"))}
	if c := t.splitCut; c != nil && int(c.Spill) == info.Index+1 {
		ann.SplitAt = c
	}
	// Packed: a few bytes a partition, which the JobTracker keeps as they
	// are, where a message a partition cost both sides an allocation and a
	// decoding each (the TaskTracker unpacks them for a JobTracker that
	// does not read them). A job that announces spills only (its reduces
	// read their segments from this tracker's index) gets their digest
	// alone, which is what the JobTracker compares attempts by.
	segs := make([]mrpb.SpillSegment, len(info.Partitions))
	for i, s := range info.Partitions {
		segs[i] = mrpb.SpillSegment(s)
	}
	packed := mrpb.AppendPackedSegments(nil, segs)
	if t.launch.SpillDigests {
		p, err := mrpb.ParsePackedSegments(string(packed), true)
		if err != nil {
			return fmt.Errorf("spill %d's segments: %w", info.Index, err)
		}
		d := p.Digest()
		ann.Partitions, ann.SegmentsDigest = int32(len(segs)), d[:]
	} else {
		ann.PackedSegments = packed
	}
	if _, err := t.umb.SpillReady(t.ctx, &mrpb.SpillReadyRequest{Spill: ann}); err != nil {
		return fmt.Errorf("announcing spill %d: %w", info.Index, err)
	}
	return nil
}

// mapOnlyOutput writes map output straight to the job's output format, as
// part-m-NNNNN, committed like a reduce's. settle is nil when the writer
// cannot be brought to a quiet point for a clone.
func (t *task) mapOnlyOutput() (emit mr.Emitter, finish func() error, settle func() error, err error) {
	c, err := mr.NewCommitter(t.spec.Output)
	if err != nil {
		return nil, nil, nil, err
	}
	path := fs.Join(c.AttemptDir(t.launch.AttemptId), mr.PartName(true, int(t.launch.Index)))
	w, err := t.def.Output.Create(c.FS, path)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("creating output %s: %w", path, err)
	}
	settle = flusherOf(w, t.spec.Output)
	records := t.counters.Get(mr.TaskCounterGroup, mr.MapOutputRecords)
	bytes := t.counters.Get(mr.TaskCounterGroup, mr.MapOutputBytes)
	written := t.counters.Get(mr.FileSystemCounterGroup, fsCounterPrefix(t.spec.Output)+"_BYTES_WRITTEN")
	formatWritten := t.counters.Get(mr.FileOutputFormatCounterGroup, mr.BytesWritten)
	emit = mr.EmitFunc(func(k, v []byte) error {
		records.Increment()
		bytes.Add(int64(len(k) + len(v)))
		return w.Write(k, v)
	})
	return emit, func() error {
		if err := w.Close(); err != nil {
			return fmt.Errorf("closing output %s: %w", path, err)
		}
		written.Set(w.BytesWritten())
		formatWritten.Set(w.BytesWritten())
		return t.commit(c)
	}, settle, nil
}

// flusherOf returns the writer's Flush when a clone can restore beside
// it: the writer can flush, and the output is a local file (an HDFS
// stream is a connection to a datanode that a clone cannot take over).
func flusherOf(w mr.RecordWriter, output string) func() error {
	f, ok := w.(mr.Flusher)
	if !ok || strings.HasPrefix(output, "hdfs://") {
		return nil
	}
	return f.Flush
}

// finalPhase is the straggler injector's delay for a map's final sort and
// spill (k times the time since the record loop ended), slept with the
// final spill written but not yet announced, its progress moving from the
// record loop's share to the end.
func (t *task) finalPhase() {
	if t.slow == nil || t.finalFrom.IsZero() {
		return
	}
	from := t.finalWeight
	t.slow.phase(t.ctx, time.Since(t.finalFrom), func(f float64) { t.setProgress(from + f*(1-from)) })
}
