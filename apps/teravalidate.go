package apps

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"path"
	"strconv"
	"strings"

	"gomr/mr"
	"gomr/mr/fs"
)

const (
	teraValidateJob = "teravalidate"
	teraSumJob      = "terasum"
)

func init() {
	mr.RegisterJob(&mr.JobDef{
		Name:   teraValidateJob,
		Input:  lastRecordInput{inner: teraInput(true)},
		Output: teraReportOutput{},
		Mapper: func(mr.TaskContext) (mr.Mapper, error) {
			return &teraCheckMapper{checkOrder: true}, nil
		},
		Reducer: func(mr.TaskContext) (mr.Reducer, error) {
			return &teraCheckReducer{checkOrder: true}, nil
		},
	})
	mr.RegisterJob(&mr.JobDef{
		Name:   teraSumJob,
		Input:  lastRecordInput{inner: teraInput(false)},
		Output: teraReportOutput{},
		Mapper: func(mr.TaskContext) (mr.Mapper, error) {
			return &teraCheckMapper{}, nil
		},
		Reducer: func(mr.TaskContext) (mr.Reducer, error) {
			return &teraCheckReducer{}, nil
		},
	})
	mr.RegisterApp(&mr.App{
		Name:        teraValidateAppName,
		Usage:       teraValidateAppUsage,
		Description: "Check that GraySort records are sorted within and across files; report their count and checksum.",
		Run:         runTeraValidate,
		Check:       argCount(teraValidateAppName, teraValidateAppUsage, 2),
	})
	mr.RegisterApp(&mr.App{
		Name:        teraSumAppName,
		Usage:       teraSumAppUsage,
		Description: "Count GraySort records and sum their checksum, without checking their order.",
		Run:         runTeraSum,
		Check:       argCount(teraSumAppName, teraSumAppUsage, 2),
	})
}

const (
	teraValidateAppName  = "teravalidate"
	teraValidateAppUsage = "<in> <report>"
)

const (
	teraSumAppName  = "terasum"
	teraSumAppUsage = "<in> <out>"
)

func runTeraValidate(ctx context.Context, jc mr.JobClient, args []string) error {
	if len(args) != 2 {
		return usage(teraValidateAppName, teraValidateAppUsage, "need 2 arguments, got %d", len(args))
	}
	rep, err := runTeraCheck(ctx, jc, teraValidateJob, args[0], args[1])
	if err != nil {
		return err
	}
	if len(rep.errors) > 0 {
		return fmt.Errorf("teravalidate: %s is not sorted (%d error(s) in report %s); first: %s",
			args[0], len(rep.errors), args[1], rep.errors[0])
	}
	return nil
}

func runTeraSum(ctx context.Context, jc mr.JobClient, args []string) error {
	if len(args) != 2 {
		return usage(teraSumAppName, teraSumAppUsage, "need 2 arguments, got %d", len(args))
	}
	_, err := runTeraCheck(ctx, jc, teraSumJob, args[0], args[1])
	return err
}

// runTeraCheck runs the teravalidate or terasum job (one reduce) and reads
// back its report.
func runTeraCheck(ctx context.Context, jc mr.JobClient, job, in, out string) (*teraReport, error) {
	if _, err := runJob(ctx, jc, &mr.JobSpec{
		Name:       job,
		Def:        job,
		Inputs:     []string{in},
		Output:     out,
		NumReduces: 1,
	}); err != nil {
		return nil, err
	}
	rep, err := readTeraReport(out)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", job, err)
	}
	slog.Info(job+" report", "input", in, "records", rep.records, "checksum", rep.checksum, "errors", len(rep.errors))
	return rep, nil
}

// teraChecksum is the CRC32 (IEEE) of one record, the term Hadoop's
// TeraValidate and TeraChecksum add up in 128 bits.
func teraChecksum(rec []byte) uint128 { return uint128{lo: uint64(crc32.ChecksumIEEE(rec))} }

// Map output of the check jobs. Keys starting with keyError carry one
// misorder inside a file (key: path, 0x00, record index; value: message);
// keys starting with keySummary carry the summary of one split (key: path;
// value: summary).
const (
	keyError   = 'E'
	keySummary = 'F'
)

