package apps

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"gomr/mr"
)

const (
	grepSearchJob = "grep-search"
	grepSortJob   = "grep-sort"
)

func init() {
	mr.RegisterJob(&mr.JobDef{
		Name:   grepSearchJob,
		Input:  mr.TextInput{},
		Output: mr.SequenceOutput{},
		Mapper: newGrepMapper,
		Combiner: func(mr.TaskContext) (mr.Reducer, error) {
			return &uvarintSum{what: grepSearchJob}, nil
		},
		Reducer: func(mr.TaskContext) (mr.Reducer, error) {
			return &uvarintSum{what: grepSearchJob}, nil
		},
	})
	mr.RegisterJob(&mr.JobDef{
		Name:   grepSortJob,
		Input:  mr.SequenceInput{},
		Output: mr.TextOutput{},
		Mapper: func(mr.TaskContext) (mr.Mapper, error) {
			return &grepSortMapper{}, nil
		},
		Reducer: func(mr.TaskContext) (mr.Reducer, error) {
			return &grepSortReducer{}, nil
		},
	})
	mr.RegisterApp(&mr.App{
		Name:        grepAppName,
		Usage:       grepAppUsage,
		Description: "A map/reduce program that counts the matches of a regex in the input.",
		Run:         runGrep,
		Check:       checkGrep,
	})
}

const (
	grepAppName  = "grep"
	grepAppUsage = "<in> <out> <regex> [<group>]"
)

// compileGrep checks the regular expression and group arguments.
func compileGrep(expr, group string) (*regexp.Regexp, int, error) {
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, 0, fmt.Errorf("bad regular expression %q: %w", expr, err)
	}
	g := 0
	if group != "" {
		g, err = strconv.Atoi(group)
		if err != nil || g < 0 {
			return nil, 0, fmt.Errorf("bad group %q: want a non-negative integer", group)
		}
		if g > re.NumSubexp() {
			return nil, 0, fmt.Errorf("group %d out of range: regular expression %q has %d group(s)", g, expr, re.NumSubexp())
		}
	}
	return re, g, nil
}

// checkGrep checks grep's arguments.
func checkGrep(args []string) error {
	if len(args) != 3 && len(args) != 4 {
		return usage(grepAppName, grepAppUsage, "need 3 or 4 arguments, got %d", len(args))
	}
	group := ""
	if len(args) == 4 {
		group = args[3]
	}
	if _, _, err := compileGrep(args[2], group); err != nil {
		return usage(grepAppName, grepAppUsage, "%v", err)
	}
	return nil
}

func runGrep(ctx context.Context, jc mr.JobClient, args []string) error {
	if err := checkGrep(args); err != nil {
		return err
	}
	in, out, expr := args[0], args[1], args[2]
	group := ""
	if len(args) == 4 {
		group = args[3]
	}
	if group == "" {
		group = "0"
	}
	tmp := siblingPath(out, ".grep-temp-")
	defer removeTemp(grepAppName, tmp)

	if _, err := runJob(ctx, jc, &mr.JobSpec{
		Name:       grepSearchJob,
		Def:        grepSearchJob,
		Params:     map[string]string{"regex": expr, "group": group},
		Inputs:     strings.Split(in, ","),
		Output:     tmp,
		NumReduces: -1,
	}); err != nil {
		return err
	}
	_, err := runJob(ctx, jc, &mr.JobSpec{
		Name:       grepSortJob,
		Def:        grepSortJob,
		Inputs:     []string{tmp},
		Output:     out,
		NumReduces: 1,
	})
	return err
}

// grepMapper emits (match, uvarint 1) for every match of the regular
// expression (or of its chosen group) in a line, as Hadoop's RegexMapper.
type grepMapper struct {
	re    *regexp.Regexp
	group int
	one   [1]byte
}

func newGrepMapper(tc mr.TaskContext) (mr.Mapper, error) {
	re, g, err := compileGrep(tc.Param("regex"), tc.Param("group"))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", grepSearchJob, err)
	}
	return &grepMapper{re: re, group: g, one: [1]byte{1}}, nil
}

// Map emits the matches of one line.
func (m *grepMapper) Map(_ mr.TaskContext, _, value []byte, out mr.Emitter) error {
	if m.group == 0 {
		for _, loc := range m.re.FindAllIndex(value, -1) {
			if err := out.Emit(value[loc[0]:loc[1]], m.one[:]); err != nil {
				return err
			}
		}
		return nil
	}
	for _, loc := range m.re.FindAllSubmatchIndex(value, -1) {
		s, e := loc[2*m.group], loc[2*m.group+1]
		if s < 0 {
			continue // the group took no part in this match
		}
		if err := out.Emit(value[s:e], m.one[:]); err != nil {
			return err
		}
	}
	return nil
}

// grepSortKey builds the sort key of a (match, count) pair: the big-endian
// complement of the count, so that higher counts sort first, followed by
// the match, which orders ties by match bytes.
func grepSortKey(dst []byte, count uint64, match []byte) []byte {
	dst = binary.BigEndian.AppendUint64(dst[:0], math.MaxUint64-count)
	return append(dst, match...)
}

// grepSortMapper inverts grep-search's (match, count) output into keys that
// sort by count descending, then match ascending.
type grepSortMapper struct{ buf []byte }

// Map emits (grepSortKey(count, match), empty).
func (m *grepSortMapper) Map(_ mr.TaskContext, key, value []byte, out mr.Emitter) error {
	count, n := binary.Uvarint(value)
	if n <= 0 || n != len(value) {
		return fmt.Errorf("%s: match %q: value %x is not a uvarint count", grepSortJob, key, value)
	}
	m.buf = grepSortKey(m.buf, count, key)
	return out.Emit(m.buf, nil)
}

// grepSortReducer writes each sort key back as (decimal count, match).
type grepSortReducer struct{ buf []byte }

// Reduce emits one (count, match) line per value of the group.
func (r *grepSortReducer) Reduce(_ mr.TaskContext, key []byte, values mr.ValueIterator, out mr.Emitter) error {
	if len(key) < 8 {
		return fmt.Errorf("%s: sort key %x is shorter than 8 bytes", grepSortJob, key)
	}
	count := math.MaxUint64 - binary.BigEndian.Uint64(key)
	r.buf = strconv.AppendUint(r.buf[:0], count, 10)
	for values.Next() {
		if err := out.Emit(r.buf, key[8:]); err != nil {
			return err
		}
	}
	return nil
}
