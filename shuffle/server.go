package shuffle

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"gomr/spill"
)

// SecretSource gives the job secret known to this worker.
type SecretSource interface {
	// JobSecret returns the secret of job jobID, or false if this worker
	// does not know the job.
	JobSecret(jobID string) ([]byte, bool)
}

// Locator maps an attempt to the directory holding its spill files.
type Locator interface {
	// SpillDir returns the directory holding the spill files of attempt
	// attemptID of job jobID, or an error if this worker has none.
	SpillDir(jobID, attemptID string) (string, error)
}

// HandlerOption adjusts the shuffle server.
type HandlerOption func(*handler)

// WithServedBytes registers a metrics callback called after each response
// with the job and the number of segment bytes written to the client (also
// when the copy was cut short).
func WithServedBytes(fn func(jobID string, n int64)) HandlerOption {
	return func(h *handler) { h.served = fn }
}

// WithIndexEntries registers a metrics callback called after each request
// for index entries (a reduce told of spills without their segments,
// resolve.go) with the number of entries it served.
func WithIndexEntries(fn func(n int)) HandlerOption {
	return func(h *handler) { h.entries = fn }
}

// Outcomes of a shuffle request, as WithOutcome reports them.
const (
	// OutcomeServed is a 200 whose segment was sent whole.
	OutcomeServed = "served"
	// OutcomeCutShort is a 200 whose copy ended early (the client went
	// away, or the connection broke).
	OutcomeCutShort = "cut_short"
	// OutcomeUnauthorized is a 401: no hash or a wrong one, a job this
	// worker does not know, a signed time outside the window.
	OutcomeUnauthorized = "unauthorized"
	// OutcomeBadRequest is a 400 or a 405: malformed parameters, a reduce
	// out of range, a method other than GET.
	OutcomeBadRequest = "bad_request"
	// OutcomeNotFound is a 404: another path, an unknown attempt or spill.
	OutcomeNotFound = "not_found"
	// OutcomeError is a 500: the spill files could not be read.
	OutcomeError = "error"
)

// WithOutcome registers a metrics callback called once after each request
// with its outcome (one of the Outcome constants).
func WithOutcome(fn func(outcome string)) HandlerOption {
	return func(h *handler) { h.outcome = fn }
}

// WithRequestWindow sets how far a request's signed time may be from the
// server's clock (DefaultRequestWindow by default).
func WithRequestWindow(d time.Duration) HandlerOption {
	return func(h *handler) { h.window = d }
}

// WithClock replaces time.Now (tests).
func WithClock(now func() time.Time) HandlerOption {
	return func(h *handler) { h.now = now }
}

// ConnContext is an http.Server's ConnContext for a server that mounts the
// shuffle handler: it lets the handler reach a reply's TCP connection, to
// cork it while a batched reply interleaves frame headers with segments
// sent with sendfile (corkReply). A server without it serves the same
// bytes in more, smaller packets.
func ConnContext(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, connKey{}, c)
}

type connKey struct{}

// DefaultRequestWindow is how old (or how far ahead of the server's clock)
// a signed request may be.
const DefaultRequestWindow = time.Minute

type handler struct {
	secrets SecretSource
	loc     Locator
	log     *slog.Logger
	served  func(jobID string, n int64)
	entries func(n int)
	outcome func(string)
	window  time.Duration
	now     func() time.Time
	// indexes caches spill indexes for the batched endpoint.
	indexes *indexCache
	// dirs caches the Locator's answers for the batched endpoint.
	dirs dirCache
	// data caches small spill data files for the batched endpoint; nil
	// when off.
	data           *dataCache
	dataCacheBytes int64
}

// WithDataCache sets the bytes of small spill data files the batched
// endpoint keeps in memory (KeyDataCacheMB; DefaultDataCacheBytes by
// default; 0: none). See dataCache (datacache_linux.go) for how a spill
// changed or deleted behind the server's back is never served from it.
func WithDataCache(bytes int64) HandlerOption {
	return func(h *handler) { h.dataCacheBytes = bytes }
}

// DefaultDataCacheBytes is the default bound of the shuffle server's cache
// of small spill data files (KeyDataCacheMB's default). The cache maps the
// files (datacache_linux.go): what it holds is the kernel's page cache,
// where recently written spills are anyway, not the server's heap, so its
// bound is set by the spills a tracker serves at once rather than by the
// tracker's memory. At 32 MB, a tracker's 1,000 spills of 41 KB (make
// bench-shuffle) did not fit, and the reduces' waves mapped each file 6-7
// times; 256 MB holds 6,000 such spills, or 2,000 of 128 KiB, in as many
// mappings (maxMappedFiles bounds their number).
const DefaultDataCacheBytes = 256 << 20

// maxCachedFileBytes: a spill data file larger than this is never cached
// (its small segments are read from the file: an open, a read and a close
// each, twice the open for most of a batch's segments, maxHeldFiles). A
// miss maps the whole file, but populates the mapping ahead only up to
// populateMaxBytes (datacache_linux.go): a larger file's pages come in as
// its segments are copied, so mapping it costs about what mapping a small
// one does, whatever its size. Until 2026-11-26 (late night) files over 128 KiB were not
// cached, and in make bench-shuffle with segments of 3.2 KB (160 KB
// files) the server spent about 28 µs a segment, most of it in open and
// close, against 1.6 µs for segments of 825 bytes (docs/scaling.md).
const maxCachedFileBytes = 16 << 20

