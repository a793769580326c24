package shuffle

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"gomr/spill"
)

// serveBatch answers POST BatchPath. The request is refused as a whole as
// the single-segment one is: 405 for another method, 401 without a hash,
// for a job this worker does not know, a wrong hash or a signed time
// outside the window, 400 for a body that is not a batch request. Past
// that, the answer is 200 with ReplyHashHeader and one frame per requested
// segment: the segment, or why it is not served (not found, a reduce out
// of range, an unreadable spill), so that one missing segment does not
// cost the others. Every segment is checked against its data file
// (present, long enough) before the reply starts (planBatch), so that the
// reply's length is known ahead: net/http then sends it without chunking,
// which lets a large segment go from its file to the socket with sendfile.
// Segments are never held whole: a small one is copied through the
// reply's write buffer. If a segment's copy fails once its frame has
// started (the client went away, the file shrank under it), the
// connection is broken (the fetcher keeps the frames before it).
func (h *handler) serveBatch(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	hash := r.Header.Get(HashHeader)
	if hash == "" {
		h.log.Warn("shuffle batch request without hash refused", "remote", r.RemoteAddr)
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	rb := batchRequestBuffers.Get().(*requestBuffers)
	defer rb.put()
	body, err := readBody(w, r, &rb.body)
	if err != nil {
		http.Error(w, "bad request: cannot read the body: "+err.Error(), http.StatusBadRequest)
		return
	}
	// The request keeps nothing of body (its strings are copies); its
	// items are rb's, used until the reply is written.
	req, err := decodeBatchRequest(body, rb.items)
	rb.items = req.Items
	if err != nil {
		http.Error(w, "bad request: "+err.Error(), http.StatusBadRequest)
		return
	}
	secret, ok := h.secrets.JobSecret(req.Job)
	if !ok {
		h.log.Warn("shuffle batch request for unknown job refused", "remote", r.RemoteAddr, "job", req.Job)
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	if !hashEqual(hash, BatchRequestHash(secret, body)) {
		h.log.Warn("shuffle batch request with wrong hash refused", "remote", r.RemoteAddr, "job", req.Job)
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	if age := h.now().Sub(time.UnixMilli(req.At)); age > h.window || age < -h.window {
		h.log.Warn("shuffle batch request outside its time window refused (replayed, or clocks apart)", "remote", r.RemoteAddr,
			"job", req.Job, "age", age.Round(time.Millisecond), "window", h.window)
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	log := h.log.With("job", req.Job, "reduce", req.Reduce, "remote", r.RemoteAddr)
	if req.Version == batchVersionEntries {
		h.serveEntries(w, req, secret, hash, log)
		return
	}
	p := planBatch(h, req, log)
	defer p.close()

	hd := w.Header()
	hd.Set(ReplyHashHeader, ReplyHash(secret, hash))
	hd.Set("Content-Type", "application/octet-stream")
	hd.Set("Content-Length", strconv.FormatInt(p.length, 10))
	w.WriteHeader(http.StatusOK)

	if uncork := p.cork(r); uncork != nil {
		defer func() {
			// What net/http still buffers goes out before the cork is
			// removed (a cut reply panics past this: the connection is
			// closed anyway).
			_ = http.NewResponseController(w).Flush()
			uncork()
		}()
	}
	total, werr := p.write(w)
	if h.served != nil {
		h.served(req.Job, total)
	}
	if werr != nil {
		if ow, ok := w.(*outcomeWriter); ok {
			ow.cut = true
		}
		log.Warn("shuffle: batch reply cut short", "segments", len(req.Items), "bytes", total, "err", werr)
		// The frame in progress cannot be finished: break the connection
		// so that the fetcher sees a truncated reply, not a wrong one.
		panic(http.ErrAbortHandler)
	}
	log.Debug("shuffle: batch served", "segments", len(req.Items), "bytes", total)
}

// requestBuffers are a batched request's body (some 40 KB for 1,024
// segments) and decoded items (some 50 KB), recycled (batchRequestBuffers):
// they were most of the bytes the server allocated per request.
type requestBuffers struct {
	body  []byte
	items []BatchItem
}

var batchRequestBuffers = sync.Pool{New: func() any { return new(requestBuffers) }}

// put gives the buffers back to batchRequestBuffers, the items cleared
// (they hold strings).
func (rb *requestBuffers) put() {
	clear(rb.items)
	rb.items = rb.items[:0]
	batchRequestBuffers.Put(rb)
}

// readBody reads a batched request's body, of at most
// maxBatchRequestBytes: into *buf, grown to its announced length if it
// has one (else as io.ReadAll does). The body returned is *buf's.
func readBody(w http.ResponseWriter, r *http.Request, buf *[]byte) ([]byte, error) {
	body := http.MaxBytesReader(w, r.Body, maxBatchRequestBytes)
	if r.ContentLength <= 0 || r.ContentLength > maxBatchRequestBytes {
		return io.ReadAll(body)
	}
	n := int(r.ContentLength)
	if cap(*buf) < n {
		*buf = make([]byte, n)
	}
	b := (*buf)[:n]
	if _, err := io.ReadFull(body, b); err != nil {
		return nil, err
	}
	return b, nil
}

const (
	// batchWriterBytes is the size of a batched reply's write buffer:
	// frames are gathered in it, and a segment copied through user space
	// is read into it (pread), so that a request holds at most this much
	// of its segments at a time, however large they are.
	batchWriterBytes = 64 << 10
	// sendfileMinBytes: a segment of at least this many bytes served from
	// its file goes out with sendfile (no copy through user space) when
	// the reply writer allows it (net/http's, with the reply's length
	// known ahead); a smaller one is copied into the write buffer, which
	// saves the system call of flushing the frames before it (and the
	// fetcher's reads of smaller packets): with make bench-shuffle,
	// sendfile paid for segments of 64 KB, not for those of 16 KB.
	sendfileMinBytes = 32 << 10
	// maxHeldFiles bounds the data files one request keeps open between
	// checking them and sending them; the others are opened again when
	// their turn comes.
	maxHeldFiles = 64
)

// batchWriters recycles the replies' write buffers.
var batchWriters = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, batchWriterBytes) }}

// batchPlan is a batched reply worked out before its first byte: every
// frame's header (or whole failure frame) and where its segment's bytes
// come from, so that the reply's length is known ahead. That lets net/http
// send it without chunking, and so send large segments with sendfile.
type batchPlan struct {
	version int    // the request's, and so the reply's, format
	pathBuf []byte // a data file's path, built for each segment
	frames  []plannedFrame
	dirs    []dirResult  // each frame's attempt's directory
	queries []cacheQuery // the frames' lookups in the data cache
	heads   []byte       // the frames' headers, end to end
	data    *dataCache
	pins    []*cachedFile // the data cache's files the frames serve from
	length  int64         // the reply's length
	log     *slog.Logger
}

// plannedFrame is one frame of a batchPlan.
type plannedFrame struct {
	head     []byte // heads[...]: a served frame's header, or a failure frame
	served   bool   // the frame is a segment's: seg's bytes follow head
	data     []byte // the segment's bytes, from the data cache (pinned); else:
	path     string // its data file
	seg      spill.SegmentInfo
	file     *dataFile // the open data file, if held since the check
	reopened bool      // the file was not held: open and check it again
}

// planBatch checks every requested segment (attempt, index, data file
// present and long enough) and plans its frame. A segment that fails a
// check gets its failure frame, as before the first byte of the reply.
// The segments of version 2 that the data cache holds are looked up all
// at once (dataCache.lookup, one hold of its mutex), the others one by
// one (planFrame).
func planBatch(h *handler, req BatchRequest, log *slog.Logger) *batchPlan {
	if h.data != nil {
		h.data.sync() // a spill changed or deleted before now is not served from memory
	}
	p := newBatchPlan(req.Version, len(req.Items), h.data, log)
	for i, it := range req.Items {
		// A request names the spills of one attempt one after the other
		// (the decoder gives them one string): its directory is looked up
		// once per run of them (h.dirs caches it across requests).
		if i == 0 || it.Attempt != req.Items[i-1].Attempt {
			d := &p.dirs[i]
			d.dir, d.err = h.dirs.spillDir(h.loc, req.Job, it.Attempt)
		} else {
			p.dirs[i] = p.dirs[i-1]
		}
	}
	lookedUp := h.data != nil && p.version != batchVersionIndexed
	if lookedUp {
		p.queries = p.queries[:len(req.Items)]
		for i, it := range req.Items {
			q := &p.queries[i]
			*q = cacheQuery{spill: it.Spill, offset: it.Offset, length: it.Length}
			if p.dirs[i].err == nil && it.Length < sendfileMinBytes {
				q.dir = p.dirs[i].dir
			}
		}
		h.data.lookup(p.queries)
	}
	held := 0
	for i, it := range req.Items {
		start := len(p.heads)
		pf := &p.frames[i]
		if lookedUp && p.queries[i].pin != nil {
			q := &p.queries[i]
			p.pins = append(p.pins, q.pin)
			pf.served, pf.data, pf.seg = true, q.data, spill.SegmentInfo{Offset: it.Offset, Length: it.Length}
			p.heads = p.appendServedHeader(p.heads, pf.seg)
		} else {
			p.heads = h.planFrame(p, pf, p.dirs[i], it, req.Reduce, &held, log)
		}
		pf.head = p.heads[start:len(p.heads):len(p.heads)]
	}
	p.length = int64(len(batchReplyMagic)) + 1 + int64(len(p.heads))
	for i := range p.frames {
		if p.frames[i].served {
			p.length += p.frames[i].seg.Length
		}
	}
	return p
}

// cacheQuery is a segment of a batched request that the data cache may
// hold: its data file's directory (clean; empty: not to be looked up) and
// spill, and its byte range. dataCache.lookup sets data, the segment's
// bytes, and pin, the cached file's pin, when it holds the file (pin is
// what says so: data is nil for an empty segment of an empty file).
type cacheQuery struct {
	dir            string
	spill          int
	offset, length int64
	data           []byte
	pin            *cachedFile
}

// batchPlans recycles the plans' buffers: a request of 1,024 segments
// plans about 150 KB of frames, headers and pins.
var batchPlans = sync.Pool{New: func() any { return new(batchPlan) }}

// newBatchPlan returns an empty plan for n frames of the given version,
// its buffers from batchPlans; close gives them back.
func newBatchPlan(version, n int, data *dataCache, log *slog.Logger) *batchPlan {
	p := batchPlans.Get().(*batchPlan)
	p.version, p.data, p.log = version, data, log
	if cap(p.frames) < n {
		p.frames = make([]plannedFrame, n)
		p.dirs = make([]dirResult, n)
		p.queries = make([]cacheQuery, 0, n)
	}
	p.frames, p.dirs = p.frames[:n], p.dirs[:n]
	if cap(p.heads) < 24*n {
		p.heads = make([]byte, 0, 24*n)
	}
	return p
}

type dirResult struct {
	dir string
	err error
}

// planFrame plans the frame of one requested segment: it appends its
// header (or failure frame) to heads and fills pf.
func (h *handler) planFrame(p *batchPlan, pf *plannedFrame, d dirResult, it BatchItem, reduce int, held *int, log *slog.Logger) []byte {
	heads := p.heads
	if d.err != nil {
		log.Info("shuffle batch: unknown attempt", "attempt", it.Attempt, "err", d.err)
		return appendFrameFailure(heads, frameNotFound, "unknown attempt "+it.Attempt)
	}
	if p.version != batchVersionIndexed {
		// The segment's byte range as the request names it: no index.
		// No filepath.Join: d.dir is clean already.
		p.pathBuf = append(append(p.pathBuf[:0], d.dir...), filepath.Separator)
		p.pathBuf = spill.AppendDataFileName(p.pathBuf, it.Spill)
		seg := spill.SegmentInfo{Offset: it.Offset, Length: it.Length}
		return h.planData(p, pf, p.pathBuf, seg, seg.Length < sendfileMinBytes, it, held, log)
	}
	ix, seg, failed := h.indexedSegment(heads, d.dir, it, reduce, log)
	if failed != nil {
		return failed
	}
	// Segments are contiguous from offset 0: the last one's end is the
	// data file's size.
	last := ix.segs[len(ix.segs)-1]
	p.pathBuf = append(p.pathBuf[:0], ix.dataPath...)
	return h.planData(p, pf, p.pathBuf, seg, seg.Length < sendfileMinBytes && last.Offset+last.Length <= maxCachedFileBytes, it, held, log)
}

// indexedSegment is partition reduce of spill it.Spill in dir (item it of
// a request of version 1 or 3), from the index cache: its index and
// entry, or, when it has none (no such spill, an unreadable index, a
// reduce out of range, an entry out of range), b with the failure frame
// that says why appended.
func (h *handler) indexedSegment(b []byte, dir string, it BatchItem, reduce int, log *slog.Logger) (*indexEntry, spill.SegmentInfo, []byte) {
	ix, err := h.indexes.entry(dir, it.Spill)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, spill.SegmentInfo{}, appendFrameFailure(b, frameNotFound, fmt.Sprintf("unknown spill %d of attempt %s", it.Spill, it.Attempt))
		}
		log.Error("shuffle: cannot read spill index", "attempt", it.Attempt, "spill", it.Spill, "err", err)
		return nil, spill.SegmentInfo{}, appendFrameFailure(b, frameError, "cannot read spill index")
	}
	if reduce >= len(ix.segs) {
		return nil, spill.SegmentInfo{}, appendFrameFailure(b, frameBadRequest, fmt.Sprintf("reduce %d out of range: the spill has %d partitions", reduce, len(ix.segs)))
	}
	seg := ix.segs[reduce]
	if checkEntry(seg) != nil {
		log.Error("shuffle: bad segment in the index", "attempt", it.Attempt, "spill", it.Spill, "offset", seg.Offset, "length", seg.Length)
		return nil, spill.SegmentInfo{}, appendFrameFailure(b, frameError, "bad spill index entry")
	}
	return ix, seg, nil
}

