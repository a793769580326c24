//go:build !unix

package shuffle

import (
	"fmt"
	"io"
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

// readSegment reads length bytes at offset of the file at path into buf
// (grown as needed) and returns them. A missing file is an error wrapping
// fs.ErrNotExist; a file shorter than offset+length one wrapping
// io.ErrUnexpectedEOF.
func readSegment(path string, offset, length int64, buf []byte) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return buf, err
	}
	defer f.Close()
	if int64(cap(buf)) < length {
		buf = make([]byte, length)
	}
	buf = buf[:length]
	if n, err := f.ReadAt(buf, offset); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return buf[:0], fmt.Errorf("%s: %d of %d bytes at offset %d: %w", path, n, length, offset, err)
	}
	return buf, nil
}
