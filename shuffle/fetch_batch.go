package shuffle

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"net/http"
	"time"

	"gomr/spill"
)

// NewTransport returns the HTTP transport of one reducer's fetchers: its
// connections are kept alive and reused, up to parallel to each host (a
// reducer has at most parallel requests in flight, so that is all it can
// use), with the dial timeout of the shuffle.
func NewTransport(parallel int) *http.Transport {
	parallel = max(parallel, 1)
	return &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        0, // no bound over all hosts
		MaxIdleConnsPerHost: parallel,
		MaxConnsPerHost:     parallel,
		IdleConnTimeout:     90 * time.Second,
		// Segments are compressed already.
		DisableCompression: true,
		// Replies are streamed: a buffer of a few small segments saves
		// system calls, and larger segments are read past it.
		ReadBufferSize:  32 << 10,
		WriteBufferSize: 16 << 10,
	}
}

// FetchBatch fetches partition reduce of every spill in locs, which must
// all be of one job on one host (locs[0].Host), in one POST BatchPath
// request, and returns one error per location: nil where errs' data slot
// holds the verified segment. Each segment is checked: the server's reply
// hash, its index entry against the announcement (length, raw length,
// records, CRC), its bytes against the length and the CRC32C. (Fetch also
// decodes every block and record; a batch leaves that to the merge, which
// decodes them anyway: bytes that match the map's CRC are the bytes the map
// wrote.) Each segment fails on its own: a segment the
// server does not have is ErrNotFound while the others are kept, and
// segments that failed for a reason worth retrying (a broken connection, a
// 5xx, a checksum mismatch, a server error frame) are asked for again, in
// one request, up to Retries times with back-off. The errors name the
// location and wrap the cause, as Fetch's do.
func (f *Fetcher) FetchBatch(ctx context.Context, locs []SpillLocation, reduce int) (data [][]byte, errs []error) {
	b := batchSegs{items: make([]fetchItem, len(locs))}
	for i := range locs {
		l := &locs[i]
		if n := len(b.origins); n == 0 || b.origins[n-1] != (origin{job: l.JobID, attempt: l.AttemptID, host: l.Host}) {
			b.origins = append(b.origins, origin{job: l.JobID, attempt: l.AttemptID, host: l.Host})
		}
		b.items[i] = fetchItem{key: segKey{l.MapTask, l.Spill}, origin: int32(len(b.origins) - 1), final: l.Final, seg: l.Segment, unknown: l.SegmentUnknown}
	}
	data, errs = make([][]byte, len(locs)), make([]error, len(locs))
	if b.mixed(reduce, errs) {
		return data, errs
	}
	f.resolveUnknown(ctx, &b, reduce, errs)
	ok := b.items[:0:0]
	var at []int
	for i := range b.items {
		if errs[i] == nil {
			ok = append(ok, b.items[i])
			at = append(at, i)
		}
	}
	if len(ok) < len(b.items) {
		// Some segments could not be resolved: fetch the others.
		sub := batchSegs{origins: b.origins, items: ok}
		d, e := make([][]byte, len(ok)), make([]error, len(ok))
		f.fetchBatch(ctx, &sub, reduce, d, e)
		for j, i := range at {
			data[i], errs[i] = d[j], e[j]
		}
	} else {
		f.fetchBatch(ctx, &b, reduce, data, errs)
	}
	for i, d := range data {
		data[i] = d[:len(d):len(d)] // no room to grow into the next segment
	}
	return data, errs
}

// batchSegs is the segments of one batched request: items, each naming
// its (job, attempt, host) by index in origins (shuffle.Run's own
// origins, or FetchBatch's), so that a request's list holds no strings.
type batchSegs struct {
	origins []origin
	items   []fetchItem
}

// loc returns item i's location, for messages and failure reports.
func (b *batchSegs) loc(i int) SpillLocation {
	it := &b.items[i]
	o := &b.origins[it.origin]
	return SpillLocation{JobID: o.job, MapTask: it.key.m, Spill: it.key.k, Final: it.final, AttemptID: o.attempt, Host: o.host, Segment: it.seg, SegmentUnknown: it.unknown}
}