// planData plans the frame of a segment whose place in the data file at
// path is known (from the index, or named by the request): from the
// data cache if cacheable (a small segment of a file that may be small
// enough), else from the file, held open if fewer than maxHeldFiles are.
// The segment must lie inside the file. path is the plan's buffer: a
// segment served from the cache costs no string of it.
func (h *handler) planData(p *batchPlan, pf *plannedFrame, path []byte, seg spill.SegmentInfo, cacheable bool, it BatchItem, held *int, log *slog.Logger) []byte {
	heads := p.heads
	if h.data != nil && cacheable {
		data, pin, ok, err := h.data.segment(path, seg.Offset, seg.Length)
		if err != nil {
			return appendDataFailure(heads, string(path), seg, it, err, log)
		}
		if ok {
			p.pins = append(p.pins, pin)
			pf.served, pf.data, pf.seg = true, data, seg
			return p.appendServedHeader(heads, seg)
		}
	}
	dataPath := string(path)
	f, size, err := openDataFile(dataPath)
	if err == nil && seg.Offset+seg.Length > size {
		f.Close()
		err = fmt.Errorf("%s: %d bytes, segment at %d of %d bytes: %w", dataPath, size, seg.Offset, seg.Length, io.ErrUnexpectedEOF)
	}
	if err != nil {
		return appendDataFailure(heads, dataPath, seg, it, err, log)
	}
	if *held < maxHeldFiles {
		*held++
		pf.file = f
	} else {
		f.Close()
		pf.reopened = true
	}
	pf.served, pf.path, pf.seg = true, dataPath, seg
	return p.appendServedHeader(heads, seg)
}

