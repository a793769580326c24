package speculator

import (
	"math"
	"slices"
	"strconv"
	"time"

	"gomr/conf"
)

// Configuration key names.
const (
	KeyMapSpeculative    = "mapreduce.map.speculative"
	KeyReduceSpeculative = "mapreduce.reduce.speculative"
	KeyCapRunning        = "mapreduce.job.speculative.speculative-cap-running-tasks"
	KeyCapTotal          = "mapreduce.job.speculative.speculative-cap-total-tasks"
	KeyMinAllowed        = "mapreduce.job.speculative.minimum-allowed-tasks"
	KeyRetryNoSpec       = "mapreduce.job.speculative.retry-after-no-speculate"
	KeyRetryAfterSpec    = "mapreduce.job.speculative.retry-after-speculate"
	KeySlowTaskThreshold = "mapreduce.job.speculative.slowtaskthreshold"
	KeyApplyThreshold    = "speculation.apply-slowtask-threshold"
	KeyMinDoneCount      = "speculation.min-done-count"
	KeyMinDoneFraction   = "speculation.min-done-fraction"
	KeyStagnation        = "speculation.stagnation"
	KeyRuntimeEstimator  = "speculation.estimator"
	KeySmoothLambda      = "speculation.smooth-lambda"
	KeyCloneEnabled      = "speculation.clone.enabled"
	KeyBeta              = "speculation.clone.beta"
	KeyTVM               = "speculation.clone.tvm"
	KeyImageBandwidth    = "speculation.clone.image-bandwidth"
	KeyCopyBandwidth     = "speculation.clone.copy-bandwidth"
	KeySmoothing         = "speculation.clone.smoothing"
	KeyMinSampleBytes    = "speculation.clone.min-sample-bytes"

	KeyStragglerFraction    = "straggler.fraction"
	KeyStragglerScope       = "straggler.scope"
	KeyStragglerShape       = "straggler.shape"
	KeyStragglerLocation    = "straggler.location"
	KeyStragglerMaxFactor   = "straggler.max-factor"
	KeyStragglerSeed        = "straggler.seed"
	KeyStragglerSpeculative = "straggler.speculative"
	KeyStragglerTaskTypes   = "straggler.task-types"
	KeyStragglerWork        = "straggler.work"
)

