package apps

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"log/slog"
	"strconv"
	"strings"

	"gomr/mr"
	"gomr/mr/fs"
)

// confInt reads an integer configuration value through get (a JobClient's
// or TaskContext's Conf). An empty value yields def; anything else that is
// not an integer is an error naming the key and the value.
func confInt(get func(string) string, key string, def int64) (int64, error) {
	s := strings.TrimSpace(get(key))
	if s == "" {
		return def, nil
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("configuration %s=%q is not an integer: %w", key, s, err)
	}
	return v, nil
}

// paramInt reads an integer job parameter; a missing parameter is an error.
func paramInt(params func(string) string, name string) (int64, error) {
	s := params(name)
	if s == "" {
		return 0, fmt.Errorf("job parameter %q is missing", name)
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("job parameter %s=%q is not an integer: %w", name, s, err)
	}
	return v, nil
}

// randomSuffix returns 16 random hex digits for temporary names.
func randomSuffix() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never returns an error
	return hex.EncodeToString(b[:])
}

// siblingPath returns a path named prefix+<random> in the directory that
// holds target (a plain path or URI).
func siblingPath(target, prefix string) string {
	return fs.Join(strings.TrimRight(target, "/"), "..", prefix+randomSuffix())
}

// removeAll deletes a path (file or directory tree) on whatever filesystem
// serves it; a path that does not exist is not an error.
func removeAll(path string) error {
	fsys, err := fs.Resolve(path)
	if err != nil {
		return fmt.Errorf("removing %s: %w", path, err)
	}
	return fsys.RemoveAll(path) // its error names the path
}

// removeTemp removes a driver's temporary directory, logging a failure
// rather than masking the driver's own result.
func removeTemp(app, path string) {
	if err := removeAll(path); err != nil {
		slog.Warn("could not remove temporary directory", "app", app, "path", path, "err", err)
	}
}

// argCount is the Check of an app that takes exactly n arguments, as its
// Run checks them.
func argCount(app, synopsis string, n int) func([]string) error {
	return func(args []string) error {
		if len(args) != n {
			return usage(app, synopsis, "need %d arguments, got %d", n, len(args))
		}
		return nil
	}
}

// usage builds the usage error of an app.
func usage(app, synopsis, format string, args ...any) error {
	return &mr.UsageError{App: app, Usage: synopsis, Problem: fmt.Sprintf(format, args...)}
}

// runJob runs one job and wraps its failure with the job's name.
func runJob(ctx context.Context, jc mr.JobClient, spec *mr.JobSpec) (*mr.JobResult, error) {
	res, err := jc.RunJob(ctx, spec)
	if err != nil {
		return res, fmt.Errorf("job %s: %w", spec.Name, err)
	}
	if !res.Succeeded() {
		state := "no result"
		if res != nil {
			state = res.State
		}
		return res, fmt.Errorf("job %s ended %s", spec.Name, state)
	}
	return res, nil
}

// sumUvarints adds the uvarint-encoded counts of a value group. what names
// the job in errors.
func sumUvarints(what string, key []byte, values mr.ValueIterator) (uint64, error) {
	var sum uint64
	for values.Next() {
		v := values.Value()
		n, k := binary.Uvarint(v)
		if k <= 0 || k != len(v) {
			return 0, fmt.Errorf("%s: key %q: value %x is not a uvarint count", what, key, v)
		}
		sum += n
	}
	return sum, nil
}

// uvarintSum is a combiner (and, where the output keeps the binary form, a
// reducer) that adds the uvarint counts of each key and emits the key with
// the total as a uvarint.
type uvarintSum struct {
	what string
	buf  [binary.MaxVarintLen64]byte
}

// SumsUvarints declares that the combiner is a uvarint sum
// (mr.UvarintSumCombiner).
func (*uvarintSum) SumsUvarints() {}

var _ mr.UvarintSumCombiner = (*uvarintSum)(nil)

// Reduce emits (key, sum of the values).
func (s *uvarintSum) Reduce(_ mr.TaskContext, key []byte, values mr.ValueIterator, out mr.Emitter) error {
	sum, err := sumUvarints(s.what, key, values)
	if err != nil {
		return err
	}
	n := binary.PutUvarint(s.buf[:], sum)
	return out.Emit(key, s.buf[:n])
}
