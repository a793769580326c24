package shuffle

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"time"

	"gomr/mr"
	"gomr/spill"
)

// Range fetch for the remainder of a split reduce (docs/split.md, spec
// §5.9.4): a reduce that resumes after key K needs only the records of
// its partition whose key is after K. A range request is a single-segment
// request with two more parameters, `after` (K, base64url) and `def` (the
// job definition whose comparator orders the keys), both signed
// (RangeRequestHash). The server reads the segment, checks it against its
// index entry (length and CRC32C), and sends the records after K as a new
// segment, described in SegmentHeader; the fetcher checks the body against
// that description and that it holds no more records or bytes than the
// announced segment. The server scans the segment: map output carries no
// sparse key index yet, so it saves the network and the reducer's merge,
// not the server's read. A reduce whose key range also ends (a piece of a
// reduce scale-up split, or a task cut into pieces) adds a third,
// `upto` (its upper key), also signed: the server then sends the records
// after K through that key only.

// Query parameters of a range request.
const (
	AfterParam = "after"
	DefParam   = "def"
	UptoParam  = "upto"
)

// RangeRequestHash is RequestHash for a range request: the same message
// followed by " after " and the length-prefixed key and job definition,
// so that it never equals the hash of a whole-segment request, and a
// changed key or definition is refused.
func RangeRequestHash(secret []byte, job, attempt string, spill, reduce int, at int64, after []byte, def string) string {
	msg := requestMessage(job, attempt, spill, reduce, at)
	msg = append(msg, " after "...)
	msg = strconv.AppendInt(msg, int64(len(after)), 10)
	msg = append(msg, ':')
	msg = append(msg, after...)
	msg = append(msg, ' ')
	msg = strconv.AppendInt(msg, int64(len(def)), 10)
	msg = append(msg, ':')
	msg = append(msg, def...)
	return sign(secret, msg)
}

// BoundedRangeRequestHash is RangeRequestHash for a range request with an
// upper key: the same message followed by " upto " and the
// length-prefixed key, so that it never equals the hash of an unbounded
// range request, and a changed or dropped upper key is refused.
func BoundedRangeRequestHash(secret []byte, job, attempt string, spill, reduce int, at int64, after []byte, def string, upto []byte) string {
	msg := requestMessage(job, attempt, spill, reduce, at)
	for _, part := range []struct {
		name string
		v    []byte
	}{{" after ", after}, {" ", []byte(def)}, {" upto ", upto}} {
		msg = append(msg, part.name...)
		msg = strconv.AppendInt(msg, int64(len(part.v)), 10)
		msg = append(msg, ':')
		msg = append(msg, part.v...)
	}
	return sign(secret, msg)
}

// rangeHash is the hash of a range request: bounded when it has an upper
// key.
func rangeHash(secret []byte, job, attempt string, spill, reduce int, at int64, after []byte, def string, upto []byte, bounded bool) string {
	if bounded {
		return BoundedRangeRequestHash(secret, job, attempt, spill, reduce, at, after, def, upto)
	}
	return RangeRequestHash(secret, job, attempt, spill, reduce, at, after, def)
}

// parseRange reads the range parameters of a request (ranged is false
// when it has none; bounded when it has an upper key, upto).
func parseRange(q map[string][]string) (after []byte, def string, upto []byte, ranged, bounded bool, err error) {
	after, def, ranged, err = parseAfter(q)
	if err != nil || !ranged {
		return after, def, nil, ranged, false, err
	}
	if us, ok := q[UptoParam]; ok {
		if upto, err = base64.RawURLEncoding.DecodeString(us[0]); err != nil {
			return nil, "", nil, false, false, fmt.Errorf("parameter %s is not base64url: %w", UptoParam, err)
		}
		bounded = true
	}
	return after, def, upto, true, bounded, nil
}

