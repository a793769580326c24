package spill

import (
	"bytes"
	"maps"
	"slices"
	"testing"

	"gomr/mr"
)

// TestBufferCutMatchesSplitRuns checks the property map splitting rests
// on (docs/split.md): a run that cuts at recorded points writes, spill for
// spill, the bytes of the runs that were split there (each piece a fresh
// Buffer numbering its spills from where the previous one stopped, ended
// by CloseSplit but for the last).
func TestBufferCutMatchesSplitRuns(t *testing.T) {
	datasets := []struct {
		name string
		kvs  [][2][]byte
	}{{"distinct keys", genKVs(20000, 10, 30, 5)}, {"256 keys", genKVs(20000, 1, 30, 7)}}
	concat := mr.ReducerFunc(func(tc mr.TaskContext, key []byte, values mr.ValueIterator, out mr.Emitter) error {
		var all []byte
		for values.Next() {
			all = append(all, values.Value()...)
		}
		return out.Emit(key, all)
	})
	combiners := []struct {
		name string
		c    mr.Reducer
		pct  float64 // Options.TablePercent
	}{{"none", nil, 0}, {"concat", concat, 0}, {"concat, table bounded", concat, 0.1}}
	cutLists := []struct {
		name string
		cuts []int // record indexes the runs are split before
	}{
		{"one early", []int{1}},
		{"one in the middle", []int{9000}},
		{"several", []int{3, 4000, 4001, 15000, 19999}},
		{"at the end", []int{20000}},
	}
	for _, ds := range datasets {
		for _, cb := range combiners {
			for _, cl := range cutLists {
				kvs := ds.kvs
				t.Run(ds.name+"/"+cb.name+"/"+cl.name, func(t *testing.T) {
					opts := Options{BufferBytes: 200 << 10, SpillPercent: 0.5, NumPartitions: 3, BlockSize: 8192, Combiner: cb.c, TablePercent: cb.pct}
					whole, wholeSpills := runWithCuts(t, opts, kvs, cl.cuts)
					pieces := map[string][]byte{}
					var pieceSpills []SpillInfo
					bounds := append(append([]int{0}, cl.cuts...), len(kvs))
					next := 0
					for i := 0; i+1 < len(bounds); i++ {
						o := opts
						o.FirstIndex = next
						var got []SpillInfo
						o.OnSpill = func(info SpillInfo) error { got = append(got, info); return nil }
						b, _ := newTestBuffer(t, o)
						for _, r := range kvs[bounds[i]:bounds[i+1]] {
							if err := b.Emit(r[0], r[1]); err != nil {
								t.Fatal(err)
							}
						}
						last := i+2 == len(bounds)
						var err error
						if last {
							err = b.Close()
						} else {
							err = b.CloseSplit()
						}
						if err != nil {
							t.Fatal(err)
						}
						if len(got) == 0 || got[0].Index != next {
							t.Fatalf("piece %d: spills %v, want the first numbered %d", i, indexes(got), next)
						}
						next = got[len(got)-1].Index + 1
						if b.NextIndex() != next {
							t.Fatalf("piece %d: NextIndex %d, want %d", i, b.NextIndex(), next)
						}
						pieceSpills = append(pieceSpills, got...)
						maps.Copy(pieces, dirContents(t, b.opts.Dir))
					}
					if !slices.Equal(indexes(wholeSpills), indexes(pieceSpills)) {
						t.Fatalf("spills %v in the run with cuts, %v in the pieces", indexes(wholeSpills), indexes(pieceSpills))
					}
					for i := range wholeSpills {
						if wholeSpills[i].Final != pieceSpills[i].Final || wholeSpills[i].Final != (i == len(wholeSpills)-1) {
							t.Fatalf("spill %d: final %v in the run with cuts, %v in the pieces", i, wholeSpills[i].Final, pieceSpills[i].Final)
						}
					}
					if len(whole) != len(pieces) {
						t.Fatalf("%d files in the run with cuts, %d in the pieces", len(whole), len(pieces))
					}
					for name, data := range whole {
						if !bytes.Equal(data, pieces[name]) {
							t.Fatalf("file %s differs between the run with cuts and the pieces", name)
						}
					}
				})
			}
		}
	}
}

// runWithCuts emits kvs into one Buffer, cutting before each record index
// of cuts, and returns its spill files and spills.
func runWithCuts(t *testing.T, opts Options, kvs [][2][]byte, cuts []int) (map[string][]byte, []SpillInfo) {
	t.Helper()
	var got []SpillInfo
	opts.OnSpill = func(info SpillInfo) error { got = append(got, info); return nil }
	b, _ := newTestBuffer(t, opts)
	c := 0
	for i, r := range kvs {
		for c < len(cuts) && cuts[c] == i {
			if err := b.Cut(); err != nil {
				t.Fatal(err)
			}
			c++
		}
		if err := b.Emit(r[0], r[1]); err != nil {
			t.Fatal(err)
		}
	}
	for ; c < len(cuts); c++ {
		if err := b.Cut(); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	return dirContents(t, b.opts.Dir), got
}

func indexes(spills []SpillInfo) []int {
	out := make([]int, len(spills))
	for i, s := range spills {
		out[i] = s.Index
	}
	return out
}

func TestBufferCutErrors(t *testing.T) {
	b, _ := newTestBuffer(t, Options{BufferBytes: 1 << 20, SpillPercent: 0.8, NumPartitions: 1})
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.Cut(); err == nil {
		t.Fatal("Cut on a closed buffer succeeded")
	}
	if _, err := NewBuffer(Options{BufferBytes: 1 << 20, SpillPercent: 0.8, NumPartitions: 1, Dir: t.TempDir(), FirstIndex: -1}); err == nil {
		t.Fatal("a negative FirstIndex was accepted")
	}
}
