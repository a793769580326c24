package fs

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
)

// Local is the local filesystem. It accepts plain paths and file:// URIs
// (file:///abs/path, file://localhost/abs/path, file:/abs/path); List and
// Stat return paths in the form they were given. Errors wrap the os errors,
// so errors.Is(err, ErrNotExist) works.
type Local struct{}

// Scheme returns "file".
func (Local) Scheme() string { return "file" }

// Open opens a file for reading.
func (Local) Open(p string) (File, error) {
	lp, err := localPath(p)
	if err != nil {
		return nil, err
	}
	// Opening a FIFO blocks until a writer comes, and a device never
	// ends: refuse them before opening. (Something swapped in between
	// the Stat and the Open is not caught; input listing has refused such
	// paths earlier anyway.)
	if st, err := os.Stat(lp); err == nil {
		if err := localInfo(p, st).CheckRegular(); err != nil {
			return nil, err
		}
	}
	f, err := os.Open(lp)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", p, err)
	}
	return f, nil
}

// Create creates or truncates a file, creating its missing parent
// directories. The file is opened for appending: writes go to its end, as
// they would anyway, and CRIU, which checks on restore that a file open
// for writing still has the size it had at the dump, exempts append-only
// files, so that a clone of a task can restore beside its original after
// both wrote on.
func (Local) Create(p string) (io.WriteCloser, error) {
	lp, err := localPath(p)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(lp), 0o755); err != nil {
		return nil, fmt.Errorf("create %s: making parent directory: %w", p, err)
	}
	f, err := os.OpenFile(lp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", p, err)
	}
	return f, nil
}

// Stat describes a file or directory; Path is p as given.
func (Local) Stat(p string) (FileInfo, error) {
	lp, err := localPath(p)
	if err != nil {
		return FileInfo{}, err
	}
	fi, err := os.Stat(lp)
	if err != nil {
		return FileInfo{}, fmt.Errorf("stat %s: %w", p, err)
	}
	return localInfo(p, fi), nil
}

// List returns the entries of a directory sorted by name, their paths
// joined to p; on a file it returns that file alone.
func (l Local) List(p string) ([]FileInfo, error) {
	lp, err := localPath(p)
	if err != nil {
		return nil, err
	}
	fi, err := os.Stat(lp)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", p, err)
	}
	if !fi.IsDir() {
		return []FileInfo{localInfo(p, fi)}, nil
	}
	entries, err := os.ReadDir(lp)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", p, err)
	}
	out := make([]FileInfo, 0, len(entries))
	for _, e := range entries {
		info, err := e.Info()
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue // removed since ReadDir
			}
			return nil, fmt.Errorf("list %s: entry %s: %w", p, e.Name(), err)
		}
		if info.Mode()&os.ModeSymlink != 0 {
			// Describe what the link points to, as Stat does.
			target, err := os.Stat(filepath.Join(lp, e.Name()))
			if err != nil {
				return nil, fmt.Errorf("list %s: entry %s: %w", p, e.Name(), err)
			}
			info = target
		}
		out = append(out, localInfo(Join(p, e.Name()), info))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

// Rename moves a file or directory. It fails, wrapping ErrExist, if the
// destination exists. (The check and the rename are two steps: a
// destination created in between is replaced if it is a file.)
func (Local) Rename(oldPath, newPath string) error {
	lo, err := localPath(oldPath)
	if err != nil {
		return err
	}
	ln, err := localPath(newPath)
	if err != nil {
		return err
	}
	if _, err := os.Lstat(ln); err == nil {
		return fmt.Errorf("rename %s to %s: destination exists: %w", oldPath, newPath, ErrExist)
	} else if !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("rename %s to %s: checking destination: %w", oldPath, newPath, err)
	}
	if err := os.Rename(lo, ln); err != nil {
		return fmt.Errorf("rename %s to %s: %w", oldPath, newPath, err)
	}
	return nil
}

// MkdirAll creates a directory and its missing parents.
func (Local) MkdirAll(p string) error {
	lp, err := localPath(p)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(lp, 0o755); err != nil {
		return fmt.Errorf("mkdir %s: %w", p, err)
	}
	return nil
}

// RemoveAll removes a file or a directory tree; a missing path is not an
// error.
func (Local) RemoveAll(p string) error {
	lp, err := localPath(p)
	if err != nil {
		return err
	}
	if err := os.RemoveAll(lp); err != nil {
		return fmt.Errorf("remove %s: %w", p, err)
	}
	return nil
}

func localInfo(p string, fi os.FileInfo) FileInfo {
	return FileInfo{Path: p, Size: fi.Size(), IsDir: fi.IsDir(), ModTime: fi.ModTime(), Mode: fi.Mode()}
}