// mixed tells whether b's items are not all of one job on one host, which
// one request cannot fetch, setting every item's error if so.
func (b *batchSegs) mixed(reduce int, errs []error) bool {
	if len(b.items) == 0 {
		return false
	}
	first := &b.origins[b.items[0].origin]
	for i := 1; i < len(b.items); i++ {
		if o := &b.origins[b.items[i].origin]; o.host != first.host || o.job != first.job {
			for j := range errs {
				errs[j] = fmt.Errorf("fetch reduce %d of %v: batch mixes %s of job %s with %s of job %s (internal error)",
					reduce, b.loc(j), first.host, first.job, o.host, o.job)
			}
			return true
		}
	}
	return false
}

// fetchBatch is FetchBatch of b's items into data and errs, which have
// len(b.items) elements, all nil on entry.
func (f *Fetcher) fetchBatch(ctx context.Context, b *batchSegs, reduce int, data [][]byte, errs []error) {
	n := len(b.items)
	if n == 0 || b.mixed(reduce, errs) {
		return
	}
	for i := range b.items {
		if b.items[i].unknown {
			for j := range errs {
				errs[j] = fmt.Errorf("fetch reduce %d of %v: segment %d of the batch is not resolved (internal error)", reduce, b.loc(j), i)
			}
			return
		}
	}
	f.retrying(ctx, b, reduce, everyItem(n), errs, func(pending []int) {
		f.fetchBatchOnce(ctx, b, pending, reduce, data, errs)
	})
}

// retrying calls once with the items of b to ask for (pending first),
// then again with those whose errors are worth retrying, up to
// f.Retries times with back-off (f.RetryDelay, doubled each time). once
// sets errs[i] for each item i it could not get (nil on entry); the errors
// left are final, wrapped with the item's location.
func (f *Fetcher) retrying(ctx context.Context, b *batchSegs, reduce int, pending []int, errs []error, once func(pending []int)) {
	retries := max(f.Retries, 0)
	delay := f.RetryDelay
	// errs holds each pass's errors until they are final (wrapped) or
	// asked for again (cleared).
	for attempt := 0; ; attempt++ {
		once(pending)
		var again []int
		for _, i := range pending {
			err := errs[i]
			if err == nil {
				continue
			}
			var perm *permanentError
			switch {
			case ctx.Err() != nil:
				errs[i] = fmt.Errorf("fetch reduce %d of %v: %w", reduce, b.loc(i), ctx.Err())
			case errors.As(err, &perm):
				errs[i] = fmt.Errorf("fetch reduce %d of %v: %w", reduce, b.loc(i), perm.err)
			case attempt >= retries:
				errs[i] = fmt.Errorf("fetch reduce %d of %v: failed %d times, last: %w", reduce, b.loc(i), attempt+1, err)
			default:
				errs[i] = nil
				again = append(again, i)
			}
		}
		if len(again) == 0 {
			return
		}
		pending = again
		if delay > 0 {
			if !sleep(ctx, delay) {
				for _, i := range pending {
					errs[i] = fmt.Errorf("fetch reduce %d of %v: %w", reduce, b.loc(i), ctx.Err())
				}
				return
			}
			delay *= 2
		}
	}
}

// allItems is 0, 1, ..., MaxBatchSegments-1, read only: the indexes of a
// request's first pass, shared by every request.
var allItems = func() []int {
	s := make([]int, MaxBatchSegments)
	for i := range s {
		s[i] = i
	}
	return s
}()