// fileSummary is what a map learns of its split: first and last keys,
// record count and checksum. Encoded as first (10 bytes), last (10 bytes),
// count (8 bytes big-endian), checksum (16 bytes big-endian).
type fileSummary struct {
	first, last [teraKeyLen]byte
	count       uint64
	sum         uint128
}

const fileSummaryLen = 2*teraKeyLen + 8 + 16

func (s *fileSummary) appendTo(b []byte) []byte {
	b = append(b, s.first[:]...)
	b = append(b, s.last[:]...)
	b = binary.BigEndian.AppendUint64(b, s.count)
	b = binary.BigEndian.AppendUint64(b, s.sum.hi)
	return binary.BigEndian.AppendUint64(b, s.sum.lo)
}

func (s *fileSummary) decode(b []byte) error {
	if len(b) != fileSummaryLen {
		return fmt.Errorf("file summary %x has %d bytes, want %d", b, len(b), fileSummaryLen)
	}
	copy(s.first[:], b)
	copy(s.last[:], b[teraKeyLen:])
	b = b[2*teraKeyLen:]
	s.count = binary.BigEndian.Uint64(b)
	s.sum = uint128{hi: binary.BigEndian.Uint64(b[8:]), lo: binary.BigEndian.Uint64(b[16:])}
	return nil
}

// lastRecordInput wraps a fixed-length record input so that the mapper,
// which has no end-of-input hook, learns which file a record comes from and
// when it sees the last record of its split. It reads one record ahead and
// yields key = the whole record (inner key then inner value) and value = a
// flag byte (1 on the split's last record, else 0) followed by the split's
// path.
type lastRecordInput struct{ inner mr.InputFormat }

// Splits returns the inner format's splits.
func (f lastRecordInput) Splits(sc mr.SplitContext) ([]mr.Split, error) { return f.inner.Splits(sc) }

// Open opens the inner reader and reads its first record.
func (f lastRecordInput) Open(ctx context.Context, split mr.Split, params map[string]string) (mr.RecordReader, error) {
	r, err := f.inner.Open(ctx, split, params)
	if err != nil {
		return nil, err
	}
	lr := &lastRecordReader{r: r, value: append([]byte{0}, split.Path...)}
	lr.fetch()
	return lr, nil
}

type lastRecordReader struct {
	r         mr.RecordReader
	cur, next []byte
	hasNext   bool
	value     []byte
	err       error
}

// fetch reads the record after the current one into next.
func (l *lastRecordReader) fetch() {
	if l.r.Next() {
		l.next = append(append(l.next[:0], l.r.Key()...), l.r.Value()...)
		l.hasNext = true
		return
	}
	l.hasNext = false
	l.err = l.r.Err()
}

func (l *lastRecordReader) Next() bool {
	if !l.hasNext || l.err != nil {
		return false
	}
	l.cur, l.next = l.next, l.cur
	l.fetch()
	if l.err != nil {
		return false
	}
	l.value[0] = 0
	if !l.hasNext {
		l.value[0] = 1
	}
	return true
}

func (l *lastRecordReader) Key() []byte       { return l.cur }
func (l *lastRecordReader) Value() []byte     { return l.value }
func (l *lastRecordReader) Err() error        { return l.err }
func (l *lastRecordReader) Progress() float64 { return l.r.Progress() }
func (l *lastRecordReader) BytesRead() int64  { return l.r.BytesRead() }
func (l *lastRecordReader) Close() error      { return l.r.Close() }

// teraCheckMapper counts and checksums the records of its split and, if
// checkOrder is set, reports every record whose key is less than the key
// before it. On the split's last record it emits the split's summary.
type teraCheckMapper struct {
	checkOrder bool
	started    bool
	path       string
	last       [teraKeyLen]byte
	sum        fileSummary
	buf, msg   []byte
}

