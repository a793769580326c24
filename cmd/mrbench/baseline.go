package main

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"sync"
)

// The hand-written baselines. The bench runs them in a child process of
// its own binary (baselineArg as the first argument) so that their wall
// time, CPU time and peak memory are measured the way the jobs' are.

// baselineArg is the first argument that makes the binary run a baseline.
const baselineArg = "-run-baseline"

// baselineMain runs "wordcount IN OUT" or "grep IN OUT REGEX".
func baselineMain(args []string) int {
	var err error
	switch {
	case len(args) == 3 && args[0] == "wordcount":
		err = baselineWordCount(args[1], args[2])
	case len(args) == 4 && args[0] == "grep":
		err = baselineGrep(args[1], args[2], args[3])
	default:
		err = fmt.Errorf("usage: %s wordcount IN OUT | grep IN OUT REGEX (got %q)", baselineArg, args)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "mrbench baseline:", err)
		return 1
	}
	return 0
}

// isDelim reports whether b is one of Java's StringTokenizer default
// delimiters, the ones the wordcount job splits on.
func isDelim(b byte) bool {
	return b == ' ' || b == '\t' || b == '\n' || b == '\r' || b == '\f'
}

// baselineWordCount counts the words of in with two goroutines (the file
// split in two at a line boundary, one map each), merges the maps and
// writes "word<TAB>count" lines to out, sorted by word.
func baselineWordCount(in, out string) error {
	f, err := os.Open(in)
	if err != nil {
		return fmt.Errorf("wordcount: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("wordcount: %w", err)
	}
	mid, err := lineBoundary(f, fi.Size(), fi.Size()/2)
	if err != nil {
		return fmt.Errorf("wordcount: %s: %w", in, err)
	}
	ranges := [2][2]int64{{0, mid}, {mid, fi.Size()}}
	var counts [2]map[string]*int64
	var errs [2]error
	var wg sync.WaitGroup
	for i, r := range ranges {
		wg.Add(1)
		go func() {
			defer wg.Done()
			counts[i], errs[i] = countWords(io.NewSectionReader(f, r[0], r[1]-r[0]))
		}()
	}
	wg.Wait()
	for i, e := range errs {
		if e != nil {
			return fmt.Errorf("wordcount: %s bytes %d-%d: %w", in, ranges[i][0], ranges[i][1], e)
		}
	}
	total, other := counts[0], counts[1]
	if len(other) > len(total) {
		total, other = other, total
	}
	for w, n := range other {
		if p, ok := total[w]; ok {
			*p += *n
		} else {
			total[w] = n
		}
	}
	words := make([]string, 0, len(total))
	for w := range total {
		words = append(words, w)
	}
	slices.Sort(words)
	return writeLines(out, func(bw *bufio.Writer) error {
		var num []byte
		for _, w := range words {
			bw.WriteString(w)
			bw.WriteByte('\t')
			num = strconv.AppendInt(num[:0], *total[w], 10)
			num = append(num, '\n')
			if _, err := bw.Write(num); err != nil {
				return err
			}
		}
		return nil
	})
}

// lineBoundary returns the offset just after the first newline at or after
// off-1, that is the start of the first line that starts at or after off
// (size if there is none).
func lineBoundary(f *os.File, size, off int64) (int64, error) {
	if off <= 0 {
		return 0, nil
	}
	br := bufio.NewReader(io.NewSectionReader(f, off-1, size-(off-1)))
	pos := off - 1
	for {
		b, err := br.ReadByte()
		if err == io.EOF {
			return size, nil
		}
		if err != nil {
			return 0, err
		}
		pos++
		if b == '\n' {
			return pos, nil
		}
	}
}

// countWords counts the words of r in a map.
func countWords(r io.Reader) (map[string]*int64, error) {
	counts := make(map[string]*int64, 1<<16)
	buf := make([]byte, 1<<20)
	carry := 0 // bytes of an unfinished word at the start of buf
	for {
		n, err := io.ReadFull(r, buf[carry:])
		data := buf[:carry+n]
		end := len(data)
		if err == nil {
			// The last word may continue in the next read: keep it.
			for end > 0 && !isDelim(data[end-1]) {
				end--
			}
			if end == 0 {
				return nil, fmt.Errorf("a word longer than %d bytes", len(buf))
			}
		}
		i := 0
		for i < end {
			for i < end && isDelim(data[i]) {
				i++
			}
			s := i
			for i < end && !isDelim(data[i]) {
				i++
			}
			if i > s {
				if p, ok := counts[string(data[s:i])]; ok {
					*p++
				} else {
					one := int64(1)
					counts[string(data[s:i])] = &one
				}
			}
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return counts, nil
		}
		if err != nil {
			return nil, err
		}
		carry = copy(buf, data[end:])
	}
}

// baselineGrep counts the matches of expr in the lines of in, single
// threaded, and writes "count<TAB>match" lines to out, most frequent first
// and ties by match bytes: the grep app's output.
func baselineGrep(in, out, expr string) error {
	re, err := regexp.Compile(expr)
	if err != nil {
		return fmt.Errorf("grep: regular expression %q: %w", expr, err)
	}
	f, err := os.Open(in)
	if err != nil {
		return fmt.Errorf("grep: %w", err)
	}
	defer f.Close()
	counts := map[string]*int64{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		for _, loc := range re.FindAllIndex(line, -1) {
			m := line[loc[0]:loc[1]]
			if p, ok := counts[string(m)]; ok {
				*p++
			} else {
				one := int64(1)
				counts[string(m)] = &one
			}
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("grep: reading %s: %w", in, err)
	}
	type match struct {
		s string
		n int64
	}
	ms := make([]match, 0, len(counts))
	for s, n := range counts {
		ms = append(ms, match{s, *n})
	}
	slices.SortFunc(ms, func(a, b match) int {
		if c := cmp.Compare(b.n, a.n); c != 0 {
			return c
		}
		return cmp.Compare(a.s, b.s)
	})
	return writeLines(out, func(bw *bufio.Writer) error {
		for _, m := range ms {
			bw.WriteString(strconv.FormatInt(m.n, 10))
			if m.s != "" {
				bw.WriteByte('\t')
				bw.WriteString(m.s)
			}
			if err := bw.WriteByte('\n'); err != nil {
				return err
			}
		}
		return nil
	})
}

// writeLines creates path and writes it through a buffered writer.
func writeLines(path string, fill func(*bufio.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("creating output: %w", err)
	}
	bw := bufio.NewWriterSize(f, 256<<10)
	err = fill(bw)
	if err == nil {
		err = bw.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