// keys are the speculator's configuration keys (speculation switches and
// caps, the clone-cost priors and damping, the straggler injector), which
// it registers with conf. A job may override the per-job ones (switches,
// caps, gates, the straggler injector), as Hadoop's speculation keys are;
// the scan period of the JobTracker's speculation loop and the
// cluster-wide clone-cost estimator (its priors, damping and smoothing)
// are cluster keys. FromConfig re-reads and range-checks them, naming the
// key in any error; Valid documents those ranges.
var keys = []conf.Key{
	{Name: KeyMapSpeculative, Type: conf.Bool, Default: "true", Description: "speculate map tasks", Job: true},
	{Name: KeyReduceSpeculative, Type: conf.Bool, Default: "true", Description: "speculate reduce tasks", Job: true},
	{Name: KeyCapRunning, Type: conf.Float, Default: "0.1", Description: "speculative attempts allowed at once, as a fraction of the running tasks of a type", Job: true, Valid: "a number from 0 to 1"},
	{Name: KeyCapTotal, Type: conf.Float, Default: "0.01", Description: "speculative attempts allowed at once, as a fraction of all tasks of a type (the thesis used 1.0)", Job: true, Valid: "a number from 0 to 1"},
	{Name: KeyMinAllowed, Type: conf.Int, Default: "10", Description: "speculative attempts of a type always allowed at once, whatever the fractions give", Job: true, Valid: "an integer >= 0"},
	{Name: KeyRetryNoSpec, Type: conf.Duration, Default: "1s", Description: "wait before the next scan after a scan that speculated nothing", Valid: "a duration >= 0"},
	{Name: KeyRetryAfterSpec, Type: conf.Duration, Default: "15s", Description: "wait before the next scan after a scan that speculated", Valid: "a duration >= 0"},
	{Name: KeySlowTaskThreshold, Type: conf.Float, Default: "1.0", Description: "a task is a straggler only if its estimated runtime exceeds mean + this many standard deviations (only with " + KeyApplyThreshold + ")", Job: true, Valid: "a number >= 0"},
	{Name: KeyApplyThreshold, Type: conf.Bool, Default: "false", Description: "apply the slow-task threshold; false is Hadoop's behaviour, where it only gates on finished tasks", Job: true},
	{Name: KeyMinDoneCount, Type: conf.Int, Default: "1", Description: "finished tasks of a type needed before any task of the type is speculated", Job: true, Valid: "an integer >= 1"},
	{Name: KeyMinDoneFraction, Type: conf.Float, Default: "0.05", Description: "fraction of the tasks of a type that must have finished before any is speculated", Job: true, Valid: "a number from 0 to 1"},
	{Name: KeyStagnation, Type: conf.Duration, Default: "9s", Description: "an attempt whose progress has not changed for this long is estimated as if it reported its progress now", Job: true, Valid: "a duration >= 0"},
	{Name: KeyRuntimeEstimator, Type: conf.String, Default: EstimatorLegacy, Description: "how a running attempt's runtime is estimated: legacy (Hadoop's default, elapsed time over progress) or smoothed (Hadoop's ExponentiallySmoothedTaskRuntimeEstimator: the remaining progress over the attempt's exponentially smoothed recent progress rate)", Check: conf.OneOf(EstimatorLegacy, EstimatorSmoothed), Job: true},
	{Name: KeySmoothLambda, Type: conf.Duration, Default: "60s", Description: "smoothed estimator: time constant of the progress-rate smoothing (Hadoop's ...estimator.exponential.smooth.lambda-ms); a report dt after the previous one keeps exp(-dt/lambda) of the old rate", Job: true, Valid: "a duration > 0"},
	{Name: KeyCloneEnabled, Type: conf.Bool, Default: "false", Description: "let the speculator choose a CRIU clone instead of a fresh attempt when the clone is expected to end first", Job: true},
	{Name: KeyBeta, Type: conf.Float, Default: "1.2", Description: "damping factor beta: the estimated clone cost is multiplied by it (> 1 overestimates, suppressing doubtful clones)", Valid: "a number >= 0"},
	{Name: KeyTVM, Type: conf.Duration, Default: "140ms", Description: "prior of the fixed cost of one clone (quiesce, dump, restore), t_vm", Valid: "a duration >= 0"},
	{Name: KeyImageBandwidth, Type: conf.Float, Default: "950000000", Description: "prior of the image throughput of dump plus restore, B, in bytes/s", Valid: "a number > 0"},
	{Name: KeyCopyBandwidth, Type: conf.Float, Default: "40000000", Description: "prior of the copy throughput of the clone's file set to the target tracker, B_copy, in bytes/s", Valid: "a number > 0"},
	{Name: KeySmoothing, Type: conf.Float, Default: "0.25", Description: "weight of a new clone measurement in the exponentially smoothed clone-cost inputs, in (0, 1]", Valid: "a number > 0 and <= 1"},
	{Name: KeyMinSampleBytes, Type: conf.Int, Default: "1048576", Description: "a clone's copy throughput is learnt only from transfers of at least this many bytes", Valid: "an integer >= 0"},
	{Name: KeyStragglerFraction, Type: conf.Float, Default: "0", Description: "straggler injector (experiments): fraction of attempts, tasks or trackers (see " + KeyStragglerScope + ") slowed down; 0 turns it off", Job: true, Valid: "a number from 0 to 1"},
	{Name: KeyStragglerScope, Type: conf.String, Default: "attempt", Description: "straggler injector: draw the slowdown per attempt, per task (all its non-speculative attempts alike) or per tracker", Check: conf.OneOf("attempt", "task", "tracker"), Job: true},
	{Name: KeyStragglerShape, Type: conf.Float, Default: "2", Description: "straggler injector: shape (sigma) of the log-normal slowdown factor k; the source uses 1, 2 and 10", Job: true, Valid: "a number from 0 to 100"},
	{Name: KeyStragglerLocation, Type: conf.Float, Default: "0", Description: "straggler injector: location (mu) of the log-normal slowdown factor k (0: median k is 1, a slowed task takes twice as long)", Job: true, Valid: "a number from -100 to 100"},
	{Name: KeyStragglerMaxFactor, Type: conf.Float, Default: "50", Description: "straggler injector: upper bound on k (a long tail of shape 10 would otherwise stall a task for ever)", Job: true, Valid: "a number from 0 to 1000000"},
	{Name: KeyStragglerSeed, Type: conf.Int, Default: "1", Description: "straggler injector: seed of the draws (the same seed slows the same attempts)", Job: true},
	{Name: KeyStragglerSpeculative, Type: conf.Bool, Default: "false", Description: "straggler injector: slow speculative attempts (fresh or cloned) too", Job: true},
	{Name: KeyStragglerTaskTypes, Type: conf.String, Default: "map,reduce", Description: "straggler injector: the task types slowed (map, reduce or both, comma-separated)", Check: conf.OneOf("map,reduce", "reduce,map", "map", "reduce"), Job: true},
	{Name: KeyStragglerWork, Type: conf.String, Default: "wall", Description: "straggler injector: the work a delay is owed for: wall (the wall time outside the delays, or the process's CPU time if more) or cpu (the process's CPU time only, so that the delays do not grow with the machine's load)", Check: conf.OneOf("wall", "cpu"), Job: true},
}

