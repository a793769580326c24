package mr

import (
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"regexp"

	"gomr/mr/fs"
)

// Reduce splitting (docs/split.md, spec §5.9.4-5.9.5): a split reduce
// commits its output so far as a fragment of its partition, and the
// attempts after it each commit the next fragment; at job commit the
// fragments of a partition, in key order, are concatenated into its one
// part file (the spec's option (b)), so that every reader of the output
// sees what a run without splits writes.

// ConcatenableOutput is implemented by output formats whose files,
// written one after another, form one valid file of the format holding
// their records in order (a text or raw file, not a sequence file with a
// header). Only the reduces of jobs with such a format are split.
type ConcatenableOutput interface {
	OutputFormat
	// Concatenable tells whether the format's files may be concatenated.
	Concatenable() bool
}

// Concatenable: text files concatenate.
func (TextOutput) Concatenable() bool { return true }

// Concatenable: raw records concatenate.
func (RawOutput) Concatenable() bool { return true }

// FragmentName is the file name of fragment k of reduce partition index,
// as a reduce attempt writes and commits it: part-r-00003.f00001.
func FragmentName(index, k int) string {
	return fmt.Sprintf("%s.f%05d", PartName(false, index), k)
}

// PieceFragmentName is the file name of fragment k that reduce task task
// writes for partition partition: FragmentName for the partition's own
// task (task == partition), and part-r-00003.t00005.f00000 for a task
// that a scale-up split added to the partition (a piece of its key range,
// docs/split.md). The job commit joins a partition's fragments in key
// order, which the JobTracker knows (JoinFragmentRuns), not by name.
func PieceFragmentName(partition, task, k int) string {
	if task == partition {
		return FragmentName(partition, k)
	}
	return fmt.Sprintf("%s.t%05d.f%05d", PartName(false, partition), task, k)
}

var fragmentRE = regexp.MustCompile(`^part-r-\d{5,}(\.t\d{5,})?\.f\d{5,}$`)

// IsFragmentName tells whether name is an output fragment's file name.
func IsFragmentName(name string) bool { return fragmentRE.MatchString(name) }

// FragmentDir holds the committed output fragments until the job commits.
func (c *Committer) FragmentDir() string { return fs.Join(c.TempDir(), "_fragments") }

// FragmentCommitted tells whether fragment k of reduce partition index
// is committed (in _temporary/_fragments, not yet joined): a restarted
// JobTracker keeps a split reduce's fragments that are.
func (c *Committer) FragmentCommitted(index, k int) bool {
	return c.PieceFragmentCommitted(index, index, k)
}

// PieceFragmentCommitted tells whether fragment k of reduce task task
// for partition partition (PieceFragmentName) is committed.
func (c *Committer) PieceFragmentCommitted(partition, task, k int) bool {
	_, err := c.FS.Stat(fs.Join(c.FragmentDir(), PieceFragmentName(partition, task, k)))
	return err == nil
}

// FragmentRun is the fragments 0..N-1 of one reduce task of a partition.
type FragmentRun struct {
	Task, N int
}

// JoinFragments writes partition index's part file from its fragments 0
// to n-1 in _temporary/_fragments, in that order, and removes them: the
// output of a reduce split n-1 times.
func (c *Committer) JoinFragments(index, n int) error {
	return c.JoinFragmentRuns(index, []FragmentRun{{Task: index, N: n}})
}

// JoinFragmentRuns writes partition index's part file from the fragments
// of runs, one run after another (the tasks of the partition in key
// order: its own and the pieces scale-up splits added), each run's
// fragments 0..N-1 in order, and removes them. It writes to a temporary
// name first, so a JobTracker that dies meanwhile leaves no partial part
// file (the fragments are removed only once the part file is in place).
func (c *Committer) JoinFragmentRuns(index int, runs []FragmentRun) error {
	if len(runs) == 0 {
		return fmt.Errorf("partition %d: no fragments", index)
	}
	for _, r := range runs {
		if r.N < 1 {
			return fmt.Errorf("partition %d: task %d has %d fragments", index, r.Task, r.N)
		}
	}
	tmp := fs.Join(c.FragmentDir(), "joining-"+PartName(false, index))
	w, err := c.FS.Create(tmp)
	if err != nil {
		return fmt.Errorf("creating %s: %w", tmp, err)
	}
	for _, r := range runs {
		for k := range r.N {
			p := fs.Join(c.FragmentDir(), PieceFragmentName(index, r.Task, k))
			if err := appendFile(c.FS, w, p); err != nil {
				w.Close()
				return err
			}
		}
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", tmp, err)
	}
	dst := fs.Join(c.Output, PartName(false, index))
	if _, err := c.FS.Stat(dst); err == nil {
		if err := c.FS.RemoveAll(dst); err != nil {
			return fmt.Errorf("replacing %s: %w", dst, err)
		}
	}
	if err := c.FS.Rename(tmp, dst); err != nil {
		return fmt.Errorf("committing %s: %w", dst, err)
	}
	for _, r := range runs {
		for k := range r.N {
			if err := c.FS.RemoveAll(fs.Join(c.FragmentDir(), PieceFragmentName(index, r.Task, k))); err != nil {
				return fmt.Errorf("removing fragment %d of task %d of partition %d: %w", k, r.Task, index, err)
			}
		}
	}
	return nil
}

func appendFile(fsys fs.FS, w io.Writer, path string) error {
	f, err := fsys.Open(path)
	if err != nil {
		if errors.Is(err, iofs.ErrNotExist) {
			return fmt.Errorf("output fragment %s is missing", path)
		}
		return fmt.Errorf("opening %s: %w", path, err)
	}
	defer f.Close()
	if _, err := io.Copy(w, f); err != nil {
		return fmt.Errorf("copying %s: %w", path, err)
	}
	return nil
}
