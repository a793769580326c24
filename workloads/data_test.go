package workloads

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestRandomTextCounts(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "in")
	words, err := WriteRandomText(dir, 200000, 3, 7)
	if err != nil {
		t.Fatal(err)
	}
	size, err := DirSize(dir)
	if err != nil || size < 200000 || size > 200000+3*512 {
		t.Fatalf("size %d (%v), want about 200000", size, err)
	}
	if got, err := CountWords(dir); err != nil || got != words {
		t.Errorf("CountWords %d (%v), want the %d written", got, err, words)
	}
	var all strings.Builder
	for i := 0; i < 3; i++ {
		b, err := os.ReadFile(filepath.Join(dir, "part-m-0000"+string(rune('0'+i))))
		if err != nil {
			t.Fatal(err)
		}
		all.Write(b)
	}
	text := all.String()
	if got, _ := CountLines(dir); got != int64(strings.Count(text, "\n")) {
		t.Errorf("CountLines %d, want %d", got, strings.Count(text, "\n"))
	}
	if got, _ := CountMatches(dir, "pa[a-z]*"); got != int64(len(regexp.MustCompile("pa[a-z]*").FindAllString(text, -1))) || got == 0 {
		t.Errorf("CountMatches %d", got)
	}
	// The same text for the same seed.
	dir2 := filepath.Join(t.TempDir(), "in")
	if w2, _ := WriteRandomText(dir2, 200000, 3, 7); w2 != words {
		t.Errorf("seed 7 wrote %d words, then %d", words, w2)
	}
}

func TestOutputChecks(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("part-r-00000", "a\t3\nb\t4\n")
	write("part-r-00001", "c\t5\n")
	write("_SUCCESS", "")
	if got, err := SumOutputCounts(dir, 1); err != nil || got != 12 {
		t.Errorf("SumOutputCounts %d %v, want 12", got, err)
	}
	if n, err := CheckSorted(dir); err != nil || n != 3 {
		t.Errorf("CheckSorted %d %v, want 3 lines in order", n, err)
	}
	write("part-r-00002", "b\t1\n")
	if _, err := CheckSorted(dir); err == nil || !strings.Contains(err.Error(), "not in total order") {
		t.Errorf("CheckSorted on a misorder across files: %v", err)
	}
	write("part-r-00003", "x y\n")
	if _, err := SumOutputCounts(dir, 1); err == nil || !strings.Contains(err.Error(), "has no tab") {
		t.Errorf("SumOutputCounts on a line without a tab: %v", err)
	}
}

func TestReportFormat(t *testing.T) {
	want := "Type         Date       Time     Input_data_size      Duration(s)          Throughput(bytes/s)  Throughput/node     \n"
	if got := ReportHeader(); got != want {
		t.Errorf("header\n%q, want\n%q", got, want)
	}
	end := time.Date(2026, 11, 25, 21, 56, 7, 0, time.Local)
	m := Measurement{Type: "HadoopTerasort", Bytes: 3200000, Duration: 748500 * time.Microsecond, End: end, Trackers: 2}
	want = "HadoopTerasort 2026-11-25 21:56:07 3200000              0.749                4275217              2137608             \n"
	if got := FormatReportLine(m); got != want {
		t.Errorf("line\n%q, want\n%q", got, want)
	}
	m = Measurement{Type: "HadoopSleep", Duration: 4 * time.Second, End: end}
	if got := FormatReportLine(m); !strings.HasPrefix(got, "HadoopSleep  2026-11-25 21:56:07 0                    4.000                0                    0 ") {
		t.Errorf("sleep line %q", got)
	}
	path := filepath.Join(t.TempDir(), "r", "hibench.report")
	for i := 0; i < 2; i++ {
		if err := AppendReport(path, []Measurement{m}); err != nil {
			t.Fatal(err)
		}
	}
	b, _ := os.ReadFile(path)
	if lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n"); len(lines) != 3 || lines[0]+"\n" != ReportHeader() {
		t.Errorf("report after two appends:\n%s", b)
	}
}
