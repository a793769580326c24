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
// cost the others. If a segment's copy fails once its frame has started,
// the connection is broken (the fetcher keeps the frames before it).
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
	bw := bufio.NewWriterSize(w, 64<<10)
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

type dirResult struct {
	dir string
	err error
}

// serveFrame writes the frame of one requested segment to bw: a failure
// frame, or a served frame's header and data (read into *buf, which it
// reuses). It returns the segment bytes written, and an error only when
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
	data, err := readSegment(dataPath, seg.Offset, seg.Length, *buf)
	*buf = data[:0]
	switch {
	case errors.Is(err, fs.ErrNotExist):
		log.Error("shuffle batch: spill index without data file", "path", dataPath)
		return failure(frameNotFound, fmt.Sprintf("unknown spill %d of attempt %s", it.Spill, it.Attempt))
	case errors.Is(err, io.ErrUnexpectedEOF):
		log.Error("shuffle batch: segment outside the data file", "path", dataPath, "offset", seg.Offset, "length", seg.Length, "err", err)
		return failure(frameError, "spill data file is truncated")
	case err != nil:
		log.Error("shuffle batch: cannot read spill data", "err", err)
		return failure(frameError, "cannot read spill data")
	}
	var hdr [64]byte
	if _, err := bw.Write(appendFrameHeader(hdr[:0], seg)); err != nil {
		return 0, err
	}
	n, err := bw.Write(data)
	return int64(n), err
}
