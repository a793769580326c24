package fs

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestJoin(t *testing.T) {
	tests := []struct {
		base string
		elem []string
		want string
	}{
		{"/a/b", []string{"c"}, "/a/b/c"},
		{"/a/b/", []string{"c", "d"}, "/a/b/c/d"},
		{"a", []string{"b"}, "a/b"},
		{"", []string{"b"}, "b"},
		{"/a", nil, "/a"},
		{"a:b", []string{"c"}, "a:b/c"},
		{"file:///tmp/x", []string{"part-00000"}, "file:///tmp/x/part-00000"},
		{"file:///tmp/x/", []string{"y", "z"}, "file:///tmp/x/y/z"},
		{"file:/tmp/x", []string{"y"}, "file:/tmp/x/y"},
		{"file://localhost/tmp", []string{"y"}, "file://localhost/tmp/y"},
		{"hdfs://nn:9000/user/me", []string{"out", "_SUCCESS"}, "hdfs://nn:9000/user/me/out/_SUCCESS"},
		{"hdfs://nn:9000", []string{"a"}, "hdfs://nn:9000/a"},
		{"hdfs://nn:9000/", []string{"a"}, "hdfs://nn:9000/a"},
		{"hdfs://nn:9000/a", []string{"../b"}, "hdfs://nn:9000/b"},
		{"s3://bucket/k", []string{"x"}, "s3://bucket/k/x"},
	}
	for _, tt := range tests {
		if got := Join(tt.base, tt.elem...); got != tt.want {
			t.Errorf("Join(%q, %q) = %q, want %q", tt.base, tt.elem, got, tt.want)
		}
	}
}

func TestResolve(t *testing.T) {
	tests := []struct {
		uri     string
		scheme  string
		wantErr string
	}{
		{uri: "/tmp/x", scheme: "file"},
		{uri: "rel/path", scheme: "file"},
		{uri: "a:b", scheme: "file"},
		{uri: "file:///tmp/x", scheme: "file"},
		{uri: "FILE:///tmp/x", scheme: "file"},
		{uri: "file://localhost/tmp/x", scheme: "file"},
		{uri: "file:/tmp/x", scheme: "file"},
		{uri: "file://otherhost/tmp/x", wantErr: `names host "otherhost"`},
		{uri: "file:rel", wantErr: "must have an absolute path"},
		{uri: "s3://bucket/key", wantErr: `unsupported filesystem scheme "s3"`},
		{uri: "hdfs:///user/x", wantErr: "names no namenode"},
		{uri: "hdfs:/user/x", wantErr: "names no namenode"},
	}
	for _, tt := range tests {
		fsys, err := Resolve(tt.uri)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Resolve(%q) error = %v, want one containing %q", tt.uri, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("Resolve(%q): %v", tt.uri, err)
			continue
		}
		if fsys.Scheme() != tt.scheme {
			t.Errorf("Resolve(%q).Scheme() = %q, want %q", tt.uri, fsys.Scheme(), tt.scheme)
		}
	}
}

// forms returns a directory in both plain and file:// form.
func forms(t *testing.T) map[string]string {
	t.Helper()
	d1, d2 := t.TempDir(), t.TempDir()
	return map[string]string{"plain": d1, "uri": "file://" + filepath.ToSlash(d2)}
}

