package mr

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"gomr/mr/fs"
)

// resumeLines reads split s of content in pieces: after every cut-th
// record it takes the reader's NextOffset and, if records may be left
// (the offset is not past the split's end), opens the rest with
// Split.From as a split map's remainder does.
func resumeLines(t *testing.T, content []byte, s Split, cut, bufSize int) []rec {
	t.Helper()
	var out []rec
	for {
		f := memFile{bytes.NewReader(content)}
		if _, err := f.Seek(s.Start, 0); err != nil {
			t.Fatal(err)
		}
		lr := newLineReader(context.Background(), f, "mem", s.Start, s.Start+s.Length, bufSize)
		lr.exact = s.ExactStart
		n := 0
		for lr.Next() {
			out = append(out, rec{string(lr.Key()), string(lr.Value())})
			if n++; n == cut {
				break
			}
		}
		if err := lr.Err(); err != nil {
			t.Fatal(err)
		}
		if n < cut {
			return out // the split's end
		}
		off := lr.NextOffset()
		if off > s.Start+s.Length {
			// Nothing left: the reader must agree.
			if lr.Next() {
				t.Fatalf("split %+v: a record at %d after the resume offset %d passed the end", s, lr.pos, off)
			}
			return out
		}
		next, err := s.From(off)
		if err != nil {
			t.Fatal(err)
		}
		s = next
	}
}

func TestLineReaderResume(t *testing.T) {
	tests := []struct {
		name      string
		content   string
		splitSize int64
		cut       int
	}{
		// The resume offset falls exactly on the start of the next split:
		// the line there belongs to this split, and is read by the
		// remainder (ExactStart), not skipped.
		{"offset at the split end", "aaa\nbbb\nccc\nddd\n", 4, 1},
		{"cut after every line", "a\nbb\nccc\ndddd\neeeee\n", 5, 1},
		{"straddling line", "0123456789\nab\ncdefghijklmnop\nq\n", 7, 1},
		{"cut every two", "a\nb\nc\nd\ne\nf\ng\n", 5, 2},
		{"crlf", "ab\r\ncd\r\nef\r\n", 3, 1},
		{"no final newline", "ab\ncd\nef", 4, 1},
		{"empty lines", "\n\n\n\n", 1, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			content := []byte(tc.content)
			var got []rec
			for _, s := range fileSplits("mem", int64(len(content)), tc.splitSize) {
				got = append(got, resumeLines(t, content, s, tc.cut, 3)...)
			}
			if want := wantLines(content); !reflect.DeepEqual(got, want) {
				t.Fatalf("records %v, want %v", got, want)
			}
		})
	}
}

func FuzzLineReaderResume(f *testing.F) {
	f.Add([]byte("ab\ncd\nef\n"), uint16(3), uint8(4), uint8(1))
	f.Add([]byte("aaa\nbbb\nccc\n"), uint16(4), uint8(2), uint8(1))
	f.Add([]byte("x\n\r\n\rlong line here\nend"), uint16(5), uint8(16), uint8(2))
	f.Add([]byte("\n\n\n"), uint16(1), uint8(2), uint8(1))
	f.Fuzz(func(t *testing.T, content []byte, split uint16, buf, cut uint8) {
		if len(content) > 4096 {
			content = content[:4096]
		}
		splitSize := max(int64(split)%64+1, int64(len(content))/64)
		var got []rec
		for _, s := range fileSplits("mem", int64(len(content)), splitSize) {
			got = append(got, resumeLines(t, content, s, int(cut)%5+1, int(buf)%32+1)...)
		}
		if want := wantLines(content); !reflect.DeepEqual(got, want) {
			t.Fatalf("split size %d, cut every %d: records %v, want %v", splitSize, int(cut)%5+1, got, want)
		}
	})
}

func TestFixedLengthResume(t *testing.T) {
	dir := t.TempDir()
	var content []byte
	for i := range 50 {
		content = append(content, byte('a'+i%26), byte(i), byte(i>>8), 'x', 'y')
	}
	path := writeTemp(t, dir, "f", string(content))
	in := FixedLengthInput{RecordLength: 5, KeyLength: 1}
	whole, err := in.Open(context.Background(), Split{Path: path, Length: int64(len(content))}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := readAll(t, whole)
	for _, splitSize := range []int64{5, 35, 100, 250} {
		for _, cut := range []int{1, 3, 7} {
			var got []rec
			for _, s := range fileSplits(path, int64(len(content)), splitSize) {
				for {
					rr, err := in.Open(context.Background(), s, nil)
					if err != nil {
						t.Fatal(err)
					}
					n := 0
					for n < cut && rr.Next() {
						got = append(got, rec{string(rr.Key()), string(rr.Value())})
						n++
					}
					off := rr.(PositionReader).NextOffset()
					rr.Close()
					if n < cut || off >= s.Start+s.Length {
						break
					}
					if s, err = s.From(off); err != nil {
						t.Fatal(err)
					}
				}
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("split size %d, cut every %d: %d records, want %d", splitSize, cut, len(got), len(want))
			}
		}
	}
}

func TestSplitFrom(t *testing.T) {
	s := Split{Path: "p", Start: 100, Length: 50, Hosts: []string{"h"}}
	tests := []struct {
		off     int64
		want    Split
		wantErr bool
	}{
		{100, Split{Path: "p", Start: 100, Length: 50, Hosts: []string{"h"}, ExactStart: true}, false},
		{120, Split{Path: "p", Start: 120, Length: 30, Hosts: []string{"h"}, ExactStart: true}, false},
		{150, Split{Path: "p", Start: 150, Length: 0, Hosts: []string{"h"}, ExactStart: true}, false},
		{99, Split{}, true},
		{151, Split{}, true},
	}
	for _, tc := range tests {
		got, err := s.From(tc.off)
		if (err != nil) != tc.wantErr || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("From(%d) = %+v, %v; want %+v, error %v", tc.off, got, err, tc.want, tc.wantErr)
		}
	}
}

func TestSequenceResume(t *testing.T) {
	big := strings.Repeat("v", readBufferSize+10) // read around the buffer
	recs := []rec{{"k1", "v1"}, {"", ""}, {"big", big}, {"k3", "after big"}, {"k4", "v4"}, {"", "last"}}
	p := filepath.Join(t.TempDir(), "seq")
	w, err := SequenceOutput{}.Create(fs.Local{}, p)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if err := w.Write([]byte(r.Key), []byte(r.Value)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(p)
	in := SequenceInput{}
	whole := Split{Path: p, Length: st.Size()}
	if !in.Resumable(whole) {
		t.Fatal("sequence splits are not resumable")
	}
	for _, cut := range []int{1, 2, 4} {
		var got []rec
		s := whole
		for {
			rr, err := in.Open(context.Background(), s, nil)
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for n < cut && rr.Next() {
				got = append(got, rec{string(rr.Key()), string(rr.Value())})
				n++
			}
			if err := rr.Err(); err != nil {
				t.Fatal(err)
			}
			off := rr.(PositionReader).NextOffset()
			rr.Close()
			if n < cut || off >= st.Size() {
				break
			}
			if s, err = whole.From(off); err != nil {
				t.Fatal(err)
			}
		}
		if !reflect.DeepEqual(got, recs) {
			t.Fatalf("cut every %d: records %v, want %v", cut, got, recs)
		}
	}
	if _, err := in.Open(context.Background(), Split{Path: p, Start: 5, Length: st.Size() - 5}, nil); err == nil {
		t.Fatal("a sequence split starting past 0 without ExactStart was opened")
	}
}
