package fs

import (
	"fmt"
	iofs "io/fs"
	"path"
	"path/filepath"
	"strings"
)

// ErrNotExist is the error a missing file or directory wraps, on every
// filesystem; test for it with errors.Is.
var ErrNotExist = iofs.ErrNotExist

// ErrExist is the error an existing destination wraps (Rename), on every
// filesystem; test for it with errors.Is.
var ErrExist = iofs.ErrExist

// location is a path or URI taken apart: scheme ("" for a plain path),
// authority (host:port, possibly empty) and the path within the filesystem.
type location struct {
	scheme    string
	authority string
	path      string
	// uri tells whether the original had the "scheme://authority" form
	// (true) or the "scheme:/path" form or none (false).
	slashes bool
}

// parse splits p into a location. A string counts as a URI when it starts
// with a scheme ("[A-Za-z][A-Za-z0-9+.-]*:") that is "file" or "hdfs", or
// when the scheme is followed by "//"; anything else (for example the
// relative path "a:b") is a plain local path.
func parse(p string) location {
	scheme, rest, ok := splitScheme(p)
	if !ok {
		return location{path: p}
	}
	lower := strings.ToLower(scheme)
	if lower != "file" && lower != "hdfs" && !strings.HasPrefix(rest, "//") {
		return location{path: p}
	}
	loc := location{scheme: lower}
	if strings.HasPrefix(rest, "//") {
		loc.slashes = true
		rest = rest[2:]
		if i := strings.IndexByte(rest, '/'); i >= 0 {
			loc.authority, loc.path = rest[:i], rest[i:]
		} else {
			loc.authority, loc.path = rest, "/"
		}
	} else {
		loc.path = rest
	}
	return loc
}

// splitScheme returns the scheme of p and what follows the colon, if p
// starts with a syntactically valid scheme.
func splitScheme(p string) (scheme, rest string, ok bool) {
	i := strings.IndexByte(p, ':')
	if i <= 0 {
		return "", "", false
	}
	for j := 0; j < i; j++ {
		c := p[j]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		case j > 0 && (c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.'):
		default:
			return "", "", false
		}
	}
	return p[:i], p[i+1:], true
}

// prefix returns the "scheme://authority" or "scheme:" part of a location.
func (l location) prefix() string {
	switch {
	case l.scheme == "":
		return ""
	case l.slashes:
		return l.scheme + "://" + l.authority
	default:
		return l.scheme + ":"
	}
}

// Resolve returns the filesystem that serves uri: plain paths and file://
// URIs (file:///abs/path, file://localhost/abs/path, file:/abs/path) are the
// local filesystem; hdfs://namenode:port/path is the HDFS cluster of that
// namenode, whose client is shared by every caller in the process. Any other
// scheme is an error that names it.
func Resolve(uri string) (FS, error) {
	loc := parse(uri)
	switch loc.scheme {
	case "":
		return Local{}, nil
	case "file":
		if _, err := localPath(uri); err != nil {
			return nil, err
		}
		return Local{}, nil
	case "hdfs":
		if !loc.slashes || loc.authority == "" {
			return nil, fmt.Errorf("hdfs URI %q names no namenode (want hdfs://host:port/path)", uri)
		}
		return hdfsFor(loc.authority)
	default:
		return nil, fmt.Errorf("unsupported filesystem scheme %q in %q (supported: file, hdfs)", loc.scheme, uri)
	}
}

// Join appends path elements to base, which may be a plain path or a URI;
// the result has the same form as base. Plain paths are joined with
// filepath.Join, URI paths with path.Join, and both are cleaned.
func Join(base string, elem ...string) string {
	loc := parse(base)
	if loc.scheme == "" {
		return filepath.Join(append([]string{base}, elem...)...)
	}
	p := path.Join(append([]string{loc.path}, elem...)...)
	if loc.slashes && !strings.HasPrefix(p, "/") {
		p = "/" + p
	}
	return loc.prefix() + p
}

// localPath turns a plain path or file URI into an OS path.
func localPath(p string) (string, error) {
	loc := parse(p)
	switch loc.scheme {
	case "":
		return p, nil
	case "file":
		if loc.authority != "" && loc.authority != "localhost" {
			return "", fmt.Errorf("file URI %q names host %q; only local files are supported", p, loc.authority)
		}
		if !strings.HasPrefix(loc.path, "/") {
			return "", fmt.Errorf("file URI %q must have an absolute path", p)
		}
		return filepath.FromSlash(loc.path), nil
	default:
		return "", fmt.Errorf("path %q is not a local path (scheme %q)", p, loc.scheme)
	}
}

// LocalPath turns a plain path or a file:// URI into an OS path; any
// other scheme is an error.
func LocalPath(p string) (string, error) { return localPath(p) }

// Absolute makes a plain relative path absolute against the current
// directory, as the client does with a job's input and output paths and
// an app with the paths it gives its tasks (tasks run in directories of
// their own). URIs and absolute paths are returned as they are.
func Absolute(p string) (string, error) {
	if p == "" || filepath.IsAbs(p) || strings.Contains(p, "://") || strings.HasPrefix(p, "file:") {
		return p, nil
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", fmt.Errorf("path %s: %w", p, err)
	}
	return abs, nil
}
