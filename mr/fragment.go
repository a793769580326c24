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

var fragmentRE = regexp.MustCompile(`^part-r-\d{5,}\.f\d{5,}$`)

// IsFragmentName tells whether name is an output fragment's file name.
func IsFragmentName(name string) bool { return fragmentRE.MatchString(name) }

// FragmentDir holds the committed output fragments until the job commits.
func (c *Committer) FragmentDir() string { return fs.Join(c.TempDir(), "_fragments") }

// FragmentCommitted tells whether fragment k of reduce partition index
// is committed (in _temporary/_fragments, not yet joined): a restarted
// JobTracker keeps a split reduce's fragments that are.
func (c *Committer) FragmentCommitted(index, k int) bool {
	_, err := c.FS.Stat(fs.Join(c.FragmentDir(), FragmentName(index, k)))
	return err == nil
}

// JoinFragments writes partition index's part file from its fragments 0
// to n-1 in _temporary/_fragments, in that order, and removes them: the
// output of a reduce split n-1 times. It writes to a temporary name first,
// so a JobTracker that dies meanwhile leaves no partial part file (the
// fragments are removed only once the part file is in place).
func (c *Committer) JoinFragments(index, n int) error {
	if n < 1 {
		return fmt.Errorf("partition %d: %d fragments", index, n)
	}
	tmp := fs.Join(c.FragmentDir(), "joining-"+PartName(false, index))
	w, err := c.FS.Create(tmp)
	if err != nil {
		return fmt.Errorf("creating %s: %w", tmp, err)
	}
	for k := range n {
		p := fs.Join(c.FragmentDir(), FragmentName(index, k))
		if err := appendFile(c.FS, w, p); err != nil {
			w.Close()
			return err
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
	for k := range n {
		if err := c.FS.RemoveAll(fs.Join(c.FragmentDir(), FragmentName(index, k))); err != nil {
			return fmt.Errorf("removing fragment %d of partition %d: %w", k, index, err)
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
