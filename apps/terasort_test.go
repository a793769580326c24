package apps

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"gomr/mr"
)

func TestSplitPoints(t *testing.T) {
	keys := func(ss ...string) [][]byte {
		out := make([][]byte, len(ss))
		for i, s := range ss {
			out[i] = []byte(s)
		}
		return out
	}
	tests := []struct {
		name    string
		sample  [][]byte
		reduces int
		want    [][]byte
	}{
		{"one reduce", keys("a", "b"), 1, nil},
		{"no sample", nil, 4, nil},
		{"even", keys("a", "b", "c", "d", "e", "f", "g", "h"), 4, keys("c", "e", "g")},
		{"rounding", keys("a", "b", "c", "d", "e", "f", "g", "h", "i", "j"), 4, keys("d", "f", "i")},
		{"fewer keys than reduces", keys("a"), 3, keys("a", "a")},
	}
	for _, tt := range tests {
		if got := splitPoints(tt.sample, tt.reduces); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: points %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestSplitPointsEncoding(t *testing.T) {
	points := [][]byte{{0, 0}, {0x12, 0xab}, {0xff}}
	s := encodeSplitPoints(points)
	if s != "0000,12ab,ff" {
		t.Fatalf("encoded %q", s)
	}
	back, err := decodeSplitPoints(s)
	if err != nil || !reflect.DeepEqual(back, points) {
		t.Fatalf("decoded %x, %v", back, err)
	}
	if got, err := decodeSplitPoints(""); err != nil || got != nil {
		t.Errorf("empty: %x, %v", got, err)
	}
	for _, bad := range []string{"zz", "02,01", "01,,02"} {
		if _, err := decodeSplitPoints(bad); err == nil {
			t.Errorf("decode(%q): no error", bad)
		}
	}
}

func TestTotalOrderPartitioner(t *testing.T) {
	points := []string{"40000000000000000000", "80000000000000000000", "80000000000000000001"}
	tc := newTC(map[string]string{"splitpoints": strings.Join(points, ",")}, 4)
	p, err := newTotalOrderPartitioner(tc)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		key  string
		want int
	}{
		{"00000000000000000000", 0},
		{"3fffffffffffffffffff", 0},
		{"40000000000000000000", 1}, // equal to a point: the partition it starts
		{"40000000000000000001", 1},
		{"7fffffffffffffffffff", 1},
		{"80000000000000000000", 2},
		{"80000000000000000001", 3},
		{"ffffffffffffffffffff", 3},
		{"", 0},
		{"ff", 3},
	}
	for _, tt := range tests {
		key, _ := hex.DecodeString(tt.key)
		if got := p.Partition(key, 4); got != tt.want {
			t.Errorf("Partition(%s) = %d, want %d", tt.key, got, tt.want)
		}
	}
	if _, err := newTotalOrderPartitioner(newTC(map[string]string{"splitpoints": strings.Join(points, ",")}, 3)); err == nil {
		t.Error("3 split points with 3 reduces: no error")
	}
	if _, err := newTotalOrderPartitioner(newTC(map[string]string{"splitpoints": "80,40"}, 3)); err == nil {
		t.Error("descending split points: no error")
	}
	// Fewer points than reduces - 1 (a small sample) still partitions in order.
	few, err := newTotalOrderPartitioner(newTC(map[string]string{"splitpoints": "80"}, 4))
	if err != nil {
		t.Fatal(err)
	}
	if few.Partition([]byte{0x7f}, 4) != 0 || few.Partition([]byte{0x80}, 4) != 1 {
		t.Error("one split point: wrong partitions")
	}
}

func TestTeraSortIdentity(t *testing.T) {
	tc := newTC(nil, 1)
	var c collector
	if err := identityMap(tc, []byte("k"), []byte("v"), &c); err != nil {
		t.Fatal(err)
	}
	if err := identityReduce(tc, []byte("k"), iter("1", "2"), &c); err != nil {
		t.Fatal(err)
	}
	if want := []kv{{"k", "v"}, {"k", "1"}, {"k", "2"}}; !reflect.DeepEqual(c.out, want) {
		t.Errorf("got %q, want %q", c.out, want)
	}
}

// writeTeraFiles writes teragen records split over files in dir.
func writeTeraFiles(t *testing.T, dir string, rows int, files int) []byte {
	t.Helper()
	recs := generate(t, strconv.Itoa(rows), "1")
	per := rows / files
	for f := range files {
		end := (f + 1) * per
		if f == files-1 {
			end = rows
		}
		name := filepath.Join(dir, fmt.Sprintf("part-m-%05d", f))
		if err := os.WriteFile(name, recs[f*per*100:end*100], 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return recs
}

func TestTeraSortDriverSamples(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in")
	if err := os.Mkdir(in, 0o755); err != nil {
		t.Fatal(err)
	}
	recs := writeTeraFiles(t, in, 2000, 4)
	if err := os.WriteFile(filepath.Join(in, "_SUCCESS"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	jc := &fakeClient{conf: map[string]string{"mapreduce.job.reduces": "5"}}
	if err := runApp(t, "terasort", jc, in, filepath.Join(dir, "out")); err != nil {
		t.Fatal(err)
	}
	if len(jc.specs) != 1 {
		t.Fatalf("%d jobs", len(jc.specs))
	}
	spec := jc.specs[0]
	if spec.Def != "terasort" || spec.NumReduces != 5 || spec.Output != filepath.Join(dir, "out") || !reflect.DeepEqual(spec.Inputs, []string{in}) {
		t.Errorf("spec %+v", spec)
	}
	points, err := decodeSplitPoints(spec.Params["splitpoints"])
	if err != nil {
		t.Fatal(err)
	}
	// The whole input (2000 keys < 100,000) is the sample: the points are
	// the keys of rank 400, 800, 1200, 1600.
	var keys [][]byte
	for i := 0; i < len(recs); i += 100 {
		keys = append(keys, recs[i:i+10])
	}
	slices.SortFunc(keys, bytes.Compare)
	want := [][]byte{keys[400], keys[800], keys[1200], keys[1600]}
	if !reflect.DeepEqual(points, want) {
		t.Errorf("split points %x, want %x", points, want)
	}
	// Partitioning every key with them gives 400 keys per partition.
	p := &totalOrderPartitioner{points: points}
	counts := make([]int, 5)
	for _, k := range keys {
		counts[p.Partition(k, 5)]++
	}
	if !reflect.DeepEqual(counts, []int{400, 400, 400, 400, 400}) {
		t.Errorf("partition sizes %v", counts)
	}
}

func TestSampleKeysLimits(t *testing.T) {
	dir := t.TempDir()
	recs := writeTeraFiles(t, dir, 1000, 10)
	// 5 splits of the 10 (every other file), 20 keys from the start of each.
	keys, err := sampleKeys(context.Background(), teraInput(false), mr.SplitContext{Ctx: context.Background(), Inputs: []string{dir}}, 100, 5)
	if err != nil {
		t.Fatal(err)
	}
	var want [][]byte
	for f := 0; f < 10; f += 2 {
		for r := range 20 {
			off := (f*100 + r) * 100
			want = append(want, recs[off:off+10])
		}
	}
	slices.SortFunc(want, bytes.Compare)
	if !reflect.DeepEqual(keys, want) {
		t.Errorf("sampled %d keys, want %d (the first 20 of files 0,2,4,6,8)", len(keys), len(want))
	}
	if _, err := sampleKeys(context.Background(), teraInput(false), mr.SplitContext{Ctx: context.Background(), Inputs: []string{filepath.Join(dir, "missing")}}, 100, 5); err == nil {
		t.Error("missing input: no error")
	}
}

func TestTeraSortDriverErrors(t *testing.T) {
	if err := runApp(t, "terasort", &fakeClient{}, "in"); err == nil {
		t.Error("one argument: no error")
	}
	if err := runApp(t, "terasort", &fakeClient{conf: map[string]string{"mapreduce.job.reduces": "x"}}, "in", "out"); err == nil || !strings.Contains(err.Error(), "mapreduce.job.reduces") {
		t.Errorf("bad reduces: %v", err)
	}
}
