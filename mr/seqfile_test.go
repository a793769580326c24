package mr

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"gomr/mr/fs"
)

// nopWriteCloser makes a bytes.Buffer an io.WriteCloser.
type nopWriteCloser struct{ *bytes.Buffer }

func (nopWriteCloser) Close() error { return nil }

// seqBytes encodes records as SequenceOutput does, in memory.
func seqBytes(t testing.TB, recs []rec) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := startSeqWriter(wrapBufWriter(nopWriteCloser{&buf}, "mem"))
	for _, r := range recs {
		if err := w.Write([]byte(r.Key), []byte(r.Value)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if w.BytesWritten() != int64(buf.Len()) {
		t.Fatalf("BytesWritten = %d, file has %d bytes", w.BytesWritten(), buf.Len())
	}
	return buf.Bytes()
}

func readSeqMem(data []byte, bufSize int) ([]rec, *seqReader) {
	sr := newSeqReader(context.Background(), memFile{bytes.NewReader(data)}, "mem", int64(len(data)))
	if bufSize > 0 {
		sr.br = bufio.NewReaderSize(&sr.src, bufSize)
	}
	var out []rec
	for sr.Next() {
		out = append(out, rec{string(sr.Key()), string(sr.Value())})
	}
	return out, sr
}

func TestSequenceRoundTrip(t *testing.T) {
	big := strings.Repeat("v", readBufferSize+10) // larger than the read buffer
	recs := []rec{{"k1", "v1"}, {"", ""}, {"key only", ""}, {"", "value only"}, {"big", big}, {strings.Repeat("k", 300), "after big"}}
	dir := t.TempDir()
	p := filepath.Join(dir, "out", "part-r-00000")
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
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if w.BytesWritten() != st.Size() {
		t.Errorf("BytesWritten = %d, file size %d", w.BytesWritten(), st.Size())
	}
	if err := w.Write([]byte("late"), nil); err == nil {
		t.Error("Write after Close succeeded")
	}
	if err := w.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}

	// Empty files are skipped; a sequence file with no records is read.
	writeTemp(t, filepath.Join(dir, "out"), "part-r-00001", "")
	writeTemp(t, filepath.Join(dir, "out"), "part-r-00002", SequenceHeader)
	splits, err := SequenceInput{}.Splits(SplitContext{Inputs: []string{filepath.Join(dir, "out")}, MaxSplitSize: 10})
	if err != nil {
		t.Fatal(err)
	}
	wantSplits := []Split{{Path: p, Length: st.Size()}, {Path: filepath.Join(dir, "out", "part-r-00002"), Length: 8}}
	if !reflect.DeepEqual(splits, wantSplits) {
		t.Fatalf("splits %+v, want %+v", splits, wantSplits)
	}
	rr, err := SequenceInput{}.Open(context.Background(), splits[0], nil)
	if err != nil {
		t.Fatal(err)
	}
	got := readAll(t, rr)
	if !reflect.DeepEqual(got, recs) {
		t.Errorf("records differ: got %d, want %d", len(got), len(recs))
	}
	if rr.BytesRead() != st.Size() {
		t.Errorf("BytesRead = %d, want %d", rr.BytesRead(), st.Size())
	}
	rr, err = SequenceInput{}.Open(context.Background(), splits[1], nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, rr); got != nil {
		t.Errorf("header-only file gave %v", got)
	}

	if _, err := (SequenceInput{}).Open(context.Background(), Split{Path: p, Start: 5, Length: 5}, nil); err == nil || !strings.Contains(err.Error(), "not splittable") {
		t.Errorf("Open of a split past 0: %v", err)
	}
}