// NewHandler returns the shuffle server: it serves
// GET /mapOutput?job=J&attempt=A&spill=K&reduce=R, one segment per request,
// and POST /mapOutputs (BatchPath), many segments of one reduce per request
// (batch.go describes that format and serveBatch its answers). Mount it on
// both paths.
//
// A missing or wrong HashHeader, a signed time (TimeHeader) outside the
// window around the server's clock, or a job this worker does not know, is
// refused with 401 and nothing about the data; malformed parameters or a
// reduce out of range get 400; an unknown attempt or spill gets 404; a path
// other than Path gets 404 and a method other than GET 405. A good request
// is answered with 200, ReplyHashHeader, the segment's spill.SegmentInfo as
// JSON in SegmentHeader, Content-Length, and the segment's bytes as they
// are in the data file. A range request (rangefetch.go) is answered with
// the records after its key, as a segment of their own. log may be nil.
func NewHandler(secrets SecretSource, loc Locator, log *slog.Logger, opts ...HandlerOption) http.Handler {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	h := &handler{secrets: secrets, loc: loc, log: log, window: DefaultRequestWindow, now: time.Now, indexes: newIndexCache(indexCacheBytes),
		dataCacheBytes: DefaultDataCacheBytes}
	for _, o := range opts {
		o(h)
	}
	if h.dataCacheBytes > 0 {
		h.data = newDataCache(h.dataCacheBytes, maxCachedFileBytes)
	}
	return h
}

