package conf

import "gomr/speculator"

// speculatorKeys turns the speculator's own key list (speculation
// switches and caps, the clone-cost priors and damping, the straggler
// injector) into configuration keys, so that they are set, validated and
// listed like every other key. The speculator re-reads and range-checks
// them when the JobTracker builds it, naming the key in any error.
func speculatorKeys() []Key {
	var out []Key
	for _, sk := range speculator.Keys() {
		k := Key{Name: sk.Name, Default: sk.Default, Description: sk.Description, Job: !clusterSpeculatorKeys[sk.Name]}
		switch sk.Type {
		case speculator.KeyInt:
			k.Type = Int
		case speculator.KeyFloat:
			k.Type = Float
		case speculator.KeyBool:
			k.Type = Bool
		case speculator.KeyDuration:
			k.Type = Duration
		default:
			k.Type = String
		}
		if len(sk.Allowed) > 0 {
			k.Check = oneOf(sk.Allowed...)
		}
		out = append(out, k)
	}
	return out
}

// clusterSpeculatorKeys are the speculator keys a job cannot override: the
// scan period of the JobTracker's speculation loop and the cluster-wide
// clone-cost estimator (its priors, damping and smoothing). The rest
// (switches, caps, gates, the straggler injector) are per job, as
// Hadoop's speculation keys are.
var clusterSpeculatorKeys = map[string]bool{
	speculator.KeyRetryNoSpec:    true,
	speculator.KeyRetryAfterSpec: true,
	speculator.KeyBeta:           true,
	speculator.KeyTVM:            true,
	speculator.KeyImageBandwidth: true,
	speculator.KeyCopyBandwidth:  true,
	speculator.KeySmoothing:      true,
	speculator.KeyMinSampleBytes: true,
}
