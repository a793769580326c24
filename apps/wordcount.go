package apps

import (
	"context"
	"encoding/binary"
	"math/bits"
	"strconv"

	"gomr/mr"
)

const wordCountJob = "wordcount"

func init() {
	mr.RegisterJob(&mr.JobDef{
		Name:   wordCountJob,
		Input:  mr.TextInput{},
		Output: mr.TextOutput{},
		Mapper: func(mr.TaskContext) (mr.Mapper, error) {
			return newWordCountMapper(), nil
		},
		Combiner: func(mr.TaskContext) (mr.Reducer, error) {
			return &uvarintSum{what: wordCountJob}, nil
		},
		Reducer: func(mr.TaskContext) (mr.Reducer, error) {
			return &decimalSum{what: wordCountJob}, nil
		},
	})
	mr.RegisterApp(&mr.App{
		Name:        wordCountAppName,
		Usage:       wordCountAppUsage,
		Description: "A map/reduce program that counts the words in the input files.",
		Run:         runWordCount,
		Check:       checkWordCount,
	})
}

const (
	wordCountAppName  = "wordcount"
	wordCountAppUsage = "<in> [<in>...] <out>"
)

// checkWordCount checks wordcount's arguments.
func checkWordCount(args []string) error {
	if len(args) < 2 {
		return usage(wordCountAppName, wordCountAppUsage, "need at least one input and an output, got %d argument(s)", len(args))
	}
	return nil
}

func runWordCount(ctx context.Context, jc mr.JobClient, args []string) error {
	if err := checkWordCount(args); err != nil {
		return err
	}
	_, err := runJob(ctx, jc, &mr.JobSpec{
		Name:       wordCountJob,
		Def:        wordCountJob,
		Inputs:     append([]string(nil), args[:len(args)-1]...),
		Output:     args[len(args)-1],
		NumReduces: -1,
	})
	return err
}

// isTokenDelim tells whether b is one of the default delimiters of Java's
// StringTokenizer: space, tab, newline, carriage return and form feed.
func isTokenDelim(b byte) bool {
	return b <= ' ' && (b == ' ' || b == '\t' || b == '\n' || b == '\r' || b == '\f')
}

// wordCountMapper emits (word, uvarint 1) for each token of a line, split
// as Java's StringTokenizer splits with its default delimiters. Those are
// ASCII, so splitting UTF-8 bytes gives the same tokens as splitting UTF-16
// chars. It allocates nothing per record.
type wordCountMapper struct {
	one [1]byte
}

func newWordCountMapper() *wordCountMapper { return &wordCountMapper{one: [1]byte{1}} }

// Map tokenizes the line in value.
func (m *wordCountMapper) Map(_ mr.TaskContext, _, value []byte, out mr.Emitter) error {
	one := m.one[:]
	i, n := 0, len(value)
	for i < n {
		for i < n && isTokenDelim(value[i]) {
			i++
		}
		start := i
		i = tokenEnd(value, i)
		if i > start {
			if err := out.Emit(value[start:i], one); err != nil {
				return err
			}
		}
	}
	return nil
}

// tokenEnd returns the index of the first delimiter at or after i in b, or
// len(b). It looks at 8 bytes at a time: delimiters are all at most 0x20,
// and a word's bytes mostly are not.
func tokenEnd(b []byte, i int) int {
	const below, highs = 0x2121212121212121, 0x8080808080808080
	for i+8 <= len(b) {
		x := binary.LittleEndian.Uint64(b[i:])
		// The lowest set high bit of low marks the first byte below 0x21
		// (the borrow may mark bytes past it wrongly, never before).
		low := (x - below) &^ x & highs
		if low == 0 {
			i += 8
			continue
		}
		j := i + bits.TrailingZeros64(low)/8
		if isTokenDelim(b[j]) {
			return j
		}
		i = j + 1 // a control byte that is not a delimiter belongs to the word
	}
	for i < len(b) && !isTokenDelim(b[i]) {
		i++
	}
	return i
}

// decimalSum is a reducer that adds the uvarint counts of each key and
// emits the total in decimal text.
type decimalSum struct {
	what string
	buf  []byte
}

// Reduce emits (key, decimal sum of the values).
func (s *decimalSum) Reduce(_ mr.TaskContext, key []byte, values mr.ValueIterator, out mr.Emitter) error {
	sum, err := sumUvarints(s.what, key, values)
	if err != nil {
		return err
	}
	s.buf = strconv.AppendUint(s.buf[:0], sum, 10)
	return out.Emit(key, s.buf)
}