// request is a parsed shuffle request.
type request struct {
	job, attempt  string
	spill, reduce int
	// A range request (rangefetch.go): the records after after, under
	// job definition def's comparator.
	ranged bool
	after  []byte
	def    string
	// bounded: a range request that also stops after upto.
	bounded bool
	upto    []byte
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h.outcome != nil {
		ow := &outcomeWriter{ResponseWriter: w}
		defer func() { h.outcome(ow.outcome()) }()
		w = ow
	}
	if r.URL.Path == BatchPath {
		h.serveBatch(w, r)
		return
	}
	if r.URL.Path != Path {
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	hash := r.Header.Get(HashHeader)
	if hash == "" {
		h.log.Warn("shuffle request without hash refused", "remote", r.RemoteAddr, "query", r.URL.RawQuery)
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	req, err := parseRequest(r)
	if err != nil {
		http.Error(w, "bad request: "+err.Error(), http.StatusBadRequest)
		return
	}
	secret, ok := h.secrets.JobSecret(req.job)
	if !ok {
		h.log.Warn("shuffle request for unknown job refused", "remote", r.RemoteAddr, "job", req.job)
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	at, err := strconv.ParseInt(r.Header.Get(TimeHeader), 10, 64)
	want := ""
	if err == nil && req.ranged {
		want = rangeHash(secret, req.job, req.attempt, req.spill, req.reduce, at, req.after, req.def, req.upto, req.bounded)
	} else if err == nil {
		want = RequestHash(secret, req.job, req.attempt, req.spill, req.reduce, at)
	}
	if err != nil || !hashEqual(hash, want) {
		h.log.Warn("shuffle request with wrong hash refused", "remote", r.RemoteAddr, "job", req.job, "attempt", req.attempt)
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	if age := h.now().Sub(time.UnixMilli(at)); age > h.window || age < -h.window {
		h.log.Warn("shuffle request outside its time window refused (replayed, or clocks apart)", "remote", r.RemoteAddr,
			"job", req.job, "attempt", req.attempt, "age", age.Round(time.Millisecond), "window", h.window)
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	h.serve(w, r, req, hash, secret)
}

func parseRequest(r *http.Request) (request, error) {
	q := r.URL.Query()
	req := request{job: q.Get("job"), attempt: q.Get("attempt")}
	if err := checkID("job", req.job); err != nil {
		return req, err
	}
	if err := checkID("attempt", req.attempt); err != nil {
		return req, err
	}
	var err error
	if req.spill, err = nonNegative(q, "spill"); err != nil {
		return req, err
	}
	if req.reduce, err = nonNegative(q, "reduce"); err != nil {
		return req, err
	}
	req.after, req.def, req.upto, req.ranged, req.bounded, err = parseRange(q)
	return req, err
}

// checkID refuses identifiers that are empty or could name another
// directory once joined into a path.
func checkID(name, v string) error {
	if v == "" {
		return fmt.Errorf("missing parameter %s", name)
	}
	if strings.ContainsAny(v, "/\\\x00") || v == "." || v == ".." {
		return fmt.Errorf("parameter %s=%q is not a valid identifier", name, v)
	}
	return nil
}

func nonNegative(q map[string][]string, name string) (int, error) {
	vs := q[name]
	if len(vs) == 0 || vs[0] == "" {
		return 0, fmt.Errorf("missing parameter %s", name)
	}
	n, err := strconv.Atoi(vs[0])
	if err != nil || n < 0 {
		return 0, fmt.Errorf("parameter %s=%q is not a non-negative integer", name, vs[0])
	}
	return n, nil
}

func (h *handler) serve(w http.ResponseWriter, r *http.Request, req request, hash string, secret []byte) {
	log := h.log.With("job", req.job, "attempt", req.attempt, "spill", req.spill, "reduce", req.reduce)
	dir, err := h.loc.SpillDir(req.job, req.attempt)
	if err != nil {
		log.Info("shuffle request for unknown attempt", "err", err)
		http.Error(w, "unknown attempt", http.StatusNotFound)
		return
	}
	segs, err := spill.ReadIndex(filepath.Join(dir, spill.IndexFileName(req.spill)))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			http.Error(w, "unknown spill", http.StatusNotFound)
			return
		}
		log.Error("shuffle: cannot read spill index", "err", err)
		http.Error(w, "cannot read spill index", http.StatusInternalServerError)
		return
	}
	if req.reduce >= len(segs) {
		http.Error(w, fmt.Sprintf("reduce %d out of range: the spill has %d partitions", req.reduce, len(segs)), http.StatusBadRequest)
		return
	}
	seg := segs[req.reduce]
	dataPath := filepath.Join(dir, spill.DataFileName(req.spill))
	f, err := os.Open(dataPath)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			log.Error("shuffle: spill index without data file", "path", dataPath)
			http.Error(w, "unknown spill", http.StatusNotFound)
			return
		}
		log.Error("shuffle: cannot open spill data", "err", err)
		http.Error(w, "cannot open spill data", http.StatusInternalServerError)
		return
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		log.Error("shuffle: cannot stat spill data", "err", err)
		http.Error(w, "cannot read spill data", http.StatusInternalServerError)
		return
	}
	if seg.Offset < 0 || seg.Length < 0 || seg.Offset+seg.Length > st.Size() {
		log.Error("shuffle: segment outside the data file", "path", dataPath, "offset", seg.Offset, "length", seg.Length, "size", st.Size())
		http.Error(w, "spill data file is truncated", http.StatusInternalServerError)
		return
	}
	if req.ranged {
		h.serveRange(w, req, seg, f, hash, secret, log)
		return
	}
	info, err := json.Marshal(seg)
	if err != nil {
		log.Error("shuffle: cannot encode segment info", "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	if _, err := f.Seek(seg.Offset, io.SeekStart); err != nil {
		log.Error("shuffle: cannot seek in spill data", "err", err)
		http.Error(w, "cannot read spill data", http.StatusInternalServerError)
		return
	}
	writeSegmentHeader(w, secret, hash, info, seg.Length)
	// With the length known ahead, net/http's ReadFrom sends the file's
	// bytes with sendfile (readerFrom finds it under the outcome wrapper).
	var n int64
	if rf := readerFrom(w); rf != nil {
		n, err = rf.ReadFrom(io.LimitReader(f, seg.Length))
	} else {
		n, err = io.Copy(w, io.LimitReader(f, seg.Length))
	}
	if err == nil && n < seg.Length {
		err = fmt.Errorf("%s: %d of %d bytes at offset %d: %w", dataPath, n, seg.Length, seg.Offset, io.ErrUnexpectedEOF)
	}
	if h.served != nil {
		h.served(req.job, n)
	}
	if err != nil {
		if ow, ok := w.(*outcomeWriter); ok {
			ow.cut = true
		}
		log.Warn("shuffle: segment copy cut short", "bytes", n, "of", seg.Length, "remote", r.RemoteAddr, "err", err)
		return
	}
	log.Debug("shuffle: segment served", "bytes", n, "remote", r.RemoteAddr)
}

// outcomeWriter notes the status of a response, and whether its copy was
// cut short, for WithOutcome.
type outcomeWriter struct {
	http.ResponseWriter
	code int
	cut  bool
}

func (w *outcomeWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *outcomeWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap gives http.ResponseController the writer underneath.
func (w *outcomeWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *outcomeWriter) outcome() string {
	switch {
	case w.cut:
		return OutcomeCutShort
	case w.code == 0 || w.code == http.StatusOK:
		return OutcomeServed
	case w.code == http.StatusUnauthorized:
		return OutcomeUnauthorized
	case w.code == http.StatusNotFound:
		return OutcomeNotFound
	case w.code >= 500:
		return OutcomeError
	default:
		return OutcomeBadRequest
	}
}

// writeSegmentHeader starts the 200 reply of a single-segment request: the
// reply hash that proves the server knows the job's secret, the segment's
// description (JSON) and the length of the body that follows.
func writeSegmentHeader(w http.ResponseWriter, secret []byte, requestHash string, info []byte, length int64) {
	hd := w.Header()
	hd.Set(ReplyHashHeader, ReplyHash(secret, requestHash))
	hd.Set(SegmentHeader, string(info))
	hd.Set("Content-Type", "application/octet-stream")
	hd.Set("Content-Length", strconv.FormatInt(length, 10))
	w.WriteHeader(http.StatusOK)
}