// everyItem returns 0, 1, ..., n-1, which the caller must not change.
func everyItem(n int) []int {
	if n <= len(allItems) {
		return allItems[:n:n]
	}
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

// fetchBatchOnce makes one batched request for b.items[i], i in idx, storing
// verified segments in data and the errors in errs, by index of b.items
// (permanentError for those not worth retrying; errs[i] must be nil for
// every i in idx on entry). It asks with BatchVersion, naming each
// segment's byte range, unless the host has refused that version before:
// a server of version 1 answers it with 400, and the fetcher then asks
// it, from then on, with version 1.
func (f *Fetcher) fetchBatchOnce(ctx context.Context, b *batchSegs, idx []int, reduce int, data [][]byte, errs []error) {
	host := b.origins[b.items[0].origin].host
	if _, old := f.indexedHosts.Load(host); !old {
		if !f.fetchBatchAs(ctx, BatchVersion, b, idx, reduce, data, errs) {
			return
		}
		f.indexedHosts.Store(host, struct{}{})
	}
	f.fetchBatchAs(ctx, batchVersionIndexed, b, idx, reduce, data, errs)
}

// fetchBatchAs is fetchBatchOnce with the given version of the formats.
// It returns true, having set no error, when the server refused a request
// of a version above 1 with 400 (a server that knows only version 1).
func (f *Fetcher) fetchBatchAs(ctx context.Context, version int, b *batchSegs, idx []int, reduce int, data [][]byte, errs []error) (refused bool) {
	failAll := func(from int, err error) {
		for _, i := range idx[from:] {
			errs[i] = err
		}
	}
	segs := b.items
	first := &b.origins[segs[0].origin]
	host := first.host
	body, err := encodeBatchRequest(version, first.job, reduce, time.Now().UnixMilli(), len(idx), func(n int) BatchItem {
		it := &segs[idx[n]]
		return BatchItem{Attempt: b.origins[it.origin].attempt, Spill: it.key.k, Offset: it.seg.Offset, Length: it.seg.Length}
	})
	if err != nil {
		failAll(0, &permanentError{fmt.Errorf("build batch request: %w", err)})
		return
	}
	resp, hash, err := f.postBatch(ctx, host, body)
	if err != nil {
		failAll(0, err)
		return
	}
	defer drainBody(resp)
	if resp.StatusCode == http.StatusBadRequest && version != batchVersionIndexed {
		return true
	}
	if err := f.checkBatchReply(resp, host, hash, "a batch"); err != nil {
		failAll(0, err)
		return
	}
	var frames io.Reader = resp.Body
	from := 0
	if version != batchVersionIndexed {
		// Served frames straight into the segments' buffers; the frame
		// reader takes over from the first frame that is not one.
		var m [len(batchReplyMagic) + 1]byte
		if _, err := io.ReadFull(resp.Body, m[:]); err != nil {
			failAll(0, fmt.Errorf("batch reply from %s: read header: %w", host, err))
			return
		}
		if string(m[:len(batchReplyMagic)]) != batchReplyMagic || m[len(batchReplyMagic)] != byte(version) {
			failAll(0, fmt.Errorf("batch reply from %s: %w: not a batch reply (magic or version)", host, ErrBadBatch))
			return
		}
		var rest []byte
		var err error
		from, rest, err = readServedFrames(resp.Body, host, segs, idx, data, errs)
		switch {
		case from == len(idx):
			return false
		case len(rest) == 0 && err != nil:
			failAll(from, fmt.Errorf("batch reply from %s, segment %d of %d: %w", host, from+1, len(idx), noEOF(err)))
			return
		case err != nil:
			frames = io.MultiReader(bytes.NewReader(rest), errReader{err})
		default:
			frames = io.MultiReader(bytes.NewReader(rest), resp.Body)
		}
	}
	fr := newFrameReader(frames, version)
	defer fr.release()
	if from == 0 {
		if err := fr.readMagic(); err != nil {
			failAll(0, fmt.Errorf("batch reply from %s: %w", host, err))
			return
		}
	}
	arena := newSegmentArena(segs, idx[from:])
	for n := from; n < len(idx); n++ {
		i := idx[n]
		want := segs[i].seg
		fm, err := fr.next(want.Length)
		if err != nil {
			if errors.Is(err, ErrSegmentMismatch) {
				// The frame cannot be skipped safely: this segment is
				// wrong, the rest are asked for again.
				errs[i] = &permanentError{fmt.Errorf("server %s: %w", host, err)}
				failAll(n+1, fmt.Errorf("batch reply from %s abandoned after a mismatched segment", host))
				return
			}
			failAll(n, fmt.Errorf("batch reply from %s, segment %d of %d: %w", host, n+1, len(idx), err))
			return
		}
		switch fm.status {
		case frameNotFound:
			errs[i] = &permanentError{fmt.Errorf("server %s has no such segment (%s): %w", host, fm.msg, ErrNotFound)}
			continue
		case frameBadRequest:
			errs[i] = &permanentError{fmt.Errorf("server %s refused the segment: %s", host, fm.msg)}
			continue
		case frameError:
			errs[i] = fmt.Errorf("server %s could not serve the segment: %s", host, fm.msg)
			continue
		}
		got := fm.seg
		if version == batchVersionIndexed && (got.Length != want.Length || got.RawLength != want.RawLength || got.Records != want.Records || got.CRC != want.CRC) {
			errs[i] = &permanentError{fmt.Errorf("server %s has length %d, raw length %d, records %d, crc %08x; announced length %d, raw length %d, records %d, crc %08x: %w",
				host, got.Length, got.RawLength, got.Records, got.CRC, want.Length, want.RawLength, want.Records, want.CRC, ErrSegmentMismatch)}
			if err := fr.skip(got.Length); err != nil {
				failAll(n+1, fmt.Errorf("batch reply from %s, segment %d of %d: %w", host, n+1, len(idx), err))
				return
			}
			continue
		}
		buf := arena.take(want.Length)
		if err := fr.data(buf); err != nil {
			failAll(n, fmt.Errorf("read segment from %s: %w", host, err))
			return
		}
		if err := verifyChecksum(buf, want); err != nil {
			errs[i] = fmt.Errorf("segment from %s: %w: %w", host, ErrChecksum, err)
			continue
		}
		data[i] = buf
	}
	return false
}

// postBatch sends a batched request's body to host, signed, and returns
// the reply (which the caller must drain, drainBody) and the request's
// hash, or an error: a permanentError if the request cannot be built, the
// connection's error otherwise.
func (f *Fetcher) postBatch(ctx context.Context, host string, body []byte) (*http.Response, string, error) {
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+host+BatchPath, bytes.NewReader(body))
	if err != nil {
		return nil, "", &permanentError{fmt.Errorf("build request: %w", err)}
	}
	hash := BatchRequestHash(f.Secret, body)
	hreq.Header.Set(HashHeader, hash)
	hreq.Header.Set("Content-Type", "application/octet-stream")
	client := f.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(hreq)
	if err != nil {
		return nil, "", fmt.Errorf("connect to shuffle server %s: %w", host, err)
	}
	return resp, hash, nil
}

