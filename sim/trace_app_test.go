package sim

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
)

// TestTraceApps checks the app and app_args fields of a trace record: read,
// written back, and refused with the file, line, job and field named.
func TestTraceApps(t *testing.T) {
	in := `{"id":"w","submit_s":1,"maps_s":[2,2],"reduces_s":[1],"input_bytes":1000000,"app":"wordcount"}
{"id":"g","maps_s":[1],"input_bytes":5000,"app":"grep","app_args":["fo+"]}
{"id":"s","maps_s":[1],"app":"sleep","app_args":["-m","2","-mt","500"]}
`
	w, err := ReadTrace(strings.NewReader(in), "apps.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]Job{}
	for _, j := range w.Jobs {
		byID[j.ID] = j
	}
	if j := byID["w"]; j.App != "wordcount" || j.AppArgs != nil || j.InputBytes != 1000000 || len(j.Maps) != 2 {
		t.Errorf("job w: %+v", j)
	}
	if j := byID["g"]; j.App != "grep" || !reflect.DeepEqual(j.AppArgs, []string{"fo+"}) {
		t.Errorf("job g: %+v", j)
	}
	var buf bytes.Buffer
	if err := WriteTrace(&buf, w); err != nil {
		t.Fatal(err)
	}
	back, err := ReadTrace(&buf, "back")
	if err != nil || !reflect.DeepEqual(back.Jobs, w.Jobs) {
		t.Errorf("round trip: %v\n%+v\n%+v", err, back, w.Jobs)
	}
	for _, tc := range []struct{ in, want string }{
		{`{"id":"a","maps_s":[1],"app":"pagerank","input_bytes":10}`, `trace bad.jsonl line 1: job a: app "pagerank": not an app a trace may name (grep, sleep, sort, terasort, wordcount)`},
		{"\n" + `{"id":"a","maps_s":[1],"app_args":["x"]}`, "trace bad.jsonl line 2: job a: app_args without app"},
		{`{"id":"a","maps_s":[1],"app":"terasort"}`, "trace bad.jsonl line 1: job a: app terasort needs input_bytes"},
		{`{"id":"a","maps_s":[1],"app":"sleep","args":["-m","1"]}`, `trace bad.jsonl line 1: json: unknown field "args"`},
		{`{"id":"a","maps_s":[1],"app":"grep","input_bytes":10,"app_args":"x"}`, "trace bad.jsonl line 1: json: cannot unmarshal string into Go struct field TraceRecord.app_args"},
	} {
		_, err := ReadTrace(strings.NewReader(tc.in), "bad.jsonl")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ReadTrace(%q): %v, want %q", tc.in, err, tc.want)
		}
	}
}