// appendServedHeader appends the header of a served frame in the plan's
// version: the segment's index entry (version 1) or nothing after the
// status (version 2: the fetcher knows the length it asked for).
func (p *batchPlan) appendServedHeader(heads []byte, seg spill.SegmentInfo) []byte {
	if p.version == batchVersionIndexed {
		return appendFrameHeader(heads, seg)
	}
	return append(heads, frameOK)
}

// prefetchAhead is how many frames ahead of its copy a cached segment's
// bytes are asked for (prefetchBytes).
const prefetchAhead = 4

// write writes the planned reply to w: the magic, then each frame. It
// returns the segment bytes written, and an error when the reply could not
// be finished (the client went away, a data file shrank or vanished after
// its check): the caller must then break the connection.
func (p *batchPlan) write(w http.ResponseWriter) (int64, error) {
	bw := batchWriters.Get().(*bufio.Writer)
	bw.Reset(w)
	defer func() {
		bw.Reset(nil)
		batchWriters.Put(bw)
	}()
	rf := readerFrom(w)
	var total int64
	_, err := bw.WriteString(batchReplyMagic)
	if err == nil {
		err = bw.WriteByte(byte(p.version))
	}
	for j := range min(prefetchAhead, len(p.frames)) {
		prefetchBytes(p.frames[j].data)
	}
	for i := range p.frames {
		if err != nil {
			return total, err
		}
		if j := i + prefetchAhead; j < len(p.frames) && p.frames[j].path == "" {
			prefetchBytes(p.frames[j].data)
		}
		pf := &p.frames[i]
		if _, err = bw.Write(pf.head); err != nil || !pf.served {
			continue
		}
		if pf.path == "" {
			var n int
			n, err = copyMapped(bw, pf.data)
			total += int64(n)
			continue
		}
		var n int64
		n, err = pf.writeData(bw, rf)
		total += n
	}
	if err == nil {
		err = bw.Flush()
	}
	return total, err
}

