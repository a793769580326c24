package shuffle

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"gomr/spill"
)

// Spills announced without their segments.
//
// A JobTracker may announce a spill with no segment for the asking reduce
// (Hadoop's JobTracker keeps one completion event per map output, and the
// tracker that serves it reads the index): it then keeps nothing per
// reduce, where the segments of every spill for every reduce grow as
// maps × spills × reduces. Such a location has SegmentUnknown set. Before
// fetching it, the reduce asks the serving tracker for its index entry
// (offset, length, raw length, records, CRC) with a batched request of
// version 3 (batchVersionEntries), one request for every such segment of
// one fetch; it then fetches the bytes by their range as for an announced
// segment and checks them against the entry. The JobTracker still checks
// that two attempts' announcements of a spill agree before reduces may mix
// them, from what they announced to it.

// serveEntries answers a batched request of version 3, whose hash the
// caller has checked: the reply's header, then one frame per item, the
// index entry of partition req.Reduce of the spill (from the index cache),
// or why it has none.
func (h *handler) serveEntries(w http.ResponseWriter, req BatchRequest, secret []byte, hash string, log *slog.Logger) {
	b := make([]byte, 0, len(batchReplyMagic)+1+len(req.Items)*entryFrameBytes)
	b = append(b, batchReplyMagic...)
	b = append(b, byte(batchVersionEntries))
	var d dirResult
	served := 0
	for i, it := range req.Items {
		if i == 0 || it.Attempt != req.Items[i-1].Attempt {
			d.dir, d.err = h.dirs.spillDir(h.loc, req.Job, it.Attempt)
		}
		n := len(b)
		b = h.appendEntryFrame(b, d, it, req.Reduce, log)
		if b[n] == frameOK {
			served++
		}
	}
	if h.entries != nil {
		h.entries(served)
	}
	hd := w.Header()
	hd.Set(ReplyHashHeader, ReplyHash(secret, hash))
	hd.Set("Content-Type", "application/octet-stream")
	hd.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(http.StatusOK)
	if _, err := w.Write(b); err != nil {
		log.Warn("shuffle: index entries' reply cut short", "segments", len(req.Items), "err", err)
		return
	}
	log.Debug("shuffle: index entries served", "segments", len(req.Items))
}

// entryFrameBytes is about the size of a served entry's frame: a status,
// four small uvarints and a CRC.
const entryFrameBytes = 16

// appendEntryFrame appends the frame of one item of a version 3 request:
// the entry of partition reduce of the spill, or a failure frame.
func (h *handler) appendEntryFrame(b []byte, d dirResult, it BatchItem, reduce int, log *slog.Logger) []byte {
	if d.err != nil {
		log.Info("shuffle entries: unknown attempt", "attempt", it.Attempt, "err", d.err)
		return appendFrameFailure(b, frameNotFound, "unknown attempt "+it.Attempt)
	}
	_, seg, failed := h.indexedSegment(b, d.dir, it, reduce, log)
	if failed != nil {
		return failed
	}
	b = append(b, frameOK)
	b = binary.AppendUvarint(b, uint64(seg.Offset))
	b = binary.AppendUvarint(b, uint64(seg.Length))
	b = binary.AppendUvarint(b, uint64(seg.RawLength))
	b = binary.AppendUvarint(b, uint64(seg.Records))
	return binary.LittleEndian.AppendUint32(b, seg.CRC)
}

// checkEntry checks an index entry's fields are within what a batched
// fetch can ask for.
func checkEntry(seg spill.SegmentInfo) error {
	if seg.Offset < 0 || seg.Offset > maxSegmentOffset || seg.Length < 0 || seg.Length > maxSegmentBytes ||
		seg.RawLength < 0 || seg.Records < 0 {
		return fmt.Errorf("%w: entry of offset %d, length %d, raw length %d, %d records out of range",
			ErrBadBatch, seg.Offset, seg.Length, seg.RawLength, seg.Records)
	}
	return nil
}

// resolveUnknown reads, from their shuffle server, the segments of b's
// items that were announced without theirs (fetchItem.unknown), setting
// each item's seg and clearing unknown. An item it cannot resolve gets its
// error in errs (a permanentError when asking again cannot help); the
// others' errs are left as they are. Transient failures of the request
// are retried as a batch's are.
func (f *Fetcher) resolveUnknown(ctx context.Context, b *batchSegs, reduce int, errs []error) {
	var idx []int
	for i := range b.items {
		if b.items[i].unknown && errs[i] == nil {
			idx = append(idx, i)
		}
	}
	if len(idx) == 0 {
		return
	}
	f.retrying(ctx, b, reduce, idx, errs, func(pending []int) {
		f.resolveOnce(ctx, b, pending, reduce, errs)
	})
}

