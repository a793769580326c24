package mr

import (
	"encoding/json"
	"slices"
	"strconv"
)

// MarshalJSON encodes the set as encoding/json encodes a
// map[string]map[string]int64 (keys sorted; a nil set or group is null),
// without its reflection: the JobTracker writes a task's counters in a
// line of its recovery log on every task end, and the map encoder
// allocated for every key and value. A name with a character outside
// printable ASCII, or one of " \ < > &, is quoted by encoding/json
// itself, so the bytes are the same as json.Marshal's.
func (s CounterSet) MarshalJSON() ([]byte, error) {
	if s == nil {
		return []byte("null"), nil
	}
	n := 2
	groups := make([]string, 0, len(s))
	for g, m := range s {
		groups = append(groups, g)
		n += len(g) + 4 + len(m)*24
	}
	slices.Sort(groups)
	buf := make([]byte, 0, n)
	var names []string
	buf = append(buf, '{')
	for i, g := range groups {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = appendJSONString(buf, g)
		buf = append(buf, ':')
		m := s[g]
		if m == nil {
			buf = append(buf, "null"...)
			continue
		}
		names = names[:0]
		for k := range m {
			names = append(names, k)
		}
		slices.Sort(names)
		buf = append(buf, '{')
		for k, name := range names {
			if k > 0 {
				buf = append(buf, ',')
			}
			buf = appendJSONString(buf, name)
			buf = append(buf, ':')
			buf = strconv.AppendInt(buf, m[name], 10)
		}
		buf = append(buf, '}')
	}
	return append(buf, '}'), nil
}

// appendJSONString appends s as a JSON string, as encoding/json writes it.
func appendJSONString(buf []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always encodes
			return append(buf, q...)
		}
	}
	buf = append(buf, '"')
	buf = append(buf, s...)
	return append(buf, '"')
}
