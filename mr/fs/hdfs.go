package fs

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/user"
	"path"
	"sort"
	"sync"
	"time"

	"github.com/colinmarc/hdfs/v2"
)

// HDFS is the filesystem of one HDFS cluster, reached through its namenode
// with github.com/colinmarc/hdfs/v2. It accepts hdfs://namenode:port/path
// URIs naming its own namenode, and plain absolute paths, which it takes as
// paths on that namenode; List and Stat return paths in the form given.
//
// The library does not expose block locations, so splits computed from
// HDFS files carry no Hosts and map tasks get no data locality.
type HDFS struct {
	addr   string
	client *hdfs.Client
}

// hdfsClients caches one client per namenode address and user, since a
// client holds a namenode connection and renews the leases of files it
// writes.
var hdfsClients = struct {
	sync.Mutex
	m map[string]*hdfs.Client
}{m: map[string]*hdfs.Client{}}

// hdfsUser is the user HDFS requests act as: HADOOP_USER_NAME, or else
// the OS user.
func hdfsUser() (string, error) {
	if u := os.Getenv("HADOOP_USER_NAME"); u != "" {
		return u, nil
	}
	u, err := user.Current()
	if err != nil {
		return "", fmt.Errorf("finding the HDFS user (HADOOP_USER_NAME is unset): %w", err)
	}
	return u.Username, nil
}

// hdfsFor returns the HDFS filesystem of the namenode at addr (host:port),
// connecting on first use.
func hdfsFor(addr string) (*HDFS, error) {
	u, err := hdfsUser()
	if err != nil {
		return nil, err
	}
	key := u + "@" + addr
	hdfsClients.Lock()
	defer hdfsClients.Unlock()
	if c, ok := hdfsClients.m[key]; ok {
		return &HDFS{addr: addr, client: c}, nil
	}
	c, err := hdfs.NewClient(hdfs.ClientOptions{Addresses: []string{addr}, User: u})
	if err != nil {
		return nil, fmt.Errorf("connecting to HDFS namenode %s as %s: %w", addr, u, err)
	}
	hdfsClients.m[key] = c
	return &HDFS{addr: addr, client: c}, nil
}

// Scheme returns "hdfs".
func (h *HDFS) Scheme() string { return "hdfs" }

// Addr returns the namenode address (host:port) this filesystem talks to.
func (h *HDFS) Addr() string { return h.addr }

// hpath returns the path on the namenode that p names.
func (h *HDFS) hpath(p string) (string, error) {
	loc := parse(p)
	switch loc.scheme {
	case "":
		if !path.IsAbs(p) {
			return "", fmt.Errorf("hdfs path %q is not absolute", p)
		}
		return path.Clean(p), nil
	case "hdfs":
		if !loc.slashes || loc.authority != h.addr {
			return "", fmt.Errorf("hdfs URI %q is not on namenode %s", p, h.addr)
		}
		return path.Clean(loc.path), nil
	default:
		return "", fmt.Errorf("path %q is not an hdfs path (scheme %q)", p, loc.scheme)
	}
}

// Open opens a file for reading.
func (h *HDFS) Open(p string) (File, error) {
	hp, err := h.hpath(p)
	if err != nil {
		return nil, err
	}
	f, err := h.client.Open(hp)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", p, err)
	}
	if f.Stat().IsDir() {
		f.Close()
		return nil, fmt.Errorf("open %s: is a directory", p)
	}
	return f, nil
}

// Create creates or truncates a file (an existing file is removed first),
// creating missing parent directories.
func (h *HDFS) Create(p string) (io.WriteCloser, error) {
	hp, err := h.hpath(p)
	if err != nil {
		return nil, err
	}
	if err := h.client.MkdirAll(path.Dir(hp), 0o755); err != nil {
		return nil, fmt.Errorf("create %s: making parent directory: %w", p, err)
	}
	if fi, err := h.client.Stat(hp); err == nil {
		if fi.IsDir() {
			return nil, fmt.Errorf("create %s: is a directory", p)
		}
		if err := h.client.Remove(hp); err != nil {
			return nil, fmt.Errorf("create %s: removing the existing file: %w", p, err)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("create %s: %w", p, err)
	}
	w, err := h.client.Create(hp)
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", p, err)
	}
	return &hdfsWriter{w: w, path: p}, nil
}

