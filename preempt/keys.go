package preempt

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"gomr/conf"
)

// Configuration key names.
const (
	KeyMechanism         = "preemption.mechanism"
	KeyMedium            = "preemption.medium"
	KeyBWWrite           = "preemption.bandwidth.write"
	KeyBWRead            = "preemption.bandwidth.read"
	KeyBWNet             = "preemption.bandwidth.net"
	KeySmoothing         = "preemption.bandwidth.smoothing"
	KeyWaitBelow         = "preemption.wait-if-remaining-below"
	KeySplitMinAge       = "preemption.split.min-task-age"
	KeySplitMinRemaining = "preemption.split.min-remaining"
	KeyStartupCost       = "preemption.split.startup-cost"
	// KeyScaleUp turns scale-up splits of maps and reduces on
	// (docs/split.md#scale-up-splits: the JobTracker's
	// jobtracker/scaleup.go and reduce_scaleup.go, the simulator's
	// sim/scaleup.go); KeyScaleUpFanout is the most pieces a scale-up
	// split cuts a remainder into (spec §5.13 split.scaleUpFanout).
	KeyScaleUp       = "preemption.split.scale-up"
	KeyScaleUpFanout = "preemption.split.scale-up-fanout"
	KeyReleaseSlot   = "preemption.checkpoint.release-slot"
)

// Settings of preemption.checkpoint.release-slot: when a victim being
// checkpointed gives its slot back.
const (
	// ReleaseDumped frees the slot once the dump is done and the process
	// gone (the image is complete).
	ReleaseDumped = "dumped"
	// ReleaseFrozen frees the slot once CRIU has frozen the process at
	// its quiet point: it uses no CPU from then on and its memory is only
	// read, so a new task may start beside the dump; the image and the
	// new task's memory overlap until the dump ends.
	ReleaseFrozen = "frozen"
	// ReleaseQuiesced frees the slot once the child is parked at its
	// quiet point (blocked on its control pipe: no CPU used, no memory
	// written), before its dump waits for the tracker's queue: a second
	// victim on a tracker does not hold its slot while the first's dump
	// runs. The process's memory and the new task's overlap from then
	// until the dump ends.
	ReleaseQuiesced = "quiesced"
)

// SlotRelease is when a checkpointed victim's slot is free
// (preemption.checkpoint.release-slot).
type SlotRelease uint8

// When the slot is free.
const (
	// ReleaseAtDump: once the dump is done.
	ReleaseAtDump SlotRelease = iota
	// ReleaseAtFreeze: once CRIU has frozen the process.
	ReleaseAtFreeze
	// ReleaseAtQuiet: once the child is at its quiet point.
	ReleaseAtQuiet
)

// releaseSettings are the settings of preemption.checkpoint.release-slot
// in SlotRelease order.
var releaseSettings = []string{ReleaseDumped, ReleaseFrozen, ReleaseQuiesced}

// String is the setting's name.
func (r SlotRelease) String() string {
	if int(r) < len(releaseSettings) {
		return releaseSettings[r]
	}
	return "SlotRelease(" + strconv.Itoa(int(r)) + ")"
}

// Settings of preemption.mechanism.
const (
	// SettingKill kills the newest attempts: Hadoop's behaviour, and the
	// policies' published one (the default).
	SettingKill = "kill"
	// SettingCheckpoint checkpoints every victim the host can checkpoint
	// ([002]'s basic policy), kills the others.
	SettingCheckpoint = "checkpoint"
	// SettingAdaptive is [002] Alg. 1: checkpoint iff the progress exceeds
	// dump + restore + queue, cheapest dump first.
	SettingAdaptive = "adaptive"
	// SettingSplit splits every victim the host can split (Amoeba), kills
	// the others.
	SettingSplit = "split"
	// SettingAuto is the spec's extended mode (adaptive+split, §5.5): each
	// candidate takes its cheapest feasible mechanism among wait, split,
	// checkpoint and kill.
	SettingAuto = "auto"
)

// Settings lists the values preemption.mechanism accepts.
func Settings() []string {
	return []string{SettingKill, SettingCheckpoint, SettingAdaptive, SettingSplit, SettingAuto}
}