// drainBody reads what is left of a reply (up to 64 KiB, so that its
// connection can be reused) and closes it.
func drainBody(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
}

// checkBatchReply checks a batched request's reply (what, for messages)
// before its body is read: a 200 with the reply hash of the request's
// hash. A 401, 404, another 4xx or a wrong hash is a permanentError (ErrUnauthorized,
// ErrNotFound); a 5xx is worth retrying.
func (f *Fetcher) checkBatchReply(resp *http.Response, host, hash, what string) error {
	switch {
	case resp.StatusCode == http.StatusOK:
	case resp.StatusCode == http.StatusUnauthorized:
		return &permanentError{fmt.Errorf("server %s answered 401: %w", host, ErrUnauthorized)}
	case resp.StatusCode == http.StatusNotFound:
		return &permanentError{fmt.Errorf("server %s answered 404 to %s (%s): %w", host, what, errorBody(resp), ErrNotFound)}
	case resp.StatusCode >= 400 && resp.StatusCode < 500:
		return &permanentError{fmt.Errorf("server %s refused %s: %s: %s", host, what, resp.Status, errorBody(resp))}
	default:
		return fmt.Errorf("server %s answered %s: %s", host, resp.Status, errorBody(resp))
	}
	if reply := resp.Header.Get(ReplyHashHeader); reply == "" || !hashEqual(reply, ReplyHash(f.Secret, hash)) {
		return &permanentError{fmt.Errorf("server %s sent a missing or wrong reply hash: %w", host, ErrUnauthorized)}
	}
	return nil
}

