package apps

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"strings"

	"gomr/mr"
)

const teraGenJob = "teragen"

func init() {
	mr.RegisterJob(&mr.JobDef{
		Name:   teraGenJob,
		Input:  RowRangeInput{},
		Output: mr.RawOutput{},
		Mapper: func(mr.TaskContext) (mr.Mapper, error) {
			return &teraGenMapper{}, nil
		},
	})
	mr.RegisterApp(&mr.App{
		Name:        teraGenAppName,
		Usage:       teraGenAppUsage,
		Description: "Generate rows of 100-byte GraySort records (rows may end in k, m, b or t).",
		Run:         runTeraGen,
		Check:       func(args []string) error { _, err := teraGenArgs(args); return err },
	})
}

const (
	teraGenAppName  = "teragen"
	teraGenAppUsage = "<rows> <out>"
)

// defaultMaps is Hadoop's mapreduce.job.maps default.
const defaultMaps = 2

// parseHumanRows parses a row count with an optional decimal suffix k, m, b
// or t (thousand, million, billion, trillion), as Hadoop's TeraGen does.
func parseHumanRows(s string) (int64, error) {
	base := int64(1)
	num := s
	if s != "" {
		switch s[len(s)-1] {
		case 'k':
			base = 1e3
		case 'm':
			base = 1e6
		case 'b':
			base = 1e9
		case 't':
			base = 1e12
		}
		if base != 1 {
			num = s[:len(s)-1]
		}
	}
	n, err := strconv.ParseInt(strings.TrimSpace(num), 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("row count %q is not a non-negative integer (with an optional k, m, b or t suffix)", s)
	}
	if n > math.MaxInt64/base {
		return 0, fmt.Errorf("row count %q is too large", s)
	}
	return n * base, nil
}

// teraGenArgs checks teragen's arguments and returns its row count.
func teraGenArgs(args []string) (int64, error) {
	if len(args) != 2 {
		return 0, usage(teraGenAppName, teraGenAppUsage, "need 2 arguments, got %d", len(args))
	}
	rows, err := parseHumanRows(args[0])
	if err != nil {
		return 0, usage(teraGenAppName, teraGenAppUsage, "%v", err)
	}
	return rows, nil
}

func runTeraGen(ctx context.Context, jc mr.JobClient, args []string) error {
	rows, err := teraGenArgs(args)
	if err != nil {
		return err
	}
	maps, err := confInt(jc.Conf, "mapreduce.job.maps", defaultMaps)
	if err != nil {
		return fmt.Errorf("teragen: %w", err)
	}
	if maps < 1 {
		return fmt.Errorf("teragen: configuration mapreduce.job.maps=%d must be at least 1", maps)
	}
	_, err = runJob(ctx, jc, &mr.JobSpec{
		Name: teraGenJob,
		Def:  teraGenJob,
		Params: map[string]string{
			"rows": strconv.FormatInt(rows, 10),
			"maps": strconv.FormatInt(maps, 10),
		},
		Output:     args[1],
		NumReduces: 0,
	})
	return err
}

// teraGenMapper turns row ids (from RowRangeInput) into GraySort records:
// key = the 10-byte key, value = the other 90 bytes. The generator state
// is skipped ahead to the first row of the split and then stepped once per
// row, so the output depends only on the row ids, not on the number of
// maps.
type teraGenMapper struct {
	started bool
	next    uint64 // the row the generator state is positioned before
	rnd     uint128
	rec     [teraRecordLen]byte
}

// Map generates the record of one row.
func (m *teraGenMapper) Map(_ mr.TaskContext, key, _ []byte, out mr.Emitter) error {
	if len(key) != 8 {
		return fmt.Errorf("%s: row key %x is not 8 bytes", teraGenJob, key)
	}
	row := binary.BigEndian.Uint64(key)
	if !m.started || row != m.next {
		m.rnd = random16Skip(row)
		m.started = true
	}
	m.rnd = random16Next(m.rnd)
	genSortRecord(&m.rec, m.rnd, uint128{lo: row})
	m.next = row + 1
	return out.Emit(m.rec[:teraKeyLen], m.rec[teraKeyLen:])
}
