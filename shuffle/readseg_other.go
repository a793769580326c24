//go:build !unix

package shuffle

import (
	"fmt"
	"io"
	"os"
)

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
