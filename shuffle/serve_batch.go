package shuffle

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
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
// cost the others. A segment is checked against its data file (present,
// long enough) before its frame starts, and a large one is then streamed
// from the file rather than held whole (streamFrame). If a segment's copy
// fails once its frame has started (the client went away, the file shrank
// under it), the connection is broken (the fetcher keeps the frames before
// it).
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
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBatchRequestBytes))
	if err != nil {
		http.Error(w, "bad request: cannot read the body: "+err.Error(), http.StatusBadRequest)
		return
	}
	req, err := DecodeBatchRequest(body)
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
	hd := w.Header()
	hd.Set(ReplyHashHeader, ReplyHash(secret, hash))
	hd.Set("Content-Type", "application/octet-stream")
	w.WriteHeader(http.StatusOK)

	log := h.log.With("job", req.Job, "reduce", req.Reduce, "remote", r.RemoteAddr)
	bw := bufio.NewWriterSize(w, batchWriterBytes)
	_, werr := bw.WriteString(batchReplyMagic + string(rune(batchVersion)))
	dirs := map[string]dirResult{}
	var total int64
	var buf []byte
	for _, it := range req.Items {
		if werr != nil {
			break
		}
		d, ok := dirs[it.Attempt]
		if !ok {
			d.dir, d.err = h.loc.SpillDir(req.Job, it.Attempt)
			dirs[it.Attempt] = d
		}
		var n int64
		n, werr = h.serveFrame(bw, &buf, d, it, req.Reduce, log)
		total += n
	}
	if werr == nil {
		werr = bw.Flush()
	}
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
		if bw.Flush() == nil {
			_ = http.NewResponseController(w).Flush()
		}
		panic(http.ErrAbortHandler)
	}
	log.Debug("shuffle: batch served", "segments", len(req.Items), "bytes", total)
}

// batchWriterBytes is the size of a batched reply's write buffer. A segment
// of at most that many bytes is read whole (one pread) before its frame is
// written; a larger one is streamed through the buffer, so that a request
// holds at most about twice this much of its segments at a time, however
// large they are.
const batchWriterBytes = 64 << 10

type dirResult struct {
	dir string
	err error
}

// serveFrame writes the frame of one requested segment to bw: a failure
// frame, or a served frame's header and data (read into *buf, which it
// reuses) or, for a segment larger than batchWriterBytes, streamed from the
// data file (streamFrame). It returns the segment bytes written, and an error only when
// the reply cannot go on.
func (h *handler) serveFrame(bw *bufio.Writer, buf *[]byte, d dirResult, it BatchItem, reduce int, log *slog.Logger) (int64, error) {
	failure := func(status byte, msg string) (int64, error) {
		var b [maxFrameMessage + 16]byte
		_, err := bw.Write(appendFrameFailure(b[:0], status, msg))
		return 0, err
	}
	if d.err != nil {
		log.Info("shuffle batch: unknown attempt", "attempt", it.Attempt, "err", d.err)
		return failure(frameNotFound, "unknown attempt "+it.Attempt)
	}
	segs, err := h.indexes.read(filepath.Join(d.dir, spill.IndexFileName(it.Spill)))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return failure(frameNotFound, fmt.Sprintf("unknown spill %d of attempt %s", it.Spill, it.Attempt))
		}
		log.Error("shuffle batch: cannot read spill index", "attempt", it.Attempt, "spill", it.Spill, "err", err)
		return failure(frameError, "cannot read spill index")
	}
	if reduce >= len(segs) {
		return failure(frameBadRequest, fmt.Sprintf("reduce %d out of range: the spill has %d partitions", reduce, len(segs)))
	}
	seg := segs[reduce]
	if seg.Offset < 0 || seg.Length < 0 || seg.Length > 1<<31 {
		log.Error("shuffle batch: bad segment in the index", "attempt", it.Attempt, "spill", it.Spill, "offset", seg.Offset, "length", seg.Length)
		return failure(frameError, "bad spill index entry")
	}
	dataPath := filepath.Join(d.dir, spill.DataFileName(it.Spill))
	if seg.Length > batchWriterBytes {
		return streamFrame(bw, dataPath, seg, it, log)
	}
	data, err := readSegment(dataPath, seg.Offset, seg.Length, *buf)
	*buf = data[:0]
	if err != nil {
		return dataFailure(bw, dataPath, seg, it, err, log)
	}
	var hdr [64]byte
	if _, err := bw.Write(appendFrameHeader(hdr[:0], seg)); err != nil {
		return 0, err
	}
	n, err := bw.Write(data)
	return int64(n), err
}

// streamFrame writes the frame of a segment larger than the reply's
// buffer: it checks that the data file holds the whole segment, then
// writes the frame's header and copies the segment through bw's buffer, so
// that the server holds no more of it than that buffer at a time. A data
// file that cannot be opened or is too short gets a failure frame, as a
// small segment's does. Once the header is written, a segment that cannot
// be read to its end (the file shrank, a read failed) is an error: the
// reply cannot go on.
func streamFrame(bw *bufio.Writer, dataPath string, seg spill.SegmentInfo, it BatchItem, log *slog.Logger) (int64, error) {
	f, err := os.Open(dataPath)
	if err != nil {
		return dataFailure(bw, dataPath, seg, it, err, log)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return dataFailure(bw, dataPath, seg, it, err, log)
	}
	if seg.Offset+seg.Length > st.Size() {
		err := fmt.Errorf("%s: %d bytes, segment at %d of %d bytes: %w", dataPath, st.Size(), seg.Offset, seg.Length, io.ErrUnexpectedEOF)
		return dataFailure(bw, dataPath, seg, it, err, log)
	}
	var hdr [64]byte
	if _, err := bw.Write(appendFrameHeader(hdr[:0], seg)); err != nil {
		return 0, err
	}
	return copySegment(bw, f, dataPath, seg.Offset, seg.Length)
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

// dataFailure writes the failure frame for a segment whose data could not
// be read (err from readSegment or streamFrame's checks).
func dataFailure(bw *bufio.Writer, dataPath string, seg spill.SegmentInfo, it BatchItem, err error, log *slog.Logger) (int64, error) {
	var status byte
	var msg string
	switch {
	case errors.Is(err, fs.ErrNotExist):
		log.Error("shuffle batch: spill index without data file", "path", dataPath)
		status, msg = frameNotFound, fmt.Sprintf("unknown spill %d of attempt %s", it.Spill, it.Attempt)
	case errors.Is(err, io.ErrUnexpectedEOF):
		log.Error("shuffle batch: segment outside the data file", "path", dataPath, "offset", seg.Offset, "length", seg.Length, "err", err)
		status, msg = frameError, "spill data file is truncated"
	default:
		log.Error("shuffle batch: cannot read spill data", "err", err)
		status, msg = frameError, "cannot read spill data"
	}
	var b [maxFrameMessage + 16]byte
	_, werr := bw.Write(appendFrameFailure(b[:0], status, msg))
	return 0, werr
}
