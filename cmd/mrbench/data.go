package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math/bits"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// The text of the WordCount and Grep benchmarks: words drawn from a fixed
// vocabulary with Zipf-distributed ranks, 5 to 15 words a line, single
// spaces. Frequent words are short, as in natural text: the word of rank r
// (from 0) has floor(bitlen(r+1)/2) + (0, 1 or 2) letters (at least 1, more
// if the short words of that length run out), which makes the average word
// 4.8 letters, 5.8 bytes with its separator (English running text: about
// 4.7 letters).
// Everything is derived from fixed seeds, so a size always yields the same
// bytes.
const (
	vocabSize   = 1_000_000
	zipfS       = 1.1 // exponent of the rank distribution
	zipfV       = 1.0
	maxWordLen  = 16
	minLineWord = 5
	maxLineWord = 15
	textChunk   = 16 << 20   // generated in parallel chunks of this size
	textSeed    = 0x676f6d72 // "gomr"
)

// makeVocab returns vocabSize distinct lowercase words, most frequent
// first.
func makeVocab() [][]byte {
	r := rand.New(rand.NewPCG(textSeed, 1))
	seen := make(map[string]struct{}, vocabSize)
	words := make([][]byte, 0, vocabSize)
	buf := make([]byte, maxWordLen)
	for rank := 0; len(words) < vocabSize; rank++ {
		n := max(1, bits.Len(uint(rank+1))/2+r.IntN(3))
		// Short lengths run out of distinct words: lengthen on repeats.
		for tries := 0; ; tries++ {
			if tries > 0 && tries%8 == 0 && n < maxWordLen {
				n++
			}
			for i := range n {
				buf[i] = 'a' + byte(r.IntN(26))
			}
			if _, dup := seen[string(buf[:n])]; !dup {
				break
			}
		}
		w := string(buf[:n])
		seen[w] = struct{}{}
		words = append(words, []byte(w))
	}
	return words
}

// genTextChunk appends lines of Zipf-distributed words to dst until it
// holds at least target bytes. Chunk index c seeds its generator.
func genTextChunk(dst []byte, vocab [][]byte, c int, target int) []byte {
	r := rand.New(rand.NewPCG(textSeed, uint64(c)+2))
	z := rand.NewZipf(r, zipfS, zipfV, uint64(len(vocab)-1))
	for len(dst) < target {
		n := minLineWord + r.IntN(maxLineWord-minLineWord+1)
		for i := range n {
			if i > 0 {
				dst = append(dst, ' ')
			}
			dst = append(dst, vocab[z.Uint64()]...)
		}
		dst = append(dst, '\n')
	}
	return dst
}

// writeText writes about size bytes of text to path (whole lines; each
// chunk ends with its first line break at or after its share, so the file
// is at most a line per chunk longer). It returns the bytes written.
func writeText(path string, size int64) (int64, error) {
	vocab := makeVocab()
	f, err := os.Create(path)
	if err != nil {
		return 0, fmt.Errorf("creating text input: %w", err)
	}
	chunks := int((size + textChunk - 1) / textChunk)
	results := make([]chan []byte, chunks)
	for i := range results {
		results[i] = make(chan []byte, 1)
	}
	// Two generators (one per core) work ahead of the writer by at most a
	// few chunks: a chunk is started only when a token is free.
	tokens := make(chan struct{}, 4)
	next := make(chan int)
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := range next {
				target := int(min(textChunk, size-int64(c)*textChunk))
				results[c] <- genTextChunk(make([]byte, 0, target+512), vocab, c, target)
			}
		}()
	}
	go func() {
		for c := range chunks {
			tokens <- struct{}{}
			next <- c
		}
		close(next)
	}()
	var written int64
	var werr error
	for c := range chunks {
		b := <-results[c]
		<-tokens
		if werr == nil {
			var n int
			n, werr = f.Write(b)
			written += int64(n)
		}
	}
	wg.Wait()
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return written, fmt.Errorf("writing text input %s: %w", path, werr)
	}
	return written, nil
}

