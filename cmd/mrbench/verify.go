package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// readWordCounts reads "word<TAB>count" lines from files into a map.
func readWordCounts(files ...string) (map[string]int64, error) {
	m := map[string]int64{}
	for _, p := range files {
		f, err := os.Open(p)
		if err != nil {
			return nil, fmt.Errorf("opening %s: %w", p, err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for line := 1; sc.Scan(); line++ {
			w, c, ok := strings.Cut(sc.Text(), "\t")
			n, err := strconv.ParseInt(c, 10, 64)
			if !ok || err != nil {
				f.Close()
				return nil, fmt.Errorf("%s line %d: %q is not word<TAB>count", p, line, sc.Text())
			}
			if _, dup := m[w]; dup {
				f.Close()
				return nil, fmt.Errorf("%s line %d: word %q counted twice", p, line, w)
			}
			m[w] = n
		}
		err = sc.Err()
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", p, err)
		}
	}
	return m, nil
}

// checkWordCount compares the wordcount job's output directory with the
// baseline's file; it returns the number of distinct words and of words.
func checkWordCount(jobDir, baseline string) (distinct, total int64, err error) {
	files, err := partFiles(jobDir)
	if err != nil {
		return 0, 0, err
	}
	job, err := readWordCounts(files...)
	if err != nil {
		return 0, 0, fmt.Errorf("job output: %w", err)
	}
	base, err := readWordCounts(baseline)
	if err != nil {
		return 0, 0, fmt.Errorf("baseline output: %w", err)
	}
	for w, n := range base {
		total += n
		if jn, ok := job[w]; !ok {
			return 0, 0, fmt.Errorf("word %q: baseline counts %d, the job has no line for it", w, n)
		} else if jn != n {
			return 0, 0, fmt.Errorf("word %q: baseline counts %d, the job %d", w, n, jn)
		}
	}
	if len(job) != len(base) {
		for w := range job {
			if _, ok := base[w]; !ok {
				return 0, 0, fmt.Errorf("the job counts word %q (%d), the baseline never saw it", w, job[w])
			}
		}
	}
	return int64(len(base)), total, nil
}

// checkGrep compares the grep job's output (its part files, concatenated)
// with the baseline's file byte for byte; it returns the number of distinct
// matches and of matches.
func checkGrep(jobDir, baseline string) (distinct, total int64, err error) {
	files, err := partFiles(jobDir)
	if err != nil {
		return 0, 0, err
	}
	var job []byte
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			return 0, 0, fmt.Errorf("reading job output: %w", err)
		}
		job = append(job, b...)
	}
	base, err := os.ReadFile(baseline)
	if err != nil {
		return 0, 0, fmt.Errorf("reading baseline output: %w", err)
	}
	if !bytes.Equal(job, base) {
		jl, bl := bytes.Split(job, []byte("\n")), bytes.Split(base, []byte("\n"))
		for i := 0; i < max(len(jl), len(bl)); i++ {
			var j, b []byte
			if i < len(jl) {
				j = jl[i]
			}
			if i < len(bl) {
				b = bl[i]
			}
			if !bytes.Equal(j, b) {
				return 0, 0, fmt.Errorf("line %d: job %q, baseline %q (job %d bytes, baseline %d)", i+1, j, b, len(job), len(base))
			}
		}
	}
	for _, l := range bytes.Split(bytes.TrimSuffix(base, []byte("\n")), []byte("\n")) {
		if len(l) == 0 {
			continue
		}
		c, _, _ := bytes.Cut(l, []byte("\t"))
		n, err := strconv.ParseInt(string(c), 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("baseline line %q has no count", l)
		}
		distinct++
		total += n
	}
	return distinct, total, nil
}

// checkTeraSort compares the terasort job's output, record by record in
// the line form, with GNU sort's output of the input's line form. Two
// records with equal keys may come in either order (a sort by key does not
// order them; sort orders the whole line): such a difference is counted,
// not an error. It returns the record count and those ties.
func checkTeraSort(jobDir, sorted string) (records, ties int64, err error) {
	f, err := os.Open(sorted)
	if err != nil {
		return 0, 0, fmt.Errorf("opening sort output: %w", err)
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 1<<20)
	want := make([]byte, teraLineLen)
	line := make([]byte, 0, teraLineLen)
	records, err = forEachRecord(jobDir, func(rec []byte) error {
		var err error
		if line, err = appendTeraLine(line[:0], rec); err != nil {
			return err
		}
		if _, err := io.ReadFull(br, want); err != nil {
			return fmt.Errorf("sort output ends before the job's (%w)", err)
		}
		if !bytes.Equal(line, want) {
			if !bytes.Equal(line[:teraKeyChars], want[:teraKeyChars]) {
				return fmt.Errorf("record %q, sort has %q", line, want)
			}
			ties++
		}
		return nil
	})
	if err != nil {
		return records, ties, fmt.Errorf("at record %d: %w", records, err)
	}
	if n, _ := br.Read(want[:1]); n > 0 {
		return records, ties, fmt.Errorf("sort output has more than the job's %d records", records)
	}
	return records, ties, nil
}

// teraReport is what teravalidate and terasum write: "records<TAB>N",
// "checksum<TAB>HEX" and "error<TAB>..." lines.
type teraReport struct {
	records  int64
	checksum string
	errors   []string
}

// readTeraReport reads the report directory of teravalidate or terasum.
func readTeraReport(dir string) (*teraReport, error) {
	files, err := partFiles(dir)
	if err != nil {
		return nil, err
	}
	rep := &teraReport{}
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("reading report: %w", err)
		}
		for _, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
			k, v, _ := strings.Cut(l, "\t")
			switch k {
			case "records":
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					return nil, fmt.Errorf("report %s: bad records line %q", p, l)
				}
				rep.records += n
			case "checksum":
				rep.checksum = v
			case "error":
				rep.errors = append(rep.errors, v)
			}
		}
	}
	return rep, nil
}
