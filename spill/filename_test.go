package spill

import (
	"fmt"
	"testing"
)

// TestFileNamesAsFmt: the spill file names are fmt's "spill%05d" with their
// extension, for every width of k (and a negative k, never used).
func TestFileNamesAsFmt(t *testing.T) {
	for _, k := range []int{0, 7, 42, 12345, 99999, 100000, 1234567, -3} {
		if got, want := DataFileName(k), fmt.Sprintf("spill%05d.out", k); got != want {
			t.Errorf("DataFileName(%d) = %q, want %q", k, got, want)
		}
		if got, want := IndexFileName(k), fmt.Sprintf("spill%05d.index", k); got != want {
			t.Errorf("IndexFileName(%d) = %q, want %q", k, got, want)
		}
		if got, want := string(AppendDataFileName([]byte("dir/"), k)), fmt.Sprintf("dir/spill%05d.out", k); got != want {
			t.Errorf("AppendDataFileName(dir/, %d) = %q, want %q", k, got, want)
		}
	}
}

// TestParseDataFileName: ParseDataFileName inverts DataFileName and takes
// no other name.
func TestParseDataFileName(t *testing.T) {
	tests := []struct {
		name string
		k    int
		ok   bool
	}{
		{"spill00000.out", 0, true},
		{"spill00042.out", 42, true},
		{"spill99999.out", 99999, true},
		{"spill100000.out", 100000, true},
		{"spill1234567.out", 1234567, true},
		{"spill0042.out", 0, false},    // fewer than 5 digits
		{"spill000042.out", 0, false},  // padded beyond 5
		{"spill00042.index", 0, false}, // the index
		{"spill-0003.out", 0, false},
		{"spill0004a.out", 0, false},
		{"xspill00001.out", 0, false},
		{"spill00001.out.tmp", 0, false},
		{"spill.out", 0, false},
		{"spill0000000000000000001.out", 0, false}, // would overflow
		{"", 0, false},
	}
	for _, tc := range tests {
		k, ok := ParseDataFileName(tc.name)
		if k != tc.k || ok != tc.ok {
			t.Errorf("ParseDataFileName(%q) = %d, %t; want %d, %t", tc.name, k, ok, tc.k, tc.ok)
		}
		if ok && DataFileName(k) != tc.name {
			t.Errorf("DataFileName(%d) = %q, not %q", k, DataFileName(k), tc.name)
		}
	}
	for _, k := range []int{0, 7, 42, 12345, 99999, 100000, 1234567} {
		if got, ok := ParseDataFileName(DataFileName(k)); !ok || got != k {
			t.Errorf("ParseDataFileName(DataFileName(%d)) = %d, %t", k, got, ok)
		}
	}
}
