package schedtest

import "gomr/partitions"

// Policies for the conformance scenarios that break the policy contract on
// purpose, so that a scenario can show how a host treats an invalid
// decision. They are registered under names no configuration would use.
func init() {
	partitions.Register("schedtest-overassign", func(partitions.Config) (partitions.Policy, error) { return overassign{}, nil })
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
