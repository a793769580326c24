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
	var hdr []byte
	hdr = append(hdr, batchReplyMagic...)
	hdr = append(hdr, batchVersion)
	dirs := map[string]dirResult{}
	var total int64
	var werr error
	for _, it := range req.Items {
		d, ok := dirs[it.Attempt]
		if !ok {
			d.dir, d.err = h.loc.SpillDir(req.Job, it.Attempt)
			dirs[it.Attempt] = d
		}
		var n int64
		hdr, n, werr = h.serveFrame(bw, hdr, d, it, req.Reduce, log)
		total += n
		if werr != nil {
			break
		}
	}
	if werr == nil {
		if _, werr = bw.Write(hdr); werr == nil {
			werr = bw.Flush()
		}
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

// serveFrame appends the frame of one requested segment: a failure frame
// to hdr (pending bytes, written before the next data), or a served
// frame's header and data to bw. It returns the pending bytes, the
// segment bytes written, and an error only when the reply cannot go on.
func (h *handler) serveFrame(bw *bufio.Writer, hdr []byte, d dirResult, it BatchItem, reduce int, log *slog.Logger) ([]byte, int64, error) {
	if d.err != nil {
		log.Info("shuffle batch: unknown attempt", "attempt", it.Attempt, "err", d.err)
		return appendFrameFailure(hdr, frameNotFound, "unknown attempt "+it.Attempt), 0, nil
	}
	segs, err := spill.ReadIndex(filepath.Join(d.dir, spill.IndexFileName(it.Spill)))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return appendFrameFailure(hdr, frameNotFound, fmt.Sprintf("unknown spill %d of attempt %s", it.Spill, it.Attempt)), 0, nil
		}
		log.Error("shuffle batch: cannot read spill index", "attempt", it.Attempt, "spill", it.Spill, "err", err)
		return appendFrameFailure(hdr, frameError, "cannot read spill index"), 0, nil
	}
	if reduce >= len(segs) {
		return appendFrameFailure(hdr, frameBadRequest, fmt.Sprintf("reduce %d out of range: the spill has %d partitions", reduce, len(segs))), 0, nil
	}
	seg := segs[reduce]
	dataPath := filepath.Join(d.dir, spill.DataFileName(it.Spill))
	f, err := os.Open(dataPath)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			log.Error("shuffle batch: spill index without data file", "path", dataPath)
			return appendFrameFailure(hdr, frameNotFound, fmt.Sprintf("unknown spill %d of attempt %s", it.Spill, it.Attempt)), 0, nil
		}
		log.Error("shuffle batch: cannot open spill data", "err", err)
		return appendFrameFailure(hdr, frameError, "cannot open spill data"), 0, nil
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		log.Error("shuffle batch: cannot stat spill data", "err", err)
		return appendFrameFailure(hdr, frameError, "cannot read spill data"), 0, nil
	}
	if seg.Offset < 0 || seg.Length < 0 || seg.Offset+seg.Length > st.Size() {
		log.Error("shuffle batch: segment outside the data file", "path", dataPath, "offset", seg.Offset, "length", seg.Length, "size", st.Size())
		return appendFrameFailure(hdr, frameError, "spill data file is truncated"), 0, nil
	}
	hdr = appendFrameHeader(hdr, seg)
	if _, err := bw.Write(hdr); err != nil {
		return hdr[:0], 0, err
	}
	n, err := io.Copy(bw, io.NewSectionReader(f, seg.Offset, seg.Length))
	if err == nil && n != seg.Length {
		err = fmt.Errorf("spill data %s ended after %d of %d bytes", dataPath, n, seg.Length)
	}
	return hdr[:0], n, err
}
