// Package mr is the user's API of the runtime: the Mapper, Reducer, Combiner
// and Partitioner interfaces, the input and output formats, counters, the job
// description, and the registry that maps job and app names to code.
//
// A job's code is found by name: a job definition (JobDef) is registered in
// this package's registry by an init function, and both the submitting
// client and every task child process (the same binary, run by the
// TaskTracker) look it up by the name carried in the JobSpec.
package mr

import (
	"context"
)

// Emitter receives the key-value pairs a Mapper, Combiner or Reducer
// produces. The slices may be reused by the caller after Emit returns; the
// Emitter copies what it keeps.
type Emitter interface {
	Emit(key, value []byte) error
}

// EmitFunc adapts a function to the Emitter interface.
type EmitFunc func(key, value []byte) error

// Emit calls f(key, value).
func (f EmitFunc) Emit(key, value []byte) error { return f(key, value) }

// TaskContext is what a running task offers user code: the job's
// parameters and configuration, counters, and a way to report liveness.
type TaskContext interface {
	// Context is cancelled when the task is asked to stop.
	Context() context.Context
	// Param returns a job parameter set by the app driver (JobSpec.Params).
	Param(name string) string
	// Conf returns a configuration value as the job sees it (the cluster
	// defaults with the job's -D overrides applied), as a string.
	Conf(key string) string
	// Counter returns the counter (group, name), creating it at zero.
	Counter(group, name string) *Counter
	// TaskIndex is the index of this map or reduce task within its job.
	TaskIndex() int
	// NumReduces is the job's number of reduce tasks.
	NumReduces() int
}

// Mapper is called once per input record. Keys and values are only valid
// during the call.
type Mapper interface {
	Map(tc TaskContext, key, value []byte, out Emitter) error
}

// MapperFunc adapts a function to the Mapper interface.
type MapperFunc func(tc TaskContext, key, value []byte, out Emitter) error

// Map calls f.
func (f MapperFunc) Map(tc TaskContext, key, value []byte, out Emitter) error {
	return f(tc, key, value, out)
}

// ValueIterator walks the values of one key group. Next returns false when
// the group is exhausted; Value is valid until the next call to Next.
type ValueIterator interface {
	Next() bool
	Value() []byte
}

// Reducer is called once per key group, in key order. A Combiner is a
// Reducer run on map output before it is spilled; it must emit the same
// key it was given (or keys that sort identically).
type Reducer interface {
	Reduce(tc TaskContext, key []byte, values ValueIterator, out Emitter) error
}

// UvarintSumCombiner is a combiner that declares what it computes: for
// each key it emits one record, the key with the uvarint encoding of the
// sum (modulo 2^64) of the key's values, each of which must be one whole
// uvarint (it fails on any other value). The map-side buffer may then keep
// a running sum per key instead of the key's values; the spills are the
// same bytes, and COMBINE_INPUT_RECORDS counts every value summed.
type UvarintSumCombiner interface {
	Reducer
	SumsUvarints()
}

// ReducerFunc adapts a function to the Reducer interface.
type ReducerFunc func(tc TaskContext, key []byte, values ValueIterator, out Emitter) error

// Reduce calls f.
func (f ReducerFunc) Reduce(tc TaskContext, key []byte, values ValueIterator, out Emitter) error {
	return f(tc, key, values, out)
}

// Partitioner assigns a map output key to one of n reduce partitions. It
// must be a function of the key and n alone: every attempt of a map (a
// speculative one, a re-run, a clone) must send a key where the others do,
// and with a combiner the map side may ask only once per distinct key of a
// spill.
type Partitioner interface {
	Partition(key []byte, n int) int
}

// PartitionerFunc adapts a function to the Partitioner interface.
type PartitionerFunc func(key []byte, n int) int

// Partition calls f.
func (f PartitionerFunc) Partition(key []byte, n int) int { return f(key, n) }

// HashPartitioner is the default partitioner: FNV-1a of the key bytes,
// modulo the number of partitions.
type HashPartitioner struct{}

// Partition returns hash(key) mod n.
func (HashPartitioner) Partition(key []byte, n int) int {
	if n <= 1 {
		return 0
	}
	const offset, prime = 2166136261, 16777619
	h := uint32(offset)
	for _, b := range key {
		h ^= uint32(b)
		h *= prime
	}
	return int(h % uint32(n))
}

// Comparator orders map output keys. The default is bytes.Compare.
type Comparator func(a, b []byte) int