func writeFile(t *testing.T, fsys FS, p, content string) {
	t.Helper()
	w, err := fsys.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(w, content); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// exerciseFS runs the same checks on any filesystem, rooted at dir (which
// must exist and be empty).
func exerciseFS(t *testing.T, fsys FS, dir string) {
	t.Helper()
	// Create makes missing parents.
	f1 := Join(dir, "sub", "deeper", "b.txt")
	writeFile(t, fsys, f1, "hello")
	writeFile(t, fsys, Join(dir, "sub", "a.txt"), "xy")
	// Create truncates.
	writeFile(t, fsys, Join(dir, "sub", "a.txt"), "z")

	st, err := fsys.Stat(f1)
	if err != nil {
		t.Fatal(err)
	}
	if st.Path != f1 || st.Size != 5 || st.IsDir {
		t.Errorf("Stat(%q) = %+v, want path %q size 5 file", f1, st, f1)
	}

	list, err := fsys.List(Join(dir, "sub"))
	if err != nil {
		t.Fatal(err)
	}
	want := []FileInfo{
		{Path: Join(dir, "sub", "a.txt"), Size: 1},
		{Path: Join(dir, "sub", "deeper"), IsDir: true},
	}
	if len(list) != len(want) {
		t.Fatalf("List = %+v, want %d entries", list, len(want))
	}
	for i := range want {
		if list[i].Path != want[i].Path || list[i].IsDir != want[i].IsDir || (!want[i].IsDir && list[i].Size != want[i].Size) {
			t.Errorf("List[%d] = %+v, want %+v", i, list[i], want[i])
		}
	}
	one, err := fsys.List(f1)
	if err != nil {
		t.Fatal(err)
	}
	if len(one) != 1 || one[0].Path != f1 || one[0].Size != 5 {
		t.Errorf("List(file) = %+v, want the file alone", one)
	}

	// Open, Read, ReadAt, Seek.
	f, err := fsys.Open(f1)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 3)
	if _, err := f.ReadAt(buf, 2); err != nil || string(buf) != "llo" {
		t.Errorf("ReadAt = %q, %v; want \"llo\"", buf, err)
	}
	if _, err := f.Seek(1, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	rest, err := io.ReadAll(f)
	if err != nil || string(rest) != "ello" {
		t.Errorf("read after Seek = %q, %v; want \"ello\"", rest, err)
	}
	f.Close()

	// Missing paths wrap ErrNotExist.
	missing := Join(dir, "nope")
	if _, err := fsys.Open(missing); !errors.Is(err, ErrNotExist) || !strings.Contains(err.Error(), missing) {
		t.Errorf("Open(missing) error = %v, want ErrNotExist naming the path", err)
	}
	if _, err := fsys.Stat(missing); !errors.Is(err, ErrNotExist) {
		t.Errorf("Stat(missing) error = %v, want ErrNotExist", err)
	}
	if _, err := fsys.List(missing); !errors.Is(err, ErrNotExist) {
		t.Errorf("List(missing) error = %v, want ErrNotExist", err)
	}

	// Rename refuses an existing destination and moves otherwise.
	a := Join(dir, "sub", "a.txt")
	if err := fsys.Rename(a, f1); !errors.Is(err, ErrExist) {
		t.Errorf("Rename onto existing file error = %v, want ErrExist", err)
	}
	moved := Join(dir, "moved", "a.txt")
	if err := fsys.MkdirAll(Join(dir, "moved")); err != nil {
		t.Fatal(err)
	}
	if err := fsys.MkdirAll(Join(dir, "moved")); err != nil {
		t.Errorf("MkdirAll on existing dir: %v", err)
	}
	if err := fsys.Rename(a, moved); err != nil {
		t.Fatal(err)
	}
	if _, err := fsys.Stat(a); !errors.Is(err, ErrNotExist) {
		t.Errorf("source still there after Rename: %v", err)
	}
	if st, err := fsys.Stat(moved); err != nil || st.Size != 1 {
		t.Errorf("Stat(renamed) = %+v, %v", st, err)
	}
	// Directory rename.
	if err := fsys.Rename(Join(dir, "sub"), Join(dir, "sub2")); err != nil {
		t.Fatal(err)
	}
	if st, err := fsys.Stat(Join(dir, "sub2", "deeper", "b.txt")); err != nil || st.Size != 5 {
		t.Errorf("Stat after dir rename = %+v, %v", st, err)
	}

	if err := fsys.RemoveAll(Join(dir, "sub2")); err != nil {
		t.Fatal(err)
	}
	if _, err := fsys.Stat(Join(dir, "sub2")); !errors.Is(err, ErrNotExist) {
		t.Errorf("RemoveAll left the directory: %v", err)
	}
	if err := fsys.RemoveAll(Join(dir, "never")); err != nil {
		t.Errorf("RemoveAll(missing) = %v, want nil", err)
	}
}

func TestLocal(t *testing.T) {
	for name, dir := range forms(t) {
		t.Run(name, func(t *testing.T) {
			fsys, err := Resolve(dir)
			if err != nil {
				t.Fatal(err)
			}
			exerciseFS(t, fsys, dir)
		})
	}
}

func TestLocalFileURIForms(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f"), []byte("abc"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{
		filepath.Join(dir, "f"),
		"file://" + dir + "/f",
		"file://localhost" + dir + "/f",
		"file:" + dir + "/f",
	} {
		st, err := Local{}.Stat(p)
		if err != nil {
			t.Errorf("Stat(%q): %v", p, err)
			continue
		}
		if st.Path != p || st.Size != 3 {
			t.Errorf("Stat(%q) = %+v", p, st)
		}
	}
}

