package spill

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestIndexRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		segs []SegmentInfo
	}{
		{"no partitions", []SegmentInfo{}},
		{"one empty", []SegmentInfo{{}}},
		{"several", []SegmentInfo{
			{Offset: 0, Length: 100, RawLength: 300, Records: 7, CRC: 0xdeadbeef},
			{Offset: 100, Length: 0},
			{Offset: 100, Length: 1 << 40, RawLength: 1 << 41, Records: 1 << 35, CRC: 1},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := EncodeIndex(tc.segs)
			if want := 12 + 36*len(tc.segs) + 4; len(b) != want {
				t.Fatalf("encoded %d bytes, want %d", len(b), want)
			}
			if string(b[:4]) != "GMSI" || binary.LittleEndian.Uint32(b[4:]) != 1 || binary.LittleEndian.Uint32(b[8:]) != uint32(len(tc.segs)) {
				t.Fatalf("bad header %x", b[:12])
			}
			got, err := DecodeIndex(b)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.segs) {
				t.Fatalf("decoded %d segments, want %d", len(got), len(tc.segs))
			}
			for i := range got {
				if got[i] != tc.segs[i] {
					t.Fatalf("segment %d = %+v, want %+v", i, got[i], tc.segs[i])
				}
			}
		})
	}
}

func TestDecodeIndexCorrupt(t *testing.T) {
	good := EncodeIndex([]SegmentInfo{{Offset: 0, Length: 10, RawLength: 20, Records: 2, CRC: 5}, {Offset: 10}})
	for i := range good {
		bad := bytes.Clone(good)
		bad[i] ^= 0x10
		if _, err := DecodeIndex(bad); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("flipped byte %d: error = %v, want ErrCorrupt", i, err)
		}
	}
	neg := EncodeIndex([]SegmentInfo{{Offset: -1}})
	tests := []struct {
		name string
		b    []byte
		want string
	}{
		{"empty", nil, "shorter than"},
		{"truncated", good[:len(good)-1], "should be 88 bytes, got 87"},
		{"extra byte", append(bytes.Clone(good), 0), "should be 88 bytes, got 89"},
		{"bad magic", append([]byte("XXXX"), good[4:]...), "magic"},
		{"negative offset", neg, "index entry 0 is invalid"},
		{"huge count", append(append([]byte("GMSI"), 1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff), 0, 0, 0, 0), "partitions should be"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeIndex(tc.b)
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want ErrCorrupt containing %q", err, tc.want)
			}
		})
	}
}

func TestWriteReadIndex(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, IndexFileName(3))
	segs := []SegmentInfo{{Offset: 0, Length: 4, RawLength: 9, Records: 1, CRC: 77}}
	if err := WriteIndex(path, segs); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != "spill00003.index" {
		t.Fatalf("directory holds %v, want only spill00003.index", entries)
	}
	got, err := ReadIndex(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0] != segs[0] {
		t.Fatalf("ReadIndex = %+v, want %+v", got, segs)
	}
	if _, err := ReadIndex(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing index: error = %v, want not-exist", err)
	}
	if err := os.WriteFile(path, []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadIndex(path); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), path) {
		t.Fatalf("garbage index: error = %v, want ErrCorrupt naming the file", err)
	}
}

func TestFileNames(t *testing.T) {
	if got := DataFileName(7); got != "spill00007.out" {
		t.Fatalf("DataFileName(7) = %q", got)
	}
	if got := IndexFileName(123456); got != "spill123456.index" {
		t.Fatalf("IndexFileName(123456) = %q", got)
	}
}