// writeData writes a served frame's segment from its data file: with
// sendfile through rf if it is large enough and rf is not nil, else
// copied through bw.
func (pf *plannedFrame) writeData(bw *bufio.Writer, rf io.ReaderFrom) (int64, error) {
	seg := pf.seg
	if pf.reopened {
		f, size, err := openDataFile(pf.path)
		if err != nil {
			return 0, fmt.Errorf("open again for its turn: %w", err)
		}
		pf.file = f
		if seg.Offset+seg.Length > size {
			return 0, fmt.Errorf("%s: %d bytes, segment at %d of %d bytes: %w", pf.path, size, seg.Offset, seg.Length, io.ErrUnexpectedEOF)
		}
	}
	defer func() {
		pf.file.Close()
		pf.file = nil
	}()
	if rf == nil || seg.Length < sendfileMinBytes {
		return copySegment(bw, pf.file, pf.path, seg.Offset, seg.Length)
	}
	if err := bw.Flush(); err != nil {
		return 0, err
	}
	f := pf.file.osFile()
	if _, err := f.Seek(seg.Offset, io.SeekStart); err != nil {
		return 0, fmt.Errorf("seek %s to %d: %w", pf.path, seg.Offset, err)
	}
	n, err := rf.ReadFrom(io.LimitReader(f, seg.Length))
	if err != nil {
		return n, fmt.Errorf("send segment of %s at offset %d: %w", pf.path, seg.Offset, err)
	}
	if n < seg.Length {
		return n, fmt.Errorf("%s: %d of %d bytes at offset %d: %w", pf.path, n, seg.Length, seg.Offset, io.ErrUnexpectedEOF)
	}
	return n, nil
}

