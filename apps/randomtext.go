package apps

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"strconv"

	"gomr/mr"
)

const randomTextJob = "randomtext"

func init() {
	mr.RegisterJob(&mr.JobDef{
		Name:   randomTextJob,
		Input:  RowRangeInput{},
		Output: mr.TextOutput{},
		Mapper: newRandomTextMapper,
	})
	mr.RegisterApp(&mr.App{
		Name:        randomTextAppName,
		Usage:       randomTextAppUsage,
		Description: "Write about <bytes> of text lines of random words (HiBench's RandomTextWriter; bytes may end in k, m, b or t).",
		Run:         runRandomText,
		Check:       func(args []string) error { _, err := randomTextArgs(args); return err },
	})
}

const (
	randomTextAppName  = "randomtext"
	randomTextAppUsage = "<bytes> <out>"
)

// The shape of RandomTextWriter's records: a key of 5 to 10 words and a
// value of 20 to 100 words, written as one line "key<TAB>value".
const (
	randomTextMinKeyWords   = 5
	randomTextMaxKeyWords   = 10
	randomTextMinValueWords = 20
	randomTextMaxValueWords = 100
)

// randomTextWords is the fixed vocabulary of randomtext: 1000 distinct
// pronounceable lower-case words of 2 to 4 syllables, built once from a
// fixed seed, so every run of every version of the program draws from the
// same words.
var randomTextWords = buildVocabulary(1000)

// buildVocabulary makes n distinct words from consonant-vowel syllables,
// drawn from a PCG generator with a fixed seed.
func buildVocabulary(n int) []string {
	const consonants = "bcdfghjklmnprstvz"
	const vowels = "aeiou"
	src := rand.NewPCG(0x52616e646f6d5465, 0x7874577269746572) // "RandomTe", "xtWriter"
	seen := make(map[string]bool, n)
	words := make([]string, 0, n)
	for len(words) < n {
		syl := 2 + int(src.Uint64()%3)
		var w []byte
		for range syl {
			r := src.Uint64()
			w = append(w, consonants[r%uint64(len(consonants))], vowels[(r>>8)%uint64(len(vowels))])
			if (r>>16)%4 == 0 {
				w = append(w, consonants[(r>>24)%uint64(len(consonants))])
			}
		}
		if s := string(w); !seen[s] {
			seen[s] = true
			words = append(words, s)
		}
	}
	return words
}

// parseHumanBytes parses a byte count with an optional decimal suffix k, m,
// b or t, as teragen's row counts.
func parseHumanBytes(s string) (int64, error) {
	n, err := parseHumanRows(s)
	if err != nil {
		return 0, fmt.Errorf("byte count %q is not a non-negative integer (with an optional k, m, b or t suffix)", s)
	}
	return n, nil
}

// randomTextArgs checks randomtext's arguments and returns its size.
func randomTextArgs(args []string) (int64, error) {
	if len(args) != 2 {
		return 0, usage(randomTextAppName, randomTextAppUsage, "need 2 arguments, got %d", len(args))
	}
	total, err := parseHumanBytes(args[0])
	if err != nil {
		return 0, usage(randomTextAppName, randomTextAppUsage, "%v", err)
	}
	return total, nil
}

func runRandomText(ctx context.Context, jc mr.JobClient, args []string) error {
	total, err := randomTextArgs(args)
	if err != nil {
		return err
	}
	maps, err := confInt(jc.Conf, "mapreduce.job.maps", defaultMaps)
	if err != nil {
		return fmt.Errorf("%s: %w", randomTextAppName, err)
	}
	if maps < 1 {
		return fmt.Errorf("%s: configuration mapreduce.job.maps=%d must be at least 1", randomTextAppName, maps)
	}
	_, err = runJob(ctx, jc, randomTextSpec(total, maps, args[1]))
	return err
}

// randomTextSpec is the generator job: one row per map, row i writing the
// bytes from total*i/maps to total*(i+1)/maps.
func randomTextSpec(total, maps int64, out string) *mr.JobSpec {
	return &mr.JobSpec{
		Name: randomTextJob,
		Def:  randomTextJob,
		Params: map[string]string{
			"rows":  strconv.FormatInt(maps, 10),
			"maps":  strconv.FormatInt(maps, 10),
			"bytes": strconv.FormatInt(total, 10),
		},
		Output:     out,
		NumReduces: 0,
	}
}

// randomTextMapper writes one row's share of the text. Row i (of rows,
// from RowRangeInput; the driver makes one row per map, so i is the map's
// task index) writes lines until it has written its share of the job
// parameter "bytes", counting each line's bytes with its tab and newline:
// it may write up to one line more than its share. Its words come from a
// PCG generator seeded by the row, so the output depends only on the byte
// count and the number of rows.
type randomTextMapper struct {
	total, rows int64
	key, value  []byte
}

func newRandomTextMapper(tc mr.TaskContext) (mr.Mapper, error) {
	total, err := paramInt(tc.Param, "bytes")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", randomTextJob, err)
	}
	rows, err := paramInt(tc.Param, "rows")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", randomTextJob, err)
	}
	if total < 0 || rows < 1 {
		return nil, fmt.Errorf("%s: job parameters bytes=%d and rows=%d: want bytes >= 0 and rows >= 1", randomTextJob, total, rows)
	}
	return &randomTextMapper{total: total, rows: rows}, nil
}

// share returns the bytes row i writes: total*(i+1)/rows - total*i/rows.
func (m *randomTextMapper) share(row int64) int64 {
	cut := func(i int64) int64 {
		hi, lo := bits.Mul64(uint64(m.total), uint64(i))
		q, _ := bits.Div64(hi, lo, uint64(m.rows)) // i <= rows: q <= total
		return int64(q)
	}
	return cut(row+1) - cut(row)
}

// Map writes row key's lines.
func (m *randomTextMapper) Map(tc mr.TaskContext, key, _ []byte, out mr.Emitter) error {
	if len(key) != 8 {
		return fmt.Errorf("%s: row key %x is not 8 bytes", randomTextJob, key)
	}
	row := binary.BigEndian.Uint64(key)
	if row >= uint64(m.rows) {
		return fmt.Errorf("%s: row %d out of range (rows=%d)", randomTextJob, row, m.rows)
	}
	src := rand.NewPCG(row, 0x9e3779b97f4a7c15)
	goal := m.share(int64(row))
	written := tc.Counter(randomTextJob, "BYTES_WRITTEN")
	records := tc.Counter(randomTextJob, "RECORDS_WRITTEN")
	for done := int64(0); done < goal; {
		if err := tc.Context().Err(); err != nil {
			return err
		}
		m.key = randomSentence(m.key[:0], src, randomTextMinKeyWords, randomTextMaxKeyWords)
		m.value = randomSentence(m.value[:0], src, randomTextMinValueWords, randomTextMaxValueWords)
		if err := out.Emit(m.key, m.value); err != nil {
			return err
		}
		n := int64(len(m.key) + len(m.value) + 2)
		done += n
		written.Add(n)
		records.Increment()
	}
	return nil
}

// randomSentence appends lo to hi (inclusive) random vocabulary words,
// separated by single spaces.
func randomSentence(dst []byte, src *rand.PCG, lo, hi int) []byte {
	n := lo + int(src.Uint64()%uint64(hi-lo+1))
	for i := range n {
		if i > 0 {
			dst = append(dst, ' ')
		}
		dst = append(dst, randomTextWords[src.Uint64()%uint64(len(randomTextWords))]...)
	}
	return dst
}
