//go:build unix

package shuffle

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// dataFile is an open spill data file, opened with the system calls
// themselves (open, fstat; pread to read): an os.File would add the
// poller's registration attempt, which costs as much as the read for the
// small segments a batch is made of. osFile wraps it in an os.File for
// sendfile only when a segment is large enough to be worth it.
type dataFile struct {
	fd   int
	path string
	f    *os.File // set by osFile; it owns fd from then on
}

// openDataFile opens the data file at path and returns it with its size.
// A missing file is an error wrapping fs.ErrNotExist.
func openDataFile(path string) (*dataFile, int64, error) {
	fd, err := openRetry(path, syscall.O_RDONLY|syscall.O_CLOEXEC|openNoAtime)
	if err == syscall.EPERM && openNoAtime != 0 {
		// Not the file's owner: O_NOATIME is not allowed.
		fd, err = openRetry(path, syscall.O_RDONLY|syscall.O_CLOEXEC)
	}
	if err != nil {
		return nil, 0, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		syscall.Close(fd)
		return nil, 0, &fs.PathError{Op: "stat", Path: path, Err: err}
	}
	return &dataFile{fd: fd, path: path}, st.Size, nil
}

// openRetry is open(2), tried again when interrupted.
func openRetry(path string, flags int) (int, error) {
	for {
		fd, err := syscall.Open(path, flags, 0)
		if err != syscall.EINTR {
			return fd, err
		}
	}
}

// ReadAt reads len(p) bytes at off with pread; fewer bytes because the
// file ends is io.EOF (the io.ReaderAt contract).
func (d *dataFile) ReadAt(p []byte, off int64) (int, error) {
	done := 0
	for done < len(p) {
		n, err := syscall.Pread(d.fd, p[done:], off+int64(done))
		switch {
		case err == syscall.EINTR:
			continue
		case err != nil:
			return done, &fs.PathError{Op: "read", Path: d.path, Err: err}
		case n == 0:
			return done, io.EOF
		}
		done += n
	}
	return done, nil
}

// osFile returns the file as an os.File (for sendfile: net's ReadFrom
// sends an os.File's bytes from its offset without copying them through
// user space).
func (d *dataFile) osFile() *os.File {
	if d.f == nil {
		d.f = os.NewFile(uintptr(d.fd), d.path)
	}
	return d.f
}

// Close closes the file.
func (d *dataFile) Close() error {
	if d.f != nil {
		return d.f.Close()
	}
	if err := syscall.Close(d.fd); err != nil {
		return fmt.Errorf("close %s: %w", d.path, err)
	}
	return nil
}
