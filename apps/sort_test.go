package apps

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"gomr/mr"
)

func TestSortTotalOrder(t *testing.T) {
	base := t.TempDir()
	gen := filepath.Join(base, "gen")
	jc := &inProcessClient{t: t, conf: map[string]string{"mapreduce.job.maps": "3"}}
	if err := runApp(t, "randomtext", jc, "60000", gen); err != nil {
		t.Fatal(err)
	}
	// Add duplicates, an empty line and lines that differ only in their end.
	extra := "b\n\nb\na\nab\naa\n" + strings.Repeat("zz top\n", 3)
	if err := os.WriteFile(filepath.Join(gen, "part-m-00009"), []byte(extra), 0o644); err != nil {
		t.Fatal(err)
	}
	input := readParts(t, gen)
	want := strings.Split(strings.TrimSuffix(input, "\n"), "\n")
	sort.Strings(want)

	for _, reduces := range []int{1, 4} {
		t.Run(fmt.Sprint(reduces, " reduces"), func(t *testing.T) {
			out := filepath.Join(base, fmt.Sprint("out", reduces))
			// Small splits and a small sample, so that the sample is not
			// the whole input.
			jc := &inProcessClient{t: t, conf: map[string]string{
				"mapreduce.job.reduces":                         fmt.Sprint(reduces),
				"mapreduce.input.fileinputformat.split.maxsize": "5000",
				confSampleSize:                                  "60",
			}}
			if err := runApp(t, "sort", jc, gen, out); err != nil {
				t.Fatal(err)
			}
			if len(jc.jobs) != 1 || jc.jobs[0].NumReduces != reduces {
				t.Fatalf("jobs %+v", jc.jobs)
			}
			parts, _ := filepath.Glob(filepath.Join(out, "part-r-*"))
			if len(parts) != reduces {
				t.Fatalf("%d part files, want %d", len(parts), reduces)
			}
			nonEmpty := 0
			for _, p := range parts {
				if st, err := os.Stat(p); err == nil && st.Size() > 0 {
					nonEmpty++
				}
			}
			if nonEmpty != reduces {
				t.Errorf("%d of %d part files hold lines: the split points do not spread the input", nonEmpty, reduces)
			}
			got := strings.Split(strings.TrimSuffix(readParts(t, out), "\n"), "\n")
			if !slices.Equal(got, want) {
				t.Errorf("output: %d lines, want the %d input lines sorted", len(got), len(want))
			}
		})
	}
}

func TestSortUsage(t *testing.T) {
	jc := &fakeClient{}
	var ue *mr.UsageError
	if err := runApp(t, "sort", jc, "in"); !errors.As(err, &ue) {
		t.Errorf("one argument: %v", err)
	}
	err := runApp(t, "sort", &fakeClient{}, filepath.Join(t.TempDir(), "missing"), "out")
	if err == nil || !strings.Contains(err.Error(), "missing") || !strings.HasPrefix(err.Error(), "sort: sampling") {
		t.Errorf("missing input: %v", err)
	}
	err = runApp(t, "sort", &fakeClient{conf: map[string]string{"mapreduce.job.reduces": "0"}}, "in", "out")
	if err == nil || !strings.Contains(err.Error(), "mapreduce.job.reduces") {
		t.Errorf("0 reduces: %v", err)
	}
}