// readServedFrames reads the frames of a version 2 reply (after its
// magic) for segs[i], i in idx, while they are served ones, straight into
// the segments' buffers: the frames of a run of small segments (under
// arenaSegmentBytes) are read with one read into one shared block of up
// to arenaBytes, their status bytes included, and each segment is the
// slice of it after its status (its capacity the rest of the block, as
// segmentArena.take's); a larger segment gets a buffer of its own.
// Each segment's CRC32C is checked against its announcement: data[i] is
// set if it matches, errs[i] if not. It returns how many frames it read
// whole (next), and, when it stopped early, the bytes it read past them
// (rest: from the first frame that is not a served one, which the frame
// reader then reads, or a frame cut short) and the read's error.
func readServedFrames(body io.Reader, host string, segs []fetchItem, idx []int, data [][]byte, errs []error) (next int, rest []byte, err error) {
	check := func(n int, buf []byte) {
		i := idx[n]
		if err := verifyChecksum(buf, segs[i].seg); err != nil {
			errs[i] = fmt.Errorf("segment from %s: %w: %w", host, ErrChecksum, err)
			return
		}
		data[i] = buf
	}
	for next < len(idx) {
		if l := segs[idx[next]].seg.Length; l >= arenaSegmentBytes {
			var st [1]byte
			if _, err := io.ReadFull(body, st[:]); err != nil {
				return next, nil, err
			}
			if st[0] != frameOK {
				return next, st[:], nil
			}
			buf := make([]byte, l)
			if n, err := io.ReadFull(body, buf); err != nil {
				return next, nil, fmt.Errorf("got %d of %d bytes: %w", n, l, noEOF(err))
			}
			check(next, buf)
			next++
			continue
		}
		end, need := next, int64(0)
		for end < len(idx) {
			l := segs[idx[end]].seg.Length
			if l >= arenaSegmentBytes || need > 0 && need+1+l > arenaBytes {
				break
			}
			need += 1 + l
			end++
		}
		block := make([]byte, need)
		got, rerr := io.ReadFull(body, block)
		pos := 0
		for ; next < end; next++ {
			l := int(segs[idx[next]].seg.Length)
			if pos >= got || block[pos] != frameOK || pos+1+l > got {
				return next, block[pos:got], rerr
			}
			check(next, block[pos+1:pos+1+l])
			pos += 1 + l
		}
	}
	return next, nil, nil
}

// errReader returns its error from every read.
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// verifyChecksum checks a fetched segment's length and CRC32C against its
// announcement (spill.SegmentInfo.CRC is the CRC32C of the on-disk bytes).
// A mismatch wraps spill.ErrCorrupt, as spill.VerifySegment's do.
func verifyChecksum(data []byte, seg spill.SegmentInfo) error {
	if int64(len(data)) != seg.Length {
		return fmt.Errorf("%w: segment length mismatch: expected %d bytes, got %d", spill.ErrCorrupt, seg.Length, len(data))
	}
	if got := crc32.Checksum(data, castagnoli); got != seg.CRC {
		return fmt.Errorf("%w: segment CRC32C mismatch: expected %08x, got %08x", spill.ErrCorrupt, seg.CRC, got)
	}
	return nil
}

// Segments of a batch smaller than arenaSegmentBytes share allocations of
// up to arenaBytes: one allocation, and one read, for many segments rather
// than one each (the merge keeps them, so they cannot be recycled; a shared
// block is released when the last of its segments is). Larger segments get
// their own buffer. The bound was 16 KiB until the fetcher's CPU a byte was
// measured at medium segments (docs/scaling.md, "segments of medium size
// read in shared blocks"): a segment read on its own, in a read sized to
// it, went mostly through the transport's 32 KiB read buffer and was
// copied once more, and cost a system call or two of its own. A segment
// the merge writes to disk on its own (over the merge's SegmentLimit, a
// quarter of the shuffle buffer) keeps its block's memory until the
// block's other segments are merged too: at most arenaBytes a fetch in
// flight, and only with a shuffle buffer under 1 MiB.
const (
	arenaSegmentBytes = 256 << 10
	arenaBytes        = 1 << 20
)

// segmentArena hands out the buffers of one batched reply's segments.
type segmentArena struct {
	block []byte // the rest of the current shared block
	small int64  // announced bytes of the small segments not handed out yet
}

func newSegmentArena(segs []fetchItem, idx []int) *segmentArena {
	a := &segmentArena{}
	for _, i := range idx {
		if n := segs[i].seg.Length; n < arenaSegmentBytes {
			a.small += n
		}
	}
	return a
}

// take returns a buffer of n bytes. A buffer of a shared block has the
// rest of the block as its capacity, by which the merge manager (memList)
// tells the segments of one block; nothing writes past a segment's
// length (FetchBatch hands its callers buffers without that room).
func (a *segmentArena) take(n int64) []byte {
	if n >= arenaSegmentBytes {
		return make([]byte, n)
	}
	if int64(len(a.block)) < n {
		a.block = make([]byte, max(min(a.small, arenaBytes), n))
	}
	a.small -= n
	buf := a.block[:n]
	a.block = a.block[n:]
	return buf
}
