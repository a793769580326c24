//go:build !unix

package shuffle

import (
	"os"
)

// dataFile is an open spill data file.
type dataFile struct {
	*os.File
}

// openDataFile opens the data file at path and returns it with its size.
// A missing file is an error wrapping fs.ErrNotExist.
func openDataFile(path string) (*dataFile, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	return &dataFile{f}, st.Size(), nil
}

// osFile returns the file as an os.File.
func (d *dataFile) osFile() *os.File { return d.File }
