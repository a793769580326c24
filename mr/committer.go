package mr

import (
	"errors"
	"fmt"
	iofs "io/fs"
	"path"
	"strings"

	"gomr/mr/fs"
)

// Committer is the output committer of a job, in the manner of Hadoop's
// FileOutputCommitter: each task attempt writes under
// <output>/_temporary/<attempt>/, exactly one attempt per task is committed
// by moving its files into <output>, and _SUCCESS is written when the job
// succeeds.
type Committer struct {
	FS     fs.FS
	Output string
}

// NewCommitter resolves the output URI.
func NewCommitter(output string) (*Committer, error) {
	fsys, err := fs.Resolve(output)
	if err != nil {
		return nil, fmt.Errorf("output %s: %w", output, err)
	}
	return &Committer{FS: fsys, Output: output}, nil
}

// TempDir is the directory that holds every attempt's uncommitted output.
func (c *Committer) TempDir() string { return fs.Join(c.Output, "_temporary") }

// AttemptDir is where an attempt writes its output files.
func (c *Committer) AttemptDir(attemptID string) string { return fs.Join(c.TempDir(), attemptID) }

// CheckOutput refuses an output directory that already exists, as Hadoop's
// FileOutputFormat.checkOutputSpecs does.
func (c *Committer) CheckOutput() error {
	if c.Output == "" {
		return errors.New("no output directory given")
	}
	if _, err := c.FS.Stat(c.Output); err == nil {
		return fmt.Errorf("output directory %s already exists", c.Output)
	} else if !errors.Is(err, iofs.ErrNotExist) {
		return fmt.Errorf("checking output directory %s: %w", c.Output, err)
	}
	return nil
}

// SetupJob creates the output directory and its _temporary folder.
func (c *Committer) SetupJob() error {
	if err := c.FS.MkdirAll(c.TempDir()); err != nil {
		return fmt.Errorf("creating %s: %w", c.TempDir(), err)
	}
	return nil
}

// CommitTask moves the attempt's files into the output directory, and an
// output fragment of a split reduce (IsFragmentName) into FragmentDir,
// where it waits for the job's commit to join it to its partition's other
// fragments. A file of the same name left by an earlier, interrupted
// commit of the same task (or fragment) is replaced (only one attempt per
// task, or per fragment, is ever allowed to commit).
func (c *Committer) CommitTask(attemptID string) error {
	dir := c.AttemptDir(attemptID)
	entries, err := c.FS.List(dir)
	if err != nil {
		if errors.Is(err, iofs.ErrNotExist) {
			return nil // the attempt wrote nothing
		}
		return fmt.Errorf("listing %s: %w", dir, err)
	}
	for _, e := range entries {
		name := path.Base(strings.TrimSuffix(e.Path, "/"))
		dst := fs.Join(c.Output, name)
		if IsFragmentName(name) {
			if err := c.FS.MkdirAll(c.FragmentDir()); err != nil {
				return fmt.Errorf("creating %s: %w", c.FragmentDir(), err)
			}
			dst = fs.Join(c.FragmentDir(), name)
		}
		if _, err := c.FS.Stat(dst); err == nil {
			if err := c.FS.RemoveAll(dst); err != nil {
				return fmt.Errorf("replacing %s: %w", dst, err)
			}
		}
		if err := c.FS.Rename(e.Path, dst); err != nil {
			return fmt.Errorf("committing %s: %w", e.Path, err)
		}
	}
	return c.FS.RemoveAll(dir)
}

// AbortTask removes the attempt's uncommitted output.
func (c *Committer) AbortTask(attemptID string) error {
	return c.FS.RemoveAll(c.AttemptDir(attemptID))
}

// CommitJob removes _temporary and writes the _SUCCESS marker.
func (c *Committer) CommitJob() error {
	if err := c.FS.RemoveAll(c.TempDir()); err != nil {
		return fmt.Errorf("removing %s: %w", c.TempDir(), err)
	}
	w, err := c.FS.Create(fs.Join(c.Output, "_SUCCESS"))
	if err != nil {
		return fmt.Errorf("writing _SUCCESS: %w", err)
	}
	return w.Close()
}

// JobCommitted tells whether CommitJob completed: the _SUCCESS marker is in
// the output directory. Like Hadoop's job commit, that is the point of no
// return: the job succeeded, whatever happens to the JobTracker after.
func (c *Committer) JobCommitted() (bool, error) {
	p := fs.Join(c.Output, "_SUCCESS")
	_, err := c.FS.Stat(p)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, iofs.ErrNotExist):
		return false, nil
	}
	return false, fmt.Errorf("checking %s: %w", p, err)
}

// AbortJob removes _temporary; committed part files stay, without _SUCCESS.
func (c *Committer) AbortJob() error {
	return c.FS.RemoveAll(c.TempDir())
}

// TaskCommitted tells whether the output of task index (a map of a
// map-only job, or a reduce) has been committed: its part file is in the
// output directory.
func (c *Committer) TaskCommitted(isMap bool, index int) bool {
	_, err := c.FS.Stat(fs.Join(c.Output, PartName(isMap, index)))
	return err == nil
}

// PartName is the output file name of a task: part-r-00003 or part-m-00003.
func PartName(isMap bool, index int) string {
	if isMap {
		return fmt.Sprintf("part-m-%05d", index)
	}
	return fmt.Sprintf("part-r-%05d", index)
}