// Map checks one record (see lastRecordInput for the key and value).
func (m *teraCheckMapper) Map(_ mr.TaskContext, key, value []byte, out mr.Emitter) error {
	if len(key) < teraKeyLen {
		return fmt.Errorf("record %x is shorter than a %d-byte key", key, teraKeyLen)
	}
	if len(value) < 1 {
		return errors.New("record comes without its file (the input format must be lastRecordInput)")
	}
	k := key[:teraKeyLen]
	if !m.started {
		m.started = true
		m.path = string(value[1:])
		m.sum = fileSummary{}
		copy(m.sum.first[:], k)
	} else if m.checkOrder && bytes.Compare(k, m.last[:]) < 0 {
		m.buf = append(append(m.buf[:0], keyError), m.path...)
		m.buf = append(m.buf, 0)
		m.buf = binary.BigEndian.AppendUint64(m.buf, m.sum.count)
		m.msg = fmt.Appendf(m.msg[:0], "misorder in %s at record %d: key %x is less than the previous key %x",
			m.path, m.sum.count, k, m.last[:])
		if err := out.Emit(m.buf, m.msg); err != nil {
			return err
		}
	}
	copy(m.last[:], k)
	m.sum.count++
	m.sum.sum = m.sum.sum.add(teraChecksum(key))
	if value[0] == 1 {
		m.sum.last = m.last
		m.buf = append(append(m.buf[:0], keySummary), m.path...)
		m.msg = m.sum.appendTo(m.msg[:0])
		m.started = false
		return out.Emit(m.buf, m.msg)
	}
	return nil
}

// teraCheckReducer is the single reduce of the check jobs. It passes the
// in-file misorders on as ("error", message), checks (if checkOrder is set)
// that each file's first key is not less than the previous file's last
// key, files taken in path order, and passes each summary on as
// ("sum", count and checksum) for teraReportOutput to total.
type teraCheckReducer struct {
	checkOrder bool
	havePrev   bool
	prevPath   string
	prevLast   [teraKeyLen]byte
	buf        []byte
}

// Keys of the records the check reducer hands teraReportOutput.
const (
	reportError = "error"
	reportSum   = "sum"
)

// Reduce handles one error or summary key.
func (r *teraCheckReducer) Reduce(_ mr.TaskContext, key []byte, values mr.ValueIterator, out mr.Emitter) error {
	if len(key) == 0 {
		return errors.New("empty map output key")
	}
	switch key[0] {
	case keyError:
		for values.Next() {
			if err := out.Emit([]byte(reportError), values.Value()); err != nil {
				return err
			}
		}
	case keySummary:
		file := string(key[1:])
		for values.Next() {
			var s fileSummary
			if err := s.decode(values.Value()); err != nil {
				return fmt.Errorf("file %s: %w", file, err)
			}
			if r.checkOrder {
				if r.havePrev && bytes.Compare(r.prevLast[:], s.first[:]) > 0 {
					r.buf = fmt.Appendf(r.buf[:0], "bad key partitioning: last key %x of %s is greater than first key %x of %s",
						r.prevLast[:], r.prevPath, s.first[:], file)
					if err := out.Emit([]byte(reportError), r.buf); err != nil {
						return err
					}
				}
				r.havePrev, r.prevPath, r.prevLast = true, file, s.last
			}
			r.buf = binary.BigEndian.AppendUint64(r.buf[:0], s.count)
			r.buf = binary.BigEndian.AppendUint64(r.buf, s.sum.hi)
			r.buf = binary.BigEndian.AppendUint64(r.buf, s.sum.lo)
			if err := out.Emit([]byte(reportSum), r.buf); err != nil {
				return err
			}
		}
	default:
		return fmt.Errorf("unexpected map output key %q", key)
	}
	return nil
}

// teraReportOutput writes the report of the check jobs: one
// "error<TAB>message" line per error as it comes, then, when the writer is
// closed, "records<TAB>N" and "checksum<TAB>H" (H in hex, as Hadoop prints
// an Unsigned16) totalled over the "sum" records.
type teraReportOutput struct{}

