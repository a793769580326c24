package mr

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"gomr/mr/fs"
)

// memFile is an in-memory fs.File.
type memFile struct{ *bytes.Reader }

func (memFile) Close() error { return nil }

// rec is a record as the tests compare it; text keys are shown as offsets.
type rec struct {
	Key   string
	Value string
}

func (r rec) String() string { return fmt.Sprintf("%q=%q", r.Key, r.Value) }

// textRec builds the record a text reader returns for a line at off.
func textRec(off int64, line string) rec {
	var k [8]byte
	binary.BigEndian.PutUint64(k[:], uint64(off))
	return rec{string(k[:]), line}
}

// readAll reads every record of rr, checks Progress stays in [0,1] and
// ends at 1, and closes it.
func readAll(t testing.TB, rr RecordReader) []rec {
	t.Helper()
	var out []rec
	for rr.Next() {
		out = append(out, rec{string(rr.Key()), string(rr.Value())})
		if p := rr.Progress(); p < 0 || p > 1 {
			t.Fatalf("Progress = %v, outside [0,1]", p)
		}
	}
	if err := rr.Err(); err != nil {
		t.Fatalf("reader error: %v", err)
	}
	if p := rr.Progress(); p != 1 {
		t.Errorf("Progress at end = %v, want 1", p)
	}
	if err := rr.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	return out
}

func writeTemp(t testing.TB, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// wantLines splits content on '\n' as LineRecordReader does over a whole
// file: offsets, '\r' stripped, no record after a final '\n'.
func wantLines(content []byte) []rec {
	var out []rec
	off := 0
	for off < len(content) {
		i := bytes.IndexByte(content[off:], '\n')
		var line []byte
		next := len(content)
		if i >= 0 {
			line = content[off : off+i]
			next = off + i + 1
		} else {
			line = content[off:]
		}
		line = bytes.TrimSuffix(line, []byte("\r"))
		out = append(out, textRec(int64(off), string(line)))
		off = next
	}
	return out
}

func TestTextSplitsAndRecords(t *testing.T) {
	tests := []struct {
		name      string
		content   string
		splitSize int64
		want      [][]rec // records of each split
	}{
		{
			name: "line starts exactly at boundary", content: "ab\ncd\nef\n", splitSize: 3,
			want: [][]rec{{textRec(0, "ab"), textRec(3, "cd")}, {textRec(6, "ef")}, nil},
		},
		{
			name: "CRLF across boundary", content: "ab\r\ncd\r\n", splitSize: 3,
			want: [][]rec{{textRec(0, "ab")}, {textRec(4, "cd")}, nil},
		},
		{
			name: "empty lines", content: "\n\n\na\n", splitSize: 2,
			want: [][]rec{{textRec(0, ""), textRec(1, ""), textRec(2, "")}, {textRec(3, "a")}, nil},
		},
		{
			name: "no trailing newline", content: "ab\ncd", splitSize: 100,
			want: [][]rec{{textRec(0, "ab"), textRec(3, "cd")}},
		},
		{
			name: "no trailing newline split", content: "ab\ncd", splitSize: 2,
			want: [][]rec{{textRec(0, "ab")}, {textRec(3, "cd")}, nil},
		},
		{
			name: "split of one byte", content: "a\nb\n", splitSize: 1,
			want: [][]rec{{textRec(0, "a")}, {textRec(2, "b")}, nil, nil},
		},
		{
			name: "file smaller than split", content: "hello\n", splitSize: 1000,
			want: [][]rec{{textRec(0, "hello")}},
		},
		{
			name: "line straddling boundary", content: "abcdef\ngh\n", splitSize: 4,
			want: [][]rec{{textRec(0, "abcdef")}, {textRec(7, "gh")}, nil},
		},
		{
			name: "slop keeps 1.1 splits whole", content: "0123456789\n", splitSize: 10,
			want: [][]rec{{textRec(0, "0123456789")}},
		},
		{
			name: "beyond slop", content: "012345678\n\nx", splitSize: 10,
			want: [][]rec{{textRec(0, "012345678"), textRec(10, "")}, {textRec(11, "x")}},
		},
		{
			name: "lone CR is kept inside a line", content: "a\rb\n\r\n", splitSize: 100,
			want: [][]rec{{textRec(0, "a\rb"), textRec(4, "")}},
		},
		{
			name: "empty file", content: "", splitSize: 10,
			want: nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := writeTemp(t, t.TempDir(), "in.txt", tt.content)
			splits, err := TextInput{}.Splits(SplitContext{Inputs: []string{p}, MaxSplitSize: tt.splitSize})
			if err != nil {
				t.Fatal(err)
			}
			if len(splits) != len(tt.want) {
				t.Fatalf("got %d splits %+v, want %d", len(splits), splits, len(tt.want))
			}
			var all []rec
			for i, s := range splits {
				rr, err := TextInput{}.Open(context.Background(), s, nil)
				if err != nil {
					t.Fatal(err)
				}
				got := readAll(t, rr)
				if !reflect.DeepEqual(got, tt.want[i]) {
					t.Errorf("split %d %+v: records %v, want %v", i, s, got, tt.want[i])
				}
				if want := int64(len(tt.content)) - s.Start; rr.BytesRead() != want {
					t.Errorf("split %d: BytesRead = %d, want %d", i, rr.BytesRead(), want)
				}
				all = append(all, got...)
			}
			if want := wantLines([]byte(tt.content)); !reflect.DeepEqual(all, want) {
				t.Errorf("all records %v, want %v", all, want)
			}
		})
	}
}

