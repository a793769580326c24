package conf

import "gomr/partitions"

// policyKeys turns the scheduling policies' own key list (package
// partitions, which documents each key in KEYS.md) into configuration
// keys, so that they are set, validated and listed like every other key.
// List-valued keys (capacities, timers) are text here; the policy parses
// them when the JobTracker builds it and names the key in any error.
func policyKeys() []Key {
	var out []Key
	for _, pk := range partitions.Keys() {
		k := Key{Name: pk.Name, Default: pk.Default, Description: pk.Description}
		switch pk.Type {
		case partitions.KeyInt:
			k.Type = Int
		case partitions.KeyFloat:
			k.Type = Float
		case partitions.KeyBool:
			k.Type = Bool
		case partitions.KeyDuration:
			k.Type = Duration
		default:
			k.Type = String
		}
		if len(pk.Allowed) > 0 {
			k.Check = oneOf(pk.Allowed...)
		}
		out = append(out, k)
	}
	return out
}
