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