func TestSplitComputation(t *testing.T) {
	tests := []struct {
		name     string
		size     int64
		min, max int64
		want     [][2]int64
	}{
		{"unset max is one split", 1000, 0, 0, [][2]int64{{0, 1000}}},
		{"even", 30, 0, 10, [][2]int64{{0, 10}, {10, 10}, {20, 10}}},
		{"slop", 31, 0, 10, [][2]int64{{0, 10}, {10, 10}, {20, 11}}},
		{"past slop", 32, 0, 10, [][2]int64{{0, 10}, {10, 10}, {20, 10}, {30, 2}}},
		{"min wins", 30, 15, 10, [][2]int64{{0, 15}, {15, 15}}},
		{"empty", 0, 0, 10, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			size := splitSize(SplitContext{MinSplitSize: tt.min, MaxSplitSize: tt.max})
			var got [][2]int64
			for _, s := range fileSplits("f", tt.size, size) {
				if s.Path != "f" {
					t.Errorf("split path %q", s.Path)
				}
				got = append(got, [2]int64{s.Start, s.Length})
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("splits %v, want %v", got, tt.want)
			}
		})
	}
}

func TestInputListing(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in")
	writeTemp(t, in, "b", "b\n")
	writeTemp(t, in, "a", "a\n")
	writeTemp(t, in, "_SUCCESS", "")
	writeTemp(t, in, ".a.crc", "crc\n")
	writeTemp(t, in, "_logs/x", "log\n")
	writeTemp(t, in, "sub/c", "c\n")
	writeTemp(t, in, "empty", "")
	hidden := writeTemp(t, dir, "_explicit", "e\n")
	uriDir := "file://" + filepath.ToSlash(in)

	tests := []struct {
		name   string
		inputs []string
		want   []string
	}{
		{"directory", []string{in}, []string{filepath.Join(in, "a"), filepath.Join(in, "b")}},
		{"file URI directory", []string{uriDir}, []string{uriDir + "/a", uriDir + "/b"}},
		{"explicit hidden file is read", []string{hidden, filepath.Join(in, "b")}, []string{hidden, filepath.Join(in, "b")}},
		{"no inputs", nil, nil},
		{"only empty files", []string{filepath.Join(in, "empty"), filepath.Join(in, "_SUCCESS")}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			splits, err := TextInput{}.Splits(SplitContext{Inputs: tt.inputs, MaxSplitSize: 1 << 20})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, s := range splits {
				got = append(got, s.Path)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("split paths %q, want %q", got, tt.want)
			}
		})
	}
}

func TestMissingInputPath(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope")
	formats := map[string]InputFormat{
		"text":     TextInput{},
		"fixed":    FixedLengthInput{RecordLength: 10, KeyLength: 2},
		"sequence": SequenceInput{},
	}
	for name, f := range formats {
		_, err := f.Splits(SplitContext{Inputs: []string{missing}})
		if err == nil {
			t.Errorf("%s: no error for a missing path", name)
			continue
		}
		if want := "input path does not exist: " + missing; err.Error() != want {
			t.Errorf("%s: error %q, want %q", name, err, want)
		}
		if !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s: error does not wrap fs.ErrNotExist", name)
		}
	}
	if _, err := (TextInput{}).Splits(SplitContext{Inputs: []string{"s3://b/k"}}); err == nil || !strings.Contains(err.Error(), `"s3"`) {
		t.Errorf("unsupported scheme error = %v", err)
	}
}

func TestLineReaderLongLinesAndSmallBuffer(t *testing.T) {
	var content []byte
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		n := rng.IntN(300)
		for range n {
			content = append(content, 'a'+byte(rng.IntN(26)))
		}
		if rng.IntN(3) == 0 {
			content = append(content, '\r')
		}
		content = append(content, '\n')
	}
	content = append(content, strings.Repeat("z", 1000)...)
	want := wantLines(content)
	for _, bufSize := range []int{1, 2, 7, 64, 1 << 16} {
		for _, split := range []int64{1, 5, 100, 1000, int64(len(content))} {
			var got []rec
			for _, s := range fileSplits("mem", int64(len(content)), split) {
				f := memFile{bytes.NewReader(content)}
				f.Seek(s.Start, 0)
				got = append(got, readAll(t, newLineReader(context.Background(), f, "mem", s.Start, s.Start+s.Length, bufSize))...)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("buffer %d, split %d: got %d records, want %d", bufSize, split, len(got), len(want))
			}
		}
	}
}