// Create opens the report file.
func (teraReportOutput) Create(fsys fs.FS, p string) (mr.RecordWriter, error) {
	w, err := fsys.Create(p)
	if err != nil {
		return nil, fmt.Errorf("creating report %s: %w", p, err)
	}
	return &teraReportWriter{path: p, f: w, w: bufio.NewWriter(w)}, nil
}

type teraReportWriter struct {
	path    string
	f       io.WriteCloser
	w       *bufio.Writer
	n       int64
	records uint64
	sum     uint128
}

func (t *teraReportWriter) line(parts ...[]byte) error {
	for i, p := range parts {
		if i > 0 {
			if err := t.w.WriteByte('\t'); err != nil {
				return err
			}
		}
		if _, err := t.w.Write(p); err != nil {
			return err
		}
		t.n += int64(len(p)) + 1
	}
	return t.w.WriteByte('\n')
}

func (t *teraReportWriter) Write(key, value []byte) error {
	switch {
	case string(key) == reportError:
		if err := t.line([]byte(reportError), value); err != nil {
			return fmt.Errorf("writing report %s: %w", t.path, err)
		}
	case string(key) == reportSum:
		if len(value) != 24 {
			return fmt.Errorf("report %s: sum record %x is not 24 bytes", t.path, value)
		}
		t.records += binary.BigEndian.Uint64(value)
		t.sum = t.sum.add(uint128{hi: binary.BigEndian.Uint64(value[8:]), lo: binary.BigEndian.Uint64(value[16:])})
	default:
		return fmt.Errorf("report %s: unexpected record key %q", t.path, key)
	}
	return nil
}

func (t *teraReportWriter) BytesWritten() int64 { return t.n }

func (t *teraReportWriter) Close() error {
	err := t.line([]byte("records"), []byte(strconv.FormatUint(t.records, 10)))
	if err == nil {
		err = t.line([]byte("checksum"), []byte(t.sum.String()))
	}
	if err == nil {
		err = t.w.Flush()
	}
	if cerr := t.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing report %s: %w", t.path, err)
	}
	return nil
}

// teraReport is a check job's report as read back by the driver.
type teraReport struct {
	records  uint64
	checksum string
	errors   []string
}

// readTeraReport reads the part files of a report directory.
func readTeraReport(dir string) (*teraReport, error) {
	fsys, err := fs.Resolve(dir)
	if err != nil {
		return nil, fmt.Errorf("report %s: %w", dir, err)
	}
	entries, err := fsys.List(dir)
	if err != nil {
		return nil, fmt.Errorf("listing report %s: %w", dir, err)
	}
	rep := &teraReport{}
	seen := false
	for _, e := range entries {
		if e.IsDir || !strings.HasPrefix(path.Base(e.Path), "part-") {
			continue
		}
		found, err := readTeraReportFile(fsys, e.Path, rep)
		if err != nil {
			return nil, err
		}
		seen = seen || found
	}
	if !seen {
		return nil, fmt.Errorf("report %s has no part file with a records line", dir)
	}
	return rep, nil
}

// readTeraReportFile adds one report file's lines to rep; it tells whether
// the file had a records line.
func readTeraReportFile(fsys fs.FS, p string, rep *teraReport) (found bool, err error) {
	f, err := fsys.Open(p)
	if err != nil {
		return false, fmt.Errorf("opening report %s: %w", p, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	for line := 1; sc.Scan(); line++ {
		name, val, ok := strings.Cut(sc.Text(), "\t")
		if !ok {
			return false, fmt.Errorf("report %s line %d: %q has no tab", p, line, sc.Text())
		}
		switch name {
		case "error":
			rep.errors = append(rep.errors, val)
		case "records":
			n, err := strconv.ParseUint(val, 10, 64)
			if err != nil {
				return false, fmt.Errorf("report %s line %d: bad record count %q: %w", p, line, val, err)
			}
			rep.records += n
			found = true
		case "checksum":
			rep.checksum = val
		default:
			return false, fmt.Errorf("report %s line %d: unknown entry %q", p, line, name)
		}
	}
	if err := sc.Err(); err != nil {
		return false, fmt.Errorf("reading report %s: %w", p, err)
	}
	return found, nil
}
