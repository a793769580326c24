// Package shuffle moves map output from the workers that wrote it to the
// reducers that need it, one spill at a time.
//
// Every TaskTracker runs the shuffle server (NewHandler): it serves
// "partition r of spill k of map attempt a of job j" straight from the spill
// files the map attempt wrote (package spill), after checking an HMAC of the
// request made with the job's secret. A reducer learns where spills are from
// the JobTracker as a stream of events (EventSource), fetches each segment it
// needs exactly once with a Fetcher (which authenticates the server and
// verifies the bytes against the segment's announced size, record count and
// CRC), and hands it to a MergeManager, which keeps small segments in memory,
// merges them to disk when memory fills up, and finally yields one sorted
// stream for the reduce function.
//
// Wire protocol: GET /mapOutput?job=J&attempt=A&spill=K&reduce=R with the
// header X-MR-Shuffle-Hash set to RequestHash(secret, J, A, K, R). A good
// reply is 200 with X-MR-Shuffle-Reply-Hash set to ReplyHash(secret, hash),
// X-MR-Segment holding the segment's spill.SegmentInfo as JSON, a
// Content-Length, and the segment's on-disk bytes.
//
// Batched: POST /mapOutputs (BatchPath) fetches many segments of one reduce
// from one server in one request, each named by its announced byte range
// in the spill's data file (version 2; version 1 named the spill and the
// server read its index), each with its own CRC check and its own failure;
// the request's HMAC covers the whole list. Run
// uses it when Options.BatchSegments is above 1 (the reduce child does, with
// mapreduce.reduce.shuffle.batch.segments); batch.go gives the format.
package shuffle
