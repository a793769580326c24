package jobtracker

import (
	"encoding/json"
	"fmt"
	"reflect"
	"runtime"
	"testing"
	"unsafe"

	"gomr/mr"
)

// TestShareSplitStrings: splits decoded from JSON come out with the same
// values, one copy of each path and host name, and one host list for each
// list of the same hosts in the same order (not for the same hosts in
// another order, nor for lists that would join into the same string).
func TestShareSplitStrings(t *testing.T) {
	var in []mr.Split
	for k := range 12 {
		h := k % 4
		in = append(in, mr.Split{Path: fmt.Sprintf("/in/file-%d", k%2), Start: int64(k), Length: 10,
			Hosts: []string{fmt.Sprintf("h%d", h), fmt.Sprintf("h%d", (h+1)%4)}})
	}
	in = append(in,
		mr.Split{Path: "/in/file-0", Hosts: []string{"h1", "h0"}}, // h0, h1's hosts in another order
		mr.Split{Path: "/in/file-0", Hosts: []string{"a", "bc"}},
		mr.Split{Path: "/in/file-0", Hosts: []string{"ab", "c"}},
		mr.Split{Path: "/in/file-0"})
	js, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var got []mr.Split
	if err := json.Unmarshal(js, &got); err != nil {
		t.Fatal(err)
	}
	got = shareSplitStrings(got)
	if !reflect.DeepEqual(got, in) {
		t.Fatalf("values changed:\n got %+v\nwant %+v", got, in)
	}
	str := func(s string) *byte { return unsafe.StringData(s) }
	paths, names := map[string]*byte{}, map[string]*byte{}
	lists := map[string]*string{}
	for i, sp := range got {
		if p, ok := paths[sp.Path]; ok && p != str(sp.Path) {
			t.Errorf("split %d: path %s is a copy of its own", i, sp.Path)
		}
		paths[sp.Path] = str(sp.Path)
		for _, h := range sp.Hosts {
			if p, ok := names[h]; ok && p != str(h) {
				t.Errorf("split %d: host %s is a copy of its own", i, h)
			}
			names[h] = str(h)
		}
		if len(sp.Hosts) == 0 {
			continue
		}
		if cap(sp.Hosts) != len(sp.Hosts) {
			t.Errorf("split %d: host list of cap %d, len %d: an append would write into a shared list", i, cap(sp.Hosts), len(sp.Hosts))
		}
		k := fmt.Sprintf("%q", sp.Hosts)
		if l, ok := lists[k]; ok && l != &sp.Hosts[0] {
			t.Errorf("split %d: host list %v is a copy of its own", i, sp.Hosts)
		}
		lists[k] = &sp.Hosts[0]
	}
	if &got[0].Hosts[0] == &got[12].Hosts[0] {
		t.Error("h0,h1 and h1,h0 share a list")
	}
	if &got[13].Hosts[0] == &got[14].Hosts[0] {
		t.Error(`["a" "bc"] and ["ab" "c"] share a list`)
	}
	if len(lists) != 7 {
		t.Errorf("%d distinct host lists, want 7", len(lists))
	}
}

// TestShareSplitStringsRetainedBytes: 37,500 splits of one file over
// 10,000 hosts, as mr loadgen submits them, retain at most 60% of the
// bytes once they share their strings.
func TestShareSplitStringsRetainedBytes(t *testing.T) {
	const n = 37500
	js := loadgenSplitsJSON(t, n, 10000)
	retained := func(share bool) (uint64, []mr.Split) {
		var before, after runtime.MemStats
		runtime.GC() // twice: one collection left some of the JSON's making
		runtime.GC()
		runtime.ReadMemStats(&before)
		var splits []mr.Split
		if err := json.Unmarshal(js, &splits); err != nil {
			t.Fatal(err)
		}
		if share {
			splits = shareSplitStrings(splits)
		}
		runtime.GC()
		runtime.GC()
		runtime.ReadMemStats(&after)
		return after.HeapAlloc - before.HeapAlloc, splits
	}
	decoded, a := retained(false)
	a = nil
	shared, b := retained(true)
	t.Logf("%d splits: %d bytes decoded (%d a split), %d shared (%d a split)", n, decoded, decoded/n, shared, shared/n)
	if len(b) != n || decoded > 1<<40 || shared > 1<<40 || float64(shared) > 0.6*float64(decoded) {
		t.Errorf("%d shared splits retain %d bytes; want at most 60%% of the %d decoded", len(b), shared, decoded)
	}
	runtime.KeepAlive(a)
	runtime.KeepAlive(b)
	runtime.KeepAlive(js) // else freed during the second measurement
}

// loadgenSplitsJSON is n splits of one file, each on 3 consecutive of
// hosts hosts, in JSON, as mr loadgen submits them.
func loadgenSplitsJSON(t *testing.T, n, hosts int) []byte {
	in := make([]mr.Split, n)
	for k := range in {
		h := (7 + k) % hosts
		in[k] = mr.Split{Path: "/loadgen/synthetic/job-0001", Start: int64(k) << 20, Length: 1 << 20,
			Hosts: []string{fmt.Sprintf("host-%05d", h), fmt.Sprintf("host-%05d", (h+1)%hosts), fmt.Sprintf("host-%05d", (h+2)%hosts)}}
	}
	js, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	return js
}