// GenSort records: a 10-byte key, then 0x00 0x11, 32 hex digits of the row
// id, 0x88 0x99 0xAA 0xBB, 48 filler characters, 0xCC 0xDD 0xEE 0xFF.
const (
	teraRecLen  = 100
	teraKeyLen  = 10
	teraLineLen = teraKeyChars + 2 + 32 + 2 + 48 + 1
	// teraKeyChars is the length of the printable form of a key: 80 bits in
	// 6-bit digits.
	teraKeyChars = 14
)

// appendTeraLine appends the line form of a GenSort record, in the spirit
// of gensort -a: the key as 14 printable characters from the 64 consecutive
// ASCII characters '0' (0x30) to 'o' (0x6F), 6 bits each, big-endian
// (so that byte order of the lines is the order of the keys), two spaces,
// the row id's 32 hex digits, two spaces, the 48 filler characters, a
// newline: 99 bytes. The record's constant bytes are checked, not copied.
func appendTeraLine(dst, rec []byte) ([]byte, error) {
	if len(rec) != teraRecLen || rec[10] != 0x00 || rec[11] != 0x11 ||
		!bytes.Equal(rec[44:48], []byte{0x88, 0x99, 0xAA, 0xBB}) ||
		!bytes.Equal(rec[96:100], []byte{0xCC, 0xDD, 0xEE, 0xFF}) {
		return dst, fmt.Errorf("record %x is not a GenSort record", rec)
	}
	var acc uint64
	nbits, i := 0, 0
	for range teraKeyChars {
		for nbits < 6 {
			var b byte
			if i < teraKeyLen {
				b = rec[i]
			}
			i++
			acc = acc<<8 | uint64(b)
			nbits += 8
		}
		nbits -= 6
		dst = append(dst, '0'+(byte(acc>>nbits)&63))
	}
	dst = append(dst, ' ', ' ')
	dst = append(dst, rec[12:44]...)
	dst = append(dst, ' ', ' ')
	dst = append(dst, rec[48:96]...)
	return append(dst, '\n'), nil
}

// partFiles lists the part-* files of a job output (or input) directory in
// name order, which is the order of the partitions.
func partFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", dir, err)
	}
	var files []string
	for _, e := range entries {
		if !e.IsDir() && strings.HasPrefix(e.Name(), "part-") {
			files = append(files, filepath.Join(dir, e.Name()))
		}
	}
	slices.Sort(files)
	if len(files) == 0 {
		return nil, fmt.Errorf("%s has no part files", dir)
	}
	return files, nil
}

// forEachRecord calls fn with every 100-byte record of the part files of
// dir, in order.
func forEachRecord(dir string, fn func(rec []byte) error) (int64, error) {
	files, err := partFiles(dir)
	if err != nil {
		return 0, err
	}
	var n int64
	rec := make([]byte, teraRecLen)
	for _, p := range files {
		f, err := os.Open(p)
		if err != nil {
			return n, fmt.Errorf("opening %s: %w", p, err)
		}
		br := bufio.NewReaderSize(f, 1<<20)
		for {
			_, err := io.ReadFull(br, rec)
			if err == io.EOF {
				break
			}
			if err != nil {
				f.Close()
				return n, fmt.Errorf("reading record %d of %s: %w", n, p, err)
			}
			if err := fn(rec); err != nil {
				f.Close()
				return n, fmt.Errorf("%s: %w", p, err)
			}
			n++
		}
		f.Close()
	}
	return n, nil
}

// writeTeraLines writes the line form of every record under dir to path
// and returns the record count.
func writeTeraLines(dir, path string) (int64, error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, fmt.Errorf("creating %s: %w", path, err)
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	line := make([]byte, 0, teraLineLen)
	n, err := forEachRecord(dir, func(rec []byte) error {
		var err error
		line, err = appendTeraLine(line[:0], rec)
		if err != nil {
			return err
		}
		_, err = bw.Write(line)
		return err
	})
	if err == nil {
		err = bw.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return n, fmt.Errorf("writing line form %s: %w", path, err)
	}
	return n, nil
}