// cork corks the reply's connection (corkReply) if some of its segments
// will go with sendfile, and returns the function that uncorks it after
// flushing what net/http still buffers, or nil.
func (p *batchPlan) cork(r *http.Request) func() {
	for i := range p.frames {
		if pf := &p.frames[i]; pf.served && pf.path != "" && pf.seg.Length >= sendfileMinBytes {
			return corkReply(r)
		}
	}
	return nil
}

// close closes the data files the plan still holds, gives back its pins
// of the data cache's files, and recycles the plan: it is not used after.
func (p *batchPlan) close() {
	if p.data != nil {
		p.data.releaseAll(p.pins)
	}
	for i := range p.frames {
		if f := p.frames[i].file; f != nil {
			f.Close()
		}
	}
	clear(p.frames)
	clear(p.pins)
	clear(p.dirs)
	clear(p.queries)
	p.frames, p.pins, p.heads, p.pathBuf = p.frames[:0], p.pins[:0], p.heads[:0], p.pathBuf[:0]
	p.dirs, p.queries = p.dirs[:0], p.queries[:0]
	p.data, p.log, p.length = nil, nil, 0
	batchPlans.Put(p)
}

// readerFrom returns the io.ReaderFrom of w or of a writer it wraps
// (Unwrap, as http.ResponseController finds them), or nil. net/http's
// reply writer's ReadFrom uses sendfile for an os.File once the reply's
// length is known.
func readerFrom(w http.ResponseWriter) io.ReaderFrom {
	for {
		if rf, ok := w.(io.ReaderFrom); ok {
			return rf
		}
		u, ok := w.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			return nil
		}
		w = u.Unwrap()
	}
}

// copySegment copies length bytes at offset of r (the file at path) into
// bw, through bw's own buffer. Fewer bytes than length is an error wrapping
// io.ErrUnexpectedEOF.
func copySegment(bw *bufio.Writer, r io.ReaderAt, path string, offset, length int64) (int64, error) {
	n, err := bw.ReadFrom(io.NewSectionReader(r, offset, length))
	if err != nil {
		return n, fmt.Errorf("copy segment of %s at offset %d: %w", path, offset, err)
	}
	if n < length {
		return n, fmt.Errorf("%s: %d of %d bytes at offset %d: %w", path, n, length, offset, io.ErrUnexpectedEOF)
	}
	return n, nil
}

// appendDataFailure appends the failure frame of a segment whose data file
// cannot serve it (err from openDataFile or the size check).
func appendDataFailure(heads []byte, dataPath string, seg spill.SegmentInfo, it BatchItem, err error, log *slog.Logger) []byte {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		log.Error("shuffle batch: spill index without data file", "path", dataPath)
		return appendFrameFailure(heads, frameNotFound, fmt.Sprintf("unknown spill %d of attempt %s", it.Spill, it.Attempt))
	case errors.Is(err, io.ErrUnexpectedEOF):
		log.Error("shuffle batch: segment outside the data file", "path", dataPath, "offset", seg.Offset, "length", seg.Length, "err", err)
		return appendFrameFailure(heads, frameError, "spill data file is truncated")
	default:
		log.Error("shuffle batch: cannot read spill data", "err", err)
		return appendFrameFailure(heads, frameError, "cannot read spill data")
	}
}
