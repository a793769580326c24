package spill

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"gomr/mr"
)

// sumUvarints is a combiner summing its uvarint values.
var sumUvarints = mr.ReducerFunc(func(_ mr.TaskContext, key []byte, values mr.ValueIterator, out mr.Emitter) error {
	var sum uint64
	for values.Next() {
		v, n := binary.Uvarint(values.Value())
		if n <= 0 {
			return errors.New("not a uvarint")
		}
		sum += v
	}
	return out.Emit(key, binary.AppendUvarint(nil, sum))
})

// sumDeclared is a combiner that declares itself a uvarint sum.
type sumDeclared struct{ mr.Reducer }

func (sumDeclared) SumsUvarints() {}

func TestCombineTo(t *testing.T) {
	u := func(v uint64) []byte { return binary.AppendUvarint(nil, v) }
	in := [][2][]byte{
		{[]byte("a"), u(1)}, {[]byte("a"), u(2)}, {[]byte("b"), u(5)},
		{[]byte("c"), u(1)}, {[]byte("c"), u(1)}, {[]byte("c"), u(1)},
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	cases := []struct {
		name     string
		ctx      context.Context
		in       [][2][]byte // nil: in
		cmp      mr.Comparator
		combiner mr.Reducer
		want     [][2][]byte // the segment written
		wantIn   int64
		wantErr  string
	}{
		{name: "sum", combiner: sumUvarints, wantIn: 6,
			want: [][2][]byte{{[]byte("a"), u(3)}, {[]byte("b"), u(5)}, {[]byte("c"), u(3)}}},
		{name: "values kept", wantIn: 6, want: in,
			combiner: mr.ReducerFunc(func(_ mr.TaskContext, key []byte, values mr.ValueIterator, out mr.Emitter) error {
				for values.Next() {
					if err := out.Emit(key, values.Value()); err != nil {
						return err
					}
				}
				return nil
			})},
		{name: "a group dropped", wantIn: 6, want: [][2][]byte{{[]byte("a"), u(9)}, {[]byte("c"), u(9)}},
			combiner: mr.ReducerFunc(func(_ mr.TaskContext, key []byte, values mr.ValueIterator, out mr.Emitter) error {
				if string(key) == "b" {
					return nil
				}
				return out.Emit(key, u(9))
			})},
		{name: "wrong key", wantErr: "combiner emitted key",
			combiner: mr.ReducerFunc(func(_ mr.TaskContext, key []byte, values mr.ValueIterator, out mr.Emitter) error {
				return out.Emit([]byte("z"), nil)
			})},
		{name: "combiner error", wantErr: "boom",
			combiner: mr.ReducerFunc(func(mr.TaskContext, []byte, mr.ValueIterator, mr.Emitter) error { return errors.New("boom") })},
		{name: "combiner panic", wantErr: `combiner panicked on key "a"`,
			combiner: mr.ReducerFunc(func(mr.TaskContext, []byte, mr.ValueIterator, mr.Emitter) error { panic("oops") })},
		{name: "cancelled", ctx: cancelled, combiner: sumUvarints, wantErr: "context canceled"},
		{name: "declared sum", combiner: sumDeclared{sumUvarints}, wantIn: 6,
			want: [][2][]byte{{[]byte("a"), u(3)}, {[]byte("b"), u(5)}, {[]byte("c"), u(3)}}},
		{name: "declared sum, a comparator of its own", combiner: sumDeclared{sumUvarints}, wantIn: 6,
			cmp:  func(a, b []byte) int { return bytes.Compare(a, b) },
			want: [][2][]byte{{[]byte("a"), u(3)}, {[]byte("b"), u(5)}, {[]byte("c"), u(3)}}},
		{name: "declared sum, no records", combiner: sumDeclared{sumUvarints}, in: [][2][]byte{}},
		{name: "declared sum, the combiner's own output", wantIn: 6,
			combiner: sumDeclared{mr.ReducerFunc(func(_ mr.TaskContext, key []byte, values mr.ValueIterator, out mr.Emitter) error {
				var sum uint64
				for values.Next() {
					v, _ := binary.Uvarint(values.Value())
					sum += v
				}
				return out.Emit(key, binary.AppendUvarint([]byte{'#'}, sum))
			})},
			want: [][2][]byte{{[]byte("a"), append([]byte{'#'}, u(3)...)}, {[]byte("b"), append([]byte{'#'}, u(5)...)}, {[]byte("c"), append([]byte{'#'}, u(3)...)}}},
		{name: "declared sum, a value not a uvarint", combiner: sumDeclared{sumUvarints},
			in:      [][2][]byte{{[]byte("a"), u(1)}, {[]byte("a"), []byte{0x80}}},
			wantErr: "not a uvarint"},
		{name: "declared sum accepting a value not a uvarint", wantErr: "declares it sums uvarints",
			in: [][2][]byte{{[]byte("a"), u(1)}, {[]byte("b"), []byte{1, 2}}},
			combiner: sumDeclared{mr.ReducerFunc(func(_ mr.TaskContext, key []byte, _ mr.ValueIterator, out mr.Emitter) error {
				return out.Emit(key, nil)
			})}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := tc.ctx
			if ctx == nil {
				ctx = context.Background()
			}
			var buf bytes.Buffer
			sw := NewSegmentWriter(&buf, 16)
			recs := in
			if tc.in != nil {
				recs = tc.in
			}
			gotIn, gotOut, err := CombineTo(ctx, nil, tc.combiner, NewSliceIterator(recs), tc.cmp, sw)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			info, err := sw.Close()
			if err != nil {
				t.Fatal(err)
			}
			if gotIn != tc.wantIn || gotOut != int64(len(tc.want)) || info.Records != gotOut {
				t.Fatalf("read %d, wrote %d (segment %d records), want %d and %d", gotIn, gotOut, info.Records, tc.wantIn, len(tc.want))
			}
			r := NewSegmentReader(bytes.NewReader(buf.Bytes()), info)
			for i := 0; r.Next(); i++ {
				if !bytes.Equal(r.Key(), tc.want[i][0]) || !bytes.Equal(r.Value(), tc.want[i][1]) {
					t.Fatalf("record %d: %q=%v, want %q=%v", i, r.Key(), r.Value(), tc.want[i][0], tc.want[i][1])
				}
			}
			if err := r.Err(); err != nil {
				t.Fatal(err)
			}
		})
	}
}