// hdfsWriter retries Close while the namenode reports the last block as
// still replicating, as the Java client does.
type hdfsWriter struct {
	w    *hdfs.FileWriter
	path string
}

func (w *hdfsWriter) Write(b []byte) (int, error) {
	n, err := w.w.Write(b)
	if err != nil {
		return n, fmt.Errorf("write %s: %w", w.path, err)
	}
	return n, nil
}

func (w *hdfsWriter) Close() error {
	delay := 50 * time.Millisecond
	for attempt := 0; ; attempt++ {
		err := w.w.Close()
		if err == nil {
			return nil
		}
		if !hdfs.IsErrReplicating(err) || attempt == 8 {
			return fmt.Errorf("close %s: %w", w.path, err)
		}
		time.Sleep(delay)
		delay *= 2
	}
}

// Stat describes a file or directory; Path is p as given.
func (h *HDFS) Stat(p string) (FileInfo, error) {
	hp, err := h.hpath(p)
	if err != nil {
		return FileInfo{}, err
	}
	fi, err := h.client.Stat(hp)
	if err != nil {
		return FileInfo{}, fmt.Errorf("stat %s: %w", p, err)
	}
	return hdfsInfo(p, fi), nil
}

// hdfsInfo describes an HDFS file status. HDFS has files, directories and
// symbolic links; the library's Mode shows directories only, so a link is
// told by the target its status carries, and gets os.ModeSymlink. The
// library does not follow links (the namenode leaves that to the client),
// so neither does this filesystem: a listed link stays a link.
func hdfsInfo(p string, fi os.FileInfo) FileInfo {
	mode := fi.Mode()
	if s, ok := fi.Sys().(interface{ GetSymlink() []byte }); ok && len(s.GetSymlink()) > 0 {
		mode |= os.ModeSymlink
	}
	return FileInfo{Path: p, Size: fi.Size(), IsDir: fi.IsDir(), ModTime: fi.ModTime(), Mode: mode}
}

// List returns the entries of a directory sorted by name, their paths
// joined to p; on a file it returns that file alone.
func (h *HDFS) List(p string) ([]FileInfo, error) {
	hp, err := h.hpath(p)
	if err != nil {
		return nil, err
	}
	fi, err := h.client.Stat(hp)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", p, err)
	}
	if !fi.IsDir() {
		return []FileInfo{hdfsInfo(p, fi)}, nil
	}
	entries, err := h.client.ReadDir(hp)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", p, err)
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name() < entries[j].Name() })
	out := make([]FileInfo, 0, len(entries))
	for _, e := range entries {
		out = append(out, hdfsInfo(Join(p, e.Name()), e))
	}
	return out, nil
}

// Rename moves a file or directory. It fails, wrapping ErrExist, if the
// destination exists (the library itself would overwrite it).
func (h *HDFS) Rename(oldPath, newPath string) error {
	ho, err := h.hpath(oldPath)
	if err != nil {
		return err
	}
	hn, err := h.hpath(newPath)
	if err != nil {
		return err
	}
	if _, err := h.client.Stat(hn); err == nil {
		return fmt.Errorf("rename %s to %s: destination exists: %w", oldPath, newPath, ErrExist)
	} else if !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("rename %s to %s: checking destination: %w", oldPath, newPath, err)
	}
	if err := h.client.Rename(ho, hn); err != nil {
		return fmt.Errorf("rename %s to %s: %w", oldPath, newPath, err)
	}
	return nil
}

// MkdirAll creates a directory and its missing parents.
func (h *HDFS) MkdirAll(p string) error {
	hp, err := h.hpath(p)
	if err != nil {
		return err
	}
	if err := h.client.MkdirAll(hp, 0o755); err != nil {
		return fmt.Errorf("mkdir %s: %w", p, err)
	}
	return nil
}

// RemoveAll removes a file or a directory tree; a missing path is not an
// error.
func (h *HDFS) RemoveAll(p string) error {
	hp, err := h.hpath(p)
	if err != nil {
		return err
	}
	if err := h.client.RemoveAll(hp); err != nil {
		return fmt.Errorf("remove %s: %w", p, err)
	}
	return nil
}
