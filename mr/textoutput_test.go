package mr

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gomr/mr/fs"
)

// writeRecords writes recs with format of into a new file and returns its
// contents, checking BytesWritten against the file size.
func writeRecords(t *testing.T, of OutputFormat, recs [][2]string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "tmp", "part-r-00000")
	w, err := of.Create(fs.Local{}, p)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if err := w.Write([]byte(r[0]), []byte(r[1])); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if w.BytesWritten() != int64(len(data)) {
		t.Errorf("BytesWritten = %d, file has %d bytes", w.BytesWritten(), len(data))
	}
	if err := w.Write([]byte("k"), []byte("v")); err == nil {
		t.Error("Write after Close succeeded")
	}
	if err := w.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	return string(data)
}

func TestTextOutput(t *testing.T) {
	tests := []struct {
		name string
		recs [][2]string
		want string
	}{
		{"key and value", [][2]string{{"a", "1"}, {"bb", "22"}}, "a\t1\nbb\t22\n"},
		{"empty value writes the key alone", [][2]string{{"a", ""}, {"b", "x"}}, "a\nb\tx\n"},
		{"empty key", [][2]string{{"", "v"}}, "\tv\n"},
		{"both empty", [][2]string{{"", ""}}, "\n"},
		{"no records", nil, ""},
		{"tabs inside are kept", [][2]string{{"k\tk", "v\tv"}}, "k\tk\tv\tv\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := writeRecords(t, TextOutput{}, tt.recs); got != tt.want {
				t.Errorf("wrote %q, want %q", got, tt.want)
			}
		})
	}
}

func TestTextOutputLarge(t *testing.T) {
	// More than the buffer, so BytesWritten counts flushed bytes too.
	var recs [][2]string
	var want strings.Builder
	for i := range 50000 {
		k, v := strings.Repeat("k", i%17), strings.Repeat("v", i%13)
		recs = append(recs, [2]string{k, v})
		want.WriteString(k)
		if v != "" {
			want.WriteString("\t" + v)
		}
		want.WriteString("\n")
	}
	if got := writeRecords(t, TextOutput{}, recs); got != want.String() {
		t.Errorf("wrote %d bytes, want %d", len(got), want.Len())
	}
}

// failFS is a filesystem whose files fail every write, to check that
// writers report storage errors.
type failFS struct{ fs.Local }

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }
func (failWriter) Close() error              { return nil }

func (failFS) Create(string) (io.WriteCloser, error) { return failWriter{}, nil }

func TestOutputWriteErrors(t *testing.T) {
	for name, of := range map[string]OutputFormat{"text": TextOutput{}, "raw": RawOutput{}, "sequence": SequenceOutput{}} {
		w, err := of.Create(failFS{}, "out/part")
		if err != nil {
			t.Fatal(err)
		}
		big := make([]byte, writeBufferSize)
		err = w.Write(big, big)
		if err == nil || !strings.Contains(err.Error(), "disk full") || !strings.Contains(err.Error(), "out/part") {
			t.Errorf("%s: Write error = %v, want disk full naming the file", name, err)
		}
		if err := w.Close(); err == nil || !strings.Contains(err.Error(), "disk full") {
			t.Errorf("%s: Close error = %v, want disk full", name, err)
		}
	}
	if _, err := (TextOutput{}).Create(fs.Local{}, "file://otherhost/x"); err == nil {
		t.Error("Create on a remote file URI succeeded")
	}
}
