package shuffle

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"gomr/spill"
)

// TestIndexCache: an index is read once and then served from memory (even
// after its file changes: spill files are written once), a missing index
// is an error and is not cached, and the oldest entries go when the
// bytes are over the limit.
func TestIndexCache(t *testing.T) {
	dir := t.TempDir()
	segs := []spill.SegmentInfo{{Offset: 0, Length: 10, RawLength: 12, Records: 1, CRC: 7}, {Offset: 10, Length: 5, RawLength: 6, Records: 1, CRC: 9}}
	paths := make([]string, 4)
	for i := range paths {
		paths[i] = filepath.Join(dir, spill.IndexFileName(i))
		if err := spill.WriteIndex(paths[i], segs); err != nil {
			t.Fatal(err)
		}
	}
	per := entryBytes(dir, segs)
	read := func(c *indexCache, p string) ([]spill.SegmentInfo, error) {
		k := slices.Index(paths, p)
		e, err := c.entry(dir, k)
		if err != nil {
			return nil, err
		}
		if want := filepath.Join(dir, spill.DataFileName(k)); e.dataPath != want {
			t.Errorf("data path %q, want %q", e.dataPath, want)
		}
		return e.segs, nil
	}
	c := newIndexCache(3 * per) // room for three entries
	for _, p := range paths[:3] {
		if got, err := read(c, p); err != nil || len(got) != 2 || got[1] != segs[1] {
			t.Fatalf("read %s: %v, %v", p, got, err)
		}
	}
	// Cached: the file's removal does not matter.
	if err := os.Remove(paths[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := read(c, paths[0]); err != nil {
		t.Errorf("cached index: %v", err)
	}
	// A fourth entry evicts the oldest, which is then read from disk
	// again: gone now.
	if _, err := read(c, paths[3]); err != nil {
		t.Fatal(err)
	}
	if len(c.byKey) != 3 || c.bytes != 3*per {
		t.Errorf("%d entries of %d bytes, want 3 of %d", len(c.byKey), c.bytes, 3*per)
	}
	if _, err := read(c, paths[0]); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("evicted, removed index: %v, want fs.ErrNotExist", err)
	}
	if _, ok := c.byKey[spillKey{dir, 0}]; ok {
		t.Error("a failed read was cached")
	}
	// An index larger than the limit is still served (and cached alone).
	small := newIndexCache(1)
	if got, err := read(small, paths[1]); err != nil || len(got) != 2 {
		t.Errorf("over-limit entry: %v, %v", got, err)
	}
}
