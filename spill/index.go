package spill

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
	"os"
	"path/filepath"
)

// Index file layout, all integers little-endian:
//
//	magic "GMSI" | version uint32 | partitions uint32 |
//	per partition: offset int64, length int64, raw length int64, records int64, crc uint32 |
//	CRC32C (Castagnoli) uint32 of everything before it
const (
	indexMagic      = "GMSI"
	indexVersion    = 1
	indexHeaderLen  = 12
	indexEntryLen   = 36
	indexTrailerLen = 4
)

// EncodeIndex returns the index file bytes describing segs.
func EncodeIndex(segs []SegmentInfo) []byte {
	b := make([]byte, 0, indexHeaderLen+indexEntryLen*len(segs)+indexTrailerLen)
	b = append(b, indexMagic...)
	b = binary.LittleEndian.AppendUint32(b, indexVersion)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(segs)))
	for _, s := range segs {
		b = binary.LittleEndian.AppendUint64(b, uint64(s.Offset))
		b = binary.LittleEndian.AppendUint64(b, uint64(s.Length))
		b = binary.LittleEndian.AppendUint64(b, uint64(s.RawLength))
		b = binary.LittleEndian.AppendUint64(b, uint64(s.Records))
		b = binary.LittleEndian.AppendUint32(b, s.CRC)
	}
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// DecodeIndex parses index file bytes. It checks the magic, the version,
// the length implied by the partition count, the trailing checksum and that
// no field is negative or overflows; a failure is an error wrapping
// ErrCorrupt.
func DecodeIndex(b []byte) ([]SegmentInfo, error) {
	if len(b) < indexHeaderLen+indexTrailerLen {
		return nil, fmt.Errorf("%w: index of %d bytes is shorter than the minimum %d",
			ErrCorrupt, len(b), indexHeaderLen+indexTrailerLen)
	}
	if string(b[:4]) != indexMagic {
		return nil, fmt.Errorf("%w: index magic is %q, want %q", ErrCorrupt, b[:4], indexMagic)
	}
	if v := binary.LittleEndian.Uint32(b[4:]); v != indexVersion {
		return nil, fmt.Errorf("%w: index version is %d, want %d", ErrCorrupt, v, indexVersion)
	}
	n := uint64(binary.LittleEndian.Uint32(b[8:]))
	if want := indexHeaderLen + indexEntryLen*n + indexTrailerLen; uint64(len(b)) != want {
		return nil, fmt.Errorf("%w: index for %d partitions should be %d bytes, got %d",
			ErrCorrupt, n, want, len(b))
	}
	body := b[:len(b)-indexTrailerLen]
	if want, got := binary.LittleEndian.Uint32(b[len(body):]), crc32.Checksum(body, castagnoli); want != got {
		return nil, fmt.Errorf("%w: index CRC32C mismatch: expected %08x, got %08x", ErrCorrupt, want, got)
	}
	segs := make([]SegmentInfo, n)
	p := b[indexHeaderLen:]
	for i := range segs {
		s := SegmentInfo{
			Offset:    int64(binary.LittleEndian.Uint64(p)),
			Length:    int64(binary.LittleEndian.Uint64(p[8:])),
			RawLength: int64(binary.LittleEndian.Uint64(p[16:])),
			Records:   int64(binary.LittleEndian.Uint64(p[24:])),
			CRC:       binary.LittleEndian.Uint32(p[32:]),
		}
		p = p[indexEntryLen:]
		if s.Offset < 0 || s.Length < 0 || s.RawLength < 0 || s.Records < 0 || s.Offset > math.MaxInt64-s.Length {
			return nil, fmt.Errorf("%w: index entry %d is invalid: offset %d, length %d, raw length %d, records %d",
				ErrCorrupt, i, s.Offset, s.Length, s.RawLength, s.Records)
		}
		segs[i] = s
	}
	return segs, nil
}

// WriteIndex writes the index file for segs at path atomically: to a
// temporary file in the same directory, then renamed into place.
func WriteIndex(path string, segs []SegmentInfo) error {
	return writeFileAtomic(path, EncodeIndex(segs))
}

// ReadIndex reads and decodes the index file at path.
func ReadIndex(path string) ([]SegmentInfo, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("spill: read index: %w", err)
	}
	segs, err := DecodeIndex(b)
	if err != nil {
		return nil, fmt.Errorf("spill: index %s: %w", path, err)
	}
	return segs, nil
}

// writeFileAtomic writes data to a temporary file beside path and renames
// it to path. The temporary file is removed if anything fails.
func writeFileAtomic(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("spill: create temporary file for %s: %w", path, err)
	}
	tmp := f.Name()
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("spill: chmod %s: %w", tmp, err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("spill: write %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("spill: close %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("spill: rename %s to %s: %w", tmp, path, err)
	}
	return nil
}