// parseAfter reads the after and def parameters of a range request.
func parseAfter(q map[string][]string) (after []byte, def string, ranged bool, err error) {
	vs, ok := q[AfterParam]
	if !ok {
		return nil, "", false, nil
	}
	if after, err = base64.RawURLEncoding.DecodeString(vs[0]); err != nil {
		return nil, "", false, fmt.Errorf("parameter %s is not base64url: %w", AfterParam, err)
	}
	if ds := q[DefParam]; len(ds) > 0 {
		def = ds[0]
	}
	if def == "" {
		return nil, "", false, fmt.Errorf("a range request (%s) needs parameter %s", AfterParam, DefParam)
	}
	return after, def, true, nil
}

// serveRange answers a range request for segment seg of the open data
// file f: the records after req.after (through req.upto when bounded), as
// a new segment.
func (h *handler) serveRange(w http.ResponseWriter, req request, seg spill.SegmentInfo, f *os.File, hash string, secret []byte, log *slog.Logger) {
	def, err := mr.LookupJob(req.def)
	if err != nil {
		http.Error(w, "bad request: "+err.Error(), http.StatusBadRequest)
		return
	}
	cmp := def.Compare
	if cmp == nil {
		cmp = bytes.Compare
	}
	data := make([]byte, seg.Length)
	if _, err := f.ReadAt(data, seg.Offset); err != nil {
		log.Error("shuffle: cannot read segment for a range request", "err", err)
		http.Error(w, "cannot read spill data", http.StatusInternalServerError)
		return
	}
	if err := spill.VerifySegment(data, seg); err != nil {
		log.Error("shuffle: corrupt segment", "err", err)
		http.Error(w, "corrupt spill data", http.StatusInternalServerError)
		return
	}
	var upto []byte
	if req.bounded {
		upto = req.upto
	}
	body, info, err := segmentRange(data, seg, req.after, upto, req.bounded, cmp)
	if err != nil {
		log.Error("shuffle: cannot cut a segment for a range request", "err", err)
		http.Error(w, "cannot read spill data", http.StatusInternalServerError)
		return
	}
	js, err := json.Marshal(info)
	if err != nil {
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	writeSegmentHeader(w, secret, hash, js, info.Length)
	n, err := w.Write(body)
	if h.served != nil {
		h.served(req.job, int64(n))
	}
	if err != nil {
		if ow, ok := w.(*outcomeWriter); ok {
			ow.cut = true
		}
		log.Warn("shuffle: range segment copy cut short", "bytes", n, "of", info.Length, "err", err)
		return
	}
	log.Debug("shuffle: range segment served", "bytes", n, "of", seg.Length, "records", info.Records, "of", seg.Records)
}

// segmentAfter is the segment of the records of data (segment seg) whose
// key is after after under cmp: data itself when that is all of them.
func segmentAfter(data []byte, seg spill.SegmentInfo, after []byte, cmp mr.Comparator) ([]byte, spill.SegmentInfo, error) {
	return segmentRange(data, seg, after, nil, false, cmp)
}

// segmentRange is the segment of the records of data (segment seg) whose
// key is after after and, when bounded, not after upto, under cmp: data
// itself when that is all of them. The segment is sorted, so it stops
// reading at the first key after upto.
func segmentRange(data []byte, seg spill.SegmentInfo, after, upto []byte, bounded bool, cmp mr.Comparator) ([]byte, spill.SegmentInfo, error) {
	sr := spill.NewSegmentReader(bytes.NewReader(data), seg)
	defer sr.Close()
	var out bytes.Buffer
	sw := spill.NewSegmentWriter(&out, 0)
	skipped := 0
	for sr.Next() {
		if cmp(sr.Key(), after) <= 0 {
			skipped++
			continue
		}
		if bounded && cmp(sr.Key(), upto) > 0 {
			skipped++
			break
		}
		if err := sw.Write(sr.Key(), sr.Value()); err != nil {
			return nil, spill.SegmentInfo{}, err
		}
	}
	if err := sr.Err(); err != nil {
		return nil, spill.SegmentInfo{}, err
	}
	info, err := sw.Close()
	if err != nil {
		return nil, spill.SegmentInfo{}, err
	}
	if skipped == 0 {
		seg.Offset = 0
		return data, seg, nil
	}
	return out.Bytes(), info, nil
}

// FetchRange fetches the records of partition reduce of the spill at loc
// whose key is after f.After (and, when f.Bounded, not after f.Upto)
// (under job definition f.Def's comparator),
// with Fetch's retries, and returns them as a verified segment and its
// description: the server's reply hash must be right, and the segment may
// hold no more records, raw bytes or bytes than the announced one.
func (f *Fetcher) FetchRange(ctx context.Context, loc SpillLocation, reduce int) ([]byte, spill.SegmentInfo, error) {
	var info spill.SegmentInfo
	data, err := f.withRetries(ctx, loc, reduce, func() ([]byte, error) {
		d, in, err := f.fetchRangeOnce(ctx, loc, reduce)
		info = in
		return d, err
	})
	return data, info, err
}

func (f *Fetcher) fetchRangeOnce(ctx context.Context, loc SpillLocation, reduce int) ([]byte, spill.SegmentInfo, error) {
	var none spill.SegmentInfo
	u := loc.URL(reduce) + "&" + AfterParam + "=" + base64.RawURLEncoding.EncodeToString(f.After) + "&" + DefParam + "=" + url.QueryEscape(f.Def)
	if f.Bounded {
		u += "&" + UptoParam + "=" + base64.RawURLEncoding.EncodeToString(f.Upto)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, none, &permanentError{fmt.Errorf("build request: %w", err)}
	}
	at := time.Now().UnixMilli()
	hash := rangeHash(f.Secret, loc.JobID, loc.AttemptID, loc.Spill, reduce, at, f.After, f.Def, f.Upto, f.Bounded)
	req.Header.Set(HashHeader, hash)
	req.Header.Set(TimeHeader, strconv.FormatInt(at, 10))
	resp, err := f.client().Do(req)
	if err != nil {
		return nil, none, fmt.Errorf("connect to shuffle server %s: %w", loc.Host, err)
	}
	defer func() {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
	}()
	if err := statusError(resp, loc); err != nil {
		return nil, none, err
	}
	reply := resp.Header.Get(ReplyHashHeader)
	if reply == "" || !hashEqual(reply, ReplyHash(f.Secret, hash)) {
		return nil, none, &permanentError{fmt.Errorf("server %s sent a missing or wrong reply hash: %w", loc.Host, ErrUnauthorized)}
	}
	var got spill.SegmentInfo
	if err := json.Unmarshal([]byte(resp.Header.Get(SegmentHeader)), &got); err != nil {
		return nil, none, &permanentError{fmt.Errorf("server %s sent a bad %s header %q: %w", loc.Host, SegmentHeader, resp.Header.Get(SegmentHeader), err)}
	}
	want := loc.Segment
	if got.Records > want.Records || got.RawLength > want.RawLength || got.Length < 0 || got.Length > want.Length+int64(spill.DefaultBlockSize) {
		return nil, none, &permanentError{fmt.Errorf("server %s sent a range of %d records, %d raw bytes, %d bytes of a segment of %d records, %d raw bytes, %d bytes: %w",
			loc.Host, got.Records, got.RawLength, got.Length, want.Records, want.RawLength, want.Length, ErrSegmentMismatch)}
	}
	if resp.ContentLength != got.Length {
		return nil, none, fmt.Errorf("server %s sent Content-Length %d for a range segment of %d bytes", loc.Host, resp.ContentLength, got.Length)
	}
	data := make([]byte, got.Length)
	if n, err := io.ReadFull(resp.Body, data); err != nil {
		return nil, none, fmt.Errorf("read range segment from %s: got %d of %d bytes: %w", loc.Host, n, got.Length, err)
	}
	if err := spill.VerifySegment(data, got); err != nil {
		return nil, none, fmt.Errorf("range segment from %s: %w: %w", loc.Host, ErrChecksum, err)
	}
	return data, got, nil
}
