//go:build !linux

package shuffle

// dataCache is the Linux server's cache of small spill data files
// (datacache_linux.go); elsewhere nothing is cached.
type dataCache struct{}

func newDataCache(limit, maxFile int64) *dataCache { return nil }

func (c *dataCache) sync() {}

// segment never has the file: the caller reads it.
func (c *dataCache) segment(path string, offset, length int64, remaining int) ([]byte, bool, error) {
	return nil, false, nil
}
