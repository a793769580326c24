// Package fs is the small filesystem interface the runtime reads input from
// and writes output to, with a local implementation (plain paths and
// file:// URIs) and an HDFS implementation (hdfs://namenode:port/path).
package fs

import (
	"io"
	iofs "io/fs"
	"time"
)

// FileInfo describes a file or directory.
type FileInfo struct {
	// Path is the full path or URI, in the same form as it was asked for.
	Path    string
	Size    int64
	IsDir   bool
	ModTime time.Time
	// Mode holds the type bits (and permissions) as io/fs has them. The
	// local filesystem follows symbolic links (Mode is the target's);
	// HDFS does not (a link has os.ModeSymlink). Its zero value is a
	// regular file's.
	Mode iofs.FileMode
}

// CheckRegular returns nil if fi is a regular file or a directory, and
// otherwise a *NotRegularError saying what it is.
func (fi FileInfo) CheckRegular() error {
	if fi.IsDir || fi.Mode.IsRegular() || fi.Mode.IsDir() {
		return nil
	}
	return &NotRegularError{Path: fi.Path, Mode: fi.Mode}
}

// NotRegularError reports a path that is neither a regular file nor a
// directory: a named pipe, a device, a socket. Reading one as job input
// would block (a FIFO without a writer), never end (a device) or fail, and
// its size, zero, would make it look empty. The message is
// "<path> is a named pipe (FIFO), not a regular file or directory".
type NotRegularError struct {
	Path string
	Mode iofs.FileMode
}

func (e *NotRegularError) Error() string {
	return e.Path + " is " + describeType(e.Mode) + ", not a regular file or directory"
}

// describeType names the file type of m, with an article.
func describeType(m iofs.FileMode) string {
	switch {
	case m&iofs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&iofs.ModeSocket != 0:
		return "a socket"
	case m&iofs.ModeDevice != 0 && m&iofs.ModeCharDevice != 0:
		return "a character device"
	case m&iofs.ModeDevice != 0:
		return "a block device"
	case m&iofs.ModeCharDevice != 0:
		return "a character device"
	case m&iofs.ModeSymlink != 0:
		return "a symbolic link"
	case m&iofs.ModeIrregular != 0:
		return "a file of unknown type"
	}
	return "a special file (mode " + m.String() + ")"
}

// File is an open file for reading.
type File interface {
	io.Reader
	io.ReaderAt
	io.Seeker
	io.Closer
}

// FS is a filesystem. Paths are full paths or URIs as accepted by Resolve.
type FS interface {
	// Scheme is "file" or "hdfs"; it names the filesystem counters.
	Scheme() string
	// Open opens a file for reading. It refuses, with a
	// *NotRegularError, what is neither a regular file nor a directory,
	// rather than block on a FIFO or read a device.
	Open(path string) (File, error)
	// Create creates or truncates a file, creating missing parent directories.
	Create(path string) (io.WriteCloser, error)
	Stat(path string) (FileInfo, error)
	// List returns the entries of a directory, sorted by name; on a file it
	// returns that file alone. Entries of any type are listed: callers
	// that read them check FileInfo.CheckRegular.
	List(path string) ([]FileInfo, error)
	// Rename moves a file or directory; the destination must not exist.
	Rename(oldPath, newPath string) error
	MkdirAll(path string) error
	RemoveAll(path string) error
}