func TestLineReaderProgressAndCancel(t *testing.T) {
	content := []byte("0123456789\n0123456789\n")
	lr := newLineReader(context.Background(), memFile{bytes.NewReader(content)}, "mem", 0, 22, 64)
	if p := lr.Progress(); p != 0 {
		t.Errorf("initial Progress = %v", p)
	}
	lr.Next()
	if p := lr.Progress(); p != 0.5 {
		t.Errorf("Progress after one of two lines = %v, want 0.5", p)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	lr = newLineReader(ctx, memFile{bytes.NewReader(content)}, "mem", 0, 22, 64)
	if lr.Next() {
		t.Error("Next succeeded on a cancelled context")
	}
	if !errors.Is(lr.Err(), context.Canceled) {
		t.Errorf("Err = %v, want context.Canceled", lr.Err())
	}
}

func TestLineReaderNoPerLineAllocation(t *testing.T) {
	content := bytes.Repeat([]byte("some words in a line\r\n"), 10000)
	lr := newLineReader(context.Background(), memFile{bytes.NewReader(content)}, "mem", 0, int64(len(content)), 1<<16)
	allocs := testing.AllocsPerRun(5000, func() {
		if !lr.Next() {
			t.Fatal("ran out of lines")
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per line, want 0", allocs)
	}
}

func TestTextOpenErrors(t *testing.T) {
	if _, err := (TextInput{}).Open(context.Background(), Split{Path: filepath.Join(t.TempDir(), "gone"), Length: 5}, nil); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Open of a missing file: %v, want ErrNotExist", err)
	}
	if _, err := (TextInput{}).Open(context.Background(), Split{Path: "x", Start: -1}, nil); err == nil {
		t.Error("Open accepted a negative start")
	}
}

// FuzzLineRecordReader checks that the splits of any content, for any
// split size, together yield every line exactly once, in order.
func FuzzLineRecordReader(f *testing.F) {
	f.Add([]byte("ab\ncd\nef\n"), uint16(3), uint8(4))
	f.Add([]byte("ab\r\ncd\r\n"), uint16(3), uint8(1))
	f.Add([]byte("\n\n\n"), uint16(1), uint8(2))
	f.Add([]byte("no newline at all"), uint16(2), uint8(3))
	f.Add([]byte("x\n\r\n\rlong line here\nend"), uint16(5), uint8(16))
	f.Add([]byte(""), uint16(1), uint8(1))
	f.Fuzz(func(t *testing.T, content []byte, split uint16, buf uint8) {
		// A split scans to the first newline past its start, so tiny splits
		// of long lines cost quadratic time; bound the content and the
		// number of splits to keep each run fast.
		if len(content) > 4096 {
			content = content[:4096]
		}
		splitSize := max(int64(split)%64+1, int64(len(content))/64)
		bufSize := int(buf)%32 + 1
		var got []rec
		for _, s := range fileSplits("mem", int64(len(content)), splitSize) {
			f := memFile{bytes.NewReader(content)}
			if _, err := f.Seek(s.Start, 0); err != nil {
				t.Fatal(err)
			}
			lr := newLineReader(context.Background(), f, "mem", s.Start, s.Start+s.Length, bufSize)
			got = append(got, readAll(t, lr)...)
		}
		if want := wantLines(content); !reflect.DeepEqual(got, want) {
			t.Fatalf("split size %d: records %v, want %v", splitSize, got, want)
		}
	})
}

// BenchmarkLineRecordReader reads ~64 MB of text in one split.
func BenchmarkLineRecordReader(b *testing.B) {
	var sb strings.Builder
	rng := rand.New(rand.NewPCG(3, 4))
	line := make([]byte, 0, 200)
	for sb.Len() < 64<<20 {
		line = line[:0]
		for range 40 + rng.IntN(120) {
			line = append(line, 'a'+byte(rng.IntN(26)))
		}
		line = append(line, '\n')
		sb.Write(line)
	}
	p := writeTemp(b, b.TempDir(), "bench.txt", sb.String())
	size := int64(sb.Len())
	b.SetBytes(size)
	b.ResetTimer()
	for b.Loop() {
		rr, err := TextInput{}.Open(context.Background(), Split{Path: p, Length: size}, nil)
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for rr.Next() {
			n += len(rr.Value())
		}
		if rr.Err() != nil {
			b.Fatal(rr.Err())
		}
		if rr.BytesRead() != size {
			b.Fatalf("BytesRead = %d, want %d", rr.BytesRead(), size)
		}
		rr.Close()
	}
}
