package apps

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math/big"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"gomr/mr"
	"gomr/mr/fs"
)

func TestTeraChecksumKnownValue(t *testing.T) {
	// The CRC-32 (IEEE) check value of "123456789" is 0xCBF43926.
	if got := teraChecksum([]byte("123456789")); got != (uint128{lo: 0xcbf43926}) {
		t.Errorf("checksum = %s, want cbf43926", got)
	}
	sum := teraChecksum([]byte("123456789")).add(teraChecksum([]byte("123456789")))
	if sum.String() != "197e8724c" {
		t.Errorf("sum of two = %s, want 197e8724c", sum)
	}
}

// runCheck runs the check job's map, shuffle, reduce and report writer over
// the files in dir, as a one-reduce job would, and returns the report.
func runCheck(t *testing.T, job, dir string) *teraReport {
	t.Helper()
	def, err := mr.LookupJob(job)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	splits, err := def.Input.Splits(mr.SplitContext{Ctx: ctx, Inputs: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	var mapOut []kv
	for i, s := range splits {
		tc := newTC(nil, 1)
		tc.index = i
		m, err := def.Mapper(tc)
		if err != nil {
			t.Fatal(err)
		}
		r, err := def.Input.Open(ctx, s, nil)
		if err != nil {
			t.Fatal(err)
		}
		var c collector
		for r.Next() {
			if err := m.Map(tc, r.Key(), r.Value(), &c); err != nil {
				t.Fatal(err)
			}
		}
		if err := r.Err(); err != nil {
			t.Fatal(err)
		}
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
		mapOut = append(mapOut, c.out...)
	}
	tc := newTC(nil, 1)
	red, err := def.Reducer(tc)
	if err != nil {
		t.Fatal(err)
	}
	redOut := shuffle(t, tc, red, mapOut)
	report := filepath.Join(t.TempDir(), "report")
	w, err := def.Output.Create(fs.Local{}, filepath.Join(report, "part-r-00000"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range redOut {
		if err := w.Write([]byte(p.k), []byte(p.v)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(report, "_SUCCESS"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err := readTeraReport(report)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// checksumOf sums the CRC32 of every 100-byte record with math/big.
func checksumOf(recs []byte) string {
	sum := new(big.Int)
	for i := 0; i < len(recs); i += 100 {
		sum.Add(sum, big.NewInt(int64(crc32.ChecksumIEEE(recs[i:i+100]))))
	}
	return sum.Text(16)
}

// sortedRecords returns n teragen records sorted by key.
func sortedRecords(t *testing.T, n int) []byte {
	recs := generate(t, fmt.Sprint(n), "1")
	idx := make([][]byte, 0, n)
	for i := 0; i < len(recs); i += 100 {
		idx = append(idx, recs[i:i+100])
	}
	sortRecords(idx)
	var out []byte
	for _, r := range idx {
		out = append(out, r...)
	}
	return out
}

func sortRecords(recs [][]byte) {
	for i := 1; i < len(recs); i++ {
		for j := i; j > 0 && string(recs[j][:10]) < string(recs[j-1][:10]); j-- {
			recs[j], recs[j-1] = recs[j-1], recs[j]
		}
	}
}

func writeFiles(t *testing.T, dir string, parts ...[]byte) {
	t.Helper()
	for i, p := range parts {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("part-r-%05d", i)), p, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestTeraValidateOrdered(t *testing.T) {
	recs := sortedRecords(t, 300)
	dir := t.TempDir()
	writeFiles(t, dir, recs[:100*100], recs[100*100:100*100], recs[100*100:250*100], recs[250*100:])
	rep := runCheck(t, teraValidateJob, dir)
	want := &teraReport{records: 300, checksum: checksumOf(recs)}
	if !reflect.DeepEqual(rep, want) {
		t.Errorf("report %+v, want %+v", rep, want)
	}
}

func TestTeraValidateMisorderWithinFile(t *testing.T) {
	recs := sortedRecords(t, 50)
	bad := append([]byte(nil), recs...)
	// swap records 10 and 11 of the second file (records 30 and 31)
	r30, r31 := append([]byte(nil), bad[3000:3100]...), append([]byte(nil), bad[3100:3200]...)
	copy(bad[3000:], r31)
	copy(bad[3100:], r30)
	dir := t.TempDir()
	writeFiles(t, dir, bad[:2000], bad[2000:])
	rep := runCheck(t, teraValidateJob, dir)
	if rep.records != 50 || rep.checksum != checksumOf(recs) {
		t.Errorf("records %d checksum %s, want 50 %s", rep.records, rep.checksum, checksumOf(recs))
	}
	wantErr := fmt.Sprintf("misorder in %s at record 11: key %x is less than the previous key %x",
		filepath.Join(dir, "part-r-00001"), r30[:10], r31[:10])
	if !reflect.DeepEqual(rep.errors, []string{wantErr}) {
		t.Errorf("errors %q, want [%q]", rep.errors, wantErr)
	}
}

func TestTeraValidateMisorderAcrossFiles(t *testing.T) {
	recs := sortedRecords(t, 30)
	dir := t.TempDir()
	// files in name order: [10,20), [0,10), [20,30)
	writeFiles(t, dir, recs[1000:2000], recs[:1000], recs[2000:])
	rep := runCheck(t, teraValidateJob, dir)
	wantErr := fmt.Sprintf("bad key partitioning: last key %x of %s is greater than first key %x of %s",
		recs[1900:1910], filepath.Join(dir, "part-r-00000"), recs[0:10], filepath.Join(dir, "part-r-00001"))
	if rep.records != 30 || !reflect.DeepEqual(rep.errors, []string{wantErr}) {
		t.Errorf("report %+v, want 30 records and error %q", rep, wantErr)
	}
	// terasum over the same files: same count and checksum, no order check.
	sum := runCheck(t, teraSumJob, dir)
	if want := (&teraReport{records: 30, checksum: checksumOf(recs)}); !reflect.DeepEqual(sum, want) {
		t.Errorf("terasum report %+v, want %+v", sum, want)
	}
}

func TestTeraSumUnsortedMatchesValidate(t *testing.T) {
	recs := generate(t, "500", "1") // unsorted, as teragen writes it
	dir := t.TempDir()
	writeFiles(t, dir, recs[:20000], recs[20000:])
	sum := runCheck(t, teraSumJob, dir)
	if sum.records != 500 || sum.checksum != checksumOf(recs) || len(sum.errors) != 0 {
		t.Errorf("terasum report %+v, want 500 records, checksum %s", sum, checksumOf(recs))
	}
	val := runCheck(t, teraValidateJob, dir)
	if val.checksum != sum.checksum || len(val.errors) == 0 {
		t.Errorf("teravalidate of unsorted data: checksum %s (terasum %s), %d errors", val.checksum, sum.checksum, len(val.errors))
	}
}

func TestTeraReportWriterCarries(t *testing.T) {
	p := filepath.Join(t.TempDir(), "r")
	w, err := teraReportOutput{}.Create(fs.Local{}, p)
	if err != nil {
		t.Fatal(err)
	}
	val := func(count, hi, lo uint64) []byte {
		b := binary.BigEndian.AppendUint64(nil, count)
		b = binary.BigEndian.AppendUint64(b, hi)
		return binary.BigEndian.AppendUint64(b, lo)
	}
	for _, v := range [][]byte{val(2, 0, ^uint64(0)), val(3, 0, 1), val(1, 1, 0)} {
		if err := w.Write([]byte("sum"), v); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Write([]byte("error"), []byte("x y")); err != nil {
		t.Fatal(err)
	}
	if err := w.Write([]byte("bogus"), nil); err == nil {
		t.Error("unknown key: no error")
	}
	if err := w.Write([]byte("sum"), []byte{1}); err == nil {
		t.Error("short sum: no error")
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(p)
	if want := "error\tx y\nrecords\t6\nchecksum\t20000000000000000\n"; string(got) != want {
		t.Errorf("report %q, want %q", got, want)
	}
	if w.BytesWritten() != int64(len(got)) {
		t.Errorf("BytesWritten %d, file has %d", w.BytesWritten(), len(got))
	}
}

func TestTeraValidateDriver(t *testing.T) {
	for _, tt := range []struct {
		name, report, wantErr string
	}{
		{"clean", "records\t10\nchecksum\tabc\n", ""},
		{"misorder", "error\tmisorder in f at record 3: k\nerror\tsecond\nrecords\t10\nchecksum\tabc\n", "2 error(s) in report"},
		{"no records", "checksum\tabc\n", "no part file with a records line"},
		{"garbage", "records 10\n", "has no tab"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "report")
			jc := &fakeClient{run: func(spec *mr.JobSpec) error {
				if err := os.MkdirAll(spec.Output, 0o755); err != nil {
					return err
				}
				return os.WriteFile(filepath.Join(spec.Output, "part-r-00000"), []byte(tt.report), 0o644)
			}}
			err := runApp(t, "teravalidate", jc, "in", out)
			want := &mr.JobSpec{Name: teraValidateJob, Def: teraValidateJob, Inputs: []string{"in"}, Output: out, NumReduces: 1}
			if len(jc.specs) != 1 || !reflect.DeepEqual(jc.specs[0], want) {
				t.Errorf("specs %+v, want [%+v]", jc.specs, want)
			}
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("error %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("error %v, want one containing %q", err, tt.wantErr)
			}
			if tt.name == "misorder" && !strings.Contains(err.Error(), "first: misorder in f at record 3") {
				t.Errorf("error %v does not name the first misorder", err)
			}
		})
	}
	var ue *mr.UsageError
	if err := runApp(t, "teravalidate", &fakeClient{}, "in"); !errors.As(err, &ue) {
		t.Errorf("one argument: %v", err)
	}
	if err := runApp(t, "terasum", &fakeClient{}, "in"); !errors.As(err, &ue) {
		t.Errorf("terasum one argument: %v", err)
	}
}

func TestTerasumDriver(t *testing.T) {
	out := filepath.Join(t.TempDir(), "sum")
	jc := &fakeClient{run: func(spec *mr.JobSpec) error {
		if err := os.MkdirAll(spec.Output, 0o755); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(spec.Output, "part-r-00000"), []byte("records\t1\nchecksum\t5\n"), 0o644)
	}}
	if err := runApp(t, "terasum", jc, "in", out); err != nil {
		t.Fatal(err)
	}
	want := &mr.JobSpec{Name: teraSumJob, Def: teraSumJob, Inputs: []string{"in"}, Output: out, NumReduces: 1}
	if !reflect.DeepEqual(jc.specs, []*mr.JobSpec{want}) {
		t.Errorf("specs %+v, want [%+v]", jc.specs, want)
	}
}

// listReader yields fixed records, then fails if err is set.
type listReader struct {
	recs []string
	i    int
	err  error
}

func (l *listReader) Next() bool {
	if l.i >= len(l.recs) {
		return false
	}
	l.i++
	return true
}
func (l *listReader) Key() []byte       { return []byte(l.recs[l.i-1][:1]) }
func (l *listReader) Value() []byte     { return []byte(l.recs[l.i-1][1:]) }
func (l *listReader) Err() error        { return l.err }
func (l *listReader) Progress() float64 { return 0 }
func (l *listReader) BytesRead() int64  { return 0 }
func (l *listReader) Close() error      { return nil }

type listInput struct{ r *listReader }

func (li listInput) Splits(mr.SplitContext) ([]mr.Split, error) { return nil, nil }
func (li listInput) Open(context.Context, mr.Split, map[string]string) (mr.RecordReader, error) {
	return li.r, nil
}

func TestLastRecordReader(t *testing.T) {
	read := func(inner *listReader) ([]kv, error) {
		r, err := lastRecordInput{inner: listInput{inner}}.Open(context.Background(), mr.Split{Path: "/p"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		var got []kv
		for r.Next() {
			got = append(got, kv{string(r.Key()), string(r.Value())})
		}
		return got, r.Err()
	}
	got, err := read(&listReader{recs: []string{"ab", "cd", "ef"}})
	if want := []kv{{"ab", "\x00/p"}, {"cd", "\x00/p"}, {"ef", "\x01/p"}}; err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("records %q, %v; want %q", got, err, want)
	}
	if got, err := read(&listReader{}); err != nil || len(got) != 0 {
		t.Errorf("empty split: %q, %v", got, err)
	}
	boom := errors.New("disk on fire")
	got, err = read(&listReader{recs: []string{"ab", "cd"}, err: boom})
	// "cd" is never handed out as a last record, since what follows it is an error.
	if want := []kv{{"ab", "\x00/p"}}; !errors.Is(err, boom) || !reflect.DeepEqual(got, want) {
		t.Errorf("failing split: %q, %v; want %q and the error", got, err, want)
	}
}
