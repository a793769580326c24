package shuffle

import (
	"fmt"
	"strconv"

	"gomr/conf"
)

// Configuration keys of the reduce side's batched fetch (Options.BatchSegments
// and Options.BatchBytes); the other shuffle keys are the runtime's (conf).
const (
	// KeyBatchSegments is the most segments one request fetches from one
	// host; 1 fetches one segment per request (the single-segment
	// endpoint).
	KeyBatchSegments = "mapreduce.reduce.shuffle.batch.segments"
	// KeyBatchBytes bounds the announced bytes of one batched request; 0
	// means no bound.
	KeyBatchBytes = "mapreduce.reduce.shuffle.batch.bytes"
	// KeyRangeFetch makes the remainder of a split reduce fetch only the
	// records after its start key (Fetcher.After, rangefetch.go); off, it
	// fetches whole segments and skips (skip-replay).
	KeyRangeFetch = "mapreduce.reduce.split.range-fetch"
	// KeyDataCacheMB bounds the TaskTracker shuffle server's cache of small
	// spill data files (WithDataCache); 0 turns it off.
	KeyDataCacheMB = "mapreduce.tasktracker.shuffle.datacache.mb"
)

// DefaultBatchSegments is KeyBatchSegments' default. Small segments are
// bound by a cost per request as well as per segment: make bench-shuffle
// (825-byte segments) cost 3.9 µs of fetcher CPU and 7.9 µs of server CPU a
// segment at 64, 2.5 and 6.8 at 1,024 (docs/scaling.md); larger segments
// reach KeyBatchBytes first.
const DefaultBatchSegments = 1024

func init() {
	conf.Register(
		conf.Key{Name: KeyBatchSegments, Type: conf.Int, Default: strconv.Itoa(DefaultBatchSegments), Job: true, Check: intRange(1, MaxBatchSegments),
			Description: "most map output segments a reduce fetches from one host in one request; 1 fetches one segment per request"},
		conf.Key{Name: KeyBatchBytes, Type: conf.Int64, Default: "4194304", Job: true, Unit: "bytes", Check: int64AtLeast(0),
			Description: "most announced bytes of the segments of one batched fetch request (a larger segment goes alone); 0 means no bound"},
		conf.Key{Name: KeyDataCacheMB, Type: conf.Int, Default: strconv.Itoa(DefaultDataCacheBytes >> 20), Unit: "MB", Check: intRange(0, 1<<20),
			Description: "spill data files of at most 16 MiB the TaskTracker's shuffle server keeps mapped (mmap: the page cache, not its heap; at most 8,192 files; files over 128 KiB are mapped page by page as their segments are served), so that the many small segments (under 32 KiB) of a batched fetch cost no system call each (inotify sees a spill changed or deleted); 0 turns it off"},
		conf.Key{Name: KeyRangeFetch, Type: conf.Bool, Default: "true", Job: true,
			Description: "the remainder of a split reduce fetches only the records after the key it starts after (one segment per request; the map side scans the segment); false: it fetches whole segments and skips the key groups already reduced (docs/split.md)"},
	)
}

func intRange(lo, hi int) func(any) error {
	return func(v any) error {
		n, ok := v.(int)
		if !ok || n < lo || n > hi {
			return fmt.Errorf("want an integer from %d to %d", lo, hi)
		}
		return nil
	}
}

func int64AtLeast(lo int64) func(any) error {
	return func(v any) error {
		n, ok := v.(int64)
		if !ok || n < lo {
			return fmt.Errorf("want an integer >= %d", lo)
		}
		return nil
	}
}
