package mr

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"gomr/mr/fs"
)

// TestSpecialInputRefused: an input path, or a file in an input directory,
// that is a FIFO or a device is refused when splits are computed, with an
// error naming it and its type, in every file input format; it was taken
// for an empty file and the job succeeded without reading it. Symbolic
// links to regular files, empty files and hidden entries are still fine.
func TestSpecialInputRefused(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	withFIFO := filepath.Join(dir, "with-fifo")
	writeTemp(t, withFIFO, "a", "a\n")
	if err := syscall.Mkfifo(filepath.Join(withFIFO, "p"), 0o644); err != nil {
		t.Fatal(err)
	}
	withDev := filepath.Join(dir, "with-dev")
	writeTemp(t, withDev, "a", "a\n")
	if err := os.Symlink("/dev/null", filepath.Join(withDev, "null")); err != nil {
		t.Fatal(err)
	}
	fifoURI := "file://" + filepath.ToSlash(fifo)
	tests := []struct {
		name   string
		inputs []string
		want   string
	}{
		{"FIFO as input", []string{fifo}, "input " + fifo + " is a named pipe (FIFO), not a regular file or directory"},
		{"FIFO as file URI", []string{fifoURI}, "input " + fifoURI + " is a named pipe (FIFO), not a regular file or directory"},
		{"FIFO in an input directory", []string{withFIFO},
			"input " + filepath.Join(withFIFO, "p") + " is a named pipe (FIFO), not a regular file or directory (in input directory " + withFIFO + ")"},
		{"device as input", []string{"/dev/null"}, "input /dev/null is a character device, not a regular file or directory"},
		{"link to a device in an input directory", []string{withDev},
			"input " + filepath.Join(withDev, "null") + " is a character device, not a regular file or directory (in input directory " + withDev + ")"},
	}
	formats := map[string]InputFormat{
		"text":     TextInput{},
		"fixed":    FixedLengthInput{RecordLength: 10, KeyLength: 2},
		"sequence": SequenceInput{},
	}
	for _, tt := range tests {
		for fname, f := range formats {
			_, err := f.Splits(SplitContext{Inputs: tt.inputs, MaxSplitSize: 1 << 20})
			var nr *fs.NotRegularError
			if err == nil || err.Error() != tt.want || !errors.As(err, &nr) {
				t.Errorf("%s, %s: error %v, want %q", tt.name, fname, err, tt.want)
			}
		}
	}

	// Links to regular files are followed, empty files are fine (and
	// dropped), and hidden special entries are skipped like any hidden
	// entry.
	ok := filepath.Join(dir, "ok")
	a := writeTemp(t, ok, "a", "a\n")
	writeTemp(t, ok, "empty", "")
	if err := os.Symlink(a, filepath.Join(ok, "b")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(ok, ".p"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(ok, "_p"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(a, link); err != nil {
		t.Fatal(err)
	}
	splits, err := TextInput{}.Splits(SplitContext{Inputs: []string{ok, link}, MaxSplitSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range splits {
		got = append(got, s.Path)
	}
	if want := []string{a, filepath.Join(ok, "b"), link}; !reflect.DeepEqual(got, want) {
		t.Errorf("split paths %q, want %q", got, want)
	}

	// A task given a FIFO's split anyway fails at once instead of
	// waiting for a writer.
	done := make(chan error, 1)
	go func() {
		r, err := TextInput{}.Open(t.Context(), Split{Path: fifo, Length: 1}, nil)
		if err == nil {
			r.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), fifo+" is a named pipe (FIFO)") {
			t.Errorf("Open of a FIFO's split: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Open of a FIFO's split blocked")
	}
}
