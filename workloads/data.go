package workloads

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"gomr/mr/fs"
)

// syllables make the words of the random text.
var syllables = strings.Fields("ab ac al an ar be ca co de di el en er fa ga ho in ing is ka la li lo ma me mi na ne no or pa pe ra re ri ro sa se si so ta te ti to un ve vi ya ze")

// vocabulary returns n pseudo-words of 2 to 4 syllables, the same for a
// seed.
func vocabulary(n int, seed uint64) []string {
	r := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	words := make([]string, n)
	for i := range words {
		var b strings.Builder
		for k := 2 + r.IntN(3); k > 0; k-- {
			b.WriteString(syllables[r.IntN(len(syllables))])
		}
		words[i] = b.String()
	}
	return words
}

// WriteRandomText writes at least size bytes of random text into the
// directory dir (a path or URI), as files part-m-00000... of about equal
// size: lines of 5 to 20 words drawn from 1000 pseudo-words, as Hadoop's
// RandomTextWriter writes sentences of its word list. The text is the same
// for a seed. It returns the number of words written.
func WriteRandomText(dir string, size int64, files int, seed uint64) (int64, error) {
	fsys, err := fs.Resolve(dir)
	if err != nil {
		return 0, err
	}
	if err := fsys.MkdirAll(dir); err != nil {
		return 0, err
	}
	words := vocabulary(1000, seed)
	r := rand.New(rand.NewPCG(seed, 1))
	per := (size + int64(files) - 1) / int64(files)
	var total int64
	line := make([]byte, 0, 512)
	for f := 0; f < files; f++ {
		path := fs.Join(dir, fmt.Sprintf("part-m-%05d", f))
		wc, err := fsys.Create(path)
		if err != nil {
			return total, err
		}
		w := bufio.NewWriterSize(wc, 1<<20)
		var n int64
		for n < per {
			line = line[:0]
			for k := 5 + r.IntN(16); k > 0; k-- {
				line = append(line, words[r.IntN(len(words))]...)
				line = append(line, ' ')
				total++
			}
			line[len(line)-1] = '\n'
			w.Write(line)
			n += int64(len(line))
		}
		if err := w.Flush(); err != nil {
			wc.Close()
			return total, fmt.Errorf("writing %s: %w", path, err)
		}
		if err := wc.Close(); err != nil {
			return total, fmt.Errorf("writing %s: %w", path, err)
		}
	}
	return total, nil
}

// dataFiles lists the data files of a path: the file itself, or the
// files of the directory, skipping those whose names start with "_" or "."
// (_SUCCESS, hidden files), as Hadoop's input formats do.
func dataFiles(path string) (fs.FS, []fs.FileInfo, error) {
	fsys, err := fs.Resolve(path)
	if err != nil {
		return nil, nil, err
	}
	infos, err := fsys.List(path)
	if err != nil {
		return nil, nil, err
	}
	var out []fs.FileInfo
	for _, fi := range infos {
		base := fi.Path[strings.LastIndex(fi.Path, "/")+1:]
		if fi.IsDir || strings.HasPrefix(base, "_") || strings.HasPrefix(base, ".") {
			continue
		}
		out = append(out, fi)
	}
	return fsys, out, nil
}

// DirSize returns the bytes of the data files of path.
func DirSize(path string) (int64, error) {
	_, files, err := dataFiles(path)
	if err != nil {
		return 0, err
	}
	var n int64
	for _, f := range files {
		n += f.Size
	}
	return n, nil
}

// eachLine calls fn for every line of the data files of path, in file name
// order, without the line ending ("\n" or "\r\n").
func eachLine(path string, fn func(file string, line []byte) error) error {
	fsys, files, err := dataFiles(path)
	if err != nil {
		return err
	}
	for _, fi := range files {
		f, err := fsys.Open(fi.Path)
		if err != nil {
			return err
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 0, 1<<16), 64<<20)
		for sc.Scan() {
			if err := fn(fi.Path, bytes.TrimSuffix(sc.Bytes(), []byte("\r"))); err != nil {
				f.Close()
				return err
			}
		}
		err = sc.Err()
		f.Close()
		if err != nil {
			return fmt.Errorf("reading %s: %w", fi.Path, err)
		}
	}
	return nil
}

