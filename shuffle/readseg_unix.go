//go:build unix

package shuffle

import (
	"fmt"
	"io"
	"io/fs"
	"syscall"
)

// readSegment reads length bytes at offset of the file at path into buf
// (grown as needed) and returns them. It makes three system calls (open,
// pread, close): an os.File would add the poller's registration attempts,
// which cost as much as the read for the small segments a batch is made of.
// A missing file is an error wrapping fs.ErrNotExist; a file shorter than
// offset+length one wrapping io.ErrUnexpectedEOF.
func readSegment(path string, offset, length int64, buf []byte) ([]byte, error) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	for err == syscall.EINTR {
		fd, err = syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	}
	if err != nil {
		return buf, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	defer syscall.Close(fd)
	if int64(cap(buf)) < length {
		buf = make([]byte, length)
	}
	buf = buf[:length]
	for done := int64(0); done < length; {
		n, err := syscall.Pread(fd, buf[done:], offset+done)
		switch {
		case err == syscall.EINTR:
			continue
		case err != nil:
			return buf[:0], &fs.PathError{Op: "read", Path: path, Err: err}
		case n == 0:
			return buf[:0], fmt.Errorf("%s: %d of %d bytes at offset %d: %w", path, done, length, offset, io.ErrUnexpectedEOF)
		}
		done += int64(n)
	}
	return buf, nil
}