func TestSequenceCorrupt(t *testing.T) {
	valid := seqBytes(t, []rec{{"ab", "cd"}})
	uv := func(xs ...uint64) []byte {
		var b []byte
		for _, x := range xs {
			b = binary.AppendUvarint(b, x)
		}
		return b
	}
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	h := []byte(SequenceHeader)
	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "bad header at offset 0: file holds only 0 bytes"},
		{"short header", []byte("GOMR"), "bad header at offset 0: file holds only 4 bytes"},
		{"wrong header", []byte("GOMRSEQ2rest"), `bad header "GOMRSEQ2" at offset 0`},
		{"truncated key length", cat(h, []byte{0x80}), "key length at offset 8 cut off"},
		{"truncated value length", cat(h, uv(1), []byte{0xff}), "value length at offset 9 cut off"},
		{"overflowing length", cat(h, bytes.Repeat([]byte{0xff}, 10), []byte{1}), "key length at offset 8 overflows"},
		{"absurd length", cat(h, uv(1<<40, 1), []byte("xy")), "corrupt record at offset 8: key length 1099511627776 and value length 1 exceed the 2 bytes left"},
		{"huge value", cat(h, uv(1, 1<<63), []byte("xy")), "exceed the 2 bytes left"},
		{"truncated data", cat(h, uv(2, 2), []byte("abc")), "exceed the 3 bytes left"},
		{"second record bad", cat(valid, uv(5, 0), []byte("ab")), "corrupt record at offset 14"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := writeTemp(t, t.TempDir(), "seq", string(tt.data))
			rr, err := SequenceInput{}.Open(context.Background(), Split{Path: p, Length: int64(len(tt.data))}, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer rr.Close()
			for rr.Next() {
			}
			err = rr.Err()
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), p) {
				t.Errorf("error %v, want one containing %q and %s", err, tt.want, p)
			}
			if rr.Next() {
				t.Error("Next succeeded after an error")
			}
		})
	}
}

func TestSequenceFileShrank(t *testing.T) {
	data := seqBytes(t, []rec{{"a", "b"}})
	sr := newSeqReader(context.Background(), memFile{bytes.NewReader(data)}, "mem", int64(len(data))+5)
	for sr.Next() {
	}
	if err := sr.Err(); err == nil || !strings.Contains(err.Error(), "ends at offset 12 but its size was 17") {
		t.Errorf("error = %v", err)
	}
}

func TestSequenceRecordLimit(t *testing.T) {
	var buf bytes.Buffer
	w := startSeqWriter(wrapBufWriter(nopWriteCloser{&buf}, "mem"))
	w.limit = 10
	if err := w.Write([]byte("12345"), []byte("123456")); err == nil || !strings.Contains(err.Error(), "exceeds the sequence file limit of 10 bytes") {
		t.Errorf("Write of an oversized record: %v", err)
	}
	if err := w.Write([]byte("12345"), []byte("12345")); err != nil {
		t.Errorf("Write of a record at the limit: %v", err)
	}
	w.Close()

	data := seqBytes(t, []rec{{"12345", "12345"}, {"12345", "123456"}})
	sr := newSeqReader(context.Background(), memFile{bytes.NewReader(data)}, "mem", int64(len(data)))
	sr.limit = 10
	n := 0
	for sr.Next() {
		n++
	}
	if err := sr.Err(); n != 1 || err == nil || !strings.Contains(err.Error(), "corrupt record at offset 20: key length 5 plus value length 6 exceed the limit of 10 bytes") {
		t.Errorf("read %d records, error %v", n, err)
	}
}

// FuzzSequenceReader checks that arbitrary bytes never make the reader
// panic or loop, and that records written by SequenceOutput read back.
func FuzzSequenceReader(f *testing.F) {
	f.Add([]byte(nil))
	f.Add([]byte(SequenceHeader))
	f.Add([]byte(SequenceHeader + "\x02\x02abcd"))
	f.Add([]byte(SequenceHeader + "\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01"))
	f.Add([]byte(SequenceHeader + "\x05\x00ab"))
	f.Add([]byte("key\x00value\x00\x00\x00k2"))
	f.Fuzz(func(t *testing.T, data []byte) {
		// Arbitrary bytes, as a file.
		for _, bufSize := range []int{0, 16} {
			recs, sr := readSeqMem(data, bufSize)
			if sr.Err() == nil && !bytes.HasPrefix(data, []byte(SequenceHeader)) {
				t.Fatalf("no error on a file without the header (%d records)", len(recs))
			}
			if sr.BytesRead() > int64(len(data)) {
				t.Fatalf("BytesRead %d > file size %d", sr.BytesRead(), len(data))
			}
		}
		// The data cut at zero bytes into keys and values, round-tripped.
		parts := bytes.Split(data, []byte{0})
		var want []rec
		for i := 0; i+1 < len(parts); i += 2 {
			want = append(want, rec{string(parts[i]), string(parts[i+1])})
		}
		enc := seqBytes(t, want)
		for _, bufSize := range []int{0, 16} {
			got, sr := readSeqMem(enc, bufSize)
			if sr.Err() != nil {
				t.Fatalf("reading back: %v", sr.Err())
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("round trip: got %v, want %v", got, want)
			}
			if sr.BytesRead() != int64(len(enc)) {
				t.Fatalf("BytesRead = %d, want %d", sr.BytesRead(), len(enc))
			}
		}
	})
}
