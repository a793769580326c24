package schedtest

import "gomr/partitions"

// TestPolicy returns the policy for a conformance scenario's name when it
// is one of this package's test policies, which break the policy contract
// on purpose so that a scenario can show how a host treats an invalid
// decision. They are not in the policy registry (partitions.Register):
// no configuration can name them.
func TestPolicy(name string) (partitions.Policy, bool) {
	switch name {
	case "schedtest-overassign":
		return overassign{}, true
	}
	return nil, false
}

// overassign gives the first job with pending maps one map more than the
// offer has free map slots (and never preempts).
type overassign struct{}

func (overassign) Name() string             { return "schedtest-overassign" }
func (overassign) Observe(partitions.Event) {}

func (overassign) Offer(v *partitions.ClusterView, o partitions.SlotOffer) partitions.Decision {
	var d partitions.Decision
	for _, j := range v.Jobs {
		if j.PendingMaps > 0 && o.FreeMaps > 0 {
			for i := 0; i <= o.FreeMaps; i++ {
				d.Assign = append(d.Assign, partitions.Assignment{JobID: j.ID, Type: partitions.Map})
			}
			break
		}
	}
	return d
}