func init() {
	conf.Register(keys...)
}

// Keys lists every configuration key the speculator reads, with its
// default.
func Keys() []conf.Key { return slices.Clone(keys) }

// Getter gives configuration values by key as strings; an empty string
// means the key's default. partitions.MapConfig satisfies it.
type Getter = conf.Getter

// Params are the speculator's parameters.
type Params struct {
	MapSpeculative, ReduceSpeculative bool
	CapRunning, CapTotal              float64
	MinAllowed                        int
	RetryNoSpec, RetryAfterSpec       time.Duration
	SlowTaskThreshold                 float64
	ApplyThreshold                    bool
	MinDoneCount                      int
	MinDoneFraction                   float64
	Stagnation                        time.Duration
	// RuntimeEstimator is EstimatorLegacy or EstimatorSmoothed.
	RuntimeEstimator string
	// SmoothLambda is the smoothed estimator's time constant.
	SmoothLambda time.Duration
	CloneEnabled bool
	Estimator    EstimatorParams
}

// EstimatorParams are the clone-cost estimator's parameters.
type EstimatorParams struct {
	// Beta is the damping factor on the clone cost.
	Beta float64
	// TVM is the prior fixed cost of one clone.
	TVM time.Duration
	// ImageBps is the prior image throughput B of dump plus restore.
	ImageBps float64
	// CopyBps is the prior file-set copy throughput B_copy.
	CopyBps float64
	// Smoothing is the weight of a new measurement, in (0, 1].
	Smoothing float64
	// MinSampleBytes is the smallest transfer a copy throughput is learnt from.
	MinSampleBytes int64
}

// DefaultParams returns the parameters with every key at its default.
func DefaultParams() Params {
	p, err := FromConfig(nil)
	if err != nil {
		panic("speculator: bad defaults: " + err.Error())
	}
	return p
}

// FromConfig reads the parameters from cfg (nil means all defaults) and
// checks them. The error names the first bad key, its value and what is
// allowed.
func FromConfig(cfg Getter) (Params, error) {
	r := conf.NewReader("speculator configuration", cfg, keys)
	p := Params{
		MapSpeculative:    r.Bool(KeyMapSpeculative),
		ReduceSpeculative: r.Bool(KeyReduceSpeculative),
		CapRunning:        r.Float(KeyCapRunning, 0, 1),
		CapTotal:          r.Float(KeyCapTotal, 0, 1),
		MinAllowed:        r.Int(KeyMinAllowed, 0),
		RetryNoSpec:       r.Duration(KeyRetryNoSpec),
		RetryAfterSpec:    r.Duration(KeyRetryAfterSpec),
		SlowTaskThreshold: r.Float(KeySlowTaskThreshold, 0, math.Inf(1)),
		ApplyThreshold:    r.Bool(KeyApplyThreshold),
		MinDoneCount:      r.Int(KeyMinDoneCount, 1),
		MinDoneFraction:   r.Float(KeyMinDoneFraction, 0, 1),
		Stagnation:        r.Duration(KeyStagnation),
		RuntimeEstimator:  r.OneOf(KeyRuntimeEstimator, EstimatorLegacy, EstimatorSmoothed),
		SmoothLambda:      r.Duration(KeySmoothLambda),
		CloneEnabled:      r.Bool(KeyCloneEnabled),
		Estimator: EstimatorParams{
			Beta:           r.Float(KeyBeta, 0, math.Inf(1)),
			TVM:            r.Duration(KeyTVM),
			ImageBps:       positive(r, KeyImageBandwidth),
			CopyBps:        positive(r, KeyCopyBandwidth),
			Smoothing:      r.Float(KeySmoothing, 0, 1),
			MinSampleBytes: int64(r.Int(KeyMinSampleBytes, 0)),
		},
	}
	if r.Err() == nil && p.SmoothLambda <= 0 {
		r.Fail(KeySmoothLambda, r.Raw(KeySmoothLambda), "must be positive")
	}
	if r.Err() == nil && p.Estimator.Smoothing == 0 {
		r.Fail(KeySmoothing, r.Raw(KeySmoothing), "must be in (0, 1]")
	}
	if r.Err() != nil {
		return Params{}, r.Err()
	}
	return p, nil
}

// positive reads a positive finite number.
func positive(r *conf.Reader, key string) float64 {
	v := r.Raw(key)
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f <= 0 {
		r.Fail(key, v, "want a positive finite number")
		return 1
	}
	return f
}
