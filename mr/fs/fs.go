// Package fs is the small filesystem interface the runtime reads input from
// and writes output to, with a local implementation (plain paths and
// file:// URIs) and an HDFS implementation (hdfs://namenode:port/path).
package fs

import (
	"io"
	"time"
)

// FileInfo describes a file or directory.
type FileInfo struct {
	// Path is the full path or URI, in the same form as it was asked for.
	Path    string
	Size    int64
	IsDir   bool
	ModTime time.Time
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
	Open(path string) (File, error)
	// Create creates or truncates a file, creating missing parent directories.
	Create(path string) (io.WriteCloser, error)
	Stat(path string) (FileInfo, error)
	// List returns the entries of a directory, sorted by name; on a file it
	// returns that file alone.
	List(path string) ([]FileInfo, error)
	// Rename moves a file or directory; the destination must not exist.
	Rename(oldPath, newPath string) error
	MkdirAll(path string) error
	RemoveAll(path string) error
}
