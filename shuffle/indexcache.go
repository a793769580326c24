package shuffle

import (
	"path/filepath"
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
	byKey map[spillKey]*indexEntry
	order []spillKey // insertion order, for eviction
	bytes int64
	limit int64
}

// spillKey names a spill: its directory (clean) and its index. The cache is
// keyed by it rather than by path, so that a hit builds no path.
type spillKey struct {
	dir   string
	spill int
}

// indexEntry is one cached spill index and its data file's path.
type indexEntry struct {
	segs     []spill.SegmentInfo
	dataPath string // the spill's data file
}

func newIndexCache(limit int64) *indexCache {
	return &indexCache{byKey: map[spillKey]*indexEntry{}, limit: limit}
}

// entryBytes is what an entry is counted as: its segments, its key and its
// data file's path.
func entryBytes(dir string, segs []spill.SegmentInfo) int64 {
	return 2*int64(len(dir)) + int64(len(segs))*40 + 96
}

// entry returns the cache entry of the index of spill k in dir (a clean
// path), read (and cached) if it is not cached.
func (c *indexCache) entry(dir string, k int) (*indexEntry, error) {
	key := spillKey{dir, k}
	c.mu.Lock()
	e, ok := c.byKey[key]
	c.mu.Unlock()
	if ok {
		return e, nil
	}
	// No filepath.Join: dir is clean already.
	segs, err := spill.ReadIndex(dir + string(filepath.Separator) + spill.IndexFileName(k))
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.byKey[key]; ok {
		return e, nil
	}
	e = &indexEntry{segs: segs}
	e.dataPath = dir + string(filepath.Separator) + spill.DataFileName(k)
	c.byKey[key] = e
	c.order = append(c.order, key)
	c.bytes += entryBytes(dir, segs)
	for c.bytes > c.limit && len(c.order) > 1 {
		old := c.order[0]
		c.order = c.order[1:]
		c.bytes -= entryBytes(old.dir, c.byKey[old].segs)
		delete(c.byKey, old)
	}
	return e, nil
}

// dirCacheEntries bounds the batched server's cache of attempts' spill
// directories; when it is full it starts again empty.
const dirCacheEntries = 1 << 14

// dirCache remembers the spill directory the Locator gave for an attempt,
// so that a batched request does not ask it (the TaskTracker's stats the
// directory) for every attempt it names. Only directories found are kept.
// A directory removed since (the attempt purged) is not a risk: its
// indexes and data files are opened, or checked by the data cache's
// inotify watch, before anything of them is served, and fail as missing.
type dirCache struct {
	mu   sync.Mutex
	dirs map[attemptKey]string
}

type attemptKey struct{ job, attempt string }

// spillDir returns attempt's spill directory, from the cache or from loc
// (and cached if found), cleaned.
func (c *dirCache) spillDir(loc Locator, job, attempt string) (string, error) {
	k := attemptKey{job, attempt}
	c.mu.Lock()
	dir, ok := c.dirs[k]
	c.mu.Unlock()
	if ok {
		return dir, nil
	}
	dir, err := loc.SpillDir(job, attempt)
	if err != nil {
		return "", err
	}
	dir = filepath.Clean(dir)
	c.mu.Lock()
	if c.dirs == nil || len(c.dirs) >= dirCacheEntries {
		c.dirs = map[attemptKey]string{}
	}
	c.dirs[k] = dir
	c.mu.Unlock()
	return dir, nil
}
