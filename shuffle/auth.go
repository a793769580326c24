package shuffle

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"strconv"
)

// HTTP headers of the shuffle protocol.
const (
	// HashHeader carries RequestHash of the request's parameters.
	HashHeader = "X-MR-Shuffle-Hash"
	// TimeHeader carries the time the request was made (Unix
	// milliseconds), which RequestHash signs: a captured request is
	// refused once it is older than the server's window.
	TimeHeader = "X-MR-Shuffle-Time"
	// ReplyHashHeader carries ReplyHash of the request hash, so that the
	// fetcher knows the server holds the job's secret.
	ReplyHashHeader = "X-MR-Shuffle-Reply-Hash"
	// SegmentHeader carries the served segment's spill.SegmentInfo as JSON.
	SegmentHeader = "X-MR-Segment"
)

// Path is the URL path the shuffle server answers on.
const Path = "/mapOutput"

// RequestHash returns the base64 (standard encoding) HMAC-SHA256, keyed with
// the job's secret, of the request for partition reduce of spill spill of
// attempt attempt of job job made at Unix millisecond at. The message is
// length-prefixed ("len:job len:attempt spill reduce at") so that no two
// distinct requests share a message, and it always contains ':' so that it
// never equals a base64 request hash (which ReplyHash signs).
func RequestHash(secret []byte, job, attempt string, spill, reduce int, at int64) string {
	return sign(secret, requestMessage(job, attempt, spill, reduce, at))
}

// requestMessage is the message RequestHash signs.
func requestMessage(job, attempt string, spill, reduce int, at int64) []byte {
	msg := make([]byte, 0, 32+len(job)+len(attempt))
	msg = strconv.AppendInt(msg, int64(len(job)), 10)
	msg = append(msg, ':')
	msg = append(msg, job...)
	msg = append(msg, ' ')
	msg = strconv.AppendInt(msg, int64(len(attempt)), 10)
	msg = append(msg, ':')
	msg = append(msg, attempt...)
	msg = append(msg, ' ')
	msg = strconv.AppendInt(msg, int64(spill), 10)
	msg = append(msg, ' ')
	msg = strconv.AppendInt(msg, int64(reduce), 10)
	msg = append(msg, ' ')
	msg = strconv.AppendInt(msg, at, 10)
	return msg
}

// ReplyHash returns the base64 HMAC-SHA256, keyed with the job's secret, of
// the request hash as sent (its base64 text). The server sends it back so
// that the fetcher can tell the server knows the secret too.
func ReplyHash(secret []byte, requestHash string) string {
	return sign(secret, []byte(requestHash))
}

func sign(secret, msg []byte) string {
	mac := hmac.New(sha256.New, secret)
	mac.Write(msg)
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// hashEqual compares two base64 hashes in constant time.
func hashEqual(a, b string) bool {
	return hmac.Equal([]byte(a), []byte(b))
}
