package speculator

import (
	"encoding/binary"
	"hash/fnv"
	"math"
	"strings"

	"gomr/conf"
)

// Stragglers is the straggler injector's model (spec §5.3): a chosen
// fraction of attempts, or of trackers, is slowed by a delay proportional
// to the task's runtime, t_d = k·t_rt, with k drawn from a log-normal
// distribution LogNormal(Location, Shape). The draw is a pure function of
// the seed and the attempt id (or tracker name), so that the same
// configuration slows the same attempts in every run and in the
// simulator, and a clone, which gets a new attempt id, gets a new draw:
// the slowdown is tied to the attempt, never to state a clone inherits.
type Stragglers struct {
	// Fraction of attempts (or trackers) slowed; 0 turns the injector off.
	Fraction float64
	// ByTracker draws per tracker instead of per attempt: every attempt on
	// a slowed tracker is slowed by that tracker's k.
	ByTracker bool
	// ByTask draws per task (its type and index, from the attempt id): every
	// non-speculative attempt of a slowed task is slowed alike, as when the
	// task's input is slow to read.
	ByTask bool
	// Shape (sigma) and Location (mu) of the log-normal factor k.
	Shape, Location float64
	// MaxFactor bounds k.
	MaxFactor float64
	// Seed of the draws.
	Seed int64
	// Speculative slows speculative attempts too (by default they run at
	// full speed, as the source's reproduction notes recommend).
	Speculative bool
	// SparesMaps and SparesReduces leave that task type alone
	// (straggler.task-types).
	SparesMaps, SparesReduces bool
	// CPUWork: a delay is owed for the process's CPU time only, not for
	// the wall time outside the delays (straggler.work=cpu).
	CPUWork bool
}

// StragglersFromConfig reads the injector's keys from cfg (nil means the
// defaults: off). The error names the first bad key.
func StragglersFromConfig(cfg Getter) (Stragglers, error) {
	r := conf.NewReader("speculator configuration", cfg, keys)
	s := Stragglers{
		Fraction:    r.Float(KeyStragglerFraction, 0, 1),
		Shape:       r.Float(KeyStragglerShape, 0, 100),
		Location:    r.Float(KeyStragglerLocation, -100, 100),
		MaxFactor:   r.Float(KeyStragglerMaxFactor, 0, 1e6),
		Seed:        int64(r.Int(KeyStragglerSeed, math.MinInt)),
		Speculative: r.Bool(KeyStragglerSpeculative),
	}
	switch types := r.Raw(KeyStragglerTaskTypes); types {
	case "map,reduce", "reduce,map":
	case "map":
		s.SparesReduces = true
	case "reduce":
		s.SparesMaps = true
	default:
		r.Fail(KeyStragglerTaskTypes, types, "want map, reduce or map,reduce")
	}
	switch work := r.Raw(KeyStragglerWork); work {
	case "wall":
	case "cpu":
		s.CPUWork = true
	default:
		r.Fail(KeyStragglerWork, work, "want wall or cpu")
	}
	switch scope := r.Raw(KeyStragglerScope); scope {
	case "attempt":
	case "tracker":
		s.ByTracker = true
	case "task":
		s.ByTask = true
	default:
		r.Fail(KeyStragglerScope, scope, "want attempt, task or tracker")
	}
	if r.Err() != nil {
		return Stragglers{}, r.Err()
	}
	return s, nil
}

// Factor returns the slowdown factor k of an attempt: the attempt runs
// (1+k) times as long as it would. 0 means it is not slowed.
func (s Stragglers) Factor(attemptID, tracker string, speculative bool) float64 {
	if s.Fraction <= 0 || (speculative && !s.Speculative) {
		return 0
	}
	switch t := taskTypeOf(attemptID); {
	case t == "m" && s.SparesMaps, t == "r" && s.SparesReduces:
		return 0
	}
	who := attemptID
	switch {
	case s.ByTracker:
		who = tracker
	case s.ByTask:
		who = taskOf(attemptID)
	}
	if s.uniform(who, "chosen") >= s.Fraction {
		return 0
	}
	// Box-Muller from two independent uniforms in (0, 1).
	u1, u2 := s.uniform(who, "u1"), s.uniform(who, "u2")
	z := math.Sqrt(-2*math.Log(u1)) * math.Cos(2*math.Pi*u2)
	k := math.Exp(s.Location + s.Shape*z)
	return min(k, s.MaxFactor)
}

// uniform hashes (seed, who, salt) to a number in (0, 1).
func (s Stragglers) uniform(who, salt string) float64 {
	h := fnv.New64a()
	var seed [8]byte
	binary.LittleEndian.PutUint64(seed[:], uint64(s.Seed))
	h.Write(seed[:])
	h.Write([]byte(who))
	h.Write([]byte{0})
	h.Write([]byte(salt))
	// Finalise (splitmix64) so that nearby inputs spread over the range.
	x := h.Sum64()
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return (float64(x>>11) + 0.5) / (1 << 53)
}

// taskOf is the task part of an attempt id, "<m|r>_<index>" of
// attempt_<cluster>_<job>_<m|r>_<index>_<n>; the whole id when it has
// another shape.
func taskOf(attemptID string) string {
	parts := strings.Split(attemptID, "_")
	if len(parts) != 6 {
		return attemptID
	}
	return parts[3] + "_" + parts[4]
}

// taskTypeOf is "m" or "r" for an attempt id attempt_<ident>_<n>_<m|r>_<task>_<k>,
// "" for anything else.
func taskTypeOf(attemptID string) string {
	parts := strings.Split(attemptID, "_")
	if len(parts) != 6 {
		return ""
	}
	return parts[3]
}
