//go:build !linux

package shuffle

import "io"

// dataCache is the Linux server's cache of small spill data files
// (datacache_linux.go); elsewhere nothing is cached.
type dataCache struct{}

func newDataCache(limit, maxFile int64) *dataCache { return nil }

func (c *dataCache) sync() {}

// cachedFile is a pin of a cached file; there are none here.
type cachedFile struct{}

// segment never has the file: the caller reads it.
func (c *dataCache) segment(path []byte, offset, length int64) ([]byte, *cachedFile, bool, error) {
	return nil, nil, false, nil
}

// releaseAll has no pins to give back.
func (c *dataCache) releaseAll(pins []*cachedFile) {}

// copyMapped writes data to w (nothing is mapped here).
func copyMapped(w io.Writer, data []byte) (int, error) { return w.Write(data) }

// lookup finds nothing: segment answers every query (by reading the file).
func (c *dataCache) lookup(qs []cacheQuery) {}