func TestLocalRejectsOtherSchemes(t *testing.T) {
	if _, err := (Local{}).Open("hdfs://nn:9000/x"); err == nil || !strings.Contains(err.Error(), "not a local path") {
		t.Errorf("Local.Open(hdfs URI) error = %v, want not a local path", err)
	}
}

func TestHDFS(t *testing.T) {
	nn := os.Getenv("GOMR_TEST_HDFS_NAMENODE")
	if nn == "" {
		t.Skip("set GOMR_TEST_HDFS_NAMENODE=host:port to name an HDFS namenode to test against")
	}
	dir := "hdfs://" + nn + "/tmp/gomr-fs-test-" + strings.ReplaceAll(t.Name(), "/", "_") + "-" + filepath.Base(t.TempDir())
	fsys, err := Resolve(dir)
	if err != nil {
		t.Fatal(err)
	}
	if fsys.Scheme() != "hdfs" {
		t.Fatalf("Scheme = %q", fsys.Scheme())
	}
	if err := fsys.MkdirAll(dir); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fsys.RemoveAll(dir) })
	exerciseFS(t, fsys, dir)

	// The client is shared.
	again, err := Resolve(dir)
	if err != nil {
		t.Fatal(err)
	}
	if again.(*HDFS).client != fsys.(*HDFS).client {
		t.Error("Resolve made a second client for the same namenode")
	}
	if _, err := fsys.Open("hdfs://other:1/x"); err == nil {
		t.Error("Open on another namenode's URI succeeded")
	}
}

func TestHDFSUnreachable(t *testing.T) {
	t.Setenv("HADOOP_USER_NAME", "tester")
	_, err := Resolve("hdfs://127.0.0.1:1/x")
	if err == nil || !strings.Contains(err.Error(), "connecting to HDFS namenode 127.0.0.1:1 as tester") {
		t.Errorf("Resolve of an unreachable namenode: %v", err)
	}
	hdfsClients.Lock()
	_, cached := hdfsClients.m["tester@127.0.0.1:1"]
	hdfsClients.Unlock()
	if cached {
		t.Error("a failed connection was cached")
	}
}

func TestHDFSPaths(t *testing.T) {
	h := &HDFS{addr: "nn:9000"}
	tests := []struct {
		in, want, wantErr string
	}{
		{in: "hdfs://nn:9000/user/me/x", want: "/user/me/x"},
		{in: "hdfs://nn:9000", want: "/"},
		{in: "hdfs://nn:9000/a//b/../c/", want: "/a/c"},
		{in: "/plain/abs", want: "/plain/abs"},
		{in: "relative", wantErr: "not absolute"},
		{in: "hdfs://other:9000/x", wantErr: "not on namenode nn:9000"},
		{in: "file:///x", wantErr: "not an hdfs path"},
	}
	for _, tt := range tests {
		got, err := h.hpath(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("hpath(%q) error = %v, want %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("hpath(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}
