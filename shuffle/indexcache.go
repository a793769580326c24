package shuffle

import (
	"sync"

	"gomr/spill"
)

// indexCacheBytes bounds the batched server's cache of spill indexes, as
// Hadoop's TaskTracker bounds its IndexCache (mapreduce.tasktracker.
// indexcache.mb, 10 MB by default): an index of 50 partitions takes about
// 2 KB, so this holds some 5,000 spills.
const indexCacheBytes = 10 << 20

// indexCache keeps the decoded index files of spills by path, so that the
// reduces of a job, which each ask for their partition of every spill,
// read each index file once rather than once per reduce. Spill files are
// written once, under a temporary name then renamed, under a directory
// named after their attempt, so a path's index never changes while it
// exists; one that is deleted (the attempt purged) fails when its data
// file is opened. Entries are evicted oldest first.
type indexCache struct {
	mu    sync.Mutex
	byKey map[string][]spill.SegmentInfo
	order []string // insertion order, for eviction
	bytes int64
	limit int64
}

func newIndexCache(limit int64) *indexCache {
	return &indexCache{byKey: map[string][]spill.SegmentInfo{}, limit: limit}
}

// entryBytes is what an entry is counted as: its segments and its key.
func entryBytes(path string, segs []spill.SegmentInfo) int64 {
	return int64(len(path)) + int64(len(segs))*40 + 64
}

// read returns the index at path, from the cache or read (and cached).
func (c *indexCache) read(path string) ([]spill.SegmentInfo, error) {
	c.mu.Lock()
	segs, ok := c.byKey[path]
	c.mu.Unlock()
	if ok {
		return segs, nil
	}
	segs, err := spill.ReadIndex(path)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.byKey[path]; ok {
		return segs, nil
	}
	c.byKey[path] = segs
	c.order = append(c.order, path)
	c.bytes += entryBytes(path, segs)
	for c.bytes > c.limit && len(c.order) > 1 {
		old := c.order[0]
		c.order = c.order[1:]
		c.bytes -= entryBytes(old, c.byKey[old])
		delete(c.byKey, old)
	}
	return segs, nil
}