// perFile runs count on each data file of path, on up to GOMAXPROCS files
// at a time, and adds up the results.
func perFile(path string, count func(file string, r io.Reader) (int64, error)) (int64, error) {
	fsys, files, err := dataFiles(path)
	if err != nil {
		return 0, err
	}
	var (
		mu    sync.Mutex
		total int64
		errs  []error
		wg    sync.WaitGroup
	)
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	for _, fi := range files {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			f, err := fsys.Open(fi.Path)
			var n int64
			if err == nil {
				n, err = count(fi.Path, bufio.NewReaderSize(f, 1<<20))
				f.Close()
			}
			mu.Lock()
			defer mu.Unlock()
			total += n
			if err != nil {
				errs = append(errs, fmt.Errorf("reading %s: %w", fi.Path, err))
			}
		}()
	}
	wg.Wait()
	return total, errors.Join(errs...)
}

// isDelim tells whether b separates words as the wordcount app splits them
// (Java StringTokenizer's default delimiters).
func isDelim(b byte) bool { return b == ' ' || b == '\t' || b == '\n' || b == '\r' || b == '\f' }

// CountWords counts the words of the text under path as the wordcount app
// splits them.
func CountWords(path string) (int64, error) {
	return perFile(path, func(_ string, r io.Reader) (int64, error) {
		var n int64
		buf := make([]byte, 1<<20)
		inWord := false
		for {
			k, err := r.Read(buf)
			for _, b := range buf[:k] {
				d := isDelim(b)
				if !d && !inWord {
					n++
				}
				inWord = !d
			}
			if err == io.EOF {
				return n, nil
			}
			if err != nil {
				return n, err
			}
		}
	})
}

// scanLines calls fn for every line read from r, without the line ending
// ("\n" or "\r\n").
func scanLines(r io.Reader, fn func(line []byte)) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<16), 64<<20)
	for sc.Scan() {
		fn(bytes.TrimSuffix(sc.Bytes(), []byte("\r")))
	}
	return sc.Err()
}

// CountMatches counts the matches of expr in the lines of the text under
// path, as the grep app's map finds them.
func CountMatches(path, expr string) (int64, error) {
	re, err := regexp.Compile(expr)
	if err != nil {
		return 0, fmt.Errorf("bad regular expression %q: %w", expr, err)
	}
	return perFile(path, func(_ string, r io.Reader) (int64, error) {
		var n int64
		err := scanLines(r, func(line []byte) { n += int64(len(re.FindAllIndex(line, -1))) })
		return n, err
	})
}

// SumOutputCounts adds the decimal counts of a text output whose lines are
// "a<TAB>b", the count being field col (0 or 1).
func SumOutputCounts(path string, col int) (int64, error) {
	var sum int64
	err := eachLine(path, func(file string, line []byte) error {
		a, b, ok := bytes.Cut(line, []byte("\t"))
		if !ok {
			return fmt.Errorf("%s: line %q has no tab", file, line)
		}
		f := a
		if col == 1 {
			f = b
		}
		n, err := strconv.ParseInt(string(f), 10, 64)
		if err != nil {
			return fmt.Errorf("%s: line %q: field %d is not a count", file, line, col+1)
		}
		sum += n
		return nil
	})
	return sum, err
}

// CountLines counts the lines of the data files under path (a last line
// without a newline counts).
func CountLines(path string) (int64, error) {
	return perFile(path, func(_ string, r io.Reader) (int64, error) {
		var n int64
		buf := make([]byte, 1<<20)
		last := byte('\n')
		for {
			k, err := r.Read(buf)
			if k > 0 {
				n += int64(bytes.Count(buf[:k], []byte("\n")))
				last = buf[k-1]
			}
			if err == io.EOF {
				if last != '\n' {
					n++
				}
				return n, nil
			}
			if err != nil {
				return n, err
			}
		}
	})
}

// CheckSorted checks that the lines of the data files under path, read in
// file name order, are in ascending byte order, and returns their number.
func CheckSorted(path string) (int64, error) {
	var n int64
	var prev []byte
	prevFile := ""
	err := eachLine(path, func(file string, line []byte) error {
		if n > 0 && bytes.Compare(prev, line) > 0 {
			return fmt.Errorf("sort check: %s: line %q follows %q (in %s): not in total order", file, line, prev, prevFile)
		}
		prev = append(prev[:0], line...)
		prevFile = file
		n++
		return nil
	})
	return n, err
}

// ReadAll returns the text of the data files under path.
func ReadAll(path string) (string, error) {
	fsys, files, err := dataFiles(path)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, fi := range files {
		f, err := fsys.Open(fi.Path)
		if err != nil {
			return "", err
		}
		_, err = io.Copy(&b, f)
		f.Close()
		if err != nil {
			return "", fmt.Errorf("reading %s: %w", fi.Path, err)
		}
	}
	return b.String(), nil
}

// removeAll deletes path (a file or directory tree); a path that does not
// exist is not an error.
func removeAll(path string) error {
	fsys, err := fs.Resolve(path)
	if err != nil {
		return err
	}
	return fsys.RemoveAll(path)
}