func mediaNames() []string {
	out := make([]string, 0, len(Media))
	for k := range Media {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// keys are the planner's configuration keys; cluster keys, read by the
// JobTracker and the simulator.
var keys = []conf.Key{
	{Name: KeyMechanism, Type: conf.String, Default: SettingKill, Check: conf.OneOf(Settings()...),
		Description: "how a preemption takes a slot back: kill (Hadoop's), checkpoint (CRIU dump, resume later), adaptive (checkpoint iff progress > dump + restore + queue, else kill), split (Amoeba: stop at a safe point, the rest becomes a new task), auto (cheapest of wait, split, checkpoint, kill per victim)"},
	{Name: KeyMedium, Type: conf.String, Default: "ssd", Check: conf.OneOf(mediaNames()...),
		Description: "checkpoint medium whose bandwidth the planner assumes until it has measured dumps: hdd 30, ssd 117, nvm 1750 MiB/s"},
	{Name: KeyBWWrite, Type: conf.Float, Default: "0", Unit: "MiB/s", Description: "prior checkpoint dump bandwidth; 0 = the medium's", Valid: "a number >= 0"},
	{Name: KeyBWRead, Type: conf.Float, Default: "0", Unit: "MiB/s", Description: "prior checkpoint restore bandwidth; 0 = the dump bandwidth", Valid: "a number >= 0"},
	{Name: KeyBWNet, Type: conf.Float, Default: "112", Unit: "MiB/s", Description: "prior bandwidth of sending an image to another tracker (Alg. 2's remote resume)", Valid: "a number > 0"},
	{Name: KeySmoothing, Type: conf.Float, Default: "0.3", Description: "weight of a new dump, restore or transfer measurement in the learnt bandwidths", Valid: "a number in (0, 1]"},
	{Name: KeyWaitBelow, Type: conf.Duration, Default: "10s", Description: "auto: a victim expected to finish within this long is left to finish (natural vacancy)", Valid: "a duration >= 0"},
	{Name: KeySplitMinAge, Type: conf.Duration, Default: "60s", Description: "split: a task runs at least this long before it may be split", Valid: "a duration >= 0"},
	{Name: KeySplitMinRemaining, Type: conf.Duration, Default: "30s", Description: "split: a task with less than this left (when known) is not split", Valid: "a duration >= 0"},
	{Name: KeyStartupCost, Type: conf.Duration, Default: "1s", Description: "split: the start-up cost of the task that takes the remainder (waste of a split)", Valid: "a duration >= 0"},
	{Name: KeyScaleUp, Type: conf.Bool, Default: "false",
		Description: "scale-up splits: when map slots stay idle and a split-safe job has no pending map, split its longest running map (at least preemption.split.min-task-age old, preemption.split.min-remaining left) and run its remainder as several maps; the same for reduce slots, a job with no pending reduce and its longest reduce in its reduce phase (its output format concatenable), whose remaining key groups run as several reduces of its partition (docs/split.md)"},
	{Name: KeyScaleUpFanout, Type: conf.Int, Default: "4", Valid: "an integer >= 2", Check: atLeastTwo,
		Description: "most pieces a scale-up split cuts a map's remainder or a reduce's remaining key groups into (also bounded by the tracker's idle slots of that type plus one)"},
	{Name: KeyReleaseSlot, Type: conf.String, Default: ReleaseDumped, Check: conf.OneOf(releaseSettings...),
		Description: "when a victim checkpointed for preemption frees its slot: dumped (once CRIU's dump is done), frozen (once CRIU has frozen the process: a new task starts while the image is written), quiesced (once the task is parked at its quiet point, before its dump waits for the tracker's queue); with frozen and quiesced the victim's memory and the new task's overlap until the dump ends, and a dump that fails then kills the victim, whose task runs again"},
}

func init() { conf.Register(keys...) }

func atLeastTwo(v any) error {
	if n, ok := v.(int); !ok || n < 2 {
		return fmt.Errorf("want an integer >= 2")
	}
	return nil
}

// Keys lists the planner's configuration keys.
func Keys() []conf.Key { return slices.Clone(keys) }

// IsKey tells whether name is one of the planner's keys.
func IsKey(name string) bool {
	for _, k := range keys {
		if k.Name == name {
			return true
		}
	}
	return false
}

// Getter gives configuration values by key as strings; an empty string
// means the key's default. *conf.Config and partitions.MapConfig satisfy it.
type Getter = conf.Getter

// Config is the planner's configuration.
type Config struct {
	// Mechanism is one of the Setting* values.
	Mechanism string
	// Prior is the model of a node before any measurement.
	Prior Model
	// Smoothing is the weight of a new measurement, in (0, 1].
	Smoothing float64
	// MinSampleBytes is the smallest image a bandwidth is learnt from.
	MinSampleBytes int64
	// WaitBelow: auto leaves a victim with less than this left to finish.
	WaitBelow time.Duration
	// SplitMinAge and SplitMinRemaining bound which tasks are split.
	SplitMinAge, SplitMinRemaining time.Duration
	// StartupCost is what starting the remainder of a split costs.
	StartupCost time.Duration
	// ScaleUp turns scale-up splits on; ScaleUpFanout is the most pieces
	// one cuts a remainder into (at least 2).
	ScaleUp       bool
	ScaleUpFanout int
	// Release is when a checkpointed victim's slot is free
	// (preemption.checkpoint.release-slot); before the dump is done, the
	// dump still holds its node's checkpoint/restore queue to its end.
	Release SlotRelease
	// Heartbeat is the time a directive takes to reach a tracker (the
	// host's heartbeat interval; not a key of this package). Kill and
	// split release their slot one heartbeat after the order.
	Heartbeat time.Duration
}

// DefaultConfig returns the configuration with every key at its default.
func DefaultConfig() Config {
	c, err := FromConfig(nil)
	if err != nil {
		panic("preempt: bad defaults: " + err.Error())
	}
	return c
}

// FromConfig reads the configuration from cfg (nil: all defaults) and
// checks it; the error names the first bad key, its value and what is
// allowed. Heartbeat is left zero for the host to set.
func FromConfig(cfg Getter) (Config, error) {
	r := conf.NewReader("preemption configuration", cfg, keys)
	c := Config{
		Mechanism:         r.OneOf(KeyMechanism, Settings()...),
		Smoothing:         nonNegative(r, KeySmoothing),
		MinSampleBytes:    MiB,
		WaitBelow:         r.Duration(KeyWaitBelow),
		SplitMinAge:       r.Duration(KeySplitMinAge),
		SplitMinRemaining: r.Duration(KeySplitMinRemaining),
		StartupCost:       r.Duration(KeyStartupCost),
		ScaleUp:           r.Bool(KeyScaleUp),
		ScaleUpFanout:     r.Int(KeyScaleUpFanout, 2),
	}
	medium := r.OneOf(KeyMedium, mediaNames()...)
	w := nonNegative(r, KeyBWWrite)
	if w == 0 {
		w = Media[medium]
	}
	rd := nonNegative(r, KeyBWRead)
	if rd == 0 {
		rd = w
	}
	n := nonNegative(r, KeyBWNet)
	if r.Err() == nil && n == 0 {
		r.Fail(KeyBWNet, r.Raw(KeyBWNet), "must be positive")
	}
	if r.Err() == nil && (c.Smoothing == 0 || c.Smoothing > 1) {
		r.Fail(KeySmoothing, r.Raw(KeySmoothing), "must be in (0, 1]")
	}
	c.Prior = Model{BWWrite: w * MiB, BWRead: rd * MiB, BWNet: n * MiB}
	c.Release = SlotRelease(slices.Index(releaseSettings, r.OneOf(KeyReleaseSlot, releaseSettings...)))
	if r.Err() != nil {
		return Config{}, r.Err()
	}
	return c, nil
}

// nonNegative reads a finite number >= 0.
func nonNegative(r *conf.Reader, key string) float64 {
	v := r.Raw(key)
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f < 0 {
		r.Fail(key, v, "want a finite number >= 0")
		return 0
	}
	return f
}
