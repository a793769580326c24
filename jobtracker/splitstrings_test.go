package jobtracker

import (
	"encoding/json"
	"fmt"
	"reflect"
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
