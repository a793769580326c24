package mr

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// fixedContent returns n records of length rl: the key is the record's
// index in decimal, zero-padded to kl bytes, the value repeats a letter.
func fixedContent(n, rl, kl int) (string, []rec) {
	var sb strings.Builder
	var recs []rec
	for i := range n {
		k := fmt.Sprintf("%0*d", kl, i)
		v := strings.Repeat(string(rune('a'+i%26)), rl-kl)
		sb.WriteString(k + v)
		recs = append(recs, rec{k, v})
	}
	return sb.String(), recs
}

func TestFixedLengthSplits(t *testing.T) {
	tests := []struct {
		name         string
		records      int
		rl           int
		splitSize    int64
		unsplittable bool
		want         [][2]int64
	}{
		{"rounded down to records", 10, 100, 250, false, [][2]int64{{0, 200}, {200, 200}, {400, 200}, {600, 200}, {800, 200}}},
		{"at least one record", 3, 100, 50, false, [][2]int64{{0, 100}, {100, 100}, {200, 100}}},
		{"slop", 11, 100, 1000, false, [][2]int64{{0, 1100}}},
		{"past slop", 12, 100, 1000, false, [][2]int64{{0, 1000}, {1000, 200}}},
		{"unsplittable", 10, 100, 100, true, [][2]int64{{0, 1000}}},
		{"unlimited", 10, 100, 0, false, [][2]int64{{0, 1000}}},
		{"empty file", 0, 100, 100, false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			content, want := fixedContent(tt.records, tt.rl, 10)
			p := writeTemp(t, t.TempDir(), "part-00000", content)
			in := FixedLengthInput{RecordLength: tt.rl, KeyLength: 10, Unsplittable: tt.unsplittable}
			splits, err := in.Splits(SplitContext{Inputs: []string{filepath.Dir(p)}, MaxSplitSize: tt.splitSize})
			if err != nil {
				t.Fatal(err)
			}
			var got [][2]int64
			var all []rec
			for _, s := range splits {
				got = append(got, [2]int64{s.Start, s.Length})
				rr, err := in.Open(context.Background(), s, nil)
				if err != nil {
					t.Fatal(err)
				}
				recs := readAll(t, rr)
				if len(recs) != int(s.Length)/tt.rl {
					t.Errorf("split %+v: %d records, want %d", s, len(recs), s.Length/int64(tt.rl))
				}
				if want := int64(len(content)) - s.Start; rr.BytesRead() != want {
					t.Errorf("split %+v: BytesRead = %d, want %d", s, rr.BytesRead(), want)
				}
				all = append(all, recs...)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("splits %v, want %v", got, tt.want)
			}
			if !reflect.DeepEqual(all, want) {
				t.Errorf("records %v, want %v", all, want)
			}
		})
	}
}

func TestFixedLengthErrors(t *testing.T) {
	dir := t.TempDir()
	bad := writeTemp(t, dir, "bad", strings.Repeat("x", 150))
	if _, err := (FixedLengthInput{RecordLength: 100, KeyLength: 10}).Splits(SplitContext{Inputs: []string{bad}}); err == nil ||
		!strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), "size 150") || !strings.Contains(err.Error(), "record length 100") {
		t.Errorf("size error = %v, want one naming %s, size 150 and record length 100", err, bad)
	}
	for _, in := range []FixedLengthInput{{RecordLength: 0}, {RecordLength: 10, KeyLength: 11}, {RecordLength: 10, KeyLength: -1}} {
		if _, err := in.Splits(SplitContext{Inputs: []string{dir}}); err == nil {
			t.Errorf("%+v: Splits accepted it", in)
		}
		if _, err := in.Open(context.Background(), Split{Path: bad, Length: 100}, nil); err == nil {
			t.Errorf("%+v: Open accepted it", in)
		}
	}

	// A split beyond the end of the file, and a truncated last record.
	good := writeTemp(t, dir, "good", strings.Repeat("y", 200))
	in := FixedLengthInput{RecordLength: 100, KeyLength: 10}
	for _, c := range []struct {
		split Split
		want  string
	}{
		{Split{Path: good, Length: 300}, "ends at offset 200, before the end of its split at 300"},
		{Split{Path: bad, Length: 200}, "truncated record at offset 100 (50 of 100 bytes)"},
	} {
		rr, err := in.Open(context.Background(), c.split, nil)
		if err != nil {
			t.Fatal(err)
		}
		for rr.Next() {
		}
		if err := rr.Err(); err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), c.split.Path) {
			t.Errorf("split %+v: error %v, want one containing %q and the path", c.split, err, c.want)
		}
		rr.Close()
	}
}

func TestFixedLengthUnalignedSplit(t *testing.T) {
	content, recs := fixedContent(5, 100, 10)
	p := writeTemp(t, t.TempDir(), "f", content)
	in := FixedLengthInput{RecordLength: 100, KeyLength: 10}
	tests := []struct {
		start, length int64
		want          []rec
	}{
		{50, 200, recs[1:3]}, // records starting in [100, 250)
		{0, 250, recs[0:3]},  // the record at 200 starts before 250
		{250, 50, nil},       // start rounds up to 300, past the end
		{300, 200, recs[3:5]},
	}
	for _, tt := range tests {
		rr, err := in.Open(context.Background(), Split{Path: p, Start: tt.start, Length: tt.length}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := readAll(t, rr); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("split [%d,+%d): %v, want %v", tt.start, tt.length, got, tt.want)
		}
	}
}

func TestFixedLengthKeyIsolation(t *testing.T) {
	content, _ := fixedContent(2, 20, 5)
	p := writeTemp(t, t.TempDir(), "f", content)
	rr, err := FixedLengthInput{RecordLength: 20, KeyLength: 5}.Open(context.Background(), Split{Path: p, Length: 40}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rr.Close()
	if k, v := rr.Key(), rr.Value(); k != nil || v != nil {
		t.Errorf("Key/Value before Next = %q/%q, want nil", k, v)
	}
	if !rr.Next() {
		t.Fatal(rr.Err())
	}
	if p := rr.Progress(); p != 0.5 {
		t.Errorf("Progress after one of two records = %v, want 0.5", p)
	}
	_ = append(rr.Key(), 'X') // must not overwrite the value
	if got := string(rr.Value()); got != strings.Repeat("a", 15) {
		t.Errorf("value after appending to key = %q", got)
	}
}
