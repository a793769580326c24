package jobtracker

import (
	"strconv"
	"strings"

	"gomr/mr"
)

// shareSplitStrings makes the splits of a job share their strings: one
// copy of each path (a large file's splits all name it) and one host list
// for each set of hosts in the same order (a block's replicas), whose host
// names are themselves one copy each. Decoded from JSON, every split had
// its own: about half of a split's 220 bytes and four objects that the
// collector marks on every cycle while the job runs. The splits are
// changed in place and returned; their Hosts are read only from here on
// (the scheduler's locality).
func shareSplitStrings(splits []mr.Split) []mr.Split {
	if len(splits) < 2 {
		return splits
	}
	paths := map[string]string{}
	hosts := map[string]string{}
	lists := map[string][]string{}
	var key strings.Builder
	for i := range splits {
		sp := &splits[i]
		if p, ok := paths[sp.Path]; ok {
			sp.Path = p
		} else {
			paths[sp.Path] = sp.Path
		}
		if len(sp.Hosts) == 0 {
			continue
		}
		key.Reset()
		for _, h := range sp.Hosts {
			key.WriteString(strconv.Itoa(len(h)))
			key.WriteByte(':')
			key.WriteString(h)
		}
		if l, ok := lists[key.String()]; ok {
			sp.Hosts = l
			continue
		}
		for k, h := range sp.Hosts {
			if c, ok := hosts[h]; ok {
				sp.Hosts[k] = c
			} else {
				hosts[h] = h
			}
		}
		sp.Hosts = sp.Hosts[:len(sp.Hosts):len(sp.Hosts)]
		lists[key.String()] = sp.Hosts
	}
	return splits
}