// resolveOnce makes one request of version 3 for the entries of b.items[i],
// i in idx (errs[i] nil on entry), all of one job on one host.
func (f *Fetcher) resolveOnce(ctx context.Context, b *batchSegs, idx []int, reduce int, errs []error) {
	failAll := func(from int, err error) {
		for _, i := range idx[from:] {
			errs[i] = err
		}
	}
	first := &b.origins[b.items[idx[0]].origin]
	host := first.host
	body, err := encodeBatchRequest(batchVersionEntries, first.job, reduce, time.Now().UnixMilli(), len(idx), func(n int) BatchItem {
		it := &b.items[idx[n]]
		return BatchItem{Attempt: b.origins[it.origin].attempt, Spill: it.key.k}
	})
	if err != nil {
		failAll(0, &permanentError{fmt.Errorf("build index entries request: %w", err)})
		return
	}
	resp, hash, err := f.postBatch(ctx, host, body)
	if err != nil {
		failAll(0, err)
		return
	}
	defer drainBody(resp)
	if resp.StatusCode == http.StatusBadRequest {
		failAll(0, &permanentError{fmt.Errorf("server %s refused a request for index entries (a server older than the JobTracker, which announced spills without their segments?): %s: %s",
			host, resp.Status, errorBody(resp))})
		return
	}
	if err := f.checkBatchReply(resp, host, hash, "a request for index entries"); err != nil {
		failAll(0, err)
		return
	}
	// At most a failure frame of the longest message per item.
	limit := int64(len(batchReplyMagic)) + 1 + int64(len(idx))*(maxFrameMessage+binary.MaxVarintLen64+1)
	raw, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		failAll(0, fmt.Errorf("index entries from %s: %w", host, noEOF(err)))
		return
	}
	if int64(len(raw)) > limit {
		failAll(0, &permanentError{fmt.Errorf("index entries from %s: %w: reply of more than %d bytes", host, ErrBadBatch, limit)})
		return
	}
	entries, n, err := decodeEntries(raw, len(idx))
	for j := range n {
		i := idx[j]
		e := &entries[j]
		switch e.status {
		case frameOK:
			b.items[i].seg, b.items[i].unknown = e.seg, false
		case frameNotFound:
			errs[i] = &permanentError{fmt.Errorf("server %s has no such segment (%s): %w", host, e.msg, ErrNotFound)}
		case frameBadRequest:
			errs[i] = &permanentError{fmt.Errorf("server %s refused the segment: %s", host, e.msg)}
		default:
			errs[i] = fmt.Errorf("server %s could not read the segment's index entry: %s", host, e.msg)
		}
	}
	if err != nil {
		failAll(n, fmt.Errorf("index entries from %s, segment %d of %d: %w", host, n+1, len(idx), err))
	}
}

// decodeEntries decodes the reply to a version 3 request of n items: its
// header, then up to n frames. It returns the frames it decoded whole and,
// if it stopped before n (a reply cut short or malformed) or found bytes
// after them, why.
func decodeEntries(b []byte, n int) ([]frame, int, error) {
	d := decoder{b: b}
	if m := d.bytes(len(batchReplyMagic) + 1); d.err != nil || string(m[:len(batchReplyMagic)]) != batchReplyMagic || m[len(batchReplyMagic)] != batchVersionEntries {
		return nil, 0, fmt.Errorf("%w: not a reply of index entries (magic or version)", ErrBadBatch)
	}
	out := make([]frame, 0, n)
	for len(out) < n {
		var f frame
		f.status = d.byte()
		switch f.status {
		case frameOK:
			var vals [4]uint64
			for i := range vals {
				vals[i] = d.uvarint()
			}
			crc := d.bytes(4)
			if d.err != nil {
				return out, len(out), noEOF(d.err)
			}
			for _, v := range vals {
				if v > 1<<62 {
					return out, len(out), fmt.Errorf("%w: entry field %d out of range", ErrBadBatch, v)
				}
			}
			f.seg = spill.SegmentInfo{Offset: int64(vals[0]), Length: int64(vals[1]), RawLength: int64(vals[2]), Records: int64(vals[3]), CRC: binary.LittleEndian.Uint32(crc)}
			if err := checkEntry(f.seg); err != nil {
				return out, len(out), err
			}
		case frameNotFound, frameBadRequest, frameError:
			f.msg = d.string()
			if d.err != nil {
				return out, len(out), noEOF(d.err)
			}
		default:
			if d.err != nil {
				return out, len(out), noEOF(d.err)
			}
			return out, len(out), fmt.Errorf("%w: frame status %d", ErrBadBatch, f.status)
		}
		out = append(out, f)
	}
	if len(d.b) != 0 {
		return out, len(out), fmt.Errorf("%w: %d bytes after the last entry", ErrBadBatch, len(d.b))
	}
	return out, len(out), nil
}
