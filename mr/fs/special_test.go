package fs

import (
	"errors"
	iofs "io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestCheckRegular(t *testing.T) {
	tests := []struct {
		fi   FileInfo
		want string // "" for no error
	}{
		{FileInfo{Path: "/f"}, ""},
		{FileInfo{Path: "/f", Mode: 0o644}, ""},
		{FileInfo{Path: "/d", IsDir: true}, ""},
		{FileInfo{Path: "/d", Mode: iofs.ModeDir | 0o755}, ""},
		{FileInfo{Path: "/p", Mode: iofs.ModeNamedPipe | 0o644}, "/p is a named pipe (FIFO), not a regular file or directory"},
		{FileInfo{Path: "/s", Mode: iofs.ModeSocket}, "/s is a socket, not a regular file or directory"},
		{FileInfo{Path: "/c", Mode: iofs.ModeDevice | iofs.ModeCharDevice}, "/c is a character device, not a regular file or directory"},
		{FileInfo{Path: "/b", Mode: iofs.ModeDevice}, "/b is a block device, not a regular file or directory"},
		{FileInfo{Path: "hdfs://nn:1/l", Mode: iofs.ModeSymlink}, "hdfs://nn:1/l is a symbolic link, not a regular file or directory"},
		{FileInfo{Path: "/i", Mode: iofs.ModeIrregular}, "/i is a file of unknown type, not a regular file or directory"},
	}
	for _, tt := range tests {
		err := tt.fi.CheckRegular()
		if tt.want == "" {
			if err != nil {
				t.Errorf("CheckRegular(%+v) = %v, want nil", tt.fi, err)
			}
			continue
		}
		var nr *NotRegularError
		if err == nil || err.Error() != tt.want || !errors.As(err, &nr) || nr.Path != tt.fi.Path {
			t.Errorf("CheckRegular(%+v) = %v, want *NotRegularError %q", tt.fi, err, tt.want)
		}
	}
}

// TestLocalSpecialFiles: Stat and List report the type of FIFOs, sockets
// and devices (following symbolic links), and Open refuses them at once
// rather than block on a FIFO that has no writer.
func TestLocalSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	// Unix socket paths are short: make it under a short directory.
	sdir, err := os.MkdirTemp("", "gomr-sock-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(sdir)
	sock := filepath.Join(sdir, "s")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := os.Symlink(sock, filepath.Join(dir, "sock")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "regular"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "regular"), filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(fifo, filepath.Join(dir, "link-to-fifo")); err != nil {
		t.Fatal(err)
	}

	list, err := Local{}.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]string{}
	for _, fi := range list {
		kind := "ok"
		if err := fi.CheckRegular(); err != nil {
			kind = strings.TrimPrefix(err.Error(), fi.Path+" is ")
		}
		kinds[filepath.Base(fi.Path)] = kind
	}
	want := map[string]string{
		"fifo":         "a named pipe (FIFO), not a regular file or directory",
		"link-to-fifo": "a named pipe (FIFO), not a regular file or directory",
		"sock":         "a socket, not a regular file or directory",
		"regular":      "ok",
		"link":         "ok",
	}
	for name, w := range want {
		if kinds[name] != w {
			t.Errorf("List: %s is %q, want %q", name, kinds[name], w)
		}
	}

	for _, p := range []string{fifo, "file://" + filepath.ToSlash(fifo), filepath.Join(dir, "link-to-fifo"), "/dev/null"} {
		st, err := Local{}.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if st.CheckRegular() == nil {
			t.Errorf("Stat(%s).CheckRegular() = nil, want an error", p)
		}
		done := make(chan error, 1)
		go func() {
			f, err := Local{}.Open(p)
			if err == nil {
				f.Close()
			}
			done <- err
		}()
		select {
		case err := <-done:
			var nr *NotRegularError
			if !errors.As(err, &nr) || !strings.HasPrefix(err.Error(), p+" is a ") {
				t.Errorf("Open(%s) = %v, want a *NotRegularError naming it", p, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("Open(%s) blocked", p)
		}
	}
	// Regular files, also through a link, and empty, still open.
	for _, name := range []string{"regular", "link"} {
		f, err := Local{}.Open(filepath.Join(dir, name))
		if err != nil {
			t.Errorf("Open(%s): %v", name, err)
			continue
		}
		f.Close()
	}
}
